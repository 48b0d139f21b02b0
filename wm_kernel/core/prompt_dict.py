"""The original's composed prompt as plain data: its five keys and the four placements.

``ComposedPrompt`` (wm_kernel/core/prompt.py) is this dict with records attached; the wire
dialects' request bodies (wm_kernel/dialects/) read only the keys, so they import this and not the
prompt type, whose ``to_anthropic``/``to_openai``/``to_mira`` call them. It is a layer of its own,
below the dialects and the rest of the core (pyproject's ``[tool.wm-kernel] layers``).
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["PLACEMENTS", "COMPOSED_KEYS", "ComposedPromptDict"]

#: Where a section can go, in the order the model receives them.
PLACEMENTS: tuple[str, ...] = ("system", "conversation_prefix", "post_history", "notification")

#: The original's five keys, in its order.
COMPOSED_KEYS: tuple[str, ...] = (
    "cached_content",
    "non_cached_content",
    "conversation_prefix_items",
    "post_history_items",
    "notification_center",
)


class ComposedPromptDict(TypedDict):
    """The original's ComposedPrompt contract."""

    cached_content: str
    non_cached_content: str
    conversation_prefix_items: list[str]
    post_history_items: list[str]
    notification_center: str
