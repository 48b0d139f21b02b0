"""Layout: which placement each section goes to, and in what order.

A :class:`Layout` maps each placement (``system``, ``conversation_prefix``, ``post_history``,
``notification``) to an ordered list of section names. Each composer has its own layout, so two
layouts can be compared side by side in one process (the original's is a module global).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from wm_kernel.core.prompt_dict import PLACEMENTS

__all__ = ["Layout"]

_ORIGINAL_LAYOUT: dict[str, tuple[str, ...]] = {
    "system": (
        "base_prompt",
        "behavioral_directives",
        "tool_availability",
        "location_context",
        "conversation_manifest",
    ),
    "conversation_prefix": (),
    "post_history": ("domaindoc",),
    "notification": (
        "datetime_section",
        "async_activity",
        "active_reminders",
        "inbox_status",
        "forage_results",
        "whilethecatsaway_results",
        "relevant_memories",
        "peanutgallery_guidance",
    ),
}


class Layout:
    """Placement -> ordered section names. Immutable; the ``with_*`` methods return new layouts.

    Raises ValueError for an unknown placement or a section listed twice.

    ``placements`` (placement -> section names) and ``index`` (section -> (placement, position))
    are read as plain dicts by the composer on every compose, without a method call: read them,
    never change them.

    Examples
    --------
    >>> Layout.original().placement_of("domaindoc")
    'post_history'
    >>> Layout.default().placement_of("context_search_results")
    'notification'
    >>> Layout({"system": ["a"], "notes": []})
    Traceback (most recent call last):
    ...
    ValueError: unknown placement 'notes' (placements: system, conversation_prefix, post_history, notification)
    """

    __slots__ = ("placements", "index", "name")

    def __init__(self, placements: Mapping[str, Iterable[str]], *, name: str = "custom") -> None:
        if not isinstance(placements, Mapping):
            raise TypeError(
                f"a Layout is built from a mapping placement -> section names, got {type(placements).__name__}"
            )
        table: dict[str, tuple[str, ...]] = {p: () for p in PLACEMENTS}
        index: dict[str, tuple[str, int]] = {}
        for placement, names in placements.items():
            if placement not in table:
                raise ValueError(f"unknown placement {placement!r} (placements: {', '.join(PLACEMENTS)})")
            if isinstance(names, str):
                raise TypeError(f"placement {placement!r} needs a list of section names, not a string")
            ordered = tuple(names)
            for position, section in enumerate(ordered):
                if not isinstance(section, str) or not section.strip():
                    raise ValueError(f"section names must be non-empty strings, got {section!r}")
                if section in index:
                    raise ValueError(
                        f"section {section!r} is listed twice (in {index[section][0]!r} and {placement!r})"
                    )
                index[section] = (placement, position)
            table[placement] = ordered
        self.placements = table
        self.index = index
        self.name = name

    @classmethod
    def original(cls) -> Layout:
        """Exactly the original's SECTION_LAYOUT."""
        return cls(_ORIGINAL_LAYOUT, name="original")

    @classmethod
    def default(cls) -> Layout:
        """The original layout plus this project's own sections, each placed deliberately.

        ``context_search_results`` (GetContextTrinket) goes to the notification centre right after
        ``async_activity``: it reports asynchronous tool work and changes from turn to turn, so in the
        system prompt (where the original lets it straggle) it would break the prompt cache.
        """
        notification = list(_ORIGINAL_LAYOUT["notification"])
        notification.insert(notification.index("async_activity") + 1, "context_search_results")
        return cls({**_ORIGINAL_LAYOUT, "notification": notification}, name="default")

    # -- reading
    def __getitem__(self, placement: str) -> tuple[str, ...]:
        if placement not in self.placements:
            raise KeyError(placement)
        return self.placements[placement]

    def placement_of(self, section: str) -> str | None:
        """The placement listing ``section``, or None if the layout does not list it."""
        found = self.index.get(section)
        return found[0] if found else None

    def sections(self) -> list[str]:
        """Every listed section name, placement by placement, in order."""
        return [s for p in PLACEMENTS for s in self.placements[p]]

    def as_dict(self) -> dict[str, list[str]]:
        """Placement -> section names as plain lists (for JSON and for building a new Layout)."""
        return {p: list(names) for p, names in self.placements.items()}

    # -- serialising
    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., "placements": {placement: [section, ...]}}``: JSON-ready, and what
        :meth:`from_dict` reads back into an equal layout of the same name."""
        return {"name": self.name, "placements": self.as_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Layout:
        """The layout :meth:`to_dict` wrote; TypeError/ValueError naming what is wrong otherwise.

        >>> Layout.from_dict(Layout.original().to_dict()) == Layout.original()
        True
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"a layout is stored as an object, got {type(data).__name__}")
        unknown = [key for key in data if key not in ("name", "placements")]
        if unknown:
            raise ValueError(f"unknown layout field {unknown[0]!r} (fields: name, placements)")
        if not isinstance(data.get("placements"), Mapping):
            raise ValueError('a layout needs "placements": {placement: [section, ...]}')
        name = data.get("name", "custom")
        if not isinstance(name, str):
            raise TypeError(f"a layout's name must be a string, got {type(name).__name__}")
        return cls(data["placements"], name=name)

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Layout:
        """The layout :meth:`to_json` wrote (ValueError for text that is not such JSON)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"a layout's JSON is not valid ({exc.msg} at column {exc.colno})") from None
        return cls.from_dict(data)

    def __contains__(self, section: object) -> bool:
        return section in self.index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self.placements == other.placements

    def __hash__(self) -> int:
        return hash(tuple(self.placements.items()))

    def __repr__(self) -> str:
        body = ", ".join(f"{p}={list(n)}" for p, n in self.placements.items() if n)
        return f"Layout[{self.name}]({body})"

    # -- deriving
    def without(self, section: str) -> Layout:
        """This layout with ``section`` removed (it would then straggle into ``system``)."""
        if section not in self.index:
            raise ValueError(f"section {section!r} is not in the layout")
        return Layout({p: [s for s in names if s != section] for p, names in self.placements.items()}, name=self.name)

    def with_section(
        self, section: str, placement: str, *, before: str | None = None, after: str | None = None
    ) -> Layout:
        """This layout with ``section`` placed (moved if already listed) at the end of ``placement``,
        or just before/after another section of that placement."""
        if placement not in self.placements:
            raise ValueError(f"unknown placement {placement!r} (placements: {', '.join(PLACEMENTS)})")
        if before is not None and after is not None:
            raise ValueError("give before= or after=, not both")
        table = {p: [s for s in names if s != section] for p, names in self.placements.items()}
        target = table[placement]
        anchor = before if before is not None else after
        if anchor is None:
            target.append(section)
        else:
            if anchor not in target:
                raise ValueError(f"section {anchor!r} is not in placement {placement!r}")
            target.insert(target.index(anchor) + (0 if before is not None else 1), section)
        return Layout(table, name=self.name)
