"""ManifestTrinket: segments grouped by local date, the active one marked, fed by the Session on every
collapse, kept in the store."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from trinkets.manifest_trinket import ManifestTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import TrinketFedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session
from wm_kernel.stores.embedded import SQLiteStore

NAME = "ManifestTrinket"


def make_session(now: str = "2026-11-30T14:00:00+00:00", **kwargs: object) -> Session:
    # 14:00 UTC is 9:00 AM EST in New York
    return Session(
        profile=Profile(timezone="America/New_York"), clock=ManualClock(now), trinkets=[ManifestTrinket], **kwargs
    )


def test_a_new_session_marks_its_first_segment_active() -> None:
    s = make_session()
    s.compose()
    assert (
        s.trinket(NAME).content
        == """\
<conversation_manifest>
<date_group label="TODAY">
<segment time="[9:00AM - ACTIVE]" status="active">Current conversation</segment>
</date_group>
</conversation_manifest>"""
    )
    # a system section that is not cached
    assert s.trinket(NAME).content in s.composed["non_cached_content"]
    assert "conversation_manifest" not in s.composed["cached_content"]


def test_groups_by_local_date_newest_first_chronological_inside() -> None:
    s = make_session()
    m = s.trinket(NAME)
    # added out of order on purpose
    m.add_segment("Late night debugging", "2026-11-30T04:30:00+00:00", "2026-11-30T05:45:00+00:00")
    m.add_segment("Budget review", "2026-11-29T15:00:00+00:00", "2026-11-29T16:10:00+00:00")
    m.add_segment("New year plans", "2025-12-28T17:05:00+00:00", "2025-12-28T18:00:00+00:00")
    m.add_segment("Trip planning", "2026-11-28T15:00:00+00:00", "2026-11-28T16:30:00+00:00")
    m.add_segment("Breakfast", "2026-11-30T12:00:00+00:00", "2026-11-30T12:20:00+00:00")
    s.clock.advance(hours=1, minutes=15)
    s.collapse_segment("Morning stand-up\nWe went through the week.")
    s.clock.advance(hours=4)
    s.collapse_segment("")
    assert (
        m.content
        == """\
<conversation_manifest>
<date_group label="TODAY">
<segment time="[7:00AM - 7:20AM]" status="collapsed">Breakfast</segment>
<segment time="[9:00AM - 10:15AM]" status="collapsed">Morning stand-up</segment>
<segment time="[10:15AM - 2:15PM]" status="collapsed">Segment 2</segment>
<segment time="[2:15PM - ACTIVE]" status="active">Current conversation</segment>
</date_group>
<date_group label="YESTERDAY">
<segment time="[10:00AM - 11:10AM]" status="collapsed">Budget review</segment>
<segment time="[11:30PM - 12:45AM]" status="collapsed">Late night debugging</segment>
</date_group>
<date_group label="NOV 28">
<segment time="[10:00AM - 11:30AM]" status="collapsed">Trip planning</segment>
</date_group>
<date_group label="DEC 28, 2025">
<segment time="[12:05PM - 1:00PM]" status="collapsed">New year plans</segment>
</date_group>
</conversation_manifest>"""
    )
    # style "revised": indented
    m.style = "revised"
    s.compose()
    assert (
        m.content
        == """\
<conversation_manifest>
  <date_group label="TODAY">
    <segment time="[7:00AM - 7:20AM]" status="collapsed">Breakfast</segment>
    <segment time="[9:00AM - 10:15AM]" status="collapsed">Morning stand-up</segment>
    <segment time="[10:15AM - 2:15PM]" status="collapsed">Segment 2</segment>
    <segment time="[2:15PM - ACTIVE]" status="active">Current conversation</segment>
  </date_group>
  <date_group label="YESTERDAY">
    <segment time="[10:00AM - 11:10AM]" status="collapsed">Budget review</segment>
    <segment time="[11:30PM - 12:45AM]" status="collapsed">Late night debugging</segment>
  </date_group>
  <date_group label="NOV 28">
    <segment time="[10:00AM - 11:30AM]" status="collapsed">Trip planning</segment>
  </date_group>
  <date_group label="DEC 28, 2025">
    <segment time="[12:05PM - 1:00PM]" status="collapsed">New year plans</segment>
  </date_group>
