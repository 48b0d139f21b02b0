"""The package type-checks under mypy --strict (the configuration is in pyproject.toml)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wm_kernel_and_trinkets_type_check(tmp_path):
    cwd = os.getcwd()
    os.chdir(ROOT)  # mypy reads [tool.mypy] and the package paths relative to the project
    try:
        out, err, status = api.run(["--cache-dir", str(tmp_path / "mypy-cache")])
    finally:
        os.chdir(cwd)
    assert status == 0, out + err
