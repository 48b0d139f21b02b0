"""Benchmark: peak memory of loading a large scenario file, and of replaying it.

Run on demand: ``.venv/bin/python bench/scenario_memory.py [STEPS]`` (default 1,000,000). Nothing
is asserted. A scenario file of STEPS steps (a mix of feeds, turns, clock moves and composes, as a
recording makes) is written to a temporary directory, then measured in fresh subprocesses, each
reporting its peak resident set (``ru_maxrss``) against a baseline process that only imports
wm-kernel:

* ``load``: ``Scenario.load`` (validates every line), then ``len`` and ``turns``;
* ``replay``: ``Scenario.load(...).run(instruments=())`` on the first REPLAY_STEPS steps' file
  (a replay keeps its Session's state, so this shows the scenario's share, not the Session's).

Loading streams: the steps are read from the file whenever they are iterated, so the load's peak
does not grow with the file. Measured on one machine (Python 3.11): before streaming, loading
1,000,000 steps (73 MB) peaked 336 MB over the baseline (4.6x the file; issue 15 saw 15x with
other steps) and replaying 100,000 steps 38 MB; streamed, 0 MB and 5 MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

START = "2026-11-30T09:00:00+00:00"
REPLAY_STEPS = 100_000

_MEASURE = """
import resource, sys
sys.path.insert(0, {root!r})
from wm_kernel.experiments import Scenario
import trinkets
for name in trinkets.BUILTIN_NAMES:
    getattr(trinkets, name)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
mode, path = sys.argv[1], sys.argv[2]
if mode == "load":
    scenario = Scenario.load(path)
    facts = (len(scenario), scenario.turns)
elif mode == "replay":
    session = Scenario.load(path).run(instruments=())
    facts = (session.turn,)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base, peak, *facts)
"""


def write_scenario(path: Path, steps: int) -> None:
    """A recording-like file: every 5 steps one turn, three feeds and a clock move."""
    header = {
        "format": "wm-kernel-scenario",
        "version": 1,
        "clock": START,
        "trinkets": ["TimeManager", "PeanutGalleryTrinket", "LoraTrinket"],
    }
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(header) + "\n")
        for i in range(steps):
            match i % 5:
                case 0:
                    step = {
                        "step": "feed",
                        "trinket": "PeanutGalleryTrinket",
                        "method": "add_guidance",
                        "args": ["concern", f"Guidance {i}."],
                        "kwargs": {"ttl": 2},
                    }
                case 1:
                    step = {"step": "clock", "advance": 90}
                case 2:
                    step = {
                        "step": "feed",
                        "trinket": "LoraTrinket",
                        "method": "set_user_model",
                        "args": [f"<mira:user_model>model {i}</mira:user_model>"],
                        "kwargs": {},
                    }
                case 3:
                    step = {"step": "compose"}
                case _:
                    step = {"step": "turn", "n": 1}
            handle.write(json.dumps(step) + "\n")


def measure(mode: str, path: Path) -> tuple[int, int, list[str]]:
    """(baseline KiB, peak KiB, facts) of one subprocess."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE.format(root=str(ROOT)), mode, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.split()
    return int(out[0]), int(out[1]), out[2:]


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big.jsonl", Path(tmp) / "small.jsonl"
        write_scenario(big, steps)
        write_scenario(small, min(steps, REPLAY_STEPS))
        for mode, path, count in (("load", big, steps), ("replay", small, min(steps, REPLAY_STEPS))):
            size = path.stat().st_size
            base, peak, facts = measure(mode, path)
            grown = (peak - base) * 1024
            print(
                f"{mode:6s} {count:>9,} steps, file {size / 1e6:7.1f} MB: peak RSS "
                f"{peak / 1024:7.1f} MB, {grown / 1e6:7.1f} MB over the import baseline "
                f"({grown / size:5.2f}x the file; facts {' '.join(facts)})"
            )


if __name__ == "__main__":
    main()
