"""The one model registry: current ids with their prices, source and date beside each, dated
snapshots priced as their family, and an unknown model said, never silently substituted."""

from __future__ import annotations

from datetime import date

import pytest

from wm_kernel.cachesim.models import MODELS, family_name, get_model, priced_as
from wm_kernel.dialects.usage import Usage
from wm_kernel.providers.pricing import price
from wm_kernel.tokens import counter_for


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        # (input, 5m write, 1h write, read, output) US$ per million tokens: prices.md's rows, with
        # Anthropic's ratios (writes 1.25x and 2x input, reads 0.1x)
        ("claude-3-5-haiku", (0.80, 1.00, 1.60, 0.08, 4.0)),
        ("claude-3-5-sonnet", (3.0, 3.75, 6.0, 0.30, 15.0)),
        ("claude-3-7-sonnet", (3.0, 3.75, 6.0, 0.30, 15.0)),
        ("claude-sonnet-4", (3.0, 3.75, 6.0, 0.30, 15.0)),
        ("claude-sonnet-4-5", (3.0, 3.75, 6.0, 0.30, 15.0)),
        ("claude-sonnet-4-6", (3.0, 3.75, 6.0, 0.30, 15.0)),
        ("claude-sonnet-5", (2.0, 2.50, 4.0, 0.20, 10.0)),
        ("claude-haiku-4-5", (1.0, 1.25, 2.0, 0.10, 5.0)),
        ("claude-opus-4-5", (5.0, 6.25, 10.0, 0.50, 25.0)),
        ("claude-opus-4-6", (5.0, 6.25, 10.0, 0.50, 25.0)),
        ("claude-opus-4-7", (5.0, 6.25, 10.0, 0.50, 25.0)),
        ("claude-opus-4-8", (5.0, 6.25, 10.0, 0.50, 25.0)),
        ("claude-fable-5", (10.0, 12.5, 20.0, 1.0, 50.0)),
    ],
)
def test_anthropic_prices(model: str, prices: tuple[float, ...]) -> None:
    p = MODELS[model]
    assert (p.input, p.writes["5m"], p.writes["1h"], p.read, p.output) == pytest.approx(prices)
    assert p.provider == "anthropic" and p.source and p.date_read and p.priced


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        ("gpt-5", (1.25, 0.125, 10.0)),
        ("gpt-5.3-codex", (1.75, 0.175, 14.0)),
        ("gpt-5.4", (2.5, 0.25, 15.0)),
        ("gpt-4o", (2.5, 1.25, 10.0)),
        ("gpt-4o-mini", (0.15, 0.075, 0.60)),
        ("gpt-4.1", (2.0, 0.50, 8.0)),
        ("gpt-4.1-mini", (0.40, 0.10, 1.60)),
        ("gpt-4.1-nano", (0.10, 0.025, 0.40)),
    ],
)
def test_openai_prices_and_free_writes(model: str, prices: tuple[float, ...]) -> None:
    p = MODELS[model]
    assert (p.input, p.read, p.output) == pytest.approx(prices)
    assert set(p.writes.values()) == {p.input} and p.mode == "automatic" and p.provider == "openai"


def test_gpt_5_6_writes_at_1_25x_input_for_its_one_30_minute_ttl() -> None:
    p = MODELS["gpt-5.6"]
    assert (p.input, p.read, p.output, dict(p.writes), p.mode) == (
        5.0,
        0.5,
        30.0,
        {"30m": 6.25},
        "explicit_breakpoints",
    )
    assert get_model("gpt-5.6-sol") is p  # the name the preview answers with


def test_every_row_says_where_and_when_its_prices_were_read_and_the_cache_minimum() -> None:
    for profile in MODELS.values():
        assert profile.source and profile.date_read, profile.name
    assert [
        MODELS[m].min_tokens for m in ("claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8", "claude-fable-5")
    ] == [
        4096,
        2048,
        1024,
        512,
    ]
    assert MODELS["claude-sonnet-5"].valid_until == "2026-08-31"


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("anthropic/claude-sonnet-4.6", "claude-sonnet-4-6"),  # OpenRouter's request name
        ("anthropic/claude-4.6-sonnet-20260217", "claude-sonnet-4-6"),  # and the name it answers with
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),  # Bedrock, regional
        ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "claude-3-5-haiku"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),  # Vertex
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
    ],
)
def test_names_from_routers_and_clouds_resolve_to_the_same_rows(name: str, row: str) -> None:
    assert family_name(name) == row


def test_a_model_the_table_lacks_is_unpriced_never_priced_as_another() -> None:
    for name in ("claude-opus-5", "claude-3-sonnet-20240229", "gpt-5.9", "claude-sonnet-4-7"):
        chosen = priced_as(name)
        assert not chosen.priced and chosen.profile.name == name
        assert chosen.note.startswith(f"unpriced: {name} is not in the price table; add its price with register_model(")
        cost = price(Usage("anthropic", 1000, 0, {}, 100), chosen.profile)
        assert (cost.input_usd, cost.prompt_usd, cost.total_usd) == (None, None, None)
    with pytest.raises(ValueError, match="^unknown model 'claude-opus-5'"):
        price(Usage("anthropic", 1000), "claude-opus-5")


def test_an_introductory_price_holds_until_its_last_day() -> None:
    assert priced_as("claude-sonnet-5", at=date(2026, 8, 31)).priced
    late = priced_as("claude-sonnet-5", at=date(2026, 9, 1))
    assert not late.priced and late.note.startswith("unpriced: claude-sonnet-5's price held until 2026-08-31")


def test_dated_snapshots_are_priced_as_their_family() -> None:
    assert family_name("claude-haiku-4-5-20251001") == "claude-haiku-4-5"
    assert family_name("claude-sonnet-4-5-20250929") == "claude-sonnet-4-5"
    assert family_name("gpt-4o-mini-2024-07-18") == "gpt-4o-mini"
    assert family_name("claude-sonnet-4-20250514") == "claude-sonnet-4"
    assert family_name("claude-opus-4-6[1m]") == "claude-opus-4-6"
    assert family_name("claude-sonnet-4-7") is None and family_name("gpt-9") is None
    assert get_model("claude-haiku-4-5-20251001") is MODELS["claude-haiku-4-5"]
    usage = Usage("anthropic", 1000, 0, {}, 100)
    assert price(usage, "claude-haiku-4-5-20251001").total_usd == pytest.approx(0.0015)


def test_an_unknown_model_is_said_never_silently() -> None:
    chosen = priced_as("claude-3-sonnet-20240229")
    # simulated with the default rules (Claude's), priced with nothing
    assert chosen.profile.mode == "breakpoints" and chosen.substituted and not chosen.priced
    assert priced_as("gpt-4o-mini-2024-07-18").note == ""
    mystery = priced_as("mystery", "gpt-5.4")
    assert (mystery.profile.mode, mystery.profile.step, mystery.priced) == ("automatic", 128, False)
    with pytest.raises(ValueError, match="^unknown model 'claude-3-sonnet'; known models: "):
        get_model("claude-3-sonnet")


def test_every_model_has_a_counter() -> None:
    for name in MODELS:
        assert counter_for(name).model == name
    assert counter_for("gpt-4o-mini-2024-07-18").label == "tiktoken o200k_base"
