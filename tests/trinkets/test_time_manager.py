"""TimeManager: the datetime sentence in the profile's zone, from the clock in use, always fresh."""

from __future__ import annotations

import pytest

from trinkets.time_manager import TimeManager
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import ComposeSystemPromptEvent
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.session import Session

RULE = "═" * 60


def make_session(when: str, zone: str = "UTC") -> Session:
    return Session(base_prompt="Hi.", profile=Profile(timezone=zone), clock=ManualClock(when), trinkets=[TimeManager])


def datetime_section(session: Session) -> str:
    records = [r for r in session.compose().sections if r.name == "datetime_section"]
    assert len(records) == 1
    return records[0].content


def test_reference_example_in_the_notification_centre() -> None:
    s = make_session("2026-11-30T09:05:00+00:00")
    composed = s.compose()
    assert composed["notification_center"] == (
        f"{RULE}\n"
        "HUD - Runtime state, authoritative for current context\n"
        f"{RULE}\n"
        "<mira:hud>\n"
        "<current_datetime>TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:05 AM UTC.</current_datetime>\n"
        "\n"
        "</mira:hud>\n"
        f"{RULE}"
    )
    record = composed.sections[-1]
    assert (record.name, record.placement, record.cached) == ("datetime_section", "notification", False)


@pytest.mark.parametrize(
    "when, zone, expected",
    [
        # zero-padded day, unpadded hour, BST in summer
        ("2026-07-04T13:05:00+00:00", "Europe/London", "TODAY IS SATURDAY, JULY 04, 2026 AT 2:05 PM BST."),
        # the night British Summer Time ends (25 Oct 2026, 01:00 UTC): last BST minute, first GMT minute
        ("2026-10-25T00:59:00+00:00", "Europe/London", "TODAY IS SUNDAY, OCTOBER 25, 2026 AT 1:59 AM BST."),
        ("2026-10-25T01:00:00+00:00", "Europe/London", "TODAY IS SUNDAY, OCTOBER 25, 2026 AT 1:00 AM GMT."),
        # the morning it starts (29 Mar 2026, 01:00 UTC): GMT then BST
        ("2026-03-29T00:59:00+00:00", "Europe/London", "TODAY IS SUNDAY, MARCH 29, 2026 AT 12:59 AM GMT."),
        ("2026-03-29T01:00:00+00:00", "Europe/London", "TODAY IS SUNDAY, MARCH 29, 2026 AT 2:00 AM BST."),
        # noon and midnight in New York (EDT), the date following the zone, not UTC
        ("2026-07-04T16:00:00+00:00", "America/New_York", "TODAY IS SATURDAY, JULY 04, 2026 AT 12:00 PM EDT."),
        ("2026-07-05T04:00:00+00:00", "America/New_York", "TODAY IS SUNDAY, JULY 05, 2026 AT 12:00 AM EDT."),
        ("2026-07-05T03:59:00+00:00", "America/New_York", "TODAY IS SATURDAY, JULY 04, 2026 AT 11:59 PM EDT."),
        ("2026-01-01T04:59:00+00:00", "America/New_York", "TODAY IS WEDNESDAY, DECEMBER 31, 2025 AT 11:59 PM EST."),
        ("2026-02-09T12:30:00+00:00", "UTC", "TODAY IS MONDAY, FEBRUARY 09, 2026 AT 12:30 PM UTC."),
        # a zone without a letter abbreviation in tzdata: the bare offset tzdata writes, as the original
        ("2026-11-30T09:05:00+00:00", "America/Sao_Paulo", "TODAY IS MONDAY, NOVEMBER 30, 2026 AT 6:05 AM -03."),
        ("2026-11-30T09:05:00+00:00", "Asia/Kathmandu", "TODAY IS MONDAY, NOVEMBER 30, 2026 AT 2:50 PM +0545."),
        # the original's aliases: EST is New York (EDT in summer), never the fixed UTC-5 zone
        ("2026-07-01T16:00:00+00:00", "EST", "TODAY IS WEDNESDAY, JULY 01, 2026 AT 12:00 PM EDT."),
        ("2026-07-01T16:00:00+00:00", "PDT", "TODAY IS WEDNESDAY, JULY 01, 2026 AT 9:00 AM PDT."),
        ("2026-01-15T16:00:00+00:00", "CST", "TODAY IS THURSDAY, JANUARY 15, 2026 AT 10:00 AM CST."),
        ("2026-07-01T16:00:00+00:00", "MST", "TODAY IS WEDNESDAY, JULY 01, 2026 AT 10:00 AM MDT."),
        ("2026-07-01T16:00:00+00:00", "GMT", "TODAY IS WEDNESDAY, JULY 01, 2026 AT 4:00 PM GMT."),
    ],
)
def test_sentence_in_the_profile_zone(when: str, zone: str, expected: str) -> None:
    assert datetime_section(make_session(when, zone)) == (f"<current_datetime>{expected}</current_datetime>")


