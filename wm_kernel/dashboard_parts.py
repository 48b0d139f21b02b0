"""The parts of the dashboard that stand alone: its turn driver, a section's panel and its HTML.

:class:`TurnDriver` is all the state that decides which turn a :class:`~wm_kernel.widgets.Dashboard`
shows and when it may render; :class:`SectionPanel` is one section's accordion; :func:`live_section`
and :func:`recorded_section` say what a panel shows, live or at an earlier turn, with the section's
text drawn by ``render.section_text_html`` (the one HTML and truncation rule of every view).
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import ipywidgets as widgets

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel import render, style
from wm_kernel.bus import EventRecord
from wm_kernel.overview import ItemLog
from wm_kernel.types import ComposedPrompt, OmittedSection, SectionRecord

if TYPE_CHECKING:
    from wm_kernel.session import Session

SMALL = "font-size:12px"


def badge(text: str, bg: str = style.ERROR) -> str:
    return (f'<span class="wm-badge" style="background:{bg};color:#fff;padding:0 5px;'
            f'border-radius:3px;font-size:11px">{html.escape(text)}</span>')



@dataclass
class TurnDriver:
    """Which turn a dashboard shows and when it may render: all of its turn-driving state.

    ``mode`` is ``"live"`` (the session's latest turn, editable) or ``"replay"`` (an earlier
    recorded turn, read-only). Rendering is held while a dashboard-driven action (a batch) or a
    session turn is in progress, so everything one turn changes goes out together.

    Examples
    --------
    >>> d = TurnDriver(latest=3)
    >>> d.seek(1), d.next_seek(), d.next_seek(), d.view_for(1), d.mode
    (True, 1, None, 1, 'live')
    >>> d.view = 1; d.mode, d.shown, d.view_for(9)
    ('replay', 1, None)
    >>> d.start_turn(4); d.held, d.latest, d.view
    (True, 4, 1)
    >>> d.end_turn(); d.held
    False
    """

    #: The session's turn: the slider's maximum.
    latest: int = 0
    #: The earlier turn shown read-only, or None: live.
    view: int | None = None
    #: Dashboard-driven actions in progress (nested); rendering waits for the outermost.
    batches: int = 0
    #: A session turn has started and its compose (or lifecycle refresh) has not ended it yet.
    turn_open: bool = False
    #: The dashboard is moving its own controls: their change notifications are its own echo.
    echo: bool = False
    #: The latest slider or play target not yet shown; moves arriving while one is shown
    #: collapse into it, so a fast drag shows the turns it ends on, not every turn it crossed.
    pending: int | None = None
    #: A seek is being shown.
    seeking: bool = False

    @property
    def mode(self) -> str:
        """``"live"`` or ``"replay"``."""
        return "live" if self.view is None else "replay"

    @property
    def shown(self) -> int:
        """The turn on view."""
        return self.latest if self.view is None else self.view

    @property
    def held(self) -> bool:
        """Whether rendering must wait (a batch or a session turn is in progress)."""
        return self.batches > 0 or self.turn_open

    def check_view(self, turn: object) -> int | None:
        """``turn`` if it may be viewed (None, or 0 to ``latest - 1``); ValueError otherwise."""
        if turn is None:
            return None
        if isinstance(turn, bool) or not isinstance(turn, int) or not 0 <= turn < self.latest:
            raise ValueError(f"viewing_turn must be None (live) or an earlier turn, 0 to "
                             f"{self.latest - 1}; got {turn!r}")
        return turn

    def view_for(self, target: int) -> int | None:
        """The view a slider at ``target`` asks for: live at or past the latest turn."""
        return None if target >= self.latest else max(target, 0)

    def start_turn(self, turn: int) -> None:
        """The session moved to ``turn``: hold rendering until the turn ends."""
        self.latest = turn
        self.turn_open = True

    def end_turn(self) -> None:
        """The turn's compose (or lifecycle refresh) ended: rendering may go on."""
        self.turn_open = False

    def open_batch(self) -> None:
        self.batches += 1

    def close_batch(self) -> bool:
        """End a batch; True when it was the outermost (then render once, and any turn it
        drove has ended too)."""
        self.batches -= 1
        if self.batches:
            return False
        self.turn_open = False
        return True

    def seek(self, target: int) -> bool:
        """A control asks for ``target``. True: the caller shows it (and then each
        :meth:`next_seek`); False: a seek in progress will pick it up."""
        self.pending = target
        if self.seeking:
            return False
        self.seeking = True
        return True

    def next_seek(self) -> int | None:
        """The next target to show, or None: the seek is over."""
        target, self.pending = self.pending, None
        if target is None:
            self.seeking = False
        return target

    def abort_seek(self) -> None:
        """A seek failed: drop what is pending."""
        self.pending, self.seeking = None, False


