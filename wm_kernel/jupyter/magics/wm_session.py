"""``%wm_session [--clock ISO] [--first-name NAME] [--store URL]...``: start a fresh current Session.

Registered with the core magics by ``%load_ext wm_kernel`` (:mod:`wm_kernel.jupyter.magics.working_memory`).
Every option is read and checked before the Session is built, so a mistake leaves the current session
as it was; what a Valkey URL's password would show is redacted from every message.
"""

from __future__ import annotations

import argparse
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from wm_kernel.jupyter.magics.args import open_valkey_store, parse_args, required
from wm_kernel.jupyter.magics.tables import session_line
from wm_kernel.stores.server_url import redact_urls


@magics_class
class SessionMagics(Magics):
    """The magic that starts the notebook's current Session: ``%wm_session``."""

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
        """Start a fresh current Session (e.g. with a ManualClock, for deterministic notebooks).

        Long because: its eleven options are declared on it, one ``@argument`` each; the body
        builds the Session from what :func:`_session_options` read.
        """
        from wm_kernel.session import Session, set_current_session

        try:
            args = parse_args(self.wm_session, line)
        except UsageError as exc:  # argparse echoes what it could not place: a URL, perhaps
            raise UsageError(redact_urls(str(exc))) from None
        kwargs = _session_options(args)
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


def _session_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Session's keywords from ``%wm_session``'s options, each read and checked (a UsageError
    for the first that is wrong) before anything is built or connected to; the store is opened
    after, from ``--store``."""
    from wm_kernel.core.clock import ManualClock
    from wm_kernel.core.composer.layout import Layout
    from wm_kernel.core.profile import Profile

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
        kwargs["trinkets"] = builtin_trinkets(args.trinkets)
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
    return kwargs


def builtin_trinkets(text: str) -> list[type[Any]]:
    """The built-in trinket classes ``--trinkets A,B`` names (``none``: no trinket); UsageError
    for an empty list or a name that is not built in."""
    import trinkets as builtin

    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["none"]:
        return []
    if not names:
        raise UsageError("--trinkets needs class names (or 'none')")
    unknown = [n for n in names if n not in builtin.BUILTIN_NAMES]
    if unknown:
        raise UsageError(f"unknown built-in trinket {unknown[0]!r} (built-in: {', '.join(builtin.BUILTIN_NAMES)})")
    return [getattr(builtin, n) for n in names]
