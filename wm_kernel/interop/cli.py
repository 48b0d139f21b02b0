"""``python -m wm_kernel import FILE... [--format F] [--split REGEX]... [--otlp-out FILE]``: read
other agents' logs and print, per turn, its sections, tokens, first change, the simulated cache
and the logged usage; ``--sections N`` prints the section table of turn N."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from wm_kernel.interop.imported import ImportedSession
from wm_kernel.interop.log_files import import_log
from wm_kernel.interop.readers import log_formats
from wm_kernel.utils.checks import cli_error


def add_import_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``import`` subcommand to ``python -m wm_kernel``."""
    parser = subparsers.add_parser(
        "import",
        help="import another agent's request log and show where its tokens and cache go",
        description="Read request logs (Anthropic Messages, OpenAI Chat Completions or Responses "
        "bodies as JSON Lines, Claude Code transcripts, OTLP JSON traces) as one "
        "conversation and print one row per request. Records that cannot be read are "
        "reported (file and line) on stderr; the rest imports.",
        epilog="exit status: 0 all imported (ordinary lines that carry no request, such as a "
        "transcript's progress lines, are counted, not errors), 2 some records could not be "
        "read, 1 nothing imported",
    )
    parser.add_argument(
        "file", metavar="FILE", nargs="+", help="log files or folders (a Claude Code session brings its subagents)"
    )
    parser.add_argument("--format", choices=log_formats(), help="the files' format (default: detected)")
    parser.add_argument(
        "--split",
        action="append",
        default=[],
        metavar="REGEX",
        help="also start a section at every match of REGEX (multiline); repeatable",
    )
    parser.add_argument("--model", help="cache simulator model (default: each request's own, if known)")
    parser.add_argument(
        "--gap",
        type=float,
        metavar="SECONDS",
        help="spacing of the requests a log gives no send time, in file order (the "
        "simulation, table and trace say the times were assumed)",
    )
    parser.add_argument("--sections", type=int, metavar="TURN", help="print the sections of TURN")
    parser.add_argument(
        "--otlp-out", metavar="FILE", help="write the section-level trace as OTLP JSON (needs wm-kernel[otel])"
    )
    parser.set_defaults(func=run_import)
    return parser


def run_import(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run ``import`` with parsed arguments."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        session = import_log(*args.file, format=args.format, rules=args.split, gap=getattr(args, "gap", None))
    except ValueError as exc:
        print(cli_error("import", str(exc)), file=err)
        return 1
    for issue in session.errors:
        print(f"skipped {issue}", file=err)
    try:
        # a turn the log does not have is said before anything is printed, not after the table
        sections = _sections(session, args.sections) if args.sections is not None else None
    except ValueError as exc:
        print(cli_error("import", f"--sections {args.sections}: {exc}"), file=err)
        return 1
    skipped = ""
    if session.skipped:
        counts = ", ".join(f"{kind} {n}" for kind, n in session.skipped.items())
        skipped = f" ({sum(session.skipped.values())} ordinary lines skipped: {counts})"
    print(
        f"{len(session)} requests from {session.name}{skipped}; tokens counted with {session.counter.label}", file=out
    )
    try:
        print(_table(session, args.model), file=out)
        for line in session.assumptions(session.pricing(args.model) if args.model else None):
            print(line, file=out)
        if sections is not None:
            print(sections, file=out)
        if args.otlp_out:
            _write_trace(session, args.otlp_out)
            print(f"trace written to {args.otlp_out}", file=out)
    except (ValueError, ImportError) as exc:
        print(cli_error("import", str(exc)), file=err)
        return 1
    return 2 if session.errors else 0


def _table(session: ImportedSession, model: str | None) -> str:
    frame = session.summary(model)
    frame["sent_at"] = [t.strftime("%Y-%m-%d %H:%M:%S") if t is not None else "" for t in frame["sent_at"]]
    return frame.to_string(index=False)


def _sections(session: ImportedSession, turn: int) -> str:
    frame = session.history
    rows = frame[frame["turn"] == turn][["section", "trinket", "placement", "tokens", "changed", "cached"]]
    if rows.empty:
        raise ValueError(f"no turn {turn}: this log has turns 0..{session.turn}")
    return rows.to_string(index=False)


def _write_trace(session: ImportedSession, path: str) -> None:
    try:
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        raise ImportError("--otlp-out needs opentelemetry-sdk: pip install 'wm-kernel[otel]'") from None
    from wm_kernel.interop.otel import export_trace, otlp_json

    exporter = InMemorySpanExporter()
    export_trace(session, exporter=exporter)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(otlp_json(exporter.get_finished_spans()) + "\n")
