"""MIRA's own wire: the Anthropic Messages body MIRA's orchestrator posts (``to_mira``).

Body: ``wm_kernel.core.request_bodies.to_mira``. Its parts, in the body's text order: the
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

A conversation whose last message is the user's (as the views and ``send`` pass it) has that
message sent as the current user message, after the HUD.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wm_kernel.core.request_bodies import to_mira
from wm_kernel.dialects.anthropic import call_messages
from wm_kernel.dialects.registry import CallResult, Dialect, PartRef, Slot, TurnPieces, register_dialect


def split_user(history: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], str | None]:
    """(the conversation before the current user message, that message or None)."""
    messages = list(history)
    if (
        messages
        and isinstance(messages[-1], Mapping)
        and messages[-1].get("role") == "user"
        and isinstance(messages[-1].get("content"), str)
    ):
        return messages[:-1], messages[-1]["content"]
    return messages, None


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
    own_max_tokens = True
    takes_user = True
    body_shape = "messages"
    default_model = "claude-sonnet-4-6"

    def body(
        self,
        composed: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        **options: Any,
    ) -> dict[str, Any]:
        conversation, user = split_user(history)
        if options.get("user") is None:
            options["user"] = user
        else:
            conversation = list(history)
        return to_mira(composed, conversation, tools=tools, **options)

    def wire_parts(self, composed: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> list[PartRef]:
        conversation, user = split_user(history)
        parts = [PartRef(f"conversation_prefix_items[{i}]") for i in range(len(composed["conversation_prefix_items"]))]
        parts += [PartRef(f"history[{i}]") for i in range(len(conversation))]
        parts += [PartRef(f"post_history_items[{i}]") for i in range(len(composed["post_history_items"]))]
        parts.append(PartRef("notification_center"))
        if user is not None:
            parts.append(PartRef(f"history[{len(conversation)}]"))
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


MIRA = register_dialect(MiraDialect())

__all__ = ["split_user", "MiraDialect", "MIRA"]
