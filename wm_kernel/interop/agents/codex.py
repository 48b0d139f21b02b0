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

The rollout holds the conversation's items, not the request bodies; what each request sent is
rebuilt from them: the ``session_meta``'s ``base_instructions`` (the Responses ``instructions``),
then every ``response_item`` written before the request's own output (the developer and user
messages that open the session are the system prompt; later messages, reasoning, function calls and
their outputs are the conversation). The request's output is the items written between the last
input item (a message from the user or developer, a tool call's output) and its ``token_count``.
A ``compacted`` line replaces the conversation with its summary. Each item is cut into sections
once, and every request holding it shares them. The tool schemas are not in a rollout (their size
is inferred from the usage, as for a transcript).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from wm_kernel.dialects.openai_chat import chat_item
from wm_kernel.interop.bodies import Cutter, Part, Section
from wm_kernel.interop.formats import ImportIssue, LogFormat, LoggedRequest, parse_time
from wm_kernel.interop.jsonspan import locate
from wm_kernel.interop.split import Splitter

#: The log format's name and the ``dialect`` of its requests.
DIALECT = "codex"
#: The line types of a rollout.
ROLLOUT_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
#: The shape the request's usage is read as (``wm_kernel.dialects.usage.parse_usage``).
USAGE_SHAPE = "openai.responses"
#: The item types a request sends back as its input (the rest, and assistant messages, are output).
INPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


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

    #: ``read_log`` may pass ``usage_only`` (the usage report): the requests without their sections
    reads_usage_only = True

    def __init__(self, path: str, splitter: Splitter, *, usage_only: bool = False) -> None:
        self.path = path
        self.usage_only = usage_only
        #: whether ``feed`` needs each line's text (the file reader decodes it only then)
        self.keeps_text = not usage_only
        self.requests: list[LoggedRequest] = []
        self.issues: list[ImportIssue] = []
        self.skipped: Counter[str] = Counter()
        self.session: str | None = None
        self.model: str | None = None
        self.compacted = False
        self.totals: set[str] = set()
        self.splitter = splitter
        self.instructions: tuple[Section, ...] = ()
        #: each response item's sections, in order (the conversation so far)
        self.items: list[tuple[Section, ...]] = []
        self.leading = True  # the developer messages that open the session: the system prompt
        self.output = -1  # where the output of the request under way starts in ``items`` (-1: none yet)

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
            if not self.usage_only:
                self._instructions(text, payload)
        elif kind == "turn_context":
            model = payload.get("model")
            self.model = model if isinstance(model, str) and model else self.model
        elif kind == "compacted":
            self.compacted = True
            if not self.usage_only:
                self._compacted(text, payload)
        elif kind == "response_item" and not self.usage_only:
            self._item(text, payload)
        if kind == "event_msg" and payload.get("type") == "token_count":
            self._token_count(line, value, payload)
            return
        self.skipped[kind if kind != "event_msg" else f"event_msg {payload.get('type', '?')}"] += 1

    def _instructions(self, text: str, payload: Mapping[str, Any]) -> None:
        base = payload.get("base_instructions")
        found = base.get("text") if isinstance(base, Mapping) else base
        if not isinstance(found, str) or not found:
            return
        node = locate(text)["payload"]["base_instructions"]
        node = node["text"] if isinstance(base, Mapping) else node
        cut = Cutter(text, self.splitter)
        cut.group(node, "instructions", "system", "system", [Part(node, "split")])
        self.instructions = tuple(cut.finish())

    def _item(self, text: str, item: Mapping[str, Any]) -> None:
        kind, role = item.get("type"), item.get("role")
        sent = role in ("user", "developer", "system") if kind == "message" else kind in INPUT_ITEMS
        self.leading = self.leading and kind == "message" and role in ("developer", "system")
        if sent:
            self.output = -1  # an input after some output: that output was sent back too
        elif self.output < 0:
            self.output = len(self.items)
        cut = Cutter(text, self.splitter)
        cut.element(locate(text)["payload"], chat_item(item, (), f"input[{len(self.items)}]", self.leading))
        self.items.append(tuple(cut.finish()))

    def _compacted(self, text: str, payload: Mapping[str, Any]) -> None:
        """The conversation from here on: the summary, as the message that replaces it."""
        self.items, self.output, self.leading = [], -1, False
        if isinstance(payload.get("message"), str):
            node = locate(text)["payload"]["message"]
            cut = Cutter(text, self.splitter)
            cut.group(node, "input[0] summary", "message", "user", [Part(node, "split")])
            self.items.append(tuple(cut.finish()))

    def _sections(self) -> tuple[tuple[Section, ...], tuple[Section, ...]]:
        """What the request under way sent (instructions and items before its output) and its output."""
        end = self.output if self.output >= 0 else len(self.items)
        sent = list(self.instructions)
        for sections in self.items[:end]:
            sent += sections
        reply: list[Section] = []
        for sections in self.items[end:]:
            reply += sections
        return tuple(sent), tuple(reply)

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
        sent, reply = self._sections()
        self.output = -1
        self.requests.append(
            LoggedRequest(
                sent,
                None if sent else "",
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
                response=reply,
                unlogged=("tools",) if not self.usage_only else (),
            )
        )

    def finish(self) -> list[LoggedRequest]:
        return self.requests


#: the log format ``wm_kernel.interop.readers`` lists under ``codex``
LOG_FORMAT = LogFormat(DIALECT, CodexReader, detect=is_rollout_line, priority=15, title="a Codex CLI rollout")

__all__ = ["CodexReader", "is_rollout_line", "responses_usage", "DIALECT", "ROLLOUT_TYPES", "LOG_FORMAT"]
