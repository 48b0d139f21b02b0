"""Benchmark: what the live dashboard adds to a turn (issue 14, goal: at most 1.3x).

Run on demand: ``.venv/bin/python bench/dashboard.py [REPEAT]``. Nothing is asserted. Two Sessions
with every built-in trinket run ``bench/replay.py``'s scenario by hand (its feeds, 90 seconds of
clock and ``advance_turn()`` per call, a collapse every 100 turns), one with a
:class:`~wm_kernel.widgets.Dashboard` attached; the two alternate within each repetition, timed in
CPU time (``bench/_timing.py``), and the ratio is taken per repetition. No kernel is attached, so
the figures include building every widget message but not sending it.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleave, ratios, spread  # noqa: E402
from replay import BASE_PROMPT, START, feeds_at, feeds_before_start  # noqa: E402
from wm_kernel.clock import ManualClock  # noqa: E402
from wm_kernel.profile import Profile  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.widgets import Dashboard  # noqa: E402


class Driven:
    """A Session at the scenario's start; each call completes one turn of it."""

    def __init__(self, dashboard: bool) -> None:
        self.clock = ManualClock(START)
        self.session = Session(base_prompt=BASE_PROMPT, clock=self.clock, continuum_id="bench",
                               profile=Profile(first_name="Ada", timezone="Europe/London",
                                               user_context="Ada is a mathematician."))
        for trinket, method, args, kwargs in feeds_before_start():
            getattr(self.session.trinket(trinket), method)(*args, **kwargs)
        self.session.compose()
        self.dashboard = Dashboard(self.session) if dashboard else None

    def turn(self) -> None:
        session = self.session
        turn = session.turn + 1
        for trinket, method, args, kwargs in feeds_at(turn):
            getattr(session.trinket(trinket), method)(*args, **kwargs)
        self.clock.advance(seconds=90)
        session.advance_turn()
        if turn % 100 == 0:
            session.collapse_segment(f"Segment ending at turn {turn}", tools_used=["search"])


def main(repeat: int = 9) -> None:
    plain, watched = Driven(False), Driven(True)
    for _ in range(50):  # warm up: first renders, first-call caches
        plain.turn()
        watched.turn()
    got = interleave({"without": plain.turn, "with": watched.turn}, repeat=repeat, batch=40)
    print(f"{repeat} interleaved repetitions; CPU µs per turn (feeds, clock, advance_turn): "
          f"median (min-max)")
    print(f"  advance_turn without a dashboard:  {spread(got['without'], ' µs')}")
    print(f"  advance_turn with the dashboard:   {spread(got['with'], ' µs')}")
    print(f"  ratio (goal <= 1.3x):              {spread(ratios(got['with'], got['without']), 'x', 2)}")
    print(f"  turns reached: {plain.session.turn} without, {watched.session.turn} with")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
