"""IPython magics that drive the notebook's current Session: ``%compose``, ``%turn``, ``%trinket``...

``%load_ext wm_kernel`` registers :class:`WorkingMemoryMagics` on the shell, and with it the magics
that start the session (:mod:`~wm_kernel.jupyter.magics.wm_session`), move it on
(:mod:`~wm_kernel.jupyter.magics.drive`) and show it (:mod:`~wm_kernel.jupyter.magics.inspection`);
it makes sure a current Session exists (``wm_kernel.current_session()``), adds tab completion for
trinket and section names (:mod:`~wm_kernel.jupyter.magics.completion`), and links the magics'
config traits to the rendering options. ``%unload_ext wm_kernel`` undoes every one of these.
Loading twice adds nothing twice.

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

import argparse
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Enum, Int, TraitError, link

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.core.prompt_dict import PLACEMENTS
from wm_kernel.display import render
from wm_kernel.display.session_views import known_sections
from wm_kernel.jupyter.magics.args import (
    current_session,
    non_negative_int,
    parse_args,
    required,
    unknown_section_message,
)
from wm_kernel.jupyter.magics.completion import complete
from wm_kernel.jupyter.magics.drive import DriveMagics
from wm_kernel.jupyter.magics.inspection import InspectionMagics
from wm_kernel.jupyter.magics.wm_session import SessionMagics

if TYPE_CHECKING:
    from wm_kernel.session import Session

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


def _check_wire(wire: str | None) -> None:
    """UsageError for a ``--wire`` no dialect is named by (None: the default wire)."""
    if wire is not None:
        from wm_kernel.dialects.registry import dialect_names, known_name

        if not known_name(wire):
            raise UsageError(f"unknown wire {wire!r}; wires: {', '.join(dialect_names())}")


def _exchange(text: str) -> tuple[int, int]:
    """``--exchange USER,REPLY``: the two token counts."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise UsageError(f"--exchange takes USER,REPLY tokens (two numbers), got {text!r}")
    return non_negative_int(parts[0], "--exchange"), non_negative_int(parts[1], "--exchange")


@magics_class
class WorkingMemoryMagics(Magics):
    """Magics that compose the notebook's current Session: ``%compose`` and ``%cache``, which composes
    first when nothing is recorded; it installs the other core magics (:data:`MAGIC_NAMES`) with it."""

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
        # the other core magics, installed and removed with these
        self._parts: list[Magics] = [
            SessionMagics(shell=shell),
            DriveMagics(shell=shell),
            InspectionMagics(shell=shell),
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

    def _note_defaults(self, session: Session) -> None:
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

    def _present(self, session: Session, composed: ComposedPrompt, args: argparse.Namespace) -> object:
        from wm_kernel.display.session_views import present

        view = next((flag for flag in ("diff", "blame", "json", "raw") if getattr(args, flag)), "html")
        return present(
            composed,
            view,
            sections=args.section,
            placement=args.placement,
            placement_of=session.layout.placement_of,
        )

    # -- the cache simulation (it composes first, as %compose would, when nothing is recorded)
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
        _check_wire(args.wire)
        if session.history.empty:  # nothing recorded: compose first, as %compose would
            self._check_cache_arguments(session, args.model, breakpoints)
            session.compose()
            self._note_defaults(session)
        options: dict[str, Any] = {}
        if args.exchange is not None:
            options["exchange"] = _exchange(args.exchange)
        try:
            simulation = session.cache_simulation(
                args.model, breakpoints=breakpoints, tools_tokens=tools, wire=args.wire, **options
            )
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        from wm_kernel.cachesim.advice import advise

        return CacheView(simulation, None if args.no_advice else advise(simulation))

    @staticmethod
    def _check_cache_arguments(session: Session, model: str | None, breakpoints: Any) -> None:
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

    # -- install / uninstall
    def install(self) -> None:
        """Register these magics and the other core ones, the completers and the config hook on the shell."""
        shell = self.shell
        assert shell is not None, "WorkingMemoryMagics needs a shell"
        manager = shell.magics_manager
        for kind, names in MAGIC_NAMES.items():
            for name in names:
                previous = manager.magics[kind].get(name)
                if previous is not None:
                    self._replaced[(kind, name)] = previous
        manager.register(self, *self._parts)  # Magics.__init__ already listed each in shell.configurables
        for key in ("%trinket", "%compose", "%%compose"):
            shell.set_hook("complete_command", complete, str_key=key)
            self._hooks.append(key)

    def uninstall(self) -> None:
        """Remove every magic, completer, config entry and trait link :meth:`install` added."""
        shell = self.shell
        assert shell is not None, "WorkingMemoryMagics needs a shell"
        manager = shell.magics_manager
        installed = [self, *self._parts]
        for kind, names in MAGIC_NAMES.items():
            table = manager.magics[kind]
            for name in names:
                current = table.get(name)
                if current is not None and any(getattr(current, "__self__", None) is m for m in installed):
                    del table[name]
                    if (kind, name) in self._replaced:
                        table[name] = self._replaced.pop((kind, name))
        for magics in installed:
            if manager.registry.get(type(magics).__name__) is magics:
                del manager.registry[type(magics).__name__]
        configurables: list[Any] = shell.configurables
        configurables[:] = [c for c in configurables if not any(c is m for m in installed)]
        dispatcher = shell.strdispatchers.get("complete_command")
        for key in self._hooks:
            chain = dispatcher.strs.get(key) if dispatcher is not None else None
            if dispatcher is None or chain is None:
                continue
            chain.chain = [(p, f) for p, f in chain.chain if getattr(f, "__func__", None) is not complete]
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
    InspectionMagics.request.__doc__ = request_usage()

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
