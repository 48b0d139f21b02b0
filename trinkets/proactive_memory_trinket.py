"""ProactiveMemoryTrinket: long-term memories surfaced for this turn (section ``relevant_memories``).

Memories come from outside (a retrieval step, a notebook cell): an update whose context has
``memories`` (a list of dicts) replaces the cached list, an update without it keeps the list, and
:meth:`ProactiveMemoryTrinket.surface` does the same from Python. An empty list clears it. Unlike
the original, which keeps them across a segment collapse (so memories of a finished segment stay
in the prompt), the memories are cleared on collapse: the trinket is a
:class:`~trinkets.base.StatefulTrinket` whose items never expire by turn.

A memory is a dict. It may come in the original's shape (``source``, ``link_metadata`` and the
other keys its memory service carries) or in this module's shorter one; keys the section does not
render (``importance_score``, ``access_count``, ``link_metadata.confidence``...) are ignored. What
is read:

- ``id`` (required, str): the memory's id, shown as ``mem_`` + its first 8 characters with dashes
  removed;
- ``text`` (required, non-empty str): the memory;
- ``created_at`` (aware datetime or ISO string): when it was made, shown as ``<created>``;
- ``similarity_score`` (number from 0 to 1): above :data:`RELEVANCE_THRESHOLD` (0.75, strictly)
  shown as ``relevance="NN"``, the percentage truncated as the original does (``int(score * 100)``);
- ``source`` (str; ``"global"`` gets ``source="global"``) or ``is_global`` (bool, default False);
- ``expires_at`` / ``happens_at`` (aware datetime or ISO string): shown as dates in
  ``<temporal expires=".." happens=".."/>``;
- ``annotations`` (list of ``{"text", "created_at"}``, the time optional, ``added_at`` accepted
  for it): ``<note>`` lines;
- ``linked_memories`` (list of ``{"id", "text", "link_metadata": {"link_type"}}``, or with
  ``link_type`` directly): deduplicated by id, the first one kept, shown as
  ``Also: text (link_type, mem_XXXXXXXX)`` lines in ``<context>``.

The memories live in the WorkingMemory's store too, field ``state`` of the hash
``proactive_memory:{user_id}:{continuum_id}`` (normalized: datetimes as ISO 8601 strings), written
whenever the list changes (never on a compose that keeps it), so a Session on a SQLite file shows
them after a restart. Stored data this trinket cannot read is a ValueError naming the key when the
trinket is constructed.

Styles. ``"original"`` (the default) writes the original's markup: every element on its own line,
unindented. Four things differ from the original, each because it is unsafe or wrong there
(docs/deviations.md): every value is escaped (:mod:`wm_kernel.utils.markup`); memories are cleared on a
segment collapse; temporal dates are local dates in the profile's time zone, the day the user
lives them (the original writes each timestamp's date in its own offset, so an event at 02:00 UTC
is "tomorrow" for a user in New York); and the relevance is read immune to float noise (a score
of 0.8099999999 from an upstream sum shows 81; the original's ``int()`` gives 80). ``"revised"``
also indents the markup by nesting level.

Times are relative to the WorkingMemory's clock. A bad memory is a ValueError naming its index and
field (``memories[1].similarity_score: ...``), and the cached list stays as it was.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[ProactiveMemoryTrinket])
>>> memories = s.trinket("ProactiveMemoryTrinket")
>>> memories.surface([
...     {"id": "3f2a9c1b-77d0-4e1a-9b2c-000000000001", "text": "Ada drinks her tea without sugar",
...      "created_at": "2026-11-27T09:00:00+00:00", "similarity_score": 0.91, "is_global": False,
...      "happens_at": "2026-12-03T10:00:00+00:00",
...      "annotations": [{"text": "Confirmed at lunch", "created_at": "2026-11-30T07:00:00+00:00"}],
...      "linked_memories": [
...          {"id": "aa11-bb22-cc33", "text": "Ada dislikes coffee",
...           "link_metadata": {"link_type": "related", "confidence": 0.8}},
...          {"id": "aa11-bb22-cc33", "text": "Ada dislikes coffee", "link_type": "related"}]},
...     {"id": "b0b", "text": "The office closes at 6 PM", "similarity_score": 0.75,
...      "source": "global", "importance_score": 0.4}])
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
>>> memories.style = "revised"; _ = s.compose()
>>> print(memories.content)  # doctest: +ELLIPSIS
<surfaced_memories>
  <memory id="mem_3f2a9c1b" relevance="91">
    <text>Ada drinks her tea without sugar</text>
    <created>3 days ago</created>
...
  </memory>
</surfaced_memories>
>>> s.collapse_segment("Tea talk"); memories.memories
[]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta, tzinfo
from typing import Any

from traitlets import List, validate

from trinkets.base import BUDGET_KEEP, StatefulTrinket, arg, at, command, feed, instant_or_offset
from wm_kernel.core.clock import parse_instant
from wm_kernel.utils.markup import escape_attr, escape_text
from wm_kernel.utils.timefmt import relative_time

#: A memory shows its relevance only when its similarity score is strictly above this.
RELEVANCE_THRESHOLD = 0.75


def short_id(memory_id: str) -> str:
    """The id the markup shows: ``mem_`` + the first 8 characters of the id without dashes.

    >>> short_id("3f2a9c1b-77d0-4e1a")
    'mem_3f2a9c1b'
    """
    return "mem_" + memory_id.replace("-", "")[:8]


def relevance_percent(score: float) -> int:
    """The similarity as an integer percentage, truncated (0.919 -> 91), immune to float noise.

    The original truncates ``score * 100``, so a score of 0.8099999999990001 gives 80 and 0.29
    (whose product is 28.999...) gives 28: a deviation (docs/deviations.md) gives 81 and 29.

    >>> relevance_percent(0.8099999999990001), relevance_percent(0.29), relevance_percent(0.919)
    (81, 29, 91)
    """
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


def _records(value: object, where: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise _Invalid(f"{where} must be a list, got {type(value).__name__}")
    return [_mapping(item, f"{where}[{i}]") for i, item in enumerate(value)]


def _mapping(item: object, where: str) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise _Invalid(f"{where} must be a dict, got {type(item).__name__}")
    return item


def _either(item: Mapping[str, Any], where: str, name: str, alias: str) -> object:
    """The value under ``name`` or under its other spelling ``alias``; both given and different
    is an error (one of them would be dropped silently)."""
    if name in item and alias in item and item[name] != item[alias]:
        raise _Invalid(f"{where} has both {name} and {alias}, and they differ")
    return item[name] if name in item else item.get(alias)


def _is_global(item: Mapping[str, Any], where: str) -> bool:
    is_global = item.get("is_global", False)
    if not isinstance(is_global, bool):
        raise _Invalid(f"{where}.is_global must be a bool, got {type(is_global).__name__}")
    source = item.get("source")
    if source is None:
        return is_global
    if not isinstance(source, str):
        raise _Invalid(f"{where}.source must be a str, got {type(source).__name__}")
    if "is_global" in item and is_global != (source == "global"):
        raise _Invalid(f"{where}.is_global {is_global} contradicts source {source!r}")
    return source == "global"


def _link_type(link: Mapping[str, Any], where: str) -> object:
    metadata = link.get("link_metadata")
    if metadata is None:
        return link.get("link_type")
    metadata = _mapping(metadata, f"{where}.link_metadata")
    if "link_type" in link and "link_type" in metadata and link["link_type"] != metadata["link_type"]:
        raise _Invalid(f"{where} has both link_type and link_metadata.link_type, and they differ")
    return metadata.get("link_type", link.get("link_type"))


def normalize_memory(memory: object, where: str = "memory") -> dict[str, Any]:
    """Check one memory dict and return it with every key present (datetimes parsed, defaults
    filled, linked memories deduplicated, keys it does not render dropped); ValueError naming
    ``where`` and the field otherwise."""
    checked = _mapping(memory, where)
    for key in ("id", "text"):
        if key not in checked:
            raise _Invalid(f"{where}.{key} is required")
    score = checked.get("similarity_score")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
            raise _Invalid(f"{where}.similarity_score must be a number from 0 to 1, got {score!r}")
        score = float(score)
    is_global = _is_global(checked, where)
    annotations = []
    for i, note in enumerate(_records(checked.get("annotations"), f"{where}.annotations")):
        at = f"{where}.annotations[{i}]"
        added = _either(note, at, "added_at", "created_at")
        annotations.append(
            {"text": _text(note.get("text"), f"{at}.text"), "added_at": _instant(added, f"{at}.added_at")}
        )
    links: dict[str, dict[str, str]] = {}
    for i, link in enumerate(_records(checked.get("linked_memories"), f"{where}.linked_memories")):
        at = f"{where}.linked_memories[{i}]"
        entry = {
            "id": _text(link.get("id"), f"{at}.id"),
            "text": _text(link.get("text"), f"{at}.text"),
            "link_type": _text(_link_type(link, at), f"{at}.link_type"),
        }
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
    reuse_content = True  # its inputs: traits, feeds, own store writes, profile, clock
    time_dependent = True
    cache_policy = False
    state_prefix = "proactive_memory"
    styles = ("original", "revised")
    state_items = "memories"

    memories: List[dict[str, Any]] = List(
        help="The surfaced memories, normalized (every key present, datetimes parsed), in the order "
        "given; cleared on segment collapse."
    )

    @validate("memories")
    def _check_memories(self, proposal: dict[str, Any]) -> list[dict[str, Any]]:
        memories = normalize_memories(proposal["value"])
        # stored while validating, before the trait changes: a failed write leaves it unchanged
        # (and the same list again, which traitlets will not announce, is not written again)
        if memories != self.memories:
            self._save_state({"memories": [_to_json(m) for m in memories]} if memories else None)
        return memories

    @command(
        "surface",
        arg("text", words=True, help="The memory."),
        arg("--id", help="The memory id."),
        arg("--score", type=float, help="Similarity, 0 to 1."),
        arg("--global", dest="is_global", action="store_true", help="A global memory."),
        arg("--created", type=instant_or_offset, help="When it was made."),
        help="Surface one more memory: TEXT [--id ID] [--score S] [--global] "
        "[--created ISO|+N]. Shows from the next compose.",
    )
    def _surface_command(
        self, text: str, id: str | None, score: float | None, is_global: bool, created: datetime | timedelta | None
    ) -> int:  # noqa: A002
        memory: dict[str, Any] = {"id": id or f"{len(self.memories) + 1:08d}", "text": text, "is_global": is_global}
        if score is not None:
            memory["similarity_score"] = score
        if created is not None:
            memory["created_at"] = at(self.working_memory.clock.now(), created, "--created")
        return self.surface([*self.memories, memory])

    @command("clear", help="Surface no memories.", fixed={"memories": []})
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
        # the day the user lives it (the original uses each timestamp's own offset: a deviation)
        zone = self.working_memory.profile.zone
        lines = [(0, "<surfaced_memories>")]
        keep = context.get(BUDGET_KEEP)
        for memory in self.memories:
            if keep is None or memory["id"] in keep:
                lines += _render(memory, now, zone)
        lines.append((0, "</surfaced_memories>"))
        indent = "  " if self.style == "revised" else ""  # the original writes no indentation
        return "\n".join(indent * depth + line for depth, line in lines)

    def ranked_items(self) -> list[str]:
        """Memory ids for a token budget: most relevant (similarity score) first, unscored last,
        in the given order among equals."""
        scores = [m["similarity_score"] for m in self.memories]
        order = sorted(range(len(scores)), key=lambda i: (scores[i] is None, -(scores[i] or 0.0), i))
        return [self.memories[i]["id"] for i in order]

    # -- StatefulTrinket
    def _expire_items(self) -> bool:
        return False  # memories last until replaced or until the segment collapses

    def _clear_all_state(self) -> None:
        self.memories = []

    # -- persistence: one record per memory (StatefulTrinket's per-item persistence), all
    # rewritten by each replacement of the list (see _check_memories)
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


def _render(memory: dict[str, Any], now: datetime, zone: tzinfo) -> list[tuple[int, str]]:
    """One memory's lines as (nesting depth, text): the depth becomes indentation only in the
    revised style; temporal dates are local dates in ``zone``."""
    attrs = f'id="{escape_attr(short_id(memory["id"]))}"'
    if memory["is_global"]:
        attrs += ' source="global"'
    score = memory["similarity_score"]
    if score is not None and score > RELEVANCE_THRESHOLD:
        attrs += f' relevance="{relevance_percent(score)}"'
    lines = [(1, f"<memory {attrs}>"), (2, f"<text>{escape_text(memory['text'])}</text>")]
    if memory["created_at"] is not None:
        lines.append((2, f"<created>{escape_text(relative_time(memory['created_at'], now))}</created>"))
    temporal = [
        f'{name}="{m.astimezone(zone).date().isoformat()}"'
        for name, m in (("expires", memory["expires_at"]), ("happens", memory["happens_at"]))
        if m is not None
    ]
    if temporal:
        lines.append((2, f"<temporal {' '.join(temporal)}/>"))
    if memory["annotations"]:
        lines.append((2, "<annotations>"))
        for note in memory["annotations"]:
            added = note["added_at"]
            attr = "" if added is None else f' added="{escape_attr(relative_time(added, now))}"'
            lines.append((3, f"<note{attr}>{escape_text(note['text'])}</note>"))
        lines.append((2, "</annotations>"))
    if memory["linked_memories"]:
        lines.append((2, "<context>"))
        for link in memory["linked_memories"]:
            lines.append(
                (
                    3,
                    f"Also: {escape_text(link['text'])} "
                    f"({escape_text(link['link_type'])}, {escape_text(short_id(link['id']))})",
                )
            )
        lines.append((2, "</context>"))
    lines.append((1, "</memory>"))
    return lines
