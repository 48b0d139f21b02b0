"""Benchmark: what the live dashboard adds to a turn (issue 14, goal: at most 1.3x).

Run on demand: ``.venv/bin/python bench/dashboard.py [REPEAT]``. Nothing is asserted. Sessions
with every built-in trinket run ``bench/replay.py``'s scenario by hand (its feeds, 90 seconds of
clock and ``advance_turn()`` per call, a collapse every 100 turns), one with a
:class:`~wm_kernel.jupyter.dashboard.widget.Dashboard` attached, and (in the kernel case) one without the
ItemHistory a Session attaches by default, so the item record's own cost is shown too; they
alternate within each repetition, timed in CPU time (``bench/_timing.py``), and the ratio is
taken per repetition. No kernel is attached, so
the figures include building every widget message but not sending it.

Two ways of drawing are measured:

* in a kernel: a Jupyter kernel runs each cell inside its event loop, and the dashboard (its
  ``coalesce`` trait, on by default) draws once the running cell returns. Here each call is a
  "cell" of CELL turns run as one callback of an asyncio loop, followed by the loop's turn that
  draws; the time of that draw is counted, shared by the cell's turns;
* drawn at every change: no running loop (a script), or ``coalesce=False``; every turn draws.
  This is also a cell of one turn in a kernel: a turn by hand costs this.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import asyncio  # noqa: E402

from _timing import interleave, ratios, spread  # noqa: E402
from replay import BASE_PROMPT, START, feeds_at, feeds_before_start  # noqa: E402

import wm_kernel.jupyter.dashboard.drawing as widgets_module  # noqa: E402
from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.core.profile import Profile  # noqa: E402
from wm_kernel.instruments.history import History  # noqa: E402
from wm_kernel.jupyter.dashboard.widget import Dashboard  # noqa: E402
from wm_kernel.session import Session  # noqa: E402


class Driven:
    """A Session at the scenario's start; each call completes one turn of it."""

    def __init__(self, dashboard: bool, *, coalesce: bool = True, items: bool = True) -> None:
        self.clock = ManualClock(START)
        # items=False: the session without the ItemHistory every Session attaches by default
        instruments = None if items else (History.attach,)
        self.session = Session(
            base_prompt=BASE_PROMPT,
            clock=self.clock,
            continuum_id="bench",
            profile=Profile(first_name="Ada", timezone="Europe/London", user_context="Ada is a mathematician."),
            instruments=instruments,
        )
        for trinket, method, args, kwargs in feeds_before_start():
            getattr(self.session.trinket(trinket), method)(*args, **kwargs)
        self.session.compose()
        self.dashboard = Dashboard(self.session, coalesce=coalesce) if dashboard else None

    def turn(self) -> None:
        session = self.session
        turn = session.turn + 1
        for trinket, method, args, kwargs in feeds_at(turn):
            getattr(session.trinket(trinket), method)(*args, **kwargs)
        self.clock.advance(seconds=90)
        session.advance_turn()
        if turn % 100 == 0:
            session.collapse_segment(f"Segment ending at turn {turn}", tools_used=["search"])


CELL = 40  # turns per cell in the kernel case


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def main(repeat: int = 9) -> None:
    # the dashboard draws later only in a kernel (it asks for the kernel's loop): here a plain
    # asyncio loop running the "cells" stands in for it (tests/jupyter/test_dashboard_kernel.py checks the
    # same behaviour in a real kernel: 1 message for a cell of 20 turns instead of 20)
    widgets_module._kernel_loop = _running_loop
    loop = asyncio.new_event_loop()

    def in_kernel(driven: Driven) -> Callable[[], None]:
        async def cell() -> None:
            for _ in range(CELL):
                driven.turn()
            await asyncio.sleep(0)  # back to the loop: the dashboard draws (counted)

        return lambda: loop.run_until_complete(cell())

    plain, watched, bare = Driven(False), Driven(True), Driven(False, items=False)
    plain_e, eager = Driven(False), Driven(True, coalesce=False)
    cells = {"without": in_kernel(plain), "with": in_kernel(watched), "bare": in_kernel(bare)}
    for _ in range(2):  # warm up: first renders, first-call caches
        for run in cells.values():
            run()
        for _ in range(CELL):
            plain_e.turn()
            eager.turn()
    got = interleave(cells, repeat=repeat, batch=1)
    per_turn = {name: [v / CELL for v in got[name]] for name in cells}
    eager_got = interleave({"without": plain_e.turn, "eager": eager.turn}, repeat=repeat, batch=CELL)
    print(f"{repeat} interleaved repetitions; CPU µs per turn (feeds, clock, advance_turn): median (min-max)")
    print(f"in a kernel (cells of {CELL} turns, the dashboard drawing when a cell returns):")
    print(f"  advance_turn without a dashboard:  {spread(per_turn['without'], ' µs')}")
    print(f"  advance_turn with the dashboard:   {spread(per_turn['with'], ' µs')}")
    print(f"  ratio (goal <= 1.3x):              {spread(ratios(per_turn['with'], per_turn['without']), 'x', 2)}")
    print(f"  without the session's ItemHistory: {spread(per_turn['bare'], ' µs')}")
    print(f"  the ItemHistory's own cost:        {spread(ratios(per_turn['without'], per_turn['bare']), 'x', 2)}")
    print(f"  with the dashboard / neither:      {spread(ratios(per_turn['with'], per_turn['bare']), 'x', 2)}")
    print("drawn at every change (a script, coalesce=False, or a cell of one turn):")
    print(f"  advance_turn without a dashboard:  {spread(eager_got['without'], ' µs')}")
    print(f"  advance_turn with the dashboard:   {spread(eager_got['eager'], ' µs')}")
    print(f"  ratio:                             {spread(ratios(eager_got['eager'], eager_got['without']), 'x', 2)}")
    print(
        f"  turns reached: {plain.session.turn} and {watched.session.turn} in a kernel, "
        f"{plain_e.session.turn} and {eager.session.turn} drawn at every change"
    )
    loop.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
