"""ProactiveMemoryTrinket: surfaced memories, the relevance threshold, links deduplicated, cleared on
segment collapse, every value escaped, bad memories refused whole; the original's markup by default,
the indented one with local dates in style "revised"."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from trinkets.proactive_memory_trinket import ProactiveMemoryTrinket, normalize_memories
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.session import Session
from wm_kernel.stores.embedded import MemoryStore, SQLiteStore, StateStore

NAME = "ProactiveMemoryTrinket"

MEMORIES: list[dict[str, Any]] = [
    {
        "id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "text": "Ada is training for the Boston marathon",
        "created_at": "2026-10-30T14:00:00+00:00",
        "similarity_score": 0.93,
        "happens_at": "2027-04-19T14:00:00+00:00",
        "expires_at": "2027-04-20T03:30:00+00:00",  # 11:30 PM EDT on Apr 19: UTC date vs local date
        "annotations": [
            {"text": "Moved her long runs to Sundays", "added_at": "2026-11-16T14:00:00+00:00"},
            {"text": "Mentioned a sore knee"},
        ],
        "linked_memories": [
            {"id": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "text": "Ada's coach is Sam", "link_type": "related"},
            {"id": "11111111-2222-3333-4444-555555555555", "text": "Ada ran Chicago in 2025", "link_type": "precedes"},
            {
                "id": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0",
                "text": "Ada's coach is Sam (again)",
                "link_type": "supports",
            },
        ],
    },
    {
        "id": "glob-al01-x",
        "text": "The team stand-up is at 9:30",
        "is_global": True,
        "similarity_score": 0.75,
        "created_at": "2026-11-30T13:59:30+00:00",
    },
    {
        "id": "short",
        "text": "Prefers metric units",
        "similarity_score": 0.76,
        "expires_at": "2026-12-01T03:00:00+00:00",
    },
]

# the original's markup: unindented, each temporal date the timestamp's own (here UTC)
EXPECTED = """\
<surfaced_memories>
<memory id="mem_7c9e6679" relevance="93">
<text>Ada is training for the Boston marathon</text>
<created>1 month ago</created>
<temporal expires="2027-04-19" happens="2027-04-19"/>
<annotations>
<note added="2 weeks ago">Moved her long runs to Sundays</note>
<note>Mentioned a sore knee</note>
</annotations>
<context>
Also: Ada's coach is Sam (related, mem_0b1c2d3e)
Also: Ada ran Chicago in 2025 (precedes, mem_11111111)
</context>
</memory>
<memory id="mem_global01" source="global">
<text>The team stand-up is at 9:30</text>
<created>just now</created>
</memory>
<memory id="mem_short" relevance="76">
<text>Prefers metric units</text>
<temporal expires="2026-11-30"/>
</memory>
</surfaced_memories>"""

# style "revised": indented by nesting, temporal dates local to the profile's zone (New York)
REVISED = """\
<surfaced_memories>
  <memory id="mem_7c9e6679" relevance="93">
    <text>Ada is training for the Boston marathon</text>
    <created>1 month ago</created>
    <temporal expires="2027-04-19" happens="2027-04-19"/>
    <annotations>
      <note added="2 weeks ago">Moved her long runs to Sundays</note>
      <note>Mentioned a sore knee</note>
    </annotations>
    <context>
      Also: Ada's coach is Sam (related, mem_0b1c2d3e)
      Also: Ada ran Chicago in 2025 (precedes, mem_11111111)
    </context>
  </memory>
  <memory id="mem_global01" source="global">
    <text>The team stand-up is at 9:30</text>
    <created>just now</created>
  </memory>
  <memory id="mem_short" relevance="76">
    <text>Prefers metric units</text>
    <temporal expires="2026-11-30"/>
  </memory>
