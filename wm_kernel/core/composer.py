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
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from wm_kernel.core.prompt import BlameData, ComposedPrompt, OmittedSection, SectionRecord
from wm_kernel.core.prompt_dict import PLACEMENTS
from wm_kernel.utils.markup import neutralize_closing_tag

RULE = "═" * 60
SECTION_SEPARATOR = "\n\n---\n\n"
DEFAULT_SCAFFOLDING_NOTE = (
    "Everything after this delimiter is part of MIRA's scaffolding, injected to "
    "provide additional context during the reply."
)
DEFAULT_HUD_TITLE = "HUD - Runtime state, authoritative for current context"
DEFAULT_NAMESPACE = "mira"

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
        self._placements = table
        self._index = index
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
        return section in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._placements == other._placements

    def __hash__(self) -> int:
        return hash(tuple(self._placements.items()))

    def __repr__(self) -> str:
        body = ", ".join(f"{p}={list(n)}" for p, n in self._placements.items() if n)
        return f"Layout[{self.name}]({body})"

    # -- deriving
    def without(self, section: str) -> Layout:
        """This layout with ``section`` removed (it would then straggle into ``system``)."""
        if section not in self._index:
            raise ValueError(f"section {section!r} is not in the layout")
        return Layout({p: [s for s in names if s != section] for p, names in self._placements.items()}, name=self.name)

    def with_section(
        self, section: str, placement: str, *, before: str | None = None, after: str | None = None
    ) -> Layout:
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
        The line between the two rules after the base prompt; None: no delimiter at all (the base
        prompt stands alone, and an empty one adds no section), as another agent's prompt has.
    hud_title:
        The line between the two rules opening the notification centre.
    """

    def __init__(
        self,
        layout: Layout | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        scaffolding_note: str | None = DEFAULT_SCAFFOLDING_NOTE,
        hud_title: str = DEFAULT_HUD_TITLE,
    ) -> None:
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
        self._base_note: str | None = scaffolding_note
        self._base_section: str = ""
        # name -> (content, cache_policy, trinket)
        self._sections: dict[str, tuple[str, bool, str | None]] = {}
        self._warned: set[str] = set()
        self._lock = threading.RLock()
        # placement -> what was built for it at the last compose, with the entries it was built
        # from: a placement whose sections did not change reuses its records, strings and HUD
        self._built: dict[str, _Placement] = {}
        # the names added, replaced or removed since the last compose (only their placements can
        # need a new build), and the (layout, namespace, title) of the builds
        self._touched: set[str] = set()
        # the sections held when they were first cleared since the last compose: what differs
        # from them then is what the clear and the adds since touched (a compose cycle clears
        # every section and adds them back, mostly unchanged)
        self._cleared: dict[str, tuple[str, bool, str | None]] | None = None
        self._built_env: tuple[Layout, str, str] | None = None
        self._hud_frame: tuple[str, str] = (namespace, hud_title)  # (namespace, title) of the builds
        # the four placements' builds last joined: reused while every placement reuses its build
        self._joined: _Joined | None = None
        # placement -> name -> (entry, its record): an unchanged section keeps its record
        self._records: dict[str, dict[str, tuple[tuple[str, bool, str | None], SectionRecord]]] = {
            p: {} for p in PLACEMENTS
        }
        # (namespace, title, head, tail, how a part is shown in it) of the notification
        # centre's frame, last built
        self._frame: tuple[str, str, str, str, Callable[[str], str]] | None = None

    # -- building
    def set_base_prompt(self, prompt: str) -> None:
        """Set the base prompt; it is followed by the scaffolding delimiter and always cached."""
        if not isinstance(prompt, str):
            raise TypeError(f"base prompt must be a str, got {type(prompt).__name__}")
        with self._lock:
            note = self.scaffolding_note
            if note is None and not prompt:  # no delimiter, no base prompt: no section of its own
                self._base_prompt = prompt
                return
            if prompt != self._base_prompt or self._base_note != note:
                self._base_prompt, self._base_note = prompt, note
                self._base_section = prompt if note is None else f"{prompt}\n\n{RULE}\n{note}\n{RULE}"
            self._sections["base_prompt"] = (self._base_section, True, None)
            self._touched.add("base_prompt")

    def add_section(self, name: str, content: str, cache_policy: bool = False, trinket: str | None = None) -> None:
        """Add (or replace) a section. Empty or whitespace-only content is ignored: an earlier
        section of that name stays until the next clear."""
        if not isinstance(content, str):
            raise TypeError(f"section {name!r} content must be a str, got {type(content).__name__}")
        if not content or content.isspace():
            return
        with self._lock:
            self._sections[name] = (content, bool(cache_policy), trinket)
            if self._cleared is None:
                self._touched.add(name)

    def remove_section(self, name: str) -> bool:
        """Drop one section; True if it was there."""
        with self._lock:
            self._touched.add(name)
            return self._sections.pop(name, None) is not None

    def clear_sections(self, preserve_base: bool = True) -> None:
        """Drop every section; keep the base prompt unless ``preserve_base`` is False."""
        with self._lock:
            base = self._sections.get("base_prompt") if preserve_base else None
            if self._cleared is None:
                self._cleared = dict(self._sections)
            self._sections.clear()
            if base is not None:
                self._sections["base_prompt"] = base
            elif not preserve_base:
                self._base_prompt = None

    @property
    def section_names(self) -> list[str]:
        """The names of the sections held now (base prompt included), in the order added."""
        return list(self._sections)

    @property
    def held(self) -> Mapping[str, tuple[str, bool, str | None]]:
        """The sections held now, name -> (content, cache_policy, trinket): a read-only view."""
        return MappingProxyType(self._sections)

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

        It notes who wrote each stretch of each key (a section, or the composer for separators and
        frames): :meth:`ComposedPrompt.blame` reads that map, worked out the first time it is asked
        for. A placement whose sections are the same as at the last compose (same names, same
        content, cache policy and trinket) reuses what was built for it then, blame included."""
        with self._lock:
            built = self._built
            try:
                for placement in self._dirty_placements():
                    built[placement] = self._build(placement)
            except BaseException:  # what changed is forgotten: the next compose builds it all
                self._built_env = None
                raise
            system, prefix, post, hud = placements = (
                built["system"],
                built["conversation_prefix"],
                built["post_history"],
                built["notification"],
            )
            joined = self._joined
            if joined is None or joined.placements != placements:  # identity first: cheap
                joined = self._joined = _Joined(placements)
            cached, uncached = system.text
            return ComposedPrompt.from_parts(
                cached,
                uncached,
                prefix.text,
                post.text,
                hud.text,
                joined.records,
                omitted,
                self._hud_frame,
                joined.blame,
            )

    def _dirty_placements(self) -> Iterable[str]:
        """The placements whose sections changed since they were built: those of the names
        touched since, whose entry (or, for sections the layout does not list, whose order)
        differs from the one built. Every placement after a change of layout, namespace or title."""
        touched, cleared = self._touched, self._cleared
        if touched or cleared is not None:
            self._touched, self._cleared = set(), None
        if cleared is not None:
            sections = self._sections
            if list(cleared) == list(sections):  # same names in the same order: what changed
                touched.update([name for name, _ in cleared.items() ^ sections.items()])
            else:  # the order of the sections the layout does not list may have changed
                touched.update(cleared)
                touched.update(sections)
        layout, built_env = self.layout, self._built_env
        if (
            built_env is None
            or layout is not built_env[0]
            or self.namespace != built_env[1]
            or self.hud_title != built_env[2]
        ):
            self._built_env = (layout, self.namespace, self.hud_title)
            self._hud_frame = (self.namespace, self.hud_title)
            return PLACEMENTS
        if not touched:
            return ()
        sections, listed, built = self._sections, layout._index, self._built
        dirty: set[str] = set()
        for name in touched:
            found = listed.get(name)
            placement = found[0] if found is not None else "system"
            if placement in dirty:
                continue
            if sections.get(name) != built[placement].entries.get(name) or (
                found is None and self._system_names() != built["system"].names
            ):
                dirty.add(placement)
        return dirty

    def _system_names(self) -> tuple[str, ...]:
        # sections the layout does not list go last in system, in the order added, so new
        # trinkets work without touching the layout
        listed = self.layout._index  # the same module's class: a dict lookup, not __contains__
        return self.layout["system"] + tuple([n for n in self._sections if n not in listed])

    def _build(self, placement: str) -> _Placement:
        if placement == "system":
            names = self._system_names()
            built = self._build_system(names)
        else:
            names = self.layout._placements[placement]  # the same module's class: no __getitem__ call
            built = (self._build_hud if placement == "notification" else self._build_items)(placement, names)
        built.names = names
        return built

    def _build_system(self, names: tuple[str, ...]) -> _Placement:
        layout, sections = self.layout, self._sections
        records: list[SectionRecord] = []
        entries: dict[str, tuple[str, bool, str | None]] = {}
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
                warnings.warn(
                    f"section {name!r} is not in layout {layout.name!r}; appended to the system prompt",
                    StragglerSectionWarning,
                    stacklevel=4,
                )
            (cached if entry[1] else uncached).append((_normalize(entry[0]), len(records)))
            records.append(self._record(name, "system", entry, straggler))
            entries[name] = entry
        texts = (_join_system(cached), _join_system(uncached))
        return _Placement(tuple(records), texts, functools.partial(_system_blame, cached, uncached), entries)

    def _build_items(self, placement: str, names: tuple[str, ...]) -> _Placement:
        records, items, entries = self._held(placement, names)
        blame = functools.partial(_items_blame, f"{placement}_items", items)
        return _Placement(records, tuple(items), blame, entries)

    def _held(
        self, placement: str, names: tuple[str, ...]
    ) -> tuple[tuple[SectionRecord, ...], list[str], dict[str, tuple[str, bool, str | None]]]:
        """The records, texts and entries of the sections of ``names`` held now, in order (outside
        ``system``, where no section straggles: each unchanged one keeps its record)."""
        records: list[SectionRecord] = []
        items: list[str] = []
        entries: dict[str, tuple[str, bool, str | None]] = {}
        get, known_records = self._sections.get, self._records[placement]
        for name in names:
            entry = get(name)
            if entry is None or entry[0].isspace():
                continue
            known = known_records.get(name)
            if known is not None and known[0] == entry:
                record = known[1]
            else:
                record = SectionRecord(name, placement, entry[0], entry[1], entry[2])
                known_records[name] = (entry, record)
            records.append(record)
            items.append(entry[0])
            entries[name] = entry
        return tuple(records), items, entries

    def _record(
        self, name: str, placement: str, entry: tuple[str, bool, str | None], straggler: bool = False
    ) -> SectionRecord:
        known_records = self._records[placement]
        known = known_records.get(name)
        if known is not None and known[0] == entry and known[1].straggler == straggler:
            return known[1]
        record = SectionRecord(name, placement, entry[0], entry[1], entry[2], straggler)
        known_records[name] = (entry, record)
        return record

    def _build_hud(self, placement: str, names: tuple[str, ...]) -> _Placement:
        """The notification centre: each part followed by a blank line, inside the frame."""
        records, items, entries = self._held(placement, names)
        if not items:
            return _Placement(records, "", dict, entries)
        frame = self._frame
        if frame is None or frame[0] != self.namespace or frame[1] != self.hud_title:
            tag = f"{self.namespace}:hud"
            head = f"{RULE}\n{self.hud_title}\n{RULE}\n<{tag}>\n"
            frame = self._frame = (self.namespace, self.hud_title, head, f"</{tag}>\n{RULE}", _shown_in(tag))
        _, _, head, tail, shown_in_frame = frame
        shown = list(map(shown_in_frame, items))
        text = "".join([head, "\n\n".join(shown), "\n\n", tail])
        return _Placement(records, text, functools.partial(_hud_blame, head, shown, tail), entries)


