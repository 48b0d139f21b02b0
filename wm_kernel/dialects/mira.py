"""MIRA's own wire: the Anthropic Messages body MIRA's orchestrator posts (``to_mira``).

Body: :func:`to_mira`. Its parts, in the body's text order: the
conversation-prefix items (assistant text blocks), the conversation, the post-history items (each
the result of a synthetic ``domaindoc_tool`` call), the HUD (an assistant message), the current
user message, then the one system block (cached and non-cached text together), then the tools.

Cache layout (what the simulator plays): the tools with a 1-hour breakpoint on the last, every
system section (cached *and* non-cached: MIRA sends them in one block) with a 1-hour breakpoint on
the last, the prefix items and the conversation with a 1-hour breakpoint on the last assistant
message, one 5-minute breakpoint per post-history item, then the HUD and the user message,
unmarked. So a HUD change invalidates nothing cached, and a change to any system section rewrites
the 1-hour system entry and everything after it. Usage and send are the Anthropic wire's (MIRA
streams every call); a MIRA request is billed by Anthropic.

The current user message (``body(..., user=...)``) is sent after the HUD; a conversation
passed without one is sent as history, its last user message included.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wm_kernel.dialects.anthropic import AnthropicDialect, call_messages
from wm_kernel.dialects.base import (
    BodyRequest,
    CallResult,
    Dialect,
    PartRef,
    Slot,
    TurnPieces,
    check_max_tokens,
    check_model,
    conversation,
    prompt_parts,
    split_user,
)

DEFAULT_MIRA_MODEL = "claude-sonnet-4-6"
#: MIRA's fixed max_tokens, and its clamp for haiku models.
MIRA_MAX_TOKENS = 31999
MIRA_HAIKU_MAX_TOKENS = 8192
#: The thinking budget MIRA gives each effort on models before 4.6.
MIRA_THINKING_BUDGETS = {"low": 1024, "medium": 2048, "high": 8192, "max": 31999}
#: The synthetic tool call each post-history item travels in.
MIRA_DOC_TOOL = "domaindoc_tool"
MIRA_DOC_INPUT = {"operation": "overview"}
#: The most cache breakpoints the Messages API accepts in one request.
API_MAX_BREAKPOINTS = 4
_ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}
_FIVE_MINUTES = {"type": "ephemeral"}


class MiraWireWarning(UserWarning):
    """MIRA's layout, followed as MIRA sends it, is one the Messages API refuses (more than four
    cache breakpoints, an empty text block)."""


def mira_tool_use_id(index: int) -> str:
    """The id of the ``index``-th post-history item's synthetic tool call (``toolu_dd_0000``...)."""
    return f"toolu_dd_{index:04d}"


def model_generation(model: str) -> tuple[int, int]:
    """(major, minor) of a Claude model name (``claude-sonnet-4-6`` -> (4, 6), ``claude-opus-5`` ->
    (5, 0)); (0, 0) when the name has no version."""
    numbers = [int(part) for part in re.split(r"[-.@]", model) if part.isdigit() and len(part) <= 2]
    if not numbers:
        return (0, 0)
    return (numbers[0], numbers[1] if len(numbers) > 1 else 0)


