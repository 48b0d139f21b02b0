"""Reading what a user typed into a magic: comments, quotes, numbers, required words, and the
trinket and section names a session answers to. Every mistake is one ``UsageError`` line, raised
before anything changes."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser, parse_argstring

from trinkets.base import EventAwareTrinket
from wm_kernel.stores.server_url import redact_urls

if TYPE_CHECKING:
    from wm_kernel.session import Session
    from wm_kernel.stores.valkey import ValkeyStore

__all__ = [
    "strip_comment",
    "unquote",
    "parse_args",
    "help_requested",
    "positive_int",
    "non_negative_int",
    "required",
    "open_valkey_store",
    "current_session",
    "short_names",
    "resolve_trinket",
    "unknown_section_message",
]

_QUOTED = re.compile(r"""^(["'])(.*)\1$""", re.DOTALL)


def unquote(value: Any) -> Any:
    if isinstance(value, str):
        match = _QUOTED.match(value)
        return match.group(2) if match else value
    if isinstance(value, list):
        return [unquote(v) for v in value]
    return value


def strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment``, as IPython users expect of a magic's arguments.

    A ``#`` starts a comment where it starts a word outside quotes (as in a shell); inside quotes,
    after a backslash or within a word (``--name a#b``) it is text.

    >>> strip_comment('add concern "Keep it #1." --ttl 2   # two turns')
    'add concern "Keep it #1." --ttl 2'
    >>> strip_comment("--first-name a#b")
    '--first-name a#b'
    """
    quote: str | None = None
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote is not None:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line


def parse_args(parser_owner: Callable[..., Any] | MagicArgumentParser, line: str) -> argparse.Namespace:
    """``parse_argstring`` with the three things it leaves to us: a trailing ``# comment`` is
    ignored, an unbalanced quote becomes a UsageError, and the quotes IPython's splitter keeps
    around a token are removed."""
    line = strip_comment(line)
    try:
        if isinstance(parser_owner, MagicArgumentParser):
            args = parser_owner.parse_argstring(line)
        else:
            args = parse_argstring(parser_owner, line)
    except ValueError as exc:  # shlex: "No closing quotation"
        raise UsageError(f"cannot read the arguments: {exc}") from None
    for key, value in vars(args).items():
        setattr(args, key, unquote(value))
    return args


def help_requested(line: str) -> bool:
    """True when ``line`` asks for the usage (``--help`` or ``-h`` as a word, outside quotes)."""
    import shlex

    try:
        words = shlex.split(strip_comment(line))
    except ValueError:
        return False
    return "--help" in words or "-h" in words


def int_at_least(text: str, what: str, minimum: int) -> int:
    """``text`` read as an integer of at least ``minimum`` (0 or 1), or a UsageError."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = minimum - 1
    if value < minimum:
        kind = "positive" if minimum == 1 else "non-negative"
        raise UsageError(f"{what} must be a {kind} integer, got {text!r}")
    return value


def positive_int(text: str, what: str) -> int:
    return int_at_least(text, what, 1)


def non_negative_int(text: str, what: str) -> int:
    return int_at_least(text, what, 0)


def required(text: str | None, what: str) -> str:
    if text is None or not text.strip():
        raise UsageError(f"{what} is required and must not be empty")
    return text


def open_valkey_store(url: str, *, read_only: bool) -> ValkeyStore:
    """A ValkeyStore for ``--store``; every way it can fail is one UsageError line."""
    from wm_kernel.stores.valkey import ValkeyStore

    try:
        return ValkeyStore(required(url, "--store"), read_only=read_only)
    except (ValueError, TypeError, ImportError, ConnectionError, PermissionError) as exc:
        raise UsageError(redact_urls(str(exc))) from None


def current_session() -> Session:
    from wm_kernel.session import current_session

    return current_session()


def short_names(trinket: EventAwareTrinket) -> set[str]:
    """The names a trinket answers to in ``%trinket``: class name, section name, and the class name
    without a Trinket/Manager suffix, all case-insensitive (``peanutgallery``, ``reminder``)."""
    name = trinket.name.lower()
    names = {name, trinket.variable_name.lower()}
    for suffix in ("trinket", "manager"):
        if name.endswith(suffix) and len(name) > len(suffix):
            names.add(name[: -len(suffix)])
    return names


def resolve_trinket(session: Session, name: str) -> EventAwareTrinket:
    """The session's trinket called ``name`` (see :func:`short_names`); UsageError naming the known
    ones otherwise."""
    required(name, "a trinket name")
    trinkets = session.trinkets
    if name in trinkets:
        return trinkets[name]
    wanted = name.lower().replace("-", "_")
    matches = [t for t in trinkets.values() if wanted in short_names(t) or wanted.replace("_", "") in short_names(t)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(trinkets) or "none registered"
    raise UsageError(f"unknown trinket {name!r} (known: {known})")


def unknown_section_message(session: Session, name: str) -> str:
    """The one-line refusal of a section name: the sections this session produces first (its base
    prompt, its trinkets', the last prompt's), then, apart, the layout's names no trinket here
    provides (valid, but empty in this session)."""
    produced = ["base_prompt", *(t.variable_name for t in session.trinkets.values())]
    if session.composed is not None:
        produced += session.composed.section_names()
    produced = list(dict.fromkeys(produced))
    others = [n for n in session.layout.sections() if n not in produced]
    message = f"unknown section {name!r} (this session produces: {', '.join(produced)}"
    if others:
        message += f"; in the layout, provided by no trinket here: {', '.join(others)}"
    return message + ")"
