"""``%turn``, ``%collapse`` and ``%trinket``: the magics that move the current Session on.

Registered with the core magics by ``%load_ext wm_kernel`` (:mod:`wm_kernel.jupyter.magics.working_memory`):
complete turns, end a segment, feed or switch one trinket through the commands it declares.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from wm_kernel.display import render
from wm_kernel.jupyter.magics.args import (
    current_session,
    parse_args,
    positive_int,
    resolve_trinket,
    strip_comment,
    unquote,
)


@magics_class
class DriveMagics(Magics):
    """Magics that drive the current Session: its turns, its segments, its trinkets' feeds."""

    # -- turns and segments
    @line_magic
    @no_var_expand
    @magic_arguments()
    @argument("n", nargs="?", default="1", help="How many turns to complete (default 1).")
    def turn(self, line: str = "") -> render.TurnReport:
        """Complete N turns (TurnCompletedEvent each) and show what expired."""
        args = parse_args(self.turn, line)
        from wm_kernel.session import MAX_TURNS_AT_ONCE

        n = positive_int(args.n, "the number of turns")
        if n > MAX_TURNS_AT_ONCE:
            raise UsageError(
                f"at most {MAX_TURNS_AT_ONCE:,} turns at once (got {n}); advance in "
                f"steps of {MAX_TURNS_AT_ONCE:,} or fewer"
            )
        session = current_session()
        first = session.turn + 1
        expired = session.advance_turn(n)
        return render.TurnReport(first, session.turn, expired)

    @line_magic
    @no_var_expand
    @magic_arguments()
    @argument("--tools", default="", metavar="A,B", help="Comma-separated names of the tools used in the segment.")
    @argument("summary", nargs="*", help="The segment's summary.")
    def collapse(self, line: str = "") -> None:
        """End the current segment (SegmentCollapsedEvent): stateful trinkets are flushed; one line
        says what was collapsed and cleared."""
        args = parse_args(self.collapse, line)
        tools = [t.strip() for t in args.tools.split(",") if t.strip()]
        session = current_session()
        number, turns = session.segment_number, session.segment_turn
        held = _items_held(session)
        summary = " ".join(args.summary)
        session.collapse_segment(summary=summary, tools_used=tools)
        left = _items_held(session)
        cleared = {name: count - left.get(name, 0) for name, count in held.items() if count > left.get(name, 0)}
        what = f"{summary!r}, " if summary else ""
        print(
            f"segment {number} collapsed ({what}{_count(turns, 'turn')}): {_cleared(cleared)}; "
            f"segment {session.segment_number} starts at turn {session.turn}"
        )

    # -- feeding trinkets
    @line_magic
    @no_var_expand
    def trinket(self, line: str = "") -> Any:
        """Feed or switch one trinket: ``%trinket NAME SUBCOMMAND [ARGS]``.

        The commands are the trinket's own (:meth:`EventAwareTrinket.commands`): every trinket has
        ``enable``, ``disable``, ``show``, ``refresh`` and ``style``, and declares more beside its
        feed methods (``%trinket peanutgallery add concern "Slow down." --ttl 2``); ``%trinket NAME``
        lists them. This magic only routes: argparse checks the arguments, the trinket runs.
        """
        try:
            # IPython's own splitter, as magic_arguments uses (not listed in its __all__)
            from IPython.utils.process import arg_split  # type: ignore[attr-defined]

            # the quotes IPython's splitter keeps around a token are not part of the value
            words = [str(unquote(word)) for word in arg_split(strip_comment(line))]
        except ValueError as exc:
            raise UsageError(f"cannot read the arguments: {exc}") from None
        if not words:
            raise UsageError("usage: %trinket NAME SUBCOMMAND [ARGS]; see %trinkets for the names")
        session = current_session()
        trinket = resolve_trinket(session, words[0])
        commands = trinket.commands()
        if len(words) == 1:
            return render.PromptText(
                "\n".join(f"%trinket {trinket.name} {c.name}: {c.help}" for c in commands.values())
            )
        command = commands.get(words[1])
        if command is None:
            raise UsageError(
                f"unknown sub-command {words[1]!r} for {trinket.name} (sub-commands: {', '.join(commands)})"
            )
        try:
            return command.run(trinket, words[2:])
        except (ValueError, TypeError) as exc:
            # argparse (a CommandError) and the trinkets validate before anything changes, so
            # either's refusal is a usage error
            raise UsageError(str(exc)) from None


def _items_held(session: Any) -> dict[str, int]:
    """How many items each stateful trinket that keeps a list of them holds now."""
    held = {}
    for name, trinket in session.trinkets.items():
        items = getattr(trinket, "state_items", None)
        if items is not None:
            held[name] = len(getattr(trinket, items))
    return held


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _cleared(cleared: dict[str, int]) -> str:
    """What a collapse cleared: "cleared 3 items (PeanutGalleryTrinket 2, GetContextTrinket 1)"."""
    if not cleared:
        return "no items to clear"
    each = ", ".join(f"{name} {count}" for name, count in cleared.items())
    return f"cleared {_count(sum(cleared.values()), 'item')} ({each})"
