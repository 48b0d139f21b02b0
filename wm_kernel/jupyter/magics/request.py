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

import argparse
import math
import textwrap
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from wm_kernel.display.wire_view import WireView, request_view
from wm_kernel.utils.safe_files import UnreadableFileError, load_json

if TYPE_CHECKING:
    from wm_kernel.session import Session

USAGE_EXAMPLES = """examples:
  %request                          the last recorded turn, against claude-sonnet-4-6
  %request 3 --model gpt-5.4        turn 3, against gpt-5.4's window and reply reserve
  %request --wire mira              the request on MIRA's wire
  %request --per-hour 20            and what a day costs at 20 turns an hour
  %request --tools tools.json --user "Where is my order?"
"""


def _parser() -> MagicArgumentParser:
    parser = MagicArgumentParser(
        prog="%request",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=USAGE_EXAMPLES,
        description=textwrap.fill(
            "The whole request of a turn against the model's context window: tool "
            "schemas, the system prompt, the conversation, the injected items and "
            "the HUD, the framing, the reply's reserve, and the growth forecast.",
            79,
        ),
    )
    parser.add_argument("turn", nargs="?", type=int, help="The recorded turn (default: the last).")
    parser.add_argument(
        "--model",
        "-m",
        default=None,
        metavar="MODEL",
        help="A cache simulator model id: its provider, window, reply reserve and token "
        "counter (default: the session's model, else claude-sonnet-4-6).",
    )
    parser.add_argument(
        "--wire",
        "-w",
        default=None,
        metavar="DIALECT",
        help="The wire dialect: anthropic, openai, mira... (default: the session's, else the model's provider's).",
    )
    parser.add_argument(
        "--tools",
        metavar="FILE",
        help='A JSON file with a list of tool schemas ({"name", "description", "input_schema"} each).',
    )
    parser.add_argument(
        "--per-hour", type=float, metavar="N", help="Turns an hour: adds what a day costs at that pace."
    )
    parser.add_argument(
        "--user",
        metavar="TEXT",
        help="The user's message of this turn (default: the conversation the session sent, if any).",
    )
    return parser


PARSER = _parser()


def request_usage() -> str:
    """What ``%request?`` and ``%request --help`` show: the usage, every option, examples."""
    return PARSER.format_help()


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


def request_magic(session: Session, args: argparse.Namespace) -> WireView:
    """Run ``%request`` on ``session`` with parsed ``args``."""
    if args.per_hour is not None and not 0 <= args.per_hour < math.inf:
        raise UsageError(f"--per-hour must be a finite number of turns, 0 or more, got {args.per_hour:g}")
    history = [{"role": "user", "content": args.user}] if args.user else None
    try:
        return request_view(
            session,
            args.turn,
            model=args.model,
            history=history,
            tools=_tools(args.tools),
            turns_per_hour=args.per_hour,
            wire=args.wire,
        )
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
