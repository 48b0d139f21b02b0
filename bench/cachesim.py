"""Benchmark: what the prompt-cache simulator costs per request, and that it grows linearly.

Run on demand: ``.venv/bin/python bench/cachesim.py``. Nothing here is asserted; read the ratios.

Workload (issue 9, item 7): requests of 40 blocks as a long-running assistant sends them: 8 stable
system blocks (breakpoint on the last), a sliding window of 30 conversation messages (breakpoint on
the latest user message), a volatile HUD and the user's new message; one minute between requests
and a 12-minute pause every 50, so entries lapse and are rewritten. The requests are built before
timing; ``simulate`` is timed whole (validation, hashing, the cache, the DataFrame).

Linearity: the cost per (request x block) is measured at 2,500 x 40 (1x), 10,000 x 40 (4x requests)
and 10,000 x 10 (a quarter of the blocks); the ratios to 1x should stay near 1. Runs are interleaved
(1x, 4x, blocks/4, 1x, ...) and timed with ``time.thread_time`` so a noisy neighbour skews every
size alike; medians are printed with the min-max range.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wm_kernel.cachesim.engine import Block, Request  # noqa: E402
from wm_kernel.cachesim.simulation import simulate  # noqa: E402

T0 = datetime(2026, 11, 30, 9, tzinfo=UTC)
REPEATS = 5


def workload(requests: int, blocks: int) -> list[Request]:
    """``requests`` requests of exactly ``blocks`` blocks (see the module docstring)."""
    system = max(1, blocks // 5)
    window = blocks - system - 2
    out = []
    now = T0
    for i in range(requests):
        now += timedelta(minutes=12 if i and i % 50 == 0 else 1)
        head = [
            Block(f"sys-{k}", 300, layer="system", breakpoint="1h" if k == system - 1 else None) for k in range(system)
        ]
        start = 2 * i
        messages = [Block(f"msg-{start + k}", 120, breakpoint="5m" if k == window - 1 else None) for k in range(window)]
        out.append(Request(now, [*head, *messages, Block(f"hud-{i % 7}", 80), Block(f"user-{i}", 40)]))
    return out


def timed(requests: list[Request]) -> float:
    gc.collect()
    start = time.thread_time()
    simulate(requests, "claude-sonnet-4-6")
    return time.thread_time() - start


def main() -> None:
    sizes = {
        "1x (2,500 x 40)": (2_500, 40),
        "4x requests (10,000 x 40)": (10_000, 40),
        "1/4 blocks (10,000 x 10)": (10_000, 10),
    }
    loads = {name: workload(*size) for name, size in sizes.items()}
    times: dict[str, list[float]] = {name: [] for name in sizes}
    timed(loads["1x (2,500 x 40)"])  # warm-up
    for _ in range(REPEATS):
        for name in sizes:  # interleaved: each round runs every size once
            times[name].append(timed(loads[name]))
    base = None
    print(f"simulate(), claude-sonnet-4-6, median of {REPEATS} (min-max), thread time")
    for name, (requests, blocks) in sizes.items():
        per = [t / (requests * blocks) * 1e9 for t in times[name]]
        median = statistics.median(per)
        base = base or median
        per_request = statistics.median(times[name]) / requests * 1e6
        print(
            f"  {name:26s} {per_request:7.1f} us/request  {median:6.1f} ns/block "
            f"({min(per):.1f}-{max(per):.1f})  ratio to 1x {median / base:.2f}"
        )


if __name__ == "__main__":
    main()
