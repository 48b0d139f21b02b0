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
        """``template`` with its placeholders filled at ``now``.

        ``{first_name}``: the name stripped, "friend" when missing or blank; ``{user_context}``: a
        newline and the portrait, or nothing; ``{relative time since account creation}``:
        :func:`~wm_kernel.utils.timefmt.relationship_duration` ("some time" without a creation date);
        ``{model_id}``, ``{model_name}`` as given. Unlike the original, which replaces one
        placeholder after the other (so a name containing ``{user_context}`` would pull the
        portrait in), this fills them in one pass: a value that itself contains a placeholder is
        inserted literally, never expanded again (docs/deviations.md).
        """
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
