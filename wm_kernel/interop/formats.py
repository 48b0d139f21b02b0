"""Readers of other agents' logs, one small class per format, and the detection that picks one.

Formats (registered in ``wm_kernel.dialects.registry``: ``log_formats()`` lists them, a reader of a
new format registers itself there, see that module's docstring):

``anthropic``
    JSON Lines of Anthropic Messages request bodies, each alone or in an envelope
    ``{"timestamp": ISO-8601, "request": body, "response": {... "usage": {...}}}`` (the envelope
    gives the send time and the usage).
``openai.chat`` / ``openai.responses``
    The same for OpenAI Chat Completions and Responses bodies.
``claude-code``
    A Claude Code session transcript (``~/.claude/projects/<project>/<session>.jsonl``): one line
    per message; each assistant message (lines sharing ``message.id`` count once) is one request,
    whose messages are the chain of ``parentUuid`` before it. The transcript holds neither the
    system prompt nor the tools: its requests are the messages only.
``otlp``
    OTLP/HTTP JSON traces (one document, or the collector file exporter's one per line): each
    GenAI span is one request; spans this package exported carry every section (exact bytes),
    other instrumentations' spans are cut from their ``gen_ai.system_instructions``,
    ``gen_ai.tool.definitions`` and ``gen_ai.input.messages``.

A reader is fed every record of a file and returns :class:`LoggedRequest` s; a record it cannot
read raises ValueError, which the import reports with the file and line and goes on.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

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
from wm_kernel.interop.bodies import Cutter, Section, anthropic_message, cut_body
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
    messages, or (OTLP) the request body the span describes. ``usage`` is the provider's usage
    object as logged (shape named by ``usage_format``: ``anthropic``, ``openai.chat``,
    ``openai.responses``), None where the log has none. ``request_id`` is the provider's request id
    where the log keeps one (an envelope's ``request_id``, a transcript line's ``requestId``).
    ``background`` marks a call of the same log that is not a turn of the conversation (MIRA's
    tap: summaries, memory extraction, other models): ``ImportedSession.background``."""

    sections: tuple[Section, ...]
    source: str
    path: str
    lines: tuple[int, ...]
    dialect: str
    provider: str
    model: str | None = None
    sent_at: datetime | None = None
    usage: Mapping[str, Any] | None = None
    usage_format: str | None = None
    request_id: str | None = None
    background: bool = False
    #: the response's id, answering model and finish reason where the log keeps the response
    #: (an envelope's ``response``, a transcript's assistant line); the conversation's id where
    #: the log names one (a transcript's ``sessionId``)
    response_id: str | None = None
    response_model: str | None = None
    finish_reason: str | None = None
    conversation_id: str | None = None