def _mira_tools(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(tools, (str, bytes, Mapping)):
        raise TypeError("tools must be a list of tool definitions (dicts)")
    out = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise TypeError(f"tools[{index}] must be a dict, got {type(tool).__name__}")
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise ValueError(f"tools[{index}] needs a non-empty 'name'")
        out.append(dict(tool))
    if out:
        out[-1]["cache_control"] = dict(_ONE_HOUR)
    return out


@dataclass(frozen=True)
class _MiraMessages:
    """The ``messages`` of a MIRA body and the breakpoints they carry."""

    messages: list[dict[str, Any]]
    history_mark: bool  # the history's last assistant message carries a 1-hour breakpoint
    post_items: int  # one tool_use/tool_result pair each, the result with a 5-minute breakpoint


def _check_mira_content(composed: Mapping[str, Any], history: list[dict[str, str]], user: str | None) -> None:
    """Refuse exactly what MIRA refuses to send. Its provider's ``_validate_messages`` checks the
    whole message list, the system message included, and refuses a message whose content is empty
    or only whitespace: the system text (both parts empty; one empty part alone is sent), the HUD,
    a user message sent as a string (the history's, the current one). Blocks (prefix items,
    assistant messages, tool results) are never empty lists, so MIRA sends them."""
    if not "\n\n".join(p for p in (composed["cached_content"], composed["non_cached_content"]) if p).strip():
        raise ValueError(
            "MIRA refuses to send: the system message is empty (the cached and non-cached content are both empty)"
        )
    for index, message in enumerate(history):
        if message["role"] == "user" and not message["content"].strip():
            raise ValueError(f"MIRA refuses to send: history[{index}], a user message, is empty")
    if not composed["notification_center"].strip():
        raise ValueError("MIRA refuses to send: the notification centre (HUD) is empty")
    if user is not None and not user.strip():
        raise ValueError("MIRA refuses to send: the current user message is empty")


def _check_mira_options(model: str, max_tokens: int, user: str | None, effort: str | None) -> None:
    """The keyword arguments of :func:`to_mira`, each of the right type and range."""
    check_model(model)
    check_max_tokens(max_tokens)
    if user is not None and not isinstance(user, str):
        raise TypeError(f"user must be a str or None, got {type(user).__name__}")
    if effort is not None and effort not in MIRA_THINKING_BUDGETS:
        raise ValueError(f"effort must be one of {', '.join(MIRA_THINKING_BUDGETS)} or None, got {effort!r}")


def _mira_max_tokens(model: str, max_tokens: int, effort: str | None, adaptive: bool) -> int:
    """``max_tokens`` as MIRA sends it: clamped for haiku, plus the thinking budget on older models."""
    if "haiku" in model:
        max_tokens = min(max_tokens, MIRA_HAIKU_MAX_TOKENS)
    if effort is not None and not adaptive:
        max_tokens += MIRA_THINKING_BUDGETS[effort]
    return max_tokens


def _mira_messages(composed: Mapping[str, Any], history: list[dict[str, str]], user: str | None) -> _MiraMessages:
    """Prefix items, the history, the post-history tool pairs, the HUD, then ``user`` (never merged)."""
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": [{"type": "text", "text": item}]}
        for item in composed["conversation_prefix_items"]
    ]
    last_assistant = None
    for message in history:
        if message["role"] == "user":
            messages.append({"role": "user", "content": message["content"]})
        else:
            last_assistant = len(messages)
            messages.append({"role": "assistant", "content": [{"type": "text", "text": message["content"]}]})
    if last_assistant is not None:
        messages[last_assistant]["content"][-1]["cache_control"] = dict(_ONE_HOUR)
    post = list(composed["post_history_items"])
    for index, item in enumerate(post):
        tool_id = mira_tool_use_id(index)
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tool_id, "name": MIRA_DOC_TOOL, "input": dict(MIRA_DOC_INPUT)}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "content": item,
                        "cache_control": dict(_FIVE_MINUTES),
                    }
                ],
            }
        )
    messages.append({"role": "assistant", "content": composed["notification_center"]})
    if user is not None:
        messages.append({"role": "user", "content": user})
    return _MiraMessages(messages, last_assistant is not None, len(post))


