"""The per-turn cache report: a view of the cache simulator, priced with a model's profile at the
recorded times (one cost model), naming its counter."""

from __future__ import annotations

import pytest
from sample_trinkets import Directives, Doc, Ticker

from wm_kernel.cachesim.models import MODELS, register_model, unregister_model
from wm_kernel.cachesim.report import REPORT_COLUMNS, cache_report
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

LONG_BASE = "You help {first_name}. " + "Follow the house rules. " * 200  # 1,265 tokens with the delimiter (estimate)


def make_session(base=LONG_BASE, **options):
    return Session(
        base_prompt=base,
        profile=Profile(first_name="Ada"),
        continuum_id="c",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[Directives, Ticker, Doc],
        **options,
    )


def step(s, minutes=1):
    s.clock.advance(minutes=minutes)
    s.advance_turn()


@pytest.fixture
def cheap():
    register_model(
        MODELS["claude-sonnet-4-6"].with_prices(name="cheap", input=1.0, writes={"5m": 2.0, "1h": 2.0}, read=0.5)
    )
    yield "cheap"
    unregister_model("cheap")


def test_hits_writes_and_the_section_that_broke_the_cache(cheap):
    s = make_session(token_counter=TokenCounter(EstimateTokenizer()))
    s.compose()  # 0: first write
    step(s)  # 1: only the HUD changed: hit
    s.trinket("Directives").text = "Be thorough."
    step(s)  # 2: a cached section changed
    step(s)  # 3: hit
    s.base_prompt = LONG_BASE + "Be kind."
    step(s)  # 4: the base prompt changed
    s.trinket("Directives").enabled = False
    step(s)  # 5: a cached section left
    s.trinket("Directives").enabled = True
    step(s)  # 6: and came back: turn 4's entry is still live
    report = cache_report(s, model=cheap, exchange=(0, 0))
    t = report.turns
    assert list(t.columns) == REPORT_COLUMNS
    row = dict(hit=False, cache_read_tokens=0, uncached_tokens=8)
    assert t.drop(columns="cost").to_dict("records") == [
        dict(row, turn=0, status="write", cache_write_tokens=1268, input_tokens=1276, broke_by="(first turn)"),
        dict(
            row,
            turn=1,
            status="hit",
            hit=True,
            cache_write_tokens=0,
            cache_read_tokens=1268,
            input_tokens=1276,
            broke_by="",
        ),
        dict(row, turn=2, status="write", cache_write_tokens=1268, input_tokens=1276, broke_by="behavioral_directives"),
        dict(
            row,
            turn=3,
            status="hit",
            hit=True,
            cache_write_tokens=0,
            cache_read_tokens=1268,
            input_tokens=1276,
            broke_by="",
        ),
        dict(row, turn=4, status="write", cache_write_tokens=1270, input_tokens=1278, broke_by="base_prompt"),
        # the section that left was the last cached one: the first block that differs is what follows
        dict(row, turn=5, status="write", cache_write_tokens=1267, input_tokens=1275, broke_by="user message 1"),
        # the provider finds the prefix turn 4 wrote two minutes earlier
        dict(
            row,
            turn=6,
            status="hit",
            hit=True,
            cache_write_tokens=0,
            cache_read_tokens=1270,
            input_tokens=1278,
            broke_by="",
        ),
    ]
    # the model's prices: input $1, 5-minute write $2, read $0.5 per million
    assert t["cost"].tolist() == pytest.approx(
        [
            (8 + 2 * 1268) / 1e6,
            (8 + 0.5 * 1268) / 1e6,
            (8 + 2 * 1268) / 1e6,
            (8 + 0.5 * 1268) / 1e6,
            (8 + 2 * 1270) / 1e6,
            (8 + 2 * 1267) / 1e6,
            (8 + 0.5 * 1270) / 1e6,
        ]
    )
    assert report.turns_read == 3
    assert report.hit_rate == pytest.approx(3806 / 8935)
    assert report.cost == pytest.approx(t["cost"].sum())
    assert report.breaks()["turn"].tolist() == [2, 4, 5]
    # the same figures as the simulation %cache shows
    sim = s.cache_simulation(cheap, exchange=(0, 0))
    assert (report.cost, report.hit_rate) == (sim.total_cost, sim.hit_rate)
    assert str(report) == (
        "cheap on the anthropic wire: 7 turns: 3 read from the cache, 4 wrote it without reading; hit rate 42.6% of "
        "input tokens\n"
        "assuming a 0-token exchange per turn (0-token message, 0-token reply)\n"
        "tokens: 5073 written, 3806 read, 56 uncached, 8935 in all\n"
        "input cost ≈ $0.0121 ($0.0061–$0.0242) (without caching $0.0089) at cheap's prices\n"
        "tokens counted with ≈ estimate (chars/4) −50%/+100% (no model chosen: not cheap's own count; "
        "Session(model=...) picks it)"
    )


