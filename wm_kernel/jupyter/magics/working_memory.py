"""IPython magics that drive the notebook's current Session: ``%compose``, ``%turn``, ``%trinket``...

``%load_ext wm_kernel`` registers :class:`WorkingMemoryMagics` on the shell, makes sure a current
Session exists (``wm_kernel.current_session()``), adds tab completion for trinket and section names,
and links the magics' config traits to the rendering options. ``%unload_ext wm_kernel`` undoes every
one of these. Loading twice adds nothing twice.

Every user mistake (an unknown option, an unbalanced quote, a bad number, an unknown trinket or
section, an empty required argument) is a plain ``UsageError`` raised before anything changes, so the
session is exactly as it was.

What the user types reaches the magics as typed: IPython's expansion of ``$name`` and ``{expr}``
in a magic's line is turned off for each of them (``no_var_expand``), since prompt text is full of
braces and dollar amounts, and a braced expression would otherwise run as Python.

The magics always act on ``current_session()``, so ``wm_kernel.set_current_session(Session(...))`` in a
cell (or ``%wm_session``) redirects them.
"""

from __future__ import annotations

import json
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Enum, Int, TraitError, link

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.core.prompt_dict import PLACEMENTS
from wm_kernel.display import render
from wm_kernel.jupyter.magics.args import (
    current_session,
    help_requested,
    known_sections,
    non_negative_int,
    open_valkey_store,
    parse_args,
    positive_int,
    required,
    resolve_trinket,
    strip_comment,
    unknown_section_message,
    unquote,
)
from wm_kernel.jupyter.magics.tables import events_frame, prompt_diff, session_line, trinkets_frame
from wm_kernel.stores.server_url import redact_urls

MAGIC_NAMES: dict[str, tuple[str, ...]] = {
    "line": (
        "compose",
        "turn",
        "collapse",
        "trinkets",
        "trinket",
        "wm_events",
        "wm_dashboard",
        "wm_session",
        "cache",
        "request",
    ),
    "cell": ("compose",),
}
# the tables the magics show live in magics/tables.py
__all__ = ["MAGIC_NAMES", "WorkingMemoryMagics", "load_extension", "loaded_magics", "unload_extension"]

# -- the magics --------------------------------------------------------------------------------


