"""Readers of other agents' logs, one small class per format, and the detection that picks one.

Formats (registered in ``wm_kernel.dialects.registry``: ``log_formats()`` lists them, a reader of a
new format registers itself there, see that module's docstring):

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from wm_kernel.dialects.bedrock import model_from_url
from wm_kernel.dialects.registry import (
    Dialect,
    LogFormat,
    body_dialect,
    detect_log_format,
    dialects,
    get_dialect,
    get_log_format,
    register_log_format,
)
from wm_kernel.interop.bodies import Section, cut_body
from wm_kernel.interop.jsonspan import locate
from wm_kernel.interop.split import Splitter


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


def _body(value: Any) -> Any:
    if isinstance(value, Mapping) and isinstance(value.get("request"), Mapping):
        return value["request"]
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def detect(value: Any) -> str | None:
    """The format one parsed record belongs to (the registered formats' ``detect``), or None."""
    return detect_log_format(value)


def _detects_body(dialect: Dialect) -> Any:
    """A record is a request body of ``dialect`` (alone or in an envelope): the wire registry's choice."""

    def detects(value: Any) -> bool:
        body = _body(value) if isinstance(value, Mapping) else None
        return isinstance(body, Mapping) and body_dialect(body) is dialect

    return detects


class BodyReader:
    """JSON Lines of request bodies of one wire dialect, alone or in an envelope (module docstring).

    ``wire`` is the dialect (``wm_kernel.dialects``): its log format (else its name) names the
    records (``dialect``, ``usage_format``), its ``provider`` the provider, its ``check_body`` what a
    body must hold, its ``body_shape`` how the body is cut. A wire without a log format of its own
    (MIRA's) reads the bodies of any wire of the same shape (Anthropic Messages)."""

    def __init__(self, path: str, splitter: Splitter, wire: Dialect | str = "anthropic") -> None:
        self.path = path
        self.splitter = splitter
        self.wire = get_dialect(wire)
        self.dialect = self.usage_format = self.wire.log_format or self.wire.name
        self.provider = self.wire.log_provider or self.wire.provider
        self.requests: list[LoggedRequest] = []

    def check(self, body: Mapping[str, Any]) -> None:
        """ValueError if ``body`` is not a request of this dialect."""
        self.wire.check_body(body)

    def title(self) -> str:
        return self.wire.title

    def _same_shape(self, kind: str) -> bool:
        """Whether the log format ``kind`` holds bodies of this wire's shape."""
        wire = get_log_format(kind).dialect
        return wire is not None and get_dialect(wire).body_shape == self.wire.body_shape

    def feed(self, line: int, text: str, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise ValueError(f"not {self.title()} request: a JSON {type(value).__name__}, not an object")
        body = _body(value)
        enveloped = body is not value
        self.check(body)
        kind = detect(value)
        if kind not in (self.dialect, None) and not self._same_shape(kind):
            raise ValueError(f"not {self.title()} request: it reads as {kind}")
        node = locate(text)
        response = value.get("response") if enveloped else None
        usage_key = "usageMetadata" if isinstance(response, Mapping) and "usageMetadata" in response else "usage"
        usage = response.get(usage_key) if isinstance(response, Mapping) else None
        if usage is not None and not isinstance(usage, Mapping):
            raise ValueError(f"response.{usage_key} must be an object, got {usage!r}")
        sent_at = parse_time(value.get("timestamp"), "timestamp") if enveloped else None
        sections = cut_body(text, body, self.wire.name, self.splitter, node["request"] if enveloped else node)
        rid = value.get("request_id") if enveloped else None
        answer = response if isinstance(response, Mapping) else {}
        # Bedrock names the model only in the URL (an envelope's ``url``); else the body, else the answer
        # (Gemini's answer names it ``modelVersion``)
        model = (
            body.get("model")
            or (model_from_url(value.get("url")) if enveloped else None)
            or answer.get("model")
            or answer.get("modelVersion")
        )
        choices = answer.get("choices") or answer.get("candidates")
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else {}
        finish = (
            answer.get("stop_reason") or answer.get("status") or first.get("finish_reason") or first.get("finishReason")
        )
        self.requests.append(
            LoggedRequest(
                tuple(sections),
                text,
                self.path,
                (line,),
                self.dialect,
                self.provider,
                model if isinstance(model, str) else None,
                sent_at,
                usage,
                self.usage_format if usage else None,
                rid if isinstance(rid, str) else None,
                response_id=_text(answer.get("id") or answer.get("responseId")),
                response_model=_text(answer.get("model") or answer.get("modelVersion")),
                finish_reason=_text(finish),
            )
        )

    def finish(self) -> list[LoggedRequest]:
        return self.requests


def _detects_stored(dialect: Dialect) -> Any:
    """A record is a response ``dialect``'s provider stored (its ``stored_response`` hook)."""

    def detects(value: Any) -> bool:
        return isinstance(value, Mapping) and dialect.stored_response(value) is not None

    return detects


class StoredResponseReader:
    """Responses a provider stored and lists (OpenAI's stored chat completions), one per record:
    each a request whose usage, model, time and response the record gives, and whose text the
    log does not hold (no sections: ``ImportedSession.inferred`` sizes it from the usage)."""

    def __init__(self, path: str, splitter: Splitter, wire: Dialect | str) -> None:
        self.path = path
        self.wire = get_dialect(wire)
        self.dialect = self.usage_format = self.wire.log_format or self.wire.name
        self.provider = self.wire.log_provider or self.wire.provider
        self.requests: list[LoggedRequest] = []

    def feed(self, line: int, text: str, value: Any) -> None:
        stored = self.wire.stored_response(value) if isinstance(value, Mapping) else None
        if stored is None:
            raise ValueError(f"not one of {self.wire.stored_title}")
        if stored.usage is None:
            raise ValueError(f"{self.wire.stored_title}: a response without usage")
        sent_at = epoch_time(stored.created, "created") if stored.created is not None else None
        self.requests.append(
            LoggedRequest(
                (),
                "",
                self.path,
                (line,),
                self.dialect,
                self.provider,
                stored.model,
                sent_at,
                stored.usage,
                self.usage_format,
                response_id=stored.id,
                response_model=stored.model,
                finish_reason=stored.finish_reason,
            )
        )

    def finish(self) -> list[LoggedRequest]:
        return self.requests


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


def _register() -> None:
    """Register a body reader for every wire dialect with a log format, and the transcript reader."""
    for wire in dialects():
        if wire.log_format:
            register_log_format(
                LogFormat(
                    wire.log_format,
                    lambda path, splitter, wire=wire: BodyReader(path, splitter, wire),
                    detect=_detects_body(wire),
                    priority=50,
                    title=f"{wire.title} request bodies",
                    dialect=wire.name,
                ),
                replace=True,
            )
        if wire.stored_title:
            register_log_format(
                LogFormat(
                    f"{wire.log_format or wire.name}.stored",
                    lambda path, splitter, wire=wire: StoredResponseReader(path, splitter, wire),
                    detect=_detects_stored(wire),
                    priority=55,
                    title=f"{wire.stored_title} (responses only: the requests' text is not in them)",
                    dialect=wire.name,
                ),
                replace=True,
            )


_register()

__all__ = [
    "ImportIssue",
    "LoggedRequest",
    "detect",
    "parse_time",
    "epoch_time",
    "BodyReader",
    "StoredResponseReader",
    "CLAUDE_CODE_WIRE",
    "otlp_value",
    "otlp_attributes",
    "span_line",
]