def parse_time(value: Any, what: str) -> datetime | None:
    """An ISO-8601 time (``Z`` allowed) as an aware datetime (UTC if it names no zone)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what} must be an ISO-8601 string, got {value!r}")
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{what} {value!r} is not an ISO-8601 time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _body(value: Any) -> Any:
    if isinstance(value, Mapping) and isinstance(value.get("request"), Mapping):
        return value["request"]
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def detect(value: Any) -> str | None:
    """The format one parsed record belongs to (the registered formats' ``detect``), or None."""
    return detect_log_format(value)


def _is_transcript(value: Any) -> bool:
    return (isinstance(value, Mapping) and value.get("type") in ClaudeCodeReader.LINE_TYPES
            and ("sessionId" in value or "uuid" in value or "leafUuid" in value))


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
        usage = response.get("usage") if isinstance(response, Mapping) else None
        if usage is not None and not isinstance(usage, Mapping):
            raise ValueError(f"response.usage must be an object, got {usage!r}")
        sent_at = parse_time(value.get("timestamp"), "timestamp") if enveloped else None
        sections = cut_body(text, body, self.wire.name, self.splitter,
                            node["request"] if enveloped else node)
        model = body.get("model")
        rid = value.get("request_id") if enveloped else None
        answer = response if isinstance(response, Mapping) else {}
        choices = answer.get("choices")
        finish = answer.get("stop_reason") or answer.get("status") or (
            choices[0].get("finish_reason") if isinstance(choices, list) and choices
            and isinstance(choices[0], Mapping) else None)
        self.requests.append(LoggedRequest(tuple(sections), text, self.path, (line,), self.dialect,
                                           self.provider, model if isinstance(model, str) else None,
                                           sent_at, usage, self.usage_format if usage else None,
                                           rid if isinstance(rid, str) else None,
                                           response_id=_text(answer.get("id")),
                                           response_model=_text(answer.get("model")), finish_reason=_text(finish)))

    def finish(self) -> list[LoggedRequest]:
        return self.requests


#: The wire whose messages (and usage) a Claude Code transcript holds.
CLAUDE_CODE_WIRE = get_dialect("anthropic")


class ClaudeCodeReader:
    """A Claude Code session transcript (module docstring). Lines of other types (summaries,
    snapshots, system notes) carry no message and are kept only as links of the chain."""

    LINE_TYPES = frozenset({"user", "assistant", "summary", "system", "file-history-snapshot", "attachment",
                            "queue-operation", "custom-title", "ai-title"})

    def __init__(self, path: str, splitter: Splitter) -> None:
        self.path = path
        self.splitter = splitter
        # uuid -> (parent uuid, line, text, sections, depth of the next message, is a message)
        self.lines: dict[str, tuple[str | None, int, str, tuple[Section, ...], int, bool]] = {}
        self.requests: list[LoggedRequest] = []
        self.seen_ids: set[str] = set()
        self.times: dict[str, datetime | None] = {}

    def feed(self, line: int, text: str, value: Any) -> None:
        if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
            raise ValueError("not a Claude Code transcript line: no 'type'")
        uuid, parent = value.get("uuid"), value.get("parentUuid")
        depth = 0
        if isinstance(parent, str) and parent in self.lines:
            depth = self.lines[parent][4]
        message = value.get("message")
        kind = value["type"]
        if kind not in ("user", "assistant") or not isinstance(message, Mapping):
            if isinstance(uuid, str):
                self.lines[uuid] = (parent if isinstance(parent, str) else None, line, text, (), depth, False)
            return
        if not isinstance(uuid, str):
            raise ValueError(f"a {kind} line without a 'uuid'")
        timestamp = parse_time(value.get("timestamp"), "timestamp")
        node = locate(text)
        cut = Cutter(text, self.splitter)
        anthropic_message(cut, node["message"], message, f"msg[{depth}]")
        sections = tuple(cut.finish())
        parent_id = parent if isinstance(parent, str) else None
        message_id = message.get("id")
        if kind == "assistant" and isinstance(message_id, str) and message_id not in self.seen_ids:
            self.seen_ids.add(message_id)
            rid = value.get("requestId")
            self._request(parent_id, line, timestamp, message, rid if isinstance(rid, str) else None,
                          _text(value.get("sessionId")))
        self.lines[uuid] = (parent_id, line, text, sections, depth + 1, True)
        self.times[uuid] = timestamp

    def _request(self, parent: str | None, line: int, answered_at: datetime | None,
                 message: Mapping[str, Any], request_id: str | None, session_id: str | None = None) -> None:
        chain = []
        sent_at = None
        while parent is not None and parent in self.lines:
            link = self.lines[parent]
            if link[5]:
                chain.append(link)
                if sent_at is None:
                    sent_at = self.times.get(parent)
            parent = link[0]
        chain.reverse()
        if not chain:
            raise ValueError("an assistant message with no message before it in the chain")
        usage = message.get("usage")
        model = message.get("model")
        self.requests.append(LoggedRequest(
            tuple(s for link in chain for s in link[3]), "".join(link[2] for link in chain), self.path,
            tuple(link[1] for link in chain), "claude-code", CLAUDE_CODE_WIRE.provider,
            model if isinstance(model, str) else None, sent_at or answered_at,
            usage if isinstance(usage, Mapping) else None,
            CLAUDE_CODE_WIRE.log_format if isinstance(usage, Mapping) else None, request_id,
            response_id=_text(message.get("id")), response_model=_text(model),
            finish_reason=_text(message.get("stop_reason")), conversation_id=session_id))

    def finish(self) -> list[LoggedRequest]:
        return self.requests


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
            register_log_format(LogFormat(
                wire.log_format, lambda path, splitter, wire=wire: BodyReader(path, splitter, wire),
                detect=_detects_body(wire), priority=50, title=f"{wire.title} request bodies",
                dialect=wire.name), replace=True)
    register_log_format(LogFormat("claude-code", ClaudeCodeReader, detect=_is_transcript, priority=10,
                                  title="a Claude Code transcript"), replace=True)


_register()

__all__ = ["ImportIssue", "LoggedRequest", "detect", "parse_time", "BodyReader", "ClaudeCodeReader",
           "CLAUDE_CODE_WIRE", "otlp_value", "otlp_attributes", "span_line"]
