"""History and ItemHistory attach the same way (wm_kernel.instruments.attached): one of a kind per
session, found by it, each kind on its own."""

from __future__ import annotations

import pytest

from wm_kernel.core.clock import ManualClock
from wm_kernel.instruments.history import History
from wm_kernel.instruments.items import ItemHistory
from wm_kernel.session import Session


def test_each_kind_is_found_refused_twice_and_detached_on_its_own() -> None:
    s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[], instruments=())
    assert History.find(s) is None and ItemHistory.find(s) is None
    history, items = History.attach(s), ItemHistory.attach(s)
    assert History.find(s) is history and ItemHistory.find(s) is items
    assert History.of(s) is history and ItemHistory.of(s) is items
    with pytest.raises(ValueError, match=r"^this session already has a History attached"):
        History.attach(s)
    with pytest.raises(ValueError, match=r"^this session already has an ItemHistory"):
        ItemHistory.attach(s)
    history.detach()
    assert History.find(s) is None and ItemHistory.find(s) is items
    s.compose()
    assert history.turns == [] and items.latest_turn == 0
    history.detach()  # a second time: nothing to do
    again = History.of(s)
    assert again is not history and History.find(s) is again
