"""Benchmark: a 10,000-turn scenario replay with all eight built-in trinkets.

Run on demand: ``.venv/bin/python bench/replay.py [TURNS [REPEAT]]`` (default 10,000 turns, 3
repetitions). Nothing is asserted; machines are noisy, so read the ratios, not the seconds. Runs are
interleaved (each repetition runs every case once), timed in CPU time (``time.thread_time``), and
shown as medians with the min-max range; ratios are taken within a repetition.

Workload: a ~2 KB base prompt, every built-in trinket fed with sample data (a user model, a domain
document, past segments, reminders, guidance every 3 turns, context searches every 7, surfaced
memories every 10, reminders that fall due and are done), 90 seconds of clock per turn (so the
time section changes every turn), a segment collapse every 100 turns. Measured in one process:

* the replay (``Scenario.run``): turns per second, composes per second;
* the history it recorded: bytes per turn (``History.stats``) and, for the ``tokens`` column, the
  tokenizer's real calls next to the number of distinct section texts (they must be equal: each
  distinct text is tokenized once);
* two baselines: the same replay with history recording switched off, and the same session driven
  by hand (direct method calls, no scenario decoding). The ratios say what recording and the
  scenario layer cost;
* growth (issue 33, goal: at most 1.1x each): a replay's CPU per turn over TURNS turns against the
  same over 1,000 turns; and ``Session.compose()`` (History attached, the clock moved 90 seconds
  before each, as in a turn) on the hand-driven session at turn 3,000 against the same at turn 300.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wm_kernel.experiments import Scenario  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.tokens import TokenCounter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleave, ratios, spread  # noqa: E402

START = "2026-11-30T09:00:00+00:00"
PARAGRAPH = (
    "Answer precisely, cite what you rely on, and say when you are unsure. Prefer short "
    "paragraphs and concrete examples over general advice. "
)
BASE_PROMPT = "You are a careful assistant helping {first_name}.{user_context}\n\n" + "\n\n".join(
    f"{i}. {PARAGRAPH}" for i in range(14)
)
USER_MODEL = (
    "<mira:user_model>"
    + "".join(
        f'<mira:observation section="s{i}" confidence="high">Observation number {i} about the user.</mira:observation>'
        for i in range(12)
    )
    + ('<mira:checkin><mira:topic section="s1" reason="Check the pace."/></mira:checkin></mira:user_model>')
)


def feeds_before_start() -> list[tuple[str, str, tuple[Any, ...], dict[str, Any]]]:
    """(trinket, method, args, kwargs) of the data every run starts with."""
    calls: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
        ("LoraTrinket", "set_user_model", (USER_MODEL,), {}),
        ("LoraTrinket", "schedule_checkins", (40,), {}),
        ("DomaindocTrinket", "create_document", ("handbook", "Team handbook"), {}),
        ("ManifestTrinket", "add_segment", ("Kick-off", "2026-11-28T15:00:00+00:00", "2026-11-28T16:30:00+00:00"), {}),
        (
            "ReminderManager",
            "add_reminder",
            ("Send the report", "2026-11-30T11:00:00+00:00"),
            {"details": "Quarterly numbers"},
        ),
    ]
    for i in range(6):
        calls.append(
            (
                "DomaindocTrinket",
                "add_section",
                ("handbook", f"s{i}", f"Section {i}", f"Body of section {i}. " * 20),
                {"summary": f"About topic {i}"},
            )
        )
    return calls


def feeds_at(turn: int) -> list[tuple[str, str, tuple[Any, ...], dict[str, Any]]]:
    """The feeds done before completing ``turn`` (1-based)."""
    calls: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = []
    if turn % 3 == 0:
        calls.append(
            (
                "PeanutGalleryTrinket",
                "add_guidance",
                ("coaching" if turn % 2 else "concern", f"Guidance {turn % 17}: slow down."),
                {"ttl": 2},
            )
        )
    if turn % 7 == 0:
        calls.append(
            ("GetContextTrinket", "add_pending", (f"t{turn}", f"query {turn % 13}"), {"search_scope": ["docs"]})
        )
    if turn % 7 == 2 and turn > 7:
        calls.append(
            (
                "GetContextTrinket",
                "add_success",
                (f"t{turn - 2}", f"query {(turn - 2) % 13}", "Found two relevant notes."),
                {"key_findings": [{"point": "A point", "source": "notes"}]},
            )
        )
    if turn % 10 == 0:
        calls.append(
            (
                "ProactiveMemoryTrinket",
                "surface",
                (
                    [
                        {
                            "id": f"mem-{(turn // 10) % 9:04d}-aaaa",
                            "text": f"Memory {(turn // 10) % 9}",
                            "similarity_score": 0.8,
                            "created_at": "2026-11-27T09:00:00+00:00",
                        }
                    ],
                ),
                {},
            )
        )
    if turn % 50 == 0:  # due 20 turns later, done 20 turns after that (rem_2 at turn 50, ...)
        calls.append(("ReminderManager", "add_reminder", (f"Follow up {turn}", _at(turn + 20)), {}))
    if turn % 50 == 40 and turn > 50:
        calls.append(("ReminderManager", "complete", (f"rem_{turn // 50 + 1}",), {}))
    if turn == 90:
        calls.append(("ReminderManager", "complete", ("rem_1",), {}))
    if turn % 40 == 0:
        calls.append(("LoraTrinket", "complete_checkin", (), {}))
    return calls


def _at(turn: int) -> str:
    from datetime import datetime, timedelta

    return (datetime.fromisoformat(START) + timedelta(seconds=90 * turn)).isoformat()


def build_scenario(turns: int) -> Scenario:
    scenario = Scenario(
        base_prompt=BASE_PROMPT,
        clock=START,
        continuum_id="bench",
        profile={"first_name": "Ada", "timezone": "Europe/London", "user_context": "Ada is a mathematician."},
    )
    for trinket, method, args, kwargs in feeds_before_start():
        scenario.feed(trinket, method, *args, **kwargs)
    scenario.compose()
    for turn in range(1, turns + 1):
        for trinket, method, args, kwargs in feeds_at(turn):
            scenario.feed(trinket, method, *args, **kwargs)
        scenario.advance(seconds=90)
        scenario.advance_turn()
        if turn % 100 == 0:
            scenario.collapse_segment(f"Segment ending at turn {turn}", tools_used=["search"])
    return scenario


def drive_by_hand(turns: int) -> Session:
    """The same session driven with direct calls (no scenario steps to decode)."""
    from wm_kernel.core.clock import ManualClock
    from wm_kernel.core.profile import Profile

    clock = ManualClock(START)
    session = Session(
        base_prompt=BASE_PROMPT,
        clock=clock,
        continuum_id="bench",
        profile=Profile(first_name="Ada", timezone="Europe/London", user_context="Ada is a mathematician."),
    )
    for trinket, method, args, kwargs in feeds_before_start():
        getattr(session.trinket(trinket), method)(*args, **kwargs)
    session.compose()
    for turn in range(1, turns + 1):
        for trinket, method, args, kwargs in feeds_at(turn):
            getattr(session.trinket(trinket), method)(*args, **kwargs)
        clock.advance(seconds=90)
        session.advance_turn()
        if turn % 100 == 0:
            session.collapse_segment(f"Segment ending at turn {turn}", tools_used=["search"])
    return session


def cpu(work: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``work``; return its result and its CPU seconds (this thread's)."""
    gc.collect()
    start = time.thread_time()
    result = work()
    return result, time.thread_time() - start


