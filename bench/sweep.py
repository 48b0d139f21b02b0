"""Benchmark: a sweep of 40 scenarios x 4 variants, serial vs 2 worker processes vs a 2-worker Dask
cluster.

Run on demand: ``.venv/bin/python bench/sweep.py [TURNS] [REPEATS]`` (default 100 turns per
scenario, 3 repeats). Nothing is asserted.

This benchmark reads the WALL clock, unlike bench/replay.py: parallelism is the point, and CPU
time summed over processes cannot show a speed-up. Wall time is noisy on a shared machine (other
processes take cores away), so each configuration runs REPEATS times and the median is reported
with the min-max range; the speed-ups are ratios of medians. The goal is >= 1.7x on 2 cores for
the process pool.

Workload: 40 scenario files (bench/replay.py's generator: all eight built-in trinkets, feeds every
few turns, segment collapses; 80 to 120 turns each, each with its own user name) in a temporary
directory, under 4 variants (as recorded, an upper-case wording, guidance in the system prompt,
no time section), compared with the offline tiktoken counter. Workers are started and warmed up
(imports, the BPE ranks) before timing: a real sweep pays that once, not per task.

Also measured: the per-turn overhead of shipping work to a worker, from a sweep that ships the same
tasks and the same results through the same executor but replays nothing (the worker unpickles the
result and sends it back, so the result crosses twice: an upper bound).
"""
from __future__ import annotations

import gc
import os
import pickle
import statistics
import sys
import tempfile
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay import build_scenario  # noqa: E402

from wm_kernel.composer import Layout  # noqa: E402
from wm_kernel.experiments import compare, run_variants  # noqa: E402
from wm_kernel.experiments.compare import _Task  # noqa: E402
from wm_kernel.experiments.sweep import as_executor, close_dask_client, dask_client, run_tasks  # noqa: E402

SCENARIOS = 40
VARIANTS: dict[str, Any] = {
    "recorded": None,
    "upper-case wording": {"base_prompt": str.upper},
    "guidance in system": Layout.default().with_section("peanutgallery_guidance", "system"),
    "no time": {"disabled": ["TimeManager"]},
}


def write_scenarios(directory: Path, turns: int) -> list[Path]:
    paths = []
    for i in range(SCENARIOS):
        scenario = build_scenario(turns - 20 + (i % 5) * 10)
        scenario.profile = {**scenario.profile, "first_name": f"User{i:02d}"}
        path = directory / f"scenario-{i:02d}.jsonl"
        scenario.save(path)
        paths.append(path)
    return paths


def _ship(payload: tuple[_Task, bytes]) -> Any:
    """Receive a task and a pickled result; send the result back, replaying nothing."""
    return pickle.loads(payload[1])


def repeat(label: str, work: Callable[[], Any], times: int) -> tuple[Any, float]:
    walls = []
    result = None
    for _ in range(times):
        gc.collect()
        start = time.perf_counter()
        result = work()
        walls.append(time.perf_counter() - start)
    median = statistics.median(walls)
    print(f"  {label:<34} median {median:7.2f} s wall   (min {min(walls):.2f}, max {max(walls):.2f}, "
          f"{times} runs)")
    return result, median


def main(turns: int = 100, repeats: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_scenarios(Path(tmp), turns)
        from wm_kernel.experiments import Scenario

        total_turns = sum(Scenario.load(p).turns for p in paths) * len(VARIANTS)
        print(f"sweep: {SCENARIOS} scenarios x {len(VARIANTS)} variants, {total_turns} turns replayed; "
              f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")
        compare(paths[:1], VARIANTS)  # warm up here: imports, the BPE ranks
        serial, serial_s = repeat("serial (this process)", lambda: compare(paths, VARIANTS), repeats)

        with ProcessPoolExecutor(max_workers=2) as pool:
            compare(paths[:2], VARIANTS, executor=pool)  # warm up both workers
            pooled, pool_s = repeat("2 worker processes", lambda: compare(
                paths, VARIANTS, executor=pool), repeats)
            ship_pool = shipping_overhead(paths, pool, repeats)

        dask_s = ship_dask = None
        dasked = None
        try:
            client = dask_client(workers=2)
        except ImportError as exc:
            print(f"  Dask: skipped ({exc})")
        else:
            try:
                compare(paths[:2], VARIANTS, executor=client)
                dasked, dask_s = repeat("Dask, 2 local workers", lambda: compare(
                    paths, VARIANTS, executor=client), repeats)
                ship_dask = shipping_overhead(paths, as_executor(client), repeats)
            finally:
                close_dask_client(client)

        print()
        print(f"speed-up over serial, 2 worker processes:  {serial_s / pool_s:5.2f}x   (goal >= 1.7x)")
        if dask_s is not None:
            print(f"speed-up over serial, Dask (2 workers):    {serial_s / dask_s:5.2f}x")
        per_turn = serial_s / total_turns * 1e6
        print(f"serial cost per turn:                      {per_turn:7.1f} us")
        print(f"shipping overhead per turn, process pool:  {ship_pool / total_turns * 1e6:7.1f} us "
              f"({ship_pool / serial_s:.1%} of the serial time)")
        if ship_dask is not None:
            print(f"shipping overhead per turn, Dask:          {ship_dask / total_turns * 1e6:7.1f} us "
                  f"({ship_dask / serial_s:.1%} of the serial time)")
        same = pooled.equals(serial) and pooled.attrs == serial.attrs
        if dasked is not None:
            same = same and dasked.equals(serial) and dasked.attrs == serial.attrs
        print(f"every frame identical to the serial one:   {same}")


def shipping_overhead(paths: list[Path], executor: Executor | None, repeats: int) -> float:
    """Median wall time to send every task and get its result back through ``executor`` with no
    replay in between."""
    assert executor is not None
    from wm_kernel.tokens import TokenCounter

    runs = run_variants(paths, VARIANTS)
    blob = pickle.dumps(TokenCounter().tokenizer)
    payloads = []
    from wm_kernel.experiments import Scenario, Variant
    from wm_kernel.experiments.variants import as_variant

    loaded = {str(p): Scenario.load(p) for p in paths}
    for run in runs:
        run.session = None
        variant: Variant = as_variant(VARIANTS[run.name], run.name)
        task = _Task(run.scenario, loaded[run.scenario], variant, blob, None,
                     (0, 1024, None), False)
        payloads.append((task, pickle.dumps(run)))
    _, median = repeat("  shipping only (no replay)", lambda: run_tasks(_ship, payloads, executor),
                       repeats)
    return median


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
