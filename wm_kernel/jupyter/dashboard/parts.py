"""A section's panel and its HTML, where each section is placed, and the banner's HTML.

:class:`SectionPanel` is one section's accordion; :func:`live_section` and :func:`recorded_section`
say what a panel shows, live or at an earlier turn, with the section's text drawn by
``render.section_text_html`` (the one HTML and truncation rule of every view);
:func:`placement_plan` puts each section in its placement's tab. The dashboard's own style rules
(:data:`DASHBOARD_STYLE`) ride in the banner, so a saved notebook carries them too.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import ipywidgets as widgets

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel.core.prompt import ComposedPrompt, OmittedSection, SectionRecord
from wm_kernel.display import render
from wm_kernel.instruments.items import ItemLog, checked_items
from wm_kernel.jupyter.dashboard.model import VIEWS

# TurnDriver lived here in 0.1 (wm_kernel.dashboard_parts still names this module)
from wm_kernel.jupyter.html_widget import TextHTML
from wm_kernel.utils import style

if TYPE_CHECKING:
    from wm_kernel.session import Session

SMALL = "font-size:12px"
BASE_SECTION = "base_prompt"

#: The dashboard's style rules. Tabs take the width of their label (JupyterLab's fixed tab width
#: cut "system uncached"), wrapping onto a second row when the notebook is narrow. A dashboard
#: whose widgets are not connected to a kernel (a saved notebook opened, a kernel restarted) shows
#: what it showed when saved, without the controls that would do nothing, without a
#: "disconnected" mark on each of its widgets, and with one line saying how to bring it to life.
DASHBOARD_STYLE = """<style>
.wm-dashboard .wm-tabs > .lm-TabBar .lm-TabBar-content { flex-wrap: wrap; }
.wm-dashboard .wm-tabs > .lm-TabBar .lm-TabBar-tab { flex: 0 0 auto; max-width: none; }
.wm-dashboard .wm-offline { display: none; }
.wm-dashboard:not(.jupyter-widgets-disconnected) .wm-notice { display: none; }
.wm-dashboard.jupyter-widgets-disconnected .wm-offline { display: block; }
.wm-dashboard.jupyter-widgets-disconnected .wm-live,
.wm-dashboard.jupyter-widgets-disconnected .wm-controls { display: none !important; }
.wm-dashboard.jupyter-widgets-disconnected::before,
.wm-dashboard .jupyter-widgets-disconnected::before { display: none !important; }
.wm-dashboard.jupyter-widgets-disconnected .widget-checkbox { pointer-events: none; }
</style>"""


def badge(text: str, bg: str = style.ERROR_BADGE) -> str:
    return (
        f'<span class="wm-badge" style="background:{bg};color:#fff;padding:0 5px;'
        f'border-radius:3px;font-size:11px">{html.escape(text)}</span>'
    )


#: What a dashboard not connected to a kernel says under its banner (and only then).
OFFLINE_HTML = (
    '<div class="wm-offline" style="padding:0 8px 4px"><i>a saved view: run the '
    "notebook's cells to bring this dashboard to life</i></div>" + DASHBOARD_STYLE
)


def banner_html(head: str, tail: str, replay: bool) -> str:
    """The banner: ``head`` in bold, then ``tail``; marked when an earlier turn is on view. A
    dashboard not connected to a kernel shows the tail alone (its head says "live")."""
    style_ = (
        "background:var(--jp-layout-color2,#fff3cd);"
        "border:1px solid var(--jp-warn-color1,#e0c46c);border-left-width:4px;"
        "padding:4px 8px"
        if replay
        else "padding:4px 8px"
    )
    return f'<div style="{style_}"><span class="wm-live"><b>{html.escape(head)}</b> · </span>{html.escape(tail)}</div>'


class PanelView(NamedTuple):
    """What a section's panel shows: its title, its two parts and whether it folds.

    ``status`` is what a turn changes without changing the section's text: for a stateful
    trinket, its meta line (with the segment turn), note and items with their turns remaining;
    ``text`` is the rest (the section's text; for any other section its meta line and note too,
    as they change only with its text). Together they are the panel's HTML."""

    title: str
    status: str
    text: str
    #: No content and no failure or switch to show: the panel folds to its title line.
    empty: bool

    @property
    def html(self) -> str:
        """The panel's whole HTML: status, then text."""
        return self.status + self.text


