"""What a Valkey server's failures become: one line naming the server, the operation and the key,
never a password (the error classes, and the helpers that word and scrub the message)."""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "ErrorKinds",
    "ValkeyPermissionError",
    "ValkeyReplyError",
    "ValkeyUnavailableError",
    "never_sent",
    "one_line",
    "scrub",
    "server_error",
]


def never_sent(exc: BaseException) -> bool:
    """Whether a connection error happened before anything was sent (connecting failed)."""
    return "connecting to" in str(exc) or isinstance(exc, ConnectionRefusedError)


class ValkeyUnavailableError(ConnectionError):
    """The Valkey server could not be reached, timed out or dropped the connection."""

    #: True when a write was sent and the server went away before it answered: it may be stored.
    may_have_landed = False


class ValkeyPermissionError(PermissionError):
    """The server refused a command to this connection's user (an ACL's NOPERM reply)."""


class ValkeyReplyError(ValueError):
    """The server answered a command with an error (a key of another type, a value that is not a
    number...); ``reply`` is the server's text."""

    def __init__(self, message: str, reply: str) -> None:
        super().__init__(message)
        self.reply = reply


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every one of ``secrets`` shown as ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


class ErrorKinds(NamedTuple):
    """The client library's exception classes for "no answer" and "refused by an ACL" (any other
    exception given to :func:`server_error` is an error reply)."""

    unavailable: tuple[type[BaseException], ...]
    refused: type[BaseException]


def server_error(
    exc: BaseException, kinds: ErrorKinds, server: str, what: str, key: str, secrets: list[str]
) -> Exception:
    """The one-line error for ``exc`` raised while doing ``what`` to ``key`` on ``server``:
    ValkeyUnavailableError (no answer), ValkeyPermissionError (an ACL refused it), ValkeyReplyError
    (any other error reply); ``secrets`` scrubbed from the text."""
    if isinstance(exc, kinds.unavailable):
        return ValkeyUnavailableError(scrub(f"{server} unavailable ({what} {key!r}): {one_line(exc)}", secrets))
    if isinstance(exc, kinds.refused):
        return ValkeyPermissionError(scrub(f"{server} refused to {what} {key!r}: {one_line(exc)}", secrets))
    # a command inside a write's MULTI/EXEC: its reply, without the command (values)
    reply = re.sub(r"^Command # \d+ \(.*?\) of pipeline caused error: ", "", one_line(exc))
    if reply.startswith("WRONGTYPE"):
        message = (
            f"{server}: cannot {what} {key!r}: it holds another "
            f"type of value than this store keeps there (written by something "
            f"else?)"
        )
    else:
        message = f"{server} answered {what} {key!r} with an error: {reply}"
    return ValkeyReplyError(scrub(message, secrets), reply)
