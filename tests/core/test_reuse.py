"""Regenerate only what changed (issue 14): reuse_content, its inputs, and what stays the same."""

from __future__ import annotations

from typing import Any

from traitlets import Unicode

from trinkets.base import EventAwareTrinket, StatefulTrinket, feed
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
from trinkets.reminders import ReminderManager
from trinkets.time_manager import TimeManager
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.events import TrinketContentEvent, UpdateTrinketEvent
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session

T0 = "2026-11-30T09:00:00+00:00"


class Counted(EventAwareTrinket):
    """Reuses its text; counts generations; its text depends on a trait, a feed and the clock."""

    variable_name = "counted"
    reuse_content = True
    time_dependent = True
    word = Unicode("hello")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0
        self.fed = ""

    @feed
    def set_fed(self, text: str) -> None:
        self.fed = text

    def generate_content(self, context: dict[str, Any]) -> str:
        self.calls += 1
        extra = context.get("extra", "")
        return f"{self.word} {self.fed}{extra} at {self.working_memory.clock.now():%H:%M:%S}"


class Outside(EventAwareTrinket):
    """Reads a plain attribute: leaves reuse_content False, so every update generates."""

    variable_name = "outside"
    text = "one"

    def generate_content(self, context: dict[str, Any]) -> str:
        return self.text


class CountedTurns(StatefulTrinket):
    """One item per turn, each living one turn; counts generations."""

    variable_name = "counted_turns"
    reuse_content = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0
        self.items: dict[int, int] = {}

    def generate_content(self, context: dict[str, Any]) -> str:
        self.calls += 1
        return " ".join(f"item{k}" for k in self.items)

    def _expire_items(self) -> bool:
        gone = [k for k, v in self.items.items() if self.current_turn > v]
        for k in gone:
            del self.items[k]
        self.items[self.current_turn] = self.current_turn
        return bool(gone)

    def _clear_all_state(self) -> None:
        self.items.clear()


LAYOUT = Layout(
    {
        "system": ["base_prompt", "counted", "outside", "counted_turns"],
        "notification": ["datetime_section", "active_reminders", "peanutgallery_guidance"],
    }
)


def session(*trinkets: Any) -> Session:
    return Session(base_prompt="Hi.", clock=ManualClock(T0), trinkets=list(trinkets), instruments=(), layout=LAYOUT)


def shown(s: Session) -> list[str]:
    assert s.composed is not None
    return [record.name for record in s.composed.sections]


def test_unchanged_inputs_reuse_the_text_and_still_publish_it() -> None:
    s = session(Counted)
    t = s.trinket("Counted")
    published: list[str] = []
    s.bus.subscribe(TrinketContentEvent, lambda e: published.append(e.content))
    first = s.compose().section("counted").content
    second = s.compose().section("counted").content
    assert (t.calls, first, second) == (1, "hello  at 09:00:00", "hello  at 09:00:00")
    assert published == [first, first]


def test_a_trait_a_feed_the_clock_and_the_profile_each_regenerate() -> None:
    s = session(Counted)
    t = s.trinket("Counted")
    s.compose()
    t.word = "bye"
    assert s.compose().section("counted").content == "bye  at 09:00:00"
    t.set_fed("fed")
    assert s.compose().section("counted").content == "bye fed at 09:00:00"
    s.clock.advance(seconds=1)  # type: ignore[attr-defined]
    assert s.compose().section("counted").content == "bye fed at 09:00:01"
    s.profile = Profile(first_name="Ada")
    s.compose()
    assert t.calls == 5


def test_style_and_enabled_are_inputs() -> None:
    s = session(ReminderManager)
    r = s.trinket("ReminderManager")
    r.add_reminder("Call", "2026-11-30T08:00:00+00:00")
    original = s.compose().section("active_reminders").content
    r.style = "revised"
    revised = s.compose().section("active_reminders").content
    assert revised != original and revised.startswith("<active_reminders>\n  ")
    r.style = "original"
    assert s.compose().section("active_reminders").content == original
    r.enabled = False
    s.compose()
    assert "active_reminders" not in shown(s)
    r.enabled = True
    assert s.compose().section("active_reminders").content == original