def test_recorded_times_count_and_the_session_model_prices():
    s = make_session(model="gpt-5.4")
    s.compose()
    step(s, minutes=30)  # gpt-5.4's in-memory cache lapses after 5 minutes
    step(s)
    report = cache_report(s)
    assert report.model == "gpt-5.4"
    assert report.turns["status"].tolist() == ["miss", "miss", "partial"]  # writes are free; 128-token steps
    assert str(report).splitlines()[-1] == "tokens counted with tiktoken o200k_base"
    assert report.cost == s.cache_simulation().total_cost


def test_tools_count_in_the_prefix_and_a_short_prefix_is_never_cached():
    s = make_session(base="You help {first_name}.", token_counter=TokenCounter(EstimateTokenizer()))
    s.compose()
    step(s)
    report = cache_report(s, exchange=(0, 0))
    assert report.turns["status"].tolist() == ["miss", "miss"]
    assert report.turns["uncached_tokens"].tolist() == report.turns["input_tokens"].tolist() == [75, 75]
    assert report.hit_rate == 0.0 and report.cost == pytest.approx(report.cost_without_cache)
    # 1,000 tokens of tool definitions lift the prefix over the 1,024-token minimum
    with_tools = cache_report(s, tools_tokens=1000, exchange=(0, 0))
    assert with_tools.turns[["status", "cache_write_tokens", "input_tokens"]].to_dict("records") == [
        {"status": "write", "cache_write_tokens": 1067, "input_tokens": 1075},
        {"status": "hit", "cache_write_tokens": 0, "input_tokens": 1075},
    ]


def test_a_list_of_composed_prompts_says_its_times_are_assumed():
    s = make_session()
    s.compose()
    step(s)
    prompts = [s.prompt_at(0), s.prompt_at(1)]
    report = cache_report(prompts, counter=TokenCounter(EstimateTokenizer()))
    assert report.turns["status"].tolist() == ["write", "hit"]
    assert report.lines()[-1] == "send times: none recorded, turns taken one minute apart"
    page = report._repr_html_()
    assert page.startswith(
        '<div class="mathjax_ignore tex2jax_ignore"><div class="wm-cache-report">'
        "<div>claude-sonnet-4-6 on the anthropic wire: 2 turns: 1 read from the cache"
    )


def test_bad_settings_are_clear_errors():
    s = make_session()
    s.compose()
    with pytest.raises(ValueError, match="^unknown model 'gpt-9'; known models: "):
        cache_report(s, model="gpt-9")
    with pytest.raises(ValueError, match="^tools_tokens must be a non-negative int, got 1.5$"):
        cache_report(s, tools_tokens=1.5)
    with pytest.raises(TypeError, match="^item 0 is a dict, not a ComposedPrompt$"):
        cache_report([{}])
    with pytest.raises(ValueError, match=r"^a History counts with its own counter \(history.counter\)"):
        cache_report(s.recorder.__class__(), counter=TokenCounter(EstimateTokenizer()))
