"""The lint rules configured in pyproject.toml ([tool.ruff]) hold for the whole project."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ruff() -> str:
    """The ruff of this environment (the test extra installs it), else one on PATH."""
    here = Path(sys.executable).with_name("ruff")
    found = str(here) if here.exists() else shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    return found


def test_ruff_finds_nothing() -> None:
    done = subprocess.run(
        [ruff(), "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.splitlines()[-1:] == ["All checks passed!"], done.stdout + done.stderr
    assert done.returncode == 0
