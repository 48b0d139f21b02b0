"""Session: the conversation driver: turns, segments, bad input, the current session."""

from __future__ import annotations

import warnings

import pytest

import wm_kernel
from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import StragglerSectionWarning
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session
from wm_kernel.stores.embedded import SQLiteStore


class Tips(StatefulTrinket):
    variable_name = "peanutgallery_guidance"

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.tips: dict[int, tuple[str, int, int]] = {}

    def add(self, text, ttl):
        with self.lock:
            self.tips[len(self.tips) + 1] = (text, self.current_turn, ttl)

    def generate_content(self, context):
        return "\n".join(f"{t} ({a + n - self.current_turn} left)" for t, a, n in self.tips.values())

    def _expire_items(self):
        gone = [k for k, (_, a, n) in self.tips.items() if self.current_turn > a + n]
        for k in gone:
            del self.tips[k]
        return bool(gone)

    def _clear_all_state(self):
        self.tips.clear()

    def describe_items(self):
        return [
            {"id": k, "label": t, "turns_remaining": a + n - self.current_turn} for k, (t, a, n) in self.tips.items()
        ]


class Note(EventAwareTrinket):
    variable_name = "behavioral_directives"
    cache_policy = True

    def generate_content(self, context):
        return "<user_model>note</user_model>"


@pytest.fixture
def session():
    return Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[Note, Tips],
    )


def test_compose_fills_and_records_the_turn(session):
    p = session.compose()
    assert p["cached_content"].startswith("You help Ada.\n\n═")
    assert p.turn == 0 and session.composed is p
    assert session.working_memory.composed is p


def test_advance_turn_publishes_one_event_per_turn_in_order(session):
    turns = []
    session.bus.subscribe(TurnCompletedEvent, lambda e: turns.append((e.turn_number, e.segment_turn_number)))
    session.advance_turn(3)
    assert turns == [(1, 1), (2, 2), (3, 3)]
    assert session.turn == 3 and session.composed.turn == 3


def test_turn_counting_across_a_collapse(session):
    tips = session.trinket("Tips")
    turns = []
    session.bus.subscribe(TurnCompletedEvent, lambda e: turns.append((e.turn_number, e.segment_turn_number)))
    session.advance_turn(2)
    collapsed = []
    session.bus.subscribe(SegmentCollapsedEvent, collapsed.append)
    session.collapse_segment("Planning chat", tools_used=["search"])
    assert tips.current_turn == 0 and session.segment_turn == 0 and session.turn == 2
    assert [(c.segment_id, c.summary, c.tools_used) for c in collapsed] == [
        (f"{session.continuum_id}-segment-1", "Planning chat", ("search",))
    ]
    tips.add("fresh", ttl=2)  # added right after a collapse keeps its full TTL
    session.advance_turn(2)
    assert turns == [(1, 1), (2, 2), (3, 1), (4, 2)]
    assert "fresh (0 left)" in session.composed["notification_center"]
    expired = session.advance_turn()
    assert expired == [{"turn": 5, "trinket": "Tips", "id": 1, "label": "fresh"}]
    assert "fresh" not in session.composed["notification_center"]


def test_collapse_keeps_tools_given_as_any_iterable(session):
    collapsed = []
    session.bus.subscribe(SegmentCollapsedEvent, collapsed.append)
    session.collapse_segment("Search", tools_used=(name for name in ["search", "fetch"]))
    assert [c.tools_used for c in collapsed] == [("search", "fetch")]
    with pytest.raises(TypeError, match="tools_used must be a sequence of tool names"):
        session.collapse_segment("s", tools_used=3)  # type: ignore[arg-type]
    assert session.segment_number == 2


def test_ttl_edges_through_the_session(session):
    tips = session.trinket("peanutgallery_guidance")
    tips.add("slow down", ttl=2)
    shown = {}
    session.compose()
    shown[0] = "slow down" in session.composed["notification_center"]
    for _ in range(3):
        session.advance_turn()
        shown[session.turn] = "slow down" in session.composed["notification_center"]
    assert shown == {0: True, 1: True, 2: True, 3: False}