class SectionPanel:
    """One section's collapsible panel: an ``Accordion`` (title: section and trinket, plus a marker
    when the trinket failed or is disabled) holding one ``HTML`` body.

    Everything that changes on an ordinary content change lives in the body, so such a change is one
    message; the title changes only when the trinket starts or stops failing, or is switched.
    """

    def __init__(self, section: str) -> None:
        self.section = section
        self.body = widgets.HTML()
        self.box = widgets.Accordion(children=(self.body,), titles=(section,), selected_index=0)
        self._empty = False

    @property
    def title(self) -> str:
        """The accordion title: section and trinket, plus the failed/disabled marker."""
        return str(self.box.titles[0])

    def show(self, title: str, body: str, *, empty: bool = False) -> None:
        """Set title and body: at most one message per widget, none if nothing changed.

        A panel whose section has no content (and no error to show) folds to its title line when
        it becomes empty and opens again when content arrives; in between the user's choice
        stands."""
        if empty:
            title += " · empty"
        if empty != self._empty or self.box.titles != (title,):
            # the accordion's title and fold change together: one message for both
            with self.box.hold_sync():
                if self.box.titles != (title,):
                    self.box.titles = (title,)
                if empty != self._empty:
                    self._empty = empty
                    self.box.selected_index = None if empty else 0
        self.body.value = body   # one trait: one message if it differs, none if it is equal

    def close(self) -> None:
        """Close the body and the accordion widgets."""
        self.body.close()
        self.box.close()


def live_section(session: "Session", section: str, trinket: EventAwareTrinket | None,
                 limit: int, *, items: list[dict[str, Any]] | None = None) -> tuple[str, str, bool]:
    """(title, body HTML, empty) of ``section`` as it is now; ``trinket`` writes it (None: the
    composer does); empty: no content and no failure or switch to show, so the panel folds.
    ``items``: a stateful trinket's ``describe_items()`` if the caller already has them."""
    if trinket is None:
        record = find_record(session.composed, section)
        content = record.content if record is not None else ""
        meta = f"composer · {render.chars(len(content))}" + (
            " · cached" if record is not None and record.cached else "")
        note = "" if record is not None else "<i>not in the prompt</i>"
        return section, body_html(meta, note, None, content, limit), not content
    title = f"{section} · {trinket.name}"
    note, content = "", ""
    if trinket.error:
        title += " · ⚠ failed"
        note = (f"{badge('error')} <code>{html.escape(trinket.error)}</code> "
                f"<i>the section is left out of the prompt</i>")
    elif not trinket.enabled:
        title += " · disabled"
        note = f"{badge('disabled', style.MUTED)} <i>contributes no section</i>"
    else:
        content = trinket.content
        if not content:
            note = "<i>no content: the section is left out</i>"
    placement = session.layout.placement_of(section)
    cached = trinket.cache_policy and placement in (None, "system")
    meta = (f"trinket <b>{html.escape(trinket.name)}</b> · {render.chars(len(content))}"
            + (" · cached" if cached else ""))
    if isinstance(trinket, StatefulTrinket):
        meta += f" · segment turn {trinket.current_turn}"
    if isinstance(trinket, StatefulTrinket):
        items = trinket.describe_items() if items is None else items
    else:
        items = None
    empty = not content and not trinket.error and trinket.enabled and not items
    return title, body_html(meta, note, items, content, limit), empty


