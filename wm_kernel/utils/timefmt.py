"""Human wording of times, as the original words them (:func:`zone_abbreviation` excepted: it spells
out a zone's offset where tzdata has no letter abbreviation; :func:`zone_name` is the
original's).

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
>>> relationship_duration(now - timedelta(days=75), now)
'two and a half months (09-16-2026)'
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
    """ "just now", "N unit(s) ago" for the past, "in N unit(s)" for the future."""
    wording = elapsed_wording(then, now)
    if wording == "just now":
        return wording
    return f"in {wording}" if then > now else f"{wording} ago"


def format_clock_time(moment: datetime) -> str:
    """'9:05 AM' style: hour without padding, two-digit minutes, AM/PM (no platform strftime flags)."""
    hour12 = moment.hour % 12 or 12
    return f"{hour12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


def zone_abbreviation(moment: datetime) -> str:
    """The zone's abbreviation at that moment (UTC, GMT, BST, EDT...), or, where it has none, the
    offset spelt out as ``UTC+04:00`` (clearer than the tz database's bare "+04" that the original
    prints, see :func:`zone_name`)."""
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


_NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)


def _number_word(n: int) -> str:
    """The word for 0-12 (the original spells these out), digits above."""
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def _fractional_count(count: float, unit: str) -> str:
    """A count of units in the original's words, by its fractional part: under .2 "about N unit(s)"
    ("about a week" for one), .2 to .4 "N and change units", .4 to .7 "N and a half units", from
    .7 rounded up to "about N+1 units"."""
    whole = int(count)
    fraction = count - whole
    if fraction >= 0.7:
        whole, fraction = whole + 1, 0.0
    if fraction < 0.2:
        if whole == 1:
            return f"about a {unit}"
        return f"about {_number_word(whole)} {unit}s"
    middle = "and change" if fraction < 0.4 else "and a half"
    return f"{_number_word(whole)} {middle} {unit}s"


def relationship_duration(created: datetime, now: datetime) -> str:
    """How long the account has existed, as the original words ``{relative time since account
    creation}``: whole days elapsed (never negative) as "a short time" (under a day), "about a day",
    "about N days" (under a week), then weeks (under 30 days), months of 30.44 days (under 365
    days), years of 365.25 days, each by :func:`_fractional_count`; followed by the creation date
    as ``(MM-DD-YYYY)`` in ``created``'s own offset.

    >>> from datetime import timedelta, timezone
    >>> now = datetime(2026, 11, 30, 14, 0, tzinfo=timezone.utc)
    >>> relationship_duration(now - timedelta(hours=5), now)
    'a short time (11-30-2026)'
    >>> [relationship_duration(now - timedelta(days=n), now) for n in (1, 8, 10)]
    ['about a day (11-29-2026)', 'about a week (11-22-2026)', 'one and a half weeks (11-20-2026)']
    >>> relationship_duration(now - timedelta(days=1220), now)
    'three and change years (07-29-2023)'
    """
    days = max((now - created).days, 0)
    stamp = f"({created.month:02d}-{created.day:02d}-{created.year:04d})"
    if days < 1:
        wording = "a short time"
    elif days < 7:
        wording = "about a day" if days == 1 else f"about {_number_word(days)} days"
    elif days < 30:
        wording = _fractional_count(days / 7.0, "week")
    elif days < 365:
        wording = _fractional_count(days / 30.44, "month")
    else:
        wording = _fractional_count(days / 365.25, "year")
    return f"{wording} {stamp}"


def zone_name(moment: datetime) -> str:
    """The zone name the original prints (``strftime("%Z")``): the abbreviation where the zone has
    one (UTC, GMT, BST, EDT), else what the tz database writes instead, the bare offset ("+04",
    "+0545"); "" for a naive datetime."""
    return moment.tzname() or ""


def local(moment: datetime, zone: tzinfo) -> datetime:
    """``moment`` converted to ``zone``."""
    return moment.astimezone(zone)
