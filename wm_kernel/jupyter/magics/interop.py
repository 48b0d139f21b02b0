"""``%wm_import FILE... [--format F] [--split REGEX]...``: another agent's log as an ImportedSession; ``%plan``.

``s = %wm_import logs/agent.jsonl`` stores the :class:`~wm_kernel.interop.imported.ImportedSession`
(history, diff, blame, cache simulation, usage, ``to_session()`` for the dashboard). Records that
cannot be read are listed below the cell (file, line, why) and the rest imports; a file that cannot
be imported at all is a UsageError naming it.

The imported log also becomes the current session (its turns replayed into a live Session, see
:mod:`wm_kernel.interop.live`), and the magic says so, so ``%cache``, ``%request``, ``%compose``,
``%wm_check`` and ``%wm_dashboard`` work on it; ``--keep-current`` leaves the current session as
it was. A log that cannot be replayed (no send time on every request) stays only the value, and
the line says why.

``%plan`` shows the current imported session's compaction plan (``ImportedSession.compaction_plan()``,
docs/planner.md): a table, one row per compaction, and the total saving; one line when the log has
no compaction.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from wm_kernel.display.tables import Table
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.interop.log_files import import_log
from wm_kernel.interop.readers import log_formats


@magics_class
class InteropMagics(Magics):
    """The magics of wm_kernel.interop."""

    @magic_arguments()
    @argument("file", nargs="+", help="log files, one conversation (quote paths with spaces)")
    @argument("--format", choices=log_formats(), help="the files' format (default: detected)")
    @argument(
        "--split",
        action="append",
        default=[],
        metavar="REGEX",
        help="also start a section at every match of REGEX; repeatable",
    )
    @argument(
        "--keep-current",
        action="store_true",
        help="leave the current session as it is (default: the imported log becomes it)",
    )
    @line_magic
    @no_var_expand
    def wm_import(self, line: str) -> ImportedSession:
        """Import request logs (Anthropic, OpenAI Chat/Responses, Claude Code, OTLP JSON)."""
        args = parse_argstring(self.wm_import, line)
        try:
            session = import_log(
                *map(_unquoted, args.file), format=args.format, rules=[_unquoted(rule) for rule in args.split]
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        for issue in session.errors:
            print(f"skipped {issue}")
        if not args.keep_current:
            print(make_current(session))
        return session

    @magic_arguments()
    @line_magic
    @no_var_expand
    def plan(self, line: str) -> Table | None:
        """The current imported session's compaction plan: when each compaction should have run,
        and the total saving (``ImportedSession.compaction_plan()``, docs/planner.md)."""
        parse_argstring(self.plan, line)
        imported = current_import()
        plan = imported.compaction_plan()
        name = imported.name or "the imported log"
        if plan.empty:
            print(f"{name}: no compaction in the log, nothing to plan")
            return None
        count = len(plan)
        print(
            f"{name}: {count} compaction{'s' if count != 1 else ''}, total saving "
            f"${plan.attrs['total_saving_usd']:,.6f} (a plan never costs more than what was recorded)"
        )
        table = Table(plan)
        table.attrs.update(plan.attrs)
        return table


def current_import() -> ImportedSession:
    """The imported log the current session replays; UsageError (one line) when it replays none."""
    from wm_kernel.interop.live import imported_of
    from wm_kernel.session import current_session

    found = imported_of(current_session())
    if not isinstance(found, ImportedSession):
        raise UsageError(
            "%plan: the current session is not an imported log; import one with %wm_import FILE "
            "(a Claude Code session brings its subagents, the compaction calls among them)"
        )
    return found


def make_current(imported: ImportedSession) -> str:
    """Replay ``imported`` into a live Session and make it the current one; the line that says
    what happened (or why the current session is unchanged)."""
    from wm_kernel.session import set_current_session
    from wm_kernel.tokens import family_of

    name = imported.name or "the imported log"
    models = [r.model for r in imported.requests if r.model]
    model: str | None = models[0] if models else None
    if model is not None:
        try:
            family_of(model)
        except ValueError:
            model = None  # a model no token counter knows: offline counts, as any Session's default
    try:
        live = imported.to_session(model=model)
    except (TypeError, ValueError) as exc:
        return f"the current session is unchanged: {name} cannot be replayed into a live session ({exc})"
    set_current_session(live)
    turns = len(imported.turns)
    return (
        f"current session: {name}, {turns} turn{'s' if turns != 1 else ''} replayed"
        f"{f', {model}' if model else ''} (%cache, %request, %wm_check and %wm_dashboard show it; "
        f"--keep-current keeps the previous session)"
    )


def _unquoted(word: str) -> str:
    """IPython's argument splitter keeps the quotes around a quoted word; a path or a regular
    expression is meant without them."""
    if len(word) > 1 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    return word


def load_interop_magics(shell: Any) -> None:
    """Register :class:`InteropMagics` on ``shell`` (once)."""
    if InteropMagics.__name__ not in shell.magics_manager.registry:
        shell.register_magics(InteropMagics(shell=shell))


def unload_interop_magics(shell: Any) -> None:
    """Remove what :func:`load_interop_magics` added."""
    manager = shell.magics_manager
    found = manager.registry.pop(InteropMagics.__name__, None)
    if found is not None:
        table = manager.magics["line"]
        for name in ("wm_import", "plan"):
            if getattr(table.get(name), "__self__", None) is found:
                del table[name]
        shell.configurables[:] = [c for c in shell.configurables if c is not found]
