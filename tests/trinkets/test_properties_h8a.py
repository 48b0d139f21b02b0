"""Property tests for TimeManager, ProactiveMemoryTrinket and ManifestTrinket on random states.

In every style: the output parses as XML, keeps the order of what it was given (memories in the
order surfaced, date groups newest first, segments chronological inside a group), the original
style is the revised one without indentation where only indentation differs, and hostile text
(markup characters in titles, memory text, annotations, link types) round-trips through a parser.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trinkets.manifest_trinket import ManifestTrinket
from trinkets.proactive_memory_trinket import ProactiveMemoryTrinket
from trinkets.time_manager import TimeManager
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory

NOW = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ZONES = [
    "UTC",
    "Europe/London",
    "America/New_York",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Asia/Dubai",
    "America/Sao_Paulo",
    "Pacific/Chatham",
    "EST",
    "PST",
]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# benign text: no markup characters, as the recorded cases; hostile text: any printable text
# XML 1.0 can carry, markup characters included
benign = st.text(
    st.characters(whitelist_categories=("L", "N", "Zs"), max_codepoint=0x24F), min_size=1, max_size=30
).filter(lambda t: t.strip() != "")
hostile = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("<>&\"'\n"), min_size=1, max_size=30
).filter(lambda t: t.strip() != "")
instants = st.integers(min_value=-400 * 24 * 60, max_value=400 * 24 * 60).map(
    lambda minutes: NOW + timedelta(minutes=minutes)
)


def working_memory(zone: str, now: datetime = NOW) -> WorkingMemory:
    return WorkingMemory(EventBus(), clock=ManualClock(now), profile=Profile(timezone=zone))


def outputs(trinket: Any) -> dict[str, str]:
    """The section in every style the trinket offers (the style put back afterwards)."""
    shown = {}
    for style in trinket.styles:
        trinket.style = style
        shown[style] = trinket.generate_content({})
    trinket.style = "original"
    return shown


@SETTINGS
@given(zone=st.sampled_from(ZONES), now=instants)
def test_time_manager_parses_in_every_style(zone: str, now: datetime) -> None:
    tm = TimeManager(*(lambda wm: (wm.bus, wm))(working_memory(zone, now)))
    for style, text in outputs(tm).items():
        root = ET.fromstring(text)
        assert root.tag == "current_datetime" and list(root) == []
        assert re.fullmatch(r"TODAY IS [A-Z]+, [A-Z]+ \d\d, \d{4} AT \d{1,2}:\d\d [AP]M \S+\.", root.text or ""), (
            style,
            text,
        )


def memory_dicts(text: st.SearchStrategy[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    iso = instants.map(datetime.isoformat)
    link = st.fixed_dictionaries({"id": st.uuids().map(str), "text": text, "link_type": text})
    memory = st.fixed_dictionaries(
        {"text": text},
        optional={
            "created_at": iso,
            "similarity_score": st.floats(0, 1),
            "source": st.sampled_from(["global", "user"]),
            "expires_at": iso,
            "happens_at": iso,
            "annotations": st.lists(st.fixed_dictionaries({"text": text}, optional={"created_at": iso}), max_size=3),
            "linked_memories": st.lists(link, max_size=3),
        },
    )
    return st.lists(memory, min_size=1, max_size=5).map(
        lambda ms: [{**m, "id": f"{i:08d}-0000-4000-8000-000000000000"} for i, m in enumerate(ms)]
    )


def _lines(text: str | None) -> list[str]:
    """An element's text with each line's indentation removed (the styles' only difference there)."""
    return [line.strip() for line in (text or "").strip().splitlines()]


def check_memories(memories: list[dict[str, Any]], zone: str) -> None:
    wm = working_memory(zone)
    pm = ProactiveMemoryTrinket(wm.bus, wm)
    pm.surface(memories)
    shown = outputs(pm)
    for style, text in shown.items():
        root = ET.fromstring(text)
        assert root.tag == "surfaced_memories"
        found = root.findall("memory")
        assert [m.findtext("text") for m in found] == [m["text"] for m in memories], style
        for element, memory in zip(found, memories, strict=True):
            assert element.get("source") == ("global" if memory.get("source") == "global" else None)
            notes = element.findall("annotations/note")
            assert [n.text for n in notes] == [a["text"] for a in memory.get("annotations", [])]
            links = {link["id"]: link for link in reversed(memory.get("linked_memories", []))}
            context = element.findtext("context")
            if links:
                assert context is not None
                for link in links.values():
                    assert f"Also: {link['text']} ({link['link_type']}, " in context
    # the styles differ by indentation and date/relevance details only: same elements, same text
    original, revised = (ET.fromstring(shown[s]) for s in ("original", "revised"))
    assert [e.tag for e in original.iter()] == [e.tag for e in revised.iter()]
    assert [_lines(e.text) for e in original.iter()] == [_lines(e.text) for e in revised.iter()]
    # the original style indents no element (a value's own line breaks may start a line with
    # spaces, so only lines opening markup are checked)
    assert not any(line[:1].isspace() and line.lstrip().startswith("<") for line in shown["original"].splitlines())


@SETTINGS
@given(memories=memory_dicts(benign), zone=st.sampled_from(ZONES))
def test_benign_memories_parse_and_keep_their_order(memories: list[dict[str, Any]], zone: str) -> None:
    check_memories(memories, zone)


@SETTINGS
@given(memories=memory_dicts(hostile))
def test_hostile_memory_text_round_trips(memories: list[dict[str, Any]]) -> None:
    check_memories(memories, "UTC")


def segment_lists(text: st.SearchStrategy[str]) -> st.SearchStrategy[list[tuple[str, datetime, timedelta]]]:
    return st.lists(
        st.tuples(text, instants.filter(lambda t: t <= NOW), st.integers(0, 600).map(lambda m: timedelta(minutes=m))),
        min_size=1,
        max_size=12,
    )


def _gaps(root: ET.Element) -> list[str]:
    """The whitespace between elements, where indentation lives (never an element's own text)."""
    between = [e.text for e in root.iter() if len(e)] + [e.tail for e in root.iter()]
    return [gap for gap in between if gap and not gap.strip()]


def check_manifest(segments: list[tuple[str, datetime, timedelta]], zone: str, cap: int) -> None:
    wm = working_memory(zone)
    manifest = ManifestTrinket(wm.bus, wm)
    manifest.max_date_groups = cap
    for title, start, length in segments:
        manifest.add_segment(title, start, start + length)
    local = wm.profile.zone
    dates = sorted({start.astimezone(local).date() for _, start, _ in segments}, reverse=True)
    if cap:
        dates = dates[:cap]
    for style, text in outputs(manifest).items():
        root = ET.fromstring(text)
        groups = root.findall("date_group")
        assert len(groups) == len(dates), style  # one group per date, none merged
        labels = [g.get("label") for g in groups]
        assert len(set(labels)) == len(labels), style  # every label names one date
        for group, day in zip(groups, dates, strict=True):  # newest first
            expected = sorted(
                ((start, title) for title, start, _ in segments if start.astimezone(local).date() == day),
                key=lambda p: p[0],
            )
            titles = [seg.text for seg in group.findall("segment")]
            assert sorted(titles) == sorted(t for _, t in expected), style
            # chronological inside a group (ties between equal starts in either order)
            starts = [next(s for s, t in expected if t == title) for title in titles]
            assert starts == sorted(starts) or len(set(titles)) < len(titles), style
        if style == "original":  # no element indented (a title's own text may hold any spaces)
            assert not [gap for gap in _gaps(root) if gap.strip("\n")], text


@SETTINGS
@given(segments=segment_lists(benign), zone=st.sampled_from(ZONES), cap=st.integers(0, 4))
def test_benign_manifest_parses_and_keeps_its_order(
    segments: list[tuple[str, datetime, timedelta]], zone: str, cap: int
) -> None:
    check_manifest(segments, zone, cap)


@SETTINGS
@given(segments=segment_lists(hostile))
def test_hostile_titles_round_trip(segments: list[tuple[str, datetime, timedelta]]) -> None:
    check_manifest(segments, "America/New_York", 0)
