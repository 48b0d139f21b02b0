"""``python -m wm_kernel usage PATH... [--by GROUP]... [--since DAY] [--until DAY] [--json | --csv]
[--html FILE]``: the usage of every log under the paths, per day, model and session.

It needs only the core dependencies (no Jupyter, no pandas): the readers, the usage parser and the
price table. On a terminal, a run longer than a second shows a progress line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import date
from typing import TextIO

from wm_kernel.interop.report.render import csv_report, html_report, text_report
from wm_kernel.interop.report.scan import UsageCache, default_cache_dir
from wm_kernel.interop.report.tally import GROUPS, usage_report
from wm_kernel.utils.checks import cli_error


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {value!r}") from None


def add_usage_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``usage`` subcommand to ``python -m wm_kernel``."""
    parser = subparsers.add_parser(
        "usage",
        help="total the usage and dollars of every agent log under some folders",
        description="Find every log under the paths (Claude Code projects and their subagents, Codex "
        "sessions, claude-trace captures, OpenHands trajectories, request envelopes, OTLP traces) and "
        "print per day, model and session: requests, uncached input, cache reads, writes by TTL, "
        "output, dollars (requests of models without a price counted apart) and the share of prompt "
        "tokens read from the cache. The last line counts and names the lines no reader understands.",
        epilog="exit status: 0 a report (even with lines not understood), 1 no log found or a bad argument",
    )
    parser.add_argument("path", metavar="PATH", nargs="+", help="log files or folders (searched to any depth)")
    parser.add_argument(
        "--by",
        action="append",
        choices=GROUPS,
        help="the tables to print (repeatable; default: all three)",
    )
    parser.add_argument("--since", type=_day, metavar="DAY", help="only requests sent on or after DAY (UTC)")
    parser.add_argument("--until", type=_day, metavar="DAY", help="only requests sent on or before DAY (UTC)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print the report as JSON")
    shape.add_argument("--csv", action="store_true", help="print the report as CSV")
    parser.add_argument("--html", metavar="FILE", help="also write the report as an HTML page with a chart")
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help=f"where the per-file cache lives (default: ${'{'}WM_KERNEL_CACHE{'}'} or {default_cache_dir()})",
    )
    parser.add_argument("--no-cache", action="store_true", help="read every file, and keep no cache")
    parser.set_defaults(func=run_usage)
    return parser


class _Progress:
    """A progress line on a terminal, drawn only once a run has taken more than a second."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.start = clock()
        self.drawn = False
        self.on = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int, read: int) -> None:
        if not self.on or self.clock() - self.start < 1.0:
            return
        self.drawn = True
        self.stream.write(f"\rusage: {done:,}/{total:,} files, {read / 1e6:,.0f} MB read")
        self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def run_usage(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``usage`` with parsed arguments."""
    out = out or sys.stdout
    err = err or sys.stderr
    if args.since is not None and args.until is not None and args.since > args.until:
        print(cli_error("usage", f"--since {args.since} is after --until {args.until}"), file=err)
        return 1
    cache = None if args.no_cache else UsageCache(args.cache_dir or default_cache_dir())
    progress = _Progress(err)
    try:
        report = usage_report(args.path, since=args.since, until=args.until, cache=cache, progress=progress)
    except (ValueError, OSError) as exc:
        progress.close()
        print(cli_error("usage", str(exc)), file=err)
        return 1
    progress.close()
    if report.files == 0:
        print(cli_error("usage", f"no .jsonl or .json log under {', '.join(args.path)}"), file=err)
        return 1
    groups = tuple(dict.fromkeys(args.by)) if args.by else GROUPS
    if args.json:
        print(json.dumps(report.to_json(), indent=1), file=out)
    elif args.csv:
        out.write(csv_report(report, groups))
    else:
        print(text_report(report, groups), file=out)
    if args.html:
        try:
            with open(args.html, "w", encoding="utf-8") as handle:
                handle.write(html_report(report, groups))
        except OSError as exc:
            print(cli_error("usage", f"cannot write {args.html}: {exc}"), file=err)
            return 1
    if args.json or args.csv:
        print(report.last_line(), file=err)
    return 0


__all__ = ["add_usage_parser", "run_usage"]
