"""Profile: validated when made."""

from __future__ import annotations

import pytest

from wm_kernel.core.profile import Profile


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


@pytest.mark.parametrize(
    "alias, zone",
    [
        ("EST", "America/New_York"),
        ("EDT", "America/New_York"),
        ("CST", "America/Chicago"),
        ("CDT", "America/Chicago"),
        ("MST", "America/Denver"),
        ("MDT", "America/Denver"),
        ("PST", "America/Los_Angeles"),
        ("PDT", "America/Los_Angeles"),
        ("GMT", "Etc/GMT"),
        ("UTC", "UTC"),
    ],
)
def test_the_originals_zone_aliases_resolve_as_the_original(alias, zone):
    p = Profile(timezone=alias)
    assert (p.timezone, p.zone.key) == (alias, zone)


def test_other_zone_names_are_the_tz_databases():
    # only the original's aliases are remapped, in its exact case; other tzdata names stay themselves
    assert Profile(timezone="HST").zone.key == "HST"
    assert Profile(timezone="CET").zone.key == "CET"
    with pytest.raises(ValueError, match="unknown time zone 'est'"):
        Profile(timezone="est")
