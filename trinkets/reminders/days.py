"""The user's local day, as :class:`~trinkets.reminders.ReminderManager` reads it.

A moment on the user's wall clock (:func:`wall_clock`, also past 9999-12-31), the UTC window of the
user's calendar day (:func:`day_window`, 23, 24 or 25 hours long) and where a reminder's due time
falls in it (:func:`due_status`: overdue, today or later, by each style's rule; the trinket's module
docstring gives both).
"""

from __future__ import annotations

from datetime import MAXYEAR, UTC, date, datetime, timedelta, tzinfo
from typing import NamedTuple

from wm_kernel.utils.timefmt import zone_abbreviation

_DAY = timedelta(days=1)


class _Wall(NamedTuple):
    """A moment as the user's wall clock shows it (a datetime cannot hold the year 10000)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    microsecond: int
    zone: str

    @property
    def date(self) -> tuple[int, int, int]:
        return (self.year, self.month, self.day)


def wall_clock(moment: datetime, zone: tzinfo) -> _Wall:
    """``moment`` on the wall clock of ``zone``, also where that falls past 9999-12-31.

    Only an instant in the last hours of 9999-12-31 UTC, seen from a zone east of UTC, is local
    10000-01-01: its clock is read a day earlier and the date put right (no zone changes its offset
    on the last day of 9999).
    """
    try:
        local = moment.astimezone(zone)
    except OverflowError:
        if moment.year != MAXYEAR:  # the first hours of year 1, west of UTC: not supported
            raise
        earlier = (moment - _DAY).astimezone(zone)
        return _Wall(
            MAXYEAR + 1,
            1,
            1,
            earlier.hour,
            earlier.minute,
            earlier.second,
            earlier.microsecond,
            zone_abbreviation(earlier),
        )
    return _Wall(
        local.year,
        local.month,
        local.day,
        local.hour,
        local.minute,
        local.second,
        local.microsecond,
        zone_abbreviation(local),
    )


def _day_start(now: datetime, zone: tzinfo) -> datetime:
    """The UTC instant the user's current local date began (its local midnight)."""
    wall = wall_clock(now, zone)
    try:
        return datetime(*wall.date, tzinfo=zone).astimezone(UTC)
    except ValueError:  # local date 10000-01-01
        return now - timedelta(hours=wall.hour, minutes=wall.minute, seconds=wall.second, microseconds=wall.microsecond)


def _later(moment: datetime, delta: timedelta) -> datetime | None:
    """``moment + delta``, or None when that is past the last instant a datetime holds."""
    try:
        return moment + delta
    except OverflowError:
        return None


def day_window(now: datetime, zone: tzinfo) -> tuple[datetime, datetime | None]:
    """(start, end) of "today" in UTC, end exclusive; end None: today lasts past year 9999."""
    # both styles: the user's calendar day, however long (the original's fixed 24 hours drops the
    # last hour of a 25-hour day and takes in the first of tomorrow on a 23-hour one: a deviation)
    start = _day_start(now, zone)
    wall = wall_clock(now, zone)
    try:
        tomorrow = date(*wall.date) + _DAY
        return start, datetime(tomorrow.year, tomorrow.month, tomorrow.day, tzinfo=zone).astimezone(UTC)
    except (ValueError, OverflowError):  # tomorrow is 10000-01-01 or later: no offset changes then
        return start, _later(start, timedelta(hours=24))


def due_status(due: datetime, now: datetime, window: tuple[datetime, datetime | None], style: str) -> str:
    """ "overdue", "today" or "later": where ``due`` falls in today's ``window`` (from :func:`day_window`)
    as of ``now``, by ``style``'s rule (the revised style counts a reminder due by now as overdue)."""
    start, end = window
    if due < start or (style == "revised" and due <= now):
        return "overdue"
    return "today" if end is None or due < end else "later"
