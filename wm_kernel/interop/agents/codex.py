"""OpenAI Codex CLI rollouts read into the requests they billed.

A rollout (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) is JSON Lines, one ``{"timestamp",
"type", "payload"}`` a line: ``session_meta`` (the session's id), ``turn_context`` (the model and
effort in force from then on), ``response_item`` (messages, reasoning, function calls and their
outputs), ``event_msg`` and ``compacted``. The facts the reader keeps:

- An ``event_msg`` whose payload is a ``token_count`` with ``info`` is one request: its own usage
  is ``info.last_token_usage`` (``input_tokens`` includes ``cached_input_tokens``,
  ``output_tokens`` includes ``reasoning_output_tokens``), read as OpenAI Responses usage; the
  session's running total ``info.total_token_usage`` is not summed.
- Codex writes the same totals twice (one ``token_count`` per event it reports): a
  ``token_count`` whose ``total_token_usage`` equals one before is the same request, counted once
  (skipped as ``repeated token_count``; the totals only grow, so equal totals are one request);
  ``info: null`` (a rate-limit report) carries none.
- The model is the last ``turn_context``'s (each request its own); a ``compacted`` line marks the
  next request ``after-compaction``.

The rollout holds the conversation's items, not the request bodies: a request has no sections (its
size comes from its usage, as a stored response's does).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from wm_kernel.interop.formats import ImportIssue, LogFormat, LoggedRequest, parse_time
from wm_kernel.interop.split import Splitter

#: The log format's name and the ``dialect`` of its requests.
DIALECT = "codex"
#: The line types of a rollout.
ROLLOUT_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
#: The shape the request's usage is read as (``wm_kernel.dialects.usage.parse_usage``).
USAGE_SHAPE = "openai.responses"


def is_rollout_line(value: Any) -> bool:
    """Whether a parsed record is a line of a Codex rollout."""
    return (
        isinstance(value, Mapping)
        and value.get("type") in ROLLOUT_TYPES
        and "payload" in value
        and "timestamp" in value
        and "sessionId" not in value
    )


def responses_usage(last: Mapping[str, Any]) -> dict[str, Any]:
    """Codex's ``last_token_usage`` in the OpenAI Responses shape it reports (the cached input and
    the reasoning output in their ``_details``), for the one usage parser."""
    usage: dict[str, Any] = {
        "input_tokens": last.get("input_tokens"),
        "input_tokens_details": {"cached_tokens": last.get("cached_input_tokens") or 0},
        "output_tokens": last.get("output_tokens"),
        "output_tokens_details": {"reasoning_tokens": last.get("reasoning_output_tokens") or 0},
    }
    if "total_tokens" in last:
        usage["total_tokens"] = last["total_tokens"]
    return usage


class CodexReader:
    """The requests of one rollout (see the module docstring)."""

    def __init__(self, path: str, splitter: Splitter) -> None:
        self.path = path
        self.requests: list[LoggedRequest] = []
        self.issues: list[ImportIssue] = []
        self.skipped: Counter[str] = Counter()
        self.session: str | None = None
        self.model: str | None = None
        self.compacted = False
        self.totals: set[str] = set()

    def feed(self, line: int, text: str, value: Any) -> None:
        if not is_rollout_line(value):
            raise ValueError("not a Codex rollout line (no type and payload)")
        kind = value["type"]
        payload = value["payload"]
        if not isinstance(payload, Mapping):
            raise ValueError(f"{kind}: payload must be an object, got {type(payload).__name__}")
        if kind == "session_meta":
            found = payload.get("id")
            self.session = found if isinstance(found, str) and found else self.session
        elif kind == "turn_context":
            model = payload.get("model")
            self.model = model if isinstance(model, str) and model else self.model
        elif kind == "compacted":
            self.compacted = True
        if kind == "event_msg" and payload.get("type") == "token_count":
            self._token_count(line, value, payload)
            return
        self.skipped[kind if kind != "event_msg" else f"event_msg {payload.get('type', '?')}"] += 1

    def _token_count(self, line: int, value: Mapping[str, Any], payload: Mapping[str, Any]) -> None:
        info = payload.get("info")
        if info is None:
            self.skipped["token_count without usage"] += 1
            return
        if not isinstance(info, Mapping) or not isinstance(info.get("last_token_usage"), Mapping):
            raise ValueError("token_count: info.last_token_usage must be an object")
        total = info.get("total_token_usage")
        if total is not None:
            key = json.dumps(total, sort_keys=True)
            if key in self.totals:
                self.skipped["repeated token_count"] += 1
                return
            self.totals.add(key)
        marks = ("after-compaction",) if self.compacted else ()
        self.compacted = False
        self.requests.append(
            LoggedRequest(
                (),
                "",
                self.path,
                (line,),
                DIALECT,
                "openai",
                self.model,
                parse_time(value.get("timestamp"), "timestamp"),
                responses_usage(info["last_token_usage"]),
                USAGE_SHAPE,
                conversation=self.session,
                conversation_id=self.session,
                marks=marks,
            )
        )

    def finish(self) -> list[LoggedRequest]:
        return self.requests


#: the log format ``wm_kernel.interop.readers`` lists under ``codex``
LOG_FORMAT = LogFormat(DIALECT, CodexReader, detect=is_rollout_line, priority=15, title="a Codex CLI rollout")

__all__ = ["CodexReader", "is_rollout_line", "responses_usage", "DIALECT", "ROLLOUT_TYPES", "LOG_FORMAT"]
