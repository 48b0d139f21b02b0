"""SystemPromptComposer and Layout: sections in, the original's ComposedPrompt out.

A :class:`Layout` maps each placement (``system``, ``conversation_prefix``, ``post_history``,
``notification``) to an ordered list of section names. Each composer has its own layout, so two
layouts can be compared side by side in one process (the original's is a module global).

Examples
--------
>>> c = SystemPromptComposer()
>>> c.set_base_prompt("You help.")
>>> c.add_section("datetime_section", "<t>now</t>")
>>> print(c.compose()["notification_center"])
════════════════════════════════════════════════════════════
HUD - Runtime state, authoritative for current context
════════════════════════════════════════════════════════════
<mira:hud>
<t>now</t>
<BLANKLINE>
</mira:hud>
════════════════════════════════════════════════════════════
"""
from __future__ import annotations

import functools
import json
import re
import threading
import warnings
from typing import Any, Callable, Iterable, Mapping

from wm_kernel.markup import neutralize_closing_tag
from wm_kernel.types import PLACEMENTS, BlameData, ComposedPrompt, OmittedSection, SectionRecord

RULE = "═" * 60
SECTION_SEPARATOR = "\n\n---\n\n"
DEFAULT_SCAFFOLDING_NOTE = ("Everything after this delimiter is part of MIRA's scaffolding, injected to "
                            "provide additional context during the reply.")
DEFAULT_HUD_TITLE = "HUD - Runtime state, authoritative for current context"
DEFAULT_NAMESPACE = "mira"

_ORIGINAL_LAYOUT: dict[str, tuple[str, ...]] = {
    "system": ("base_prompt", "behavioral_directives", "tool_availability", "location_context",
               "conversation_manifest"),
    "conversation_prefix": (),
    "post_history": ("domaindoc",),
    "notification": ("datetime_section", "async_activity", "active_reminders", "inbox_status",
                     "forage_results", "whilethecatsaway_results", "relevant_memories",
                     "peanutgallery_guidance"),
}


class StragglerSectionWarning(UserWarning):
    """A section the layout does not list was appended to the system prompt."""


class Layout:
    """Placement -> ordered section names. Immutable; the ``with_*`` methods return new layouts.

    Raises ValueError for an unknown placement or a section listed twice.

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

    __slots__ = ("_placements", "_index", "name")

    def __init__(self, placements: Mapping[str, Iterable[str]], *, name: str = "custom") -> None:
        if not isinstance(placements, Mapping):
            raise TypeError(f"a Layout is built from a mapping placement -> section names, "
                            f"got {type(placements).__name__}")
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
                    raise ValueError(f"section {section!r} is listed twice (in {index[section][0]!r} "
                                     f"and {placement!r})")
                index[section] = (placement, position)
            table[placement] = ordered
        self._placements = table
        self._index = index
        self.name = name

    @classmethod
    def original(cls) -> "Layout":
        """Exactly the original's SECTION_LAYOUT."""
        return cls(_ORIGINAL_LAYOUT, name="original")

    @classmethod
    def default(cls) -> "Layout":
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
        if placement not in self._placements:
            raise KeyError(placement)
        return self._placements[placement]

    def placement_of(self, section: str) -> str | None:
        """The placement listing ``section``, or None if the layout does not list it."""
        found = self._index.get(section)
        return found[0] if found else None

    def sections(self) -> list[str]:
        """Every listed section name, placement by placement, in order."""
        return [s for p in PLACEMENTS for s in self._placements[p]]

    def as_dict(self) -> dict[str, list[str]]:
        """Placement -> section names as plain lists (for JSON and for building a new Layout)."""
        return {p: list(names) for p, names in self._placements.items()}

    # -- serialising
    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., "placements": {placement: [section, ...]}}``: JSON-ready, and what
        :meth:`from_dict` reads back into an equal layout of the same name."""
        return {"name": self.name, "placements": self.as_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Layout":
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
    def from_json(cls, text: str) -> "Layout":
        """The layout :meth:`to_json` wrote (ValueError for text that is not such JSON)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"a layout's JSON is not valid ({exc.msg} at column {exc.colno})") from None
        return cls.from_dict(data)

    def __contains__(self, section: object) -> bool:
        return section in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._placements == other._placements

    def __hash__(self) -> int:
        return hash(tuple(self._placements.items()))

    def __repr__(self) -> str:
        body = ", ".join(f"{p}={list(n)}" for p, n in self._placements.items() if n)
        return f"Layout[{self.name}]({body})"

    # -- deriving
    def without(self, section: str) -> "Layout":
        """This layout with ``section`` removed (it would then straggle into ``system``)."""
        if section not in self._index:
            raise ValueError(f"section {section!r} is not in the layout")
        return Layout({p: [s for s in names if s != section]
                       for p, names in self._placements.items()}, name=self.name)

    def with_section(self, section: str, placement: str, *, before: str | None = None,
                     after: str | None = None) -> "Layout":
        """This layout with ``section`` placed (moved if already listed) at the end of ``placement``,
        or just before/after another section of that placement."""
        if placement not in self._placements:
            raise ValueError(f"unknown placement {placement!r} (placements: {', '.join(PLACEMENTS)})")
        if before is not None and after is not None:
            raise ValueError("give before= or after=, not both")
        table = {p: [s for s in names if s != section] for p, names in self._placements.items()}
        target = table[placement]
        anchor = before if before is not None else after
        if anchor is None:
            target.append(section)
        else:
            if anchor not in target:
                raise ValueError(f"section {anchor!r} is not in placement {placement!r}")
            target.insert(target.index(anchor) + (0 if before is not None else 1), section)
        return Layout(table, name=self.name)


