"""The original's recorded output per trinket (tests/data/trinket_examples.json), byte for byte.

Each case gives the state (calls on the trinket, turns, collapses), the clock, the profile and the
exact section text the original system produced from that state. The default style of every
trinket must reproduce it exactly; a difference is a bug unless docs/deviations.md lists it (and then
the case's state contains markup characters, which these recorded cases avoid).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import trinkets
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory

DATA = json.loads((Path(__file__).parent.parent / "data" / "trinket_examples.json").read_text(encoding="utf-8"))
CASES = DATA["cases"]


def _ids(case: dict[str, Any]) -> str:
    return f"{case['component']}-{case['name']}"


def run_case(case: dict[str, Any]) -> str:
    """The section text wm-kernel composes for a recorded case (as ``how_to_feed`` describes)."""
    profile = case["profile"]
    clock = ManualClock(case["now"])
    if case["component"] == "placeholders":
        fields = dict(case["input"].get("profile_fields", {}))
        if profile.get("account_created_at") is not None:
            fields["account_created"] = profile["account_created_at"]
        wm = WorkingMemory(
            EventBus(),
            clock=clock,
            layout=Layout.original(),
            profile=Profile(first_name=profile["first_name"], timezone=profile["timezone"], **fields),
        )
        return wm.compose(case["input"]["base_prompt"])["cached_content"]
    wm = WorkingMemory(
        EventBus(), clock=clock, profile=Profile(first_name=profile["first_name"], timezone=profile["timezone"])
    )
    trinket = getattr(trinkets, case["component"])(wm.bus, wm)
    turn = segment_turn = segments = 0
    for call in case["input"]["calls"]:
        if call["call"] == "turn":
            turn += 1
            segment_turn += 1
            wm.bus.publish(
                TurnCompletedEvent.create(
                    continuum_id="c1",
                    user_id=wm.user_id,
                    clock=clock,
                    turn_number=turn,
                    segment_turn_number=segment_turn,
                )
            )
        elif call["call"] == "collapse":
            segments += 1
            segment_turn = 0
            wm.bus.publish(
                SegmentCollapsedEvent.create(
                    continuum_id="c1",
                    user_id=wm.user_id,
                    clock=clock,
                    segment_id=f"segment-{segments}",
                    summary="",
                    tools_used=(),
                )
            )
        elif call["call"] == "advance":
            clock.advance(**call["args"])
        else:
            getattr(trinket, call["call"])(**call.get("args", {}))
    return trinket.generate_content({})


#: Recorded cases where the original is wrong and wm-kernel deliberately differs (each a row of
#: docs/deviations.md): case id -> what wm-kernel writes instead, in full.
DEVIATIONS = {
    # a 25-hour day (Europe/Berlin, end of DST): the original's "today" is 24 hours from local
    # midnight and drops a reminder due at 11:30 PM; the calendar day keeps it
    "ReminderManager-dst_day_25_hours": (
        "<active_reminders>\n"
        "<instruction>Reminders require immediate action. When one is due or overdue, notify The "
        "User even if mid-conversation. They cannot see reminders unless you voice them. "
        "Non-negotiable.</instruction>\n"
        "<user_reminders>\n"
        "<today>\n"
        '<reminder id="r1" title="Late call" due="in 3 hours" time="23:30"/>\n'
        "<guidance>Please remind the user about these during the continuum when appropriate."
        "</guidance>\n"
        "</today>\n"
        "</user_reminders>\n"
        "</active_reminders>"
    ),
    # a collapse resets the segment's turn count even when nothing was stored: the timeout that
    # arrives at segment turn 0 shows through turn 5 (the original kept counting from turn 3)
    "GetContextTrinket-collapse_with_nothing_stored": (
        "=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ===\n\n"
        "⚠️ Context search timed out: 'q'\n\n"
        "The search exceeded 5 minutes (stopped at iteration 1 with 0 findings). Try rephrasing "
        "your query or tell the user the search was inconclusive.\n\n"
        "(This message will disappear in 4 turns)"
    ),
    # float noise of an upstream sum (a score a hair below 0.81): the original's int() shows 80
    "ProactiveMemoryTrinket-relevance_float_noise": (
        "<surfaced_memories>\n"
        '<memory id="mem_d0d00000" relevance="81">\n'
        "<text>Ada likes hiking</text>\n"
        "</memory>\n"
        "</surfaced_memories>"
    ),
    # temporal dates in the profile's zone (America/New_York): 2026-12-01T02:00Z is Nov 30 there
    "ProactiveMemoryTrinket-temporal_dates": (
        "<surfaced_memories>\n"
        '<memory id="mem_e0e00000">\n'
        "<text>Dentist appointment</text>\n"
        '<temporal expires="2026-12-01" happens="2026-11-30"/>\n'
        "</memory>\n"
        '<memory id="mem_f0f00000">\n'
        "<text>Flight to Lisbon</text>\n"
        '<temporal happens="2026-12-05"/>\n'
        "</memory>\n"
        "</surfaced_memories>"
    ),
    # dates of another year carry it: the original's "DEC 31" on Jan 3 reads as this year's
    "ManifestTrinket-year_boundary": (
        "<conversation_manifest>\n"
        '<date_group label="TODAY">\n'
        '<segment time="[11:30AM - ACTIVE]" status="active">Current conversation</segment>\n'
        "</date_group>\n"
        '<date_group label="YESTERDAY">\n'
        '<segment time="[10:00AM - 11:00AM]" status="collapsed">Resolutions</segment>\n'
        "</date_group>\n"
        '<date_group label="DEC 31, 2026">\n'
        '<segment time="[8:00PM - 9:00PM]" status="collapsed">New Year plans</segment>\n'
        "</date_group>\n"
        '<date_group label="DEC 28, 2026">\n'
        '<segment time="[3:00PM - 4:00PM]" status="collapsed">Christmas plans</segment>\n'
        "</date_group>\n"
        "</conversation_manifest>"
    ),
}

FAITHFUL = [c for c in CASES if _ids(c) not in DEVIATIONS]
DEVIATING = [c for c in CASES if _ids(c) in DEVIATIONS]


@pytest.mark.parametrize("case", FAITHFUL, ids=_ids)
def test_default_style_is_the_originals_text(case: dict[str, Any]) -> None:
    assert run_case(case) == case["expected"], case.get("notes", "")


@pytest.mark.parametrize("case", DEVIATING, ids=_ids)
def test_listed_deviation(case: dict[str, Any]) -> None:
    """The original's text is recorded, and ours differs from it exactly as the deviation says."""
    ours = run_case(case)
    assert ours == DEVIATIONS[_ids(case)]
    assert ours != case["expected"]


def test_every_deviation_names_a_recorded_case_and_a_row() -> None:
    rows = (Path(__file__).parents[2] / "docs" / "deviations.md").read_text(encoding="utf-8")
    assert set(DEVIATIONS) <= {_ids(c) for c in CASES}
    for case_id in DEVIATIONS:
        assert case_id in rows, f"docs/deviations.md has no row pinned by {case_id}"
