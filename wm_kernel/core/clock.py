"""Clocks. Everything in wm-kernel that reads the time reads it from a clock object, so a notebook
or a test using :class:`ManualClock` prints the same prompt every run.

Examples
--------
>>> c = ManualClock("2026-11-30T09:00:00+00:00")
>>> c.advance(hours=2, minutes=5).isoformat()
'2026-11-30T11:05:00+00:00'
>>> c.set("2026-12-01T00:00:00+00:00").day
1
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from traitlets import Bunch, HasTraits, Instance, observe, validate


@runtime_checkable
class Clock(Protocol):
    """Anything with ``now() -> aware datetime``."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real time, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


def parse_instant(value: object, *, what: str = "") -> datetime:
    """An aware datetime from a datetime or an ISO 8601 string; naive values are rejected.

    Any other type is a TypeError, so user input can be passed as it came. ``what`` names the
    argument at the start of the error message (``"due: not an ISO 8601 date-time: 'soon'"``).
    """
    prefix = f"{what}: " if what else ""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{prefix}not an ISO 8601 date-time: {value!r}") from None
    if not isinstance(value, datetime):
        raise TypeError(f"{prefix}expected a datetime or ISO 8601 string, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{prefix}date-time {value.isoformat()} has no time zone; add one, e.g. +00:00")
    return value


class ManualClock(HasTraits):
    """A clock that moves only when told to: ``advance(...)`` or ``set(...)``.

    ``now()`` is how everything reads it (the :class:`Clock` protocol); the time it shows is also
    the observable trait ``current``, so a recorder or a widget observes the clock's moves as it
    would any other state: ``clock.observe(handler, "current")``. (The trait cannot be called
    ``now``: that name is the method every clock has.)

    Parameters
    ----------
    start:
        An aware datetime or an ISO 8601 string with an offset.
    """

    current = Instance(
        datetime,
        help="The time the clock shows (an aware datetime); notifies on every advance() and set() that moves it.",
    )

    def __init__(self, start: datetime | str = "2026-01-01T00:00:00+00:00") -> None:
        super().__init__(current=parse_instant(start))
        self._now: datetime = self.current
        self._lock = threading.Lock()

    @validate("current")
    def _check_current(self, proposal: dict[str, Any]) -> datetime:
        return parse_instant(proposal["value"], what="current")

    @observe("current")
    def _follow_current(self, change: dict[str, Any]) -> None:
        # now() is read on every event: a plain attribute, kept equal to the trait by this
        # observer (the first to hear of a move: observers declared on the class come first)
        self._now = change["new"]

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | None = None, /, **kwargs: float) -> datetime:
        """Move forward by a timedelta or by timedelta keywords (``hours=2``); never backwards.

        A step too large for a datetime (past the year 9999, or ``seconds=1e300``) is a one-line
        ValueError and the clock stays where it was."""
        if delta is not None and kwargs:
            raise TypeError("advance() takes a timedelta or keywords, not both")
        if delta is None:
            try:
                delta = timedelta(**kwargs)
            except TypeError as exc:
                raise TypeError(f"advance(): {exc}") from None
            except OverflowError:
                raise ValueError(
                    f"advance({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) "
                    f"is too far: a step must stay within {timedelta.max.days:,} "
                    f"days; the clock is unchanged"
                ) from None
        if not isinstance(delta, timedelta):
            raise TypeError(f"advance() takes a timedelta, got {type(delta).__name__}")
        if delta < timedelta(0):
            raise ValueError("a ManualClock does not go backwards; use set() to jump")
        with self._lock:
            try:
                moved = self.now() + delta
            except OverflowError:
                raise ValueError(
                    f"advance() by {delta} from {self.now().isoformat()} would pass "
                    f"the year 9999, the last a datetime can hold; the clock is "
                    f"unchanged"
                ) from None
            self.current = moved
        return self.now()

    def set(self, when: datetime | str) -> datetime:
        """Jump to an instant (forwards or backwards)."""
        instant = parse_instant(when)
        with self._lock:
            old = self.now()
            self.current = instant
        if old == instant and old.utcoffset() != instant.utcoffset():
            # the same instant in another offset: traitlets stays silent for equal values, but what
            # the clock shows (and a recording of it) changed
            self.notify_change(Bunch(name="current", old=old, new=instant, owner=self, type="change"))
        return self.now()

    def __repr__(self) -> str:
        return f"ManualClock({self.now().isoformat()!r})"
