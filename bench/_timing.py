"""Interleaved CPU timing for the benchmarks: every case runs once per repetition, in turn, so a
machine that slows down for a while slows every case alike, and ratios are taken per repetition.

Times are ``time.thread_time`` (this thread's CPU time): other processes on a shared machine slow
the wall clock, not this number. Figures are medians with the min-max range over repetitions.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping, Sequence


def batch_size(fn: Callable[[], object], min_time: float) -> int:
    """How many calls of ``fn`` take at least ``min_time`` seconds of CPU (a power of two)."""
    n = 1
    while True:
        start = time.thread_time()
        for _ in range(n):
            fn()
        if time.thread_time() - start >= min_time or n >= 1 << 20:
            return n
        n *= 2


def interleave(
    cases: Mapping[str, Callable[[], object]], *, repeat: int = 9, min_time: float = 0.02, batch: int | None = None
) -> dict[str, list[float]]:
    """µs of CPU per call of each case, one sample per repetition; the cases alternate within
    each repetition (their order rotates, so none is always first after a collection).

    Each sample times a batch of calls: ``batch`` calls when given (the same for every case, for
    cases whose cost depends on how often they ran), else as many as take ``min_time``."""
    sizes = {name: batch or batch_size(fn, min_time) for name, fn in cases.items()}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for rep in range(repeat):
        gc.collect()
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for name in order:
            fn, n = cases[name], sizes[name]
            start = time.thread_time()
            for _ in range(n):
                fn()
            samples[name].append((time.thread_time() - start) / n * 1e6)
    return samples


def ratios(top: Sequence[float], bottom: Sequence[float]) -> list[float]:
    """Per-repetition ratios ``top[i] / bottom[i]``."""
    return [a / b for a, b in zip(top, bottom, strict=True)]


def spread(values: Sequence[float], unit: str = "", digits: int = 1) -> str:
    """'median (min-max)' of ``values``."""
    return f"{statistics.median(values):.{digits}f}{unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"
