"""ManifestTrinket: the conversation's segments by local date (section ``conversation_manifest``).

Segments live in the WorkingMemory's state store, in the hash ``manifest:{user_id}`` (field
``segments``: the collapsed segments as ``{"title", "start", "end"}``; field ``active``: the current
segment as ``{"title", "start"}``), so a Session on a SQLite file keeps its history across a restart.
A :class:`~wm_kernel.session.Session` marks the first segment active when it starts, and on every
SegmentCollapsedEvent (:meth:`~wm_kernel.session.Session.collapse_segment` publishes one) the
trinket records the segment that ended (titled by the first line of the summary, or "Segment N"
without one) and marks the next one active. From Python: :meth:`ManifestTrinket.add_segment`,
:meth:`~ManifestTrinket.set_active`, :meth:`~ManifestTrinket.clear_active`, and
:meth:`~ManifestTrinket.segments` to list them.

Rendering, style ``"original"`` (the default), as the original: ``<conversation_manifest>``, one
``<date_group>`` per local date of the segments' starts (profile time zone), newest date first,
labelled ``TODAY``, ``YESTERDAY`` or like ``NOV 28`` (zero-padded day); inside a group the
segments in chronological order, each ``<segment time="[9:00AM - 10:15AM]"
status="collapsed">title</segment>``; the active one ``time="[2:15PM - ACTIVE]" status="active"``;
every element on its own line, unindented. No segments: no section. Every date group is shown;
``max_date_groups`` (default 0: no cap) keeps only that many of the most recent dates, for a user
who wants a long-lived conversation not to grow the prompt without bound.

Two things differ from the original, both because it is wrong or unsafe there
(docs/deviations.md): titles are escaped (:mod:`wm_kernel.utils.markup`); and a date not in the current
year carries its year (``DEC 28, 2025``): the original writes ``DEC 28`` for it, which reads as
this year's, and merges two such dates of different years into one group. Style ``"revised"``
also indents the markup by nesting level.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.core.profile import Profile
>>> from wm_kernel.session import Session
>>> clock = ManualClock("2026-11-30T14:00:00+00:00")            # 9:00 AM in New York
>>> s = Session(profile=Profile(timezone="America/New_York"), clock=clock,
...             trinkets=[ManifestTrinket])
>>> manifest = s.trinket("ManifestTrinket")
>>> manifest.add_segment("Trip planning", "2026-11-28T15:00:00+00:00", "2026-11-28T16:30:00+00:00")
>>> _ = clock.advance(hours=1, minutes=15)
>>> s.collapse_segment("Morning review\\nWent through the week's notes.")
>>> print(manifest.content)
<conversation_manifest>
<date_group label="TODAY">
<segment time="[9:00AM - 10:15AM]" status="collapsed">Morning review</segment>
<segment time="[10:15AM - ACTIVE]" status="active">Current conversation</segment>
</date_group>
<date_group label="NOV 28">
<segment time="[10:00AM - 11:30AM]" status="collapsed">Trip planning</segment>
</date_group>
</conversation_manifest>
>>> manifest.style = "revised"
>>> print(s.compose().section("conversation_manifest").content)
<conversation_manifest>
  <date_group label="TODAY">
    <segment time="[9:00AM - 10:15AM]" status="collapsed">Morning review</segment>
    <segment time="[10:15AM - ACTIVE]" status="active">Current conversation</segment>
  </date_group>
  <date_group label="NOV 28">
    <segment time="[10:00AM - 11:30AM]" status="collapsed">Trip planning</segment>
  </date_group>
</conversation_manifest>
"""

from __future__ import annotations

from collections.abc import Hashable
from datetime import date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from traitlets import Int

from trinkets.base import EventAwareTrinket, TrinketHost, feed
from wm_kernel.core.clock import parse_instant
from wm_kernel.core.events import SegmentCollapsedEvent
from wm_kernel.stores import keys
from wm_kernel.utils.checks import check_str
from wm_kernel.utils.markup import escape_attr, escape_text
from wm_kernel.utils.timefmt import format_clock_time

#: The text of the active segment when none is given.
ACTIVE_TITLE = "Current conversation"

if TYPE_CHECKING:
    from wm_kernel.core.bus import EventBus

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")


def segment_title(summary: str, number: int) -> str:
    """A manifest title from a collapse summary: its first non-blank line, stripped, or
    ``"Segment N"`` when the summary is blank.

    >>> segment_title("  Planning chat\\nDetails follow.", 3), segment_title("  ", 3)
    ('Planning chat', 'Segment 3')
    """
    for line in summary.splitlines():
        if line.strip():
            return line.strip()
    return f"Segment {number}"


