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

``%plan`` shows the current session's plan beside its cache clock (``wm_kernel.display.plan_view``,
docs/planner.md): an imported log's compaction plan (``ImportedSession.compaction_plan()``: a row
per compaction, the total saving; one line when the log has no compaction), or the kit session's
own (``Session.plan()``: a segment collapse and a tool-result clear, now or at the next cold miss).
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from wm_kernel.display.plan_view import PlanView, plan_view
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
    @argument(
        "--summary",
        default="0",
        metavar="N",
        help="tokens of the summary a segment collapse adds (the kit's own session; default 0)",
    )
    @argument(
        "--model",
        default=None,
        metavar="M",
        help="the model the kit's own session is simulated on (default: the session's, as %%cache)",
    )
    @line_magic
    @no_var_expand
    def plan(self, line: str) -> PlanView | None:
        """The current session's plan beside its cache clock: an imported log's compactions (when
        each should have run, the total saving; ``ImportedSession.compaction_plan()``), or the kit
        session's segment collapse and tool-result clear now or at the next cold miss
        (``Session.plan()``); docs/planner.md."""
        from wm_kernel.interop.live import imported_of
        from wm_kernel.session import current_session

        args = parse_argstring(self.plan, line)
        summary = _count(args.summary, "--summary")
        session = current_session()
        imported = imported_of(session)
        if isinstance(imported, ImportedSession):
            view = plan_view(imported)
            if view.plan.empty:
                print(view.headline)
                return None
            return view
        try:
            return plan_view(session, summary_tokens=summary, model=args.model)
        except ValueError as exc:
            raise UsageError(f"%plan: {exc}") from None


def _count(text: str, name: str) -> int:
    """A non-negative int typed as ``text``; UsageError naming ``name`` otherwise."""
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError(f"{name} takes a non-negative number of tokens, got {text!r}")
    return value


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
