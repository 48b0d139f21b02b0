"""``%%wm_check`` (prompt assertions as a pass/fail table) and ``%wm_check stability`` (the
cache-stability checker), registered by ``%load_ext wm_kernel``.

A ``%%wm_check`` cell holds one assertion per line (blank lines and ``# comments`` are skipped),
checked against the current session (or ``--session NAME``, a Session in the notebook)::

    %%wm_check
    section_present peanutgallery_guidance --turns 0..2
    placement_under system 2000
    cached_prefix_stable --turns 0..5
    hit_rate claude-sonnet-4-6 0.8
    no_markup_escape "</guidance><x>"

Every line is read before any runs: a line that cannot be read is one UsageError naming it. The
table shows each line as typed, pass or FAIL, and the assertion's message.
"""

from __future__ import annotations

import argparse
import html
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from wm_kernel.jupyter.magics.args import strip_comment
from wm_kernel.testing import assertions
from wm_kernel.testing.assertions import unrecorded_turns
from wm_kernel.testing.perturbations import CHECKS
from wm_kernel.testing.report import ROW_TINTS
from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.style import scrolling

if TYPE_CHECKING:
    from wm_kernel.session import Session

CHECK_MAGIC_NAMES: dict[str, tuple[str, ...]] = {"line": ("wm_check",), "cell": ("wm_check",)}


class _LineParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit; a cell line is a UsageError
        raise ValueError(message)


def _turns(text: str) -> tuple[int, int]:
    first, sep, last = text.partition("..")
    try:
        turns = (int(first), int(last if sep else first))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected turns as A..B (or one turn), got {text!r}") from None
    if turns[0] < 0 or turns[0] > turns[1]:
        raise argparse.ArgumentTypeError(f"expected turns A..B with 0 <= A <= B, got {text!r}")
    return turns