</conversation_manifest>"""
    )


def test_labels_move_with_the_local_date() -> None:
    s = make_session()
    m = s.trinket(NAME)
    m.clear_active()
    m.add_segment("Chat", "2026-11-30T14:00:00+00:00", "2026-11-30T15:00:00+00:00")
    labels = []
    for advance in (0, 14, 1, 24, 24):  # 9 AM; 11 PM same day; 0 AM next day; +1 day; +1 day
        s.clock.advance(hours=advance)
        s.compose()
        labels.append(ET.fromstring(m.content).find("date_group").get("label"))
    assert labels == ["TODAY", "TODAY", "YESTERDAY", "NOV 30", "NOV 30"]


def test_times_are_local_wall_clock_across_a_dst_change() -> None:
    s = make_session("2026-03-08T20:00:00+00:00")  # 4:00 PM EDT on the spring-forward day
    m = s.trinket(NAME)
    m.clear_active()
    m.add_segment("Night owl", "2026-03-08T06:30:00+00:00", "2026-03-08T07:30:00+00:00")
    s.compose()
    assert (
        m.content
        == """\
<conversation_manifest>
<date_group label="TODAY">
<segment time="[1:30AM - 3:30AM]" status="collapsed">Night owl</segment>
</date_group>
</conversation_manifest>"""
    )


def test_segments_lists_chronologically_with_status() -> None:
    s = make_session()
    s.clock.advance(minutes=30)
    s.collapse_segment("First")
    assert [
        (r["title"], r["start"].isoformat(), r["end"] and r["end"].isoformat(), r["status"])
        for r in s.trinket(NAME).segments()
    ] == [
        ("First", "2026-11-30T14:00:00+00:00", "2026-11-30T14:30:00+00:00", "collapsed"),
        ("Current conversation", "2026-11-30T14:30:00+00:00", None, "active"),
    ]


def test_collapse_does_not_flush_the_manifest_and_is_not_a_feed_call() -> None:
    s = make_session()
    heard: list[tuple] = []
    s.bus.subscribe(TrinketFedEvent, lambda e: heard.append((e.trinket_name, e.method)))
    s.collapse_segment("One")
    s.collapse_segment("Two")
    assert [r["title"] for r in s.trinket(NAME).segments()] == ["One", "Two", "Current conversation"]
    assert heard == []  # replaying the session's collapses must not record them twice
    s.trinket(NAME).set_active("2026-11-30T14:00:00+00:00", title="Here")
    assert heard == [(NAME, "set_active")]


def test_set_and_clear_active() -> None:
    s = make_session()
    m = s.trinket(NAME)
    m.set_active("2026-11-30T13:05:00+00:00", title="Catching up")
    s.compose()
    assert m.content.splitlines()[2] == '<segment time="[8:05AM - ACTIVE]" status="active">Catching up</segment>'
    m.clear_active()
    m.clear_active()  # a no-op the second time
    s.compose()
    assert m.content == "" and m.segments() == []
    assert "conversation_manifest" not in s.composed["non_cached_content"]


def test_the_manifest_survives_a_restart_on_the_same_sqlite_file(tmp_path) -> None:
    path = tmp_path / "state.db"
    first = make_session(store=SQLiteStore(path))
    first.clock.advance(minutes=45)
    first.collapse_segment("Before the restart")
    first.close()
    first.store.close()

    second = make_session("2026-11-30T16:00:00+00:00", store=SQLiteStore(path))
    second.compose()
    assert (
        second.trinket(NAME).content
        == """\