class _Placement:
    """What compose built for one placement: its records, its text (a string, a pair of strings
    for ``system``, a tuple of items) and its blame map, counting its records from 0 (worked out
    when first asked for: most prompts are never blamed); and what it was built from, the names
    it routes and their entries then."""

    __slots__ = ("records", "text", "names", "entries", "_blame", "_make_blame")

    def __init__(
        self,
        records: tuple[SectionRecord, ...],
        text: Any,
        make_blame: Callable[[], BlameData],
        entries: dict[str, tuple[str, bool, str | None]],
    ) -> None:
        self.records = records
        self.text = text
        self.names: tuple[str, ...] = ()
        # name -> the entry each record was built from (content, cache_policy, trinket)
        self.entries = entries
        self._blame: BlameData | None = None
        self._make_blame: Callable[[], BlameData] | None = make_blame

    @property
    def blame(self) -> BlameData:
        if self._make_blame is not None:  # two threads asking at once both compute the same map
            self._blame, self._make_blame = self._make_blame(), None
        assert self._blame is not None
        return self._blame


class _Joined:
    """The four placements' builds as one prompt's: all records in output order, and (when first
    asked for) one blame map, where each placement's record numbers are shifted by the records
    of the placements before it. Shared, read only, by every prompt composed from these builds."""

    __slots__ = ("placements", "records", "_blame")

    def __init__(self, placements: tuple[_Placement, ...]) -> None:
        self.placements = placements
        system, prefix, post, hud = placements
        self.records = system.records + prefix.records + post.records + hud.records
        self._blame: BlameData | None = None

    def blame(self) -> BlameData:
        if self._blame is None:
            blame: BlameData = {}
            first = 0
            for placement in self.placements:
                for key, pieces in placement.blame.items():
                    blame[key] = (
                        pieces
                        if not first
                        else tuple((length, owner + first if owner >= 0 else owner) for length, owner in pieces)
                    )
                first += len(placement.records)
            self._blame = blame
        return self._blame


