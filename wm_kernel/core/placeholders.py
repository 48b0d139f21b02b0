"""The base prompt's placeholders, filled from the user's profile with the original's values.

Examples
--------
>>> from datetime import UTC, datetime
>>> Placeholders().fill("Hi {first_name}", Profile(first_name=" Ada "), datetime.now(UTC))
'Hi Ada'
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from wm_kernel.core.profile import Profile
from wm_kernel.utils.timefmt import relationship_duration

__all__ = ["PLACEHOLDERS", "Placeholders"]

PLACEHOLDERS = ("first_name", "user_context", "relative time since account creation", "model_id", "model_name")
_PLACEHOLDER_RE = re.compile("{(" + "|".join(re.escape(p) for p in PLACEHOLDERS) + ")}")


class Placeholders:
    """Fills templates, keeping the last filling: a compose fills the same base prompt every turn."""

    def __init__(self) -> None:
        self._last: tuple[Any, str] | None = None

    def fill(self, template: str, profile: Profile, now: datetime) -> str:
        """``template`` with its placeholders filled (see ``WorkingMemory.fill_placeholders``)."""
        if profile.account_created is not None:
            # Profile.__post_init__ has parsed a str into a datetime
            age = relationship_duration(profile.account_created, now)  # type: ignore[arg-type]
        else:
            age = "some time"
        key = (template, profile, age)
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        values = {
            "first_name": (profile.first_name or "").strip() or "friend",
            "user_context": f"\n{profile.user_context}" if profile.user_context else "",
            "relative time since account creation": age,
            "model_id": profile.model_id,
            "model_name": profile.model_name,
        }
        filled = _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template)
        self._last = (key, filled)
        return filled
