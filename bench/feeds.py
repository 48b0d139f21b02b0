"""Benchmark: what adding one item costs as a trinket fills up (issue 15, item 11).

Run on demand: ``.venv/bin/python bench/feeds.py [--n 1000] [--reps 9] [--batch 25]``. Nothing is
asserted; read the ratios.

For each feed (``add_guidance``, ``add_pending``, ``add_reminder``) and each store (memory, a
SQLite file), two sessions are filled, one with n items and one with 4n. Each repetition then adds
a batch of items to each (timed with ``time.thread_time``, so waiting on the disk is not counted)
and removes them again (not timed), alternating the two sizes so drift on the machine hits both
alike. The line printed per case is the per-item cost at n and at 4n (median and min-max over the
repetitions) and their ratio: 1.0 means adding costs the same however many items are held (the
goal is at most 1.3); 4.0 means the cost grows with the items held (each add rewrote them all).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trinkets.getcontext import GetContextTrinket  # noqa: E402
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket  # noqa: E402
from trinkets.reminders import ReminderManager  # noqa: E402
from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.stores.embedded import MemoryStore, SQLiteStore, StateStore  # noqa: E402

Adder = Callable[[Any, int], str]


def add_guidance(t: Any, i: int) -> str:
    return str(t.add_guidance("concern", f"Guidance number {i}: check the units.", ttl=10**6))


def add_pending(t: Any, i: int) -> str:
    task = f"task-{i}"
    t.add_pending(task, f"query number {i}", search_scope=["chat", "docs"])
    return task


def add_reminder(t: Any, i: int) -> str:
    return str(t.add_reminder(f"Reminder {i}", "2027-01-01T09:00:00+00:00", details="Bring slides"))


FEEDS: dict[str, tuple[type, Adder, str]] = {
    "add_guidance": (PeanutGalleryTrinket, add_guidance, "remove"),
    "add_pending": (GetContextTrinket, add_pending, "remove"),
    "add_reminder": (ReminderManager, add_reminder, "delete"),
}


def filled(kind: str, store: StateStore, size: int, continuum: str) -> tuple[Any, Adder, str]:
    cls, add, remove = FEEDS[kind]
    s = Session(
        base_prompt="Hi.",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        store=store,
        user_id=continuum,
        continuum_id=continuum,
        trinkets=[cls],
        auto_compose=False,
    )
    t = s.trinket(cls.__name__)
    for i in range(size):
        add(t, i)
    return t, add, remove


def per_item(t: Any, add: Adder, remove: str, start: int, batch: int) -> float:
    ids = []
    begin = time.thread_time()
    for i in range(start, start + batch):
        ids.append(add(t, i))
    elapsed = time.thread_time() - begin
    for item_id in ids:
        getattr(t, remove)(item_id)
    return elapsed / batch


def spread(values: list[float]) -> str:
    us = [v * 1e6 for v in values]
    return f"{statistics.median(us):8.1f} us ({min(us):.1f}-{max(us):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="items held in the small case")
    parser.add_argument("--reps", type=int, default=9, help="repetitions per size")
    parser.add_argument("--batch", type=int, default=25, help="items added per repetition")
    args = parser.parse_args()
    n, big = args.n, 4 * args.n
    print(
        f"per-item cost of a feed holding n={n} vs 4n={big} items "
        f"(median, min-max of {args.reps} repetitions of {args.batch} adds; thread time)"
    )
    with tempfile.TemporaryDirectory() as folder:
        for store_name in ("memory", "sqlite"):
            for kind in FEEDS:

                def make_store(size: str, store_name: str = store_name, kind: str = kind) -> StateStore:
                    if store_name == "memory":
                        return MemoryStore()
                    return SQLiteStore(Path(folder) / f"{kind}-{size}.sqlite3")

                small = filled(kind, make_store("small"), n, "small")
                large = filled(kind, make_store("large"), big, "large")
                times: dict[int, list[float]] = {n: [], big: []}
                for rep in range(args.reps):
                    start = 10**7 + rep * args.batch
                    for size, case in ((n, small), (big, large)) if rep % 2 else ((big, large), (n, small)):
                        times[size].append(per_item(*case, start, args.batch))
                ratio = statistics.median(times[big]) / statistics.median(times[n])
                print(
                    f"{store_name:6} {kind:13} n: {spread(times[n])}   4n: {spread(times[big])}"
                    f"   ratio 4n/n: {ratio:.2f}x"
                )


if __name__ == "__main__":
    main()
