"""Human wording of times, as the original words them.

Examples
--------
>>> from datetime import datetime, timedelta, timezone
>>> now = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
>>> relative_time(now - timedelta(seconds=30), now)
'just now'
>>> relative_time(now - timedelta(minutes=1), now), relative_time(now - timedelta(hours=3), now)
('1 minute ago', '3 hours ago')
>>> relative_time(now + timedelta(days=2), now), relative_time(now - timedelta(days=45), now)
('in 2 days', '1 month ago')
>>> elapsed_wording(now - timedelta(days=400), now)
'1 year'
"""
from __future__ import annotations

from datetime import datetime, tzinfo


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def elapsed_wording(then: datetime, now: datetime) -> str:
    """The distance between two instants in the original's units, without direction.

    Under 60 s: "just now"; then minutes, hours, days, weeks (under 30 days), 30-day months, years.
    """
    seconds = abs((now - then).total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return _plural(int(seconds // 60), "minute")
    if seconds < 86400:
        return _plural(int(seconds // 3600), "hour")
    days = int(seconds // 86400)
    if days < 7:
        return _plural(days, "day")
    if days < 30:
        return _plural(days // 7, "week")
    if days < 365:
        return _plural(days // 30, "month")
    return _plural(days // 365, "year")


def relative_time(then: datetime, now: datetime) -> str:
    """"just now", "N unit(s) ago" for the past, "in N unit(s)" for the future."""
    wording = elapsed_wording(then, now)
    if wording == "just now":
        return wording
    return f"in {wording}" if then > now else f"{wording} ago"


def format_clock_time(moment: datetime) -> str:
    """'9:05 AM' style: hour without padding, two-digit minutes, AM/PM (no platform strftime flags)."""
    hour12 = moment.hour % 12 or 12
    return f"{hour12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


def zone_abbreviation(moment: datetime) -> str:
    """The zone's abbreviation at that moment (UTC, GMT, BST, EDT...), or the offset if it has none."""
    name = moment.tzname() or ""
    if name and not name.startswith(("+", "-")):
        return name
    offset = moment.utcoffset()
    if offset is None:
        return "UTC"
    total = int(offset.total_seconds() // 60)
    sign = "+" if total >= 0 else "-"
    total = abs(total)
    return f"UTC{sign}{total // 60:02d}:{total % 60:02d}"


def local(moment: datetime, zone: tzinfo) -> datetime:
    """``moment`` converted to ``zone``."""
    return moment.astimezone(zone)