def compose_growth(repeat: int = 9) -> dict[str, list[float]]:
    """µs per ``Session.compose()`` (clock moved 90 s first) at turn 300 and at turn 3,000."""
    early, late = drive_by_hand(300), drive_by_hand(3_000)

    def step(session: Session) -> Callable[[], object]:
        clock = session.clock

        def run() -> object:
            clock.advance(seconds=90)  # type: ignore[attr-defined]
            return session.compose()

        return run

    return interleave({"turn 300": step(early), "turn 3,000": step(late)}, repeat=repeat, min_time=0.05)


def main(turns: int = 10_000, repeat: int = 3) -> None:
    print(
        f"scenario replay, {turns} turns, all eight built-in trinkets; {repeat} interleaved "
        f"repetitions; CPU time, median (min-max)"
    )
    # warm up (imports, the tokenizer's ranks, first-call caches) so the timed runs compare fairly
    _ = build_scenario(200).run().history
    drive_by_hand(200)
    scenario, build_s = cpu(lambda: build_scenario(turns))
    short = build_scenario(1_000)
    print(f"  build the scenario (Python): {build_s:.2f} s; steps: {len(scenario)}, turns: {scenario.turns}")
    times: dict[str, list[float]] = {"replay": [], "no history": [], "by hand": [], "1,000": []}
    session = by_hand = None
    for _ in range(repeat):
        session, t = cpu(scenario.run)
        times["replay"].append(t)
        _, t = cpu(lambda: scenario.run(instruments=()))
        times["no history"].append(t)
        by_hand, t = cpu(lambda: drive_by_hand(turns))
        times["by hand"].append(t)
        _, t = cpu(short.run)
        times["1,000"].append(t)
    assert session is not None and by_hand is not None
    for label, key in (
        ("replay (Scenario.run)", "replay"),
        ("baseline: replay with no History attached", "no history"),
        ("baseline: driven by hand (no scenario)", "by hand"),
        ("replay of the first 1,000 turns", "1,000"),
    ):
        print(f"  {label:<44} {spread(times[key], ' s', 2)}")
    counter = TokenCounter()
    session.recorder.counter = counter
    frame, frame_s = cpu(lambda: session.history)
    print(f"  {'history frame with token counts':<44} {frame_s:.2f} s")
    stats = session.recorder.stats()
    same = by_hand.composed.as_dict() == session.composed.as_dict()  # type: ignore[union-attr]

    composes = len(session.recorder)
    print()
    print(f"turns per CPU second (replay):           {turns / statistics.median(times['replay']):10.0f}")
    print(f"recorded turns:                          {composes:10d}")
    print(f"history rows (turn, section):            {len(frame):10d}")
    print(
        f"history bytes per turn:                  {stats['bytes_per_turn']:10.0f}"
        f"   ({stats['memory_bytes'] / 1e6:.1f} MB in all; one copy of every section per turn "
        f"would be {stats['naive_text_bytes'] / 1e6:.1f} MB of text alone)"
    )
    distinct = frame["digest"].nunique()
    print(
        f"distinct section texts in the history:   {distinct:10d}"
        f"   ({stats['distinct_texts']} interned, counting composes later replaced within their turn)"
    )
    print(
        f"tokenizer calls ({counter.name}):   {counter.calls:10d}"
        f"   ({'equal' if counter.calls == distinct else 'NOT EQUAL'}; "
        f"{counter.hits} answers from the cache)"
    )
    print(f"replay / replay without history:         {spread(ratios(times['replay'], times['no history']), 'x', 2)}")
    print(f"replay / driven by hand:                 {spread(ratios(times['replay'], times['by hand']), 'x', 2)}")
    print(f"last prompt identical to the hand-driven one: {same}")

    print()
    print("growth (goal: at most 1.1x)")
    per_turn_long = [t / turns * 1e6 for t in times["replay"]]
    per_turn_short = [t / 1_000 * 1e6 for t in times["1,000"]]
    print(f"  replay CPU per turn, {turns:,} turns:        {spread(per_turn_long, ' µs')}")
    print(f"  replay CPU per turn, 1,000 turns:         {spread(per_turn_short, ' µs')}")
    print(f"  ratio {turns:,} / 1,000:                    {spread(ratios(per_turn_long, per_turn_short), 'x', 2)}")
    growth = compose_growth()
    print(f"  Session.compose() at turn 300:            {spread(growth['turn 300'], ' µs')}")
    print(f"  Session.compose() at turn 3,000:          {spread(growth['turn 3,000'], ' µs')}")
    print(
        f"  ratio 3,000 / 300:                        "
        f"{spread(ratios(growth['turn 3,000'], growth['turn 300']), 'x', 2)}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