def recorded_section(found: "tuple[int, ComposedPrompt] | None", turn: int, section: str,
                     trinket: EventAwareTrinket | None,
                     omitted_at: Mapping[int, Sequence[OmittedSection]], log: ItemLog,
                     limit: int) -> tuple[str, str, bool]:
    """(title, body HTML, empty) of ``section`` at an earlier ``turn``, read-only: ``found`` is the
    (turn, prompt) recorded there or before, ``omitted_at`` what each turn left out (when the
    recorder's prompt does not say), ``log`` the items over time."""
    title = section if trinket is None else f"{section} · {trinket.name}"
    if found is None:
        return title, body_html("", f"<i>no prompt was composed by turn {turn}</i>",
                                None, "", limit), True
    shown_turn, composed = found
    record = find_record(composed, section)
    omitted = find_omitted(omitted_at.get(shown_turn, composed.omitted), section)
    note, content = "", ""
    owner = trinket.name if trinket is not None else None
    if record is not None:
        content = record.content
        owner = record.trinket or owner
        title = section if owner is None else f"{section} · {owner}"
    elif omitted is not None:
        owner = omitted.trinket or owner
        if omitted.error:
            title = f"{section} · {owner} · ⚠ failed"
        note = (badge("error") + " " if omitted.error else "") + render.omitted_html(omitted)
    else:
        note = "<i>not in the prompt at this turn</i>"
    meta = (f"turn {shown_turn} (read-only) · "
            + (f"trinket <b>{html.escape(owner)}</b> · " if owner else "composer · ")
            + render.chars(len(content))
            + (" · cached" if record is not None and record.cached else ""))
    items = (log.items_at(shown_turn, section)
             if isinstance(trinket, StatefulTrinket) else None)
    failed = omitted is not None and bool(omitted.error)
    empty = not content and not failed and not items
    return title, body_html(meta, note, items, content, limit), empty


def body_html(meta: str, note: str, items: list[dict[str, Any]] | None, content: str,
              limit: int) -> str:
    """A panel's body: meta line, note, items table, then the section's text as every view
    shows it (``render.section_text_html``, cut at ``limit``)."""
    parts = [f'<div class="wm-meta" style="{SMALL};color:{style.MUTED}">{meta}</div>'] \
        if meta else []
    if note:
        parts.append(f'<div class="wm-note">{note}</div>')
    if items is not None:
        parts.append(items_html(items))
    if content:
        parts.append(render.section_text_html(content, limit=limit))
    return "".join(parts)


def items_html(items: list[dict[str, Any]]) -> str:
    """A stateful trinket's items and the turns each has left (or a line saying there are none)."""
    if not items:
        return f'<div class="wm-items" style="{SMALL}"><i>no live items</i></div>'
    rows = "".join(f"<tr><td>{html.escape(str(item.get('label') or item.get('id')))}</td>"
                   f'<td style="text-align:right">{_remaining(item.get("turns_remaining"))}</td></tr>'
                   for item in items)
    return (f'<table class="wm-items" style="{SMALL}"><tr><th style="text-align:left">item</th>'
            f"<th>turns remaining</th></tr>{rows}</table>")


def _remaining(turns: Any) -> str:
    return "until collapse" if turns is None else html.escape(str(turns))


def find_record(composed: ComposedPrompt | None, section: str) -> SectionRecord | None:
    """The record of ``section`` in ``composed``, or None."""
    for record in (composed.sections if composed is not None else ()):
        if record.name == section:
            return record
    return None


def find_omitted(omitted: Iterable[OmittedSection], section: str) -> OmittedSection | None:
    """The entry of ``section`` among ``omitted``, or None."""
    for gone in omitted:
        if gone.name == section:
            return gone
    return None


def event_row(record: EventRecord) -> str:
    """One row of the event log table: number, event (indented by depth), detail, failures."""
    failures = "; ".join(f"{f.subscriber}: {f.error}" for f in record.failures)
    return (f"<tr><td>{record.seq}</td>"
            f"<td style=\"padding-left:{4 + 12 * record.depth}px\">{html.escape(record.event_type)}"
            f"</td><td>{html.escape(render.event_detail(record.event))}</td>"
            f"<td style=\"color:{style.ERROR}\">{html.escape(failures)}</td></tr>")



__all__ = ["TurnDriver", "SectionPanel", "live_section", "recorded_section", "body_html", "items_html",
           "event_row", "find_record", "badge"]
