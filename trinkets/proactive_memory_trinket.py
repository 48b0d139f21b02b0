"""ProactiveMemoryTrinket: long-term memories surfaced for this turn (section ``relevant_memories``).

Memories come from outside (a retrieval step, a notebook cell): an update whose context has
``memories`` (a list of dicts) replaces the cached list, an update without it keeps the list, and
:meth:`ProactiveMemoryTrinket.surface` does the same from Python. An empty list clears it. Unlike
the original, which keeps them across a segment collapse (a bug), the memories are cleared on
collapse: the trinket is a :class:`~trinkets.base.StatefulTrinket` whose items never expire by turn.

A memory is a dict with these keys (anything else is a ValueError, so a misspelt key does not pass
silently):

- ``id`` (required, str): the memory's id, shown as ``mem_`` + its first 8 characters with dashes
  removed;
- ``text`` (required, non-empty str): the memory;
- ``created_at`` (aware datetime or ISO string): when it was made, shown as ``<created>``;
- ``similarity_score`` (number from 0 to 1): above :data:`RELEVANCE_THRESHOLD` (0.75, strictly)
  shown as ``relevance="NN"``, the integer percentage (truncated);
- ``is_global`` (bool, default False): a global memory gets ``source="global"``;
- ``expires_at`` / ``happens_at`` (aware datetime or ISO string): shown as local dates in
  ``<temporal expires=".." happens=".."/>``;
- ``annotations`` (list of ``{"text", "added_at"}``, ``added_at`` optional): ``<note>`` lines;
- ``linked_memories`` (list of ``{"id", "text", "link_type"}``): deduplicated by id, the first
  one kept, shown as ``Also: text (link_type, mem_XXXXXXXX)`` lines in ``<context>``.

The memories live in the WorkingMemory's store too, field ``state`` of the hash
``proactive_memory:{user_id}:{continuum_id}`` (datetimes as ISO 8601 strings), written whenever the
list changes (never on a compose that keeps it), so a Session on a SQLite file shows them after a
restart. Stored data this trinket cannot read is a ValueError naming the key when the trinket is
constructed.

Times are relative to the WorkingMemory's clock; temporal dates are local dates in the profile's
time zone. Every value is escaped (:mod:`wm_kernel.markup`). A bad memory is a ValueError naming
its index and field (``memories[1].similarity_score: ...``), and the cached list stays as it was.

Examples
--------
>>> from wm_kernel.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[ProactiveMemoryTrinket])
>>> memories = s.trinket("ProactiveMemoryTrinket")
>>> memories.surface([
...     {"id": "3f2a9c1b-77d0-4e1a-9b2c-000000000001", "text": "Ada drinks her tea without sugar",
...      "created_at": "2026-11-27T09:00:00+00:00", "similarity_score": 0.91, "is_global": False,
...      "happens_at": "2026-12-03T10:00:00+00:00",
...      "annotations": [{"text": "Confirmed at lunch", "added_at": "2026-11-30T07:00:00+00:00"}],
...      "linked_memories": [
...          {"id": "aa11-bb22-cc33", "text": "Ada dislikes coffee", "link_type": "related"},
...          {"id": "aa11-bb22-cc33", "text": "Ada dislikes coffee", "link_type": "related"}]},
...     {"id": "b0b", "text": "The office closes at 6 PM", "similarity_score": 0.75,
...      "is_global": True}])
2
>>> _ = s.compose()
>>> print(memories.content)
<surfaced_memories>
  <memory id="mem_3f2a9c1b" relevance="91">
    <text>Ada drinks her tea without sugar</text>
    <created>3 days ago</created>
    <temporal happens="2026-12-03"/>
    <annotations>
      <note added="2 hours ago">Confirmed at lunch</note>
    </annotations>
    <context>
      Also: Ada dislikes coffee (related, mem_aa11bb22)
    </context>
  </memory>
  <memory id="mem_b0b" source="global">
    <text>The office closes at 6 PM</text>
  </memory>
</surfaced_memories>
>>> s.collapse_segment("Tea talk"); memories.memories
[]
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any

from traitlets import List, observe, validate

from trinkets.base import BUDGET_KEEP, StatefulTrinket, feed
from wm_kernel.clock import parse_instant
from wm_kernel.markup import escape_attr, escape_text
from wm_kernel.timefmt import relative_time

#: A memory shows its relevance only when its similarity score is strictly above this.
RELEVANCE_THRESHOLD = 0.75

_KEYS = ("id", "text", "created_at", "similarity_score", "is_global", "expires_at", "happens_at",
         "annotations", "linked_memories")


def short_id(memory_id: str) -> str:
    """The id the markup shows: ``mem_`` + the first 8 characters of the id without dashes.

    >>> short_id("3f2a9c1b-77d0-4e1a")
    'mem_3f2a9c1b'
    """
    return "mem_" + memory_id.replace("-", "")[:8]


def relevance_percent(score: float) -> int:
    """The similarity as an integer percentage, truncated (0.919 -> 91), immune to float noise
    (0.29 * 100 is 28.999...; it still gives 29)."""
    return math.floor(score * 100 + 1e-9)


class _Invalid(ValueError):
    pass


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"{where} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise _Invalid(f"{where} must not be empty")
    return value


def _instant(value: object, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_instant(value, what=where)
    except (TypeError, ValueError) as exc:
        raise _Invalid(str(exc)) from None


def _records(value: object, where: str, keys: tuple[str, ...]) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise _Invalid(f"{where} must be a list, got {type(value).__name__}")
    return [_checked_keys(item, f"{where}[{i}]", keys) for i, item in enumerate(value)]


def _checked_keys(item: object, where: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise _Invalid(f"{where} must be a dict, got {type(item).__name__}")
    unknown = sorted(set(item) - set(keys), key=str)
    if unknown:
        raise _Invalid(f"{where} has unknown key(s) {', '.join(map(repr, unknown))} "
                       f"(known: {', '.join(keys)})")
    return item


def normalize_memory(memory: object, where: str = "memory") -> dict[str, Any]:
    """Check one memory dict and return it with every key present (datetimes parsed, defaults
    filled, linked memories deduplicated); ValueError naming ``where`` and the field otherwise."""
    checked = _checked_keys(memory, where, _KEYS)
    for key in ("id", "text"):
        if key not in checked:
            raise _Invalid(f"{where}.{key} is required")
    score = checked.get("similarity_score")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
            raise _Invalid(f"{where}.similarity_score must be a number from 0 to 1, got {score!r}")
        score = float(score)
    is_global = checked.get("is_global", False)
    if not isinstance(is_global, bool):
        raise _Invalid(f"{where}.is_global must be a bool, got {type(is_global).__name__}")
    annotations = []
    for i, note in enumerate(_records(checked.get("annotations"), f"{where}.annotations",
                                      ("text", "added_at"))):
        at = f"{where}.annotations[{i}]"
        annotations.append({"text": _text(note.get("text"), f"{at}.text"),
                            "added_at": _instant(note.get("added_at"), f"{at}.added_at")})
    links: dict[str, dict[str, str]] = {}
    for i, link in enumerate(_records(checked.get("linked_memories"), f"{where}.linked_memories",
                                      ("id", "text", "link_type"))):
        at = f"{where}.linked_memories[{i}]"
        entry = {name: _text(link.get(name), f"{at}.{name}") for name in ("id", "text", "link_type")}
        links.setdefault(entry["id"], entry)
    return {
        "id": _text(checked["id"], f"{where}.id"),
        "text": _text(checked["text"], f"{where}.text"),
        "created_at": _instant(checked.get("created_at"), f"{where}.created_at"),
        "similarity_score": score,
        "is_global": is_global,
        "expires_at": _instant(checked.get("expires_at"), f"{where}.expires_at"),
        "happens_at": _instant(checked.get("happens_at"), f"{where}.happens_at"),
        "annotations": annotations,
        "linked_memories": list(links.values()),
    }


def normalize_memories(memories: object) -> list[dict[str, Any]]:
    """Check a list of memory dicts (see the module docstring) and return them normalized.

    >>> normalize_memories([{"id": "m1", "text": "x", "similarity_score": 2}])
    Traceback (most recent call last):
    ...
    ValueError: memories[0].similarity_score must be a number from 0 to 1, got 2
    """
    if not isinstance(memories, (list, tuple)):
        raise TypeError(f"memories must be a list of dicts, got {type(memories).__name__}")
    try:
        normalized = [normalize_memory(m, f"memories[{i}]") for i, m in enumerate(memories)]
    except _Invalid as exc:
        raise ValueError(str(exc)) from None  # a plain ValueError, one line, no chained trace
    seen: dict[str, int] = {}
    for i, memory in enumerate(normalized):
        first = seen.setdefault(memory["id"], i)
        if first != i:
            raise ValueError(f"memories[{i}].id {memory['id']!r} repeats memories[{first}].id")
    return normalized


class ProactiveMemoryTrinket(StatefulTrinket):
    """Surfaced long-term memories, replaced by each update that carries ``memories``."""

    variable_name = "relevant_memories"
    default_priority = 40  # token budgets: see docs/budgets.md
    cache_policy = False
    state_prefix = "proactive_memory"

    memories: List[dict[str, Any]] = List(
        help="The surfaced memories, normalized (every key present, datetimes parsed), in the order "
             "given; cleared on segment collapse.")

    @validate("memories")
    def _check_memories(self, proposal: dict[str, Any]) -> list[dict[str, Any]]:
        return normalize_memories(proposal["value"])

    @feed
    def surface(self, memories: list[dict[str, Any]]) -> int:
        """Replace the surfaced memories (as an update with ``memories`` in its context would) and
        return how many there are now; shows from the next compose."""
        if not isinstance(memories, (list, tuple)):
            raise TypeError(f"memories must be a list of dicts, got {type(memories).__name__}")
        self.memories = list(memories)
        return len(self.memories)

    def generate_content(self, context: dict[str, Any]) -> str:
        if "memories" in context:
            memories = context["memories"]
            if not isinstance(memories, (list, tuple)):
                raise TypeError(f"memories must be a list of dicts, got {type(memories).__name__}")
            self.memories = list(memories)
        if not self.memories:
            return ""
        now = self.working_memory.clock.now()
        zone = self.working_memory.profile.zone
        lines = ["<surfaced_memories>"]
        keep = context.get(BUDGET_KEEP)
        for memory in self.memories:
            if keep is None or memory["id"] in keep:
                lines += _render(memory, now, zone)
        lines.append("</surfaced_memories>")
        return "\n".join(lines)

    def ranked_items(self) -> list[str]:
        """Memory ids for a token budget: most relevant (similarity score) first, unscored last,
        in the given order among equals."""
        scores = [m["similarity_score"] for m in self.memories]
        order = sorted(range(len(scores)),
                       key=lambda i: (scores[i] is None, -(scores[i] or 0.0), i))
        return [self.memories[i]["id"] for i in order]

    # -- StatefulTrinket
    def _expire_items(self) -> bool:
        return False  # memories last until replaced or until the segment collapses

    def _clear_all_state(self) -> None:
        self.memories = []

    # -- persistence
    @observe("memories")
    def _memories_changed(self, change: dict[str, Any]) -> None:
        self._save_state()

    def _dump_state(self) -> dict[str, Any] | None:
        if not self.memories:
            return None
        return {"memories": [_to_json(memory) for memory in self.memories]}

    def _parse_state(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        if set(data) != {"memories"}:
            raise ValueError(f"expected the key memories, found {sorted(data)}")
        return normalize_memories(data["memories"])

    def _restore_state(self, parsed: list[dict[str, Any]]) -> None:
        self.memories = parsed

    def describe_items(self) -> list[dict[str, Any]]:
        items = []
        for memory in self.memories:
            text = " ".join(memory["text"].split())
            label = text if len(text) <= 60 else text[:59] + "…"
            items.append({"id": memory["id"], "label": label, "turns_remaining": None})
        return items


def _to_json(value: Any) -> Any:
    """A normalized memory as JSON-compatible values: datetimes become ISO 8601 strings (with their
    offset, so they parse back to the same instant)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_to_json(item) for item in value]
    return value


