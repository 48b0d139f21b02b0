"""Request bodies for the Anthropic Messages API (the kit's layout and MIRA's) and OpenAI Chat
Completions, as plain dicts.

No SDK is needed: the result is ready for ``json.dumps`` and an HTTP POST (or ``client.messages.create
(**body)``). ``ComposedPrompt.to_anthropic`` / ``to_openai`` call these.

Where each part of a composed prompt goes
-----------------------------------------
``to_anthropic(composed, history=(), *, model="claude-sonnet-4-5", max_tokens=1024, cache=True,
**extra)``

* ``system``: a list of text blocks: the cached content first, with ``cache_control:
  {"type": "ephemeral"}`` (the cache breakpoint: everything up to and including it is the cached
  prefix), then the non-cached content as a second block. Empty blocks are left out (the API
  rejects empty text blocks); ``system`` is omitted when both are empty. ``cache=False`` leaves out
  ``cache_control``.
* conversation-prefix items go *before* the history, as text blocks at the start of the first user
  message (merged into it when the history starts with a user message, else as a user message of
  their own), so no invented assistant turn is needed.
* post-history items, then the notification centre (the HUD), go *after* the history, as text blocks
  appended to the last message when it is from the user (the current user turn), else as a new user
  message at the end. Roles therefore keep alternating.
* a message whose content was merged with injected parts has a list of text blocks as content (the
  user's own text as one block, in its place); untouched messages keep their string content.

``to_openai(composed, history=(), *, model="gpt-4o", max_tokens=None, **extra)`` builds a Chat
Completions body the same way, with one ``{"role": "system"}`` message (cached and non-cached content
joined by a blank line) and injected parts joined to the neighbouring user message's text by blank
lines (content stays a string). ``max_tokens`` becomes ``max_completion_tokens``.

``to_mira(composed, history=(), *, user=None, tools=(), model="claude-sonnet-4-6", max_tokens=31999,
effort=None)`` builds the body MIRA's orchestrator posts (``docs/deviations.md`` lists where it
differs from the kit's; the wire's cache consequences are in ``wm_kernel.dialects.mira``), keys in
the order the SDK writes them (``max_tokens, messages, model, [output_config], system,
[temperature | thinking], [tools], stream``):

* ``system``: one text block, the cached and non-cached content joined by a blank line (an empty
  part left out: an empty cached part sends the non-cached part alone), with a 1-hour breakpoint.
* MIRA refuses to send (a ValueError saying so, raised before anything is built) a message whose
  content is empty or only whitespace, as its provider's ``_validate_messages`` does: both system
  parts empty, an empty or blank HUD, an empty ``user`` or history user message.
* ``tools``: copies of the given dicts in order, the last with a 1-hour breakpoint (omitted when
  none).
* ``messages``, never merged: each conversation-prefix item as an assistant text block (an empty
  item too); the history as given (user messages as strings, assistant messages as one text block,
  the last assistant message's block with a 1-hour breakpoint); for each post-history item a
  ``domaindoc_tool`` ``tool_use`` (ids ``toolu_dd_0000``, ``toolu_dd_0001``...) and its
  ``tool_result`` holding the item, with a 5-minute breakpoint; the HUD as an assistant string;
  then ``user`` when given.
* ``temperature: 1.0`` without ``effort``; with one (``low``, ``medium``, ``high``, ``max``), on
  a 4.6 or later model ``thinking: {"type": "adaptive", "display": "summarized"}`` and
  ``output_config: {"effort": effort}``, on an older one ``thinking: {"type": "enabled",
  "budget_tokens": B}`` (1024, 2048, 8192, 31999) with B added to ``max_tokens``; a model whose
  name holds "haiku" has ``max_tokens`` clamped to 8192 first. ``stream`` is always true.
* Where MIRA's layout is one the API refuses (more than four breakpoints, from two or more
  post-history items; an empty text block), the body is built as MIRA builds it and a
  :class:`MiraWireWarning` says so.

``history`` is a sequence of ``{"role": "user" | "assistant", "content": str}``; anything else is a
ValueError/TypeError naming the entry. For Anthropic, consecutive messages with the same role are an
error (the Messages API requires alternation). ``extra`` keys (``temperature``, ``tools``, ...) are
copied into the body; they may not replace ``system`` or ``messages``.

Examples
--------
>>> from wm_kernel.core.prompt import ComposedPrompt
>>> p = ComposedPrompt("You help.", "Today's note.", notification_center="HUD")
>>> body = to_anthropic(p, history=[{"role": "user", "content": "Hi"}], model="m", max_tokens=50)
>>> body["system"][0]
{'type': 'text', 'text': 'You help.', 'cache_control': {'type': 'ephemeral'}}
>>> body["messages"]
[{'role': 'user', 'content': [{'type': 'text', 'text': 'Hi'}, {'type': 'text', 'text': 'HUD'}]}]
>>> to_openai(p, history=[{"role": "user", "content": "Hi"}], model="m")["messages"][1]
{'role': 'user', 'content': 'Hi\\n\\nHUD'}
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from wm_kernel.core.prompt_dict import COMPOSED_KEYS

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
DEFAULT_OPENAI_MODEL = "gpt-4o"
_RESERVED = ("system", "messages")


def _parts(composed: Mapping[str, Any]) -> tuple[str, str, list[str], list[str]]:
    """(cached, non_cached, before-history parts, after-history parts), validated."""
    if not isinstance(composed, Mapping):
        raise TypeError(f"expected a ComposedPrompt or five-key dict, got {type(composed).__name__}")
    missing = [k for k in COMPOSED_KEYS if k not in composed]
    if missing:
        raise ValueError(f"composed prompt is missing keys: {', '.join(missing)}")
    for key in ("cached_content", "non_cached_content", "notification_center"):
        if not isinstance(composed[key], str):
            raise TypeError(f"{key} must be a str, got {type(composed[key]).__name__}")
    for key in ("conversation_prefix_items", "post_history_items"):
        items = composed[key]
        if isinstance(items, str) or not all(isinstance(i, str) for i in items):
            raise TypeError(f"{key} must be a list of strings")
    before = [i for i in composed["conversation_prefix_items"] if i.strip()]
    after = [i for i in composed["post_history_items"] if i.strip()]
    if composed["notification_center"].strip():
        after.append(composed["notification_center"])
    return composed["cached_content"], composed["non_cached_content"], before, after


def _history(history: Iterable[Mapping[str, Any]], *, alternate: bool) -> list[dict[str, str]]:
    if isinstance(history, (str, bytes, Mapping)):
        raise TypeError("history must be a list of {'role', 'content'} messages")
    out: list[dict[str, str]] = []
    for index, message in enumerate(history):
        if not isinstance(message, Mapping):
            raise TypeError(f"history[{index}] must be a dict with role and content, got {type(message).__name__}")
        unknown = sorted(set(message) - {"role", "content"})
        if unknown:
            raise ValueError(f"history[{index}] has unknown keys {unknown}; expected role and content")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise ValueError(f"history[{index}].role must be 'user' or 'assistant', got {role!r}")
        content = message.get("content")
        if not isinstance(content, str):
            raise TypeError(f"history[{index}].content must be a str, got {type(content).__name__}")
        if alternate and out and out[-1]["role"] == role:
            raise ValueError(
                f"history[{index}] is a second {role!r} message in a row; the Messages "
                f"API needs user and assistant messages to alternate"
            )
        out.append({"role": role, "content": content})
    return out


def _extra(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    clash = [k for k in extra if k in _RESERVED]
    if clash:
        raise ValueError(f"{', '.join(clash)} is built from the composed prompt and cannot be passed")
    body.update(extra)
    return body


def _check_model(model: object) -> str:
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"model must be a non-empty string, got {model!r}")
    return model


def to_anthropic(
    composed: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]] = (),
    *,
    model: str = DEFAULT_ANTHROPIC_MODEL,
    max_tokens: int = 1024,
    cache: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """A Messages API request body (see the module docstring for where each part goes)."""
    cached, non_cached, before, after = _parts(composed)
    messages: list[dict[str, Any]] = _history(history, alternate=True)
    _check_model(model)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")

    def blocks(texts: list[str]) -> list[dict[str, Any]]:
        return [{"type": "text", "text": t} for t in texts]

    if before:
        if messages and messages[0]["role"] == "user":
            messages[0] = {"role": "user", "content": blocks(before + [messages[0]["content"]])}
        else:
            messages.insert(0, {"role": "user", "content": blocks(before)})
    if after:
        if messages and messages[-1]["role"] == "user":
            last = messages[-1]["content"]
            head = last if isinstance(last, list) else blocks([last])
            messages[-1] = {"role": "user", "content": head + blocks(after)}
        else:
            messages.append({"role": "user", "content": blocks(after)})
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    system: list[dict[str, Any]] = []
    if cached:
        block: dict[str, Any] = {"type": "text", "text": cached}
        if cache:
            block["cache_control"] = {"type": "ephemeral"}
        system.append(block)
    if non_cached:
        system.append({"type": "text", "text": non_cached})
    if system:
        body["system"] = system
    body["messages"] = messages
    return _extra(body, extra)


def to_openai(
    composed: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]] = (),
    *,
    model: str = DEFAULT_OPENAI_MODEL,
    max_tokens: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Chat Completions request body (see the module docstring for where each part goes)."""
    cached, non_cached, before, after = _parts(composed)
    history_messages = _history(history, alternate=False)
    _check_model(model)
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError(f"max_tokens must be a positive int or None, got {max_tokens!r}")
    messages: list[dict[str, Any]] = list(history_messages)
    if before:
        if messages and messages[0]["role"] == "user":
            messages[0] = {"role": "user", "content": "\n\n".join(before + [messages[0]["content"]])}
        else:
            messages.insert(0, {"role": "user", "content": "\n\n".join(before)})
    if after:
        if messages and messages[-1]["role"] == "user":
            messages[-1] = {"role": "user", "content": "\n\n".join([messages[-1]["content"], *after])}
        else:
            messages.append({"role": "user", "content": "\n\n".join(after)})
    system = "\n\n".join(p for p in (cached, non_cached) if p)
    if system:
        messages.insert(0, {"role": "system", "content": system})
    body: dict[str, Any] = {"model": model, "messages": messages}
    if max_tokens is not None:
        body["max_completion_tokens"] = max_tokens
    return _extra(body, extra)


# -- MIRA's own wire ------------------------------------------------------------------------------

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
    _check_model(model)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
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
    """The body MIRA's orchestrator posts (see the module docstring for every field)."""
    if not isinstance(composed, Mapping):
        raise TypeError(f"expected a ComposedPrompt or five-key dict, got {type(composed).__name__}")
    _parts(composed)  # the five keys, typed
    messages_in = _history(history, alternate=False)
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
