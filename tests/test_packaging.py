"""The built wheel: what a user installing wm-kernel gets."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_ships_py_typed_for_both_packages_and_the_dashboards_front_end(tmp_path: Path) -> None:
    """``py.typed`` (PEP 561) in ``wm_kernel`` and ``trinkets``, so a user's type checker reads
    the annotations instead of treating every name as ``Any``; the dashboard's ES module and
    stylesheet (no CDN, no build step: the widget reads them from the package). Built offline with the installed
    hatchling, as ``pip install`` would build it."""
    pytest.importorskip("hatchling", reason="hatchling (the build backend) is not installed")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--wheel-dir",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("wm_kernel-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"wm_kernel/py.typed", "trinkets/py.typed"} <= names
    assert "wm_kernel/__init__.py" in names and "trinkets/__init__.py" in names
    static = "wm_kernel/jupyter/dashboard/static/"
    assert {static + "dashboard.js", static + "dashboard.css"} <= names
