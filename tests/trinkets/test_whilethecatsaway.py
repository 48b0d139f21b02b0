"""WhileTheCatsAwayTrinket (MIRA HEAD): exact text per status, 8-turn TTL edges for every status,
in-place replacement, collapse, escaping, persistence."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from trinkets import WhileTheCatsAwayTrinket
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.stores.embedded import MemoryStore


def make(store: MemoryStore | None = None) -> tuple[WorkingMemory, WhileTheCatsAwayTrinket]:
    wm = WorkingMemory(
        EventBus(), clock=ManualClock("2026-11-30T09:00:00+00:00"), profile=Profile(), continuum_id="c1", store=store
    )
    return wm, WhileTheCatsAwayTrinket(wm.bus, wm)


@pytest.fixture
def pair() -> tuple[WorkingMemory, WhileTheCatsAwayTrinket]:
    return make()


def feed(wm: WorkingMemory, **context: Any) -> None:
    wm.publish_trinket_update("WhileTheCatsAwayTrinket", context)


def turn(wm: WorkingMemory, n: int) -> None:
    wm.bus.publish(TurnCompletedEvent.create(continuum_id="c1", turn_number=n, segment_turn_number=n))


def test_every_status_exactly(pair: tuple[WorkingMemory, WhileTheCatsAwayTrinket]) -> None:
    wm, cats = pair
    feed(wm, task_id="w1", status="success", topic="tides", result="Spring tides peak Friday.")
    feed(wm, task_id="w2", status="timeout", topic="moons", error="took too long")
    feed(wm, task_id="w3", status="failed", topic="stars", error="no network")
    feed(wm, task_id="w4", status="failed")
    assert cats.generate_content({}) == (
        "<whilethecatsaway_results>\n"
        '<result type="success" task_id="w1" topic="tides">\n'
        "Spring tides peak Friday.\n"
        "</result>\n"
        '<result type="timeout" task_id="w2" topic="moons" turns_remaining="8">\n'
        "Background research timed out.\n"
        "</result>\n"
        '<result type="failed" task_id="w3" topic="stars" turns_remaining="8">\n'
        "Background research failed: no network\n"
        "</result>\n"
        '<result type="failed" task_id="w4" topic="" turns_remaining="8">\n'
        "Background research failed: Unknown error\n"
        "</result>\n"
        "</whilethecatsaway_results>"
    )


def test_other_statuses_and_no_task_id_store_nothing(pair: tuple[WorkingMemory, WhileTheCatsAwayTrinket]) -> None:
    wm, cats = pair
    feed(wm, task_id="w", status="pending", topic="t")
    feed(wm, task_id="w", status="dismissed")
    feed(wm, status="success", topic="t", result="r")
    feed(wm)
    assert cats.generate_content({}) == ""


def test_every_result_lives_eight_turns_and_a_success_too(pair: tuple[WorkingMemory, WhileTheCatsAwayTrinket]) -> None:
    wm, cats = pair
    turn(wm, 1)
    feed(wm, task_id="a", status="success", topic="t", result="r")
    turn(wm, 3)
    feed(wm, task_id="b", status="failed", topic="u", error="e")
    turn(wm, 9)  # a's last turn (1 + 8)
    assert cats.generate_content({}) == (
        "<whilethecatsaway_results>\n"
        '<result type="success" task_id="a" topic="t">\n'
        "r\n"
        "</result>\n"
        '<result type="failed" task_id="b" topic="u" turns_remaining="2">\n'
        "Background research failed: e\n"
        "</result>\n"
        "</whilethecatsaway_results>"
    )
    turn(wm, 10)
    assert list(cats.results) == ["b"]
    turn(wm, 11)
    assert 'turns_remaining="0"' in cats.generate_content({})  # content: at the next compose
    turn(wm, 12)
    assert cats.generate_content({}) == "" and cats.content == ""


def test_a_second_report_replaces_in_place_with_a_new_ttl(pair: tuple[WorkingMemory, WhileTheCatsAwayTrinket]) -> None:
    wm, cats = pair
    feed(wm, task_id="a", status="timeout", topic="t")
    feed(wm, task_id="b", status="timeout", topic="u")
    turn(wm, 4)
    feed(wm, task_id="a", status="success", topic="t", result="late but done")
    assert list(cats.results) == ["a", "b"]
    turn(wm, 9)
    assert list(cats.results) == ["a"]
    turn(wm, 12)
    assert cats.results["a"].until == 12 and cats.generate_content({}).startswith("<whilethecatsaway_results>")
    turn(wm, 13)
    assert cats.generate_content({}) == ""


def test_collapse_clears(pair: tuple[WorkingMemory, WhileTheCatsAwayTrinket]) -> None:
    wm, cats = pair
    turn(wm, 2)
    feed(wm, task_id="a", status="success", topic="t", result="r")
    wm.bus.publish(SegmentCollapsedEvent.create(continuum_id="c1", segment_id="s", summary="x"))
    assert cats.generate_content({}) == "" and cats.current_turn == 0


def test_hostile_values_round_trip(pair: tuple[WorkingMemory, WhileTheCatsAwayTrinket]) -> None:
    wm, cats = pair
    hostile = "\"><x/></whilethecatsaway_results> & 'q'"
    feed(wm, task_id=hostile, status="success", topic=hostile, result=hostile)
    feed(wm, task_id="f", status="failed", topic="t", error=hostile)
    root = ET.fromstring(cats.generate_content({}))
    first, second = root.findall("result")
    assert (first.get("task_id"), first.get("topic"), first.text) == (hostile, hostile, f"\n{hostile}\n")
    assert second.text == f"\nBackground research failed: {hostile}\n"


def test_results_are_kept_by_the_store() -> None:
    store = MemoryStore()
    wm, cats = make(store)
    feed(wm, task_id="a", status="success", topic="t", result="r")
    feed(wm, task_id="b", status="failed", topic="u", error="e")
    _, again = make(store)
    assert again.generate_content({}) == cats.generate_content({})