def test_an_update_with_a_context_always_generates() -> None:
    s = session(Counted)
    t = s.trinket("Counted")
    s.compose()
    t.request_update(extra="!")
    assert (t.calls, t.content) == (2, "hello ! at 09:00:00")
    # the next compose has no context: its inputs are not those of the context's text
    s.compose()
    assert (t.calls, t.content) == (3, "hello  at 09:00:00")


def test_a_trinket_with_outside_inputs_generates_every_time() -> None:
    s = session(Outside)
    assert s.compose().section("outside").content == "one"
    Outside.text = "two"
    try:
        assert s.compose().section("outside").content == "two"
    finally:
        Outside.text = "one"


def test_a_turns_refresh_and_the_compose_after_it_generate_once() -> None:
    s = session(CountedTurns)
    t = s.trinket("CountedTurns")
    s.compose()
    t.calls = 0
    log_start = len(s.bus.log)
    s.advance_turn()  # turn 1: item 1 added, nothing expired: the compose generates
    s.advance_turn()  # turn 2: item 1 expires: the refresh generates, the compose reuses
    assert t.calls == 2
    kinds = [
        (r.event_type, getattr(r.event, "target_trinket", getattr(r.event, "trinket_name", "")))
        for r in s.bus.log[log_start:]
    ]
    turn_2 = kinds[kinds.index(("TurnCompletedEvent", ""), 1) :]
    # the refresh's update and content come right after the turn, as before; the compose's too
    assert turn_2[:3] == [
        ("TurnCompletedEvent", ""),
        ("UpdateTrinketEvent", "CountedTurns"),
        ("TrinketContentEvent", "CountedTurns"),
    ]
    assert turn_2[3:] == [
        ("ComposeSystemPromptEvent", ""),
        ("UpdateTrinketEvent", "CountedTurns"),
        ("TrinketContentEvent", "CountedTurns"),
        ("SystemPromptComposedEvent", ""),
    ]
    assert t.content == "item2"


def test_built_in_time_and_guidance_follow_their_inputs() -> None:
    s = session(TimeManager, PeanutGalleryTrinket)
    time_before = s.compose().section("datetime_section").content
    assert s.compose().section("datetime_section").content == time_before
    s.clock.advance(minutes=5)  # type: ignore[attr-defined]
    assert s.compose().section("datetime_section").content != time_before
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=1)
    assert "Slow down." in s.compose().section("peanutgallery_guidance").content
    s.advance_turn(2)
    assert "peanutgallery_guidance" not in shown(s)


def test_update_events_are_unchanged_by_reuse() -> None:
    s = session(Counted)
    updates: list[dict[str, Any]] = []
    s.bus.subscribe(UpdateTrinketEvent, lambda e: updates.append(dict(e.context)))
    s.compose()
    s.compose()
    assert updates == [{}, {}]


def test_manifest_and_reminders_read_the_store_once_then_follow_their_own_writes() -> None:
    from trinkets.manifest_trinket import ManifestTrinket

    s = Session(base_prompt="Hi.", clock=ManualClock(T0), trinkets=[ManifestTrinket, ReminderManager], instruments=())
    reads: list[str] = []
    store = s.store
    original_hgetall, original_hget = store.hgetall, store.hget

    def hgetall(key: str) -> dict[str, Any]:
        reads.append(key)
        return original_hgetall(key)

    def hget(key: str, field: str) -> Any:
        reads.append(key)
        return original_hget(key, field)

    store.hgetall, store.hget = hgetall, hget  # type: ignore[method-assign]
    reminders = s.trinket("ReminderManager")
    reminders.add_reminder("Call", "2026-11-30T08:00:00+00:00")
    s.compose()
    reads.clear()
    for _ in range(3):
        s.clock.advance(minutes=1)  # type: ignore[attr-defined]
        s.compose()
    assert [key for key in reads if key.startswith(("manifest:", "reminders:"))] == []
    reminders.complete("rem_1")
    s.collapse_segment("Morning")
    assert "active_reminders" not in shown(s)
    assert "Morning" in s.composed.section("conversation_manifest").content  # type: ignore[union-attr]


