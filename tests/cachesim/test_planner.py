"""edit_economics: the closed form of planner.md section 1, its worked cases on several Anthropic
models, brute force over the simulator, and each validation error."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from wm_kernel.cachesim import Block, EditEconomics, Request, edit_economics, get_model, simulate
from wm_kernel.cachesim.models import priced_as

ANTHROPIC = ["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5-20251001", "claude-opus-4-8"]
T0 = datetime(2026, 1, 5, 10, tzinfo=UTC)


def _input_price(model: str) -> float:
    """US$ per token of plain input."""
    return get_model(model).input / 1e6


@pytest.mark.parametrize("model", ANTHROPIC)
def test_o1_warm_clearing_pays_back_after_17_4_turns(model: str) -> None:
    e = edit_economics(model, context=150_000, edit_point=20_000, removed=50_000)
    p = _input_price(model)
    assert e.one_time_usd == pytest.approx(87_000 * p, abs=1e-9)
    assert e.saving_per_turn_usd == pytest.approx(5_000 * p, abs=1e-9)
    assert e.break_even_turns == pytest.approx(17.4, abs=0.05)
    assert isinstance(e, EditEconomics) and e.warm and e.ttl == "5m"


def test_o1_in_dollars_on_opus_4_6() -> None:
    e = edit_economics("claude-opus-4-6", context=150_000, edit_point=20_000, removed=50_000)
    assert e.one_time_usd == pytest.approx(0.435, abs=1e-9)
    assert e.saving_per_turn_usd == pytest.approx(0.025, abs=1e-9)
    one_hour = edit_economics("claude-opus-4-6", context=150_000, edit_point=20_000, removed=50_000, ttl="1h")
    assert one_hour.one_time_usd == pytest.approx(0.735, abs=1e-9)


@pytest.mark.parametrize("model", ANTHROPIC)
def test_the_same_edit_at_one_hour_pays_back_after_29_4_turns(model: str) -> None:
    five = edit_economics(model, context=150_000, edit_point=20_000, removed=50_000)
    hour = edit_economics(model, context=150_000, edit_point=20_000, removed=50_000, ttl="1h")
    p = _input_price(model)
    assert hour.one_time_usd == pytest.approx(147_000 * p, abs=1e-9)
    assert hour.break_even_turns == pytest.approx(29.4, abs=0.05)
    assert hour.one_time_usd - five.one_time_usd == pytest.approx(0.75 * (150_000 - 20_000 - 50_000) * p, abs=1e-9)


@pytest.mark.parametrize("model", ANTHROPIC)
@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_a_cold_edit_only_saves(model: str, ttl: str) -> None:
    e = edit_economics(model, context=150_000, edit_point=20_000, removed=50_000, added=2_000, warm=False, ttl=ttl)
    write = get_model(model).write_price(ttl) / 1e6
    assert e.one_time_usd == pytest.approx(-write * 48_000, abs=1e-9)
    assert e.one_time_usd < 0 and e.break_even_turns == 0.0
    same = edit_economics(model, context=150_000, edit_point=20_000, removed=5_000, added=5_000, warm=False, ttl=ttl)
    assert same.one_time_usd == 0.0 and same.break_even_turns == 0.0


@pytest.mark.parametrize("model", ANTHROPIC)
def test_o4_an_edit_that_saves_nothing_never_pays_back(model: str) -> None:
    profile = get_model(model)
    e = edit_economics(model, context=150_000, edit_point=20_000, removed=3_000, added=3_000)
    assert e.one_time_usd == pytest.approx((profile.writes["5m"] - profile.read) / 1e6 * 130_000, abs=1e-9)
    assert e.saving_per_turn_usd == 0.0 and e.break_even_turns == math.inf
    more = edit_economics(model, context=150_000, edit_point=20_000, removed=3_000, added=4_000)
    assert more.saving_per_turn_usd < 0 and more.break_even_turns == math.inf


def _brute(model: str, c: int, e: int, x: int, s: int, warm: bool, ttl: str) -> tuple[float, float]:
    """The next request's price without and with the edit, played through the simulator: the
    prefix [e | X | rest] cached with breakpoints after e and at the end, then sent again (warm:
    a minute later; cold: past every TTL) as it was, or edited to [e | s | rest]."""
    rest = c - e - x
    first = [Block("e", e, breakpoint=ttl), Block("x", x), Block("rest", rest, breakpoint=ttl)]
    edited = [Block("e", e, breakpoint=ttl), Block("s", s), Block("rest-after-edit", rest, breakpoint=ttl)]
    later = T0 + (timedelta(minutes=1) if warm else timedelta(hours=3))
    prices = []
    for second in (first, edited):
        sim = simulate([Request(T0, first), Request(later, second)], model)
        prices.append(float(sim.turns["cost_usd"].iloc[1]))
    return prices[0], prices[1]


@pytest.mark.parametrize("model", ["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5"])
@pytest.mark.parametrize(
    ("c", "e", "x", "s"),
    [
        (150_000, 20_000, 50_000, 0),
        (150_000, 20_000, 50_000, 2_000),
        (150_000, 20_000, 3_000, 3_000),
        (150_000, 20_000, 3_000, 9_000),
        (40_000, 8_000, 32_000, 500),
        (60_000, 5_000, 0, 700),
    ],
)
@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_every_figure_equals_brute_force_over_the_engine(
    model: str, c: int, e: int, x: int, s: int, warm: bool, ttl: str
) -> None:
    found = edit_economics(model, context=c, edit_point=e, removed=x, added=s, warm=warm, ttl=ttl)
    without, with_edit = _brute(model, c, e, x, s, warm, ttl)
    assert found.without_edit_usd == pytest.approx(without, abs=1e-9)
    assert found.with_edit_usd == pytest.approx(with_edit, abs=1e-9)
    assert found.one_time_usd == pytest.approx(with_edit - without, abs=1e-9)
    # each later request: the edited prompt read whole, against the unedited one read whole
    after = [Block("e", e, breakpoint=ttl), Block("s", s), Block("rest-after-edit", c - e - x, breakpoint=ttl)]
    before = [Block("e", e, breakpoint=ttl), Block("x", x), Block("rest", c - e - x, breakpoint=ttl)]
    later = T0 + timedelta(minutes=1)
    read_after = simulate([Request(T0, after), Request(later, after)], model).turns["cost_usd"].iloc[1]
    read_before = simulate([Request(T0, before), Request(later, before)], model).turns["cost_usd"].iloc[1]
    assert found.saving_per_turn_usd == pytest.approx(read_before - read_after, abs=1e-9)


def test_a_profile_is_taken_as_is_and_an_unpriced_one_has_no_dollars() -> None:
    profile = get_model("claude-sonnet-4-6")
    assert edit_economics(profile, context=10_000, edit_point=2_000, removed=1_000).model == "claude-sonnet-4-6"
    unpriced = priced_as("claude-3-sonnet-20240229").profile
    e = edit_economics(unpriced, context=10_000, edit_point=2_000, removed=1_000)
    assert math.isnan(e.one_time_usd) and math.isnan(e.saving_per_turn_usd) and math.isnan(e.break_even_turns)


def test_the_line_it_reads_as() -> None:
    e = edit_economics("claude-opus-4-6", context=150_000, edit_point=20_000, removed=50_000)
    assert str(e) == (
        "removing 50,000 tokens at 20,000 of 150,000 (adding 0) on a warm cache, 5m TTL, claude-opus-4-6: "
        "$0.435000 now, $0.025000 saved a turn, pays back after 17.4 turns"
    )


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"context": -1}, "context"),
        ({"context": True}, "context"),
        ({"context": 1.5}, "context"),
        ({"edit_point": False}, "edit_point"),
        ({"edit_point": "3"}, "edit_point"),
        ({"removed": -5}, "removed"),
        ({"added": None}, "added"),
        ({"edit_point": 9_000, "removed": 2_000}, "edit_point + removed"),
        ({"removed": 0, "added": 0}, "removed and added"),
        ({"ttl": "10m"}, "ttl"),
        ({"ttl": "default"}, "ttl"),
        ({"warm": 1}, "warm"),
        ({"model": "claude-sonnet-9"}, "model"),
        ({"model": 3}, "model"),
    ],
)
def test_each_validation_error_names_its_argument(options: dict[str, object], named: str) -> None:
    given: dict[str, object] = {
        "model": "claude-opus-4-6",
        "context": 10_000,
        "edit_point": 2_000,
        "removed": 1_000,
    }
    given.update(options)
    model = given.pop("model")
    with pytest.raises(ValueError, match=named.replace("+", r"\+")):
        edit_economics(model, **given)  # type: ignore[arg-type]
