"""The dashboard's section panels as data: which exist, in which placement, and what each shows.

:class:`Panels` follows the session's trinkets, layout and prompt and keeps, per section, the
:class:`~wm_kernel.jupyter.dashboard.parts.PanelView` on show (title, status HTML, text HTML,
empty), the sections of each placement in display order, and one switch per trinket. It makes no
widget: the dashboard sends what it holds as synced traits. A panel is worked out again only when
what it shows changed (its trinket's text, failure, switch, cache policy, placement, segment turn
and items, or for a section the composer writes its record, and the preview size), its text only
when the text changed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel.jupyter.dashboard.model import VIEWS, DashboardModel, TurnRecord
from wm_kernel.jupyter.dashboard.parts import (
    PanelView,
    cap_line,
    find_record,
    live_section,
    placement_plan,
    recorded_section,
    section_text,
)

_TRINKET_TRAITS = ["content", "error", "enabled"]


def trinket_traits(trinket: EventAwareTrinket) -> list[str]:
    """The traits of ``trinket`` whose changes a panel shows."""
    if isinstance(trinket, StatefulTrinket):
        return [*_TRINKET_TRAITS, "current_turn"]
    return list(_TRINKET_TRAITS)


class Panels:
    """The panels, placements and switches of one dashboard, and the trinkets they follow.

    ``on_change`` is called with a trinket's trait change; the owner works out the sections named
    in :attr:`dirty` with :meth:`show_dirty` and reads :attr:`shown`, :attr:`plan` and
    :meth:`switches`.
    """

    def __init__(self, model: DashboardModel, record: TurnRecord, on_change: Callable[[dict[str, Any]], None]) -> None:
        self.model, self.record = model, record
        self.session = model.session
        self._on_change = on_change
        #: placement view key -> its sections, in display order
        self.plan: dict[str, list[str]] = {key: [] for key in VIEWS}
        #: section -> what its panel shows now
        self.shown: dict[str, PanelView] = {}
        self.watched: dict[str, EventAwareTrinket] = {}
        #: Sections whose panel may show something else now.
        self.dirty: set[str] = set()
        # section -> the watched trinket that writes it; and section -> name of the stateful ones
        self.writers: dict[str, EventAwareTrinket] = {}
        self.stateful_names: dict[str, str] = {}
        # section -> (what its live view was worked out from, the view); section -> (content,
        # limit, its HTML)
        self._rendered: dict[str, tuple[tuple[Any, ...], PanelView]] = {}
        self._texts: dict[str, tuple[str, int, str]] = {}
        self._structure: tuple[Any, ...] | None = None

    def names(self) -> dict[str, list[str]]:
        """The sections shown in each placement view, in display order."""
        return {key: list(sections) for key, sections in self.plan.items()}

    def switches(self) -> list[dict[str, Any]]:
        """One switch per trinket, in the session's order: its name, label and whether it is on."""
        return [
            {"trinket": name, "label": f"{name} ({t.variable_name})", "enabled": bool(t.enabled)}
            for name, t in self.watched.items()
        ]

    def mark_stateful(self) -> None:
        self.dirty.update(self.stateful_names)

    def show_dirty(self, view: int | None) -> set[str]:
        """Work out the dirty panels for the turn ``view`` (None: live); the sections whose panel
        now shows something else."""
        dirty, self.dirty = self.dirty, set()
        changed = set()
        for section in dirty:
            if section in self.shown:
                now = self._view(section, view)
                if now != self.shown[section]:
                    self.shown[section] = now
                    changed.add(section)
        return changed

    # -- structure
    def changed(self, view: int | None) -> bool:
        """Whether what the structure follows changed since the last :meth:`sync`."""
        return self._key(view) != self._structure

    def _key(self, view: int | None) -> tuple[Any, ...]:
        """The trinkets (and their cache policies), the layout, the sections the composer wrote
        into the latest prompt (with their placements), and the turn on view."""
        composed = self.session.composed
        trinkets = self.session.working_memory.trinkets.values()
        owned = {t.variable_name for t in trinkets}
        return (
            tuple((t, t.cache_policy) for t in trinkets),
            self.session.layout,
            tuple((r.name, r.placement, r.cache_policy) for r in composed.sections if r.name not in owned)
            if composed is not None
            else None,
            view,
        )

    def sync(self, view: int | None) -> None:
        """Follow new trinkets and sections, drop gone ones, and place every section."""
        key = self._key(view)
        current = self.session.working_memory.trinkets
        for name, trinket in list(self.watched.items()):
            if current.get(name) is not trinket:
                trinket.unobserve(self._on_change, names=trinket_traits(trinket))
                del self.watched[name]
                self.record.forget_items()
        for name, trinket in current.items():
            if name not in self.watched:
                trinket.observe(self._on_change, names=trinket_traits(trinket))
                self.watched[name] = trinket
                self.record.forget_items()
                self.dirty.add(trinket.variable_name)
        # in the session's order (a trinket re-added goes where the session has it)
        self.watched = {name: self.watched[name] for name in current if name in self.watched}
        # the first trinket writing a section is the one shown, as a search through them found it
        self.writers = {t.variable_name: t for t in reversed(list(self.watched.values()))}
        self.stateful_names = {t.variable_name: t.name for t in self.watched.values() if isinstance(t, StatefulTrinket)}
        recorded = None
        if view is not None:
            found = self.record.recorded_at(view)
            recorded = found[1] if found else None
        self.plan = placement_plan(self.session, recorded)
        wanted = {section for sections in self.plan.values() for section in sections}
        for section in list(self.shown):
            if section not in wanted:
                del self.shown[section]
                self._rendered.pop(section, None)
                self._texts.pop(section, None)
        for section in wanted:
            if section not in self.shown:
                self.shown[section] = self._view(section, view)
        self._structure = key

    # -- what a panel shows
    def _view(self, section: str, view: int | None) -> PanelView:
        if view is None:
            return self._live_view(section)
        return recorded_section(
            self.record.recorded_at(view),
            view,
            section,
            self.writers.get(section),
            self.record.omitted_at,
            self.record.items,
            self.model.preview_chars,
        )

    def _live_view(self, section: str) -> PanelView:
        session = self.session
        limit = self.model.preview_chars
        trinket = self.writers.get(section)
        key: tuple[Any, ...]
        items: list[dict[str, Any]] | None = None
        failure: str | None = None
        if trinket is None:
            record = find_record(session.composed, section)
            key = (None, None if record is None else (record.content, record.cached), limit)
        else:
            if isinstance(trinket, StatefulTrinket):
                items = self.record.items_at(session.turn, self.watched.values()).get(section)
                failure = self.record.item_errors.get(section)
                turn: int | None = trinket.current_turn
            else:
                turn = None
            key = (
                trinket,
                trinket.content,
                trinket.error,
                trinket.enabled,
                trinket.cache_policy,
                session.layout.placement_of(section),
                turn,
                items,
                failure,
                limit,
                cap_line(session, section),
            )
        rendered = self._rendered.get(section)
        if rendered is not None and rendered[0] == key:
            return rendered[1]
        shown = live_section(
            session,
            section,
            trinket,
            limit,
            items=items if failure is None else None,
            items_error=failure,
            text_html=functools.partial(self._section_text, section),
        )
        self._rendered[section] = (key, shown)
        return shown

    def _section_text(self, section: str, content: str, limit: int) -> str:
        """``section_text``, kept per section while its text and the limit stay the same."""
        drawn = self._texts.get(section)
        if drawn is None or drawn[1] != limit or drawn[0] != content:
            drawn = self._texts[section] = (content, limit, section_text(content, limit))
        return drawn[2]

    def close(self) -> None:
        """Stop observing the trinkets."""
        for trinket in self.watched.values():
            trinket.unobserve(self._on_change, names=trinket_traits(trinket))
        self.watched = {}


__all__ = ["Panels"]
