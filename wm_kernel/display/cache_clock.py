"""The cache clock: a session's requests against their caches' TTLs, as a picture (SVG in HTML).

What the planner (docs/planner.md) computes in a table, drawn over time: one row (a *lane*) per
conversation with a cache of its own; each request a dot at its send time, coloured by what it
read from the cache (hit, partial, write, miss, as the cache strip colours them), and its TTL
window, from its send time to the moment its cache entry expires, a translucent bar (windows that
overlap darken); where a lane's cache went cold (the TTL ran out before its next request, or the
model changed) a red band or mark; and a numbered line for each context edit: solid where one
ran (a compaction, a segment collapse), dashed where the plan would run it. Idle stretches longer
than :data:`FOLD` where every lane is cold are folded to a short break that says how long they
were, so a session with a night in it stays readable.

The data is plain (:class:`ClockRequest`, :class:`ClockEdit`); :class:`CacheClock` draws it, and
the builders (``wm_kernel.display.plan_view``) make it from an imported log's compaction plan or
from a Session's own plan. Every text is escaped; dollars never read as math.

>>> from datetime import datetime, UTC
>>> t = datetime(2026, 11, 30, 9, tzinfo=UTC)
>>> from datetime import timedelta as td
>>> clock = CacheClock("demo", [ClockRequest(0, t, 300.0, "main", "write"),
...                             ClockRequest(1, t + td(minutes=9), 300.0, "main", "write")])
>>> [(c.lane, c.reason, c.start.strftime("%H:%M")) for c in clock.cold_spans()]
[('main', 'TTL ran out', '09:05')]
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from wm_kernel.utils import style
from wm_kernel.utils.htmltext import no_math

__all__ = ["CacheClock", "ClockRequest", "ClockEdit", "ColdSpan", "FOLD", "MOST_LANES", "MOST_MARKS"]

#: An idle stretch (every lane cold) longer than this is drawn folded, as a break of
#: ``_BREAK`` pixels that says how long it was.
FOLD = timedelta(minutes=30)
#: At most this many lanes are drawn; the others are counted in the caption.
MOST_LANES = 8
#: A lane of more requests than this draws those closer than ``_NEAR`` pixels as one mark.
MOST_MARKS = 160
_NEAR = 4.0
#: Which status a mark of several requests shows: the worst of theirs.
_WORST = {"hit": 0, "partial": 1, "write": 2, "miss": 3}

_STATUS = {"hit": style.SUCCESS, "partial": style.WARN, "write": style.INFO, "miss": style.ERROR}
_WINDOW = style.INFO
_COLD = style.ERROR
_RAN = style.WARN
_PLANNED = style.INFO
_TEXT = "var(--jp-content-font-color1,#000)"
_GRID = style.BORDER
_LABEL_W, _PLOT_W, _HEAD, _LANE, _BREAK = 150, 640, 34, 26, 18
_STEPS = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)


@dataclass(frozen=True)
class ClockRequest:
    """One request: its number (its index in the log or the simulation), send time, the seconds
    its cache entry lives after it (its TTL window), the conversation whose cache it uses
    (``lane``), what it read (``hit``, ``partial``, ``write``, ``miss``), its model and a note
    shown on hover."""

    index: int
    at: datetime
    ttl_s: float
    lane: str
    status: str
    model: str | None = None
    note: str = ""

    @property
    def expires(self) -> datetime:
        return self.at + timedelta(seconds=self.ttl_s)


@dataclass(frozen=True)
class ClockEdit:
    """A context edit at ``at``: ``kind`` (``compaction (auto)``, ``segment collapse``...),
    ``planned`` False where one ran, True where the plan would run it; ``text`` says why."""

    at: datetime
    kind: str
    planned: bool
    text: str


@dataclass(frozen=True)
class ColdSpan:
    """Where a lane's cache was cold: from ``start`` (the TTL ran out) to ``end`` (the next
    request, which wrote it again); a model switch is a span of no length at that request."""

    lane: str
    start: datetime
    end: datetime
    reason: str


def _clock(moment: datetime, seconds: bool = True) -> str:
    return moment.strftime("%H:%M:%S" if seconds else "%H:%M")


def _duration(seconds: float) -> str:
    """``seconds`` as people say it: 45 s, 12 min, 3 h 20 min, 2 days 4 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} days {hours} h" if hours else f"{days} days"