@pytest.mark.parametrize(
    "zone, expected",
    [
        ("America/Sao_Paulo", "6:05 AM UTC-03:00."),
        ("Asia/Kathmandu", "2:50 PM UTC+05:45."),
        ("Asia/Dubai", "1:05 PM UTC+04:00."),
        ("Europe/London", "9:05 AM GMT."),  # a letter abbreviation reads the same in both styles
    ],
)
def test_revised_style_spells_out_a_bare_offset(zone: str, expected: str) -> None:
    s = make_session("2026-11-30T09:05:00+00:00", zone)
    s.trinket("TimeManager").style = "revised"
    assert datetime_section(s) == (
        f"<current_datetime>TODAY IS MONDAY, NOVEMBER 30, 2026 AT {expected}</current_datetime>"
    )


def test_unknown_style_is_refused_and_the_style_kept() -> None:
    s = make_session("2026-11-30T09:05:00+00:00")
    tm = s.trinket("TimeManager")
    with pytest.raises(
        ValueError,
        match="TimeManager has no style 'fancy' "
        r"\(known: original, revised\)",
    ):
        tm.style = "fancy"
    assert tm.style == "original"


def test_always_fresh_from_the_clock_and_the_profile() -> None:
    s = make_session("2026-11-30T09:05:00+00:00", "Europe/London")
    assert datetime_section(s) == (
        "<current_datetime>TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:05 AM GMT.</current_datetime>"
    )
    s.clock.advance(hours=15, minutes=1)
    assert datetime_section(s) == (
        "<current_datetime>TODAY IS TUESDAY, DECEMBER 01, 2026 AT 12:06 AM GMT.</current_datetime>"
    )
    s.profile = Profile(timezone="Asia/Tokyo")
    assert datetime_section(s) == (
        "<current_datetime>TODAY IS TUESDAY, DECEMBER 01, 2026 AT 9:06 AM JST.</current_datetime>"
    )


def test_low_level_bus_and_working_memory() -> None:
    bus = EventBus()
    wm = WorkingMemory(bus, clock=ManualClock("2026-12-24T23:45:00+00:00"), profile=Profile(timezone="Europe/Paris"))
    tm = TimeManager(bus, wm)
    bus.publish(ComposeSystemPromptEvent.create(continuum_id="c1", base_prompt="Hi"))
    expected = "<current_datetime>TODAY IS FRIDAY, DECEMBER 25, 2026 AT 12:45 AM CET.</current_datetime>"
    assert tm.content == expected
    assert tm.error == ""
    assert wm.get_trinket_state("datetime_section")["content"] == expected
    assert [r.event_type for r in bus.log] == [
        "ComposeSystemPromptEvent",
        "UpdateTrinketEvent",
        "TrinketContentEvent",
        "SystemPromptComposedEvent",
    ]


def test_stateless_and_not_cached() -> None:
    assert TimeManager.cache_policy is False
    s = make_session("2026-11-30T09:05:00+00:00")
    s.advance_turn()
    s.collapse_segment(summary="done")
    assert datetime_section(s) == (
        "<current_datetime>TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:05 AM UTC.</current_datetime>"
    )


def test_unknown_zone_fails_when_the_profile_is_made() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Europe/Atlantis'"):
        Profile(timezone="Europe/Atlantis")


def test_no_platform_or_locale_dependent_strftime() -> None:
    # strftime's %A/%B follow the process locale and %-I exists only on some platforms
    import inspect

    import trinkets.time_manager
    import wm_kernel.utils.timefmt

    for module in (trinkets.time_manager, wm_kernel.utils.timefmt):
        assert ".strftime(" not in inspect.getsource(module)