class SystemPromptComposer:
    """Collects sections and composes them by a layout, exactly as the original composer does.

    Parameters
    ----------
    layout:
        The layout to route by (default: ``Layout.default()``).
    namespace:
        The markup namespace of the HUD frame (``<mira:hud>``).
    scaffolding_note:
        The line between the two rules after the base prompt.
    hud_title:
        The line between the two rules opening the notification centre.
    """

    def __init__(self, layout: Layout | None = None, *, namespace: str = DEFAULT_NAMESPACE,
                 scaffolding_note: str = DEFAULT_SCAFFOLDING_NOTE,
                 hud_title: str = DEFAULT_HUD_TITLE) -> None:
        if layout is None:
            layout = Layout.default()
        if not isinstance(layout, Layout):
            raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
        if not re.fullmatch(r"[A-Za-z_][\w.-]*", namespace or ""):
            raise ValueError(f"namespace must be an XML name, got {namespace!r}")
        self.layout = layout
        self.namespace = namespace
        self.scaffolding_note = scaffolding_note
        self.hud_title = hud_title
        self._base_prompt: str | None = None
        self._base_section: str = ""
        # name -> (content, cache_policy, trinket)
        self._sections: dict[str, tuple[str, bool, str | None]] = {}
        self._warned: set[str] = set()
        self._lock = threading.RLock()
        # placement -> (the entries it was built from, what was built): a placement whose
        # sections did not change reuses its records, joined strings and HUD
        self._built: dict[str, tuple[tuple[Any, ...], Any]] = {}
        # the four placements' builds last joined, and their records and blame map joined: reused
        # while every placement reuses its build (read only, so prompts may share them)
        self._joined: tuple[tuple[Any, ...], tuple[SectionRecord, ...], BlameData] | None = None
        # (name, placement) -> (entry, its record): an unchanged section keeps its record
        self._records: dict[tuple[str, str], tuple[tuple[str, bool, str | None], SectionRecord]] = {}

    # -- building
    def set_base_prompt(self, prompt: str) -> None:
        """Set the base prompt; it is followed by the scaffolding delimiter and always cached."""
        if not isinstance(prompt, str):
            raise TypeError(f"base prompt must be a str, got {type(prompt).__name__}")
        with self._lock:
            if prompt != self._base_prompt:
                self._base_prompt = prompt
                self._base_section = f"{prompt}\n\n{RULE}\n{self.scaffolding_note}\n{RULE}"
            self._sections["base_prompt"] = (self._base_section, True, None)

    def add_section(self, name: str, content: str, cache_policy: bool = False,
                    trinket: str | None = None) -> None:
        """Add (or replace) a section. Empty or whitespace-only content is ignored: an earlier
        section of that name stays until the next clear."""
        if not isinstance(content, str):
            raise TypeError(f"section {name!r} content must be a str, got {type(content).__name__}")
        if not content or content.isspace():
            return
        with self._lock:
            self._sections[name] = (content, bool(cache_policy), trinket)

    def remove_section(self, name: str) -> bool:
        """Drop one section; True if it was there."""
        with self._lock:
            return self._sections.pop(name, None) is not None

    def clear_sections(self, preserve_base: bool = True) -> None:
        """Drop every section; keep the base prompt unless ``preserve_base`` is False."""
        with self._lock:
            base = self._sections.get("base_prompt") if preserve_base else None
            self._sections.clear()
            if base is not None:
                self._sections["base_prompt"] = base
            elif not preserve_base:
                self._base_prompt = None

    @property
    def section_names(self) -> list[str]:
        """The names of the sections held now (base prompt included), in the order added."""
        return list(self._sections)

    def get_entry(self, name: str) -> tuple[str, bool, str | None]:
        """(content, cache_policy, trinket) of one held section; KeyError if it is not held."""
        return self._sections[name]

    def output_order(self) -> list[tuple[str, str]]:
        """(section, placement) of each held section in the order compose writes them: the system
        sections the layout lists, then those it does not list, then the other placements."""
        with self._lock:
            held = self._sections
            order = [(n, "system") for n in self.layout["system"] if n in held]
            order += [(n, "system") for n in held if n not in self.layout]
            order += [(n, p) for p in PLACEMENTS[1:] for n in self.layout[p] if n in held]
            return order

    # -- composing
    def compose(self, *, omitted: Iterable[OmittedSection] = ()) -> ComposedPrompt:
        """Route the current sections by the layout into a :class:`ComposedPrompt`.

        As it joins, it notes who wrote each stretch of each key (a section, or the composer for
        separators and frames): :meth:`ComposedPrompt.blame` reads that map. A placement whose
        sections are the same as at the last compose (same names, same content, cache policy and
        trinket) reuses what was built for it then, blame included."""
        with self._lock:
            sections = self._sections
            layout = self.layout
            # sections the layout does not list go last in system, so new trinkets work without
            # touching the layout
            listed = layout._index  # the same module's class: a dict lookup, not __contains__
            stragglers = tuple([name for name in sections if name not in listed])
            built = (self._built_for("system", layout["system"] + stragglers, self._build_system),
                     self._built_for("conversation_prefix", layout["conversation_prefix"],
                                     self._build_items),
                     self._built_for("post_history", layout["post_history"], self._build_items),
                     self._built_for("notification", layout["notification"], self._build_hud))
            joined = self._joined
            if joined is None or any(a is not b for a, b in zip(joined[0], built)):
                joined = self._joined = (built, *_joined_parts(built))
            (_, (cached, uncached), _), (_, prefix, _), (_, post, _), (_, hud, _) = built
            return ComposedPrompt(
                cached, uncached, prefix, post, hud, sections=joined[1], omitted=omitted,
                blame=joined[2], hud_frame=(self.namespace, self.hud_title))

    def _built_for(self, placement: str, names: tuple[str, ...],
                   build: Callable[[str, tuple[str, ...]], Any]) -> Any:
        get = self._sections.get
        key = (names, tuple([get(name) for name in names]), self.namespace, self.hud_title)
        built = self._built.get(placement)
        if built is None or built[0] != key:
            built = self._built[placement] = (key, build(placement, names))
        return built[1]

    def _build_system(self, placement: str, names: tuple[str, ...]
                      ) -> tuple[tuple[SectionRecord, ...], tuple[str, str], BlameData]:
        layout, sections = self.layout, self._sections
        records: list[SectionRecord] = []
        # (normalized text, index of its record) per system part
        cached: list[tuple[str, int]] = []
        uncached: list[tuple[str, int]] = []
        for name in names:
            entry = sections.get(name)
            if entry is None or entry[0].isspace():
                continue
            straggler = name not in layout
            if straggler and name not in self._warned:  # warn once per composer per name
                self._warned.add(name)
                warnings.warn(f"section {name!r} is not in layout {layout.name!r}; appended to the "
                              f"system prompt", StragglerSectionWarning, stacklevel=4)
            (cached if entry[1] else uncached).append((_normalize(entry[0]), len(records)))
            records.append(self._record(name, "system", entry, straggler))
        blame: BlameData = {}
        texts = (_join_system(cached, "cached_content", blame),
                 _join_system(uncached, "non_cached_content", blame))
        return tuple(records), texts, blame

    def _build_items(self, placement: str, names: tuple[str, ...]
                     ) -> tuple[tuple[SectionRecord, ...], tuple[str, ...], BlameData]:
        records: list[SectionRecord] = []
        items: list[str] = []
        blame: BlameData = {}
        key = f"{placement}_items"
        for name in names:
            entry = self._sections.get(name)
            if entry is None or entry[0].isspace():
                continue
            # an item is its section's text, whole
            blame[f"{key}[{len(items)}]"] = ((len(entry[0]), len(records)),)
            records.append(self._record(name, placement, entry))
            items.append(entry[0])
        return tuple(records), tuple(items), blame

    def _record(self, name: str, placement: str, entry: tuple[str, bool, str | None],
                straggler: bool = False) -> SectionRecord:
        known = self._records.get((name, placement))
        if known is not None and known[0] == entry and known[1].straggler == straggler:
            return known[1]
        record = SectionRecord(name, placement, entry[0], entry[1], entry[2], straggler)
        self._records[(name, placement)] = (entry, record)
        return record

    def _build_hud(self, placement: str, names: tuple[str, ...]
                   ) -> tuple[tuple[SectionRecord, ...], str, BlameData]:
        records, parts, _ = self._build_items(placement, names)
        blame: BlameData = {}
        return records, self._hud(list(parts), 0, blame), blame

    def _hud(self, parts: list[str], first: int, blame: BlameData) -> str:
        """The notification centre; ``first`` is the record index of ``parts[0]``."""
        if not parts:
            return ""
        tag = f"{self.namespace}:hud"
        head = f"{RULE}\n{self.hud_title}\n{RULE}\n<{tag}>\n"
        tail = f"</{tag}>\n{RULE}"
        shown = [neutralize_closing_tag(part, tag) for part in parts]
        pieces = [(len(head), -1)]
        for index, part in enumerate(shown):
            # the blank line after a part is the composer's, merged with what follows it
            pieces += [(len(part), first + index), (2, -1)]
        pieces[-1] = (2 + len(tail), -1)
        blame["notification_center"] = _merged(pieces)
        body = "".join(f"{part}\n\n" for part in shown)
        return f"{head}{body}{tail}"


