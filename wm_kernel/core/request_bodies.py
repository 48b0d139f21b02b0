"""Request bodies for the Anthropic Messages API and OpenAI Chat Completions, as plain dicts.

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

from collections.abc import Iterable, Mapping
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
            raise TypeError(f"history[{index}] must be a dict with role and content, got "
                            f"{type(message).__name__}")
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
            raise ValueError(f"history[{index}] is a second {role!r} message in a row; the Messages "
                             f"API needs user and assistant messages to alternate")
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


def to_anthropic(composed: Mapping[str, Any], history: Iterable[Mapping[str, Any]] = (), *,
                 model: str = DEFAULT_ANTHROPIC_MODEL, max_tokens: int = 1024, cache: bool = True,
                 **extra: Any) -> dict[str, Any]:
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


def to_openai(composed: Mapping[str, Any], history: Iterable[Mapping[str, Any]] = (), *,
              model: str = DEFAULT_OPENAI_MODEL, max_tokens: int | None = None,
              **extra: Any) -> dict[str, Any]:
    """A Chat Completions request body (see the module docstring for where each part goes)."""
    cached, non_cached, before, after = _parts(composed)
    history_messages = _history(history, alternate=False)
    _check_model(model)
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                   or max_tokens < 1):
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