@magics_class
class WorkingMemoryMagics(Magics):
    """Magics that compose, advance and inspect the notebook's current Session."""

    default_view = Enum(
        render.VIEWS,
        default_value="html",
        help="How composed prompts show: 'html' (rich in notebooks), 'text', or "
        "'raw' (the exact text the model receives).",
    ).tag(config=True)
    large_section = Int(200_000, min=1, help="Sections longer than this many characters show as a preview.").tag(
        config=True
    )
    preview_chars = Int(2_000, min=1, help="How many characters the preview of a large section shows.").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self._links = [
            link((self, "default_view"), (render.options, "view")),
            link((self, "large_section"), (render.options, "large_section")),
            link((self, "preview_chars"), (render.options, "preview_chars")),
        ]
        self._replaced: dict[tuple[str, str], Any] = {}
        self._hooks: list[str] = []
        # the session already told that it greets "friend" on the wall clock (told once each)
        self._defaults_noted: Any = None

    # -- %compose
    @line_cell_magic
    @no_var_expand
    @magic_arguments()
    @argument("--section", "-s", action="append", metavar="NAME", help="Show only this section (repeat for several).")
    @argument("--placement", "-p", metavar="PLACEMENT", help="Show only one placement: " + ", ".join(PLACEMENTS) + ".")
    @argument("--raw", action="store_true", help="The exact text the model receives.")
    @argument("--diff", action="store_true", help="What changed since the previous compose.")
    @argument("--json", action="store_true", help="The prompt as JSON (the original's five keys).")
    @argument("--last", action="store_true", help="Show the last composed prompt; do not compose.")
    @argument("--blame", action="store_true", help="Colour each character by the section that wrote it, with a legend.")
    def compose(self, line: str = "", cell: str | None = None) -> Any:
        """Compose the current session's prompt and return it (``p = %compose`` keeps it).

        As a cell magic, the cell body becomes the base prompt first.
        """
        args = parse_args(self.compose, line)
        session = current_session()
        modes = [flag for flag in ("raw", "diff", "json", "blame") if getattr(args, flag)]
        if len(modes) > 1:
            raise UsageError(f"use one of --raw, --diff, --json, --blame (got --{' and --'.join(modes)})")
        for whole in ("diff", "blame"):
            if getattr(args, whole) and (args.section or args.placement):
                raise UsageError(f"--{whole} shows the whole prompt; drop --section/--placement")
        if args.placement is not None and args.placement not in PLACEMENTS:
            raise UsageError(f"unknown placement {args.placement!r} (placements: {', '.join(PLACEMENTS)})")
        if args.section is not None:
            known = known_sections(session)
            for name in args.section:
                required(name, "--section")
                if name not in known:
                    raise UsageError(unknown_section_message(session, name))
        base_prompt = None
        if cell is not None:
            if args.last:
                raise UsageError("%%compose composes the cell's prompt; --last does not apply")
            base_prompt = required(cell.strip("\n"), "the cell body (the base prompt)")
        if args.last:
            composed = session.composed
            if composed is None:
                raise UsageError("nothing composed yet; run %compose first")
        else:
            composed = session.compose(base_prompt)
        self._note_defaults(session)
        return self._present(session, composed, args)

    def _note_defaults(self, session: Any) -> None:
        """Say once per session when its prompt greets "friend" or reads the wall clock (the
        defaults of ``%load_ext`` and of a bare ``%wm_session``), and how to choose instead."""
        from wm_kernel.core.clock import ManualClock

        if session is self._defaults_noted:
            return
        self._defaults_noted = session
        # "friend" only where the prompt greets someone: a replayed log's prompt has no {first_name}
        unnamed = not (session.profile.first_name or "").strip() and "{first_name}" in session.base_prompt
        wall_clock = not isinstance(session.clock, ManualClock)
        if not (unnamed or wall_clock):
            return
        said = " and ".join(
            filter(None, ['greets "friend"' if unnamed else "", "reads the wall clock" if wall_clock else ""])
        )
        print(
            f"note: this session's prompt {said}; choose with "
            f"%wm_session --first-name Ada --clock 2026-11-30T09:00:00+00:00"
        )

    def _present(self, session: Any, composed: ComposedPrompt, args: Any) -> Any:
        placement_of = session.layout.placement_of
        if args.diff:
            return prompt_diff(composed.previous, composed)
        if args.blame:
            return render.BlameView(composed)
        if args.json:
            return render.PromptText(self._json(composed, args))
        if args.raw:
            return render.PromptText(self._raw_text(composed, args))
        if args.section or args.placement:
            return render.PromptView(composed, names=args.section, placement=args.placement, placement_of=placement_of)
        return composed

    @staticmethod
    def _raw_text(composed: ComposedPrompt, args: Any) -> str:
        # the whole text, however large: the PromptText previews it when shown
        if args.section:
            return render.join_raw(
                [
                    (r.name, r.content)
                    for r in composed.sections
                    if r.name in args.section and (args.placement is None or r.placement == args.placement)
                ]
            )
        return render.join_raw(render.raw_parts(composed, args.placement))

    @staticmethod
    def _json(composed: ComposedPrompt, args: Any) -> str:
        if args.section:
            data: Any = [
                {
                    "name": r.name,
                    "placement": r.placement,
                    "trinket": r.trinket,
                    "cache_policy": r.cache_policy,
                    "chars": r.chars,
                    "content": r.content,
                }
                for r in composed.sections
                if r.name in args.section
            ]
        elif args.placement:
            keys = {
                "system": ("cached_content", "non_cached_content"),
                "conversation_prefix": ("conversation_prefix_items",),
                "post_history": ("post_history_items",),
                "notification": ("notification_center",),
            }[args.placement]
            data = {key: composed[key] for key in keys}
        else:
            data = composed.as_dict()
        return json.dumps(data, ensure_ascii=False, indent=2)

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
        """End the current segment (SegmentCollapsedEvent): stateful trinkets are flushed."""
        args = parse_args(self.collapse, line)
        tools = [t.strip() for t in args.tools.split(",") if t.strip()]
        current_session().collapse_segment(summary=" ".join(args.summary), tools_used=tools)

    # -- inspection
    @line_magic
    @no_var_expand
    def trinkets(self, line: str = "") -> Any:
        """A DataFrame of the registered trinkets: section, placement, state, size, error."""
        if strip_comment(line).strip():
            raise UsageError(f"%trinkets takes no arguments, got {line.strip()!r}")
        return trinkets_frame(current_session())

    @line_magic
    @no_var_expand
    @magic_arguments()
    @argument("--last", default=None, metavar="N", help="Only the last N events.")
    @argument(
        "--type",
        dest="event_type",
        default=None,
        metavar="EVENT",
        help="Only events of this type (e.g. UpdateTrinketEvent).",
    )
    @argument("--failures", action="store_true", help="Only events a subscriber failed on.")
    @argument("--clear", action="store_true", help="Empty the log (after showing nothing).")
    def wm_events(self, line: str = "") -> Any:
        """The event bus log as a DataFrame, one row per published event, in causal order."""
        args = parse_args(self.wm_events, line)
        session = current_session()
        last = positive_int(args.last, "--last") if args.last is not None else None
        if args.event_type is not None:
            from wm_kernel.core.events import EVENT_TYPES

            if args.event_type not in EVENT_TYPES:
                raise UsageError(f"unknown event type {args.event_type!r} (types: {', '.join(EVENT_TYPES)})")
        if args.clear:
            if last is not None or args.event_type or args.failures:
                raise UsageError("--clear takes no other option")
            session.bus.clear_log()
            return None
        return events_frame(session, last, args.event_type, args.failures)

    @line_magic
    @no_var_expand
    def request(self, line: str = "") -> Any:
        """The whole request of a turn against the model's window (``%request --help``)."""
        from wm_kernel.jupyter.magics.request import PARSER, request_magic, request_usage

        if help_requested(line):
            print(request_usage())
            return None
        return request_magic(current_session(), parse_args(PARSER, line))

    @line_magic
    @no_var_expand
    @magic_arguments()
    @argument(
        "model",
        nargs="?",
        default=None,
        help="A model id of wm_kernel.cachesim.MODELS (default: the session's model, else claude-sonnet-4-6).",
    )
    @argument(
        "--breakpoints",
        default="auto",
        metavar="A,B",
        help="'auto' (as to_anthropic sends) or comma-separated sections, system, last_user (each optionally name:1h).",
    )
    @argument("--tools", default="0", metavar="N", help="Tokens of tool definitions before the system.")
    @argument(
        "--exchange",
        default=None,
        metavar="USER,REPLY",
        help="Tokens of the exchange assumed for a turn that recorded none (default 100,400); a "
        "turn that sent, or replayed, carries its recorded messages.",
    )
    @argument(
        "--wire",
        default=None,
        metavar="W",
        help="The wire dialect the requests go out on (anthropic, openai, mira...; default: "
        "the session's, else the model's provider's).",
    )
    @argument("--no-advice", action="store_true", help="Only the per-turn table and totals.")
    def cache(self, line: str = "") -> Any:
        """Simulate the recorded turns against MODEL's prompt-cache rules, with advice."""
        from wm_kernel.display.cache_view import CacheView

        args = parse_args(self.cache, line)
        tools = non_negative_int(args.tools, "--tools")
        breakpoints = (
            "auto" if args.breakpoints == "auto" else [b.strip() for b in args.breakpoints.split(",") if b.strip()]
        )
        session = current_session()
        if args.wire is not None:
            from wm_kernel.dialects.registry import dialect_names, known_name

            if not known_name(args.wire):
                raise UsageError(f"unknown wire {args.wire!r}; wires: {', '.join(dialect_names())}")
        if session.history.empty:  # nothing recorded: compose first, as %compose would
            self._check_cache_arguments(session, args.model, breakpoints)
            session.compose()
            self._note_defaults(session)
        options: dict[str, Any] = {}
        if args.exchange is not None:
            parts = [p.strip() for p in args.exchange.split(",")]
            if len(parts) != 2:
                raise UsageError(f"--exchange takes USER,REPLY tokens (two numbers), got {args.exchange!r}")
            options["exchange"] = (non_negative_int(parts[0], "--exchange"), non_negative_int(parts[1], "--exchange"))
        try:
            simulation = session.cache_simulation(
                args.model, breakpoints=breakpoints, tools_tokens=tools, wire=args.wire, **options
            )
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        return CacheView(simulation, None if args.no_advice else simulation.advise())

    @staticmethod
    def _check_cache_arguments(session: Any, model: str | None, breakpoints: Any) -> None:
        """Refuse a model or breakpoint ``%cache`` could not use before it composes (so a mistake
        changes nothing)."""
        from wm_kernel.cachesim.models import get_model
        from wm_kernel.cachesim.requests import SPECIAL_BREAKPOINTS

        try:
            if model is not None:  # None: the session's own model
                get_model(model)
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        if breakpoints != "auto":
            known = set(known_sections(session)) | set(SPECIAL_BREAKPOINTS)
            for item in breakpoints:
                name = item.partition(":")[0]
                if name not in known:
                    raise UsageError(
                        f"unknown breakpoint {name!r}; use a section "
                        f"({', '.join(known_sections(session))}) or one of "
                        f"{', '.join(SPECIAL_BREAKPOINTS)}"
                    )

    @line_magic
    @no_var_expand
    def wm_dashboard(self, line: str = "") -> None:
        """Display the live dashboard of the current session (widgets: in a notebook only)."""
        if strip_comment(line).strip():
            raise UsageError(f"%wm_dashboard takes no arguments, got {line.strip()!r}")
        if getattr(self.shell, "kernel", None) is None:
            raise UsageError(
                "%wm_dashboard needs a notebook (JupyterLab or Notebook, where widgets "
                "show); in a terminal use %compose, %trinkets, %wm_events and %cache"
            )
        from IPython.display import display

        from wm_kernel.jupyter.dashboard.widget import Dashboard

        display(Dashboard(current_session()))

    @line_magic
    @no_var_expand
    @magic_arguments()
    @argument(
        "--clock",
        default=None,
        metavar="ISO",
        help="Start a ManualClock at this instant (e.g. 2026-11-30T09:00:00+00:00).",
    )
    @argument("--first-name", default=None, help="The user's first name.")
    @argument("--timezone", default="UTC", help="The user's IANA time zone.")
    @argument("--user-context", default="", help="The user portrait ({user_context}).")
    @argument("--base-prompt", default=None, help="The base prompt template.")
    @argument(
        "--trinkets",
        default=None,
        metavar="A,B",
        help="Built-in trinkets to register (comma-separated class names; 'none' for none).",
    )
    @argument(
        "--layout",
        default="default",
        choices=("default", "original"),
        help="The layout: this project's default or the original's.",
    )
    @argument(
        "--store",
        default=None,
        metavar="URL",
        help="Keep state on a Valkey/Redis server (valkey://host:port/db) in the original's "
        "layout, instead of in memory.",
    )
    @argument("--user-id", default="notebook", help="Whose state to use (trinkets:{user_id}).")
    @argument(
        "--read-only",
        action="store_true",
        help="With --store: never write to the server; show the sections stored there "
        "(no built-in trinkets unless --trinkets names some).",
    )
    @argument(
        "--model",
        default=None,
        help="The model the prompt is for: picks the token counter (e.g. claude-sonnet-4-6, "
        "gpt-5.4); default none, offline cl100k counts.",
    )
    def wm_session(self, line: str = "") -> None:
        """Start a fresh current Session (e.g. with a ManualClock, for deterministic notebooks)."""
        from trinkets import BUILTIN_NAMES
        from wm_kernel.core.clock import ManualClock
        from wm_kernel.core.composer import Layout
        from wm_kernel.core.profile import Profile
        from wm_kernel.session import Session, set_current_session

        try:
            args = parse_args(self.wm_session, line)
        except UsageError as exc:  # argparse echoes what it could not place: a URL, perhaps
            raise UsageError(redact_urls(str(exc))) from None
        kwargs: dict[str, Any] = {}
        try:
            if args.clock is not None:
                kwargs["clock"] = ManualClock(required(args.clock, "--clock"))
            kwargs["profile"] = Profile(
                first_name=args.first_name or None, timezone=args.timezone, user_context=args.user_context
            )
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc)) from None
        if args.base_prompt is not None:
            kwargs["base_prompt"] = required(args.base_prompt, "--base-prompt")
        if args.trinkets is not None:
            names = [n.strip() for n in args.trinkets.split(",") if n.strip()]
            if names == ["none"]:
                names = []
            elif not names:
                raise UsageError("--trinkets needs class names (or 'none')")
            unknown = [n for n in names if n not in BUILTIN_NAMES]
            if unknown:
                raise UsageError(f"unknown built-in trinket {unknown[0]!r} (built-in: {', '.join(BUILTIN_NAMES)})")
            import trinkets as builtin

            kwargs["trinkets"] = [getattr(builtin, n) for n in names]
        kwargs["layout"] = Layout.original() if args.layout == "original" else Layout.default()
        if not args.user_id.strip():
            raise UsageError("--user-id needs a non-empty value")
        kwargs["user_id"] = args.user_id
        if args.model is not None:
            from wm_kernel.tokens import family_of

            try:
                family_of(required(args.model, "--model"))
            except (TypeError, ValueError) as exc:
                raise UsageError(str(exc)) from None
            kwargs["model"] = args.model
        if args.read_only and args.store is None:
            raise UsageError("--read-only needs --store (a memory store has nothing to protect)")
        if args.store is not None:
            if args.read_only and args.trinkets is None:
                kwargs["trinkets"] = []
            kwargs["store"] = open_valkey_store(args.store, read_only=args.read_only)
        try:
            session = Session(**kwargs)
            if args.read_only:
                from trinkets.stored_section import mirror_stored_sections

                mirror_stored_sections(session)
        except (ValueError, TypeError, ConnectionError, PermissionError) as exc:
            # the server refused the user's sections, or holds them as another type
            raise UsageError(redact_urls(str(exc))) from None
        set_current_session(session)
        print(session_line(session, args.layout))

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

    # -- completion
    def _complete(self, shell: Any, event: Any) -> list[str]:
        """Tab completion for ``%trinket`` (names, sub-commands) and ``%compose`` (sections,
        placements). Never raises: a completer error would break typing."""
        try:
            return self._completions(event.text_until_cursor if hasattr(event, "text_until_cursor") else event.line)
        except Exception:
            return []

    def _completions(self, text: str) -> list[str]:
        from wm_kernel.session import current_session

        words = text.split()
        if text.endswith((" ", "\t")):
            words.append("")
        if not words:
            return []
        command = words[0].lstrip("%")
        session = current_session()
        if command == "trinket":
            if len(words) == 2:
                return list(session.trinkets)
            if len(words) == 3:
                try:
                    trinket = resolve_trinket(session, words[1])
                except UsageError:
                    return []
                return list(trinket.commands())
            return self._argument_completions(session, words)
        if command == "compose" and len(words) >= 3:
            if words[-2] in ("--section", "-s"):
                return known_sections(session)
            if words[-2] in ("--placement", "-p"):
                return list(PLACEMENTS)
        return []

    @staticmethod
    def _argument_completions(session: Any, words: list[str]) -> list[str]:
        try:
            trinket = resolve_trinket(session, words[1])
        except UsageError:
            return []
        command = trinket.commands().get(words[2])
        return command.completions(trinket, words[3:]) if command is not None else []

    # -- install / uninstall
    def install(self) -> None:
        """Register these magics, the completers and the config hook on the shell."""
        shell = self.shell
        assert shell is not None, "WorkingMemoryMagics needs a shell"
        manager = shell.magics_manager
        for kind, names in MAGIC_NAMES.items():
            for name in names:
                previous = manager.magics[kind].get(name)
                if previous is not None:
                    self._replaced[(kind, name)] = previous
        manager.register(self)  # Magics.__init__ already listed it in shell.configurables
        for key in ("%trinket", "%compose", "%%compose"):
            shell.set_hook("complete_command", self._complete, str_key=key)
            self._hooks.append(key)

    def uninstall(self) -> None:
        """Remove every magic, completer, config entry and trait link :meth:`install` added."""
        shell = self.shell
        assert shell is not None, "WorkingMemoryMagics needs a shell"
        manager = shell.magics_manager
        for kind, names in MAGIC_NAMES.items():
            table = manager.magics[kind]
            for name in names:
                current = table.get(name)
                if current is not None and getattr(current, "__self__", None) is self:
                    del table[name]
                    if (kind, name) in self._replaced:
                        table[name] = self._replaced.pop((kind, name))
        if manager.registry.get(type(self).__name__) is self:
            del manager.registry[type(self).__name__]
        configurables: list[Any] = shell.configurables
        configurables[:] = [c for c in configurables if c is not self]
        dispatcher = shell.strdispatchers.get("complete_command")
        for key in self._hooks:
            chain = dispatcher.strs.get(key) if dispatcher is not None else None
            if dispatcher is None or chain is None:
                continue
            chain.chain = [(p, f) for p, f in chain.chain if getattr(f, "__func__", None) != self._complete]
            if not chain.chain:
                del dispatcher.strs[key]
        self._hooks.clear()
        for trait_link in self._links:
            trait_link.unlink()
        self._links.clear()
        render.options.reset()


