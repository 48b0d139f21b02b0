"""The one model registry: current ids with their prices, source and date beside each, dated
snapshots priced as their family, and an unknown model said, never silently substituted."""

from __future__ import annotations

import pytest

from wm_kernel.cachesim.models import MODELS, family_name, get_model, priced_as
from wm_kernel.dialects.usage import Usage
from wm_kernel.providers.pricing import price
from wm_kernel.tokens import counter_for


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        # (input, 5m write, 1h write, read, output) US$ per million tokens
        ("claude-sonnet-4-6", (3.0, 3.75, 6.0, 0.30, 15.0)),  # cache_rules.md
        ("claude-opus-4-8", (5.0, 6.25, 10.0, 0.50, 25.0)),  # cache_rules.md
        ("claude-haiku-4-5", (1.0, 1.25, 2.0, 0.10, 5.0)),  # cache_rules.md
        ("claude-opus-4-6", (5.0, 6.25, 10.0, 0.50, 25.0)),
        ("claude-opus-4-5", (5.0, 6.25, 10.0, 0.50, 25.0)),
        ("claude-sonnet-4-5", (3.0, 3.75, 6.0, 0.30, 15.0)),
    ],
)
def test_anthropic_prices(model: str, prices: tuple[float, ...]) -> None:
    p = MODELS[model]
    assert (p.input, p.write_5m, p.write_1h, p.read, p.output) == pytest.approx(prices)
    assert p.provider == "anthropic" and p.source and p.date_read


@pytest.mark.parametrize(
    ("model", "prices"),
    [
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
    assert p.write_5m == p.input and p.mode == "automatic" and p.provider == "openai"


def test_every_profile_says_where_and_when_its_prices_were_read() -> None:
    for profile in MODELS.values():
        assert profile.source and profile.date_read, profile.name
    # what the project's references do not give is said in the notes, not passed off as theirs
    for name in ("claude-opus-4-6", "claude-opus-4-5", "claude-sonnet-4-5", "gpt-4o", "gpt-4o-mini", "gpt-4.1"):
        assert MODELS[name].notes.startswith("price not in the project's references"), name
    assert "the references give none" in MODELS["gpt-5.6"].notes
    # the minimums the references do give: 4,096 for Haiku 4.5 and Opus 4.5/4.6, 1,024 for Sonnet 4.x
    assert [MODELS[m].min_tokens for m in ("claude-opus-4-6", "claude-opus-4-5", "claude-sonnet-4-5")] == [
        4096,
        4096,
        1024,
    ]


def test_dated_snapshots_are_priced_as_their_family() -> None:
    assert family_name("claude-haiku-4-5-20251001") == "claude-haiku-4-5"
    assert family_name("claude-sonnet-4-5-20250929") == "claude-sonnet-4-5"
    assert family_name("gpt-4o-mini-2024-07-18") == "gpt-4o-mini"
    assert family_name("claude-sonnet-4-20250514") == "claude-sonnet-4"
    assert family_name("claude-opus-4-6[1m]") == "claude-opus-4-6"
    assert family_name("claude-sonnet-4-7") is None and family_name("gpt-9") is None
    assert get_model("claude-haiku-4-5-20251001") is MODELS["claude-haiku-4-5"]
    usage = Usage("anthropic", 1000, 0, 0, 0, 100)
    assert price(usage, "claude-haiku-4-5-20251001").total_usd == pytest.approx(0.0015)


def test_an_unknown_model_is_said_never_silently() -> None:
    chosen = priced_as("claude-3-sonnet-20240229")
    assert chosen.profile.name == "claude-sonnet-4-6" and chosen.substituted
    assert chosen.note == "priced as claude-sonnet-4-6: model claude-3-sonnet-20240229 unknown"
    assert priced_as("gpt-4o-mini-2024-07-18").note == ""
    assert priced_as("mystery", "gpt-5.4").note == "priced as gpt-5.4: model mystery unknown"
    with pytest.raises(ValueError, match="^unknown model 'claude-3-sonnet'; known models: "):
        get_model("claude-3-sonnet")


def test_every_model_has_a_counter() -> None:
    for name in MODELS:
        assert counter_for(name).model == name
    assert counter_for("gpt-4o-mini-2024-07-18").label == "tiktoken o200k_base"
