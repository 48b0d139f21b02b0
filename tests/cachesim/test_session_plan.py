"""Session.plan(): a segment collapse and a tool-result clear priced now and at the next cold miss."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from wm_kernel import Layout, ManualClock, Profile, Session
from wm_kernel.cachesim import Block, Request, edit_economics, get_model
from wm_kernel.cachesim.session_plan import NOW_WITHIN_TURNS, PLAN_COLUMNS, plan_edits

T0 = datetime(2026, 11, 30, 9, tzinfo=UTC)
SONNET = get_model("claude-sonnet-4-6")


def _request() -> Request:
    """system 10,000 | tool results 3,000 | conversation 30,000 (cached to its last user message,
    5 minutes) | a stateful section 200 after it."""
    return Request(
        T0,
        [
            Block("system", 10_000, breakpoint="5m", layer="system", label="base_prompt"),
            Block("results", 3_000, layer="system", label="context_search_results (GetContextTrinket)"),
            Block("u1", 4_000, label="user message 1"),
            Block("a1", 25_000, label="assistant reply 1"),
            Block("u2", 1_000, breakpoint="5m", label="user message 2"),
            Block("pg", 200, label="peanutgallery_guidance (PeanutGalleryTrinket)"),
        ],
    )


def _plan(now: datetime, summary: int = 500) -> dict[str, dict[str, object]]:
    frame = plan_edits(
        _request(),
        SONNET,
        now=now,
        cleared=["peanutgallery_guidance", "context_search_results"],
        tool_sections=["context_search_results"],
        summary_tokens=summary,
    )
    assert list(frame.columns) == list(PLAN_COLUMNS)
    return {row["edit"]: row for row in frame.to_dict("records")}


def test_a_tool_result_clear_on_a_warm_cache_waits_for_the_cold_miss() -> None:
    clear = _plan(T0 + timedelta(minutes=1))["tool-result clear"]
    expected = edit_economics(SONNET, context=43_000, edit_point=10_000, removed=3_000)
    assert (clear["context"], clear["edit_point"], clear["removed"], clear["added"]) == (43_000, 10_000, 3_000, 0)
    assert clear["warm_now"] is True and clear["cold_at"] == T0 + timedelta(minutes=5)
    assert clear["now_usd"] == pytest.approx(expected.one_time_usd, abs=1e-12)
    assert clear["now_usd"] == pytest.approx((1.25 * 30_000 - 0.1 * 33_000) * 3 / 1e6, abs=1e-12)
    assert clear["at_cold_miss_usd"] == pytest.approx(-3.75 * 3_000 / 1e6, abs=1e-12)
    assert clear["break_even_now"] == pytest.approx(114.0, abs=1e-9)
    assert clear["recommended"] == (
        "at the next cold miss (after 2026-11-30 09:05:00 UTC, if no request comes before): "
        "$0.102600 now pays back only after 114.0 turns"
    )


def test_an_edit_that_pays_back_within_a_turn_runs_now_not_at_the_cold_miss() -> None:
    # clearing 60,000 tokens of tool results rewrites only the 8,000 tokens of conversation after
    # them: 3.75 x 8,000 + 0.3 x 10,000 - 0.3 x 78,000 = $0.0096 now, 0.3 x 60,000 = $0.018 a turn
    request = Request(
        T0,
        [
            Block("system", 10_000, breakpoint="5m", layer="system", label="base_prompt"),
            Block("results", 60_000, layer="system", label="context_search_results (GetContextTrinket)"),
            Block("u1", 8_000, breakpoint="5m", label="user message 1"),
        ],
    )
    plan = plan_edits(
        request, SONNET, now=T0 + timedelta(minutes=1), cleared=[], tool_sections=["context_search_results"]
    )
    clear = plan.to_dict("records")[1]
    expected = edit_economics(SONNET, context=78_000, edit_point=10_000, removed=60_000)
    assert clear["now_usd"] == pytest.approx(expected.one_time_usd, abs=1e-12) and clear["now_usd"] > 0
    assert clear["break_even_now"] == pytest.approx(expected.break_even_turns, abs=1e-9)
    assert 0 < clear["break_even_now"] <= NOW_WITHIN_TURNS
    assert (clear["now_usd"], clear["saving_per_turn_usd"]) == (pytest.approx(0.0096), pytest.approx(0.018))
    assert clear["recommended"] == "now: $0.009600 now pays back within a turn (0.5)"


def test_a_collapse_that_removes_the_whole_cached_tail_saves_at_once() -> None:
    collapse = _plan(T0 + timedelta(minutes=1))["segment collapse"]
    # removed: the tool results and the conversation (33,000 cached) and the stateful section (200 after)
    assert (collapse["edit_point"], collapse["removed"], collapse["added"]) == (10_000, 33_200, 500)
    expected = edit_economics(SONNET, context=43_000, edit_point=10_000, removed=33_000, added=500)
    assert collapse["now_usd"] == pytest.approx(expected.one_time_usd, abs=1e-12) and collapse["now_usd"] < 0
    assert collapse["saving_per_turn_usd"] == pytest.approx(expected.saving_per_turn_usd + 200 * 3 / 1e6, abs=1e-12)
    assert collapse["break_even_now"] == 0.0 and collapse["recommended"] == "now: it costs nothing now"


def test_past_the_ttl_every_edit_is_at_the_cold_miss_and_a_growing_one_never_pays() -> None:
    plan = _plan(T0 + timedelta(minutes=6))
    assert plan["tool-result clear"]["warm_now"] is False and plan["tool-result clear"]["cold_at"] is None
    assert plan["tool-result clear"]["now_usd"] == plan["tool-result clear"]["at_cold_miss_usd"] < 0
    warm_growing = _plan(T0 + timedelta(minutes=1), summary=40_000)["segment collapse"]
    assert warm_growing["saving_per_turn_usd"] < 0 and warm_growing["break_even_now"] == math.inf
    assert warm_growing["recommended"] == (
        "never: it saves nothing a turn and rewrites the cache (break-even infinite)"
    )


def test_a_session_plans_its_own_collapse() -> None:
    s = Session(
        base_prompt="You help {first_name}. " + "Rules. " * 800,
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        layout=Layout.original(),
    )
    s.compose()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=2)
    s.advance_turn()
    s.compose()
    s.clock.advance(minutes=1)
    s.advance_turn()
    s.compose()
    plan = s.plan(summary_tokens=10)
    collapse, clear = plan.to_dict("records")
    assert collapse["edit"] == "segment collapse" and collapse["removed"] > 0 and collapse["warm_now"]
    assert clear["recommended"] == "nothing to remove"
    with pytest.raises(ValueError, match="summary_tokens"):
        s.plan(summary_tokens=-1)
