"""Benchmark: the usage report over a tree of Claude Code transcripts (issue 46 item 3).

Run on demand: ``.venv/bin/python bench/usage.py [--mb SIZE] [--keep DIR] [--repeat N]``. Nothing
here is asserted.

The tree (``--mb``, default 1024) is made of copies of the real sessions in ``../shared/real-logs``
(or /work/shared/real-logs; skipped with a line saying so when absent), each copy's message and
request ids made its own so every request counts. It prints, for the same bytes:

- a plain read (every file's bytes, nothing parsed): the floor;
- the usage pass (``usage_report`` without a cache): MB/s of CPU on one core (``time.process_time``,
  so other processes on a shared machine do not count) and of the wall clock, and its ratio to the
  plain read; with ``--repeat N`` (default 3) the pass and the plain read alternate N times and the
  figures are medians with the min-max range;
- the pass as it read before this issue (the import's reader, sections cut, ``json`` alone) on the
  first 100 MB of the tree, for the before/after ratio;
- a second run over the unchanged tree with the per-file cache (wall seconds);
- the peak memory (VmHWM) of a process that runs the pass over the whole tree, against one that
  only imports the package.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _timing import spread  # noqa: E402


def real_logs() -> Path | None:
    for folder in (ROOT.parent / "shared" / "real-logs", Path("/work/shared/real-logs")):
        if (folder / "claude-code").is_dir():
            return folder / "claude-code"
    return None


def make_tree(source: Path, target: Path, megabytes: int) -> tuple[int, int]:
    """Copies of every session in ``source`` (with its subagents) under ``target`` until ``megabytes``;
    (files, bytes)."""
    sessions = sorted(source.glob("*.jsonl"))
    files = written = copy = 0
    while written < megabytes * 1_000_000:
        project = target / f"project-{copy // 50:04d}"
        project.mkdir(parents=True, exist_ok=True)
        for session in sessions:
            tag = f"c{copy:06d}".encode()
            name = f"{session.stem}-{copy:06d}"
            for path, out in [(session, project / f"{name}.jsonl")] + [
                (sub, project / name / "subagents" / sub.name)
                for sub in sorted((session.with_suffix("") / "subagents").glob("*.jsonl"))
            ]:
                data = path.read_bytes().replace(b'"msg_', b'"msg_' + tag).replace(b'"req_', b'"req_' + tag)
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(data)
                files += 1
                written += len(data)
        copy += 1
    return files, written


def plain_read(tree: Path) -> tuple[float, float, int]:
    start, cpu = time.perf_counter(), time.process_time()
    total = 0
    for path in sorted(tree.rglob("*.jsonl")):
        total += len(path.read_bytes())
    return time.process_time() - cpu, time.perf_counter() - start, total


def usage_pass(paths: list[Path], cache: Path | None = None) -> tuple[float, float, dict[str, object]]:
    from wm_kernel.interop import usage_report
    from wm_kernel.interop.report.scan import UsageCache

    start, cpu = time.perf_counter(), time.process_time()
    report = usage_report(paths, cache=UsageCache(cache) if cache is not None else None)
    return time.process_time() - cpu, time.perf_counter() - start, report.total.to_json()


def before_pass(tree: Path, limit: int) -> tuple[float, int]:
    """The reading before issue 46's item 3: the import's reader (sections cut), ``json`` alone."""
    import wm_kernel.utils.fastjson as fastjson
    from wm_kernel.interop.log_files import read_unit

    saved, fastjson.orjson = fastjson.orjson, None
    try:
        done = 0
        cpu = time.process_time()
        for path in sorted(tree.rglob("*.jsonl")):
            if path.parent.name == "subagents":
                continue
            read_unit(path)
            done += path.stat().st_size + sum(p.stat().st_size for p in (path.with_suffix("") / "subagents").glob("*"))
            if done >= limit:
                break
        return time.process_time() - cpu, done
    finally:
        fastjson.orjson = saved


# VmHWM (the process's own peak resident memory, in kB): Linux keeps ru_maxrss across exec, so a
# child would report its parent's
PEAK = """
import sys
sys.path.insert(0, {root!r})
from wm_kernel.interop import usage_report
if {run}:
    usage_report([{tree!r}])
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")))
"""


def peak_kb(tree: Path, run: bool) -> int:
    code = PEAK.format(root=str(ROOT), tree=str(tree), run=run)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="size of the generated tree (default 1024 MB)")
    parser.add_argument("--keep", metavar="DIR", help="build (or reuse) the tree in DIR and keep it")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the pass, interleaved with plain reads")
    args = parser.parse_args()
    source = real_logs()
    if source is None:
        print("real logs not found (../shared/real-logs): the usage benchmark is skipped")
        return 0
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="wm-usage-bench-"))
    try:
        tree = folder / "tree"
        if not tree.is_dir():
            files, size = make_tree(source, tree, args.mb)
        else:
            files = sum(1 for _ in tree.rglob("*.jsonl"))
            size = sum(p.stat().st_size for p in tree.rglob("*.jsonl"))
        mb = size / 1e6
        print(f"tree: {files:,} files, {mb:,.0f} MB (copies of {source})")
        plains, passes = [], []
        for _ in range(args.repeat):  # interleaved: a busy moment of the machine hits both alike
            plains.append(plain_read(tree))
            passes.append(usage_pass([tree]))
        plain_cpu, plain_wall = statistics.median(p[0] for p in plains), statistics.median(p[1] for p in plains)
        cpu, total = statistics.median(p[0] for p in passes), passes[0][2]
        print(f"plain read:            {mb / plain_cpu:8,.0f} MB/s CPU, {mb / plain_wall:8,.0f} MB/s wall")
        print(
            f"usage pass (no cache): {spread([mb / p[0] for p in passes], ' MB/s CPU')}, "
            f"{spread([mb / p[1] for p in passes], ' MB/s wall')} "
            f"({cpu:.1f} s CPU; {plain_cpu / cpu:.3f} of the plain read's speed; {args.repeat} runs)"
        )
        if any(p[2] != total for p in passes):
            print("    the runs' totals differ")
        print(f"    total: {json.dumps(total)}")
        old_cpu, old_bytes = before_pass(tree, 100_000_000)
        old = old_bytes / 1e6 / old_cpu
        print(f"before (import reader, json only, first {old_bytes / 1e6:.0f} MB): {old:,.1f} MB/s CPU")
        print(f"after / before: {mb / cpu / old:.1f}x")
        cache = folder / "cache"
        usage_pass([tree], cache)  # fills the cache
        cpu2, wall2, total2 = usage_pass([tree], cache)
        print(
            f"second run, unchanged tree, cache: {wall2:.2f} s wall ({cpu2:.2f} s CPU); same totals: {total2 == total}"
        )
        base, peak = peak_kb(tree, False), peak_kb(tree, True)
        print(f"peak memory (VmHWM): {peak / 1024:.0f} MB for the pass; {base / 1024:.0f} MB to import the package")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