def _warn_mira_refusals(built: _MiraMessages, tools: bool) -> None:
    """A :class:`MiraWireWarning` for each layout the API refuses (the warning points at the caller of
    :func:`to_mira`, hence ``stacklevel=3``)."""
    marks = (1 if tools else 0) + 1 + built.history_mark + built.post_items
    if marks > API_MAX_BREAKPOINTS:
        warnings.warn(
            MiraWireWarning(
                f"MIRA's layout puts {marks} cache breakpoints in this request ({built.post_items} post-history "
                f"items, one 5-minute breakpoint each); the Messages API accepts at most {API_MAX_BREAKPOINTS} "
                f"and refuses it"
            ),
            stacklevel=3,
        )
    empty = [
        i
        for i, m in enumerate(built.messages)
        if isinstance(m["content"], list) and any(b.get("type") == "text" and not b["text"] for b in m["content"])
    ]
    if empty:
        warnings.warn(
            MiraWireWarning(
                f"messages[{empty[0]}] is an empty text block (MIRA sends an empty item as one); the Messages "
                f"API refuses empty text blocks"
            ),
            stacklevel=3,
        )


def to_mira(
    composed: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]] = (),
    *,
    user: str | None = None,
    tools: Iterable[Mapping[str, Any]] = (),
    model: str = DEFAULT_MIRA_MODEL,
    max_tokens: int = MIRA_MAX_TOKENS,
    effort: str | None = None,
) -> dict[str, Any]:
    """The body MIRA's orchestrator posts (``ComposedPrompt.to_mira``; ``docs/deviations.md`` lists
    where it differs from the kit's), keys in the order the SDK writes them (``max_tokens, messages,
    model, [output_config], system, [temperature | thinking], [tools], stream``):

    * ``system``: one text block, the cached and non-cached content joined by a blank line (an
      empty part left out: an empty cached part sends the non-cached part alone), with a 1-hour
      breakpoint.
    * MIRA refuses to send (a ValueError saying so, raised before anything is built) a message
      whose content is empty or only whitespace, as its provider's ``_validate_messages`` does:
      both system parts empty, an empty or blank HUD, an empty ``user`` or history user message.
    * ``tools``: copies of the given dicts in order, the last with a 1-hour breakpoint (omitted
      when none).
    * ``messages``, never merged: each conversation-prefix item as an assistant text block (an
      empty item too); the history as given (user messages as strings, assistant messages as one
      text block, the last assistant message's block with a 1-hour breakpoint); for each
      post-history item a ``domaindoc_tool`` ``tool_use`` (ids ``toolu_dd_0000``,
      ``toolu_dd_0001``...) and its ``tool_result`` holding the item, with a 5-minute breakpoint;
      the HUD as an assistant string; then ``user`` when given.
    * ``temperature: 1.0`` without ``effort``; with one (``low``, ``medium``, ``high``, ``max``),
      on a 4.6 or later model ``thinking: {"type": "adaptive", "display": "summarized"}`` and
      ``output_config: {"effort": effort}``, on an older one ``thinking: {"type": "enabled",
      "budget_tokens": B}`` (1024, 2048, 8192, 31999) with B added to ``max_tokens``; a model whose
      name holds "haiku" has ``max_tokens`` clamped to 8192 first. ``stream`` is always true.
    * Where MIRA's layout is one the API refuses (more than four breakpoints, from two or more
      post-history items; an empty text block), the body is built as MIRA builds it and a
      :class:`MiraWireWarning` says so.

    Long because: its docstring is MIRA's body, field by field; the building is in the helpers above.
    """
    if not isinstance(composed, Mapping):
        raise TypeError(f"expected a ComposedPrompt or five-key dict, got {type(composed).__name__}")
    prompt_parts(composed)  # the five keys, typed
    messages_in = conversation(history, alternate=False)
    _check_mira_options(model, max_tokens, user, effort)
    _check_mira_content(composed, messages_in, user)
    tool_list = _mira_tools(tools)
    adaptive = model_generation(model) >= (4, 6)
    built = _mira_messages(composed, messages_in, user)
    _warn_mira_refusals(built, bool(tool_list))

    body: dict[str, Any] = {
        "max_tokens": _mira_max_tokens(model, max_tokens, effort, adaptive),
        "messages": built.messages,
        "model": model,
    }
    if effort is not None and adaptive:
        body["output_config"] = {"effort": effort}
    system = "\n\n".join(p for p in (composed["cached_content"], composed["non_cached_content"]) if p)
    body["system"] = [{"type": "text", "text": system, "cache_control": dict(_ONE_HOUR)}]
    if effort is None:
        body["temperature"] = 1.0
    elif adaptive:
        body["thinking"] = {"type": "adaptive", "display": "summarized"}
    else:
        body["thinking"] = {"type": "enabled", "budget_tokens": MIRA_THINKING_BUDGETS[effort]}
    if tool_list:
        body["tools"] = tool_list
    body["stream"] = True
    return body