def _render(memory: dict[str, Any], now: datetime, zone: tzinfo) -> list[str]:
    attrs = f'id="{escape_attr(short_id(memory["id"]))}"'
    if memory["is_global"]:
        attrs += ' source="global"'
    score = memory["similarity_score"]
    if score is not None and score > RELEVANCE_THRESHOLD:
        attrs += f' relevance="{relevance_percent(score)}"'
    lines = [f"  <memory {attrs}>", f"    <text>{escape_text(memory['text'])}</text>"]
    if memory["created_at"] is not None:
        lines.append(f"    <created>{escape_text(relative_time(memory['created_at'], now))}</created>")
    temporal = [f'{name}="{m.astimezone(zone).date().isoformat()}"'
                for name, m in (("expires", memory["expires_at"]), ("happens", memory["happens_at"]))
                if m is not None]
    if temporal:
        lines.append(f"    <temporal {' '.join(temporal)}/>")
    if memory["annotations"]:
        lines.append("    <annotations>")
        for note in memory["annotations"]:
            added = note["added_at"]
            attr = "" if added is None else f' added="{escape_attr(relative_time(added, now))}"'
            lines.append(f"      <note{attr}>{escape_text(note['text'])}</note>")
        lines.append("    </annotations>")
    if memory["linked_memories"]:
        lines.append("    <context>")
        for link in memory["linked_memories"]:
            lines.append(f"      Also: {escape_text(link['text'])} "
                         f"({escape_text(link['link_type'])}, {escape_text(short_id(link['id']))})")
        lines.append("    </context>")
    lines.append("  </memory>")
    return lines
