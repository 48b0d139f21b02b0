"""The Anthropic Messages wire as the kit lays it out (``ComposedPrompt.to_anthropic``).

Body: ``wm_kernel.core.request_bodies.to_anthropic`` (two system blocks, a 5-minute breakpoint after
the cached text, injected parts merged into user messages). Usage: ``input_tokens`` are the tokens
after the last breakpoint, ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are added
to them, ``cache_creation.ephemeral_1h_input_tokens`` says how many writes were 1-hour ones. Send:
``client.messages.create`` / ``client.messages.stream`` of the ``anthropic`` SDK. Logs: JSON Lines of
Messages request bodies (format ``anthropic``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wm_kernel.core.request_bodies import to_anthropic
from wm_kernel.dialects.kit import kit_cache_layout, kit_wire_parts
from wm_kernel.dialects.registry import CallResult, Dialect, PartRef, Slot, TurnPieces, register_dialect
from wm_kernel.dialects.usage import Usage, add_usages, usage_details, usage_int


def read_messages_usage(usage: Mapping[str, Any], where: str, common: Mapping[str, Any], provider: str) -> Usage:
    """A Messages API usage object as a Usage billed by ``provider``. With server-side steps
    (``usage.iterations``: a compaction, then the message) the bill is the sum over the steps, and
    the top-level counts, which leave the compaction step out, are not read."""
    steps = usage.get("iterations")
    if steps:  # Claude Code writes an empty list where the server took one step
        if not isinstance(steps, list) or not all(isinstance(s, Mapping) for s in steps):
            raise ValueError(f"{where}: usage.iterations must be a list of objects")
        return add_usages(
            [_one_step(step, f"{where} iterations[{i}]", common, provider) for i, step in enumerate(steps)]
        )
    return _one_step(usage, where, common, provider)


def _one_step(usage: Mapping[str, Any], where: str, common: Mapping[str, Any], provider: str) -> Usage:
    written = usage_int(usage, "cache_creation_input_tokens", where)
    creation = usage_details(usage, "cache_creation", where)
    one_hour = usage_int(creation, "ephemeral_1h_input_tokens", where)
    if one_hour > written:
        raise ValueError(
            f"{where}: ephemeral_1h_input_tokens ({one_hour}) exceed cache_creation_input_tokens ({written})"
        )
    return Usage(
        provider,
        usage_int(usage, "input_tokens", where),
        usage_int(usage, "cache_read_input_tokens", where),
        {"5m": written - one_hour, "1h": one_hour},
        usage_int(usage, "output_tokens", where),
        **common,
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
    body_shape = "messages"
    default_model = "claude-sonnet-4-6"
    log_format = "anthropic"
    log_priority = 10

    def body(
        self,
        composed: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        **options: Any,
    ) -> dict[str, Any]:
        if tools:
            options["tools"] = [dict(t) for t in tools]
        return to_anthropic(composed, history, **options)

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

    def parse_usage(self, usage: Mapping[str, Any], where: str, common: Mapping[str, Any]) -> Usage:
        return read_messages_usage(usage, where, common, self.provider)

    def call(self, client: Any, body: dict[str, Any], stream: bool, on_text: Callable[[str], None]) -> CallResult:
        return call_messages(client, body, stream, on_text)

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


ANTHROPIC = register_dialect(AnthropicDialect())

__all__ = ["read_messages_usage", "sdk_params", "call_messages", "AnthropicDialect", "ANTHROPIC"]
