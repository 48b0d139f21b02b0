"""Growth forecast: linear and exponential feeds, when a limit is reached, and how sure it is."""

from __future__ import annotations

import pandas as pd
import pytest

from wm_kernel.core.clock import ManualClock
from wm_kernel.instruments.forecast import daily_cost, fit_growth, forecast
from wm_kernel.session import Session


def frame(sizes: list[int]) -> pd.DataFrame:
    """A history frame with one section of ``sizes[t]`` tokens at turn t, beside a fixed one."""
    rows = [{"turn": t, "section": "growing", "tokens": n, "dropped": False} for t, n in enumerate(sizes)]
    rows += [{"turn": t, "section": "base_prompt", "tokens": 100, "dropped": False} for t in range(len(sizes))]
    return pd.DataFrame(rows)


def test_a_linear_feed_reaches_its_limit_on_the_turn_the_line_says() -> None:
    f = forecast(frame([50 + 20 * t for t in range(20)]), window=10_150, section_limits={"growing": 4_000})
    assert f.sections["growing"].model == "linear"
    assert f.sections["growing"].rate == pytest.approx(20.0)
    assert f.sections["base_prompt"].model == "flat"
    (w_name, window), (l_name, limit) = f.crossings
    # prompt = 150 + 20 t: 10,150 at t = 500; section = 50 + 20 t: 4,000 at t = 197.5 -> 198
    assert (w_name, window.turn, l_name, limit.turn) == ("window", 500, "limit", 198)
    assert f.lines() == [
        "prompt reaches the window (10,150 tokens) near turn 500 (firm linear fit, r2 1.00)",
        "growing reaches the limit (4,000 tokens) near turn 198 (firm linear fit, r2 1.00)",
    ]


def test_an_exponential_feed_is_fitted_as_one() -> None:
    g = fit_growth(range(15), [round(40 * 1.2**t) for t in range(15)])
    assert g.model == "exponential" and g.rate == pytest.approx(0.2, abs=0.01)
    # 40 * 1.2^t >= 100,000 from t = 42.9
    assert g.turn_reaching(100_000) == 43
    low, high = g.turns_reaching(100_000)
    assert low is not None and high is not None and low <= 43 <= high


def test_noise_widens_the_band_and_lowers_the_sureness() -> None:
    noisy = [100 + 5 * t + (40 if t % 2 else -40) for t in range(12)]
    g = fit_growth(range(12), noisy)
    assert g.model == "linear" and g.sureness in ("rough", "weak")
    low, high = g.turns_reaching(1_000)
    assert low is not None and (high is None or high - low > 20)  # None: the band reaches no growth


def test_a_shrinking_or_flat_series_never_reaches_a_limit_and_says_so() -> None:
    f = forecast(frame([500 - 10 * t for t in range(10)]), window=100_000)
    assert f.crossings[0][1].turn is None
    assert f.lines() == ["prompt does not grow toward the window (linear fit)"]
    assert fit_growth([0, 1], [5, 9]).model == "flat"  # two points say nothing about a rate


def test_a_limit_already_passed_is_the_last_turn() -> None:
    assert fit_growth(range(5), [10, 20, 30, 40, 50]).turn_reaching(30) == 4


def test_a_session_history_forecasts_its_growing_section() -> None:
    s = Session(base_prompt="Hi.", clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[])
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket

    gallery = PeanutGalleryTrinket(s.bus, s.working_memory)
    s.compose()
    for _ in range(12):
        gallery.add_guidance("concern", "Check the units again please.", ttl=1000)
        s.advance_turn()
        s.compose()
    f = forecast(s.recorder, window=200_000, section_limits={"peanutgallery_guidance": 2_000})
    g = f.sections["peanutgallery_guidance"]
    assert g.model == "linear" and g.sureness == "firm"
    turn = f.crossings[1][1].turn
    assert turn is not None and 60 < turn < 100  # about 24 tokens a turn


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        fit_growth([1, 2], [1])
    with pytest.raises(ValueError, match="no 'tokens' column"):
        forecast(pd.DataFrame({"turn": [0], "section": ["a"]}))
    with pytest.raises(ValueError, match="no section 'nope'"):
        forecast(frame([1, 2, 3]), section_limits={"nope": 5})
    with pytest.raises(ValueError, match="must not be negative"):
        daily_cost(-1, 3)
    assert daily_cost(0.01, 10) == pytest.approx(2.4)


def test_the_request_view_forecasts_the_budgeted_prompt_and_the_whole_request_apart() -> None:
    """A flat prompt well under its budget never "reaches the budget" because of the reply's
    reserve; the conversation that grows every turn is what fills the window; the reserve is the
    max_tokens the session sent."""
    from wm_kernel.core.composer.budget import budgeted_tokens
    from wm_kernel.display.wire_view import request_view
    from wm_kernel.instruments.exchange import Exchange
    from wm_kernel.instruments.history import History

    s = Session(
        base_prompt="You help {first_name}. " + "Keep it short. " * 200,
        model="claude-sonnet-4-6",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[],
        token_budget=6_000,
    )
    history = History.of(s)
    for turn in range(10):
        s.compose()
        history.record_exchange(
            Exchange(
                turn=turn,
                provider="anthropic",
                model="claude-sonnet-4-6",
                user=f"Question {turn}: " + "why? " * 40,
                reply="Because. " * 150,
                max_tokens=512,
            )
        )
        s.advance_turn()
    s.compose()
    view = request_view(s)
    assert view.reserved == 512 and "512 reserved for the reply (max_tokens sent at turn 9)" in view.headline()
    assert view.forecast is not None
    window, budget = view.forecast.lines()
    counter = s.token_counter
    budgeted = budgeted_tokens(s.composed, counter)
    assert budgeted < 6_000 // 3
    # the budget compares the budgeted prompt (on the estimate's upper bound) with the budget: flat
    assert view.forecast.budgeted is not None and view.forecast.budgeted.last_value == counter.upper(budgeted)
    assert budget == "budgeted prompt (upper bound) does not grow toward the budget (flat fit)"
    # the window compares the whole request, the conversation and the reserve included, which grows
    assert view.forecast.prompt.last_value == view.wire.tokens + 512
    assert view.forecast.prompt.model == "linear" and view.forecast.prompt.rate > 300
    assert window.startswith("request reaches the window (200,000 tokens) near turn ")


@pytest.mark.parametrize(
    ("args", "error", "line"),
    [
        ((float("nan"), 3), ValueError, "cost per turn must be a finite number, got nan"),
        ((0.01, float("inf")), ValueError, "turns per hour must be a finite number, got inf"),
        (("0.01", 3), TypeError, "cost per turn must be a number, got str"),
        ((0.01, True), TypeError, "turns per hour must be a number, got bool"),
    ],
)
def test_daily_cost_of_what_is_not_a_finite_number_is_one_line(
    args: tuple[object, object], error: type[Exception], line: str
) -> None:
    with pytest.raises(error) as caught:
        daily_cost(*args)  # type: ignore[arg-type]
    assert str(caught.value) == line