class SectionPanel:
    """One section's collapsible panel: an ``Accordion`` (title: section and trinket, plus a marker
    when the trinket failed or is disabled) holding a ``VBox`` ``body`` of two ``HTML`` widgets,
    ``status`` and ``text`` (see :class:`PanelView`).

    A countdown (an item's turns remaining, the segment turn) goes out in the small ``status``
    widget: the ``text`` widget, which may hold a 20,000-character preview, is sent only when the
    text it shows changed. A section with no status shows only its ``text`` widget (an empty HTML
    widget would still take a line). The title changes only when the trinket starts or stops
    failing, is switched, or its section empties or fills.
    """

    def __init__(self, section: str) -> None:
        self.section = section
        self.status = TextHTML()
        self.text = TextHTML()
        self.body = widgets.VBox(children=(self.text,))
        self.box = widgets.Accordion(children=(self.body,), titles=(section,), selected_index=0)
        self.box._wm_section = section  # what Dashboard.section_names reads
        # what the widgets show, as a view: compared instead of their traits (a panel is asked
        # on every settle; a view rendered from unchanged inputs is the same object)
        self._shown = PanelView(section, "", "", False)

    @property
    def title(self) -> str:
        """The accordion title: section and trinket, plus the failed/disabled marker."""
        return str(self.box.titles[0])

    @property
    def value(self) -> str:
        """The panel's whole HTML as shown: status, then text."""
        return str(self.status.value) + str(self.text.value)

    def show(self, view: PanelView) -> None:
        """Show ``view``: at most one message per widget, none for a part that did not change.

        A panel whose section has no content (and no error to show) folds to its title line when
        it becomes empty and opens again when content arrives; in between the user's choice
        stands."""
        shown = self._shown
        if view is shown:
            return
        if view.title != shown.title or view.empty != shown.empty:
            # the accordion's title and fold change together: one message for both
            with self.box.hold_sync():
                title = view.title + " · empty" if view.empty else view.title
                if self.box.titles != (title,):
                    self.box.titles = (title,)
                if view.empty != shown.empty:
                    self.box.selected_index = None if view.empty else 0
        # compared first: a trait set costs its validation even when the value is equal
        if view.status != shown.status:
            self.status.value = view.status
            if bool(view.status) != bool(shown.status):
                self.body.children = (self.status, self.text) if view.status else (self.text,)
        if view.text != shown.text:
            self.text.value = view.text
        self._shown = view

    def close(self) -> None:
        """Close the panel's widgets."""
        for widget in (self.status, self.text, self.body, self.box):
            widget.close()


def section_text(content: str, limit: int) -> str:
    """A section's text as every view shows it (``render.section_text_html``, cut at ``limit``);
    nothing for no text."""
    return render.section_text_html(content, limit=limit) if content else ""