def test_bad_input_changes_nothing(session):
    session.compose()
    logged = len(session.bus.log)
    for bad, exc, msg in [
        (0, ValueError, "at least 1, got 0"),
        (-2, ValueError, "at least 1"),
        (1.5, TypeError, "must be an int, got float"),
        (True, TypeError, "must be an int, got bool"),
        ("2", TypeError, "must be an int, got str"),
    ]:
        with pytest.raises(exc, match=msg):
            session.advance_turn(bad)
    assert session.turn == 0 and len(session.bus.log) == logged
    with pytest.raises(ValueError, match=r"unknown trinket 'Nope' \(known: Note, Tips\)"):
        session.trinket("Nope")
    with pytest.raises(TypeError, match="summary must be a str"):
        session.collapse_segment(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tools_used"):
        session.collapse_segment("s", tools_used="search")
    assert session.segment_number == 1
    with pytest.raises(TypeError, match="base_prompt must be a str"):
        Session(base_prompt=None)  # type: ignore[arg-type]


def test_a_closed_session_refuses_to_drive(session):
    session.close()
    for call in (session.compose, session.advance_turn, session.collapse_segment):
        with pytest.raises(RuntimeError, match="session is closed"):
            call()
    assert session.turn == 0


def test_turn_and_composed_are_observable(session):
    seen = []
    session.observe(
        lambda c: seen.append((c["name"], c["new"] if c["name"] == "turn" else None)), names=["turn", "composed"]
    )
    session.advance_turn()
    assert seen == [("turn", 1), ("composed", None)]


def test_manual_mode_does_not_compose(session):
    session.auto_compose = False
    session.advance_turn(2)
    assert session.composed is None
    assert session.compose().turn == 2


def test_state_persists_across_a_restart_with_sqlite(tmp_path):
    path = tmp_path / "wm.sqlite3"
    first = Session(
        clock=ManualClock("2026-11-30T09:00:00+00:00"), store=SQLiteStore(path), user_id="ada", trinkets=[Note]
    )
    first.compose()
    first.store.close()
    second = Session(
        clock=ManualClock("2026-11-30T10:00:00+00:00"), store=SQLiteStore(path), user_id="ada", trinkets=[Note]
    )
    assert second.working_memory.get_trinket_state("behavioral_directives") == {
        "section_name": "behavioral_directives",
        "content": "<user_model>note</user_model>",
        "cache_policy": True,
        "last_updated": "2026-11-30T09:00:00+00:00",
    }
    other_user = Session(store=SQLiteStore(path), user_id="bob", trinkets=[Note])
    assert other_user.working_memory.get_trinket_state("behavioral_directives") is None


def test_current_session_is_shared_and_replaceable():
    mine = Session(trinkets=[])
    wm_kernel.set_current_session(mine)
    try:
        assert wm_kernel.current_session() is mine
        mine.close()
        fresh = wm_kernel.current_session()
        assert fresh is not mine and not fresh.closed
    finally:
        wm_kernel.set_current_session(None)


def test_every_compose_notifies_even_when_the_text_is_the_same(session):
    seen_session, seen_wm = [], []
    session.observe(seen_session.append, names=["composed"])
    session.working_memory.observe(seen_wm.append, names=["composed"])
    first = session.compose()
    second = session.compose()
    assert first == second and first is not second  # same text, a new compose
    assert [c["new"] for c in seen_session] == [first, second]
    assert len(seen_wm) == 2


class Unlisted(EventAwareTrinket):
    variable_name = "not_in_any_layout"

    def generate_content(self, context):
        return "stray"


def test_a_failed_compose_raises_and_records_nothing():
    # it once took the previous prompt, stamped it with the new turn and recorded it again
    s = Session(base_prompt="Hi.", clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[])
    first = s.compose()
    s.add_trinket(Unlisted)
    s.auto_compose = False
    s.advance_turn()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StragglerSectionWarning)
        with pytest.raises(StragglerSectionWarning):
            s.compose()
    assert (first.turn, s.composed is first, s.recorder.turns) == (0, True, [0])