def _groups(axis: _Axis, requests: Sequence[ClockRequest]) -> list[list[ClockRequest]]:
    """``requests`` (in time order) in runs whose marks fall within ``_NEAR`` pixels of the run's first."""
    groups: list[list[ClockRequest]] = []
    start = -math.inf
    for request in requests:
        x = axis.x(request.at)
        if groups and x - start < _NEAR:
            groups[-1].append(request)
        else:
            groups.append([request])
            start = x
    return groups


class _Axis:
    """Time to x: linear, but for the folded idle stretches, each a break of ``_BREAK`` pixels."""

    def __init__(self, start: datetime, end: datetime, folds: Sequence[tuple[datetime, datetime]]) -> None:
        self.start, self.end, self.folds = start, end, list(folds)
        plain = (end - start).total_seconds() - sum((b - a).total_seconds() for a, b in self.folds)
        room = _PLOT_W - _BREAK * len(self.folds)
        self.scale = room / plain if plain > 0 else 0.0

    def x(self, moment: datetime) -> float:
        seconds = (moment - self.start).total_seconds()
        breaks = 0
        for a, b in self.folds:
            if moment >= b:
                seconds -= (b - a).total_seconds()
                breaks += 1
            elif moment > a:  # inside a fold: at its break
                seconds -= (moment - a).total_seconds()
                return _LABEL_W + seconds * self.scale + breaks * _BREAK + _BREAK / 2
        return _LABEL_W + seconds * self.scale + breaks * _BREAK

    def folded(self, moment: datetime) -> bool:
        return any(a < moment < b for a, b in self.folds)