def date_label(day: date, today: date, with_year: bool = False) -> str:
    """TODAY, YESTERDAY, or the date in capitals ("NOV 28"); with ``with_year``, a date not in
    ``today``'s year carries it ("DEC 28, 2025").

    >>> today = date(2027, 1, 3)
    >>> [date_label(d, today) for d in (today, date(2027, 1, 2), date(2026, 12, 5))]
    ['TODAY', 'YESTERDAY', 'DEC 05']
    >>> date_label(date(2026, 12, 5), today, with_year=True)
    'DEC 05, 2026'
    """
    if day == today:
        return "TODAY"
    if day == today - timedelta(days=1):
        return "YESTERDAY"
    label = f"{_MONTHS[day.month - 1]} {day.day:02d}"
    return f"{label}, {day.year}" if with_year and day.year != today.year else label


def date_labels(days: list[date], today: date) -> dict[date, str]:
    """The label of each date shown: every date not in ``today``'s year carries it, so no two
    dates share a label (the original writes no year: a deviation, docs/deviations.md).

    >>> today = date(2027, 1, 3)
    >>> list(date_labels([date(2026, 12, 28), date(2025, 12, 28), date(2027, 1, 1)], today).values())
    ['DEC 28, 2026', 'DEC 28, 2025', 'JAN 01']
    """
    return {day: date_label(day, today, with_year=True) for day in days}


def _clock(moment: datetime) -> str:
    return format_clock_time(moment).replace(" ", "")  # the original writes "9:00AM"