def _rate(text: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate such as 0.8 or 80%, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a rate is between 0 and 1 (0% and 100%), got {text!r}")
    return value


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parsers: dict[str, argparse.ArgumentParser] = {}

    def add(name: str) -> argparse.ArgumentParser:
        parser = _LineParser(prog=name, add_help=False)
        parsers[name] = parser
        return parser

    p = add("section_present")
    p.add_argument("section")
    p.add_argument("--turns", type=_turns)
    p = add("placement_under")
    p.add_argument("placement", choices=assertions.PLACEMENT_TEXTS)
    p.add_argument("tokens", type=int)
    p.add_argument("--turns", type=_turns)
    p.add_argument("--model")
    p = add("cached_prefix_stable")
    p.add_argument("--turns", type=_turns)
    p = add("hit_rate")
    p.add_argument("model")
    p.add_argument("at_least", type=_rate)
    p = add("no_markup_escape")
    p.add_argument("untrusted", nargs="+")
    p.add_argument("--turns", type=_turns)
    return parsers


def _runner(kind: str, args: argparse.Namespace) -> Any:
    if kind == "section_present":
        return lambda s: assertions.assert_section_present(s, args.section, turns=args.turns)
    if kind == "placement_under":
        return lambda s: assertions.assert_placement_under(
            s, args.placement, args.tokens, turns=args.turns, model=args.model
        )
    if kind == "cached_prefix_stable":
        return lambda s: assertions.assert_cached_prefix_stable(s, turns=args.turns)
    if kind == "hit_rate":
        return lambda s: assertions.assert_hit_rate(s, args.model, args.at_least)
    return lambda s: assertions.assert_no_markup_escape(s, args.untrusted, turns=args.turns)


@dataclass(frozen=True)
class CellLine:
    """One assertion line of a ``%%wm_check`` cell: as typed, where, and what checks it."""

    text: str
    number: int
    kind: str
    turns: tuple[int, int] | None
    run: Any


def parse_cell(cell: str) -> list[CellLine]:
    """Each assertion line of a ``%%wm_check`` cell, read (UsageError naming a line that cannot be)."""
    parsers = _parsers()
    out = []
    for number, line in enumerate(cell.splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            words = shlex.split(text, comments=True)
        except ValueError as exc:
            raise UsageError(f"line {number}: cannot read {text!r}: {exc}") from None
        parser = parsers.get(words[0]) if words else None
        if parser is None:
            raise UsageError(f"line {number}: unknown assertion {words[0]!r} (assertions: {', '.join(parsers)})")
        try:
            args = parser.parse_args(words[1:])
        except ValueError as exc:
            raise UsageError(f"line {number} ({words[0]}): {exc}") from None
        out.append(CellLine(text, number, words[0], getattr(args, "turns", None), _runner(words[0], args)))
    if not out:
        raise UsageError("%%wm_check needs at least one assertion line (e.g. section_present base_prompt)")
    return out


@dataclass(frozen=True)
class CheckRow:
    check: str
    passed: bool
    message: str


class CheckTable:
    """The outcome of a ``%%wm_check`` cell: one row per assertion line."""

    def __init__(self, rows: list[CheckRow]) -> None:
        self.rows = rows

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rows)

    def __repr__(self) -> str:
        failed = sum(not r.passed for r in self.rows)
        width = max(len(r.check) for r in self.rows)
        lines = [f"{len(self.rows)} checks: {len(self.rows) - failed} passed, {failed} failed"]
        for r in self.rows:
            lines.append(f"  {'pass' if r.passed else 'FAIL'}  {r.check:<{width}}  {r.message}".rstrip())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        body = "".join(
            f'<tr style="background:{ROW_TINTS["pass" if r.passed else "fail"]}"><td>{"pass" if r.passed else "FAIL"}'
            f"</td><td><code>{html.escape(r.check)}</code></td><td>{html.escape(r.message)}</td></tr>"
            for r in self.rows
        )
        return no_math(
            scrolling(
                '<table class="wm-check"><thead><tr><th>result</th><th>check</th><th>message</th></tr>'
                f"</thead><tbody>{body}</tbody></table>"
            )
        )


@magics_class
class CheckMagics(Magics):
    """``%%wm_check`` and ``%wm_check stability``."""

    @line_cell_magic
    @no_var_expand
    @magic_arguments()
    @argument("command", nargs="?", help="'stability' (line form only).")
    @argument("--session", metavar="NAME", help="A Session in the notebook (default: the current one).")
    @argument(
        "--scenario",
        metavar="NAME",
        help="stability: a Scenario or a ScenarioRecorder (record(session)) in the notebook "
        "(default: the current session's own recording, or the log it was imported from).",
    )
    @argument(
        "--trinket",
        action="append",
        default=[],
        metavar="NAME=VARIABLE",
        help="stability: the class of a trinket that is not built in (default: the notebook's "
        "class of the trinket's name).",
    )
    @argument("--skip", action="append", default=[], metavar="CHECK", help="stability: leave a check out.")
    @argument("--only", action="append", default=None, metavar="CHECK", help="stability: run only this check.")
    @argument("--model", default="claude-sonnet-4-6", help="stability: the model costs are priced on.")
    @argument("--turns-per-hour", type=int, default=30, metavar="N", help="stability: requests an hour.")
    @argument("--scope", default="cached", help="stability: cached, system or all sections.")
    @argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="stability: per replay.")
    @argument("--max-turns", type=int, default=None, metavar="N", help="stability: last turn checked.")
    def wm_check(self, line: str = "", cell: str | None = None) -> Any:
        """Prompt assertions on the current session as a table (cell), or the stability checker on
        the current session (``%wm_check stability``; ``--scenario NAME`` for a Scenario)."""
        try:
            args = parse_argstring(self.wm_check, strip_comment(line))
        except ValueError as exc:
            raise UsageError(f"cannot read the arguments: {exc}") from None
        if cell is not None:
            if args.command is not None:
                raise UsageError(f"%%wm_check takes assertion lines in the cell, not {args.command!r}")
            return self._check_cell(cell, self._session(args.session))
        if args.command not in (None, "stability"):
            raise UsageError(
                f"%wm_check: unknown command {args.command!r}: %wm_check stability runs the stability "
                "checker; %%wm_check (a cell) runs assertions"
            )
        if args.command != "stability":
            raise UsageError(
                "%wm_check stability runs the stability checker on the current session "
                "(or --scenario NAME); %%wm_check (a cell) runs assertions"
            )
        return self._stability(args)

    def _stability(self, args: argparse.Namespace) -> Any:
        """``%wm_check stability``: the checker on a scenario, the session's own recording or the
        log it was imported from."""
        shell = self.shell
        assert shell is not None
        for name in [*args.skip, *(args.only or [])]:
            if name not in CHECKS:
                raise UsageError(f"unknown check {name!r} (checks: {', '.join(CHECKS)})")
        from wm_kernel.testing.stability import check_stability

        if args.scenario is not None:
            if args.scenario not in shell.user_ns:
                raise UsageError(f"no variable {args.scenario!r} in the notebook")
            subject = shell.user_ns[args.scenario]
        else:
            subject = self._replayable(self._session(args.session), args)
        from wm_kernel.interop.imported import ImportedSession

        if isinstance(subject, ImportedSession) and args.scenario is None:
            # an imported log: checked request against request (only the pricing options apply)
            try:
                return check_stability(
                    subject,
                    model=args.model,
                    turns_per_hour=args.turns_per_hour,
                    scope=args.scope,
                    max_turns=args.max_turns,
                )
            except (TypeError, ValueError) as exc:
                raise UsageError(str(exc)) from None
        try:
            return check_stability(
                subject,
                factories=self._factories(subject, args.trinket),
                skip=args.skip,
                only=args.only,
                model=args.model,
                turns_per_hour=args.turns_per_hour,
                scope=args.scope,
                timeout=args.timeout,
                max_turns=args.max_turns,
            )
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None

    @staticmethod
    def _check_cell(cell: str, session: Session) -> CheckTable:
        """The table of a ``%%wm_check`` cell's assertions on ``session``."""
        checks = parse_cell(cell)
        # a turn range the session never had is a mistake in the cell, not a failed check: said
        # before any line runs
        for check in checks:
            missing = None if check.turns is None else unrecorded_turns(session.recorder.turns, check.turns)
            if missing is not None:
                first, last = check.turns or (0, 0)
                raise UsageError(f"line {check.number} ({check.kind}): --turns {first}..{last}: {missing}")
        rows = []
        for check in checks:
            try:
                check.run(session)
            except AssertionError as exc:
                rows.append(CheckRow(check.text, False, str(exc)))
            except (TypeError, ValueError) as exc:
                rows.append(CheckRow(check.text, False, f"{type(exc).__name__}: {exc}"))
            else:
                rows.append(CheckRow(check.text, True, ""))
        return CheckTable(rows)

    @staticmethod
    def _replayable(session: Session, args: argparse.Namespace) -> Any:
        """What the stability checker replays of ``session``: the log it was imported from, else
        the recording it has kept since it was built; UsageError saying why not and what to do."""
        from wm_kernel.experiments.recorder import session_recording
        from wm_kernel.interop.live import imported_of

        imported = imported_of(session)
        if imported is not None:
            if args.skip or args.only is not None or args.trinket:
                raise UsageError(
                    "an imported log is checked request against request (check "
                    "'logged_prefix'): --skip, --only and --trinket choose perturbations "
                    "of a scenario; leave them out"
                )
            return imported
        try:
            return session_recording(session)
        except ValueError as exc:
            raise UsageError(
                f"%wm_check stability: {exc}. Start a session that records from its first "
                f"turn (%wm_session --clock 2026-11-30T09:00:00+00:00, a ManualClock), or "
                f"pass --scenario NAME (a Scenario in the notebook)"
            ) from None

    def _factories(self, subject: Any, specs: list[str]) -> dict[str, Any]:
        """Trinket classes for the scenario's names that are not built in: ``--trinket NAME=VAR``,
        else the notebook's class of that name."""
        from trinkets import BUILTIN_NAMES
        from trinkets.base import EventAwareTrinket
        from wm_kernel.experiments.scenario import Scenario

        shell = self.shell
        assert shell is not None
        factories: dict[str, Any] = {}
        for spec in specs:
            name, sep, variable = spec.partition("=")
            if not sep or not name or variable not in shell.user_ns:
                raise UsageError(f"--trinket {spec!r}: expected NAME=VARIABLE, a trinket class in the notebook")
            factories[name] = shell.user_ns[variable]
        if isinstance(subject, Scenario):
            for name in subject.all_trinkets:
                found = shell.user_ns.get(name)
                if (
                    name not in factories
                    and name not in BUILTIN_NAMES
                    and isinstance(found, type)
                    and issubclass(found, EventAwareTrinket)
                ):
                    factories[name] = found
        return factories

    def _session(self, name: str | None) -> Session:
        from wm_kernel.session import Session, current_session

        if name is None:
            return current_session()
        shell = self.shell
        assert shell is not None
        found = shell.user_ns.get(name)
        if not isinstance(found, Session):
            raise UsageError(f"--session {name!r}: no Session of that name in the notebook")
        return found


def load_check_magics(shell: Any) -> None:
    """Register :class:`CheckMagics` on ``shell`` (once)."""
    if shell.magics_manager.registry.get(CheckMagics.__name__) is None:
        shell.magics_manager.register(CheckMagics(shell=shell))


def unload_check_magics(shell: Any) -> None:
    """Remove what :func:`load_check_magics` registered."""
    manager = shell.magics_manager
    magics = manager.registry.pop(CheckMagics.__name__, None)
    if magics is None:
        return
    for kind, names in CHECK_MAGIC_NAMES.items():
        for name in names:
            if getattr(manager.magics[kind].get(name), "__self__", None) is magics:
                del manager.magics[kind][name]
    shell.configurables[:] = [c for c in shell.configurables if c is not magics]
