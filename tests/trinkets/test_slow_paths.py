"""Slow paths of stored data (issue 34 item 19): mirroring n stored sections costs O(n) (the trinket
names are set once, not once per section), and the first reminder added with the counter missing
reads the stored ids once instead of probing every id."""

from __future__ import annotations

from typing import Any

import pytest

from trinkets.reminders import ReminderManager
from trinkets.stored_section import mirror_stored_sections
from wm_kernel.core.clock import ManualClock
from wm_kernel.session import Session
from wm_kernel.session.feeds import FeedLog
from wm_kernel.stores import keys
from wm_kernel.stores.embedded import MemoryStore

START = "2026-11-30T09:00:00+00:00"


class CountingStore(MemoryStore):
    """A MemoryStore that counts the calls a server would each answer with one round trip."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def hget(self, key: str, field: str) -> Any:
        self.calls += 1
        return super().hget(key, field)

    def hincrby(self, key: str, field: str, amount: int = 1) -> int:
        self.calls += 1
        return super().hincrby(key, field, amount)

    def fields(self, key: str) -> list[str]:
        self.calls += 1
        return super().fields(key)


def test_mirroring_sets_the_trinket_names_once() -> None:
    store = MemoryStore()
    for i in range(500):
        store.hset(
            keys.trinket_sections("U"),
            f"sec_{i}",
            {"content": f"<s>{i}</s>", "cache_policy": False, "updated_at": START},
        )
    s = Session(store=store, user_id="U", trinkets=[], clock=ManualClock(START))
    changes: list[object] = []
    s.working_memory.observe(changes.append, "trinket_names")
    # the session's own list too: its observers (the feed log) hear of the 500 once, not 500 times
    session_changes: list[object] = []
    s.observe(session_changes.append, "trinket_names")
    added = mirror_stored_sections(s)
    assert len(added) == 500 and len(changes) == 1 and len(session_changes) == 1
    assert s.trinket_names == s.working_memory.trinket_names
    log = FeedLog.find(s)
    assert log is not None
    assert [step["trinket"] for step in log.steps if step["step"] == "add_trinket"] == [f"Stored_{a}" for a in added]
    assert len(s.working_memory.trinket_names) == 500
    assert s.working_memory.get_trinket("sec_499").variable_name == "sec_499"


def test_the_first_reminder_with_the_counter_missing_reads_the_ids_once() -> None:
    store = CountingStore()
    for n in range(1, 20_001):
        store.hset(keys.reminders("ada"), f"rem_{n}", {"v": 1})
    s = Session(store=store, user_id="ada", trinkets=[ReminderManager], clock=ManualClock(START))
    reminders = s.trinket("ReminderManager")
    store.calls = 0
    new_id = reminders._reminders.next_id()
    assert new_id == "rem_20001"
    assert store.calls <= 8  # it was two per stored id: 40,000
    assert reminders._reminders.next_id() == "rem_20002"


@pytest.mark.parametrize("stored", [[], ["rem_3", "rem_x", "note"]])
def test_the_counter_starts_past_the_highest_stored_id(stored: list[str]) -> None:
    store = MemoryStore()
    for field in stored:
        store.hset(keys.reminders("ada"), field, {"v": 1})
    s = Session(store=store, user_id="ada", trinkets=[ReminderManager], clock=ManualClock(START))
    assert s.trinket("ReminderManager")._reminders.next_id() == ("rem_4" if stored else "rem_1")
