"""TimeManager: the current date and time, in the user's time zone, for the notification centre.

It publishes ``datetime_section`` on every compose, read from the WorkingMemory's clock and shown in
the profile's zone (``Profile(timezone=...)``, checked when the profile is made, so a bad zone never
reaches compose time). Nothing is stored: the section is always fresh and never cached.

Names of days and months come from English tables in this module, not from ``strftime`` (whose
``%A``/``%B`` follow the process locale and whose unpadded-hour flags differ between platforms).

Styles: ``"original"`` (the default) prints the zone as the original does, ``strftime("%Z")``:
the abbreviation where the zone has one, else the tz database's bare offset (``+04`` for
Asia/Dubai, ``+0545`` for Asia/Kathmandu). ``"revised"`` spells such an offset out as
``UTC+04:00`` / ``UTC+05:45`` so it cannot be misread as a time; zones with a letter abbreviation
print the same in both.

Examples
--------
>>> from wm_kernel.core.bus import EventBus
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.core.working_memory import WorkingMemory
>>> from wm_kernel.core.profile import Profile
>>> clock = ManualClock("2026-07-04T13:05:00+00:00")
>>> wm = WorkingMemory(EventBus(), clock=clock, profile=Profile(timezone="Europe/London"))
>>> tm = TimeManager(wm.bus, wm)
>>> print(tm.generate_content({}))
<current_datetime>TODAY IS SATURDAY, JULY 04, 2026 AT 2:05 PM BST.</current_datetime>
>>> _ = clock.set("2026-11-30T09:05:00+00:00"); _ = wm.compose("Hi")
>>> tm.content
'<current_datetime>TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:05 AM GMT.</current_datetime>'
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trinkets.base import EventAwareTrinket
from wm_kernel.utils.timefmt import format_clock_time, local, zone_abbreviation, zone_name

DAY_NAMES = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")
MONTH_NAMES = (
    "JANUARY",
    "FEBRUARY",
    "MARCH",
    "APRIL",
    "MAY",
    "JUNE",
    "JULY",
    "AUGUST",
    "SEPTEMBER",
    "OCTOBER",
    "NOVEMBER",
    "DECEMBER",
)


def format_datetime_line(moment: datetime, style: str = "original") -> str:
    """The original's sentence for an aware, already-localised instant (the zone written as
    ``style`` says, see the module docstring).

    >>> from datetime import timedelta, timezone
    >>> format_datetime_line(datetime(2026, 1, 5, 0, 0, tzinfo=timezone.utc))
    'TODAY IS MONDAY, JANUARY 05, 2026 AT 12:00 AM UTC.'
    >>> plus4 = datetime(2026, 1, 5, 18, 0, tzinfo=timezone(timedelta(hours=4), "+04"))
    >>> format_datetime_line(plus4), format_datetime_line(plus4, "revised")[-13:]
    ('TODAY IS MONDAY, JANUARY 05, 2026 AT 6:00 PM +04.', 'PM UTC+04:00.')
    """
    zone = zone_abbreviation(moment) if style == "revised" else zone_name(moment)
    return (
        f"TODAY IS {DAY_NAMES[moment.weekday()]}, {MONTH_NAMES[moment.month - 1]} "
        f"{moment.day:02d}, {moment.year:04d} AT {format_clock_time(moment)} {zone}."
    )


class TimeManager(EventAwareTrinket):
    """Publishes ``<current_datetime>TODAY IS ...</current_datetime>`` (section ``datetime_section``).

    Stateless: every compose reads ``working_memory.clock`` and ``working_memory.profile.zone``, so
    changing the session's profile or moving a ManualClock shows at the next compose.
    """

    variable_name = "datetime_section"
    default_priority = 100  # token budgets: see docs/budgets.md
    reuse_content = True  # its inputs: traits, feeds, own store writes, profile, clock
    time_dependent = True
    cache_policy = False
    styles = ("original", "revised")

    def now(self) -> datetime:
        """The current instant in the profile's time zone."""
        wm = self.working_memory
        return local(wm.clock.now(), wm.profile.zone)

    def generate_content(self, context: dict[str, Any]) -> str:
        line = format_datetime_line(self.now(), self.style)
        return f"<current_datetime>{line}</current_datetime>"