def test_a_stateful_trinket_added_mid_segment_counts_turns_from_there():
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket

    session = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[Note])
    session.advance_turn(3)
    pg = session.add_trinket(PeanutGalleryTrinket)
    assert pg.current_turn == 3
    pg.add_guidance("concern", "Late advice.", ttl=1)
    session.advance_turn()
    assert [g["turns_remaining"] for g in pg.get_active_guidance()] == [0]
    assert session.advance_turn() == [
        {"turn": 5, "trinket": "PeanutGalleryTrinket", "id": "guidance-1", "label": "concern: Late advice."}
    ]


def test_the_working_memory_knows_the_continuum_before_any_trinket_registers():
    seen = []

    def factory(bus, wm):
        seen.append(wm.continuum_id)
        return Note(bus, wm)

    s = Session(continuum_id="planning", trinkets=[factory])
    assert seen == ["planning"] and s.working_memory.continuum_id == "planning"


def test_a_resumed_session_keeps_the_start_of_its_segment(tmp_path):
    path = tmp_path / "wm.sqlite3"
    first = Session(
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        store=SQLiteStore(path),
        user_id="ada",
        continuum_id="c1",
        trinkets=[Note],
    )
    first.clock.advance(minutes=30)
    first.collapse_segment("Warm-up")
    first.store.close()
    second = Session(
        clock=ManualClock("2026-11-30T11:00:00+00:00"),
        store=SQLiteStore(path),
        user_id="ada",
        continuum_id="c1",
        trinkets=[Note],
    )
    assert second.segment_number == 2
    assert second.segment_started_at.isoformat() == "2026-11-30T09:30:00+00:00"
    other = Session(
        clock=ManualClock("2026-11-30T11:00:00+00:00"),
        store=second.store,
        user_id="ada",
        continuum_id="c2",
        trinkets=[Note],
    )
    assert other.segment_started_at.isoformat() == "2026-11-30T11:00:00+00:00"
    second.store.hset("session:ada:c1", "segment", {"number": 2, "started_at": "half past nine"})
    with pytest.raises(ValueError) as info:
        Session(store=second.store, user_id="ada", continuum_id="c1", trinkets=[Note])
    assert str(info.value) == (
        "the segment stored under 'session:ada:c1' cannot be read (started_at: not an ISO 8601 "
        "date-time: 'half past nine'); delete it with store.delete('session:ada:c1') to start the "
        "segment now"
    )
    second.store.close()


def test_turn_and_segment_are_traits_observers_hear() -> None:
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    s = Session(clock=clock, trinkets=[])
    heard: list[tuple[str, object, object]] = []
    s.observe(lambda change: heard.append((change["name"], change["old"], change["new"])), ["turn", "segment"])
    s.advance_turn(2)
    clock.advance(minutes=30)
    s.collapse_segment("Planning")
    assert [(name, old, new) for name, old, new in heard if name == "turn"] == [("turn", 0, 1), ("turn", 1, 2)]
    ((_, ended, started),) = [h for h in heard if h[0] == "segment"]
    assert (ended.number, ended.started_at.isoformat()) == (1, "2026-11-30T09:00:00+00:00")
    assert (started.number, started.started_at.isoformat()) == (2, "2026-11-30T09:30:00+00:00")
    assert s.segment is started and s.segment_started_at == started.started_at


def test_a_session_without_instruments_attaches_no_history_until_asked() -> None:
    from wm_kernel.instruments.history import History

    s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[], instruments=())
    seen: list[Session] = []
    t = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[], instruments=[seen.append])
    assert seen == [t]
    s.compose()
    assert s.recorder.turns == [] and isinstance(s.recorder, History)  # attached just now
    s.compose()
    assert s.recorder.turns == [0]
