"""Run-wide pytest hooks, kept at the root (not in tests/) so they also apply when only
``notebooks/`` is collected:

- every notebook cell nbval runs is a ``slow`` test (``pytest -m "not slow"`` is the fast suite);
- the tests and notebooks that need a real part (a Valkey/Redis server) skip when it is missing, and
  the run's summary says so plainly, so a green run is not mistaken for one that exercised them.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.valkey_server import MISSING_REASON, server_binary

#: Notebooks that start a real server themselves.
LIVE_NOTEBOOKS = ("09_live_store.ipynb",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    no_server = server_binary() is None
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)
            if no_server and item.path.name in LIVE_NOTEBOOKS:
                item.add_marker(pytest.mark.skip(reason=MISSING_REASON))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    skipped: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and MISSING_REASON in str(longrepr[2]):
            skipped[report.nodeid.split("::")[0]] += 1
    if skipped:
        terminalreporter.section("real parts skipped", sep="=", yellow=True, bold=True)
        terminalreporter.line(f"SKIPPED: {MISSING_REASON}", yellow=True)
        for path, count in sorted(skipped.items()):
            terminalreporter.line(f"  {path}: {count} skipped", yellow=True)
