"""Prompt-cache accounting: hits, writes, which section broke the cache, minimum length, cost."""
from __future__ import annotations

import pytest
from sample_trinkets import Directives, Doc, Ticker

from wm_kernel.cachesim.report import TURN_COLUMNS, Prices, cache_report
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session
from wm_kernel.utils.tokens import EstimateTokenizer, TokenCounter

LONG_BASE = "You help {first_name}. " + "Follow the house rules. " * 200  # 1,265 tokens with the delimiter (estimate)


def make_session(base=LONG_BASE):
    s = Session(base_prompt=base, profile=Profile(first_name="Ada"), continuum_id="c",
                clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[Directives, Ticker, Doc])
    s.recorder.counter = TokenCounter(EstimateTokenizer())
    return s


def step(s):
    s.clock.advance(minutes=1)
    s.advance_turn()


def test_hits_writes_and_the_section_that_broke_the_cache():
    s = make_session()
    s.compose()                                   # 0: first write
    step(s)                                       # 1: only the HUD changed: hit
    s.trinket("Directives").text = "Be thorough."
    step(s)                                       # 2: a cached section changed
    step(s)                                       # 3: hit
    s.base_prompt = LONG_BASE + "Be kind."
    step(s)                                       # 4: the base prompt changed
    s.trinket("Directives").enabled = False
    step(s)                                       # 5: a cached section left
    s.trinket("Directives").enabled = True
    step(s)                                       # 6: and came back: turn 4's entry is still live
    report = cache_report(s, prices={"input": 1.0, "cache_write": 2.0, "cache_read": 0.5})
    t = report.turns
    assert list(t.columns) == TURN_COLUMNS
    assert t.drop(columns="cost").to_dict("records") == [
        dict(turn=0, status="write", hit=False, prefix_tokens=1268, cache_write_tokens=1268,
             cache_read_tokens=0, uncached_tokens=8, input_tokens=1276, broke_by="(first turn)"),
        dict(turn=1, status="hit", hit=True, prefix_tokens=1268, cache_write_tokens=0,
             cache_read_tokens=1268, uncached_tokens=8, input_tokens=1276, broke_by=""),
        dict(turn=2, status="write", hit=False, prefix_tokens=1268, cache_write_tokens=1268,
             cache_read_tokens=0, uncached_tokens=8, input_tokens=1276, broke_by="behavioral_directives"),
        dict(turn=3, status="hit", hit=True, prefix_tokens=1268, cache_write_tokens=0,
             cache_read_tokens=1268, uncached_tokens=8, input_tokens=1276, broke_by=""),
        dict(turn=4, status="write", hit=False, prefix_tokens=1270, cache_write_tokens=1270,
             cache_read_tokens=0, uncached_tokens=8, input_tokens=1278, broke_by="base_prompt"),
        dict(turn=5, status="write", hit=False, prefix_tokens=1267, cache_write_tokens=1267,
             cache_read_tokens=0, uncached_tokens=8, input_tokens=1275, broke_by="-behavioral_directives"),
        # before the simulator, cache_report compared each turn with the previous one only and
        # called this a write; the provider finds the prefix turn 4 wrote two minutes earlier
        dict(turn=6, status="hit", hit=True, prefix_tokens=1270, cache_write_tokens=0,
             cache_read_tokens=1270, uncached_tokens=8, input_tokens=1278, broke_by=""),
    ]
    assert t["cost"].tolist() == pytest.approx([(8 + 2 * 1268) / 1e6, (8 + 0.5 * 1268) / 1e6,
                                                (8 + 2 * 1268) / 1e6, (8 + 0.5 * 1268) / 1e6,
                                                (8 + 2 * 1270) / 1e6, (8 + 2 * 1267) / 1e6,
                                                (8 + 0.5 * 1270) / 1e6])
    assert report.hit_rate == pytest.approx(3 / 7)
    assert report.cost == pytest.approx(t["cost"].sum())
    assert report.cost_without_cache == pytest.approx(t["input_tokens"].sum() / 1e6)
    assert report.breaks()["turn"].tolist() == [2, 4, 5]
    assert str(report) == (
        "7 turns: 3 cache hits, 4 writes, hit rate 42.9%\n"
        "tokens: 5073 written, 3806 read, 56 uncached (estimate (chars/4))\n"
        "estimated input cost $0.0121 (without caching $0.0089) at assumed prices per million "
        "tokens: input $1, cache write $2, cache read $0.5")


def test_tools_count_in_the_prefix_and_a_short_prefix_is_never_cached():
    s = make_session(base="You help {first_name}.")
    s.compose()
    step(s)
    report = cache_report(s)
    assert report.turns["status"].tolist() == ["none", "none"]
    assert report.turns["uncached_tokens"].tolist() == report.turns["input_tokens"].tolist() == [75, 75]
    assert report.hit_rate == 0.0
    assert report.cost == pytest.approx(report.cost_without_cache)
    # 1,000 tokens of tool definitions lift the prefix over the 1,024-token minimum
    with_tools = cache_report(s, tools_tokens=1000)
    assert with_tools.turns[["status", "prefix_tokens", "input_tokens"]].to_dict("records") == [
        {"status": "write", "prefix_tokens": 1067, "input_tokens": 1075},
        {"status": "hit", "prefix_tokens": 1067, "input_tokens": 1075}]
    assert cache_report(s, min_cacheable_tokens=0).turns["status"].tolist() == ["write", "hit"]


def test_a_list_of_composed_prompts_and_default_example_prices():
    s = make_session()
    s.compose()
    step(s)
    prompts = [s.prompt_at(0), s.prompt_at(1)]
    report = cache_report(prompts, counter=TokenCounter(EstimateTokenizer()))
    assert report.turns["status"].tolist() == ["write", "hit"]
    assert report.prices == Prices(input=3.0, cache_write=3.75, cache_read=0.3)
    assert report.summary()["prices_per_million"] == {"input": 3.0, "cache_write": 3.75, "cache_read": 0.3}
    page = report._repr_html_()
    assert page.startswith('<div class="mathjax_ignore tex2jax_ignore"><div class="wm-cache-report">'
                           '<div>2 turns: 1 cache hits, 1 writes')


def test_bad_settings_are_clear_errors():
    s = make_session()
    s.compose()
    with pytest.raises(ValueError, match=r"^unknown price keys \['output'\]"):
        cache_report(s, prices={"output": 15})
    with pytest.raises(ValueError, match="^price cache_read must be a non-negative number, got -1$"):
        cache_report(s, prices={"cache_read": -1})
    with pytest.raises(ValueError, match="^tools_tokens must be a non-negative int, got 1.5$"):
        cache_report(s, tools_tokens=1.5)
    with pytest.raises(TypeError, match="^item 0 is a dict, not a ComposedPrompt$"):
        cache_report([{}])
