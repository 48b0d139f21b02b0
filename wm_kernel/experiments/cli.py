"""The command line of experiments: ``python -m wm_kernel replay FILE... [--variant NAME=SPEC]...
[--workers N | --dask ADDRESS]``."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from wm_kernel.core.composer.layout import Layout
from wm_kernel.experiments.compare import run_variants
from wm_kernel.experiments.progress import TerminalProgress
from wm_kernel.experiments.results import VariantRun, tabulate
from wm_kernel.experiments.steps import ScenarioError
from wm_kernel.experiments.sweep import SweepError, close_dask_client, dask_client
from wm_kernel.experiments.variants import BUILTIN_LAYOUTS, Variant
from wm_kernel.utils.checks import cli_error
from wm_kernel.utils.safe_files import atomic_write_text as atomic_write
from wm_kernel.utils.safe_files import open_regular

if TYPE_CHECKING:
    from wm_kernel.tokens import TokenCounter


_TABLE_COLUMNS = {
    "segment": "segment",
    "sections": "sections",
    "chars_total": "chars",
    "tokens_total": "tokens",
    "cache_status": "cache",
    "cache_write_tokens": "written",
    "cache_read_tokens": "read",
    "uncached_tokens": "uncached",
}


def parse_variant_spec(spec: str) -> tuple[str, Variant]:
    """``NAME=SPEC`` from the command line: SPEC is a built-in layout name (default, original), a
    layout as JSON (``{"system": [...], ...}``) or Variant fields as JSON (``{"layout": "original",
    "base_prompt": "...", "disabled": ["TimeManager"], "styles": "revised"}``).

    >>> name, v = parse_variant_spec('no-time={"disabled": ["TimeManager"]}')
    >>> name, v.disabled
    ('no-time', ('TimeManager',))
    >>> parse_variant_spec("orig=original")[1].layout.name
    'original'
    """
    name, sep, body = spec.partition("=")
    name, body = name.strip(), body.strip()
    if not sep or not name or not body:
        raise ValueError(
            f"--variant {spec!r}: expected NAME=LAYOUT (a built-in layout name: {', '.join(BUILTIN_LAYOUTS)}; or JSON)"
        )
    try:
        if body in BUILTIN_LAYOUTS:
            return name, Variant(name=name, layout=BUILTIN_LAYOUTS[body]())
        if not body.startswith("{"):
            raise ValueError(f"unknown built-in layout {body!r} (built in: {', '.join(BUILTIN_LAYOUTS)}; or give JSON)")
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(data, dict):
            raise ValueError("the JSON must be an object")
        from wm_kernel.core.prompt_dict import PLACEMENTS

        if data and all(key in PLACEMENTS for key in data):
            return name, Variant(name=name, layout=Layout(data, name=name))
        # JSON cannot give a name (NAME= does) or a hook (a function); Variant checks the rest
        unknown = [key for key in data if key not in ("layout", "base_prompt", "disabled", "styles")]
        if unknown:
            raise ValueError(
                f"unknown field {unknown[0]!r} (a layout's keys are placements: "
                f"{', '.join(PLACEMENTS)}; a variant's: layout, base_prompt, disabled, "
                f"styles)"
            )
        return name, Variant(name=name, **data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--variant {name}: {exc}") from None


def add_replay_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    detect_log_format: Callable[[Any], str | None] | None = None,
) -> argparse.ArgumentParser:
    """Add the ``replay`` subcommand to ``python -m wm_kernel``. ``detect_log_format(record)``
    names the log format of another agent's file from its first record (the import layer's,
    ``wm_kernel.interop.readers``, above this one), so such a file is pointed to ``import``.

    Long because: one ``add_argument`` per option of the command, each with its help text, in the
    order ``--help`` lists them.
    """
    parser = subparsers.add_parser(
        "replay",
        help="replay scenario files and print a per-turn table",
        description="Replay scenarios (JSON Lines, see wm_kernel.experiments) into fresh Sessions, "
        "as recorded and under each --variant, and print one row per turn. Several "
        "files make a sweep: every (file, variant) replay is independent, so --workers "
        "or --dask run them in parallel; the tables are the serial run's, in the same "
        "order. A file that fails is reported (file and line) and the others complete.",
        epilog="examples: replay s.jsonl --variant orig=original; replay runs/*.jsonl --workers 4; "
        "replay runs/*.jsonl --dask tcp://scheduler:8786 (needs wm-kernel[scale])",
    )
    parser.add_argument("file", metavar="FILE", nargs="+", help="scenario files (.jsonl)")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=LAYOUT",
        help="also run under a variant: a built-in layout (default, original), a "
        "layout as JSON, or JSON with layout/base_prompt/disabled/styles; "
        "repeatable",
    )
    parser.add_argument(
        "--out",
        metavar="CSV",
        help="write the history (one row per variant, turn "
        "and section; per scenario too for several "
        "files) to this CSV file, atomically",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar on stderr (default: only when stderr is a terminal and the run is long)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int_arg,
        default=1,
        metavar="N",
        help="replay on N worker processes (default 1: here, one after the other); "
        "with --dask local, the number of Dask workers",
    )
    parser.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="replay on a Dask cluster: a scheduler address (tcp://host:8786), or "
        "'local' to start one of --workers processes (2 by default); needs "
        "the optional extra: pip install 'wm-kernel[scale]'",
    )
    parser.add_argument(
        "--estimate-tokens", action="store_true", help="count tokens as chars/4 instead of with the offline tokenizer"
    )
    parser.add_argument(
        "--model",
        default=None,
        metavar="MODEL",
        help="count and price for this model (a wm_kernel.cachesim.MODELS id; default "
        "claude-sonnet-4-6's prices, offline cl100k counts)",
    )
    parser.set_defaults(func=replay_command, detect_log_format=detect_log_format)
    return parser


def positive_int_arg(text: str) -> int:
    """An argparse ``type``: a whole number of at least 1, else argparse's own error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def replay_command(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
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
        err.write(cli_error("replay", f"{reason}{where}") + "\n")
        return 2
    except (ScenarioError, ValueError, TypeError, ImportError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        err.write(cli_error("replay", message) + "\n")
        return 2


def _request_log_format(path: str, detect_log_format: Callable[[Any], str | None]) -> str | None:
    """The log format that claims the first record of ``path`` (``detect_log_format``'s answer),
    when it is another agent's request log rather than a scenario; None otherwise, or when
    unreadable."""
    try:
        with open_regular(path, path, errors="replace") as handle:  # never a FIFO's wait
            first = handle.readline(_FIRST_LINE_CHARS)
        record = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return None
    if isinstance(record, dict) and {"format", "version"} & record.keys():
        return None  # a scenario's header
    return detect_log_format(record)


#: How much of a file's first line is read to tell a request log from a scenario.
_FIRST_LINE_CHARS = 4 * 1024 * 1024


def _replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The ``replay`` command: check the arguments, replay every file under every variant and print
    the report; 2 when some file failed."""
    variants, counter = _replay_options(args)

    def progress(total: int) -> TerminalProgress | None:
        show = args.progress if args.progress is not None else (err.isatty() and total >= 200)
        return TerminalProgress(total, err) if show else None

    many = len(args.file) > 1
    failed: list[str] = []
    with _executor(args, len(args.file) * len(variants)) as executor:
        try:
            runs = run_variants(
                args.file if many else args.file[0],
                variants,
                executor=executor,
                counter=counter,
                progress=progress,
                history=args.out is not None,
                model=args.model,
            )
        except SweepError as exc:
            if not many:
                raise
            # the files that failed are told on stderr; the others are reported as usual
            failed = exc.lines
            broken = {failure.scenario for failure in exc.failures}
            runs = [run for run in exc.completed if run.scenario not in broken]
    if runs:
        _report(runs, variants, counter, args, out, many)
    for line in failed:
        err.write(cli_error("replay", line) + "\n")
    return 2 if failed else 0


def _replay_options(args: argparse.Namespace) -> tuple[dict[str, Variant | None], TokenCounter]:
    """The ``replay`` command's arguments checked before any replay starts: no file is another
    agent's request log, the variants by name (``recorded`` first: the scenario as it is), a
    ``--out`` whose folder exists, a known ``--model``; and the counter they choose."""
    from wm_kernel.tokens import EstimateTokenizer, TokenCounter

    detect: Callable[[Any], str | None] | None = getattr(args, "detect_log_format", None)
    for path in args.file:
        log_format = _request_log_format(path, detect) if detect is not None else None
        if log_format is not None:  # said before any replay starts, with the command that reads it
            raise ValueError(
                f"{path} is a request log ({log_format}), not a scenario; "
                f"read it with python -m wm_kernel import {path}"
            )
    variants: dict[str, Variant | None] = {"recorded": None}
    for spec in args.variant:
        name, variant = parse_variant_spec(spec)
        if name in variants:
            raise ValueError(f"--variant {name}: the name is used twice (or is 'recorded', the scenario as it is)")
        variants[name] = variant
    if args.out is not None:
        target = Path(args.out)
        if target.is_dir():
            raise ValueError(f"--out {args.out!r} is a directory")
        if not (target.parent if str(target.parent) else Path(".")).is_dir():
            raise ValueError(f"--out {args.out!r}: no such directory")
    if args.model is not None:
        from wm_kernel.cachesim.models import get_model
        from wm_kernel.tokens import counter_for

        get_model(args.model)
        counter = counter_for(args.model)
    else:
        counter = TokenCounter()
    if args.estimate_tokens:
        counter = TokenCounter(EstimateTokenizer(), model=args.model)
    return variants, counter


@contextlib.contextmanager
def _executor(args: argparse.Namespace, replays: int) -> Iterator[Any]:
    """What --workers and --dask ask for (None: replay here), shut down afterwards: never more
    processes than there are replays (a process more would only start and wait)."""
    workers = min(args.workers, replays)
    if args.dask is not None:
        client = dask_client(
            None if args.dask == "local" else args.dask, workers=workers if args.workers > 1 else min(2, replays)
        )
        try:
            yield client
        finally:
            close_dask_client(client)
    elif workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield pool
    else:
        yield None


def _cost(summary: dict[str, Any]) -> str:
    low, high = summary["input_cost_range"]
    if low == high:
        return f"${summary['input_cost']:.4f}"
    return f"≈ ${summary['input_cost']:.4f} (${low:.4f}–${high:.4f})"


def _report(
    runs: list[VariantRun],
    variants: dict[str, Variant | None],
    counter: TokenCounter,
    args: argparse.Namespace,
    out: TextIO,
    many: bool,
) -> None:
    import pandas as pd

    frame = tabulate(runs, model=args.model)
    for run in runs:
        key = (run.scenario, run.name) if many else run.name
        level = ["scenario", "variant"] if many else "variant"
        # one value of the index levels: xs returns a frame (the stubs also allow a Series)
        rows = cast("pd.DataFrame", frame.xs(key, level=level))
        table = rows[list(_TABLE_COLUMNS)].rename(columns=_TABLE_COLUMNS)
        if many:
            out.write(f"== {run.scenario}" + (f" [{run.name}]\n" if len(variants) > 1 else "\n"))
        elif len(runs) > 1:
            out.write(f"== {run.name}\n")
        out.write(table.reset_index().to_string(index=False) + "\n")
        cache = frame.attrs["cache"]
        summary = cache[run.scenario][run.name] if many else cache[run.name]
        # the scenario's count of turns (as its repr says); a prompt is composed per turn, and
        # one before the first (turn 0), which the hit rate counts too: say which turns
        turns = table.index.get_level_values("turn") if "turn" in table.index.names else table.index
        span = f"turns {int(min(turns))}-{int(max(turns))}" if len(turns) else "no turn"
        out.write(
            f"{run.scenario_turns} turns, {summary['turns']} prompts ({span}), {summary['turns_read']} "
            f"read "
            f"from the cache, hit rate {summary['hit_rate_of_input_tokens']:.1%} of input tokens, "
            f"{int(table['tokens'].sum())} system-prompt tokens ({counter.label}), input cost "
            f"{_cost(summary)} at {summary['model']}'s prices\n"
        )
        # what the figures assume, and what a provider would refuse, is said beside them
        for note in (summary.get("assumed_exchange"), summary.get("over_window")):
            if note:
                out.write(f"{note}\n")
    if args.out is not None:
        history = pd.concat(
            [run.history.assign(variant=run.name, scenario=run.scenario) for run in runs], ignore_index=True
        )
        first = ["scenario", "variant"] if many else ["variant"]
        history = history[[*first, *[c for c in history.columns if c not in ("scenario", "variant")]]]
        atomic_write(args.out, lambda handle: history.to_csv(handle, index=False))
        out.write(f"history: {len(history)} rows written to {args.out}\n")