def _join_system(parts: list[tuple[str, int]]) -> str:
    """Join normalized system parts with the separator and strip the result, as the original does."""
    if not parts:
        return ""
    return SECTION_SEPARATOR.join([text for text, _ in parts]).strip()


def _system_blame(cached: list[tuple[str, int]], uncached: list[tuple[str, int]]) -> BlameData:
    """Each system part's stretch of its key (the strip of the joined text can only trim the first
    part's start and the last part's end: every part holds a non-space character)."""
    blame: BlameData = {}
    for key, parts in (("cached_content", cached), ("non_cached_content", uncached)):
        if not parts:
            continue
        pieces: list[tuple[int, int]] = []
        for index, (text, owner) in enumerate(parts):
            if index:
                pieces.append((len(SECTION_SEPARATOR), -1))
            pieces.append((len(text), owner))
        lead = len(parts[0][0]) - len(parts[0][0].lstrip())
        trail = len(parts[-1][0]) - len(parts[-1][0].rstrip())
        pieces[0] = (pieces[0][0] - lead, pieces[0][1])
        pieces[-1] = (pieces[-1][0] - trail, pieces[-1][1])
        blame[key] = tuple(pieces)
    return blame


def _items_blame(key: str, items: list[str]) -> BlameData:
    """An item is its section's text, whole."""
    return {f"{key}[{index}]": ((len(item), index),) for index, item in enumerate(items)}


def _hud_blame(head: str, parts: list[str], tail: str) -> BlameData:
    """The frame's head, each part, the blank line after a part (the composer's, merged with the
    frame's tail after the last part)."""
    pieces: list[tuple[int, int]] = [(len(head), -1)]
    for index, part in enumerate(parts):
        pieces += [(len(part), index), (2, -1)]
    pieces[-1] = (2 + len(tail), -1)
    return {"notification_center": tuple(pieces)}


@functools.lru_cache(maxsize=16)
def _shown_in(tag: str) -> Callable[[str], str]:
    """How a notification-centre part is shown in the frame of ``tag``: unable to close it (cached:
    most parts are shown unchanged turn after turn, and a cache of one str argument is keyed on
    the str itself)."""
    return functools.lru_cache(maxsize=512)(functools.partial(neutralize_closing_tag, tag=tag))


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
