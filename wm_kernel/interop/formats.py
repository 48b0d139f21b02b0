"""What every reader of another agent's log makes and is described by: :class:`LoggedRequest`,
:class:`ImportIssue`, :class:`LogFormat`, and the times and OTLP values they read.

Formats (``wm_kernel.interop.readers`` lists them: ``log_formats()``; a reader of a new format
registers there, see that module's docstring):

``anthropic``
    JSON Lines of Anthropic Messages request bodies, each alone or in an envelope
    ``{"timestamp": ISO-8601, "request": body, "response": {... "usage": {...}}}`` (the envelope
    gives the send time and the usage; a ``"url"`` beside them gives the model where only the URL names
    it: Bedrock's ``/model/{modelId}/converse`` and ``/invoke``).
``openai.chat`` / ``openai.responses`` / ``gemini``
    The same for OpenAI Chat Completions and Responses bodies and Gemini ``generateContent`` bodies
    (an envelope's ``usageMetadata`` and ``modelVersion`` give the usage and the model).
``claude-code``
    A Claude Code session transcript (``~/.claude/projects/<project>/<session>.jsonl``, read and
    registered by ``wm_kernel.interop.claude_code``): each assistant message (the lines sharing
    ``message.id``) is one request, whose messages are the chain of ``parentUuid`` before it. The
    transcript holds neither the system prompt nor the tools: its requests are the messages only.
``otlp``
    OTLP/HTTP JSON traces (one document, or the collector file exporter's one per line): each
    GenAI span is one request; spans this package exported carry every section (exact bytes),
    other instrumentations' spans are cut from their ``gen_ai.system_instructions``,
    ``gen_ai.tool.definitions`` and ``gen_ai.input.messages``.

A reader is fed every record of a file and returns :class:`LoggedRequest` s; a record it cannot
read raises ValueError, which the import reports with the file and line and goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from wm_kernel.dialects.registry import get_dialect
from wm_kernel.interop.bodies import Section


@dataclass(frozen=True, slots=True)
class ImportIssue:
    """A record that could not be imported: where, and why."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class LoggedRequest:
    """One request as read from a log.

    ``sections`` cover ``source`` exactly (``"".join(s.raw for s in sections) == source``), where
    ``source`` is the logged text the request stands for: its line, the transcript lines of its
    messages, or (OTLP) the request body the span describes; None where it is the join of the
    sections' raw texts (a transcript's requests share their lines' sections instead of each
    holding a copy of the conversation): :attr:`logged_text` gives it either way. ``usage`` is the
    provider's usage object as logged (shape named by ``usage_format``: ``anthropic``,
    ``openai.chat``, ``openai.responses``, ``gen_ai``), None where the log has none.
    ``request_id`` is the provider's request id where the log keeps one (an envelope's
    ``request_id``, a transcript line's ``requestId``). ``model`` is the model the log names for
    this request (each request its own). ``conversation`` names the conversation the request
    belongs to (a transcript's session, each subagent and sidechain its own; None where the log
    says nothing); ``marks`` say what kind of run it is: ``subagent``, ``sidechain``,
    ``compaction`` (a run that writes the summary a compacted conversation continues from),
    ``after-compaction`` (the first request of a chain that starts at such a summary).
    ``background`` marks a call of the same log that is not a turn of the conversation (MIRA's
    tap: summaries, memory extraction, other models): ``ImportedSession.background``."""

    sections: Sequence[Section]
    source: str | None
    path: str
    lines: Sequence[int]
    dialect: str
    provider: str
    model: str | None = None
    sent_at: datetime | None = None
    usage: Mapping[str, Any] | None = None
    usage_format: str | None = None
    request_id: str | None = None
    background: bool = False
    conversation: str | None = None
    marks: tuple[str, ...] = ()
    #: the response's id, answering model and finish reason where the log keeps the response
    #: (an envelope's ``response``, a transcript's assistant line); the conversation's id where
    #: the log names one (a transcript's ``sessionId``)
    response_id: str | None = None
    response_model: str | None = None
    finish_reason: str | None = None
    conversation_id: str | None = None
    #: the response's own sections where the log keeps its text (a transcript's assistant message)
    response: Sequence[Section] = ()
    #: the parts of the request the log does not hold although the request sent them (a Codex
    #: rollout's ``("tools",)``: it keeps the instructions and items, not the tool schemas): their
    #: size is inferred from the usage, as a transcript's missing system prompt and tools are
    unlogged: tuple[str, ...] = ()
    #: on a request marked ``after-compaction``, the boundary its chain starts after as the log
    #: recorded it (a transcript's ``compact_boundary`` line: ``trigger``, ``preTokens``,
    #: ``timestamp``, ``line``), None elsewhere
    compaction: Mapping[str, Any] | None = None

    @property
    def logged_text(self) -> str:
        """The logged text of the request (``source``, or the join of its sections)."""
        return self.source if self.source is not None else "".join(s.raw for s in self.sections)