class ManifestTrinket(EventAwareTrinket):
    """Collapsed segments and the active one, grouped by the user's local date."""

    variable_name = "conversation_manifest"
    default_priority = 20  # token budgets: see docs/budgets.md
    reuse_content = True  # its inputs: traits, feeds, own store writes, profile, clock
    time_dependent = True
    cache_policy = False
    styles = ("original", "revised")

    max_date_groups = Int(
        0,
        min=0,
        help="How many of the most recent local dates are shown (0, the "
        "default: all, as the original). Older segments stay in "
        "the store.",
    )

    def __init__(self, event_bus: EventBus, working_memory: TrinketHost, **kwargs: Any) -> None:
        # the segments as parsed rows, read from the store once and dropped by this trinket's own
        # writes; and the rendered date groups for the (rows, zone, indentation) they came from.
        # A compose then costs what it shows, not what was ever stored.
        self._rows: list[dict[str, Any]] | None = None
        self._version = 0  # of the rows: +1 on every read from the store
        self._store_version: Hashable | None = None  # the store's version of the key, when read
        self._rendered: tuple[tuple[Any, ...], list[date], dict[date, str]] | None = None
        super().__init__(event_bus, working_memory, **kwargs)
        # collapses come from the event, whoever publishes it (a Session, a notebook, a replay)
        event_bus.subscribe(SegmentCollapsedEvent, self._on_segment_collapsed)

    def detach(self) -> None:
        self.event_bus.unsubscribe(SegmentCollapsedEvent, self._on_segment_collapsed)

    def _on_segment_collapsed(self, event: SegmentCollapsedEvent) -> None:
        # the segment that ended started when it was marked active; a Session's segment ids end
        # in "-segment-N", the number a blank summary's title uses
        active = [row for row in self._segment_rows() if row["status"] == "active"]
        start = active[-1]["start"] if active else event.occurred_at
        number = event.segment_id.rpartition("-segment-")[2]
        if not number.isdigit():  # published by someone else: count the segments instead
            number = str(sum(row["status"] == "collapsed" for row in self.segments()) + 1)
        self.record_collapse(event.summary, start, event.occurred_at, int(number))

    @property
    def store_key(self) -> str:
        """The store hash of this user's manifest."""
        return keys.manifest(self.working_memory.user_id)

    def stored_inputs(self) -> tuple[str, ...]:
        return (self.store_key,)

    # -- feeding
    @feed
    def add_segment(self, title: str, start: datetime | str, end: datetime | str) -> None:
        """Record a collapsed segment (times: aware datetimes or ISO strings; end not before start)."""
        self._add(title, start, end)

    @feed
    def set_active(self, start: datetime | str, title: str = ACTIVE_TITLE) -> None:
        """Mark the segment that started at ``start`` as the active one (replacing any other)."""
        self._set_active(start, title)

    @feed
    def clear_active(self) -> None:
        """Forget the active segment (no-op if there is none)."""
        self.working_memory.store.hdel(self.store_key, "active")
        self._written()

    # -- the lifecycle; not feed methods: replaying a Session's collapse records it again
    def begin_segment(self, start: datetime) -> None:
        """Mark a segment starting at ``start`` active (a Session calls this when it starts)."""
        with self.lock:
            self._set_active(start, ACTIVE_TITLE)

    def record_collapse(self, summary: str, start: datetime, end: datetime, number: int) -> None:
        """Record the segment that just collapsed and mark the next one, starting at ``end``,
        active (on every SegmentCollapsedEvent)."""
        with self.lock, self.working_memory.store.transaction():
            self._add(segment_title(summary, number), start, end)
            self._set_active(end, ACTIVE_TITLE)

    def _add(self, title: object, start: object, end: object) -> None:
        check_str(title, "title")
        start_at, end_at = parse_instant(start, what="start"), parse_instant(end, what="end")
        if end_at < start_at:
            raise ValueError(f"end {end_at.isoformat()} is before start {start_at.isoformat()}")
        store = self.working_memory.store
        with store.transaction():
            stored = store.hget(self.store_key, "segments") or []
            stored.append({"title": title, "start": start_at.isoformat(), "end": end_at.isoformat()})
            store.hset(self.store_key, "segments", stored)
        self._written()

    def _set_active(self, start: object, title: object) -> None:
        check_str(title, "title")
        start_at = parse_instant(start, what="start")
        self.working_memory.store.hset(self.store_key, "active", {"title": title, "start": start_at.isoformat()})
        self._written()

    def _written(self) -> None:
        """This trinket wrote its segments: read them again when next needed."""
        self._rows = None
        self._inputs_changed()

    # -- reading
    def segments(self) -> list[dict[str, Any]]:
        """Every segment, chronological by start: dicts with title, start, end (None for the active
        one) and status ("collapsed" or "active")."""
        return [dict(row) for row in self._segment_rows()]

    def _segment_rows(self) -> list[dict[str, Any]]:
        """The parsed rows, chronological (shared: callers do not change them). Read again when
        the store's version of the key moved (a write, this trinket's or anyone's), and on every
        call from a store that cannot tell (a Valkey server: the original re-reads too)."""
        store = self.working_memory.store
        version = store.version(self.store_key)
        if self._rows is not None and version is not None and version == self._store_version:
            return self._rows
        data = store.hgetall(self.store_key)
        rows = [
            {
                "title": s["title"],
                "start": datetime.fromisoformat(s["start"]),
                "end": datetime.fromisoformat(s["end"]),
                "status": "collapsed",
            }
            for s in data.get("segments", [])
        ]
        active = data.get("active")
        if active is not None:
            rows.append(
                {
                    "title": active["title"],
                    "start": datetime.fromisoformat(active["start"]),
                    "end": None,
                    "status": "active",
                }
            )
        rows.sort(key=lambda r: (r["start"], r["status"] == "active", r["end"] or r["start"]))
        self._rows, self._store_version = rows, version
        self._version += 1
        return rows

    # -- rendering
    def generate_content(self, context: dict[str, Any]) -> str:
        rows = self._segment_rows()
        if not rows:
            return ""
        zone: tzinfo = self.working_memory.profile.zone
        today = self.working_memory.clock.now().astimezone(zone).date()
        indent = "  " if self.style == "revised" else ""  # the original writes no indentation
        days, groups = self._groups(rows, zone, indent)
        if self.max_date_groups:
            days = days[: self.max_date_groups]
        labels = date_labels(days, today)
        lines = ["<conversation_manifest>"]
        for day in days:
            lines.append(f'{indent}<date_group label="{escape_attr(labels[day])}">')
            lines.append(groups[day])
            lines.append(f"{indent}</date_group>")
        lines.append("</conversation_manifest>")
        return "\n".join(lines)

    def _groups(self, rows: list[dict[str, Any]], zone: tzinfo, indent: str) -> tuple[list[date], dict[date, str]]:
        """The local dates, newest first, and each date's rendered segments (its lines joined);
        rendered once per (rows, zone, indentation): only the labels depend on the day."""
        key = (self._version, zone, indent)
        cached = self._rendered
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        groups: dict[date, list[str]] = {}
        for row in rows:  # chronological, so each group is too
            start = row["start"].astimezone(zone)
            if row["end"] is None:
                span, status = f"[{_clock(start)} - ACTIVE]", "active"
            else:
                span, status = f"[{_clock(start)} - {_clock(row['end'].astimezone(zone))}]", "collapsed"
            groups.setdefault(start.date(), []).append(
                f'{indent * 2}<segment time="{escape_attr(span)}" status="{status}">'
                f"{escape_text(row['title'])}</segment>"
            )
        joined = {day: "\n".join(lines) for day, lines in groups.items()}
        days = sorted(joined, reverse=True)
        self._rendered = (key, days, joined)
        return days, joined

    def __repr__(self) -> str:
        return f"<ManifestTrinket section={self.variable_name!r} key={self.store_key!r}>"
