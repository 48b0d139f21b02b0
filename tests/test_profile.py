"""Profile: validated when made."""
from __future__ import annotations

import pytest

from wm_kernel.profile import Profile


def test_unknown_zone_fails_when_the_profile_is_made():
    with pytest.raises(ValueError, match="unknown time zone 'Europe/Atlantis'"):
        Profile(timezone="Europe/Atlantis")
    with pytest.raises(ValueError, match="unknown time zone '../etc/passwd'"):
        Profile(timezone="../etc/passwd")
    with pytest.raises(ValueError, match="non-empty IANA name"):
        Profile(timezone="")


def test_fields_are_checked():
    with pytest.raises(TypeError, match="first_name must be a str"):
        Profile(first_name=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no time zone"):
        Profile(account_created="2026-01-01T00:00:00")
    p = Profile(first_name="Ada", account_created="2026-01-01T00:00:00+00:00")
    assert p.account_created.year == 2026
    assert p.replace(first_name="Bo").first_name == "Bo"