</surfaced_memories>"""


def make_session() -> Session:
    return Session(
        profile=Profile(timezone="America/New_York"),
        clock=ManualClock("2026-11-30T14:00:00+00:00"),
        trinkets=[ProactiveMemoryTrinket],
    )


def test_surface_renders_the_exact_markup() -> None:
    s = make_session()
    assert s.trinket(NAME).surface(MEMORIES) == 3
    s.compose()
    assert s.trinket(NAME).content == EXPECTED
    assert EXPECTED in s.composed["notification_center"]


def test_revised_style_indents() -> None:
    s = make_session()
    pm = s.trinket(NAME)
    pm.surface(MEMORIES)
    pm.style = "revised"
    s.compose()
    assert pm.content == REVISED
    pm.style = "original"
    s.compose()
    assert pm.content == EXPECTED


def test_the_originals_memory_shape_is_read_and_what_it_does_not_render_ignored() -> None:
    s = make_session()
    pm = s.trinket(NAME)
    original_shape = [
        {
            "id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
            "text": "Ada is training for the Boston marathon",
            "created_at": "2026-10-30T14:00:00+00:00",
            "similarity_score": 0.93,
            "happens_at": "2027-04-19T14:00:00+00:00",
            "expires_at": "2027-04-20T03:30:00+00:00",
            "importance_score": 0.6,
            "access_count": 4,
            "source": "conversation",
            "annotations": [
                {"text": "Moved her long runs to Sundays", "created_at": "2026-11-16T14:00:00+00:00", "author": "mira"},
                {"text": "Mentioned a sore knee"},
            ],
            "linked_memories": [
                {
                    "id": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0",
                    "text": "Ada's coach is Sam",
                    "link_metadata": {"link_type": "related", "confidence": 0.7},
                    "depth": 1,
                },
                {
                    "id": "11111111-2222-3333-4444-555555555555",
                    "text": "Ada ran Chicago in 2025",
                    "link_metadata": {"link_type": "precedes"},
                },
                {
                    "id": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0",
                    "text": "Ada's coach is Sam (again)",
                    "link_metadata": {"link_type": "supports", "confidence": 0.99},
                },
            ],
        },
        {
            "id": "glob-al01-x",
            "text": "The team stand-up is at 9:30",
            "source": "global",
            "similarity_score": 0.75,
            "created_at": "2026-11-30T13:59:30+00:00",
        },
        {
            "id": "short",
            "text": "Prefers metric units",
            "similarity_score": 0.76,
            "expires_at": "2026-12-01T03:00:00+00:00",
            "source": "user",
        },
    ]
    pm.surface(original_shape)
    s.compose()
    assert pm.content == EXPECTED
    assert pm.memories == normalize_memories(MEMORIES)


@pytest.mark.parametrize(
    "score, original, revised",
    [
        # float noise of an upstream sum: the original's int() gives 80 and 76 (a deviation: both
        # styles read the relevance immune to it)
        (0.8099999999990001, "81", "81"),
        (0.69 + 0.08, "77", "77"),  # 76.99999999999999
        (0.81, "81", "81"),
        (0.93, "93", "93"),
        (1, "100", "100"),
    ],
)
def test_relevance_truncation_per_style(score: float, original: str, revised: str) -> None:
    s = make_session()
    pm = s.trinket(NAME)
    pm.surface([{"id": "m", "text": "t", "similarity_score": score}])
    shown = []
    for style in ("original", "revised"):
        pm.style = style
        s.compose()
        shown.append(ET.fromstring(pm.content).find("memory").get("relevance"))  # type: ignore[union-attr]
    assert shown == [original, revised]


def test_update_context_replaces_and_an_update_without_memories_keeps() -> None:
    s = make_session()
    pm = s.trinket(NAME)
    s.working_memory.publish_trinket_update(NAME, {"memories": MEMORIES})
    assert pm.content == EXPECTED
    s.compose()  # a compose sends an update with an empty context: the memories stay
    assert pm.content == EXPECTED
    s.working_memory.publish_trinket_update(NAME, {"memories": [{"id": "m2", "text": "Only me"}]})
    assert (
        pm.content
        == """\
