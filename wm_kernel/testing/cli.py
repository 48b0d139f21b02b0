"""``python -m wm_kernel check FILE [--trinket NAME=module:Class]... [--skip CHECK]...``: the
stability checker on a scenario file, or on another agent's request log (any file that is not a
scenario: see ``wm_kernel.interop``; its requests are checked against each other,
``wm_kernel.testing.logcheck``). Exit status 0 when stable, 1 when a check failed or broke
down, 2 for a usage error (argparse's) or a file that cannot be read."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from wm_kernel.experiments.cli import positive_int_arg
from wm_kernel.testing import mira
from wm_kernel.testing.perturbations import CHECKS
from wm_kernel.utils.checks import check_timeout, cli_error
from wm_kernel.utils.safe_files import BadJSONError, lines, load_json, open_regular, parse_json

if TYPE_CHECKING:
    from wm_kernel.testing.report import StabilityReport

#: Every check name ``--skip`` / ``--only`` take (the MIRA preset's only with ``--preset mira``).
ALL_CHECKS = {**CHECKS, **mira.CHECKS}


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    try:
        return check_timeout(value, "the timeout")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def is_scenario_file(path: str) -> bool:
    """Whether ``path``'s first non-blank line is a scenario header (``"format":
    "wm-kernel-scenario"``); an unreadable file counts as a scenario, so its error is the scenario
    loader's."""
    from wm_kernel.experiments.scenario_file import FORMAT

    try:  # a regular file only: a FIFO would wait for a writer forever, /dev/zero never end
        with open_regular(path) as handle:
            first = next((line for line in lines(handle, path) if line.strip()), "")
    except (OSError, ValueError):
        return True
    try:
        header = parse_json(first)
    except BadJSONError:
        return True
    return isinstance(header, dict) and header.get("format") == FORMAT