class MiraDialect(Dialect):
    """MIRA's wire (see the module docstring)."""

    name = "mira"
    rank = 50
    provider = "anthropic"
    serves = ("anthropic",)
    sdk = "anthropic"
    client = "anthropic.Anthropic"
    title = "a MIRA Messages"
    layout = "original"
    default_model = "claude-sonnet-4-6"

    def build(self, request: BodyRequest) -> dict[str, Any]:
        return to_mira(request.composed, request.history, user=request.user, tools=request.tools, **request.options)

    def wire_parts(self, composed: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> list[PartRef]:
        before, user = split_user(history)
        parts = [PartRef(f"conversation_prefix_items[{i}]") for i in range(len(composed["conversation_prefix_items"]))]
        parts += [PartRef(f"history[{i}]") for i in range(len(before))]
        parts += [PartRef(f"post_history_items[{i}]") for i in range(len(composed["post_history_items"]))]
        parts.append(PartRef("notification_center"))
        if user is not None:
            parts.append(PartRef(f"history[{len(before)}]"))
        parts += [PartRef(key) for key in ("cached_content", "non_cached_content") if composed[key]]
        return parts

    def framed_messages(self, body: Mapping[str, Any]) -> int:
        return len(body.get("messages", ())) + 1

    plain_history = True

    def cache_layout(self, turn: TurnPieces) -> list[Slot]:
        tools, system = list(turn.tools), list(turn.system)
        slots = [Slot(p, "tools", "1h" if i == len(tools) - 1 else None) for i, p in enumerate(tools)]
        slots += [Slot(p, "system", "1h" if i == len(system) - 1 else None) for i, p in enumerate(system)]
        slots += [Slot(p, "messages") for p in turn.prefix]
        assistant = [i for i, p in enumerate(turn.conversation) if p.role == "assistant"]
        last = assistant[-1] if assistant else None
        slots += [Slot(p, "messages", "1h" if i == last else None) for i, p in enumerate(turn.conversation)]
        slots += [Slot(p, "messages", "5m") for p in turn.post_history]
        slots += [Slot(p, "messages") for p in turn.notification]
        if turn.user is not None:
            slots.append(Slot(turn.user, "messages"))
        return slots

    def call(self, client: Any, body: dict[str, Any], stream: bool, on_text: Callable[[str], None]) -> CallResult:
        return call_messages(client, body, stream, on_text)

    #: a MIRA body is a Messages body: read back as Anthropic's are (its own sections are the tap
    #: reader's, ``wm_kernel.interop.mira.sections``)
    body_elements = AnthropicDialect.body_elements


#: the wire the registry lists under ``mira``
DIALECT = MiraDialect()

__all__ = [
    "DEFAULT_MIRA_MODEL",
    "MIRA_MAX_TOKENS",
    "MIRA_HAIKU_MAX_TOKENS",
    "MIRA_THINKING_BUDGETS",
    "MIRA_DOC_TOOL",
    "MIRA_DOC_INPUT",
    "API_MAX_BREAKPOINTS",
    "MiraWireWarning",
    "mira_tool_use_id",
    "model_generation",
    "to_mira",
    "MiraDialect",
    "DIALECT",
]
