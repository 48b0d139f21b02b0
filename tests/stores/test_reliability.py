"""Issue 15: nothing lost, nothing leaked, nothing silent. The store and the feeds under faults
(Ctrl-C, a locked file, a second writer, a damaged file), hostile text and huge inputs. Each test
reproduces one reported defect; docs/reliability.md says what these guarantee."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from trinkets.base import EventAwareTrinket
from trinkets.getcontext import GetContextTrinket
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
from trinkets.reminders import ReminderManager
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.failures import CollapseIncompleteError
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.instruments.history import History
from wm_kernel.instruments.history_records import HistoryConflictError
from wm_kernel.session import Session
from wm_kernel.stores import embedded as store_module
from wm_kernel.stores.embedded import MemoryStore, SQLiteStore, StateStore
from wm_kernel.utils.markup import escape_attr, escape_text

START = "2026-11-30T09:00:00+00:00"
CUT = "Great talk \ud83d"  # half of an emoji: what a byte-count cut leaves
LOCKED = "database is locked"


def stored_session(
    store: StateStore,
    *,
    continuum_id: str | None = "c1",
    trinkets: Any = (PeanutGalleryTrinket, GetContextTrinket, ReminderManager),
) -> Session:
    return Session(
        base_prompt="Hi.",
        clock=ManualClock(START),
        store=store,
        user_id="ada",
        continuum_id=continuum_id,
        trinkets=trinkets,
    )


def gallery(s: Session) -> PeanutGalleryTrinket:
    t = s.trinket("PeanutGalleryTrinket")
    assert isinstance(t, PeanutGalleryTrinket)
    return t


class FlakyStore(MemoryStore):
    """A MemoryStore whose writes to keys starting with ``failing`` raise what a locked SQLite file
    raises, while ``failing`` is set (a transient lock, made deterministic)."""

    def __init__(self) -> None:
        super().__init__()
        self.failing: str | None = None

    def _check(self, key: str) -> None:
        if self.failing is not None and key.startswith(self.failing):
            raise sqlite3.OperationalError(LOCKED)

    def hset(self, key: str, field: str, value: Any) -> None:
        self._check(key)
        super().hset(key, field, value)

    def hdel(self, key: str, field: str) -> bool:
        self._check(key)
        return super().hdel(key, field)


# -- 15.1: a lone surrogate is refused at the feed and poisons nothing


@pytest.mark.parametrize(
    "feed",
    [
        lambda s: gallery(s).add_guidance("concern", CUT),
        lambda s: s.trinket("GetContextTrinket").add_pending("t9", CUT),
        lambda s: s.trinket("ReminderManager").add_reminder(CUT, "2026-11-30T12:00:00+00:00"),
    ],
    ids=["add_guidance", "add_pending", "add_reminder"],
)
def test_a_lone_surrogate_is_refused_at_the_feed_and_poisons_nothing(tmp_path: Path, feed) -> None:
    path = tmp_path / "wm.sqlite"
    s = stored_session(SQLiteStore(path))
    gallery(s).add_guidance("concern", "Check the units.")
    with pytest.raises(
        ValueError,
        match=r"contains a lone surrogate U\+D83D at index 11 \(half of "
        r"a character, e\.g\. an emoji cut in two\); it cannot be "
        r"stored$",
    ):
        feed(s)
    gallery(s).add_guidance("coaching", "Later feeds still work.")  # nothing is poisoned
    composed = s.compose()
    assert "Later feeds still work." in composed["notification_center"]
    assert [o.error for o in composed.omitted] == ["", ""]  # two empty sections, no failure
    s.store.close()
    again = stored_session(SQLiteStore(path))
    assert [e.text for e in gallery(again).entries.values()] == ["Check the units.", "Later feeds still work."]
    assert again.trinket("GetContextTrinket").entries == {}
    assert again.trinket("ReminderManager").reminders() == []
    again.store.close()


@pytest.mark.parametrize("make", [MemoryStore, lambda: SQLiteStore(":memory:")], ids=["memory", "sqlite"])
def test_every_store_refuses_a_lone_surrogate_and_keeps_what_it_had(make) -> None:
    store = make()
    store.hset("k", "f", {"text": "fine"})
    with pytest.raises(ValueError, match="value of 'f' contains a lone surrogate U\\+DC80"):
        store.hset("k", "f", {"text": ["ok", "bad \udc80"]})
    with pytest.raises(ValueError, match="store field contains a lone surrogate"):
        store.hset("k", "\ud800", 1)
    assert store.hgetall("k") == {"f": {"text": "fine"}}


# -- 15.2: Ctrl-C at any moment of a transaction ends it


class _InterruptingConnection(sqlite3.Connection):
    """Sends this process a real SIGINT right after executing the statement ``at``."""

    at = ""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        cursor = super().execute(sql, *args)
        if sql == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        return cursor


def _another_process_can_write(path: Path) -> bool:
    code = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)"
        "; c.execute('BEGIN IMMEDIATE'); c.execute('COMMIT')"
    )
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True).returncode == 0


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Python's own Ctrl-C handler for the test, so a real SIGINT raises KeyboardInterrupt even when
    the suite was started with SIGINT ignored (as a shell starts a background job); the handler
    before it is put back."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize(
    "at",
    [
        "BEGIN IMMEDIATE",
        "INSERT INTO hashes (key, field, value) VALUES "
        "(?, ?, ?) ON CONFLICT (key, field) DO UPDATE SET value=excluded.value",
        "COMMIT",
    ],
    ids=["after-begin", "mid-write", "after-commit"],
)
@pytest.mark.slow
def test_ctrl_c_at_any_moment_of_a_write_ends_the_transaction(
    tmp_path: Path, at: str, monkeypatch: pytest.MonkeyPatch, ctrl_c: None
) -> None:
    path = tmp_path / "wm.sqlite"
    connect = sqlite3.connect
    monkeypatch.setattr(
        store_module.sqlite3, "connect", lambda *a, **k: connect(*a, factory=_InterruptingConnection, **k)
    )
    store = SQLiteStore(path)
    store.hset("k", "before", 1)
    _InterruptingConnection.at = at
    try:
        with pytest.raises(KeyboardInterrupt):
            store.hset("k", "during", 2)
    finally:
        _InterruptingConnection.at = ""
    assert not store.connection.in_transaction
    assert _another_process_can_write(path)
    # committed only if the interrupt came after COMMIT; nothing half-done either way
    assert store.hgetall("k") == ({"before": 1, "during": 2} if at == "COMMIT" else {"before": 1})
    store.hset("k", "after", 3)  # the store still works
    store.close()


@pytest.mark.slow
def test_ctrl_c_inside_a_transaction_rolls_it_back(tmp_path: Path, ctrl_c: None) -> None:
    path = tmp_path / "wm.sqlite"
    store = SQLiteStore(path)
    with pytest.raises(KeyboardInterrupt):
        with store.transaction():
            store.hset("k", "a", 1)
            os.kill(os.getpid(), signal.SIGINT)
            store.hset("k", "b", 2)  # pragma: no cover - the signal arrives before this
    assert not store.connection.in_transaction and store.hgetall("k") == {}
    assert _another_process_can_write(path)
    store.close()


# -- 15.3 and 12.6: two processes on one file


def _feed_in_another_process(path: str, tag: str, count: int, start: Any) -> list[str]:
    s = stored_session(SQLiteStore(path, timeout=30))
    start.wait()
    acknowledged = []
    for i in range(count):
        acknowledged.append(gallery(s).add_guidance("concern", f"{tag} {i}", ttl=100))
        s.trinket("GetContextTrinket").add_pending(f"{tag}-{i}", f"query {tag} {i}")
        acknowledged.append(s.trinket("ReminderManager").add_reminder(f"{tag} {i}", "2026-12-01T09:00:00+00:00"))
    s.store.close()
    return acknowledged


@pytest.mark.slow
def test_two_processes_feeding_one_conversation_keep_every_acknowledged_item(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    SQLiteStore(path).close()
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(2)
        with context.Pool(2) as pool:
            runs = [pool.apply_async(_feed_in_another_process, (str(path), tag, 60, start)) for tag in ("A", "B")]
            acknowledged = [run.get(timeout=120) for run in runs]
    s = stored_session(SQLiteStore(path))
    ids = list(gallery(s).entries)
    assert len(ids) == len(set(ids)) == 120
    assert set(ids) | {r["id"] for r in s.trinket("ReminderManager").reminders()} == {
        item for run in acknowledged for item in run
    }
    assert len(s.trinket("GetContextTrinket").entries) == 120
    assert {e.text for e in gallery(s).entries.values()} == {f"{t} {i}" for t in "AB" for i in range(60)}
    s.store.close()


def _compose_turns_without_an_id(path: str, turns: int) -> str:
    s = stored_session(SQLiteStore(path, timeout=30), continuum_id=None, trinkets=[])
    for _ in range(turns):
        s.advance_turn()
    s.store.close()
    return s.continuum_id


@pytest.mark.slow
def test_sessions_in_two_processes_without_ids_keep_their_own_histories(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        first, second = pool.starmap(_compose_turns_without_an_id, [(str(path), 3), (str(path), 5)])
    assert first != second and first.startswith("continuum-")
    store = SQLiteStore(path)
    assert History(store, user_id="ada", continuum_id=first).turns == [1, 2, 3]
    assert History(store, user_id="ada", continuum_id=second).turns == [1, 2, 3, 4, 5]
    store.close()


def test_a_second_writer_of_a_conversation_never_replaces_history_rows(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    first = stored_session(SQLiteStore(path), trinkets=[Echo])
    second = stored_session(SQLiteStore(path), trinkets=[])  # the same conversation, meanwhile
    first.compose()
    with pytest.raises(
        HistoryConflictError,
        match=r"^turn 0 of conversation 'c1' \(user 'ada'\) "
        r"was recorded by another Session",
    ):
        second.compose()  # the second's compose of turn 0 would replace the first's row
    assert second.recorder.turns == []
    first.advance_turn()
    first.compose()  # the first may re-compose its own turn
    reread = History(SQLiteStore(path), user_id="ada", continuum_id="c1")
    assert reread.turns == [0, 1]
    assert [e.name for e in reread.compose_at(0).entries] == ["base_prompt", "datetime_section"]
    first.store.close()
    second.store.close()


# -- 15.4: a feed that fails to persist changes nothing


def test_a_feed_that_cannot_be_stored_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    s = stored_session(SQLiteStore(path, timeout=0.05))
    lock_holder = sqlite3.connect(path, isolation_level=None)  # another writer of the file
    pg = gallery(s)
    pg.add_guidance("concern", "First.")
    lock_holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match=LOCKED):
        pg.add_guidance("concern", "Retried.")
    with pytest.raises(sqlite3.OperationalError, match=LOCKED):
        s.trinket("GetContextTrinket").add_pending("t1", "budget")
    assert list(pg.entries) == ["guidance-1"] and pg.added_count == 1
    assert s.trinket("GetContextTrinket").entries == {}
    lock_holder.execute("ROLLBACK")
    lock_holder.close()
    assert pg.add_guidance("concern", "Retried.") == "guidance-2"  # the retry: no duplicate
    s.store.close()
    again = stored_session(SQLiteStore(path))
    assert [(e.id, e.text) for e in gallery(again).entries.values()] == [
        ("guidance-1", "First."),
        ("guidance-2", "Retried."),
    ]
    again.store.close()


# -- 15.5: a store error while composing is visible


class Echo(EventAwareTrinket):
    variable_name = "datetime_section"  # a section the default layout places

    def generate_content(self, context: dict[str, Any]) -> str:
        return "hello"


def test_a_store_error_while_composing_shows_on_the_trinket_and_in_omitted() -> None:
    store = FlakyStore()
    bus = EventBus()
    wm = WorkingMemory(bus, store=store, user_id="ada")
    echo = Echo(bus, wm)
    store.failing = "trinkets:"
    composed = wm.compose()
    assert "hello" not in composed["notification_center"]
    assert [(o.name, o.trinket, o.reason, o.error) for o in composed.omitted] == [
        ("datetime_section", "Echo", "trinket failed", f"storing its section failed: OperationalError: {LOCKED}")
    ]
    assert echo.error == f"storing its section failed: OperationalError: {LOCKED}"
    store.failing = None
    composed = wm.compose()
    assert composed.omitted == () and echo.error == ""
    assert store.hget("trinkets:ada", "datetime_section")["content"] == "hello"


# -- 15.6: a collapse reports exactly which trinkets it did not flush


def test_a_collapse_names_the_trinkets_it_could_not_flush_and_finishes_them_later() -> None:
    store = FlakyStore()
    s = stored_session(store)
    gallery(s).add_guidance("concern", "Old segment's guidance.")
    s.trinket("GetContextTrinket").add_pending("t1", "old search")
    s.compose()
    store.failing = "peanutgallery:"
    with pytest.raises(CollapseIncompleteError) as info:
        s.collapse_segment("done")
    assert str(info.value) == (
        f"segment c1-segment-1 collapsed, but 1 trinket(s) were not flushed: PeanutGalleryTrinket "
        f"(OperationalError: {LOCKED}); each is left out of the prompt and flushed again before "
        f"its next update"
    )
    assert s.segment_number == 2 and s.trinket("GetContextTrinket").entries == {}
    # the old guidance is not shown in the new segment, and the failure is visible
    prompt = s.compose()
    assert "Old segment" not in prompt["notification_center"]
    assert [o.trinket for o in prompt.omitted if o.reason == "trinket failed"] == ["PeanutGalleryTrinket"]
    store.failing = None
    prompt = s.compose()  # the flush is retried first
    assert gallery(s).entries == {} and "Old segment" not in prompt["notification_center"]
    assert gallery(s).error == "" and not any(k.startswith("item:") for k in store.hgetall("peanutgallery:ada:c1"))


def test_a_feed_on_a_trinket_not_yet_flushed_keeps_the_new_item() -> None:
    store = FlakyStore()
    s = stored_session(store)
    gallery(s).add_guidance("concern", "Old.")
    store.failing = "peanutgallery:"
    with pytest.raises(CollapseIncompleteError):
        s.collapse_segment()
    store.failing = None
    new_id = gallery(s).add_guidance("concern", "New.")
    assert [(e.id, e.text) for e in gallery(s).entries.values()] == [(new_id, "New.")]
    assert "New." in s.compose()["notification_center"]


# -- 15.9: damaged, empty and mistyped files


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    path.write_bytes(b"this is no database" * 100)
    with pytest.raises(
        ValueError,
        match=r"^cannot open state store '.*wm\.sqlite': file is not a "
        r"database \(not an SQLite database, or damaged\)$",
    ):
        SQLiteStore(path)


def test_a_damaged_history_is_a_clear_error_not_a_key_error(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    s = stored_session(SQLiteStore(path), trinkets=[Echo])
    s.advance_turn(2)
    lost = sorted(s.store.hgetall("history-entries:ada"))[0]
    s.store.hdel("history-entries:ada", lost)  # an entry the recorded turns refer to
    s.store.close()
    with pytest.raises(
        ValueError,
        match=r"^the history of conversation 'c1' \(user 'ada'\) in "
        r"'.*wm\.sqlite' is damaged and cannot be read "
        r"\(ValueError: .*\)$",
    ):
        stored_session(SQLiteStore(path), trinkets=[Echo])


def test_an_empty_file_opens_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "wm.sqlite"
    path.touch()
    with pytest.warns(UserWarning, match=r"was an empty file; starting a new store in it$"):
        store = SQLiteStore(path)
    store.hset("k", "f", 1)
    assert store.hget("k", "f") == 1
    store.close()


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        (None, TypeError, "path must be a str or os.PathLike, got NoneType"),
        (5, TypeError, "path must be a str or os.PathLike, got int"),
        (b"x", TypeError, "path must be a str or os.PathLike, got bytes"),
        ("", ValueError, "path (use ':memory:' for a database that is not kept) must not be empty"),
    ],
)
def test_a_store_path_that_is_not_a_path_is_refused_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Any, error: type, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error) as info:
        SQLiteStore(path)
    assert str(info.value) == message
    assert list(tmp_path.iterdir()) == []


# -- 15.10: characters XML cannot carry


def test_characters_xml_cannot_carry_are_replaced_so_sections_parse() -> None:
    s = stored_session(MemoryStore(), trinkets=[PeanutGalleryTrinket])
    gallery(s).add_guidance("concern", "nul\x00 bell\x07 escape\x1b nonchar\ufffe end\uffff tab\t")
    section = gallery(s).content if gallery(s).content else None
    s.compose()
    section = gallery(s).content
    root = ET.fromstring(section.replace("mira:", "mira_"))
    assert root.find("guidance").text == "nul\ufffd bell\ufffd escape\ufffd nonchar\ufffd end\ufffd tab\t"
    hostile = "".join(map(chr, range(0x20))) + "\ufffe\uffff"
    parsed = ET.fromstring(f'<r a="{escape_attr(hostile)}">{escape_text(hostile)}</r>')
    kept = "\t\n\r"
    expected = "".join(c if c in kept else "\ufffd" for c in hostile[:0x20]) + "\ufffd\ufffd"
    assert parsed.get("a") == parsed.text == expected


# -- 15.8 (the clock): a huge advance


@pytest.mark.parametrize("step", [{"seconds": 1e300}, {"weeks": 99_999_999}, {"days": 3_000_000}])
def test_a_huge_clock_advance_is_one_clear_error_and_changes_nothing(step: dict[str, float]) -> None:
    clock = ManualClock(START)
    with pytest.raises(
        ValueError,
        match=r"advance\(.*\) .*(too far|would pass the year 9999).*the "
        r"clock is unchanged$",
    ):
        clock.advance(**step)
    assert clock.now().isoformat() == START


# -- 15.11 and 12.6: per-item records, versioned, read back from earlier versions too

ENTRY = {"id": "guidance-1", "type": "concern", "text": "Units.", "added_turn": 0, "ttl": 5, "critical": False}


def test_an_earlier_versions_whole_state_record_becomes_per_item_records() -> None:
    store = MemoryStore()
    store.hset("peanutgallery:ada:c1", "state", {"version": 1, "state": {"added_count": 3, "entries": [ENTRY]}})
    s = stored_session(store, trinkets=[PeanutGalleryTrinket])
    assert list(gallery(s).entries) == ["guidance-1"]
    assert store.hgetall("peanutgallery:ada:c1") == {
        "count:added_count": 3,
        "order": 1,
        "item:guidance-1": {"v": 1, "seq": 1, "item": ENTRY},
    }
    assert gallery(s).add_guidance("coaching", "Next.") == "guidance-4"  # the counter carried over


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        (
            "item:guidance-1",
            {"v": 2, "seq": 1, "item": ENTRY},
            "field 'item:guidance-1': version 2, this trinket reads version 1",
        ),
        ("item:guidance-1", ENTRY, """field 'item:guidance-1': expected {"v", "seq", "item"}"""),
        ("surprise", 1, "unexpected field 'surprise'"),
    ],
)
def test_an_unreadable_item_record_is_a_clear_error_and_registers_nothing(field: str, value: Any, error: str) -> None:
    store = MemoryStore()
    store.hset("peanutgallery:ada:c1", field, value)
    with pytest.raises(ValueError) as info:
        stored_session(store, trinkets=[PeanutGalleryTrinket])
    assert str(info.value) == (
        f"PeanutGalleryTrinket: the state stored under 'peanutgallery:ada:c1' cannot be read "
        f"(ValueError: {error}); delete it with store.delete('peanutgallery:ada:c1') to start empty"
    )


def test_an_add_writes_one_record_however_many_items_are_held() -> None:
    writes: list[tuple[str, str]] = []

    class Counting(MemoryStore):
        def hset(self, key: str, field: str, value: Any) -> None:
            writes.append((key, field))
            super().hset(key, field, value)

    s = stored_session(Counting(), trinkets=[PeanutGalleryTrinket])
    for i in range(50):
        gallery(s).add_guidance("concern", f"Item {i}.")
    writes.clear()
    gallery(s).add_guidance("concern", "One more.")
    assert sorted(writes) == [
        ("peanutgallery:ada:c1", "count:added_count"),
        ("peanutgallery:ada:c1", "item:guidance-51"),
        ("peanutgallery:ada:c1", "order"),
    ]


def test_a_base_prompt_with_a_lone_surrogate_is_refused_and_changes_nothing() -> None:
    s = stored_session(MemoryStore(), trinkets=[])
    with pytest.raises(ValueError, match=r"^base_prompt contains a lone surrogate U\+D83D"):
        s.base_prompt = CUT
    assert s.base_prompt == "Hi."


# -- issue 25 item 5: a collapse while another process holds the file is all or nothing

HOLD_THE_FILE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


@pytest.mark.slow
def test_a_collapse_while_another_process_holds_the_file_changes_nothing(tmp_path: Path) -> None:
    from trinkets.manifest_trinket import ManifestTrinket

    path = tmp_path / "wm.sqlite"
    s = stored_session(SQLiteStore(path, timeout=0.2), trinkets=[PeanutGalleryTrinket, ManifestTrinket])
    gallery(s).add_guidance("concern", "Keep it short.", ttl=100)
    s.advance_turn()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_FILE, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(sqlite3.OperationalError) as caught:
            s.collapse_segment(summary="Planning chat")
    finally:
        holder.communicate("")
    assert str(caught.value) == (
        f"state store {str(path)!r} is busy: another process kept it locked for more than 0.2 s "
        f"(database is locked); nothing was written, try again"
    )
    assert (s.segment_number, s.segment_turn, s.turn) == (1, 1, 1)  # still the old segment
    assert [e.text for e in gallery(s).entries.values()] == ["Keep it short."]
    restarted = stored_session(SQLiteStore(path), trinkets=[PeanutGalleryTrinket, ManifestTrinket])
    assert (restarted.segment_number, restarted.segment_turn) == (1, 1)
    assert restarted.trinket("ManifestTrinket").segments() == s.trinket("ManifestTrinket").segments()
    assert all(row["status"] != "collapsed" for row in restarted.trinket("ManifestTrinket").segments())
    s.collapse_segment(summary="Planning chat")  # the file is free again: the collapse completes
    assert (s.segment_number, s.segment_turn) == (2, 0)
    assert gallery(s).entries == {}
    again = stored_session(SQLiteStore(path), trinkets=[ManifestTrinket])
    assert again.segment_number == 2
    assert [row["status"] for row in again.trinket("ManifestTrinket").segments()].count("collapsed") == 1


# -- issue 25 item 6: a long session's cache simulation reads its turn times from the history


@pytest.mark.slow
def test_the_cache_simulation_of_a_long_session_has_every_turns_time(ip: Any, tmp_path: Path) -> None:
    import wm_kernel
    from wm_kernel.session import set_current_session

    s = stored_session(SQLiteStore(tmp_path / "wm.sqlite"), trinkets=[])
    s.compose()
    for _ in range(1_600):  # ~3 bus events a turn: the bus log has long forgotten turn 0
        s.clock.advance(minutes=1)
        s.advance_turn()
    assert len(s.history["turn"].unique()) == 1_601
    simulation = s.cache_simulation()
    assert len(simulation.turns) == 1_601
    sent = [request.at for request in simulation.requests]
    assert sent[0].isoformat() == START and sent[1_600].isoformat() == "2026-12-01T11:40:00+00:00"
    set_current_session(s)
    assert wm_kernel.current_session() is s
    assert ip.run_line_magic("cache", "--no-advice") is not None
    s.store.close()
    # the times are kept with the history: a restarted session (an empty bus log) has them too
    restarted = stored_session(SQLiteStore(tmp_path / "wm.sqlite"), trinkets=[])
    assert [r.at for r in restarted.cache_simulation().requests][:1_601] == sent
    restarted.store.close()


# -- issue 25 item 8: control characters in a reminder's title or id


@pytest.mark.parametrize("style", ["original", "revised"])
def test_control_characters_in_a_reminder_leave_the_hud_parseable(style: str) -> None:
    s = stored_session(MemoryStore(), trinkets=[ReminderManager])
    reminders = s.trinket("ReminderManager")
    if style == "revised":
        reminders.style = "revised"
    reminders.add_reminder("Pay\x00 rent\x1b[31m", "2026-11-30T08:00:00+00:00", id="rem\x01x", details="bell\x07")
    text = s.compose().section("active_reminders").content
    root = ET.fromstring(f"<root>{text}</root>")
    found = next(root.iter("reminder"))
    assert (found.get("id"), found.get("title")) == ("rem\ufffdx", "Pay\ufffd rent\ufffd[31m")
    assert found.find("details").text == "bell\ufffd"


# -- issue 25 item 9: two processes opening one new file at the same moment

OPEN_AT_ONCE = """
import sys, time, warnings
from wm_kernel.stores.embedded import SQLiteStore
warnings.simplefilter("always")
start = float(sys.argv[2])
while time.time() < start:
    pass