def reminder_record(id_: str, title: str, due: str) -> dict[str, Any]:
    return {
        "id": id_,
        "title": title,
        "details": "",
        "category": "user",
        "due": due,
        "created_at": T0,
        "completed_at": None,
    }


def test_a_reminder_written_by_a_notebook_cell_shows_at_the_next_compose() -> None:
    from wm_kernel.stores import keys

    s = Session(base_prompt="Hi.", clock=ManualClock(T0), trinkets=[ReminderManager], instruments=())
    s.trinket("ReminderManager").add_reminder("Call", "2026-11-30T10:00:00+00:00")
    s.compose()
    # the kept rows were read; now a cell writes the store directly, around the trinket
    s.store.hset(
        keys.reminders(s.user_id), "rem_9", reminder_record("rem_9", "Water the beds", "2026-11-30T11:00:00+00:00")
    )
    s.compose()
    content = s.composed.section("active_reminders").content  # type: ignore[union-attr]
    assert "Call" in content and "Water the beds" in content
    s.store.hdel(keys.reminders(s.user_id), "rem_9")
    s.compose()
    assert "Water the beds" not in s.composed.section("active_reminders").content  # type: ignore[union-attr]


def test_two_processes_on_one_sqlite_file_see_each_others_reminders_and_segments(tmp_path: Any) -> None:
    from trinkets.manifest_trinket import ManifestTrinket
    from wm_kernel.stores.embedded import SQLiteStore

    path = tmp_path / "wm.db"

    def open_session() -> Session:
        # one store per Session: two connections to one file, as two processes would have
        return Session(
            base_prompt="Hi.",
            clock=ManualClock(T0),
            store=SQLiteStore(path),
            trinkets=[ReminderManager, ManifestTrinket],
            instruments=(),
        )

    writer, reader = open_session(), open_session()
    reader.compose()  # rows read (none) and kept
    writer.trinket("ReminderManager").add_reminder("Call Bob", "2026-11-30T10:00:00+00:00")
    writer.collapse_segment("Morning")
    reader.compose()
    assert "Call Bob" in reader.composed.section("active_reminders").content  # type: ignore[union-attr]
    assert "Morning" in reader.composed.section("conversation_manifest").content  # type: ignore[union-attr]
    # and the reader's own write keeps the writer's reminder (its rows were read again)
    reader.trinket("ReminderManager").add_reminder("Call Ann", "2026-11-30T12:00:00+00:00")
    reader.compose()
    content = reader.composed.section("active_reminders").content  # type: ignore[union-attr]
    assert "Call Bob" in content and "Call Ann" in content


def test_store_versions_move_with_every_write_and_only_then() -> None:
    from wm_kernel.stores.embedded import MemoryStore

    store = MemoryStore()
    seen = [store.version("k")]
    store.hset("k", "f", 1)
    seen.append(store.version("k"))
    store.hset("other", "f", 1)
    assert store.version("k") == seen[-1]  # another key: unchanged
    store.hget("k", "f"), store.hgetall("k")
    assert store.version("k") == seen[-1]  # reads: unchanged
    try:
        with store.transaction():
            store.hset("k", "f", 2)
            raise RuntimeError
    except RuntimeError:
        pass
    seen.append(store.version("k"))
    store.hdel("k", "f")
    seen.append(store.version("k"))
    assert len(set(seen)) == len(seen) and store.hgetall("k") == {}


def test_sqlite_version_moves_when_another_connection_commits(tmp_path: Any) -> None:
    from wm_kernel.stores.embedded import SQLiteStore

    mine, theirs = SQLiteStore(tmp_path / "s.db"), SQLiteStore(tmp_path / "s.db")
    before = mine.version("k")
    assert mine.version("k") == before
    theirs.hset("unrelated", "f", 1)  # another connection: the whole file may have changed
    after = mine.version("k")
    assert after != before
    mine.hset("k", "f", 1)
    assert mine.version("k") != after
