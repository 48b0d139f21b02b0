"""The dashboard's section panels: which exist, in which placement tab, and what each shows.

:class:`Sections` follows the session's trinkets, layout and prompt: one
:class:`~wm_kernel.jupyter.dashboard.parts.SectionPanel` per section, in the tab of its placement,
an enable toggle per trinket, and the trinkets observed for the changes that make a panel dirty.
A panel is rendered again only when what it shows changed (its trinket's text, failure, switch,
cache policy, placement, segment turn and items, or for a section the composer writes its record,
and the preview size), its text only when the text changed: a countdown alone does not resend a
20,000-character preview.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel.jupyter.dashboard.model import VIEWS, DashboardModel, TurnRecord
from wm_kernel.jupyter.dashboard.panels import trinket_traits
from wm_kernel.jupyter.dashboard.parts import (
    PanelView,
    SectionPanel,
    cap_line,
    find_record,
    live_section,
    placement_plan,
    recorded_section,
    section_text,
)


class Sections:
    """The panels, placement tabs and toggles of one dashboard, and the trinkets they follow.

    ``on_change`` is called with a trinket's trait change, ``on_toggle`` with a toggle's; the
    owner renders the sections named in :attr:`dirty` with :meth:`show_dirty`.
    """

    def __init__(
        self,
        model: DashboardModel,
        record: TurnRecord,
        on_change: Callable[[dict[str, Any]], None],
        on_toggle: Callable[[dict[str, Any]], None],
    ) -> None:
        self.model, self.record = model, record
        self.session = model.session
        self._on_change, self._on_toggle = on_change, on_toggle
        self.views = {key: widgets.VBox() for key in VIEWS}
        self.toggle_box = widgets.VBox()
        self.panels: dict[str, SectionPanel] = {}
        self.toggles: dict[str, widgets.Checkbox] = {}
        self.watched: dict[str, EventAwareTrinket] = {}
        #: Sections whose panel may show something else now.
        self.dirty: set[str] = set()
        # section -> the watched trinket that writes it; and section -> name of the stateful ones
        self.writers: dict[str, EventAwareTrinket] = {}
        self.stateful_names: dict[str, str] = {}
        # section -> (what its live view was rendered from, the view), and section -> (content,
        # limit, its HTML)
        self._rendered: dict[str, tuple[tuple[Any, ...], PanelView]] = {}
        self._texts: dict[str, tuple[str, int, str]] = {}
        self._structure: tuple[Any, ...] | None = None
        #: Set when a toggle is made: the owner sets its enabled state at the next settle.
        self.new_toggle = False

    def names(self) -> dict[str, list[str]]:
        """The sections shown in each placement view, in display order."""
        return {
            key: [getattr(child, "_wm_section", "") for child in box.children if getattr(child, "_wm_section", None)]
            for key, box in self.views.items()
        }

    def mark_stateful(self) -> None:
        self.dirty.update(self.stateful_names)

    def show_dirty(self, view: int | None) -> None:
        """Render the dirty panels for the turn ``view`` (None: live)."""
        dirty, self.dirty = self.dirty, set()
        for section in dirty:
            panel = self.panels.get(section)
            if panel is not None:
                panel.show(self._view(section, view))

    # -- structure
    def changed(self, view: int | None) -> bool:
        """Whether what the structure follows changed since the last :meth:`sync`."""
        return self._key(view) != self._structure

    def _key(self, view: int | None) -> tuple[Any, ...]:
        """The trinkets (and their cache policies), the layout, the sections the composer wrote
        into the latest prompt (with their placements), and the turn on view. A trinket's section
        is placed by the layout whether or not it is in the prompt, so its coming and going (a
        search with no results) changes nothing here."""
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
        """Create panels, observers and toggles for new sections and trinkets, drop gone ones."""
        key = self._key(view)
        current = self.session.working_memory.trinkets
        for name, trinket in list(self.watched.items()):
            if current.get(name) is not trinket:
                trinket.unobserve(self._on_change, names=trinket_traits(trinket))
                del self.watched[name]
                self.record.forget_items()
                checkbox = self.toggles.pop(name, None)
                if checkbox is not None:
                    checkbox.unobserve(self._on_toggle, names=["value"])
                    checkbox.close()
        for name, trinket in current.items():
            if name not in self.watched:
                trinket.observe(self._on_change, names=trinket_traits(trinket))
                self.watched[name] = trinket
                self.record.forget_items()
                self.toggles[name] = self._make_toggle(name, trinket)
                self.new_toggle = True
                self.dirty.add(trinket.variable_name)
        # the first trinket writing a section is the one shown, as a search through them found it
        self.writers = {t.variable_name: t for t in reversed(list(self.watched.values()))}
        self.stateful_names = {t.variable_name: t.name for t in self.watched.values() if isinstance(t, StatefulTrinket)}
        toggles = tuple(self.toggles[name] for name in current if name in self.toggles)
        if self.toggle_box.children != toggles:
            self.toggle_box.children = toggles
        recorded = None
        if view is not None:
            found = self.record.recorded_at(view)
            recorded = found[1] if found else None
        placed = placement_plan(self.session, recorded)
        wanted = {section for sections in placed.values() for section in sections}
        for section in list(self.panels):
            if section not in wanted:
                self.panels.pop(section).close()
                self._rendered.pop(section, None)
                self._texts.pop(section, None)
        for section in wanted:
            if section not in self.panels:
                self.panels[section] = SectionPanel(section)
                self.dirty.add(section)
        for key_, sections in placed.items():
            boxes = tuple(self.panels[s].box for s in sections)
            if self.views[key_].children != boxes:
                self.views[key_].children = boxes
        self._structure = key

    def _make_toggle(self, name: str, trinket: EventAwareTrinket) -> widgets.Checkbox:
        # the description's default width cuts long trinket names: let it take its own
        checkbox = widgets.Checkbox(
            value=trinket.enabled,
            indent=False,
            description=f"{name} ({trinket.variable_name})",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="auto"),
        )
        checkbox._wm_trinket = name
        checkbox.observe(self._on_toggle, names=["value"])
        return checkbox

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
        """Stop observing the trinkets; close the panels, toggles and placement tabs."""
        for trinket in self.watched.values():
            trinket.unobserve(self._on_change, names=trinket_traits(trinket))
        self.watched = {}
        for panel in self.panels.values():
            panel.close()
        for widget in (*self.toggles.values(), *self.views.values(), self.toggle_box):
            widget.close()
        self.panels, self.toggles = {}, {}


__all__ = ["Sections"]
