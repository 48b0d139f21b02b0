"""The pytest plugin of wm-kernel (entry point ``pytest11``: it loads in every pytest run of an
environment that has wm-kernel installed).

What it adds, and nothing else (no autouse fixture, no collection hook, nothing imported from
wm-kernel until a test asks for a fixture):

- ``wm_session``: a fresh deterministic Session (every built-in trinket, Ada in London, a
  ManualClock at 2026-11-30 09:00 UTC); ``@pytest.mark.wm_session(**kwargs)`` changes what it is
  built with (Session keywords; ``clock`` may be an ISO instant).
- ``prompt_snapshot``: golden files compared section by section
  (:class:`~wm_kernel.testing.snapshot.PromptSnapshot`), kept in ``__prompt_snapshots__/<module>/``
  beside the test file, one per test (``-2``, ``-3``... for further calls in one test).
- ``--wm-update``: write the golden files instead of comparing; the run's summary lists them.

The assertion helpers are plain functions: ``from wm_kernel.testing.assertions import ...``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from wm_kernel.session import Session
    from wm_kernel.testing.snapshot import PromptSnapshot

SNAPSHOT_DIR = "__prompt_snapshots__"
DEFAULT_CLOCK = "2026-11-30T09:00:00+00:00"
_WRITTEN = pytest.StashKey[list[Path]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("wm-kernel", "wm-kernel prompt tests")
    group.addoption(
        "--wm-update",
        action="store_true",
        default=False,
        help="write the prompt_snapshot golden files instead of comparing with them",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "wm_session(**kwargs): keywords for the Session the wm_session fixture builds (clock may be an ISO instant)",
    )
    config.stash[_WRITTEN] = []


@pytest.fixture
def wm_session(request: pytest.FixtureRequest) -> Iterator[Session]:
    """A fresh Session with a ManualClock (see the module docstring); closed after the test."""
    from wm_kernel.core.clock import ManualClock
    from wm_kernel.core.profile import Profile
    from wm_kernel.session import Session

    kwargs: dict[str, Any] = {
        "base_prompt": "You help {first_name}.",
        "profile": Profile(first_name="Ada", timezone="Europe/London"),
        "clock": DEFAULT_CLOCK,
    }
    marker = request.node.get_closest_marker("wm_session")
    if marker is not None:
        if marker.args:
            raise TypeError("@pytest.mark.wm_session takes keywords only (Session's)")
        kwargs.update(marker.kwargs)
    if isinstance(kwargs["clock"], str):
        kwargs["clock"] = ManualClock(kwargs["clock"])
    session = Session(**kwargs)
    yield session
    session.close()


@pytest.fixture
def prompt_snapshot(request: pytest.FixtureRequest) -> Iterator[PromptSnapshot]:
    """The golden files of this test: ``prompt_snapshot(session)`` compares, or writes with
    ``--wm-update``."""
    from wm_kernel.testing.snapshot import PromptSnapshot, golden_name

    path = Path(str(request.node.path))
    name = golden_name(request.node.name)  # distinct ids, distinct files
    snapshot = PromptSnapshot(
        path.parent / SNAPSHOT_DIR / path.stem, name, update=bool(request.config.getoption("wm_update"))
    )
    yield snapshot
    request.config.stash[_WRITTEN].extend(snapshot.written)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    written = config.stash.get(_WRITTEN, [])
    if written:
        terminalreporter.section("wm-kernel prompt snapshots", sep="-")
        for path in written:
            terminalreporter.line(f"written: {path}")
