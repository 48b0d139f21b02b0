"""ManifestTrinket: the conversation's segments by local date (section ``conversation_manifest``).

Segments live in the WorkingMemory's state store, in the hash ``manifest:{user_id}`` (field
``segments``: the collapsed segments as ``{"title", "start", "end"}``; field ``active``: the current
segment as ``{"title", "start"}``), so a Session on a SQLite file keeps its history across a restart.
A :class:`~wm_kernel.session.Session` feeds it by itself: when it starts it marks the first segment
active, and on every :meth:`~wm_kernel.session.Session.collapse_segment` it records the segment that
ended (titled by the first line of the summary, or "Segment N" without one) and marks the next one
active. From Python: :meth:`ManifestTrinket.add_segment`, :meth:`~ManifestTrinket.set_active`,
:meth:`~ManifestTrinket.clear_active`, and :meth:`~ManifestTrinket.segments` to list them.

Rendering, as the original: ``<conversation_manifest>``, one ``<date_group>`` per local date of the
segments' starts (profile time zone), newest date first, labelled ``TODAY``, ``YESTERDAY`` or like
``NOV 28`` (zero-padded day, plus the year when it is not this year: ``DEC 28, 2025``); inside a group
the segments in chronological order, each ``<segment time="[9:00AM - 10:15AM]"
status="collapsed">title</segment>``; the active one ``time="[2:15PM - ACTIVE]" status="active"``.
Titles are escaped (:mod:`wm_kernel.markup`). No segments: no section. Only the
``max_date_groups`` most recent local dates are shown (default 7; 0 shows all): the store keeps every
segment, but a long-lived conversation does not grow the prompt without bound.

Examples
--------
>>> from wm_kernel.clock import ManualClock
>>> from wm_kernel.profile import Profile
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
"""
from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from traitlets import Int

from trinkets.base import EventAwareTrinket, feed
from wm_kernel.checks import check_str
from wm_kernel.clock import parse_instant
from wm_kernel.markup import escape_attr, escape_text
from wm_kernel.timefmt import format_clock_time

#: The text of the active segment when none is given.
ACTIVE_TITLE = "Current conversation"

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


def date_label(day: date, today: date) -> str:
    """TODAY, YESTERDAY, or the date in capitals ("NOV 28"; "DEC 28, 2025" in another year)."""
    if day == today:
        return "TODAY"
    if day == today - timedelta(days=1):
        return "YESTERDAY"
    label = f"{_MONTHS[day.month - 1]} {day.day:02d}"
    return label if day.year == today.year else f"{label}, {day.year}"


def _clock(moment: datetime) -> str:
    return format_clock_time(moment).replace(" ", "")  # the original writes "9:00AM"


class ManifestTrinket(EventAwareTrinket):
    """Collapsed segments and the active one, grouped by the user's local date."""

    variable_name = "conversation_manifest"
    default_priority = 20  # token budgets: see docs/budgets.md
    cache_policy = False

    max_date_groups = Int(7, min=0, help="How many of the most recent local dates are shown (0: all). "
                                         "Older segments stay in the store.")

    @property
    def store_key(self) -> str:
        """The store hash of this user's manifest."""
        return f"manifest:{self.working_memory.user_id}"

    # -- feeding
    @feed
    def add_segment(self, title: str, start: "datetime | str", end: "datetime | str") -> None:
        """Record a collapsed segment (times: aware datetimes or ISO strings; end not before start)."""
        self._add(title, start, end)

    @feed
    def set_active(self, start: "datetime | str", title: str = ACTIVE_TITLE) -> None:
        """Mark the segment that started at ``start`` as the active one (replacing any other)."""
        self._set_active(start, title)

    @feed
    def clear_active(self) -> None:
        """Forget the active segment (no-op if there is none)."""
        self.working_memory.store.hdel(self.store_key, "active")

    # -- the Session's hooks; not feed methods: replaying a Session's collapse records it again
    def begin_segment(self, start: datetime) -> None:
        """Mark a segment starting at ``start`` active (the Session calls this when it starts)."""
        with self.lock:
            self._set_active(start, ACTIVE_TITLE)

    def record_collapse(self, summary: str, start: datetime, end: datetime, number: int) -> None:
        """Record the segment that just collapsed and mark the next one, starting at ``end``,
        active (the Session calls this on every collapse)."""
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

    def _set_active(self, start: object, title: object) -> None:
        check_str(title, "title")
        start_at = parse_instant(start, what="start")
        self.working_memory.store.hset(self.store_key, "active",
                                       {"title": title, "start": start_at.isoformat()})

    # -- reading
    def segments(self) -> list[dict[str, Any]]:
        """Every segment, chronological by start: dicts with title, start, end (None for the active
        one) and status ("collapsed" or "active")."""
        data = self.working_memory.store.hgetall(self.store_key)
        rows = [{"title": s["title"], "start": datetime.fromisoformat(s["start"]),
                 "end": datetime.fromisoformat(s["end"]), "status": "collapsed"}
                for s in data.get("segments", [])]
        active = data.get("active")
        if active is not None:
            rows.append({"title": active["title"], "start": datetime.fromisoformat(active["start"]),
                         "end": None, "status": "active"})
        rows.sort(key=lambda r: (r["start"], r["status"] == "active", r["end"] or r["start"]))
        return rows

    # -- rendering
    def generate_content(self, context: dict[str, Any]) -> str:
        rows = self.segments()
        if not rows:
            return ""
        zone: tzinfo = self.working_memory.profile.zone
        today = self.working_memory.clock.now().astimezone(zone).date()
        groups: dict[date, list[str]] = {}
        for row in rows:  # chronological, so each group is too
            start = row["start"].astimezone(zone)
            if row["end"] is None:
                span, status = f"[{_clock(start)} - ACTIVE]", "active"
            else:
                span, status = f"[{_clock(start)} - {_clock(row['end'].astimezone(zone))}]", "collapsed"
            groups.setdefault(start.date(), []).append(
                f'    <segment time="{escape_attr(span)}" status="{status}">'
                f'{escape_text(row["title"])}</segment>')
        days = sorted(groups, reverse=True)
        if self.max_date_groups:
            days = days[:self.max_date_groups]
        lines = ["<conversation_manifest>"]
        for day in days:
            lines.append(f'  <date_group label="{escape_attr(date_label(day, today))}">')
            lines += groups[day]
            lines.append("  </date_group>")
        lines.append("</conversation_manifest>")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ManifestTrinket section={self.variable_name!r} key={self.store_key!r}>"
