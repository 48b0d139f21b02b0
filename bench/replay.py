"""Benchmark: a 10,000-turn scenario replay with all eight built-in trinkets.

Run on demand: ``.venv/bin/python bench/replay.py [TURNS]`` (default 10,000). Nothing is asserted;
machines are noisy, so read the ratios, not the seconds.

Workload: a ~2 KB base prompt, every built-in trinket fed with sample data (a user model, a domain
document, past segments, reminders, guidance every 3 turns, context searches every 7, surfaced
memories every 10, reminders that fall due and are done), 90 seconds of clock per turn (so the time section changes every turn), a segment
collapse every 100 turns. Measured in one process:

* the replay (``Scenario.run``): turns per second, composes per second;
* the history it recorded: bytes per turn (``History.stats``) and, for the ``tokens`` column, the
  tokenizer's real calls next to the number of distinct section texts (they must be equal: each
  distinct text is tokenized once);
* two baselines: the same replay with history recording switched off, and the same session driven
  by hand (direct method calls, no scenario decoding). The ratios say what recording and the
  scenario layer cost.
"""
from __future__ import annotations

import gc
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wm_kernel.experiments import Scenario  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.tokens import TokenCounter  # noqa: E402

START = "2026-11-30T09:00:00+00:00"
PARAGRAPH = ("Answer precisely, cite what you rely on, and say when you are unsure. Prefer short "
             "paragraphs and concrete examples over general advice. ")
BASE_PROMPT = "You are a careful assistant helping {first_name}.{user_context}\n\n" + "\n\n".join(
    f"{i}. {PARAGRAPH}" for i in range(14))
USER_MODEL = "<mira:user_model>" + "".join(
    f'<mira:observation section="s{i}" confidence="high">Observation number {i} about the user.'
    f'</mira:observation>' for i in range(12)) + (
    '<mira:checkin><mira:topic section="s1" reason="Check the pace."/></mira:checkin>'
    "</mira:user_model>")


def feeds_before_start() -> list[tuple[str, str, tuple[Any, ...], dict[str, Any]]]:
    """(trinket, method, args, kwargs) of the data every run starts with."""
    calls: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
        ("LoraTrinket", "set_user_model", (USER_MODEL,), {}),
        ("LoraTrinket", "schedule_checkins", (40,), {}),
        ("DomaindocTrinket", "create_document", ("handbook", "Team handbook"), {}),
        ("ManifestTrinket", "add_segment",
         ("Kick-off", "2026-11-28T15:00:00+00:00", "2026-11-28T16:30:00+00:00"), {}),
        ("ReminderManager", "add_reminder", ("Send the report", "2026-11-30T11:00:00+00:00"),
         {"details": "Quarterly numbers"}),
    ]
    for i in range(6):
        calls.append(("DomaindocTrinket", "add_section",
                      ("handbook", f"s{i}", f"Section {i}", f"Body of section {i}. " * 20),
                      {"summary": f"About topic {i}"}))
    return calls


def feeds_at(turn: int) -> list[tuple[str, str, tuple[Any, ...], dict[str, Any]]]:
    """The feeds done before completing ``turn`` (1-based)."""
    calls: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = []
    if turn % 3 == 0:
        calls.append(("PeanutGalleryTrinket", "add_guidance",
                      ("coaching" if turn % 2 else "concern", f"Guidance {turn % 17}: slow down."),
                      {"ttl": 2}))
    if turn % 7 == 0:
        calls.append(("GetContextTrinket", "add_pending", (f"t{turn}", f"query {turn % 13}"),
                      {"search_scope": ["docs"]}))
    if turn % 7 == 2 and turn > 7:
        calls.append(("GetContextTrinket", "add_success",
                      (f"t{turn - 2}", f"query {(turn - 2) % 13}", "Found two relevant notes."),
                      {"key_findings": [{"point": "A point", "source": "notes"}]}))
    if turn % 10 == 0:
        calls.append(("ProactiveMemoryTrinket", "surface", ([
            {"id": f"mem-{(turn // 10) % 9:04d}-aaaa", "text": f"Memory {(turn // 10) % 9}",
             "similarity_score": 0.8, "created_at": "2026-11-27T09:00:00+00:00"}],), {}))
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
    scenario = Scenario(base_prompt=BASE_PROMPT, clock=START, continuum_id="bench",
                        profile={"first_name": "Ada", "timezone": "Europe/London",
                                 "user_context": "Ada is a mathematician."})
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
    from wm_kernel.clock import ManualClock
    from wm_kernel.profile import Profile

    clock = ManualClock(START)
    session = Session(base_prompt=BASE_PROMPT, clock=clock, continuum_id="bench",
                      profile=Profile(first_name="Ada", timezone="Europe/London",
                                      user_context="Ada is a mathematician."))
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


def timed(label: str, work: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``work``; print and return its CPU time (process time: other processes on a shared
    machine slow the wall clock, not this number), with the wall time alongside."""
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    result = work()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"  {label:<44} {cpu:7.2f} s CPU ({wall:.2f} s wall)")
    return result, cpu


def main(turns: int = 10_000) -> None:
    print(f"scenario replay, {turns} turns, all eight built-in trinkets")
    # warm up (imports, the tokenizer's ranks, first-call caches) so the timed runs compare fairly
    build_scenario(200).run().history
    drive_by_hand(200)
    scenario, _ = timed("build the scenario (Python)", lambda: build_scenario(turns))
    print(f"  steps: {len(scenario)}, turns: {scenario.turns}")
    by_hand, hand_s = timed("baseline: driven by hand (no scenario)", lambda: drive_by_hand(turns))
    _, off_s = timed("baseline: replay with no History attached",
                     lambda: scenario.run(instruments=()))
    session, replay_s = timed("replay (Scenario.run)", scenario.run)
    counter = TokenCounter()
    session.recorder.counter = counter
    frame, _ = timed("history frame with token counts", lambda: session.history)
    stats = session.recorder.stats()
    same = by_hand.composed.as_dict() == session.composed.as_dict()  # type: ignore[union-attr]

    composes = len(session.recorder)
    print()
    print(f"turns per CPU second (replay):           {turns / replay_s:10.0f}")
    print(f"recorded turns:                          {composes:10d}")
    print(f"history rows (turn, section):            {len(frame):10d}")
    print(f"history bytes per turn:                  {stats['bytes_per_turn']:10.0f}"
          f"   ({stats['memory_bytes'] / 1e6:.1f} MB in all; one copy of every section per turn "
          f"would be {stats['naive_text_bytes'] / 1e6:.1f} MB of text alone)")
    distinct = frame["digest"].nunique()
    print(f"distinct section texts in the history:   {distinct:10d}"
          f"   ({stats['distinct_texts']} interned, counting composes later replaced within their turn)")
    print(f"tokenizer calls ({counter.name}):   {counter.calls:10d}"
          f"   ({'equal' if counter.calls == distinct else 'NOT EQUAL'}; "
          f"{counter.hits} answers from the cache)")
    print(f"replay / replay without history:         {replay_s / off_s:10.2f}x")
    print(f"replay / driven by hand:                 {replay_s / hand_s:10.2f}x")
    print(f"last prompt identical to the hand-driven one: {same}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