<surfaced_memories>
<memory id="mem_m2">
<text>Only me</text>
</memory>
</surfaced_memories>"""
    )
    s.working_memory.publish_trinket_update(NAME, {"memories": []})
    assert pm.content == "" and pm.memories == []
    assert s.working_memory.get_trinket_state("relevant_memories") is None


def test_relative_times_follow_the_clock() -> None:
    s = make_session()
    s.trinket(NAME).surface([{"id": "m", "text": "t", "created_at": "2026-11-30T14:00:00+00:00"}])
    s.compose()
    assert "<created>just now</created>" in s.trinket(NAME).content
    s.clock.advance(days=3)
    s.compose()
    assert "<created>3 days ago</created>" in s.trinket(NAME).content


@pytest.mark.parametrize(
    "score, shown",
    [
        (None, None),
        (0.0, None),
        (0.5, None),
        (0.75, None),
        (0.7501, "75"),
        (0.76, "76"),
        (0.999, "99"),
        (1, "100"),
    ],
)
def test_relevance_is_shown_only_above_0_75_as_an_integer_percentage(score: float | None, shown: str | None) -> None:
    s = make_session()
    s.trinket(NAME).surface([{"id": "m", "text": "t", "similarity_score": score}])
    s.compose()
    memory = ET.fromstring(s.trinket(NAME).content).find("memory")
    assert memory is not None and memory.get("relevance") == shown


def test_linked_memories_are_deduplicated_by_target_id_first_one_kept() -> None:
    s = make_session()
    pm = s.trinket(NAME)
    link = {"id": "abc-def", "text": "First", "link_type": "related"}
    pm.surface(
        [
            {
                "id": "m",
                "text": "t",
                "linked_memories": [
                    link,
                    {**link, "text": "Second"},
                    {**link, "id": "abcdef"},
                    {**link, "link_type": "x"},
                ],
            }
        ]
    )
    assert pm.memories[0]["linked_memories"] == [link, {**link, "id": "abcdef"}]
    s.compose()
    # "abc-def" and "abcdef" are different targets even though their short ids are the same
    assert pm.content.splitlines()[3:7] == [
        "<context>",
        "Also: First (related, mem_abcdef)",
        "Also: First (related, mem_abcdef)",
        "</context>",
    ]


def test_segment_collapse_clears_the_memories_but_turns_do_not() -> None:
    s = make_session()
    pm = s.trinket(NAME)
    pm.surface(MEMORIES)
    s.advance_turn(3)
    assert pm.content == EXPECTED and len(pm.memories) == 3
    assert pm.describe_items() == [
        {
            "id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
            "label": "Ada is training for the Boston marathon",
            "turns_remaining": None,
        },
        {"id": "glob-al01-x", "label": "The team stand-up is at 9:30", "turns_remaining": None},
        {"id": "short", "label": "Prefers metric units", "turns_remaining": None},
    ]
    s.collapse_segment("Running chat")
    assert pm.memories == [] and pm.describe_items() == [] and pm.content == ""
    assert "surfaced_memories" not in s.composed["notification_center"]
    assert s.working_memory.get_trinket_state("relevant_memories") is None


def test_describe_items_shortens_long_labels() -> None:
    pm = make_session().trinket(NAME)
    pm.surface([{"id": "m", "text": "word " * 30}])
    (item,) = pm.describe_items()
    assert item["label"] == ("word " * 12)[:59] + "…" and len(item["label"]) == 60


HOSTILE = "x\" y=\"1 </text></memory><evil a='b'> & &amp; -->"


def test_hostile_values_round_trip_through_an_xml_parser() -> None:
    s = make_session()
    s.trinket(NAME).surface(
        [
            {
                "id": '"><a b="',
                "text": HOSTILE + "\nsecond line",
                "created_at": "2026-11-29T14:00:00+00:00",
                "annotations": [{"text": HOSTILE, "added_at": "2026-11-30T13:00:00+00:00"}],
                "linked_memories": [{"id": "<l>", "text": HOSTILE, "link_type": "</context>"}],
            }
        ]
    )
    s.compose()
    root = ET.fromstring(s.trinket(NAME).content)
    (memory,) = root.findall("memory")
    assert memory.attrib == {"id": 'mem_"><a b="'}
    assert memory.findtext("text") == HOSTILE + "\nsecond line"
    assert memory.find("annotations/note").attrib == {"added": "1 hour ago"}
    assert memory.findtext("annotations/note") == HOSTILE
    assert memory.findtext("context").strip() == f"Also: {HOSTILE} (</context>, mem_<l>)"


GOOD = {"id": "ok", "text": "fine"}


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"text": "no id"}, "memories[1].id is required"),
        ({"id": "m"}, "memories[1].text is required"),
        ({"id": "m", "text": "  "}, "memories[1].text must not be empty"),
        ({"id": 5, "text": "t"}, "memories[1].id must be a str, got int"),
        (
            {**GOOD, "id": "m", "similarity_score": 1.5},
            "memories[1].similarity_score must be a number from 0 to 1, got 1.5",
        ),
        (
            {**GOOD, "id": "m", "similarity_score": "high"},
            "memories[1].similarity_score must be a number from 0 to 1, got 'high'",
        ),
        (
            {**GOOD, "id": "m", "similarity_score": True},
            "memories[1].similarity_score must be a number from 0 to 1, got True",
        ),
        ({**GOOD, "id": "m", "is_global": "yes"}, "memories[1].is_global must be a bool, got str"),
        (
            {**GOOD, "id": "m", "created_at": "2026-11-30T09:00:00"},
            "memories[1].created_at: date-time 2026-11-30T09:00:00 has no time zone; add one, e.g. +00:00",
        ),
        ({**GOOD, "id": "m", "happens_at": "soon"}, "memories[1].happens_at: not an ISO 8601 date-time: 'soon'"),
        ({**GOOD, "id": "m", "source": 1}, "memories[1].source must be a str, got int"),
        (
            {**GOOD, "id": "m", "source": "global", "is_global": False},
            "memories[1].is_global False contradicts source 'global'",
        ),
        (
            {
                **GOOD,
                "id": "m",
                "annotations": [
                    {"text": "n", "added_at": "2026-11-30T09:00:00+00:00", "created_at": "2026-11-30T10:00:00+00:00"}
                ],
            },
            "memories[1].annotations[0] has both added_at and created_at, and they differ",
        ),
        (
            {**GOOD, "id": "m", "linked_memories": [{"id": "l", "text": "t", "link_metadata": "related"}]},
            "memories[1].linked_memories[0].link_metadata must be a dict, got str",
        ),
        (
            {
                **GOOD,
                "id": "m",
                "linked_memories": [{"id": "l", "text": "t", "link_type": "a", "link_metadata": {"link_type": "b"}}],
            },
            "memories[1].linked_memories[0] has both link_type and link_metadata.link_type, and they differ",
        ),
        ({**GOOD, "id": "m", "annotations": "note"}, "memories[1].annotations must be a list, got str"),
        (
            {**GOOD, "id": "m", "annotations": [{"added_at": "2026-11-30T09:00:00+00:00"}]},
            "memories[1].annotations[0].text must be a str, got NoneType",
        ),
        (
            {**GOOD, "id": "m", "linked_memories": [{"id": "l", "text": "t"}]},
            "memories[1].linked_memories[0].link_type must be a str, got NoneType",
        ),
        ({**GOOD, "id": "m", "linked_memories": ["l"]}, "memories[1].linked_memories[0] must be a dict, got str"),
        ("just text", "memories[1] must be a dict, got str"),
        (GOOD, "memories[1].id 'ok' repeats memories[0].id"),
    ],
)
def test_a_bad_memory_is_a_value_error_naming_index_and_field_and_changes_nothing(bad: Any, message: str) -> None:
    s = make_session()
    pm = s.trinket(NAME)
    pm.surface(MEMORIES)
    s.compose()
    before = copy.deepcopy(pm.memories)
    with pytest.raises(ValueError) as info:
        pm.surface([GOOD, bad])
    assert str(info.value) == message
    assert pm.memories == before
    # the same memories through an update context: the failure is isolated and visible
    s.working_memory.publish_trinket_update(NAME, {"memories": [GOOD, bad]})
    assert pm.error == f"ValueError: {message}"
    assert pm.memories == before
    s.compose()
    assert pm.error == "" and pm.content == EXPECTED


@pytest.mark.parametrize("value", [None, "text", {"id": "m", "text": "t"}])
def test_memories_that_are_not_a_list_are_a_type_error(value: Any) -> None:
    pm = make_session().trinket(NAME)
    with pytest.raises(TypeError, match="^memories must be a list of dicts, got "):
        pm.surface(value)
    assert pm.memories == []


# -- persistence

KEY = "proactive_memory:ada:c1"


def stored_session(store: StateStore) -> Session:
    return Session(
        profile=Profile(timezone="America/New_York"),
        store=store,
        user_id="ada",
        continuum_id="c1",
        clock=ManualClock("2026-11-30T14:00:00+00:00"),
        trinkets=[ProactiveMemoryTrinket],
    )


def test_memories_are_stored_as_json_and_come_back_the_same(tmp_path) -> None:
    path = tmp_path / "wm.sqlite"
    first = stored_session(SQLiteStore(path))
    first.trinket(NAME).surface(MEMORIES[1:])
    assert first.store.hgetall(KEY) == {
        "order": 2,
        "item:glob-al01-x": {
            "v": 1,
            "seq": 1,
            "item": {
                "id": "glob-al01-x",
                "text": "The team stand-up is at 9:30",
                "created_at": "2026-11-30T13:59:30+00:00",
                "similarity_score": 0.75,
                "is_global": True,
                "expires_at": None,
                "happens_at": None,
                "annotations": [],
                "linked_memories": [],
            },
        },
        "item:short": {
            "v": 1,
            "seq": 2,
            "item": {
                "id": "short",
                "text": "Prefers metric units",
                "created_at": None,
                "similarity_score": 0.76,
                "is_global": False,
                "expires_at": "2026-12-01T03:00:00+00:00",
                "happens_at": None,
                "annotations": [],
                "linked_memories": [],
            },
        },
    }
    first.trinket(NAME).surface(MEMORIES)
    first.store.close()
    second = stored_session(SQLiteStore(path))
    assert second.trinket(NAME).memories == first.trinket(NAME).memories
    second.compose()
    assert second.trinket(NAME).content == EXPECTED
    second.collapse_segment()
    assert not any(field.startswith("item:") for field in second.store.hgetall(KEY))
    second.store.close()


def test_only_an_update_that_carries_memories_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    s = stored_session(store)
    written: list[str] = []
    hset = store.hset
    monkeypatch.setattr(store, "hset", lambda k, f, v: (written.append(k), hset(k, f, v))[1])
    s.working_memory.publish_trinket_update(NAME, {"memories": MEMORIES})
    writes = written.count(KEY)
    assert writes >= len(MEMORIES)  # one record per memory (and its order number)
    s.compose()
    s.advance_turn(2)
    s.working_memory.publish_trinket_update(NAME, {"memories": MEMORIES})  # the same list again
    assert written.count(KEY) == writes


def test_unreadable_stored_memories_are_a_clear_error_and_register_nothing() -> None:
    store = MemoryStore()
    store.hset(KEY, "state", {"version": 1, "state": {"memories": [{"id": "m1", "text": 7}]}})
    bus = EventBus()
    wm = WorkingMemory(bus, store=store, user_id="ada", continuum_id="c1")
    with pytest.raises(ValueError) as info:
        ProactiveMemoryTrinket(bus, wm)
    assert str(info.value) == (
        f"ProactiveMemoryTrinket: the state stored under '{KEY}' cannot be read (ValueError: "
        f"memories[0].text must be a str, got int); delete it with store.delete('{KEY}') to start "
        f"empty"
    )
    assert wm.trinket_names == []
