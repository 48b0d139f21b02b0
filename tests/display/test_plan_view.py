"""The cache clock built from an imported log's compaction plan and from a Session's own plan
(wm_kernel.display.plan_view)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from compaction_transcripts import call_missing_then_cold, warm_auto

from wm_kernel import Layout, ManualClock, Profile, Session
from wm_kernel.display.plan_view import log_clock, session_clock
from wm_kernel.interop.log_files import import_log


def test_a_logs_clock_puts_the_compaction_call_on_the_lane_it_reads(tmp_path: Path) -> None:
    log = import_log(warm_auto(tmp_path))
    clock = log_clock(log)
    assert clock.lanes == ["5e551011"]
    rows = [(r.index, r.at.strftime("%H:%M:%S"), r.ttl_s, r.status, r.note) for r in clock.requests]
    assert rows == [
        (0, "10:00:00", 3600.0, "write", ""),
        (1, "10:00:30", 3600.0, "hit", ""),
        (2, "10:01:00", 3600.0, "hit", ""),
        (3, "10:01:20", 3600.0, "hit", "the compaction call (it reads this conversation)"),
        (4, "10:02:01", 3600.0, "partial", ""),
    ]
    # warm: one edit, where it ran; the plan keeps the moment (and says what it changes on its line)
    assert [(e.kind, e.planned, e.at.strftime("%H:%M:%S")) for e in clock.edits] == [
        ("compaction (auto)", False, "10:01:20")
    ]
    assert clock.edits[0].text == (
        "compaction (auto) on a warm cache, 20 s after the previous request: $0.026517; plan: as recorded, "
        "without a cache write (its 1,500 written tokens as plain input: the next request reads only the "
        "system prompt and tools): $0.019017, saves $0.007500"
    )
    assert clock.cold_spans() == []


def test_a_logs_clock_marks_a_boundary_without_its_call_and_the_planned_move(tmp_path: Path) -> None:
    log = import_log(call_missing_then_cold(tmp_path))
    clock = log_clock(log)
    edits = [(e.planned, e.at.strftime("%H:%M:%S"), e.text) for e in clock.edits]
    assert edits[0] == (False, "10:01:05", "compaction (auto): its call is not in the log")
    assert edits[1][:2] == (True, "10:01:30") and edits[1][2].startswith(
        "compact before the cache expires (within 300 s of 2026-01-05 10:01:30 UTC): $"
    )
    assert edits[2][:2] == (False, "10:30:00") and "on a cold cache, 1,710 s after the previous request" in edits[2][2]
    assert [(c.start.strftime("%H:%M:%S"), c.end.strftime("%H:%M:%S")) for c in clock.cold_spans()] == [
        ("10:06:30", "10:30:00")
    ]


@pytest.fixture
def session() -> Session:
    s = Session(
        base_prompt="You help {first_name}. " + "Rules. " * 800,
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        layout=Layout.original(),
    )
    s.compose()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=3)
    for _ in range(2):
        s.clock.advance(minutes=2)
        s.advance_turn()
        s.compose()
    s.collapse_segment(summary="Planning chat")
    s.clock.advance(minutes=2)
    s.advance_turn()
    s.compose()
    return s


def test_a_sessions_clock_shows_its_recorded_collapse_and_where_the_plan_runs_each_edit(session: Session) -> None:
    clock = session_clock(session, summary_tokens=50)
    turns = [r.note for r in clock.requests]
    assert turns == [f"turn {t}" for t in sorted(set(session.history["turn"]))]
    ran = [e for e in clock.edits if not e.planned]
    segments = session.history.drop_duplicates("turn").set_index("turn")["segment"]
    first_of_new = int(segments[segments == segments.max()].index.min())
    assert [(e.kind, e.text) for e in ran] == [
        ("segment collapse", f"segment collapse before turn {first_of_new} (segment {segments.max()})")
    ]
    assert clock.now == session.clock.now()


def test_a_sessions_clock_at_an_earlier_turn_stops_there_and_plans_from_its_request(session: Session) -> None:
    clock = session_clock(session, turn=1)
    assert [r.note for r in clock.requests] == ["turn 0", "turn 1"]
    assert clock.now == clock.requests[-1].at
    plan = session.plan(turn=1)
    # planned right after turn 1's request: warm, cold an hour (MIRA's one-hour breakpoints) later
    assert bool(plan.loc[0, "warm_now"]) and plan.loc[0, "cold_at"] == clock.requests[-1].at + timedelta(hours=1)
    assert session.plan().loc[0, "cold_at"] != plan.loc[0, "cold_at"]
    with pytest.raises(ValueError, match=r"^nothing recorded at or before turn -1 \(the first recorded is 0\)$"):
        session.plan(turn=-1)
    with pytest.raises(ValueError, match=r"^turn must be an int, got 'x'$"):
        session.plan(turn="x")  # type: ignore[arg-type]
