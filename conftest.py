"""Run-wide pytest hooks, kept at the root (not in tests/) so they also apply when only
``notebooks/`` is collected:

- every notebook cell nbval runs is a ``slow`` test (``pytest -m "not slow"`` is the fast suite), and
  so is every test that starts a server or a browser through a fixture (``PROCESS_FIXTURES``);
- the tests and notebooks that need a real part (a Valkey/Redis server) skip when it is missing, and
  the run's summary says so plainly, so a green run is not mistaken for one that exercised them;
- the run is never quiet for long (``tests/progress.py``): each file with slow tests is named as it
  starts, and a line says what runs when nothing was printed for 10 seconds.
"""

from __future__ import annotations

import gc
import platform
import sys
from collections import Counter
from typing import Any

import pytest
from hypothesis import settings

from tests import progress
from tests.valkey_server import MISSING_REASON, server_binary

#: Notebooks that start a real server themselves.
LIVE_NOTEBOOKS = ("09_live_store.ipynb",)


#: Fixtures that start a process (a Valkey/Redis server, JupyterLab, Chromium): a test using one is
#: ``slow``, so ``pytest -m "not slow"`` starts no process but the ruff check's.
PROCESS_FIXTURES = frozenset({"valkey_server", "fresh_valkey_server", "lab", "browser", "page"})


# Every test outside ``slow`` must start no process: an audit hook (sys.addaudithook, Python's public
# hook for exactly this) notes each process a test starts, and the test fails naming it, so the fast
# suite stays fast on two cores. ruff, the style check every commit runs, is the one exception.
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system"}
)
_watching: list[str] = []  # the started processes of the fast test running now, when one is


def _note_process(event: str, args: tuple[Any, ...]) -> None:
    if _watching and event in _PROCESS_EVENTS:
        what = args[1] if event == "subprocess.Popen" and len(args) > 1 else args[:1]
        if _is_font_cache_build(what):
            return
        _watching.append(f"{event} {what!r}"[:160])


def _is_font_cache_build(argv: Any) -> bool:
    """matplotlib lists the machine's fonts with ``fc-list`` the first time it is imported on a machine
    (then it reads its cache): whichever test draws first on a fresh machine pays for it, no fault of
    that test's."""
    return isinstance(argv, list | tuple) and bool(argv) and str(argv[0]) == "fc-list"


# Property tests draw the same examples on every run and machine (derandomize: seeded from each
# test), so a fresh clone is green or red for what it contains, never for the draw of the day;
# `pytest --hypothesis-profile=explore` draws new examples (and keeps failures in .hypothesis/).
settings.register_profile("wm-kernel", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("wm-kernel")

sys.addaudithook(_note_process)
# the SDKs ask platform.processor() for their request headers, which runs `uname -p` once per
# process (then cached): asked here, so no test is the one that happens to pay for it
platform.processor()


@pytest.fixture(autouse=True)
def _fast_tests_start_no_process(request: pytest.FixtureRequest) -> Any:
    node = request.node
    if node.get_closest_marker("slow") is not None or node.path.name == "test_style.py":
        yield
        return
    _watching[:] = ["watching"]
    try:
        yield
    finally:
        started, _watching[:] = _watching[1:], []
    if started:
        pytest.fail(f"a test outside 'slow' started a process ({started[0]}): mark it @pytest.mark.slow", pytrace=False)


@pytest.fixture(autouse=True)
def _close_the_widgets_a_test_leaves_open() -> Any:
    """ipywidgets keeps every widget until it is closed: a dashboard a test leaves open would keep
    its Session, History and panels alive to the end of the run, and the run's last garbage
    collection and the interpreter's exit walk all of them (a million objects by the end of the
    fast suite). ``Widget.close_all()`` is ipywidgets' own way to let them go."""
    yield
    widgets = sys.modules.get("ipywidgets")
    if widgets is not None:
        widgets.Widget.close_all()


def pytest_configure(config: pytest.Config) -> None:
    # never quiet for more than 15 s: slow files named as they start, a line during a long test
    progress.register(config)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # The summary is written. What was left was the interpreter walking what the suite made: some
    # 800,000 objects the cyclic collector tracks (the test shell's output history, imported logs,
    # sessions), and each full collection that ran after the summary (during the other plugins'
    # unconfigure, threading's shutdown, IPython's atexit reset of its shell, and finalisation)
    # walked all of them, 1.5-2 s each on a loaded 2-core machine: 15-19 s of silence before
    # `make test` exited (issue 48). gc.freeze() moves them out of every later collection; atexit
    # handlers still run, and the memory goes back when the process ends.
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    no_server = server_binary() is None
    for item in items:
        if PROCESS_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
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
