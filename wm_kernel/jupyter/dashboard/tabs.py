"""The dashboard's drawn tabs: overview, budget bars, cache strip, request, replies and event log,
as HTML.

Each renderer keeps what it last drew with what it drew it from, so a settle that changed nothing
it shows costs a comparison: the overview's parts each only when their inputs changed, the bars
once per prompt, the cache simulation once per (model, latest turn, compose), the event log's rows
once per event. They read a :class:`~wm_kernel.jupyter.dashboard.model.TurnRecord` and the turn
on view; they make no widget (the shell sets the HTML it is given when it differs).
"""

from __future__ import annotations

import bisect
import html
from collections.abc import Mapping
from typing import Any

from wm_kernel.core.bus import EventRecord
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.display import overview
from wm_kernel.display.budget_bars import budget_bars
from wm_kernel.display.event_log import event_row_html
from wm_kernel.jupyter.dashboard.model import TurnRecord
from wm_kernel.jupyter.dashboard.parts import SMALL
from wm_kernel.session import Session
from wm_kernel.utils.style import scrolling

#: What a tab shows until it is drawn: a saved notebook keeps it for a tab never opened live.
UNDRAWN = f'<div style="{SMALL}"><i>drawn when this tab is opened in a running notebook</i></div>'


class OverviewTab:
    """The overview: the items' timeline, the placements' sizes and the newest changes, all as
    seen at the turn on view."""

    def __init__(self) -> None:
        self._timeline: tuple[tuple[Any, ...], str] | None = None
        self._sizes: tuple[ComposedPrompt | None, str] | None = None
        self._changes: tuple[ComposedPrompt, ComposedPrompt, str] | None = None
        self._parts: tuple[str, str, str] | None = None
        self._html = ""

    def html(
        self, record: TurnRecord, names: Mapping[str, str], shown: int, live: bool, composed: ComposedPrompt | None
    ) -> str:
        """The tab's HTML; ``names`` maps each stateful section to its trinket, ``composed`` is
        the prompt on view."""
        key = (record.items.version, names, shown, live)
        if self._timeline is None or self._timeline[0] != key:
            spans, left_out = record.items.window(names, shown)
            self._timeline = (key, overview.timeline_html(spans, shown, live=live, left_out=left_out))
        if self._sizes is None or self._sizes[0] is not composed:
            self._sizes = (composed, overview.sizes_html(composed))
        if live:
            newest = record.newest
            before = newest[0] if newest[0] is not newest[1] else None
            if before is None and composed is not None and composed.turn is not None:
                before = record.before(composed.turn)  # composed before this dashboard opened
        else:
            found = record.recorded_at(shown)
            before = record.before(found[0]) if found else None
        parts = (self._timeline[1], self._sizes[1], self._changes_html(before, composed))
        if self._parts is not None and all(a is b for a, b in zip(parts, self._parts, strict=True)):
            return self._html
        self._parts = parts
        self._html = (
            '<div class="wm-overview">'
            "<b>items: when each lives</b>"
            + parts[0]
            + '<div style="display:flex;gap:2em;flex-wrap:wrap;margin-top:6px">'
            "<div><b>size of each placement</b>" + parts[1] + "</div>"
            "<div><b>newest changes</b>" + parts[2] + "</div>"
            "</div></div>"
        )
        return self._html

    def _changes_html(self, before: ComposedPrompt | None, after: ComposedPrompt | None) -> str:
        if after is None:
            return overview.changes_html(None, "nothing composed yet")
        if before is None:
            return overview.changes_html(None, "the first compose: nothing to compare with")
        # the pair is held (not its ids), so a rebuilt prompt can never match a stale entry
        if self._changes is None or self._changes[0] is not before or self._changes[1] is not after:
            label = f"turn {before.turn} → turn {after.turn}"
            self._changes = (before, after, overview.changes_between(before, after, label))
        return self._changes[2]


class BudgetTab:
    """The budget bars of the prompt on view, drawn once per prompt."""

    def __init__(self) -> None:
        self._bars: tuple[ComposedPrompt, str] | None = None

    def html(self, session: Session, composed: ComposedPrompt | None) -> str:
        if composed is None:
            return "<i>nothing composed yet</i>"
        if self._bars is None or self._bars[0] is not composed:
            counter = getattr(session.recorder, "counter", None)
            bars = budget_bars(composed, counter=counter)
            label = f"turn {composed.turn} · tokens by section ({bars.tokenizer})" + (
                f" · budget {bars.budget:,}" if bars.budget is not None else " · no budget"
            )
            self._bars = (
                composed,
                f'<div class="wm-budget"><div style="{SMALL}">{html.escape(label)}</div>{bars.svg}'
                f"{bars.legend_html()}</div>",
            )
        return self._bars[1]


def _named(session: Session, model: str) -> str | None:
    """The dashboard's model as the views take it: None (the session's own, as ``%cache`` with no
    model counts) when it is the session's model or, for a session with none, the default."""
    from wm_kernel.cachesim.models import DEFAULT_MODEL

    return None if model == (session.model or DEFAULT_MODEL) else model


