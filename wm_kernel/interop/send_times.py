"""When each request of an imported log was sent: the log's own times, times the user gives, or
times assumed at a spacing the user sets (a log of bare request bodies has none)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

#: Where assumed send times start when the log has none at all.
ASSUMED_START = datetime(2026, 1, 1, tzinfo=UTC)
#: The spacing assumed when the log has no send times and none is given: an agent's next call
#: follows within seconds, well inside every provider's shortest cache TTL (5 minutes)
DEFAULT_GAP = timedelta(seconds=30)


def as_gap(gap: timedelta | float | int | None) -> timedelta | None:
    """``gap`` (a timedelta, or seconds) as a timedelta; None stays None. ValueError if negative."""
    if gap is None:
        return None
    if isinstance(gap, bool) or not isinstance(gap, (timedelta, int, float)):
        raise TypeError(f"gap must be a timedelta or a number of seconds, got {type(gap).__name__}")
    value = gap if isinstance(gap, timedelta) else timedelta(seconds=float(gap))
    if value < timedelta(0) or value != value:  # NaN compares unequal to itself
        raise ValueError(f"gap must not be negative, got {gap!r}")
    return value


def checked_times(times: Sequence[datetime], count: int) -> list[datetime]:
    """``times`` as a list, one datetime per request of ``count``; else a clear error."""
    when = list(times)
    if len(when) != count:
        raise ValueError(f"times has {len(when)} entries for {count} turns")
    for index, at in enumerate(when):
        if not isinstance(at, datetime):
            raise TypeError(f"times[{index}] must be a datetime, got {type(at).__name__}")
    return when


def send_times(
    logged: Sequence[datetime | None],
    *,
    times: Sequence[datetime] | None = None,
    gap: timedelta | float | None = None,
    default: timedelta | None = None,
) -> tuple[list[datetime], str]:
    """Each request's send time and, when any was assumed, a line saying so ("" when the log
    gave them all). ``logged`` holds the log's times (None where it has none); ``times`` (one per
    request) replaces them; ``gap`` (a timedelta or seconds; else ``default``) spaces the requests
    the log gives no time, in file order after the last known one. Without either, they are
    :data:`DEFAULT_GAP` apart, and the line says so and how to set them."""
    if times is not None:
        return checked_times(times, len(logged)), "send times given (times=), not the log's"
    missing = sum(at is None for at in logged)
    if not missing:
        return [at for at in logged if at is not None], ""
    spacing = as_gap(gap) if gap is not None else default
    chosen = spacing is not None
    if spacing is None:
        spacing = DEFAULT_GAP
    out: list[datetime] = []
    previous: datetime | None = None
    for at in logged:
        if at is None:
            at = previous + spacing if previous is not None else ASSUMED_START
        out.append(at)
        previous = at
    seconds = spacing.total_seconds()
    which = "the log has none" if missing == len(logged) else f"{missing} of {len(logged)} requests have none"
    if chosen:
        return out, f"send times assumed: {which}; requests in file order {seconds:g} s apart (gap=)"
    return out, (
        f"send times assumed: {which}; requests in file order {seconds:g} s apart, the default "
        "(pass gap= or times= to set them)"
    )
