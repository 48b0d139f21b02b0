"""Benchmark: importing other agents' logs at scale (issue 29 item 9, issue 34 item 13).

Run on demand: ``.venv/bin/python bench/interop.py [REPEAT] [--big]``. Nothing here is asserted.

- Claude Code: import + reconcile of generated sessions (``wm_kernel.testing.synthetic``) of one
  size and of four times that size, import alone and import + reconcile of one long conversation
  of 2,100 and 8,400 lines, ``to_session()`` of the imported log (what ``%wm_import`` replays), and
  import + reconcile of a generated ~3.5 MB one; CPU time (``time.thread_time``,
  the sizes interleaved, medians with min-max) and peak traced memory (``tracemalloc``, a run of
  its own, since tracing slows the run). Four times the input should cost at most about five times
  the time and memory: the ratios are printed.
- OTLP: reading a generated trace (one document) of one size and of four times it, same figures;
  ``--big`` also reads a ~150 MB one once (the figure to hold: under a minute).
- The real logs in ``../shared/real-logs`` (or /work/shared/real-logs), when present: the same
  figures for the 2.7 MB transcript and its subagents; skipped with a line saying so when absent.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wm_kernel.interop import import_log  # noqa: E402
from wm_kernel.interop.imported import ImportedSession  # noqa: E402
from wm_kernel.providers.reconcile import reconcile  # noqa: E402
from wm_kernel.testing.synthetic import claude_code_session, otlp_trace  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import spread  # noqa: E402


def import_and_reconcile(path: Path) -> Callable[[], object]:
    return lambda: reconcile(import_log(path))


def replayed(log: ImportedSession) -> Callable[[], object]:
    return lambda: log.to_session()


def read_only(path: Path) -> Callable[[], object]:
    return lambda: import_log(path)


def seconds(cases: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """CPU seconds of one call of each case per repetition, the cases interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for rep in range(repeat):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            gc.collect()
            start = time.thread_time()
            cases[name]()
            samples[name].append(time.thread_time() - start)
    return samples


def peak_mb(fn: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def size_mb(paths: list[Path]) -> float:
    return sum(p.stat().st_size for p in paths) / 1e6


def compare(
    title: str,
    small: tuple[str, list[Path], Callable[[], object]],
    large: tuple[str, list[Path], Callable[[], object]],
    repeat: int,
) -> None:
    print(title)
    times = seconds({small[0]: small[2], large[0]: large[2]}, repeat)
    memory = {name: peak_mb(fn) for name, _, fn in (small, large)}
    for name, paths, _ in (small, large):
        print(f"  {name:<28} {size_mb(paths):7.2f} MB  {spread(times[name], ' s', 2):<24} peak {memory[name]:7.1f} MB")
    ratio = [b / a for a, b in zip(times[small[0]], times[large[0]], strict=True)]
    print(
        f"  input x{size_mb(large[1]) / size_mb(small[1]):.1f}: time x{spread(ratio, '', 2)}, "
        f"memory x{memory[large[0]] / memory[small[0]]:.2f}"
    )


def real_logs() -> Path | None:
    here = Path(__file__).resolve().parents[1]
    for folder in (here.parent / "shared" / "real-logs", Path("/work/shared/real-logs")):
        if folder.is_dir():
            return folder
    return None


def main(argv: list[str]) -> None:
    repeat = int(next((a for a in argv if a.isdigit()), "3"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        small = claude_code_session(folder / "small.jsonl", turns=10, words=60, seed=1)
        large = claude_code_session(folder / "large.jsonl", turns=40, words=60, seed=1)
        compare(
            "Claude Code: import + reconcile (generated)",
            ("generated", small.files, import_and_reconcile(small.path)),
            ("generated, x4", large.files, import_and_reconcile(large.path)),
            repeat,
        )
        lines = claude_code_session(folder / "lines.jsonl", turns=100, words=40, seed=5, subagent=False)
        lines4 = claude_code_session(folder / "lines4.jsonl", turns=400, words=40, seed=5, subagent=False)
        compare(
            "Claude Code: import only (generated, 2,100 and 8,400 lines)",
            ("generated", lines.files, read_only(lines.path)),
            ("generated, x4", lines4.files, read_only(lines4.path)),
            repeat,
        )
        compare(
            "Claude Code: import + reconcile (generated, 2,100 and 8,400 lines: a long conversation)",
            ("generated", lines.files, import_and_reconcile(lines.path)),
            ("generated, x4", lines4.files, import_and_reconcile(lines4.path)),
            repeat,
        )
        compare(
            "Claude Code: to_session() of an imported log (generated, 2,100 and 8,400 lines), as %wm_import does",
            ("generated", lines.files, replayed(import_log(lines.path))),
            ("generated, x4", lines4.files, replayed(import_log(lines4.path))),
            repeat,
        )
        big = claude_code_session(folder / "big.jsonl", turns=110, words=200, seed=2)
        run = import_and_reconcile(big.path)
        print(
            f"  generated {size_mb(big.files):.2f} MB ({big.requests} requests): "
            f"{spread(seconds({'big': run}, repeat)['big'], ' s', 2)}, peak {peak_mb(run):.1f} MB "
            "(to hold: under 3 s and 150 MB for 3.5 MB)"
        )
        trace = otlp_trace(folder / "trace.json", spans=2_000, seed=1)
        trace4 = otlp_trace(folder / "trace4.json", spans=8_000, seed=1)
        compare(
            "OTLP: read (generated, one document)",
            ("trace", trace.files, read_only(trace.path)),
            ("trace, x4", trace4.files, read_only(trace4.path)),
            repeat,
        )
        if "--big" in argv:
            huge = otlp_trace(folder / "huge.json", spans=70_000, seed=3, per_line=True)
            start = time.thread_time()
            session = import_log(huge.path)
            print(
                f"  {size_mb(huge.files):.0f} MB trace, {len(session)} spans: read in "
                f"{time.thread_time() - start:.1f} s (to hold: under a minute)"
            )
    found = real_logs()
    if found is None:
        print("real logs: ../shared/real-logs not found, skipped")
        return
    sessions = sorted((found / "claude-code").glob("258c7280-*.jsonl"))
    if not sessions:
        print(f"real logs: no 258c7280 session in {found}, skipped")
        return
    path = sessions[0]
    files = [path, *sorted((path.with_suffix("") / "subagents").glob("*.jsonl"))]
    run = import_and_reconcile(path)
    times = seconds({"real": run}, repeat)["real"]
    print(
        f"real log {path.name[:13]}... {size_mb(files):.2f} MB with its subagents: import + reconcile "
        f"{spread(times, ' s', 2)}, peak {peak_mb(run):.1f} MB; median {statistics.median(times):.2f} s"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
