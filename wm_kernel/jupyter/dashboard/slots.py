"""Each section's text as a synced trait of its own (a slot), so a turn sends only the texts that
changed: a section keeps its slot while it is shown, a section gone frees it for the next new one,
and a slot is added to the widget only when none is free."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from traitlets import Unicode

from wm_kernel.jupyter.dashboard.parts import PanelView
from wm_kernel.utils.htmltext import dollars_as_text


class TextSlots:
    """The text slots of ``widget`` (an anywidget with a synced ``text_slots`` Dict trait:
    section -> slot name)."""

    def __init__(self, widget: Any) -> None:
        self.widget = widget
        self.free: list[str] = []
        self.made = 0

    def texts(self) -> dict[str, str]:
        """Section -> its text as HTML, as the front end has it."""
        widget = self.widget
        return {section: getattr(widget, slot) for section, slot in widget.text_slots.items()}

    def send(self, shown: Mapping[str, PanelView]) -> None:
        """Set the slot of each section whose text changed (a new section takes a free slot, or a
        new synced trait), and free the slots of the sections gone."""
        widget = self.widget
        slots = dict(widget.text_slots)
        for section in [s for s in slots if s not in shown]:
            slot = slots.pop(section)
            setattr(widget, slot, "")
            self.free.append(slot)
        for section, view in shown.items():
            slot = slots.get(section)
            if slot is None:
                slot = slots[section] = self.free.pop() if self.free else self._new()
            text = dollars_as_text(view.text)
            if getattr(widget, slot) != text:
                setattr(widget, slot, text)
        if slots != widget.text_slots:
            widget.text_slots = slots

    def _new(self) -> str:
        """A new synced trait for a section's text (ipywidgets syncs the traits named in ``keys``)."""
        widget = self.widget
        slot = f"t{self.made}"
        self.made += 1
        widget.add_traits(**{slot: Unicode("").tag(sync=True)})
        synced: list[str] = getattr(widget, "keys")  # noqa: B009 - ipywidgets' untyped trait
        widget.keys = [*synced, slot]
        return slot


__all__ = ["TextSlots"]
