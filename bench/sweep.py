"""Benchmark: a sweep of 40 scenarios x 4 variants, serial vs 2 worker processes vs a 2-worker Dask
cluster.

Run on demand: ``.venv/bin/python bench/sweep.py [TURNS] [REPEATS]`` (default 100 turns per
scenario, 3 repeats). Nothing is asserted.

This benchmark reads the WALL clock, unlike bench/replay.py: parallelism is the point, and CPU
time summed over processes cannot show a speed-up. Wall time is noisy on a shared machine (other
processes take cores away), so each configuration runs REPEATS times, interleaved round by round,
and the median is reported with the min-max range and the load average seen before each run; the
speed-ups are ratios of medians. A load average above 0 means other work shared the cores. The goals
on 2 cores: >= 1.7x for the process pool, >= 1.8x for the Dask cluster (which gets one task per
scenario, all its variants, and sends back each run's table).

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
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay import build_scenario  # noqa: E402

from wm_kernel.core.composer.layout import Layout  # noqa: E402
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


def timed(work: Callable[[], Any]) -> tuple[Any, float]:
    gc.collect()
    start = time.perf_counter()
    result = work()
    return result, time.perf_counter() - start


def report(label: str, walls: list[float], loads: list[float]) -> float:
    median = statistics.median(walls)
    print(
        f"  {label:<34} median {median:7.2f} s wall   (min {min(walls):.2f}, max {max(walls):.2f}; "
        f"load average {min(loads):.1f}-{max(loads):.1f})"
    )
    return median


def main(turns: int = 100, repeats: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(max_workers=2) as pool:
        paths = write_scenarios(Path(tmp), turns)
        from wm_kernel.experiments import Scenario

        total_turns = sum(Scenario.load(p).turns for p in paths) * len(VARIANTS)
        print(
            f"sweep: {SCENARIOS} scenarios x {len(VARIANTS)} variants, {total_turns} turns replayed; "
            f"{os.cpu_count()} CPUs; {repeats} rounds, each running every configuration once "
            f"(interleaved, so a change in the machine's load hits them all alike)"
        )
        executors: dict[str, Any] = {"serial (this process)": None, "2 worker processes": pool}
        client = None
        try:
            client = dask_client(workers=2)
            executors["Dask, 2 local workers"] = client
        except ImportError as exc:
            print(f"  Dask: skipped ({exc})")
        try:
            for executor in executors.values():  # warm up: imports, the BPE ranks, in every worker
                compare(paths[:2], VARIANTS, executor=executor)
            walls: dict[str, list[float]] = {name: [] for name in executors}
            loads: dict[str, list[float]] = {name: [] for name in executors}
            frames: dict[str, Any] = {}
            for _ in range(repeats):
                for name, executor in executors.items():
                    loads[name].append(os.getloadavg()[0])
                    frames[name], wall = timed(lambda executor=executor: compare(paths, VARIANTS, executor=executor))
                    walls[name].append(wall)
            medians = {name: report(name, walls[name], loads[name]) for name in executors}
            payloads = shipping_payloads(paths)
            shipping = {
                name: shipping_overhead(payloads, as_executor(executor), repeats)
                for name, executor in executors.items()
                if executor is not None
            }
        finally:
            if client is not None:
                close_dask_client(client)

    serial_s = medians["serial (this process)"]
    print()
    for name, median in medians.items():
        if name.startswith("serial"):
            continue
        goal = "   (goal >= 1.7x)" if name.startswith("2 worker") else "   (goal >= 1.8x)"
        print(f"speed-up over serial, {name + ':':<26} {serial_s / median:5.2f}x{goal}")
    print(f"serial cost per turn:                      {serial_s / total_turns * 1e6:7.1f} us")
    for name, ship in shipping.items():
        print(
            f"shipping overhead per turn, {name + ':':<22} {ship / total_turns * 1e6:7.1f} us "
            f"({ship / serial_s:.1%} of the serial time)"
        )
    serial = frames["serial (this process)"]
    same = all(frame.equals(serial) and frame.attrs == serial.attrs for frame in frames.values())
    print(f"every frame identical to the serial one:   {same}")


def shipping_payloads(paths: list[Path]) -> list[tuple[_Task, bytes]]:
    """Every task of the sweep with the result its worker sends back (pickled)."""
    from wm_kernel.experiments import Scenario, Variant
    from wm_kernel.experiments.variants import as_variant
    from wm_kernel.tokens import TokenCounter

    blob = pickle.dumps(TokenCounter().tokenizer)
    loaded = {str(p): Scenario.load(p) for p in paths}
    payloads = []
    for run in run_variants(paths, VARIANTS):
        run.session = None
        variant: Variant = as_variant(VARIANTS[run.name], run.name)
        task = _Task(run.scenario, loaded[run.scenario], variant, blob, None, (0, 1024, None), False)
        payloads.append((task, pickle.dumps(run)))
    return payloads


def shipping_overhead(payloads: list[tuple[_Task, bytes]], executor: Executor | None, repeats: int) -> float:
    """Median wall time to send every task and get its result back through ``executor`` with no
    replay in between."""
    assert executor is not None
    walls = [timed(lambda: run_tasks(_ship, payloads, executor))[1] for _ in range(repeats)]
    return statistics.median(walls)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