store = SQLiteStore(sys.argv[1])
store.hset("k", sys.argv[3], 1)
store.close()
"""


@pytest.mark.slow
def test_two_processes_opening_one_new_file_at_once_both_succeed(tmp_path: Path) -> None:
    import time

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    failures = []
    for round_ in range(20):
        path = tmp_path / f"new-{round_}" / "wm.sqlite"
        start = time.time() + 0.5
        runs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AT_ONCE, str(path), str(start), name],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for name in ("a", "b")
        ]
        for run in runs:
            _, err = run.communicate(timeout=60)
            if run.returncode or err:  # an error, or a warning that the new file was empty
                failures.append(err.strip().splitlines()[-1])
        if not failures:
            store = SQLiteStore(path)
            assert store.hgetall("k") == {"a": 1, "b": 1}
            store.close()
    assert failures == []


# -- issue 25 item 12: the cache simulator's numbers: no silent wrap, no overflow at the year 9999


def test_token_counts_the_simulator_cannot_hold_are_one_clear_error() -> None:
    from datetime import datetime

    from wm_kernel.cachesim.engine import Block, Request

    at = datetime(2026, 11, 30, tzinfo=UTC)
    with pytest.raises(
        ValueError,
        match=r"^block tokens must be at most 9,223,372,036,854,775,807 "
        r"\(2\*\*63 - 1\), got 9223372036854775808$",
    ):
        Block("a", 2**63)
    with pytest.raises(
        ValueError,
        match=r"^the request holds 9223372036854775808 tokens, more "
        r"than the simulator counts \(2\*\*63 - 1\)$",
    ):
        Request(at, [Block("a", 2**62, layer="tools"), Block("b", 2**62)])
    s = stored_session(MemoryStore(), trinkets=[])
    s.compose()
    with pytest.raises(ValueError, match=r"^tools_tokens must be at most 2\*\*63 - 1, got 10{30}$"):
        s.cache_simulation(tools_tokens=10**30)


def test_cache_tools_with_a_huge_number_is_a_usage_error(ip: Any) -> None:
    from IPython.core.error import UsageError

    from wm_kernel.session import set_current_session

    s = stored_session(MemoryStore(), trinkets=[])
    s.compose()
    set_current_session(s)
    with pytest.raises(UsageError, match=r"^tools_tokens must be at most 2\*\*63 - 1, got 10{26}$"):
        ip.run_line_magic("cache", "--tools 100000000000000000000000000")


def test_a_cache_simulation_at_the_end_of_the_year_9999_completes() -> None:
    s = Session(base_prompt="You help. " * 600, clock=ManualClock("9999-12-31T23:58:00+00:00"), trinkets=[])
    s.compose()
    s.clock.advance(minutes=1)
    s.advance_turn()
    simulation = s.cache_simulation()
    assert simulation.turns["status"].tolist() == ["write", "hit"]


# -- issue 25 item 15: a turn count that cannot finish is refused, in one line


def test_more_turns_at_once_than_can_finish_are_refused_and_change_nothing(ip: Any, tmp_path: Path) -> None:
    from IPython.core.error import UsageError

    from wm_kernel.experiments import Scenario
    from wm_kernel.experiments.steps import ScenarioError
    from wm_kernel.session import MAX_TURNS_AT_ONCE, set_current_session

    assert MAX_TURNS_AT_ONCE == 10_000
    s = stored_session(MemoryStore(), trinkets=[])
    with pytest.raises(
        ValueError,
        match=r"^at most 10,000 turns at once \(got 1000000000\); "
        r"advance in steps of 10,000 or fewer$",
    ):
        s.advance_turn(1_000_000_000)
    assert s.turn == 0
    set_current_session(s)
    with pytest.raises(UsageError, match=r"^at most 10,000 turns at once \(got 1000000000\)"):
        ip.run_line_magic("turn", "1000000000")
    assert s.turn == 0
    path = tmp_path / "long.jsonl"
    Scenario(base_prompt="Hi.", trinkets=[]).save(path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"step": "turn", "n": 1000000000}\n')
    with pytest.raises(
        ScenarioError,
        match=r"line 2: field 'n' must be a positive integer of at "
        r"most 10,000",
    ):
        Scenario.load(path)
    s.advance_turn(3)
    assert s.turn == 3


def test_a_full_disk_during_compose_is_one_store_error_and_the_session_goes_on(tmp_path: Path) -> None:
    from wm_kernel.stores.embedded import StoreFullError

    path = tmp_path / "state.sqlite"
    store = SQLiteStore(path)
    s = Session(base_prompt="You help {first_name}.", store=store, clock=ManualClock("2026-11-30T09:00:00+00:00"))
    s.compose()
    # a full disk, as SQLite sees one: the file may not grow by a page (SQLITE_FULL); set on the
    # store's own connection, the only way to give one connection a size limit
    (pages,) = store._conn.execute("PRAGMA page_count").fetchone()
    store._conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreFullError) as caught:
        for _ in range(5):
            s.advance_turn()
            s.clock.advance(hours=1)
            s.compose()
    message = str(caught.value)
    assert message.startswith(f"state store {str(path)!r} cannot grow: the disk (or the file's size limit) is full (")
    assert message.endswith("nothing was written, the store is as it was") and "\n" not in message
    assert isinstance(caught.value, sqlite3.OperationalError)  # as before, for code that caught sqlite3's
    # space again: the store was rolled back, not left half-written, and the session composes on
    store._conn.execute("PRAGMA max_page_count = 1073741823")
    s.advance_turn()
    assert s.compose().turn == s.turn
    assert store._conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.parametrize("timeout", [1e308, float("inf")])
def test_a_timeout_too_large_for_the_platform_is_one_line(tmp_path: Path, timeout: float) -> None:
    from wm_kernel.stores.valkey import ValkeyStore

    for make in (
        lambda: SQLiteStore(tmp_path / "s.sqlite", timeout=timeout),
        lambda: ValkeyStore("valkey://127.0.0.1:1/0", timeout=timeout),
    ):
        with pytest.raises(ValueError, match=r"^timeout must be ") as caught:
            make()
        assert "\n" not in str(caught.value)
    assert not (tmp_path / "s.sqlite").exists()