<conversation_manifest>
<date_group label="TODAY">
<segment time="[9:00AM - 9:45AM]" status="collapsed">Before the restart</segment>
<segment time="[11:00AM - ACTIVE]" status="active">Current conversation</segment>
</date_group>
</conversation_manifest>"""
    )
    second.store.close()


def test_each_user_has_their_own_manifest() -> None:
    s = make_session(user_id="ada")
    s.collapse_segment("Ada's chat")
    other = Session(clock=s.clock, store=s.store, user_id="bob", trinkets=[ManifestTrinket])
    assert [r["title"] for r in other.trinket(NAME).segments()] == ["Current conversation"]
    assert s.store.keys("manifest:") == ["manifest:ada", "manifest:bob"]


HOSTILE = "Plan \"B\" <b> & </segment></date_group><x y='1'>"


def test_hostile_titles_round_trip_through_an_xml_parser() -> None:
    s = make_session()
    m = s.trinket(NAME)
    m.add_segment(HOSTILE, "2026-11-30T12:00:00+00:00", "2026-11-30T13:00:00+00:00")
    m.set_active("2026-11-30T14:00:00+00:00", title=HOSTILE + " (now)")
    s.collapse_segment("  " + HOSTILE + "  \nmore")
    root = ET.fromstring(m.content)
    (group,) = root.findall("date_group")
    assert [(seg.text, seg.get("status")) for seg in group.findall("segment")] == [
        (HOSTILE, "collapsed"),
        (HOSTILE, "collapsed"),
        ("Current conversation", "active"),
    ]


@pytest.mark.parametrize(
    "args, error, message",
    [
        (("", "2026-11-30T12:00:00+00:00", "2026-11-30T13:00:00+00:00"), ValueError, "title must not be empty"),
        (
            (None, "2026-11-30T12:00:00+00:00", "2026-11-30T13:00:00+00:00"),
            TypeError,
            "title must be a str, got NoneType",
        ),
        (
            ("T", "2026-11-30T12:00:00", "2026-11-30T13:00:00+00:00"),
            ValueError,
            "start: date-time 2026-11-30T12:00:00 has no time zone; add one, e.g. +00:00",
        ),
        (("T", "2026-11-30T12:00:00+00:00", "later"), ValueError, "end: not an ISO 8601 date-time: 'later'"),
        (
            ("T", "2026-11-30T13:00:00+00:00", "2026-11-30T12:00:00+00:00"),
            ValueError,
            "end 2026-11-30T12:00:00+00:00 is before start 2026-11-30T13:00:00+00:00",
        ),
    ],
)
def test_bad_segments_are_clear_errors_and_change_nothing(args: tuple, error: type, message: str) -> None:
    s = make_session()
    m = s.trinket(NAME)
    m.add_segment("Kept", "2026-11-30T11:00:00+00:00", "2026-11-30T11:30:00+00:00")
    before = s.store.hgetall(m.store_key)
    with pytest.raises(error) as info:
        m.add_segment(*args)
    assert str(info.value) == message
    assert s.store.hgetall(m.store_key) == before


@pytest.mark.parametrize(
    "start, title, error, message",
    [
        (
            "2026-11-30T12:00:00",
            "T",
            ValueError,
            "start: date-time 2026-11-30T12:00:00 has no time zone; add one, e.g. +00:00",
        ),
        ("2026-11-30T12:00:00+00:00", "  ", ValueError, "title must not be empty"),
    ],
)
def test_bad_active_segment_is_an_error_and_keeps_the_old_one(
    start: str, title: str, error: type, message: str
) -> None:
    s = make_session()
    m = s.trinket(NAME)
    before = s.store.hgetall(m.store_key)
    with pytest.raises(error) as info:
        m.set_active(start, title=title)
    assert str(info.value) == message
    assert s.store.hgetall(m.store_key) == before


def test_only_the_most_recent_dates_are_shown_and_the_store_keeps_all() -> None:
    s = make_session()
    m = s.trinket(NAME)
    for day in range(20, 29):  # nine earlier days, 10:00-10:30 AM New York time each
        m.add_segment(f"Day {day}", f"2026-11-{day}T15:00:00+00:00", f"2026-11-{day}T15:30:00+00:00")
    m.max_date_groups = 3
    s.compose()
    assert (
        m.content
        == """\
