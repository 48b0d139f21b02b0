"""Each section's last content in the state store (hash ``trinkets:{user_id}``), the original's
trinket states, read back in its shapes.

Examples
--------
>>> from datetime import UTC, datetime
>>> from wm_kernel.stores.embedded import MemoryStore
>>> sections = SectionStore(MemoryStore())
>>> sections.write("u1", "greeting", "Hello", True, datetime(2026, 11, 30, tzinfo=UTC))
>>> sections.state("u1", "greeting")["content"]
'Hello'
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from wm_kernel.core.prompt import AllTrinketStates, TrinketState
from wm_kernel.stores import keys
from wm_kernel.stores.embedded import StateStore

__all__ = ["SectionStore"]


class SectionStore:
    """Writes and reads the sections of one store; a write identical to the last one is skipped."""

    # slots: read on every section written, and a slot's read is cached by the interpreter where a dict's may not be
    __slots__ = (
        "store",
        "_key",
        "_written",
        "_at",
        "__weakref__",
    )

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._key: tuple[str, str] | None = None  # (user_id, its key)
        # section -> (content, cache_policy) as last written, to skip identical writes
        self._written: dict[str, tuple[str, bool]] = {}
        # the last instant written and its ISO text: the sections of one compose, and a turn's
        # refresh, share one instant, and an aware datetime's isoformat() costs a compose's joins
        self._at: tuple[datetime, str] | None = None

    def key(self, user_id: str) -> str:
        """``trinkets:{user_id}``, built once per user, not on every write."""
        known = self._key
        if known is None or known[0] != user_id:
            known = self._key = (user_id, keys.trinket_sections(user_id))
        return known[1]

    def holds(self, section: str, content: str, cache_policy: bool) -> bool:
        """Whether the last write of ``section`` was this content and cache policy (a write of
        them would be skipped)."""
        written = self._written.get(section)
        return written is not None and written[0] == content and written[1] == cache_policy

    def write(self, user_id: str, section: str, content: str, cache_policy: bool, updated_at: datetime) -> None:
        """Store a section's content (nothing when it is what was last written)."""
        written = self._written.get(section)
        if written is not None and written[0] == content and written[1] == cache_policy:
            return
        at = self._at
        if at is None or at[0] is not updated_at:
            at = self._at = (updated_at, updated_at.isoformat())
        record = {"content": content, "cache_policy": cache_policy, "updated_at": at[1]}
        self.store.hset(self.key(user_id), section, record)
        self._written[section] = (content, cache_policy)

    def discard(self, user_id: str, section: str) -> None:
        """Remove a section from the store."""
        self._written.pop(section, None)
        self.store.hdel(self.key(user_id), section)

    def state(self, user_id: str, section: str) -> TrinketState | None:
        """The stored state of one section, or None."""
        raw = self.store.hget(self.key(user_id), section)
        return None if raw is None else _state(section, raw)

    def states(self, user_id: str, loaded_at: str) -> AllTrinketStates:
        """Every stored section state of the user, with a count and the load time."""
        states = [_state(name, raw) for name, raw in self.store.hgetall(self.key(user_id)).items()]
        return {"trinkets": states, "meta": {"trinket_count": len(states), "loaded_at": loaded_at}}


def _state(section: str, raw: dict[str, Any]) -> TrinketState:
    return {
        "section_name": section,
        "content": raw.get("content", ""),
        "cache_policy": bool(raw.get("cache_policy", False)),
        "last_updated": raw.get("updated_at"),
    }