#: The send times a log may hold: from the epoch to the last second OTLP's int64 nanoseconds carry
#: (a time outside is an issue on its line, never an OverflowError later in the summary or export).
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2262, 4, 11, tzinfo=UTC)


def parse_time(value: Any, what: str) -> datetime | None:
    """An ISO-8601 time (``Z`` allowed) as an aware datetime in UTC (UTC if it names no zone), so
    that times written with different offsets compare and subtract; ValueError outside
    :data:`EARLIEST` to :data:`LATEST`."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what} must be an ISO-8601 string, got {value!r}")
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        when = when.astimezone(UTC) if when.tzinfo is not None else when.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"{what} {value[:80]!r} is not an ISO-8601 time from 1970 to 2262") from None
    if not EARLIEST <= when < LATEST:
        raise ValueError(f"{what} {value[:80]!r} is not an ISO-8601 time from 1970 to 2262")
    return when


def epoch_time(seconds: Any, what: str) -> datetime:
    """Seconds since the epoch (a finite number from 1970 to 2262) as an aware UTC datetime;
    ValueError, naming ``what``, for anything else."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ValueError(f"{what} must be seconds since the epoch, got {str(seconds)[:80]!r}")
    if not 0 <= seconds < LATEST.timestamp():  # NaN fails both comparisons
        raise ValueError(f"{what} {str(seconds)[:80]} is not a time from 1970 to 2262 (seconds since the epoch)")
    return datetime.fromtimestamp(seconds, tz=UTC)


@dataclass(frozen=True)
class LogFormat:
    """A log format and its reader (``wm_kernel.interop.readers`` says how one is found and read)."""

    name: str
    reader: Callable[..., Any] | None = None
    detect: Callable[[Any], bool] | None = None
    priority: int = 100
    title: str = ""
    dialect: str | None = None
    read_file: Callable[..., Any] | None = None
    sniff: Callable[[str], bool] | None = None


#: The wire whose messages (and usage) a Claude Code transcript holds.
CLAUDE_CODE_WIRE = get_dialect("anthropic")


def otlp_value(value: Any) -> Any:
    """An OTLP JSON AnyValue as a Python value (``intValue`` strings as int)."""
    if not isinstance(value, Mapping):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [otlp_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {kv["key"]: otlp_value(kv.get("value")) for kv in value["kvlistValue"].get("values", [])}
    return value.get("bytesValue")


def otlp_attributes(items: Any) -> dict[str, Any]:
    """An OTLP attribute list as a dict."""
    return {kv["key"]: otlp_value(kv.get("value")) for kv in items or [] if isinstance(kv, Mapping)}


def span_line(text: str, offset: int) -> int:
    """The 1-based line of ``offset`` in ``text``."""
    return text.count("\n", 0, offset) + 1


__all__ = [
    "ImportIssue",
    "LoggedRequest",
    "LogFormat",
    "parse_time",
    "epoch_time",
    "CLAUDE_CODE_WIRE",
    "otlp_value",
    "otlp_attributes",
    "span_line",
]
