"""An edit that fires every turn (issue 47 item 2): a block of the cached prefix new on every
request never pays back; every_turn_edits names it, and %cache's advice says so."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from wm_kernel.cachesim import Block, Request, edit_economics, get_model, simulate
from wm_kernel.cachesim.advice import advise
from wm_kernel.cachesim.planner import every_turn_edits

T0 = datetime(2026, 11, 30, 9, tzinfo=UTC)
SONNET = get_model("claude-sonnet-4-6")


def _request(n: int, *, clock: str | None = None, note: str = "note", message: str | None = None) -> Request:
    """rules 3,000 (breakpoint, 5m) | time 50 (new when ``clock`` is) | docs 5,000 (breakpoint,
    5m) | the reply of turn n | a note after the breakpoint."""
    blocks = [
        Block("rules", 3_000, layer="system", label="base_prompt", breakpoint="5m"),
        Block(clock or "09:00", 50, layer="system", label="datetime (TimeManager)"),
        Block("docs", 5_000, layer="system", label="domaindoc (DomaindocTrinket)", breakpoint="5m"),
        Block(message or f"reply {n}", 200, label=f"assistant reply {n}"),
        Block(note, 30, label="notification (Hud)"),
    ]
    return Request(T0 + timedelta(minutes=n), blocks)


def test_a_section_new_on_every_request_high_in_the_prefix_never_pays_back() -> None:
    requests = [_request(n, clock=f"09:0{n}", note=f"note {n}") for n in range(4)]
    (found,) = every_turn_edits(requests, SONNET)
    assert (found.label, found.changed, found.compared, found.edit_point, found.readable, found.context) == (
        "datetime (TimeManager)",
        3,
        3,
        3_000,
        3_000,
        8_050,
    )
    # one change: the same 50 tokens in and out on a warm cache: a rewrite of everything after it
    expected = edit_economics(SONNET, context=8_050, edit_point=3_000, removed=50, added=50)
    assert found.economics == expected and math.isinf(found.economics.break_even_turns)
    assert found.economics.one_time_usd == pytest.approx((3.75 - 0.3) * 5_050 / 1e6, abs=1e-12)
    # brute force: the simulator bills the second request that much more than a still prefix
    moved = simulate(requests[:2], SONNET).turns["cost_usd"].iloc[1]
    still = simulate([requests[0], _request(1, clock="09:00", note="note 1")], SONNET).turns["cost_usd"].iloc[1]
    assert moved - still == pytest.approx(found.economics.one_time_usd, abs=1e-9)
    assert str(found) == (
        "`datetime (TimeManager)` changes on every request (3 of 3) at token 3,000 of the 8,050-token cached "
        "prefix: each change rewrites 5,050 tokens ($0.017423 a request on claude-sonnet-4-6) and saves "
        "nothing, so it never pays back (break-even infinite)"
    )


def test_what_is_not_an_every_turn_edit() -> None:
    # changed in two of three requests: not every turn
    mostly = [_request(0, clock="a"), _request(1, clock="b"), _request(2, clock="b"), _request(3, clock="c")]
    assert every_turn_edits(mostly, SONNET) == []
    # the note after the breakpoint is new every time, and the conversation grows: neither is an edit
    # of the cached prefix
    assert every_turn_edits([_request(n, note=f"n{n}") for n in range(4)], SONNET) == []
    # two requests are too few to say "every turn"; a prefix below the model's minimum caches nothing
    assert every_turn_edits([_request(0, clock="a"), _request(1, clock="b")], SONNET) == []
    small = [Request(T0, [Block(f"t{n}", 10, layer="system", label="time", breakpoint="5m")]) for n in range(3)]
    assert every_turn_edits(small, SONNET) == []


def test_the_advice_names_the_every_turn_edit_in_its_notes() -> None:
    requests = [_request(n, clock=f"09:0{n}") for n in range(4)]
    advice = advise(simulate(requests, SONNET))
    named = [n for n in advice.notes if n.startswith("an edit that fires every turn: ")]
    assert named == [f"an edit that fires every turn: {every_turn_edits(requests, SONNET)[0]}"]
    assert named[0] in str(advice)
    assert "an edit that fires every turn: `datetime (TimeManager)`" in advice._repr_html_()
    assert not any("every turn" in n for n in advise(simulate([_request(n) for n in range(4)], SONNET)).notes)


def test_without_a_breakpoint_before_it_the_whole_cached_prefix_is_written_again() -> None:
    def sent(n: int) -> Request:
        return Request(
            T0 + timedelta(minutes=n),
            [
                Block("rules", 3_000, layer="system", label="base_prompt"),
                Block(f"09:0{n}", 50, layer="system", label="datetime (TimeManager)"),
                Block("docs", 5_000, layer="system", label="docs", breakpoint="5m"),
            ],
        )

    requests = [sent(n) for n in range(3)]
    (found,) = every_turn_edits(requests, SONNET)
    assert (found.edit_point, found.readable, found.context) == (3_000, 0, 8_050)
    billed = simulate(requests, SONNET).turns["cost_usd"].iloc[1]
    still = simulate([requests[0], requests[0]], SONNET).turns["cost_usd"].iloc[1]
    assert billed - still == pytest.approx(found.economics.one_time_usd, abs=1e-9)
    assert "each change rewrites 8,050 tokens" in str(found)
