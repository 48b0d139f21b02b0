"""SystemPromptComposer: sections in, routed by a :class:`~wm_kernel.core.composer.layout.Layout`, the
original's ComposedPrompt out.

Each composer has its own layout, so two layouts can be compared side by side in one process (the
original's is a module global). What it built for each placement is kept
(:mod:`wm_kernel.core.composer.placement_build`) and reused while that placement's sections do not change;
the notification centre is framed by :mod:`wm_kernel.core.composer.hud_frame`.

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
import re
import threading
import warnings
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from wm_kernel.core.composer.hud_frame import RULE, HudFrame
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.composer.placement_build import (
    JoinedBuilds,
    PlacementBuild,
    items_blame,
    join_system,
    normalize_part,
    system_blame,
)
from wm_kernel.core.prompt import ComposedPrompt, OmittedSection, SectionRecord
from wm_kernel.core.prompt_dict import PLACEMENTS

DEFAULT_SCAFFOLDING_NOTE = (
    "Everything after this delimiter is part of MIRA's scaffolding, injected to "
    "provide additional context during the reply."
)
DEFAULT_HUD_TITLE = "HUD - Runtime state, authoritative for current context"
DEFAULT_NAMESPACE = "mira"


class StragglerSectionWarning(UserWarning):
    """A section the layout does not list was appended to the system prompt."""


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

    # slots: read on every compose, and a slot's read is cached by the interpreter where a dict's may not be
    __slots__ = (
        "layout",
        "namespace",
        "scaffolding_note",
        "hud_title",
        "_base_prompt",
        "_base_note",
        "_base_section",
        "_sections",
        "_warned",
        "_lock",
        "_built",
        "_touched",
        "_cleared",
        "_built_env",
        "_hud_frame",
        "_joined",
        "_records",
        "_frame",
        "__weakref__",
    )

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
        self._built: dict[str, PlacementBuild] = {}
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
        self._joined: JoinedBuilds | None = None
        # placement -> name -> (entry, its record): an unchanged section keeps its record
        self._records: dict[str, dict[str, tuple[tuple[str, bool, str | None], SectionRecord]]] = {
            p: {} for p in PLACEMENTS
        }
        # the notification centre's frame, last built
        self._frame: HudFrame | None = None

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
        lock = self._lock
        lock.acquire()  # not ``with``, which binds both of the lock's methods: once per section
        try:
            self._sections[name] = (content, bool(cache_policy), trinket)
            if self._cleared is None:
                self._touched.add(name)
        finally:
            lock.release()

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
                joined = self._joined = JoinedBuilds(placements)
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
            # the usual cycle adds back the names it cleared, in the same order: what changed is
            # the names whose entries differ; any other order may move the unlisted sections
            if len(cleared) == len(sections):
                for (name, entry), (was_name, was) in zip(sections.items(), cleared.items(), strict=True):
                    if name != was_name:
                        touched.update(cleared)
                        touched.update(sections)
                        break
                    if entry != was:
                        touched.add(name)
            else:
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
        sections, listed, built = self._sections, layout.index, self._built
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
        listed = self.layout.index  # a dict lookup, not Layout.__contains__
        return self.layout["system"] + tuple([n for n in self._sections if n not in listed])

    def _build(self, placement: str) -> PlacementBuild:
        if placement == "system":
            names = self._system_names()
            built = self._build_system(names)
        else:
            names = self.layout.placements[placement]  # no Layout.__getitem__ call
            built = (self._build_hud if placement == "notification" else self._build_items)(placement, names)
        built.names = names
        return built

    def _build_system(self, names: tuple[str, ...]) -> PlacementBuild:
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
            (cached if entry[1] else uncached).append((normalize_part(entry[0]), len(records)))
            records.append(self._record(name, "system", entry, straggler))
            entries[name] = entry
        texts = (join_system(cached), join_system(uncached))
        return PlacementBuild(tuple(records), texts, functools.partial(system_blame, cached, uncached), entries)

    def _build_items(self, placement: str, names: tuple[str, ...]) -> PlacementBuild:
        records, items, entries = self._held(placement, names)
        blame = functools.partial(items_blame, f"{placement}_items", items)
        return PlacementBuild(records, tuple(items), blame, entries)

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

    def _build_hud(self, placement: str, names: tuple[str, ...]) -> PlacementBuild:
        """The notification centre: each part followed by a blank line, inside the frame."""
        records, items, entries = self._held(placement, names)
        if not items:
            return PlacementBuild(records, "", dict, entries)
        frame = self._frame
        if frame is None or frame.namespace != self.namespace or frame.title != self.hud_title:
            frame = self._frame = HudFrame(self.namespace, self.hud_title)
        return frame.build(records, items, entries)
