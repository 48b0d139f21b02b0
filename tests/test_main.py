"""``python -m wm_kernel``: its version, and one form for every error of every command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import wm_kernel
from wm_kernel.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"wm-kernel {wm_kernel.__version__}\n"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["demo", "--turns", "0"], "python -m wm_kernel demo: error: --turns must be at least 1"),
        (["replay", "nope.jsonl"], "python -m wm_kernel replay: error: no such file or directory: nope.jsonl"),
        (["import", "nope.jsonl"], "python -m wm_kernel import: error: nope.jsonl: cannot read the file "),
        (["check", "nope.jsonl"], "python -m wm_kernel check: error: "),
    ],
)
def test_every_command_errs_in_one_form(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1


def test_argparse_errors_have_the_same_form(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "x.jsonl", "--workers", "zero"])
    assert capsys.readouterr().err.splitlines()[-1].startswith("python -m wm_kernel replay: error: argument --workers")


@pytest.mark.slow
def test_the_module_prints_its_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "wm_kernel", "--version"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"wm-kernel {wm_kernel.__version__}\n", "")
