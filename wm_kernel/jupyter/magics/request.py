"""``%request [TURN] [--model M] [--wire W] [--tools FILE] [--per-hour N] [--user TEXT]``: the whole request.

Shows the request the current session sends at TURN (the last recorded one by default) to model M
(a cache simulator model id; its provider, context window and reply reserve) on wire W (a wire
dialect: ``anthropic``, ``openai``, ``mira``...; default: the session's, else the model's
provider's; the headline names it): tool schemas from a
JSON file (a list of ``{"name", "description", "input_schema"}``), a user message when given, the
system prompt, the injected items and the HUD, against the window, with the growth forecast and,
given ``--per-hour``, what a day costs at that pace.
"""
from __future__ import annotations

import math
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from wm_kernel.display.wire_view import WireView, request_view
from wm_kernel.utils.safe_files import UnreadableFileError, load_json


def _parser() -> MagicArgumentParser:
    parser = MagicArgumentParser(prog="%request", description=__doc__.splitlines()[0])
    parser.add_argument("turn", nargs="?", type=int, help="The recorded turn (default: the last).")
    parser.add_argument("--model", "-m", default=None, help="A cache simulator model id (default: the "
                        "session's model, else claude-sonnet-4-6); its counter counts the tokens.")
    parser.add_argument("--wire", "-w", default=None, help="The wire dialect (default: the session's, "
                        "else the model's provider's).")
    parser.add_argument("--tools", metavar="FILE", help="A JSON file with a list of tool schemas.")
    parser.add_argument("--per-hour", type=float, metavar="N", help="Turns an hour, for the day's cost.")
    parser.add_argument("--user", metavar="TEXT", help="The user's message of this turn (default: "
                        "the conversation the session sent, if any).")
    return parser


PARSER = _parser()


def _tools(path: str | None) -> list[Any]:
    if path is None:
        return []
    try:
        tools = load_json(path, path)  # a regular file only, bounded, of bounded nesting
    except OSError as exc:
        raise UsageError(f"--tools: cannot read {path}: {exc.strerror or exc}") from None
    except UnreadableFileError as exc:
        raise UsageError(f"--tools: {exc}") from None
    if not isinstance(tools, list):
        raise UsageError(f"--tools: {path} must hold a JSON list of tool schemas")
    return tools


def request_magic(session: Any, args: Any) -> WireView:
    """Run ``%request`` on ``session`` with parsed ``args``."""
    if args.per_hour is not None and not 0 <= args.per_hour < math.inf:
        raise UsageError(f"--per-hour must be a finite number of turns, 0 or more, got {args.per_hour:g}")
    history = [{"role": "user", "content": args.user}] if args.user else None
    try:
        return request_view(session, args.turn, model=args.model, history=history,
                            tools=_tools(args.tools), turns_per_hour=args.per_hour, wire=args.wire)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