def add_check_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``check`` subcommand to ``python -m wm_kernel``.

    Long because: one ``add_argument`` per option of the command, in the order ``--help`` lists them.
    """
    parser = subparsers.add_parser(
        "check",
        help="check that a scenario's cached prompt bytes are stable",
        description="Replay a scenario (JSON Lines, see wm_kernel.experiments) under perturbations "
        "that must not change a cached byte, and report each section that moved: "
        "which check moved it, the first differing characters, and what it costs on "
        "MODEL at N turns an hour. Checks: "
        + "; ".join(f"{k}: {v}" for k, v in CHECKS.items())
        + ". A FILE that is not a scenario is imported as another agent's request log "
        "(python -m wm_kernel import) and its requests are checked against each other: "
        "the first section whose cached bytes moved, and its cost.",
        epilog="example: check s.jsonl --trinket Tags=myagent.trinkets:Tags --skip tz_locale",
    )
    parser.add_argument("file", metavar="FILE", help="a scenario file (.jsonl) or a request log")
    parser.add_argument(
        "--trinket",
        action="append",
        default=[],
        metavar="NAME=module:Class",
        help="a trinket that is not built in, by import path; repeatable",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=list(ALL_CHECKS),
        metavar="CHECK",
        help="leave a check out; repeatable (checks: " + ", ".join(ALL_CHECKS) + ")",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=None,
        choices=list(ALL_CHECKS),
        metavar="CHECK",
        help="run only this check; repeatable",
    )
    parser.add_argument(
        "--preset",
        default=None,
        choices=mira.PRESETS,
        help="check as MIRA's wire caches: every system section, clock_hour, tool_set_order, "
        "costs a day on MIRA's wire (docs/mira-wire.md); a MIRA tap is checked so anyway",
    )
    parser.add_argument(
        "--tools",
        default=None,
        metavar="FILE",
        help="a JSON file of tool definitions (a list of objects with a 'name'), for the preset's tool_set_order check",
    )
    parser.add_argument(
        "--model", default=None, help="price the cost on this model (default claude-sonnet-4-6; a log's own model)"
    )
    parser.add_argument(
        "--turns-per-hour",
        type=positive_int_arg,
        default=30,
        metavar="N",
        help="requests in the simulated hour (default 30)",
    )
    parser.add_argument(
        "--scope",
        default=None,
        choices=("cached", "system", "all"),
        help="which sections count (default: the cached ones; every system one with --preset mira)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=60.0,
        metavar="SECONDS",
        help="time limit of each replay (default 60)",
    )
    parser.add_argument(
        "--max-turns", type=positive_int_arg, default=None, metavar="N", help="check turns up to N only"
    )
    parser.set_defaults(func=check_command)
    return parser


def check_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """The ``check`` command: read ``args.file`` (a request log or a scenario), check its stability
    and print the report; 0 when it passes, 1 when not, 2 when the file or an option cannot be
    used."""
    from wm_kernel.experiments.steps import ScenarioError

    out = out or sys.stdout
    try:
        factories = _trinket_factories(args.trinket)
        if not is_scenario_file(args.file):
            report = _check_log(args, factories)
        else:
            report = _check_scenario(args, factories)
    except (ScenarioError, ValueError, TypeError, OSError) as exc:
        print(cli_error("check", str(exc)), file=sys.stderr)
        return 2
    print(report, file=out)
    return 0 if report.passed else 1


def _trinket_factories(specs: list[str]) -> dict[str, Any]:
    """The trinkets ``--trinket NAME=module:Class`` names, imported, by name."""
    from wm_kernel.testing.replay import load_import_path

    factories: dict[str, Any] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or ":" not in path:
            raise ValueError(f"--trinket {spec!r}: expected NAME=module:Class")
        try:
            factories[name.strip()] = load_import_path(path.strip())
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"--trinket {spec!r}: cannot import it ({exc})") from None
    return factories


def _check_log(args: argparse.Namespace, factories: dict[str, Any]) -> StabilityReport:
    """``args.file`` imported as another agent's request log and its requests checked against each
    other (priced on the log's own model unless ``--model`` names one); the options that choose a
    scenario's perturbations are an error here."""
    from wm_kernel.interop import import_log
    from wm_kernel.testing.stability import check_stability

    if factories or args.skip or args.only or args.tools:
        raise ValueError(
            f"{args.file} is a request log, not a scenario: --trinket, --skip and --only "
            f"choose perturbation checks of a scenario" + (" (and --tools the tools of one)" if args.tools else "")
        )
    log = import_log(args.file)
    for issue in log.errors:
        print(f"skipped {issue}", file=sys.stderr)
    return check_stability(
        log,
        model=args.model or log.cache_model(),
        turns_per_hour=args.turns_per_hour,
        scope=args.scope or "cached",
        max_turns=args.max_turns,
        preset=args.preset,
    )


def _check_scenario(args: argparse.Namespace, factories: dict[str, Any]) -> StabilityReport:
    """``args.file`` loaded as a scenario and replayed under the perturbations the options choose,
    with the ``--tools`` file's definitions (a JSON list) for the preset's tool order check."""
    from wm_kernel.experiments.scenario import Scenario
    from wm_kernel.testing.stability import check_stability

    tools = None
    if args.tools is not None:
        try:  # a regular file only, bounded, strict JSON: a FIFO or /dev/zero is one line
            tools = load_json(args.tools, f"--tools {args.tools}")
        except OSError as exc:
            raise ValueError(f"--tools {args.tools}: cannot read the file ({exc.strerror or exc})") from None
        if not isinstance(tools, list):
            raise ValueError(f"--tools {args.tools}: expected a JSON list of tool definitions")
    scenario = Scenario.load(args.file)
    return check_stability(
        scenario,
        factories=factories,
        skip=args.skip,
        only=args.only,
        model=args.model or "claude-sonnet-4-6",
        turns_per_hour=args.turns_per_hour,
        scope=args.scope,
        timeout=args.timeout,
        max_turns=args.max_turns,
        preset=args.preset,
        tools=tools,
    )
