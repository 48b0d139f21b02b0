"""Benchmark: the cost of a compose under a token budget, as a ratio to the same compose without.

Run on demand: ``.venv/bin/python bench/budget.py``. Nothing is asserted; read the ratios.

Workload (issue 10): a WorkingMemory with a ~12 KB base prompt and N trinkets (8, 50, 200), each
publishing a ~300-character section, spread over the system prompt and the notification centre,
with priorities 0..9. Every compose regenerates every trinket (the real cycle). Three variants,
interleaved in each repetition so drift hits them alike:

* ``none``: no budget;
* ``roomy``: a budget larger than the prompt (nothing needs dropping: the issue's < 2x case);
* ``tight``: a budget that drops about a third of the sections, with ``budget_step``.

The token counter is the offline tiktoken one (as a Session's); the counts of unchanged sections
come from the budget's cache, so the steady-state cost is the fit itself. Time is ``thread_time``
per compose; medians with min-max over repetitions.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trinkets.base import EventAwareTrinket  # noqa: E402
from wm_kernel.core.bus import EventBus  # noqa: E402
from wm_kernel.core.composer import SystemPromptComposer  # noqa: E402
from wm_kernel.core.composer.layout import Layout  # noqa: E402
from wm_kernel.core.working_memory import WorkingMemory  # noqa: E402
from wm_kernel.tokens import TokenCounter  # noqa: E402

PARAGRAPH = (
    "You are a careful assistant. Answer precisely, cite what you rely on, and say when you "
    "are unsure. Prefer short paragraphs and concrete examples over general advice. "
)
BASE_PROMPT = "\n\n".join(f"{i}. {PARAGRAPH}" for i in range(70))  # ~12 KB
CONTENT = "<section>" + "lorem ipsum dolor sit amet " * 11 + "</section>"  # ~300 chars
REPETITIONS = 15
COMPOSES = 20


def build(n: int, counter: TokenCounter) -> WorkingMemory:
    system = [f"sys_{i}" for i in range(n // 2)]
    hud = [f"hud_{i}" for i in range(n - n // 2)]
    bus = EventBus()
    wm = WorkingMemory(
        bus, composer=SystemPromptComposer(Layout({"system": ["base_prompt", *system], "notification": hud}))
    )
    wm.budget.counter = counter
    for i, section in enumerate(system + hud):
        cls = type(
            f"T_{section}",
            (EventAwareTrinket,),
            {
                "variable_name": section,
                "cache_policy": section.startswith("sys") and i % 2 == 0,
                "default_priority": i % 10,
                "generate_content": lambda self, context: CONTENT,
            },
        )
        cls(bus, wm)
    return wm


def per_compose(wm: WorkingMemory) -> float:
    compose = wm.compose
    start = time.thread_time()
    for _ in range(COMPOSES):
        compose(BASE_PROMPT)
    return (time.thread_time() - start) / COMPOSES


def main() -> None:
    counter = TokenCounter()
    print(
        f"compose under a token budget vs without ({counter.name}); {REPETITIONS} repetitions x "
        f"{COMPOSES} composes, thread_time per compose, median (min-max)"
    )
    for n in (8, 50, 200):
        variants: dict[str, WorkingMemory] = {name: build(n, counter) for name in ("none", "roomy", "tight")}
        full = variants["none"].compose(BASE_PROMPT)
        variants["roomy"].token_budget = 10_000_000
        roomy = variants["roomy"].compose(BASE_PROMPT)
        assert roomy.budget is not None and roomy.budget.full is not None
        size = roomy.budget.full
        base = roomy.budget.tokens["base_prompt"]
        variants["tight"].token_budget = base + (size - base) * 2 // 3
        variants["tight"].budget_step = 200
        tight = variants["tight"].compose(BASE_PROMPT)
        assert roomy.as_dict() == full.as_dict()
        assert tight.budget is not None
        times: dict[str, list[float]] = {name: [] for name in variants}
        runs: list[tuple[str, Callable[[], float]]] = [
            (name, (lambda wm=wm: per_compose(wm))) for name, wm in variants.items()
        ]
        gc.collect()
        gc.disable()
        try:
            for _ in range(REPETITIONS):
                for name, run in runs:
                    times[name].append(run())
        finally:
            gc.enable()
        floor = statistics.median(times["none"])
        print(f"\n{n} trinkets: prompt {size} tokens; tight budget drops {len(tight.budget.dropped)} sections")
        for name, values in times.items():
            med = statistics.median(values)
            print(
                f"  {name:6s} {med * 1e6:9.1f} us ({min(values) * 1e6:.1f}-{max(values) * 1e6:.1f})"
                f"   ratio {med / floor:.2f}x"
            )


if __name__ == "__main__":
    main()