def _joined_parts(built: tuple[Any, ...]) -> tuple[tuple[SectionRecord, ...], BlameData]:
    """All placements' records in output order, and one blame map: each placement's blame counts
    its own records from 0, the prompt's count them all."""
    records: tuple[SectionRecord, ...] = ()
    blame: BlameData = {}
    for placement_records, _, part in built:
        first = len(records)
        for key, pieces in part.items():
            blame[key] = pieces if not first else tuple(
                (length, owner + first if owner >= 0 else owner) for length, owner in pieces)
        records += placement_records
    return records, blame


def _join_system(parts: list[tuple[str, int]], key: str, blame: BlameData) -> str:
    """Join normalized system parts with the separator and strip the result, as the original does,
    noting each part's stretch under ``key`` (the strip can only trim the first part's start and
    the last part's end: every part holds a non-space character)."""
    if not parts:
        return ""
    texts = [text for text, _ in parts]
    lead = len(texts[0]) - len(texts[0].lstrip())
    trail = len(texts[-1]) - len(texts[-1].rstrip())
    pieces: list[tuple[int, int]] = []
    for index, (text, owner) in enumerate(parts):
        if index:
            pieces.append((len(SECTION_SEPARATOR), -1))
        pieces.append((len(text), owner))
    pieces[0] = (pieces[0][0] - lead, pieces[0][1])
    pieces[-1] = (pieces[-1][0] - trail, pieces[-1][1])
    blame[key] = tuple(pieces)
    return SECTION_SEPARATOR.join(texts).strip()


def _merged(pieces: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Neighbouring stretches of one owner as one."""
    out: list[tuple[int, int]] = []
    for length, owner in pieces:
        if out and out[-1][1] == owner:
            out[-1] = (out[-1][0] + length, owner)
        else:
            out.append((length, owner))
    return tuple(out)


_NEWLINE_RUNS = re.compile(r"\n{3,}")


@functools.lru_cache(maxsize=512)
def _normalize(text: str) -> str:
    """Collapse runs of 3+ newlines inside one part and drop its edge newlines.

    Joining parts with "\\n\\n---\\n\\n" and then collapsing newline runs over the whole text (the
    original) gives the same result as joining parts normalized this way, because a part's edge
    newlines always meet the separator's own two. Normalizing per part lets unchanged parts (a
    12 KB base prompt) come from the cache instead of being rescanned on every compose.
    """
    return _NEWLINE_RUNS.sub("\n\n", text).strip("\n") if "\n\n\n" in text else text.strip("\n")