class CacheClock:
    """The cache clock of a session (module docstring): ``requests``, ``edits``, the instant
    ``now`` (marked when given) and ``notes`` (lines below the picture: an edit the plan says
    never to run, what was left out)."""

    def __init__(
        self,
        title: str,
        requests: Sequence[ClockRequest],
        edits: Sequence[ClockEdit] = (),
        *,
        now: datetime | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        self.title = title
        self.requests = sorted(requests, key=lambda r: (r.at, r.index))
        self.edits = sorted(edits, key=lambda e: (e.at, e.planned))
        self.now = now
        self.notes = list(notes)

    @property
    def lanes(self) -> list[str]:
        """The conversations, in the order of their first request."""
        return list(dict.fromkeys(r.lane for r in self.requests))

    def cold_spans(self) -> list[ColdSpan]:
        """Where each lane's cache was cold between two of its requests (its TTL ran out before
        the next one, or the next one changed the model), in time order."""
        spans: list[ColdSpan] = []
        for lane in self.lanes:
            warm_until: datetime | None = None
            model: str | None = None
            for request in (r for r in self.requests if r.lane == lane):
                if warm_until is not None and request.at > warm_until:
                    spans.append(ColdSpan(lane, warm_until, request.at, "TTL ran out"))
                elif warm_until is not None and request.model and model and request.model != model:
                    spans.append(ColdSpan(lane, request.at, request.at, f"model switch: {model} to {request.model}"))
                if request.model:
                    model = request.model
                fresh = warm_until is None or request.at > warm_until
                warm_until = request.expires if fresh or warm_until is None else max(warm_until, request.expires)
        return sorted(spans, key=lambda s: (s.start, s.lane))

    def _folds(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        """The stretches longer than FOLD where no lane is warm and no edit or mark falls."""
        busy = sorted([(r.at, r.expires) for r in self.requests])
        marks = [e.at for e in self.edits] + ([self.now] if self.now is not None else [])
        folds, reach = [], start
        for a, b in busy:
            if a - reach > FOLD and not any(reach < m < a for m in marks):
                margin = FOLD / 6
                folds.append((reach + margin, a - margin))
            reach = max(reach, b)
        return folds

    def span(self) -> tuple[datetime, datetime]:
        """The first and last instant drawn: the requests, their windows, the edits and now."""
        moments = [r.at for r in self.requests] + [r.expires for r in self.requests]
        moments += [e.at for e in self.edits] + ([self.now] if self.now is not None else [])
        return min(moments), max(moments)

    # -- text
    def lines(self) -> list[str]:
        """The picture in words: what a terminal (and nbval) shows."""
        if not self.requests:
            return [f"{self.title}: no request to draw"]
        start, end = self.span()
        counts = ", ".join(f"{lane} {sum(r.lane == lane for r in self.requests)}" for lane in self.lanes)
        out = [
            f"{self.title}: {len(self.requests)} requests from {start:%Y-%m-%d %H:%M:%S} to "
            f"{self.requests[-1].at:%H:%M:%S} UTC ({counts})"
        ]
        for cold in self.cold_spans():
            if cold.start == cold.end:
                out.append(f"  cold at {_clock(cold.start)} ({cold.lane}): {cold.reason}")
            else:
                idle = _duration((cold.end - cold.start).total_seconds())
                out.append(f"  cold {_clock(cold.start)} to {_clock(cold.end)} ({cold.lane}, {idle}): {cold.reason}")
        for number, edit in enumerate(self.edits, 1):
            out.append(f"  {number}. {'plan' if edit.planned else 'ran'} {_clock(edit.at)}: {edit.text}")
        if self.now is not None:
            out.append(f"  now {_clock(self.now)}")
        out += [f"  {note}" for note in self.notes]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"<CacheClock {self.title!r}: {len(self.requests)} requests, {len(self.edits)} edits>"

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(str(self))  # type: ignore[attr-defined]

    # -- picture
    def svg(self) -> str:
        """The picture (an ``<svg>`` element); every text escaped."""
        if not self.requests:
            return f'<div style="font-size:12px"><i>{html.escape(self.title)}: no request to draw</i></div>'
        start, end = self.span()
        axis = _Axis(start, end, self._folds(start, end))
        lanes = self.lanes[:MOST_LANES]
        height = _HEAD + _LANE * len(lanes) + 8
        width = _LABEL_W + _PLOT_W + 12
        parts = [
            f'<svg class="wm-cache-clock" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'style="font-size:11px;font-family:var(--jp-ui-font-family,sans-serif)">',
            self._ticks(axis, height),
        ]
        for a, b in axis.folds:
            x = axis.x(a)
            hover = f"{_duration((b - a).total_seconds())} idle, every cache cold: folded"
            parts.append(
                f'<g class="wm-fold"><title>{html.escape(hover)}</title><rect x="{x:.1f}" y="{_HEAD - 6}" '
                f'width="{_BREAK}" height="{height - _HEAD + 6}" style="fill:{_GRID};opacity:0.5"/>'
                f'<text x="{x + _BREAK / 2:.1f}" y="{_HEAD - 8}" text-anchor="middle" style="fill:{style.MUTED}">'
                "≈</text></g>"
            )
        cold = self.cold_spans()
        for row, lane in enumerate(lanes):
            y = _HEAD + row * _LANE
            label = lane if len(lane) <= 22 else lane[:21] + "…"
            parts.append(
                f'<text x="4" y="{y + 14}" style="fill:{_TEXT}"><title>{html.escape(lane)}</title>'
                f"{html.escape(label)}</text>"
            )
            parts.append(
                f'<line x1="{_LABEL_W}" y1="{y + _LANE - 2}" x2="{_LABEL_W + _PLOT_W}" y2="{y + _LANE - 2}" '
                f'style="stroke:{_GRID};stroke-width:0.5"/>'
            )
            for span in (c for c in cold if c.lane == lane):
                parts.append(self._cold(axis, span, y))
            drawn = [r for r in self.requests if r.lane == lane]
            if len(drawn) <= MOST_MARKS:
                parts += [self._request(axis, request, y) for request in drawn]
            else:
                parts += [self._group(axis, group, y) for group in _groups(axis, drawn)]
        for number, edit in enumerate(self.edits, 1):
            parts.append(self._edit(axis, number, edit, height))
        if self.now is not None:
            x = axis.x(self.now)
            parts.append(
                f'<g class="wm-clock-now"><title>now: {_clock(self.now)}</title><line x1="{x:.1f}" y1="{_HEAD - 4}" '
                f'x2="{x:.1f}" y2="{height}" style="stroke:{_TEXT};stroke-width:1;stroke-dasharray:1 2"/>'
                f'<text x="{x - 3:.1f}" y="{_HEAD - 4}" text-anchor="end" style="fill:{_TEXT}">now</text></g>'
            )
        parts.append("</svg>")
        return "".join(parts)

    def _ticks(self, axis: _Axis, height: int) -> str:
        plain = (axis.end - axis.start).total_seconds() - sum((b - a).total_seconds() for a, b in axis.folds)
        step = next((s for s in _STEPS if plain / s <= 8), _STEPS[-1])
        first = math.ceil(axis.start.timestamp() / step) * step
        out = []
        moment = first
        while moment <= axis.end.timestamp():
            at = datetime.fromtimestamp(moment, tz=axis.start.tzinfo)
            if not axis.folded(at):
                x = axis.x(at)
                out.append(
                    f'<line x1="{x:.1f}" y1="{_HEAD - 4}" x2="{x:.1f}" y2="{height}" '
                    f'style="stroke:{_GRID};stroke-width:0.5"/><text x="{x:.1f}" y="11" text-anchor="middle" '
                    f'style="fill:{style.MUTED}">{_clock(at, step < 60)}</text>'
                )
            moment += step
        return "".join(out)

    @staticmethod
    def _request(axis: _Axis, request: ClockRequest, y: int) -> str:
        x, end = axis.x(request.at), axis.x(request.expires)
        hover = (
            f"request {request.index} at {_clock(request.at)}: {request.status}"
            f"{f', {request.model}' if request.model else ''}; its cache lives until "
            f"{_clock(request.expires)} ({_duration(request.ttl_s)} TTL){f'; {request.note}' if request.note else ''}"
        )
        colour = _STATUS.get(request.status, style.MUTED)
        return (
            f'<g class="wm-clock-request" data-request="{request.index}" data-status="{html.escape(request.status)}">'
            f"<title>{html.escape(hover)}</title>"
            f'<rect class="wm-ttl" x="{x:.1f}" y="{y + 9}" width="{max(end - x, 1):.1f}" height="8" '
            f'style="fill:{_WINDOW};opacity:0.18"/>'
            f'<circle cx="{x:.1f}" cy="{y + 13}" r="3.5" style="fill:{colour}"/></g>'
        )

    @staticmethod
    def _group(axis: _Axis, group: Sequence[ClockRequest], y: int) -> str:
        """Requests too close to tell apart, as one mark: the worst status among them, their
        windows as one bar, what they were on hover."""
        if len(group) == 1:
            return CacheClock._request(axis, group[0], y)
        first, last = group[0], group[-1]
        status = max((r.status for r in group), key=lambda s: _WORST.get(s, len(_WORST)))
        counts = ", ".join(f"{n} {s}" for s in _STATUS if (n := sum(r.status == s for r in group)))
        x, end = axis.x(first.at), axis.x(max(r.expires for r in group))
        hover = (
            f"requests {first.index} to {last.index} ({len(group)}) from {_clock(first.at)} to {_clock(last.at)}: "
            f"{counts}; their cache lives until {_clock(max(r.expires for r in group))}"
        )
        return (
            f'<g class="wm-clock-request" data-requests="{first.index}-{last.index}" '
            f'data-status="{html.escape(status)}">'
            f"<title>{html.escape(hover)}</title>"
            f'<rect class="wm-ttl" x="{x:.1f}" y="{y + 9}" width="{max(end - x, 1):.1f}" height="8" '
            f'style="fill:{_WINDOW};opacity:0.18"/>'
            f'<circle cx="{(x + axis.x(last.at)) / 2:.1f}" cy="{y + 13}" r="3.5" '
            f'style="fill:{_STATUS.get(status, style.MUTED)}"/></g>'
        )

    @staticmethod
    def _cold(axis: _Axis, span: ColdSpan, y: int) -> str:
        x = axis.x(span.start)
        if span.start == span.end:
            hover = f"cold at {_clock(span.start)}: {span.reason}"
            shape = (
                f'<line x1="{x:.1f}" y1="{y + 3}" x2="{x:.1f}" y2="{y + 22}" style="stroke:{_COLD};stroke-width:2"/>'
            )
        else:
            idle = _duration((span.end - span.start).total_seconds())
            hover = f"cold from {_clock(span.start)} to {_clock(span.end)} ({idle}): {span.reason}"
            shape = (
                f'<rect x="{x:.1f}" y="{y + 11}" width="{max(axis.x(span.end) - x, 1):.1f}" height="4" '
                f'style="fill:{_COLD}"/>'
            )
        reason = html.escape(span.reason, quote=True)
        return f'<g class="wm-cold" data-reason="{reason}"><title>{html.escape(hover)}</title>{shape}</g>'

    @staticmethod
    def _edit(axis: _Axis, number: int, edit: ClockEdit, height: int) -> str:
        x = axis.x(edit.at)
        colour = _PLANNED if edit.planned else _RAN
        dash = ";stroke-dasharray:4 3" if edit.planned else ""
        hover = f"{number}. {'plan' if edit.planned else 'ran'} at {_clock(edit.at)}: {edit.text}"
        return (
            f'<g class="wm-clock-edit" data-kind="{html.escape(edit.kind, quote=True)}" '
            f'data-planned="{str(edit.planned).lower()}"><title>{html.escape(hover)}</title>'
            f'<line x1="{x:.1f}" y1="{_HEAD - 14}" x2="{x:.1f}" y2="{height}" '
            f'style="stroke:{colour};stroke-width:2{dash}"/>'
            f'<text x="{x + 3:.1f}" y="{_HEAD - 16}" style="fill:{colour};font-weight:bold">{number}</text></g>'
        )

    def legend(self) -> str:
        """The key and the numbered edits, as HTML lines under the picture."""
        keys = " · ".join(f'<span style="color:{c}">●</span> {s}' for s, c in _STATUS.items())
        rows = [
            f'<div style="color:{style.MUTED}">{keys}; a bar: a request\'s TTL window; '
            f'<span style="color:{_COLD}">▬</span> cold; <span style="color:{_RAN}">│</span> an edit that ran, '
            f'<span style="color:{_PLANNED}">┆</span> where the plan runs one; hover for details</div>'
        ]
        for number, edit in enumerate(self.edits, 1):
            rows.append(
                f"<div>{number}. {'plan' if edit.planned else 'ran'} {_clock(edit.at)}: {html.escape(edit.text)}</div>"
            )
        left_out = len(self.lanes) - MOST_LANES
        if left_out > 0:
            rows.append(f"<div>{left_out} more conversation{'s' if left_out > 1 else ''} not drawn</div>")
        rows += [f"<div>{html.escape(note)}</div>" for note in self.notes]
        return "".join(rows)

    def html(self) -> str:
        """The picture with its title and legend (no math wrapper: :meth:`_repr_html_` adds it)."""
        return (
            f'<div class="wm-cache-clock-view" style="font-size:12px"><div><b>{html.escape(self.title)}</b></div>'
            f'<div style="overflow-x:auto">{self.svg()}</div>{self.legend() if self.requests else ""}</div>'
        )

    def _repr_html_(self) -> str:
        return no_math(self.html())
