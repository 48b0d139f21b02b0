"""The Anthropic Messages wire as the kit lays it out (``ComposedPrompt.to_anthropic``).

Body: :func:`to_anthropic` (two system blocks, a 5-minute breakpoint after the cached text,
injected parts merged into user messages). Usage: ``input_tokens`` are the tokens
after the last breakpoint, ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are added
to them, ``cache_creation.ephemeral_1h_input_tokens`` says how many writes were 1-hour ones. Send:
``client.messages.create`` / ``client.messages.stream`` of the ``anthropic`` SDK. Logs: JSON Lines of
Messages request bodies (format ``anthropic``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from wm_kernel.dialects.base import (
    BodyRequest,
    CallResult,
    Dialect,
    PartRef,
    Slot,
    TurnPieces,
    add_options,
    check_max_tokens,
    check_model,
    conversation,
    prompt_parts,
    with_user,
)
from wm_kernel.dialects.counts import UsageCounts, add_counts, usage_details, usage_int
from wm_kernel.dialects.elements import (
    BodyElement,
    BodyPart,
    Path,
    block_part,
    mark_last_cacheable,
    message_parts,
    tool_section,
    ttl_of,
)
from wm_kernel.dialects.kit import kit_cache_layout, kit_wire_parts

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
DEFAULT_ANTHROPIC_MAX_TOKENS = 1024


def to_anthropic(
    composed: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]] = (),
    *,
    model: str = DEFAULT_ANTHROPIC_MODEL,
    max_tokens: int = DEFAULT_ANTHROPIC_MAX_TOKENS,
    cache: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """A Messages API request body, as plain data (``ComposedPrompt.to_anthropic``).

    * ``system``: a list of text blocks: the cached content first, with ``cache_control:
      {"type": "ephemeral"}`` (the cache breakpoint: everything up to and including it is the
      cached prefix), then the non-cached content as a second block. Empty blocks are left out
      (the API rejects empty text blocks); ``system`` is omitted when both are empty.
      ``cache=False`` leaves out ``cache_control``.
    * conversation-prefix items go *before* the history, as text blocks at the start of the first
      user message (merged into it when the history starts with a user message, else as a user
      message of their own), so no invented assistant turn is needed.
    * post-history items, then the notification centre (the HUD), go *after* the history, as text
      blocks appended to the last message when it is from the user (the current user turn), else
      as a new user message at the end. Roles therefore keep alternating.
    * a message whose content was merged with injected parts has a list of text blocks as content
      (the user's own text as one block, in its place); untouched messages keep their string
      content.

    ``history`` is a sequence of ``{"role": "user" | "assistant", "content": str}`` that alternate
    (the Messages API requires it); anything else is a ValueError/TypeError naming the entry.
    ``extra`` keys (``temperature``, ``tools``, ...) are copied into the body; they may not replace
    ``system`` or ``messages``.

    Long because: its docstring is the wire's contract, part by part, with a worked example.

    >>> p = {"cached_content": "You help.", "non_cached_content": "Today's note.",
    ...      "conversation_prefix_items": [], "post_history_items": [], "notification_center": "HUD"}
    >>> body = to_anthropic(p, history=[{"role": "user", "content": "Hi"}], model="m", max_tokens=50)
    >>> body["system"][0]
    {'type': 'text', 'text': 'You help.', 'cache_control': {'type': 'ephemeral'}}
    >>> body["messages"]
    [{'role': 'user', 'content': [{'type': 'text', 'text': 'Hi'}, {'type': 'text', 'text': 'HUD'}]}]
    """
    cached, non_cached, before, after = prompt_parts(composed)
    messages: list[dict[str, Any]] = conversation(history, alternate=True)
    check_model(model)
    check_max_tokens(max_tokens)

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
    return add_options(body, extra)


def tool_element(tool: Any, index: int) -> BodyElement:
    """The ``index``-th tool of a Messages body (its JSON one section, named by its ``name``)."""
    name = tool.get("name", index) if isinstance(tool, Mapping) else index
    return BodyElement(("tools", index), tool_section(name), "tool", "tools", (), ttl_of(tool))


def message_element(message: Any, at: Path, name: str, first: int = 0) -> BodyElement:
    """One Messages message at ``at``: its blocks (numbered from ``first``), the cache mark of its
    last marked block; a mid-conversation system message stays where it is sent, among the
    messages."""
    if not isinstance(message, Mapping):
        return BodyElement(at, name, "message", None)
    role = str(message.get("role", "?"))
    content = message.get("content")
    mark = None
    if isinstance(content, list):
        mark = next((m for m in reversed([ttl_of(block) for block in content]) if m), None)
    return BodyElement(at, f"{name} {role}", "message", role, tuple(message_parts(message, first)), mark)


def messages_elements(body: Mapping[str, Any]) -> list[BodyElement]:
    """A Messages request body's elements: tools, system (a string or blocks), messages; a
    request-level ``cache_control`` (automatic caching) marks the last cacheable block."""
    elements: list[BodyElement] = []
    for key, value in body.items():
        if key == "tools" and isinstance(value, list):
            elements += [tool_element(tool, index) for index, tool in enumerate(value)]
        elif key == "system" and isinstance(value, str):
            elements.append(BodyElement(("system",), "system", "system", "system", (BodyPart((), "split"),)))
        elif key == "system" and isinstance(value, list):
            elements += [
                BodyElement(("system", i), f"system[{i}]", "system", "system", (block_part(b, (), ""),), ttl_of(b))
                for i, b in enumerate(value)
            ]
        elif key == "messages" and isinstance(value, list):
            elements += [message_element(m, ("messages", i), f"msg[{i}]") for i, m in enumerate(value)]
    automatic = ttl_of(body)
    return mark_last_cacheable(elements, automatic) if automatic is not None else elements


def read_messages_usage(usage: Mapping[str, Any], where: str) -> UsageCounts:
    """A Messages API usage object's counts. With server-side steps
    (``usage.iterations``: a compaction, then the message) the bill is the sum over the steps, and
    the top-level counts, which leave the compaction step out, are not read."""
    steps = usage.get("iterations")
    if steps:  # Claude Code writes an empty list where the server took one step
        if not isinstance(steps, list) or not all(isinstance(s, Mapping) for s in steps):
            raise ValueError(f"{where}: usage.iterations must be a list of objects")
        return add_counts([_one_step(step, f"{where} iterations[{i}]") for i, step in enumerate(steps)])
    return _one_step(usage, where)


def _one_step(usage: Mapping[str, Any], where: str) -> UsageCounts:
    written = usage_int(usage, "cache_creation_input_tokens", where)
    creation = usage_details(usage, "cache_creation", where)
    one_hour = usage_int(creation, "ephemeral_1h_input_tokens", where)
    if one_hour > written:
        raise ValueError(
            f"{where}: ephemeral_1h_input_tokens ({one_hour}) exceed cache_creation_input_tokens ({written})"
        )
    return UsageCounts(
        usage_int(usage, "input_tokens", where),
        usage_int(usage, "cache_read_input_tokens", where),
        {"5m": written - one_hour, "1h": one_hour},
        usage_int(usage, "output_tokens", where),
    )


def sdk_params(method: Callable[..., Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` as keyword arguments of an SDK ``method``: the fields it names, and the rest in its
    ``extra_body`` (an SDK version without a ``temperature`` parameter still posts it)."""
    accepted = set(inspect.signature(method).parameters)
    params = {k: v for k, v in body.items() if k in accepted}
    extra = {k: v for k, v in body.items() if k not in accepted}
    if extra:
        params["extra_body"] = {**params.get("extra_body", {}), **extra}
    return params


def call_messages(client: Any, body: dict[str, Any], stream: bool, on_text: Callable[[str], None]) -> CallResult:
    """Send a Messages body with an ``anthropic`` client (streamed when ``stream`` or when the body
    asks for it with ``"stream": true``; ``on_text`` hears the reply as it comes when ``stream``)."""
    if stream or body.get("stream") is True:
        method = client.messages.stream
        with method(**sdk_params(method, {k: v for k, v in body.items() if k != "stream"})) as events:
            for text in events.text_stream:
                if stream:
                    on_text(text)
            message = events.get_final_message()
            request_id = getattr(events, "request_id", None)
    else:
        method = client.messages.create
        message = method(**sdk_params(method, body))
        request_id = getattr(message, "_request_id", None)
    if not isinstance(message.content, list):  # a string would read as a reply of no text block
        raise TypeError(f"the message's content must be a list of blocks, got {type(message.content).__name__}")
    texts = [block.text for block in message.content if getattr(block, "type", None) == "text"]
    if not all(isinstance(text, str) for text in texts):
        raise TypeError("a text block's text must be a string")
    reply = "".join(texts)
    usage = message.usage.model_dump(mode="json") if message.usage is not None else None
    return reply, usage, request_id if isinstance(request_id, str) else None, message.stop_reason


class AnthropicDialect(Dialect):
    """The kit's Anthropic Messages wire (see the module docstring)."""

    name = "anthropic"
    rank = 10
    provider = "anthropic"
    serves = ("anthropic",)
    default_for = ("anthropic",)
    sdk = "anthropic"
    client = "anthropic.Anthropic"
    title = "an Anthropic Messages"
    default_model = "claude-sonnet-4-6"
    log_format = "anthropic"
    log_priority = 10

    def build(self, request: BodyRequest) -> dict[str, Any]:
        options = request.options
        if request.tools:
            options["tools"] = [dict(t) for t in request.tools]
        return to_anthropic(request.composed, with_user(request.history, request.user), **options)

    def wire_parts(self, composed: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> list[PartRef]:
        return kit_wire_parts(composed, history)

    def framed_messages(self, body: Mapping[str, Any]) -> int:
        return len(body.get("messages", ())) + (1 if body.get("system") else 0)

    plain_history = True

    def cache_layout(self, turn: TurnPieces) -> list[Slot]:
        return kit_cache_layout(turn)

    usage_title = "Anthropic"
    usage_anchor = ("input_tokens",)
    usage_keys = (
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
        "iterations",
        "service_tier",
        "server_tool_use",
        "inference_geo",
    )

    def parse_usage(self, usage: Mapping[str, Any], where: str) -> UsageCounts:
        return read_messages_usage(usage, where)

    def call(self, client: Any, body: dict[str, Any], stream: bool, on_text: Callable[[str], None]) -> CallResult:
        return call_messages(client, body, stream, on_text)

    def body_elements(self, body: Mapping[str, Any]) -> list[BodyElement]:
        return messages_elements(body)

    def is_body(self, body: Mapping[str, Any]) -> bool:
        if not isinstance(body.get("messages"), list):
            return False
        tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping)]
        return (
            "system" in body
            or any("input_schema" in t for t in tools)
            or str(body.get("model", "")).startswith("claude")
        )

    def may_be_body(self, body: Mapping[str, Any]) -> bool:
        return isinstance(body.get("messages"), list) and "max_tokens" in body


#: the wire the registry lists under ``anthropic``
DIALECT = AnthropicDialect()

__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_ANTHROPIC_MAX_TOKENS",
    "to_anthropic",
    "tool_element",
    "message_element",
    "messages_elements",
    "read_messages_usage",
    "sdk_params",
    "call_messages",
    "AnthropicDialect",
    "DIALECT",
]
