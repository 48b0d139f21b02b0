"""``make test`` never goes quiet for more than 15 seconds (issue 48).

pytest's ``-q`` prints a dot per test, which is enough while tests take milliseconds; the slow part
(notebook cells in a real kernel, JupyterLab in Chromium, servers) has tests of 10 to 40 seconds
each, and collection imports every module. This plugin, for the run in the terminal:

- names each file that holds slow tests when it starts (the dots of its tests follow the name,
  as in pytest's default verbosity), so the slow part reads file by file;
- while nothing has been printed for :data:`QUIET` seconds (one long test, collection), prints one
  line saying what is running and for how long.

The line is written by a helper thread to a copy of the terminal's file descriptor taken before any
test ran (pytest redirects descriptor 1 into a file while a test runs; a line written there would
land in the test's captured output). The thread is stopped and joined when pytest unconfigures, so
it never holds the process open.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

#: Seconds without output after which a line says what is running (then again every QUIET seconds);
#: tests/test_progress.py sets a shorter one through the environment.
QUIET = float(os.environ.get("WM_KERNEL_TEST_QUIET", "10"))


NAME = "wm-kernel-progress"


class Progress:
    """The plugin: see the module docstring."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.fd = os.dup(1)
        self.slow_files: set[str] = set()
        self.current_file: str | None = None
        self.doing = "collecting the tests"
        self.since = self.last_output = time.monotonic()
        self.lock = threading.Lock()
        self.ours_last = False  # the last thing printed is one of our lines (so a new line starts)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="wm-kernel progress", daemon=True)
        # per-file names only in one process: under xdist a worker's files interleave with another's
        self.by_file = config.getoption("numprocesses", None) in (None, 0) and config.get_verbosity() <= 0

    # -- what is happening

    def _note(self, doing: str) -> None:
        with self.lock:
            self.doing, self.since = doing, time.monotonic()
            self.last_output, self.ours_last = self.since, False

    def start(self) -> None:
        """Say that collection starts (pytest's -q prints nothing until the first test), and watch."""
        self._note("collecting the tests (every module is imported for its doctests)")
        os.write(self.fd, f"pytest: {self.doing}\n".encode())
        self.thread.start()

    @pytest.hookimpl(trylast=True)  # after the root conftest marks notebooks and server tests slow
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.slow_files = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        path = nodeid.split("::")[0]
        reporter: Any = self.config.pluginmanager.get_plugin("terminalreporter")
        if self.by_file and reporter is not None and path != self.current_file:
            if path in self.slow_files:
                reporter.write_fspath_result(nodeid, "")  # a new line naming the file; its dots follow
                reporter.flush()
            elif self.current_file in self.slow_files:
                reporter.ensure_newline()
        self.current_file = path
        self._note(f"running {nodeid}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # pytest prints a letter for a test's call, and for a setup or teardown only when it did not
        # pass: a passing setup (a server started for the test) prints nothing
        if report.when == "call" or not report.passed:
            with self.lock:
                self.last_output, self.ours_last = time.monotonic(), False

    def pytest_sessionfinish(self) -> None:
        self._note("writing the summary")

    def pytest_unconfigure(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        os.close(self.fd)

    # -- the helper thread

    def _watch(self) -> None:
        while not self.stop.wait(1.0):
            with self.lock:
                now = time.monotonic()
                if now - self.last_output < QUIET:
                    continue
                line = f"{'' if self.ours_last else chr(10)}  [{self.doing}: {now - self.since:.0f} s so far]\n"
                self.last_output, self.ours_last = now, True
            try:
                os.write(self.fd, line.encode("utf-8", "replace"))
            except OSError:
                return


def register(config: pytest.Config) -> None:
    """Install the plugin for this run (not in an xdist worker: the controller prints)."""
    if hasattr(config, "workerinput") or config.option.collectonly or config.pluginmanager.has_plugin(NAME):
        return
    progress = Progress(config)
    config.pluginmanager.register(progress, NAME)
    progress.start()


def pytest_configure(config: pytest.Config) -> None:
    """Loaded as a plugin (``-p tests.progress``), as tests/test_progress.py runs it."""
    register(config)