class CacheTab:
    """The cache strip, from one simulation per (model, latest turn, compose): moving the slider
    only moves the marked cell."""

    def __init__(self) -> None:
        self._key: tuple[str, int, ComposedPrompt | None] | None = None
        self._found: list[tuple[int, str, str, str]] | str = ""
        self._summary = ""

    def html(self, session: Session, model: str, shown: int) -> str:
        key = (model, session.turn, session.composed)
        done = self._key
        # the prompt itself is held, not its id: a later compose can never match a stale entry
        if done is None or done[:2] != key[:2] or done[2] is not key[2]:
            self._key = key
            try:
                # on the session's own model, the session's counter (as %cache with no model)
                own = {} if _named(session, model) else {"counter": session.recorder.counter}
                sim = session.cache_simulation(model, **own)
            except ValueError as exc:  # nothing recorded, or send times gone from the bus log
                self._found, self._summary = str(exc), ""
            else:
                t = sim.turns
                self._found = list(
                    zip(
                        t["turn"].astype(int).tolist(),
                        t["status"].tolist(),
                        t["miss_reason"].tolist(),
                        [label or "" for label in t["divergent_label"].tolist()],
                        strict=True,
                    )
                )
                turns = self._found
                span = f"turns {turns[0][0]}-{turns[-1][0]} · " if turns else ""
                self._summary = f"{span}{sim.headline()}"
        if isinstance(self._found, str):
            return f'<div class="wm-cache-strip" style="{SMALL}"><i>{html.escape(self._found)}</i></div>'
        return overview.cache_strip_html(self._found, shown, self._summary)


class RequestTab:
    """The whole request of the turn on view against the dashboard model's window
    (:func:`~wm_kernel.display.wire_view.request_view`), once per (model, turn, compose)."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._html = ""

    def html(self, session: Session, model: str, shown: int) -> str:
        from wm_kernel.display.wire_view import request_view

        turns = session.recorder.turns
        turn = max((t for t in turns if t <= shown), default=None)
        key = (model, turn, session.turn, len(session.recorder.exchanges()), session.composed)
        if self._key is None or self._key[:4] != key[:4] or self._key[4] is not key[4]:
            self._key = key
            if turn is None:
                self._html = f'<div style="{SMALL}"><i>nothing composed yet</i></div>'
            else:
                try:
                    self._html = request_view(session, turn, model=_named(session, model))._repr_html_()
                except (TypeError, ValueError) as exc:
                    self._html = f'<div style="{SMALL}"><i>{html.escape(str(exc))}</i></div>'
        return self._html


#: How many replies the replies tab shows at once, around the turn on view.
REPLIES_WINDOW = 20


class RepliesTab:
    """What the session sent to a model and the replies, with billed and simulated dollars per
    turn (:func:`~wm_kernel.display.exchanges.exchanges_view`, worked out once per exchange
    recorded): a window of :data:`REPLIES_WINDOW` rows around the turn on view, whose row is
    marked, so the tab follows the slider and a long session (156 turns) stays browsable."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._view: Any = None
        self._error = ""
        self._drawn: tuple[int, str] | None = None

    def html(self, session: Session, shown: int) -> str:
        from wm_kernel.display.exchanges import ExchangesView, exchanges_view

        key = (len(session.recorder.exchanges()), session.turn)
        if self._key != key:
            self._key, self._drawn = key, None
            try:
                self._view, self._error = exchanges_view(session), ""
            except (TypeError, ValueError) as exc:
                self._view, self._error = None, str(exc)
        if self._view is None:
            return f'<div style="{SMALL}"><i>{html.escape(self._error)}</i></div>'
        if self._drawn is not None and self._drawn[0] == shown:
            return self._drawn[1]
        view = self._view
        rows = view.rows
        if len(rows) <= REPLIES_WINDOW:
            page = ExchangesView(rows, view.note, view.banner, current=shown)._repr_html_()
        else:
            at = max(0, bisect.bisect_right([r.turn for r in rows], shown) - 1)
            start = max(0, min(at - REPLIES_WINDOW // 2, len(rows) - REPLIES_WINDOW))
            window = rows[start : start + REPLIES_WINDOW]
            head = (
                f"rows {start + 1}-{start + len(window)} of {len(rows)} (turns {window[0].turn}-{window[-1].turn}): "
                "the slider moves this window"
            )
            page = (
                f'<div class="wm-replies-window" style="{SMALL}">{html.escape(head)}</div>'
                + ExchangesView(window, view.note, view.banner, current=shown)._repr_html_()
            )
        self._drawn = (shown, page)
        return page


class EventLogTab:
    """The tail of the bus log as a table, each record rendered once (again only if a failure
    was added to it since)."""

    def __init__(self) -> None:
        self._rows: dict[int, tuple[EventRecord, int, str]] = {}  # seq -> (record, failures, row)
        # the table last drawn, with the (record, failures) of its rows: equal rows, same table
        self._drawn: tuple[tuple[tuple[EventRecord, int], ...], str] | None = None

    def html(self, session: Session, rows: int) -> str:
        records = session.bus.tail(rows)
        # records compare by identity (EventRecord has no __eq__), failures by count
        drawn = tuple((record, len(record.failures)) for record in records)
        if self._drawn is not None and self._drawn[0] == drawn:
            return self._drawn[1]  # no event (and no failure) since the last settle
        known, self._rows = self._rows, {}
        cells = []
        for record in records:
            cached = known.get(record.seq)
            if cached is None or cached[0] is not record or cached[1] != len(record.failures):
                cached = (record, len(record.failures), event_row_html(record))
            self._rows[record.seq] = cached
            cells.append(cached[2])
        table = f'<div style="{SMALL}">last {len(records)} events</div>' + scrolling(
            f'<table class="wm-events" style="{SMALL}"><tr><th>#</th>'
            '<th style="text-align:left">event</th><th style="text-align:left">detail</th>'
            f"<th>failures</th></tr>{''.join(cells)}</table>"
        )
        self._drawn = (drawn, table)
        return table


__all__ = [
    "OverviewTab",
    "BudgetTab",
    "CacheTab",
    "RequestTab",
    "RepliesTab",
    "EventLogTab",
    "UNDRAWN",
    "REPLIES_WINDOW",
]
