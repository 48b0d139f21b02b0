"""The package type-checks under mypy --strict (the configuration is in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wm_kernel_and_trinkets_type_check(tmp_path):
    # in a process of its own, as `make lint` runs it: mypy's in-process API (mypy.api.run) leaves
    # millions of objects behind it, and tearing them down held the end of `make test` for half a
    # minute after its summary; `python -m mypy` ends its process without that teardown
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=ROOT,  # mypy reads [tool.mypy] and the package paths relative to the project
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