<conversation_manifest>
<date_group label="TODAY">
<segment time="[9:00AM - ACTIVE]" status="active">Current conversation</segment>
</date_group>
<date_group label="NOV 28">
<segment time="[10:00AM - 10:30AM]" status="collapsed">Day 28</segment>
</date_group>
<date_group label="NOV 27">
<segment time="[10:00AM - 10:30AM]" status="collapsed">Day 27</segment>
</date_group>
</conversation_manifest>"""
    )
    assert len(m.segments()) == 10  # nothing was dropped from the store
    m.max_date_groups = 0
    s.compose()
    assert m.content.count("<date_group") == 10
    assert ManifestTrinket.max_date_groups.default_value == 0


def test_every_date_group_is_shown_by_default() -> None:
    s = make_session()
    m = s.trinket(NAME)
    for day in range(1, 29):  # 28 earlier days
        m.add_segment(f"Day {day}", f"2026-11-{day:02d}T15:00:00+00:00", f"2026-11-{day:02d}T15:30:00+00:00")
    s.compose()
    labels = [g.get("label") for g in ET.fromstring(m.content).findall("date_group")]
    assert labels == ["TODAY"] + [f"NOV {day:02d}" for day in range(28, 0, -1)]


def test_dates_of_different_years_with_one_label_keep_their_own_groups() -> None:
    # the original groups by label, merging DEC 28 of 2025 into DEC 28 of 2026; wm-kernel keeps
    # them apart and writes the year where it is not the current one
    s = make_session("2027-01-03T17:00:00+00:00")
    m = s.trinket(NAME)
    m.clear_active()
    m.add_segment("Last year", "2025-12-28T15:00:00+00:00", "2025-12-28T16:00:00+00:00")
    m.add_segment("This December", "2026-12-28T15:00:00+00:00", "2026-12-28T16:00:00+00:00")
    m.add_segment("Advent", "2026-12-05T15:00:00+00:00", "2026-12-05T16:00:00+00:00")
    m.add_segment("New year", "2027-01-01T15:00:00+00:00", "2027-01-01T16:00:00+00:00")
    s.compose()
    assert (
        m.content
        == """\
<conversation_manifest>
<date_group label="JAN 01">
<segment time="[10:00AM - 11:00AM]" status="collapsed">New year</segment>
</date_group>
<date_group label="DEC 28, 2026">
<segment time="[10:00AM - 11:00AM]" status="collapsed">This December</segment>
</date_group>
<date_group label="DEC 05, 2026">
<segment time="[10:00AM - 11:00AM]" status="collapsed">Advent</segment>
</date_group>
<date_group label="DEC 28, 2025">
<segment time="[10:00AM - 11:00AM]" status="collapsed">Last year</segment>
</date_group>
</conversation_manifest>"""
    )
    m.style = "revised"
    s.compose()
    assert [g.get("label") for g in ET.fromstring(m.content).findall("date_group")] == [
        "JAN 01",
        "DEC 28, 2026",
        "DEC 05, 2026",
        "DEC 28, 2025",
    ]


def test_a_negative_window_is_refused() -> None:
    from traitlets import TraitError

    m = make_session().trinket(NAME)
    with pytest.raises(TraitError):
        m.max_date_groups = -1
    assert m.max_date_groups == 0


def test_a_collapse_event_from_anyone_is_recorded() -> None:
    # no Session: the collapse arrives as an event published on the bus
    from wm_kernel.core.bus import EventBus
    from wm_kernel.core.events import SegmentCollapsedEvent
    from wm_kernel.core.working_memory import WorkingMemory

    clock = ManualClock("2026-11-30T14:00:00+00:00")
    bus = EventBus()
    manifest = ManifestTrinket(bus, WorkingMemory(bus, clock=clock))
    manifest.set_active("2026-11-30T13:00:00+00:00")
    bus.publish(SegmentCollapsedEvent.create(continuum_id="c", clock=clock, segment_id="c-segment-4"))
    assert [
        (r["title"], r["start"].isoformat(), r["end"] and r["end"].isoformat(), r["status"])
        for r in manifest.segments()
    ] == [
        ("Segment 4", "2026-11-30T13:00:00+00:00", "2026-11-30T14:00:00+00:00", "collapsed"),
        ("Current conversation", "2026-11-30T14:00:00+00:00", None, "active"),
    ]
