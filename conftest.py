"""Repository-wide pytest hooks: every notebook cell nbval runs is a ``slow`` test.

Kept at the root (not in tests/) so that it also applies when only ``notebooks/`` is collected.
"""
from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)
