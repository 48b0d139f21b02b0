"""Trait changes on a trinket reach its observers exactly as traitlets' own delivery would (a
trinket's update holds the changes of its content and time in its own notify_change until both
are set, as hold_trait_notifications would; no private part of traitlets is used)."""

from __future__ import annotations

import warnings
from typing import Any

from traitlets import All, observe

from trinkets.base import StatefulTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.session import Session


class Countdown(StatefulTrinket):
    """Its text changes every turn, so a turn changes current_turn, content and last_updated."""

    variable_name = "active_reminders"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.heard: list[tuple[str, str, Any, Any]] = []
        super().__init__(*args, **kwargs)

    def generate_content(self, context: dict[str, Any]) -> str:
        return f"turn {self.current_turn}"

    def _expire_items(self) -> bool:
        return True  # a refresh every turn

    def _clear_all_state(self) -> None:
        pass

    @observe("content", "current_turn")
    def _decorated(self, change: dict[str, Any]) -> None:
        self.heard.append(("decorated", change["name"], change["old"], change["new"]))


def observed(trinket_class: type) -> tuple[Session, Any, list]:
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    s = Session(base_prompt="Hi.", clock=clock, trinkets=[trinket_class])
    t = s.trinket(trinket_class.__name__)
    heard = t.heard
    t.observe(lambda c: heard.append(("by name", c.name, c.old, c.new)), names=["content"])
    t.observe(lambda c: heard.append(("every name", c.name, c.old, c.new)))
    t.observe(lambda c: heard.append(("every type", c.name, c.old, c.new)), names=["current_turn"], type=All)
    heard.clear()
    return s, t, heard


def test_a_turn_delivers_the_same_notifications_in_the_same_order_as_traitlets() -> None:
    s, t, heard = observed(Countdown)
    s.working_memory.clock.advance(minutes=1)
    s.advance_turn()
    fast = list(heard)

    # the same changes, made with traitlets' own hold_trait_notifications on a second trinket
    s2, t2, heard2 = observed(Countdown)
    s2.working_memory.clock.advance(minutes=1)
    now = s2.working_memory.clock.now()
    t2.current_turn = 1
    with t2.hold_trait_notifications():
        t2.content = "turn 1"
        t2.last_updated = now
    assert fast == heard2
    # and what they are: the turn, then the refreshed text and its time, each to every observer
    assert [h[:2] for h in fast] == [
        ("decorated", "current_turn"),
        ("every type", "current_turn"),
        ("every name", "current_turn"),
        ("decorated", "content"),
        ("by name", "content"),
        ("every name", "content"),
        ("every name", "last_updated"),
    ]
    assert ("by name", "content", "", "turn 1") in fast


def test_held_notifications_stay_held_until_the_context_ends() -> None:
    s, t, heard = observed(Countdown)
    with t.hold_trait_notifications():
        t._set_content("held text", s.working_memory.clock.now())
        t.enabled = False
        assert heard == []
    assert ("by name", "content", "", "held text") in heard
    assert ("every name", "enabled", True, False) in heard


def test_a_legacy_changed_method_is_still_called() -> None:
    class Legacy(Countdown):
        def _content_changed(self, name: str, old: Any, new: Any) -> None:  # traitlets' old API
            self.heard.append(("legacy", name, old, new))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        s, t, heard = observed(Legacy)
        s.advance_turn()
    assert ("legacy", "content", "", "turn 1") in heard
