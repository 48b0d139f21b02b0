"""The command line of experiments: ``python -m wm_kernel replay FILE [--variant NAME=SPEC]...``."""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from wm_kernel.composer import Layout
from wm_kernel.experiments.compare import run_variants, tabulate
from wm_kernel.experiments.scenario import Scenario, atomic_write
from wm_kernel.experiments.steps import ScenarioError
from wm_kernel.experiments.variants import BUILTIN_LAYOUTS, Variant

if TYPE_CHECKING:
    from wm_kernel.session import Session


_TABLE_COLUMNS = {"segment": "segment", "sections": "sections", "chars_total": "chars",
                  "tokens_total": "tokens", "cache_status": "cache", "cache_write_tokens": "written",
                  "cache_read_tokens": "read", "uncached_tokens": "uncached"}


def parse_variant_spec(spec: str) -> tuple[str, Variant]:
    """``NAME=SPEC`` from the command line: SPEC is a built-in layout name (default, original), a
    layout as JSON (``{"system": [...], ...}``) or Variant fields as JSON (``{"layout": "original",
    "base_prompt": "...", "disabled": ["TimeManager"]}``).

    >>> name, v = parse_variant_spec('no-time={"disabled": ["TimeManager"]}')
    >>> name, v.disabled
    ('no-time', ('TimeManager',))
    >>> parse_variant_spec("orig=original")[1].layout.name
    'original'
    """
    name, sep, body = spec.partition("=")
    name, body = name.strip(), body.strip()
    if not sep or not name or not body:
        raise ValueError(f"--variant {spec!r}: expected NAME=LAYOUT (a built-in layout name: "
                         f"{', '.join(BUILTIN_LAYOUTS)}; or JSON)")
    try:
        if body in BUILTIN_LAYOUTS:
            return name, Variant(name=name, layout=BUILTIN_LAYOUTS[body]())
        if not body.startswith("{"):
            raise ValueError(f"unknown built-in layout {body!r} (built in: {', '.join(BUILTIN_LAYOUTS)}; "
                             f"or give JSON)")
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(data, dict):
            raise ValueError("the JSON must be an object")
        from wm_kernel.types import PLACEMENTS

        if data and all(key in PLACEMENTS for key in data):
            return name, Variant(name=name, layout=Layout(data, name=name))
        # JSON cannot give a name (NAME= does) or a hook (a function); Variant checks the rest
        unknown = [key for key in data if key not in ("layout", "base_prompt", "disabled")]
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r} (a layout's keys are placements: "
                             f"{', '.join(PLACEMENTS)}; a variant's: layout, base_prompt, disabled)")
        return name, Variant(name=name, **data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--variant {name}: {exc}") from None


class _Progress:
    """A one-line progress bar on a stream (a terminal's stderr), redrawn at each whole percent;
    attached to each replayed Session, it counts changes of ``turn``."""

    def __init__(self, total: int, stream: TextIO, width: int = 30) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.width = width
        self.done = 0
        self._shown = -1

    def __call__(self, session: "Session") -> None:
        session.observe(self._on_turn, "turn")

    def _on_turn(self, change: Any) -> None:
        self.done += 1
        self._draw()

    def _draw(self) -> None:
        percent = min(100, self.done * 100 // self.total)
        if percent == self._shown:
            return
        self._shown = percent
        filled = self.width * percent // 100
        self.stream.write(f"\rreplay [{'#' * filled}{'.' * (self.width - filled)}] {percent:3d}% "
                          f"{self.done}/{self.total} turns")
        self.stream.flush()

    def close(self) -> None:
        if self._shown >= 0:
            self.stream.write("\n")
            self.stream.flush()


def add_replay_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
                      ) -> argparse.ArgumentParser:
    """Add the ``replay`` subcommand to ``python -m wm_kernel``."""
    parser = subparsers.add_parser(
        "replay", help="replay a scenario file and print a per-turn table",
        description="Replay a scenario (JSON Lines, see wm_kernel.experiments) into a fresh Session, "
                    "as recorded and under each --variant, and print one row per turn.")
    parser.add_argument("file", metavar="FILE", help="the scenario file (.jsonl)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=LAYOUT",
                        help="also run under a variant: a built-in layout (default, original), a "
                             "layout as JSON, or JSON with layout/base_prompt/disabled; repeatable")
    parser.add_argument("--out", metavar="CSV", help="write the history (one row per variant, turn "
                                                     "and section) to this CSV file, atomically")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show a progress bar on stderr (default: only when stderr is a "
                             "terminal and the run is long)")
    parser.add_argument("--estimate-tokens", action="store_true",
                        help="count tokens as chars/4 instead of with the offline tokenizer")
    parser.set_defaults(func=replay_command)
    return parser


def replay_command(args: argparse.Namespace, *, stdout: TextIO | None = None,
                   stderr: TextIO | None = None) -> int:
    """Run ``replay`` for parsed arguments; 0 on success, 2 (one line on stderr) on any error."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    # a warning (a section a variant's layout does not place...) is news for the user, not a
    # traceback-style line with an internal path: each distinct one is shown once, after the run
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            return _replay_reporting_errors(args, out, err)
        finally:
            for message in dict.fromkeys(" ".join(str(w.message).split()) for w in caught):
                err.write(f"warning: {message}\n")


def _replay_reporting_errors(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        return _replay(args, out, err)
    except OSError as exc:
        # "[Errno 2] No such file or directory: 'x'" reads better as the reason and the file
        where = f": {exc.filename}" if exc.filename else ""
        reason = (exc.strerror or str(exc)).lower() if exc.strerror else str(exc)
        err.write(f"replay: {reason}{where}\n")
        return 2
    except (ScenarioError, ValueError, TypeError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        err.write(f"replay: {message}\n")
        return 2


def _replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import pandas as pd

    from wm_kernel.tokens import EstimateTokenizer, TokenCounter

    variants: dict[str, Variant | None] = {"recorded": None}
    for spec in args.variant:
        name, variant = parse_variant_spec(spec)
        if name in variants:
            raise ValueError(f"--variant {name}: the name is used twice (or is 'recorded', the "
                             f"scenario as it is)")
        variants[name] = variant
    if args.out is not None:
        target = Path(args.out)
        if target.is_dir():
            raise ValueError(f"--out {args.out!r} is a directory")
        if not (target.parent if str(target.parent) else Path(".")).is_dir():
            raise ValueError(f"--out {args.out!r}: no such directory")
    scenario = Scenario.load(args.file)
    counter = TokenCounter(EstimateTokenizer()) if args.estimate_tokens else TokenCounter()
    total = scenario.turns * len(variants)
    show = args.progress if args.progress is not None else (err.isatty() and total >= 200)
    progress = _Progress(total, err) if show else None
    try:
        runs = run_variants(scenario, variants, counter=counter,
                            instruments=(progress,) if progress is not None else ())
    finally:
        if progress is not None:
            progress.close()
    frame = tabulate(runs)
    for run in runs:
        # one value of one index level: xs returns a frame (the stubs also allow a Series)
        rows = cast("pd.DataFrame", frame.xs(run.name, level="variant"))
        table = rows[list(_TABLE_COLUMNS)].rename(columns=_TABLE_COLUMNS)
        if len(runs) > 1:
            out.write(f"== {run.name}\n")
        out.write(table.reset_index().to_string(index=False) + "\n")
        summary = frame.attrs["cache"][run.name]
        # the scenario's count of turns (as its repr says); a prompt is composed per turn, and
        # one before the first (turn 0), which the hit rate counts too
        out.write(f"{scenario.turns} turns, cache hit rate {summary['hit_rate']:.1%} of "
                  f"{summary['turns']} prompts, "
                  f"{int(table['tokens'].sum())} tokens ({counter.name}), estimated input cost "
                  f"${summary['cost']:.4f}\n")
    if args.out is not None:
        history = pd.concat([run.session.history.assign(variant=run.name) for run in runs],
                            ignore_index=True)
        history = history[["variant", *[c for c in history.columns if c != "variant"]]]
        atomic_write(args.out, lambda handle: history.to_csv(handle, index=False))
        out.write(f"history: {len(history)} rows written to {args.out}\n")
    return 0
