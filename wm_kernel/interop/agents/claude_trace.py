"""claude-trace captures read into requests: the whole request Claude Code sent, and what it billed.

claude-trace (a proxy in front of Claude Code) writes JSON Lines, one request/response pair a
line: ``{"request": {"timestamp", "method", "url", "headers", "body"}, "response": {"timestamp",
"status_code", "headers", "body" or "body_raw"}, "logged_at"}``. The facts the reader keeps:

- The request body is the Anthropic Messages request as sent (system prompt, tools, messages,
  ``cache_control`` marks): a request's source and sections are that body's text alone, cut as an
  envelope log's body is, so every view (the wire, the cache simulator, reconcile's causes) sees
  its sections and marks.
- A streamed response is kept as its raw server-sent events in ``body_raw``: ``message_start``
  carries the message id, model and the input, cache-read and cache-write counts,
  ``message_delta`` the final ``output_tokens`` (and any count it repeats, which replaces the
  start's); a plain response's ``body`` is the message with its usage.
- Most calls are side calls on another model (quota probes, titles, topic detection): each model's
  calls are a conversation of their own (``LoggedRequest.conversation``), with its own cache.
- The headers hold the user's credentials: the reader never keeps them, nor the line they were
  in: only the body's text, the usage, ids, model and times leave the reader.

A pair that is not a Messages call (another endpoint), or whose response is an error, carries no
billed request: it is counted in ``skipped``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from wm_kernel.dialects.registry import get_dialect
from wm_kernel.interop.bodies import cut_body
from wm_kernel.interop.formats import ImportIssue, LogFormat, LoggedRequest
from wm_kernel.interop.jsonspan import locate
from wm_kernel.interop.split import Splitter

#: The log format's name.
FORMAT = "claude-trace"
#: The wire a captured body is on.
WIRE = get_dialect("anthropic")


def is_capture_line(value: Any) -> bool:
    """Whether a parsed record is one request/response pair of a claude-trace capture."""
    if not isinstance(value, Mapping):
        return False
    request, response = value.get("request"), value.get("response")
    return (
        isinstance(request, Mapping)
        and isinstance(response, Mapping)
        and "url" in request
        and "method" in request
        and ("body" in response or "body_raw" in response or "status_code" in response)
    )


def streamed_message(raw: str) -> dict[str, Any]:
    """The message a stream of server-sent events describes: ``message_start``'s message (id,
    model, usage), its usage updated by each ``message_delta`` (the final ``output_tokens``) and its
    ``stop_reason``. ValueError when the stream has no ``message_start``."""
    message: dict[str, Any] | None = None
    for line in raw.split("\n"):
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data.startswith("{"):
            continue
        try:
            event = json.loads(data)
        except json.JSONDecodeError:
            continue  # a cut-off event of a stream that ended early
        if not isinstance(event, Mapping):
            continue
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), Mapping):
            message = dict(event["message"])
            message["usage"] = dict(message.get("usage") or {})
        elif kind == "message_delta" and message is not None:
            usage = event.get("usage")
            if isinstance(usage, Mapping):
                message["usage"].update({k: v for k, v in usage.items() if v is not None})
            delta = event.get("delta")
            if isinstance(delta, Mapping) and delta.get("stop_reason"):
                message["stop_reason"] = delta["stop_reason"]
    if message is None:
        raise ValueError("streamed response without a message_start event")
    return message


def _time(value: Any) -> datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class ClaudeTraceReader:
    """The requests of one capture (see the module docstring)."""

    def __init__(self, path: str, splitter: Splitter) -> None:
        self.path = path
        self.splitter = splitter
        self.requests: list[LoggedRequest] = []
        self.issues: list[ImportIssue] = []
        self.skipped: Counter[str] = Counter()

    def feed(self, line: int, text: str, value: Any) -> None:
        if not is_capture_line(value):
            raise ValueError("not a claude-trace request/response pair")
        request, response = value["request"], value["response"]
        body = request.get("body")
        url = str(request.get("url") or "")
        if "/v1/messages" not in url or "count_tokens" in url or not isinstance(body, Mapping):
            self.skipped["other call"] += 1
            return
        if not isinstance(body.get("messages"), list):
            raise ValueError("request.body: not an Anthropic Messages request (no 'messages' list)")
        status = response.get("status_code")
        if isinstance(status, int) and not 200 <= status < 300:
            self.skipped[f"failed call (status {status})"] += 1
            return
        raw = response.get("body_raw")
        if isinstance(response.get("body"), Mapping):
            answer: Mapping[str, Any] = response["body"]
        elif isinstance(raw, str):
            answer = streamed_message(raw)
        else:
            raise ValueError("response: neither a body nor the raw stream (body_raw)")
        usage = answer.get("usage")
        if usage is not None and not isinstance(usage, Mapping):
            raise ValueError(f"response usage must be an object, got {type(usage).__name__}")
        # only the body's own text is kept: the headers beside it never leave this method
        node = locate(text)["request"]["body"]
        source = text[node.start : node.end]
        model = _text(body.get("model")) or _text(answer.get("model"))
        self.requests.append(
            LoggedRequest(
                tuple(cut_body(source, body, WIRE.name, self.splitter)),
                source,
                self.path,
                (line,),
                WIRE.log_format,
                WIRE.provider,
                model,
                _time(request.get("timestamp")),
                dict(usage) if usage else None,
                WIRE.log_format if usage else None,
                conversation=f"{self.path}#{model or 'unknown model'}",
                response_id=_text(answer.get("id")),
                response_model=_text(answer.get("model")),
                finish_reason=_text(answer.get("stop_reason")),
            )
        )

    def finish(self) -> list[LoggedRequest]:
        return self.requests


#: the log format ``wm_kernel.interop.readers`` lists under ``claude-trace``
LOG_FORMAT = LogFormat(FORMAT, ClaudeTraceReader, detect=is_capture_line, priority=30, title="a claude-trace capture")

__all__ = ["ClaudeTraceReader", "is_capture_line", "streamed_message", "FORMAT", "LOG_FORMAT"]
