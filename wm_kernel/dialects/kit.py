"""The kit's own layout, shared by the wires that send the composed prompt as
``to_anthropic`` / ``to_openai`` lay it out (Anthropic, OpenAI, Gemini).

Body text order: the cached system text, the non-cached system text, the conversation-prefix items,
the conversation, the post-history items, the notification centre (blank items are left out).
Cache layout: the tools, the cached then the non-cached system sections, the prefix items, the
conversation and the current user message, the post-history items, the notification centre; one
5-minute breakpoint on the last cached system section (what ``to_anthropic`` marks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wm_kernel.dialects.base import PartRef, Slot, TurnPieces


def kit_wire_parts(composed: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> list[PartRef]:
    """The parts in the order ``to_anthropic`` and ``to_openai`` write them."""
    parts = [PartRef(key) for key in ("cached_content", "non_cached_content") if composed[key]]
    parts += [
        PartRef(f"conversation_prefix_items[{i}]")
        for i, item in enumerate(composed["conversation_prefix_items"])
        if item.strip()
    ]
    parts += [PartRef(f"history[{i}]") for i in range(len(history))]
    parts += [
        PartRef(f"post_history_items[{i}]") for i, item in enumerate(composed["post_history_items"]) if item.strip()
    ]
    if composed["notification_center"].strip():
        parts.append(PartRef("notification_center"))
    return parts


def kit_cache_layout(turn: TurnPieces, *, ttl: str = "5m") -> list[Slot]:
    """The kit's request for the simulator, its one breakpoint on the last cached system section."""
    slots = [Slot(p, "tools") for p in turn.tools]
    cached = [i for i, p in enumerate(turn.system) if p.kind == "system"]
    last = cached[-1] if cached else None
    slots += [Slot(p, "system", ttl if i == last else None) for i, p in enumerate(turn.system)]
    slots += [Slot(p, "messages") for p in (*turn.prefix, *turn.conversation)]
    if turn.user is not None:
        slots.append(Slot(turn.user, "messages"))
    slots += [Slot(p, "messages") for p in (*turn.post_history, *turn.notification)]
    return slots


__all__ = ["kit_wire_parts", "kit_cache_layout"]