def live_section(
    session: Session,
    section: str,
    trinket: EventAwareTrinket | None,
    limit: int,
    *,
    items: list[dict[str, Any]] | None = None,
    items_error: str | None = None,
    text_html: Callable[[str, int], str] = section_text,
) -> PanelView:
    """What the panel of ``section`` shows now; ``trinket`` writes it (None: the composer does).
    ``items``: a stateful trinket's ``describe_items()`` as the caller read them, or None with
    ``items_error`` saying why they could not be read (shown as the trinket's failure);
    ``text_html``: :func:`section_text`, or a caller's memo of it.

    Long because: one branch per kind of panel (the composer's, a failed, disabled or plain
    trinket's, a stateful trinket's with its items), each with its title, note and meta line.
    """
    if trinket is None:
        record = find_record(session.composed, section)
        content = record.content if record is not None else ""
        meta = f"composer · {render.chars(len(content))}" + (
            " · cached" if record is not None and record.cached else ""
        )
        note = "" if record is not None else "<i>not in the prompt</i>"
        return PanelView(section, "", head_html(meta, note, None) + text_html(content, limit), not content)
    title = f"{section} · {trinket.name}"
    note, content = "", ""
    if trinket.error:
        title += " · ⚠ failed"
        note = (
            f"{badge('error')} <code>{html.escape(trinket.error)}</code> <i>the section is left out of the prompt</i>"
        )
    elif not trinket.enabled:
        title += " · disabled"
        note = f"{badge('disabled', style.MUTED_BADGE)} <i>contributes no section</i>"
    else:
        content = trinket.content
        if not content:
            note = "<i>no content: the section is left out</i>"
    placement = session.layout.placement_of(section)
    cached = trinket.cache_policy and placement in (None, "system")
    meta = (
        f"trinket <b>{html.escape(trinket.name)}</b> · {render.chars(len(content))}"
        + (" · cached" if cached else "")
        + cap_line(session, section)
    )
    if not isinstance(trinket, StatefulTrinket):
        empty = not content and not trinket.error and trinket.enabled
        return PanelView(title, "", head_html(meta, note, None) + text_html(content, limit), empty)
    meta += f" · segment turn {trinket.current_turn}"
    if items is None and items_error is None:
        try:
            items = checked_items(trinket.describe_items())
        except Exception as exc:
            items_error = f"describe_items() failed: {type(exc).__name__}: {exc}"
    if items_error is not None:
        if not trinket.error:
            title += " · ⚠ failed"
        note += (" " if note else "") + (
            f"{badge('error')} <code>{html.escape(items_error)}</code> <i>its items are not shown</i>"
        )
        return PanelView(title, head_html(meta, note, None), text_html(content, limit), False)
    empty = not content and not trinket.error and trinket.enabled and not items
    return PanelView(title, head_html(meta, note, items or []), text_html(content, limit), empty)


def cap_line(session: Session, section: str) -> str:
    """`` · hard cap of 800 tokens: 95% full`` for a capped section (what the last compose found,
    and what the cap did when over), else empty."""
    cap = session.working_memory.caps.get(section)
    if cap is None:
        return ""
    composed = session.composed
    report = composed.budget if composed is not None else None
    found = next((r for r in (report.caps if report is not None else ()) if r.section == section), None)
    if found is None or found.cap != cap:
        return f" · {html.escape(str(cap))}"
    done = "" if found.action == "within" else f", {html.escape(found.action)}"
    return f" · {html.escape(str(cap))}: {found.share:.0%} full{done}"


def recorded_section(
    found: tuple[int, ComposedPrompt] | None,
    turn: int,
    section: str,
    trinket: EventAwareTrinket | None,
    omitted_at: Mapping[int, Sequence[OmittedSection]],
    log: ItemLog,
    limit: int,
) -> PanelView:
    """What the panel of ``section`` shows at an earlier ``turn``, read-only: ``found`` is the
    (turn, prompt) recorded there or before, ``omitted_at`` what each turn left out (when the
    recorder's prompt does not say), ``log`` the items over time (a turn before the log's first
    sighting shows no items table but says their countdowns were not recorded)."""
    title = section if trinket is None else f"{section} · {trinket.name}"
    stateful = isinstance(trinket, StatefulTrinket)
    if found is None:
        head = head_html("", f"<i>no prompt was composed by turn {turn}</i>", None)
        return PanelView(title, head if stateful else "", "" if stateful else head, True)
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
    meta = (
        f"turn {shown_turn} (read-only) · "
        + (f"trinket <b>{html.escape(owner)}</b> · " if owner else "composer · ")
        + render.chars(len(content))
        + (" · cached" if record is not None and record.cached else "")
    )
    items = log.items_at(shown_turn, section) if stateful else None
    if items is not None and (log.first is None or shown_turn < log.first):
        items = None
        note += (
            " " if note else ""
        ) + "<i>its items' countdowns were not recorded at this turn (the dashboard was opened later)</i>"
    failed = omitted is not None and bool(omitted.error)
    empty = not content and not failed and not items
    head = head_html(meta, note, items)
    if stateful:
        return PanelView(title, head, section_text(content, limit), empty)
    return PanelView(title, "", head + section_text(content, limit), empty)


