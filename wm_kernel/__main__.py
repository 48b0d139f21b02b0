"""Command line: ``python -m wm_kernel demo`` (the headless demo), ``replay`` (experiments),
``import`` (other agents' logs, wm_kernel.interop), ``usage`` (the usage of a folder of logs) and
``check`` (the cache-stability checker);
``--version``. Every error is one line on stderr in argparse's form,
``python -m wm_kernel COMMAND: error: ...`` (``wm_kernel.utils.checks.cli_error``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from wm_kernel import __version__

    parser = argparse.ArgumentParser(
        prog="python -m wm_kernel", description="wm-kernel: event-driven system prompt composition"
    )
    parser.add_argument("--version", action="version", version=f"wm-kernel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compose a prompt with the built-in trinkets and advance turns")
    demo.add_argument("--turns", type=int, default=6, help="turns to advance (default 6)")
    demo.add_argument("--quiet", action="store_true", help="print only the per-turn summary")
    from wm_kernel.interop.readers import detect_log_format

    try:
        from wm_kernel.experiments.cli import add_replay_parser
    except ImportError:
        pass
    else:
        add_replay_parser(sub, detect_log_format=detect_log_format)
    from wm_kernel.interop.cli import add_import_parser

    add_import_parser(sub)
    from wm_kernel.interop.report.cli import add_usage_parser

    add_usage_parser(sub)
    from wm_kernel.testing.cli import add_check_parser

    add_check_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from wm_kernel.demo import run_demo

        return run_demo(turns=args.turns, quiet=args.quiet, out=sys.stdout)
    command: Callable[[argparse.Namespace], int] = args.func
    return command(args)


if __name__ == "__main__":
    sys.exit(main())
