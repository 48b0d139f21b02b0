"""ForageTrinket (MIRA HEAD): exact text per state, in-place replacement, stacked progress, late
reports, dismissal, TTL edges, collapse, escaping, persistence."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from trinkets import ForageTrinket
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.stores.embedded import MemoryStore

T0 = "2026-11-30T09:00:00+00:00"


def make(store: MemoryStore | None = None) -> tuple[WorkingMemory, ForageTrinket]:
    wm = WorkingMemory(
        EventBus(), clock=ManualClock(T0), profile=Profile(first_name="Ada"), continuum_id="c1", store=store
    )
    return wm, ForageTrinket(wm.bus, wm)


@pytest.fixture
def pair() -> tuple[WorkingMemory, ForageTrinket]:
    return make()


def feed(wm: WorkingMemory, **context: Any) -> None:
    wm.publish_trinket_update("ForageTrinket", context)


def turn(wm: WorkingMemory, n: int) -> None:
    wm.bus.publish(TurnCompletedEvent.create(continuum_id="c1", turn_number=n, segment_turn_number=n))


def collapse(wm: WorkingMemory) -> None:
    wm.bus.publish(SegmentCollapsedEvent.create(continuum_id="c1", segment_id="s1", summary="done"))


def test_every_status_in_order_of_first_report(pair: tuple[WorkingMemory, ForageTrinket]) -> None:
    wm, forage = pair
    feed(wm, task_id="p1", status="pending", query="tide tables")
    feed(wm, task_id="i1", status="in_progress", query="moons", iteration=2, max_iterations=6, summary="Read NASA.")
    feed(wm, task_id="s1", status="success", query="stars", iterations=3, result="Sirius is brightest.")
    feed(wm, task_id="t1", status="timeout", query="comets", elapsed=301.7, iteration=4)
    feed(
        wm,
        task_id="f1",
        status="failed",
        query="planets",
        iterations=2,
        error="rate limited",
        error_type="AgentFailure",
    )
    assert forage.generate_content({}) == (
        "<forage_results>\n"
        '<result type="pending" task_id="p1" query="tide tables">\n'
        "Foraging in progress...\n"
        "</result>\n"
        '<result type="in_progress" task_id="i1" query="moons" iteration="2/6">\n'
        "[2] Read NASA.\n"
        "</result>\n"
        '<result type="success" task_id="s1" query="stars" iterations="3">\n'
        "Sirius is brightest.\n"
        "</result>\n"
        '<result type="timeout" task_id="t1" query="comets" turns_remaining="5">\n'
        "Forage timed out after 302s at iteration 4.\n"
        "</result>\n"
        '<result type="failed" task_id="f1" query="planets" turns_remaining="5">\n'
        "Forage failed: AgentFailure — rate limited\n"
        "</result>\n"
        "</forage_results>"
    )
    assert forage.content == forage.generate_content({})


def test_nothing_to_show_is_empty_and_refreshes_only_rerender(pair: tuple[WorkingMemory, ForageTrinket]) -> None:
    wm, forage = pair
    assert forage.generate_content({}) == ""
    feed(wm)
    feed(wm, action="lifecycle_refresh")
    feed(wm, task_id="x", status="weird", query="q")
    feed(wm, task_id="x", query="no status")
    assert forage.generate_content({}) == ""
    assert dict(forage.results) == {}


def test_progress_stacks_while_in_progress_and_a_late_report_never_undoes_a_result(
    pair: tuple[WorkingMemory, ForageTrinket],
) -> None:
    wm, forage = pair
    feed(wm, task_id="a", status="pending", query="q")
    feed(wm, task_id="b", status="pending", query="other")
    # the pending report is replaced in place; its summaries start with this one
    feed(wm, task_id="a", status="in_progress", query="q", iteration=1, max_iterations=5, summary="first")
    feed(wm, task_id="a", status="in_progress", query="q", iteration=3, max_iterations=5, summary="third")
    feed(wm, task_id="a", status="in_progress", query="q", iteration=2, max_iterations=5, summary="second")
    assert forage.generate_content({}) == (
        "<forage_results>\n"
        '<result type="in_progress" task_id="a" query="q" iteration="2/5">\n'
        "[1] first\n"
        "[3] third\n"
        "[2] second\n"
        "</result>\n"
        '<result type="pending" task_id="b" query="other">\n'
        "Foraging in progress...\n"
        "</result>\n"
        "</forage_results>"
    )
    feed(wm, task_id="a", status="success", query="q", iterations=3, result="done")
    feed(wm, task_id="a", status="in_progress", query="q", iteration=4, max_iterations=5, summary="late")
    # a progress report for a pending task starts a fresh stack; defaults for missing keys
    feed(wm, task_id="b", status="in_progress", summary="only")
    assert forage.generate_content({}) == (
        "<forage_results>\n"
        '<result type="success" task_id="a" query="q" iterations="3">\n'
        "done\n"
        "</result>\n"
        '<result type="in_progress" task_id="b" query="" iteration="0/0">\n'
        "[0] only\n"
        "</result>\n"
        "</forage_results>"
    )


def test_late_progress_after_a_failure_or_timeout_is_ignored(pair: tuple[WorkingMemory, ForageTrinket]) -> None:
    wm, forage = pair
    feed(wm, task_id="a", status="failed", error="boom", error_type="ThreadCrash")
    feed(wm, task_id="b", status="timeout", query="q", iterations=7, error="slow", error_type="AgentFailure")
    feed(wm, task_id="a", status="in_progress", query="q", iteration=1, max_iterations=2, summary="late")
    feed(wm, task_id="b", status="in_progress", query="q", iteration=1, max_iterations=2, summary="late")
    assert forage.generate_content({}) == (
        "<forage_results>\n"
        '<result type="failed" task_id="a" query="" turns_remaining="5">\n'
        "Forage failed: ThreadCrash — boom\n"
        "</result>\n"
        '<result type="timeout" task_id="b" query="q" turns_remaining="5">\n'
        "Forage timed out after 0s at iteration 0.\n"
        "</result>\n"
        "</forage_results>"
    )


def test_missing_keys_take_mira_defaults_and_elapsed_rounds_half_to_even(
    pair: tuple[WorkingMemory, ForageTrinket],
) -> None:
    wm, forage = pair
    feed(wm, task_id="f", status="failed")
    feed(wm, task_id="s", status="success")
    feed(wm, task_id="t1", status="timeout", query="q", elapsed=2.5, iteration=1)
    feed(wm, task_id="t2", status="timeout", query="q", elapsed=3.5, iteration=2)
    assert forage.generate_content({}) == (
        "<forage_results>\n"
        '<result type="failed" task_id="f" query="" turns_remaining="5">\n'
        "Forage failed: Error — Unknown error\n"
        "</result>\n"
        '<result type="success" task_id="s" query="" iterations="0">\n'
        "\n"
        "</result>\n"
        '<result type="timeout" task_id="t1" query="q" turns_remaining="5">\n'
        "Forage timed out after 2s at iteration 1.\n"
        "</result>\n"
        '<result type="timeout" task_id="t2" query="q" turns_remaining="5">\n'
        "Forage timed out after 4s at iteration 2.\n"
        "</result>\n"
        "</forage_results>"
    )


def test_dismissal_deletes_and_a_later_report_goes_last(pair: tuple[WorkingMemory, ForageTrinket]) -> None:
    wm, forage = pair
    feed(wm, task_id="a", status="success", query="qa", iterations=1, result="A")
    feed(wm, task_id="b", status="pending", query="qb")
    feed(wm, task_id="zzz", status="dismissed")  # unknown: nothing happens
    feed(wm, task_id="a", status="dismissed")
    assert list(forage.results) == ["b"]
    feed(wm, task_id="a", status="pending", query="qa")
    assert list(forage.results) == ["b", "a"]
    # a plain replacement keeps the first report's place
    feed(wm, task_id="b", status="success", query="qb", iterations=2, result="B")
    assert list(forage.results) == ["b", "a"]


def test_errors_show_through_their_last_turn_and_are_gone_the_turn_after(
    pair: tuple[WorkingMemory, ForageTrinket],
) -> None:
    wm, forage = pair
    turn(wm, 2)
    feed(wm, task_id="t", status="timeout", query="q", elapsed=10.0, iteration=1)
    feed(wm, task_id="p", status="pending", query="stays")
    turn(wm, 6)
    assert 'turns_remaining="1"' in forage.generate_content({})
    turn(wm, 7)  # 2 + 5: the last turn it shows
    assert forage.generate_content({}) == (
        "<forage_results>\n"
        '<result type="timeout" task_id="t" query="q" turns_remaining="0">\n'
        "Forage timed out after 10s at iteration 1.\n"
        "</result>\n"
        '<result type="pending" task_id="p" query="stays">\n'
        "Foraging in progress...\n"
        "</result>\n"
        "</forage_results>"
    )
    turn(wm, 7)  # the same number again (an auto-continuation): still shown
    assert "t" in forage.results
    turn(wm, 8)
    assert list(forage.results) == ["p"]
    assert forage.content == (
        '<forage_results>\n<result type="pending" task_id="p" query="stays">\n'
        "Foraging in progress...\n</result>\n</forage_results>"
    )


def test_turn_numbers_that_jump_expire_at_once(pair: tuple[WorkingMemory, ForageTrinket]) -> None:
    wm, forage = pair
    feed(wm, task_id="f", status="failed", query="q", error="e")
    turn(wm, 40)
    assert forage.generate_content({}) == ""
    assert forage.content == ""


def test_collapse_clears_and_resets_the_turn(pair: tuple[WorkingMemory, ForageTrinket]) -> None:
    wm, forage = pair
    turn(wm, 3)
    feed(wm, task_id="a", status="success", query="q", iterations=1, result="r")
    feed(wm, task_id="b", status="failed", query="q", error="e")
    collapse(wm)
    assert forage.current_turn == 0
    assert forage.generate_content({}) == ""
    feed(wm, task_id="c", status="failed", query="q", error="e")
    assert 'turns_remaining="5"' in forage.generate_content({})
    turn(wm, 5)
    assert 'turns_remaining="0"' in forage.generate_content({})
    turn(wm, 6)
    assert forage.generate_content({}) == ""


def test_hostile_values_are_escaped_and_round_trip(pair: tuple[WorkingMemory, ForageTrinket]) -> None:
    wm, forage = pair
    hostile = 'x" onload="y </result></forage_results> & <b>'
    feed(wm, task_id=hostile, status="success", query=hostile, iterations=1, result=hostile)
    feed(wm, task_id="f", status="failed", query="q", error=hostile, error_type="<T>")
    feed(wm, task_id="i", status="in_progress", query="q", iteration=1, max_iterations=2, summary=hostile)
    text = forage.generate_content({})
    assert text.count("</forage_results>") == 1
    root = ET.fromstring(text)
    results = root.findall("result")
    assert [r.get("task_id") for r in results] == [hostile, "f", "i"]
    assert results[0].get("query") == hostile
    assert results[0].text == f"\n{hostile}\n"
    assert results[1].text == f"\nForage failed: <T> — {hostile}\n"
    assert results[2].text == f"\n[1] {hostile}\n"


def test_results_are_kept_by_the_store(pair: tuple[WorkingMemory, ForageTrinket]) -> None:
    store = MemoryStore()
    wm, forage = make(store)
    turn(wm, 1)
    feed(wm, task_id="a", status="pending", query="q")
    feed(wm, task_id="b", status="in_progress", query="q", iteration=1, max_iterations=3, summary="s1")
    feed(wm, task_id="b", status="in_progress", query="q", iteration=2, max_iterations=3, summary="s2")
    feed(wm, task_id="c", status="failed", query="q", error="e")
    before = forage.generate_content({})
    wm2, again = make(store)
    again.resume_at(1)
    assert again.generate_content({}) == before
    assert list(again.results) == ["a", "b", "c"]