def head_html(meta: str, note: str, items: list[dict[str, Any]] | None) -> str:
    """The top of a panel: meta line, note and items table (each only if given)."""
    parts = [f'<div class="wm-meta" style="{SMALL};color:{style.MUTED}">{meta}</div>'] if meta else []
    if note:
        parts.append(f'<div class="wm-note">{note}</div>')
    if items is not None:
        parts.append(items_html(items))
    return "".join(parts)


def body_html(meta: str, note: str, items: list[dict[str, Any]] | None, content: str, limit: int) -> str:
    """A panel's whole HTML: meta line, note, items table, then the section's text as every view
    shows it (``render.section_text_html``, cut at ``limit``)."""
    return head_html(meta, note, items) + section_text(content, limit)


def items_html(items: list[dict[str, Any]]) -> str:
    """A stateful trinket's items and the turns each has left (or a line saying there are none)."""
    if not items:
        return f'<div class="wm-items" style="{SMALL}"><i>no live items</i></div>'
    rows = "".join(
        f"<tr><td>{html.escape(str(item.get('label') or item.get('id')))}</td>"
        f'<td style="text-align:right">{_remaining(item.get("turns_remaining"))}</td></tr>'
        for item in items
    )
    return style.scrolling(
        f'<table class="wm-items" style="{SMALL}"><tr><th style="text-align:left">item</th>'
        f"<th>turns remaining</th></tr>{rows}</table>"
    )


def _remaining(turns: Any) -> str:
    return "until collapse" if turns is None else html.escape(str(turns))


def find_record(composed: ComposedPrompt | None, section: str) -> SectionRecord | None:
    """The record of ``section`` in ``composed``, or None."""
    for record in composed.sections if composed is not None else ():
        if record.name == section:
            return record
    return None


def find_omitted(omitted: Iterable[OmittedSection], section: str) -> OmittedSection | None:
    """The entry of ``section`` among ``omitted``, or None."""
    for gone in omitted:
        if gone.name == section:
            return gone
    return None


def placement_plan(session: Session, recorded: ComposedPrompt | None) -> dict[str, list[str]]:
    """View key -> section names, in layout order: the sections of the latest prompt, of
    ``recorded`` (the prompt on view, if earlier), the base prompt and every trinket's section.
    Sections the layout does not list go last in system, as the composer puts them; the groups
    are ``render.group_of``'s."""
    layout = session.layout
    info: dict[str, tuple[str, bool]] = {}  # section -> (placement, cache_policy)
    for composed in (session.composed, recorded):
        for record in composed.sections if composed is not None else ():
            info.setdefault(record.name, (record.placement, record.cache_policy))
    info.setdefault(BASE_SECTION, ("system", True))
    for trinket in session.working_memory.trinkets.values():
        section = trinket.variable_name
        info[section] = (layout.placement_of(section) or "system", trinket.cache_policy)
    order = {name: index for index, name in enumerate(layout.sections())}
    plan: dict[str, list[str]] = {key: [] for key in VIEWS}
    for section in sorted(info, key=lambda s: order.get(s, len(order))):
        placement, cached = info[section]
        plan.setdefault(render.group_of(placement, cached).replace(":", "_"), []).append(section)
    return plan


__all__ = [
    "DASHBOARD_STYLE",
    "OFFLINE_HTML",
    "banner_html",
    "placement_plan",
    "SectionPanel",
    "PanelView",
    "live_section",
    "recorded_section",
    "section_text",
    "head_html",
    "body_html",
    "items_html",
    "find_record",
    "badge",
]
