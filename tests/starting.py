"""The first lines of ``make test`` (issue 48): pytest is starting.

Before pytest says anything it loads its plugins, and nbval's import pulls in jsonschema's format
checkers, whose grammar takes a second to build on a quiet machine and over half a minute on a
loaded new one: the run looked stopped. The Makefile loads this module first (``-p
tests.starting``, read before pytest loads any installed plugin), so it says at once that pytest is
starting and, every :data:`~tests.progress.QUIET` seconds until pytest is configured, that it still
is; ``tests/progress.py`` takes over from there. Nothing is printed in an xdist worker (its output is
not the terminal).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest

from tests.progress import QUIET


def tick(stop: threading.Event, say: Callable[[str], object], every: float, started: float) -> None:
    """Say ``still starting`` every ``every`` seconds until ``stop`` is set."""
    while not stop.wait(every):
        say(f"pytest: still starting ({time.monotonic() - started:.0f} s: loading its plugins)\n")


def _say(line: str) -> None:
    os.write(1, line.encode())


_stop = threading.Event()
_ticker: threading.Thread | None = None


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Called as this module is registered as a plugin (by ``-p``, before the installed plugins
    load), never by a plain import (the doctest collection imports it again)."""
    global _ticker
    if "PYTEST_XDIST_WORKER" in os.environ or _ticker is not None:
        return
    _say("pytest: starting (loading its plugins: a few seconds, up to a minute on a new machine)\n")
    _ticker = threading.Thread(
        target=tick, args=(_stop, _say, QUIET, time.monotonic()), name="wm-kernel-starting", daemon=True
    )
    _ticker.start()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """pytest is configured: tests/progress.py speaks from here."""
    _stop.set()
    if _ticker is not None:
        _ticker.join()