def loaded_magics(shell: Any) -> WorkingMemoryMagics | None:
    """The WorkingMemoryMagics installed on ``shell``, if any."""
    found = shell.magics_manager.registry.get(WorkingMemoryMagics.__name__)
    return found if isinstance(found, WorkingMemoryMagics) else None


def load_extension(shell: Any) -> None:
    """Install the magics on ``shell`` (once) and make sure a current Session exists."""
    if loaded_magics(shell) is None:
        configurables = list(shell.configurables)
        try:
            magics = WorkingMemoryMagics(shell=shell)
        except TraitError as exc:
            shell.configurables[:] = configurables
            render.options.reset()
            raise UsageError(
                f"wm_kernel: bad configuration: {exc} (fix it with %config WorkingMemoryMagics.<name> = <value>)"
            ) from None
        magics.install()
    from wm_kernel.jupyter.magics.interop import load_interop_magics

    load_interop_magics(shell)
    from wm_kernel.jupyter.magics.check import load_check_magics

    load_check_magics(shell)
    from wm_kernel.jupyter.magics.ask import load_ask_magics  # %ask (wm_kernel.providers)

    load_ask_magics(shell)
    from wm_kernel.jupyter.magics.request import request_usage

    # ``%request?`` shows the whole usage (its options are declared in magics/request.py)
    WorkingMemoryMagics.request.__doc__ = request_usage()
    import wm_kernel.experiments.recorder  # noqa: F401  (sessions from now on keep their own recording)

    current_session()


def unload_extension(shell: Any) -> None:
    """Remove everything :func:`load_extension` added to ``shell``. The session stays current:
    code in cells may still hold and drive it."""
    from wm_kernel.jupyter.magics.check import unload_check_magics

    unload_check_magics(shell)
    from wm_kernel.jupyter.magics.ask import unload_ask_magics

    unload_ask_magics(shell)
    magics = loaded_magics(shell)
    if magics is not None:
        magics.uninstall()
    from wm_kernel.jupyter.magics.interop import unload_interop_magics

    unload_interop_magics(shell)
