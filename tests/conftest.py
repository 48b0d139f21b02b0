"""Shared fixtures: a deterministic Session and a real IPython shell with the extension loaded."""
from __future__ import annotations

from typing import Iterator

import pytest

from wm_kernel.clock import ManualClock
from wm_kernel.profile import Profile
from wm_kernel.session import Session, set_current_session

START = "2026-11-30T09:00:00+00:00"


@pytest.fixture
def session() -> Iterator[Session]:
    """Every built-in trinket, Ada in London, a ManualClock at Monday 30 November 2026, 09:00 UTC;
    current for the magics while the test runs."""
    s = Session(base_prompt="You help {first_name}.",
                profile=Profile(first_name="Ada", timezone="Europe/London"),
                clock=ManualClock(START))
    set_current_session(s)
    yield s
    set_current_session(None)


@pytest.fixture
def ip(session: Session) -> Iterator[object]:
    """IPython's InteractiveShell with ``wm_kernel`` loaded (unloaded afterwards)."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("wm_kernel")
    yield shell
    shell.extension_manager.unload_extension("wm_kernel")
