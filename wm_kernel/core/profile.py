"""Profile: who the assistant talks to, and which model it is. Fills the base prompt's placeholders.

Examples
--------
>>> Profile(first_name="Ada", timezone="Europe/London").zone.key
'Europe/London'
>>> Profile(timezone="EST").zone.key          # the original's alias, not the fixed UTC-5 zone
'America/New_York'
>>> Profile(timezone="Mars/Olympus")
Traceback (most recent call last):
...
ValueError: unknown time zone 'Mars/Olympus' (use an IANA name such as 'Europe/London' or 'UTC')
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wm_kernel.core.clock import parse_instant

#: The abbreviations the original accepts as a user's time zone, and the zone each one means. They
#: take precedence over the tz database's own zones of the same name: "EST" there is a fixed UTC-5
#: zone, which would print the time an hour off all summer for a user the original places in New
#: York.
ZONE_ALIASES: dict[str, str] = {
    "EST": "America/New_York",
    "EDT": "America/New_York",
    "CST": "America/Chicago",
    "CDT": "America/Chicago",
    "MST": "America/Denver",
    "MDT": "America/Denver",
    "PST": "America/Los_Angeles",
    "PDT": "America/Los_Angeles",
    "GMT": "Etc/GMT",
    "UTC": "UTC",
}


def resolve_zone(name: str) -> ZoneInfo:
    """A ZoneInfo for an IANA name or one of the original's :data:`ZONE_ALIASES` (exact case, as the
    original matches them); ValueError (one line) for anything else."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"time zone must be a non-empty IANA name, got {name!r}")
    try:
        return ZoneInfo(ZONE_ALIASES.get(name, name))
    except (ZoneInfoNotFoundError, ValueError, IsADirectoryError, OSError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as 'Europe/London' or 'UTC')") from None


@dataclass(frozen=True)
class Profile:
    """The user and model facts the base prompt's placeholders draw on.

    ``first_name`` fills ``{first_name}``, stripped (default "friend", also for a blank name);
    ``user_context`` (the user portrait) fills ``{user_context}`` prefixed by a newline; ``account_created`` gives
    ``{relative time since account creation}`` (default "some time"); ``model_id`` and ``model_name``
    fill theirs. ``timezone`` is the user's IANA zone (or one of the original's aliases, such as
    "EST" for America/New_York), checked here so a bad one fails at once.
    """

    first_name: str | None = None
    timezone: str = "UTC"
    user_context: str = ""
    account_created: datetime | str | None = None
    model_id: str = ""
    model_name: str = ""
    zone: ZoneInfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "zone", resolve_zone(self.timezone))
        for name in ("user_context", "model_id", "model_name"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Profile.{name} must be a str, got {type(getattr(self, name)).__name__}")
        if self.first_name is not None and not isinstance(self.first_name, str):
            raise TypeError(f"Profile.first_name must be a str, got {type(self.first_name).__name__}")
        if self.account_created is not None:
            object.__setattr__(self, "account_created", parse_instant(self.account_created))

    def replace(self, **changes: object) -> Profile:
        """A copy with some fields changed (validated like a new one)."""
        # replace() rejects unknown names and __post_init__ checks the values
        return replace(self, **changes)  # type: ignore[arg-type]
