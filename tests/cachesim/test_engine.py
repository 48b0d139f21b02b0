"""The prompt-cache simulator: cache_rules.md's worked examples to the cent, every miss reason from
a minimal request list, provider rules, properties over random request lists, and bad input."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wm_kernel.cachesim.advice import advise, keepalive_breakeven
from wm_kernel.cachesim.engine import Block, Request
from wm_kernel.cachesim.models import MODELS, get_model, register_model, unregister_model
from wm_kernel.cachesim.simulation import TURN_COLUMNS, simulate

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SONNET = "claude-sonnet-4-6"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def costs(sim):
    return [round(c, 9) for c in sim.turns["cost_usd"]]


def usage(sim, *columns):
    return sim.turns[list(columns)].values.tolist()


# -- cache_rules.md, worked examples (input cost only)


def test_example_1_stable_prefix_read_on_later_requests():
    blocks = [Block("prefix", 5000, breakpoint="5m", layer="system"), Block("hud", 200), Block("user", 50)]
    sim = simulate([Request(at(i), blocks) for i in range(3)], SONNET)
    assert costs(sim) == [0.0195, 0.00225, 0.00225]
    assert round(sim.total_cost, 9) == 0.024
    assert round(sim.cost_without_cache, 9) == 0.04725
    assert usage(sim, "cache_creation_input_tokens", "cache_read_input_tokens", "input_tokens") == [
        [5000, 0, 250],
        [0, 5000, 250],
        [0, 5000, 250],
    ]
    assert sim.turns["miss_reason"].tolist() == ["first_request", "none", "none"]
    assert sim.turns["status"].tolist() == ["write", "hit", "hit"]


def test_example_2_a_volatile_hud_before_the_breakpoint_writes_every_time():
    requests = [
        Request(
            at(i),
            [
                Block("prefix", 5000, layer="system"),
                Block(f"hud-{i}", 200, breakpoint="5m", layer="system", label="hud"),
                Block("user", 50),
            ],
        )
        for i in range(3)
    ]
    sim = simulate(requests, SONNET)
    assert costs(sim) == [0.01965] * 3
    assert round(sim.total_cost, 9) == 0.05895
    assert round(sim.total_cost / sim.cost_without_cache - 1, 3) == 0.248
    assert sim.turns["miss_reason"].tolist() == ["first_request", "content_changed", "content_changed"]
    assert sim.turns["first_divergent_block"].tolist() == [None, 1, 1]
    assert sim.turns["divergent_label"].tolist() == ["", "hud", "hud"]
    assert sim.hit_rate == 0.0 and sim.cached  # 0% read, yet cached (and paid for) every time


def growing_chat(turns: int, *, gap: float = 1.0) -> list[Request]:
    requests, history = [], []
    for turn in range(turns):
        if turn:
            history.append(Block(f"assistant-{turn}", 400))
        history.append(Block(f"user-{turn}", 100))
        blocks = [
            Block("system", 5000, layer="system"),
            *history[:-1],
            Block(history[-1].key, 100, breakpoint="5m"),
            Block(f"hud-{turn}", 200),
        ]
        requests.append(Request(at(turn * gap), blocks))
    return requests


def test_example_3_growing_chat_with_the_breakpoint_on_the_latest_user_message():
    sim = simulate(growing_chat(3), SONNET)
    assert costs(sim) == [0.019725, 0.004005, 0.004155]
    assert round(sim.total_cost, 9) == 0.027885
    assert usage(sim, "cache_read_input_tokens", "cache_creation_input_tokens") == [[0, 5100], [5100, 500], [5600, 500]]
    # growth past what the previous request cached is not a miss
    assert sim.turns["miss_reason"].tolist() == ["first_request", "none", "none"]


def test_example_4_mixed_ttl_billing():
    system = Block("tools+system", 5000, breakpoint="1h", layer="system")
    cold = simulate([Request(T0, [system, Block("history-a", 1000, breakpoint="5m")])], SONNET)
    assert costs(cold) == [0.03375]
    assert usage(cold, "ephemeral_1h_input_tokens", "ephemeral_5m_input_tokens", "cache_creation_input_tokens") == [
        [5000, 1000, 6000]
    ]
    warm = simulate(
        [
            Request(T0, [system, Block("history-a", 1000, breakpoint="5m")]),
            Request(at(10), [system, Block("history-b", 1000, breakpoint="5m")]),
        ],
        SONNET,
    )
    assert costs(warm)[1] == 0.00525
    assert usage(warm, "cache_read_input_tokens", "ephemeral_1h_input_tokens", "ephemeral_5m_input_tokens")[1] == [
        5000,
        0,
        1000,
    ]


def test_example_5_below_the_minimum_nothing_is_cached():
    sim = simulate([Request(at(i), [Block("prefix", 3000, breakpoint="5m")]) for i in range(3)], "claude-haiku-4-5")
    assert costs(sim) == [0.003] * 3
    assert usage(sim, "cache_read_input_tokens", "cache_creation_input_tokens") == [[0, 0]] * 3
    assert sim.turns["miss_reason"].tolist() == ["below_minimum"] * 3
    assert not sim.cached
    assert "nothing was cached" in str(sim)


def keepalive(intervals: int, *, ping: bool) -> float:
    prefix = [Block("prefix", 10_000, breakpoint="5m", layer="system")]
    step = timedelta(minutes=5) - timedelta(seconds=1)
    times = range(intervals + 1) if ping else (0, intervals)
    return simulate([Request(T0 + k * step, prefix) for k in times], SONNET).total_cost


def test_example_6_keepalive_pays_while_the_next_request_is_at_most_12_intervals_away():
    assert keepalive(12, ping=True) < keepalive(12, ping=False)
    assert keepalive(13, ping=True) > keepalive(13, ping=False)
    assert keepalive_breakeven(MODELS[SONNET]) == 12


def test_example_7_gemini_explicit_cached_content_with_storage():
    document = Block("document", 100_000, breakpoint="explicit")
    sim = simulate([Request(at(i), [document, Block(f"query-{i}", 200)]) for i in range(50)], "gemini-2.5-flash")
    assert round(sim.total_cost, 9) == 0.283
    assert round(sim.cost_without_cache, 9) == 1.503
    assert round(sim.turns["storage_usd"].sum(), 9) == 0.1
    assert sim.turns["cache_creation_input_tokens"].tolist() == [100_000] + [0] * 49
    # an hour later the explicit content has expired and is created (and stored) again
    again = simulate([Request(at(0), [document]), Request(at(61), [document])], "gemini-2.5-flash")
    assert again.turns["miss_reason"].tolist() == ["first_request", "ttl_expired"]
    assert again.turns["storage_usd"].round(9).tolist() == [0.1, 0.1]


# -- each miss reason from a minimal request list

SYSTEM = Block("system", 2000, breakpoint="5m", layer="system", label="base_prompt")


def reasons(requests, model=SONNET):
    return simulate(requests, model).turns["miss_reason"].tolist()


def test_none_and_first_request():
    assert reasons([Request(at(0), [SYSTEM]), Request(at(4), [SYSTEM])]) == ["first_request", "none"]


def test_ttl_expired_and_refresh_on_hit():
    assert reasons([Request(at(0), [SYSTEM]), Request(at(5), [SYSTEM])]) == ["first_request", "ttl_expired"]
    # each hit refreshes the entry: 4-minute gaps keep it alive for as long as they go on
    assert reasons([Request(at(4 * i), [SYSTEM]) for i in range(4)]) == ["first_request", "none", "none", "none"]
    one_hour = Block("system", 2000, breakpoint="1h", layer="system")
    assert reasons([Request(at(0), [one_hour]), Request(at(59), [one_hour])]) == ["first_request", "none"]


def test_content_changed_names_the_first_divergent_block():
    first = [Block("a", 1500, layer="system", label="one"), Block("b", 100, breakpoint="5m", label="two")]
    second = [first[0], Block("c", 100, breakpoint="5m", label="three")]
    sim = simulate([Request(at(0), first), Request(at(1), second)], SONNET)
    assert sim.turns["miss_reason"].tolist() == ["first_request", "content_changed"]
    assert sim.turns.loc[1, "first_divergent_block"] == 1
    assert sim.turns.loc[1, "divergent_label"] == "three"


def test_params_changed_by_layer():
    blocks = [
        Block("tools", 500, layer="tools"),
        Block("system", 1500, breakpoint="5m", layer="system"),
        Block("user", 100, breakpoint="5m"),
    ]

    def run(before, after):
        return simulate([Request(at(0), blocks, params=before), Request(at(1), blocks, params=after)], SONNET)

    # tool_choice invalidates messages only: the system breakpoint still reads
    sim = run({"tool_choice": "auto"}, {"tool_choice": "any"})
    assert sim.turns.loc[1, "miss_reason"] == "params_changed"
    assert sim.turns.loc[1, "first_divergent_block"] == 2
    assert sim.turns.loc[1, "cache_read_input_tokens"] == 2000
    # web search invalidates system and messages: only the tools could match, and nothing was written there
    sim = run({"web_search": False}, {"web_search": True})
    assert sim.turns.loc[1, ["miss_reason", "first_divergent_block", "cache_read_input_tokens"]].tolist() == [
        "params_changed",
        1,
        0,
    ]
    # the model (like any parameter the simulator does not know) invalidates everything
    sim = run({"model": "a"}, {"model": "b"})
    assert sim.turns.loc[1, ["first_divergent_block", "cache_read_input_tokens"]].tolist() == [0, 0]
    # routing parameters invalidate nothing
    assert run({"prompt_cache_key": "x"}, {"prompt_cache_key": "y"}).turns.loc[1, "miss_reason"] == "none"


def test_below_minimum_per_breakpoint():
    blocks = [Block("small", 500, breakpoint="5m", layer="system"), Block("rest", 1000, breakpoint="5m")]
    sim = simulate([Request(at(0), blocks), Request(at(1), blocks)], SONNET)
    # the 500-token breakpoint is under 1,024 and does nothing; the 1,500-token one caches
    assert usage(sim, "cache_creation_input_tokens", "cache_read_input_tokens") == [[1500, 0], [0, 1500]]
    assert reasons([Request(at(0), blocks[:1])]) == ["below_minimum"]


def test_lookback_exceeded_after_more_than_20_blocks():
    def request(minutes, messages):
        tail = [Block(f"m{i}", 10, breakpoint="5m" if i == messages - 1 else None) for i in range(messages)]
        return Request(at(minutes), [Block("system", 2000, layer="system"), *tail])

    # counting back from the breakpoint (its own block first), block 0 is the 20th block from block
    # 19 (found) but the 21st from block 20 (not found)
    assert reasons([Request(at(0), [SYSTEM]), request(1, 19)]) == ["first_request", "none"]
    assert reasons([Request(at(0), [SYSTEM]), request(1, 20)]) == ["first_request", "lookback_exceeded"]


def test_no_breakpoint():
    assert reasons([Request(at(0), [Block("system", 5000, layer="system")])]) == ["no_breakpoint"]


# -- the other providers


def test_openai_before_5_6_caches_automatically_in_128_token_steps():
    def request(minutes, tail):
        return Request(at(minutes), [Block("shared", 2000, layer="system"), Block(tail, 300)])

    sim = simulate([request(0, "a"), request(1, "b"), request(7, "c")], "gpt-5.4")
    # writes are free; 2,000 shared tokens read as 1,024 + 128 * 7 = 1,920
    assert usage(sim, "cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens") == [
        [0, 0, 2300],
        [1920, 0, 380],
        [0, 0, 2300],
    ]
    assert costs(sim) == [0.00575, 0.00143, 0.00575]
    assert sim.turns["miss_reason"].tolist() == ["first_request", "content_changed", "ttl_expired"]
    assert reasons([Request(at(0), [Block("x", 1000)])] * 1, "gpt-5.4") == ["below_minimum"]
    long = [
        Request(at(0), [Block("shared", 2000), Block("a", 300)], params={"prompt_cache_retention": "24h"}),
        Request(at(600), [Block("shared", 2000), Block("b", 300)]),
    ]
    assert simulate(long, "gpt-5.4").turns.loc[1, "cache_read_input_tokens"] == 1920


def test_openai_5_6_writes_at_1_25x_with_a_30_minute_ttl_and_an_implicit_breakpoint():
    blocks = [Block("system", 2000, layer="system"), Block("user", 300)]  # no breakpoint marked
    sim = simulate([Request(at(0), blocks), Request(at(29), blocks), Request(at(60), blocks)], "gpt-5.6")
    assert usage(sim, "cache_creation_input_tokens", "cache_read_input_tokens") == [[2300, 0], [0, 2300], [2300, 0]]
    assert costs(sim) == [0.014375, 0.00115, 0.014375]  # 2,300 at $6.25 (1.25x $5.00), then at $0.50
    assert sim.turns["miss_reason"].tolist() == ["first_request", "none", "ttl_expired"]


def test_gemini_implicit_cache_without_steps():
    blocks = [Block("system", 2000, layer="system")]
    sim = simulate(
        [Request(at(0), blocks + [Block("a", 300)]), Request(at(1), blocks + [Block("b", 300)])], "gemini-2.5-flash"
    )
    assert sim.turns.loc[1, "cache_read_input_tokens"] == 2000


def test_the_same_requests_run_on_every_model():
    requests = growing_chat(4)
    totals = {model: simulate(requests, model).total_cost for model in MODELS}
    assert set(totals) >= {SONNET, "claude-opus-4-8", "claude-haiku-4-5", "gpt-5.4", "gpt-5.6", "gemini-2.5-flash"}
    assert totals["claude-opus-4-8"] == pytest.approx(totals[SONNET] * 5 / 3)


# -- profiles are data


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(
        ValueError,
        match=r"^unknown model 'gpt-9'; known models: claude-3-5-haiku, claude-3-5-sonnet, "
        r"claude-3-7-sonnet, claude-fable-5, claude-haiku-4-5, claude-opus-4-1, ",
    ):
        simulate([], "gpt-9")


def test_a_user_profile_overrides_prices_without_editing_the_package():
    cheaper = MODELS[SONNET].with_prices(input=1.0, writes={"5m": 1.25, "1h": 2.0}, read=0.1)
    requests = [Request(at(i), [SYSTEM]) for i in range(2)]
    assert costs(simulate(requests, cheaper)) == [0.0025, 0.0002]
    with pytest.raises(ValueError, match="already known; pass replace=True"):
        register_model(cheaper)
    register_model(cheaper, replace=True)
    try:
        assert costs(simulate(requests, SONNET)) == [0.0025, 0.0002]
    finally:
        unregister_model(SONNET)
    assert get_model(SONNET).input == 3.0


# -- views


def test_turns_columns_summary_and_views():
    sim = simulate(growing_chat(2) + [Request(at(30), growing_chat(2)[1].blocks)], SONNET)
    assert list(sim.turns.columns) == TURN_COLUMNS
    s = sim.summary()
    assert {
        k: s[k]
        for k in (
            "requests",
            "read_whole_prefix",
            "read_part_of_prefix",
            "wrote_without_reading",
            "neither_read_nor_wrote",
            "why_not_whole_prefix",
        )
    } == {
        "requests": 3,
        "read_whole_prefix": 1,
        "read_part_of_prefix": 0,
        "wrote_without_reading": 2,
        "neither_read_nor_wrote": 0,
        "why_not_whole_prefix": {"first_request": 1, "ttl_expired": 1},
    }
    # every key says what it counts: the tokens add up, and the reasons count the requests that
    # did not read their whole prefix
    assert s["input_tokens"] == s["cache_read_tokens"] + s["cache_write_tokens"] + s["uncached_tokens"]
    assert sum(s["why_not_whole_prefix"].values()) == s["requests"] - s["read_whole_prefix"]
    assert "hit" not in s and "miss" not in s and "miss_reasons" not in s
    assert str(sim).splitlines()[:5] == [
        "claude-sonnet-4-6: 3 requests: 1 read from the cache (1 whole prefix, 0 part), 2 did not (2 wrote it, "
        "0 neither)",
        "hit rate 30.2% of input tokens (5,100 of 16,900 read from the cache, 11,200 written)",
        "input cost $0.045330 (without caching $0.050700, -10.6%)",
        "why a request did not read its whole prefix: first_request 1, ttl_expired 1",
        "tokens: counter not recorded",
    ]
    page = sim._repr_html_()
    assert page.count('<tr class="wm-cache-write"') == 2 and page.count('<tr class="wm-cache-hit"') == 1


def test_labels_are_escaped_in_html():
    blocks = [Block("a", 2000, breakpoint="5m", label="<b>x</b>")]
    changed = [Block("b", 2000, breakpoint="5m", label="<b>x</b>")]
    page = simulate([Request(at(0), blocks), Request(at(1), changed)], SONNET)._repr_html_()
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page


# -- bad input: one clear error


def test_bad_input_is_one_clear_error():
    with pytest.raises(ValueError, match="^block tokens must not be negative, got -1$"):
        Block("a", -1)
    with pytest.raises(ValueError, match=r"^layer must be one of tools, system, messages, got 'user'$"):
        Block("a", 1, layer="user")
    with pytest.raises(
        ValueError,
        match=r"^requests must be in time order: requests\[1\] at "
        r"2026-11-30T08:59:00\+00:00 is before requests\[0\]",
    ):
        simulate([Request(at(0), [SYSTEM]), Request(at(-1), [SYSTEM])], SONNET)
    with pytest.raises(
        ValueError,
        match=r"^requests\[0\]\.blocks\[0\]: unknown cache TTL '10m' for "
        r"claude-sonnet-4-6; use one of 1h, 5m, auto, explicit$",
    ):
        simulate([Request(at(0), [Block("a", 1, breakpoint="10m")])], SONNET)
    five = [Block(str(i), 300, breakpoint="5m") for i in range(5)]
    with pytest.raises(
        ValueError,
        match=r"^requests\[0\] has 5 cache breakpoints; claude-sonnet-4-6 "
        r"allows at most 4$",
    ):
        simulate([Request(at(0), five)], SONNET)
    with pytest.raises(ValueError, match="longer TTLs must come first"):
        simulate([Request(at(0), [Block("a", 1, breakpoint="5m"), Block("b", 1, breakpoint="1h")])], SONNET)
    with pytest.raises(ValueError, match="after a 'messages' block; the order is tools, system, messages"):
        Request(at(0), [Block("a", 1), Block("b", 1, layer="system")])
    with pytest.raises(
        ValueError,
        match=r"^requests\[0\]\.blocks\[0\]: gpt-5.4 has no explicit cache; "
        r"its caching is automatic$",
    ):
        simulate([Request(at(0), [Block("a", 1, breakpoint="explicit")])], "gpt-5.4")
    with pytest.raises(TypeError, match=r"^requests\[0\] is a dict, not a Request$"):
        simulate([{}], SONNET)


# -- properties

KEYS = st.sampled_from("abcdef")


@st.composite
def request_lists(draw):
    requests, now = [], T0
    for _ in range(draw(st.integers(1, 6))):
        now += timedelta(seconds=draw(st.integers(0, 7200)))
        n = draw(st.integers(1, 8))
        blocks = [(draw(KEYS), draw(st.integers(0, 1500))) for _ in range(n)]
        marked = sorted(draw(st.sets(st.integers(0, n - 1), max_size=4)))
        long_ones = draw(st.integers(0, len(marked)))
        ttl = {p: "1h" if i < long_ones else "5m" for i, p in enumerate(marked)}
        requests.append(Request(now, [Block(k, t, breakpoint=ttl.get(i)) for i, (k, t) in enumerate(blocks)]))
    return requests


def bounds(requests, model):
    """(all reads, all writes) over the tokens up to each request's last usable breakpoint."""
    p = MODELS[model]
    low = high = 0.0
    for r in requests:
        total, cached = 0, 0
        for b in r.blocks:
            total += b.tokens
            if b.breakpoint and total >= p.min_tokens:
                cached = total
        low += (cached * p.read + (r.tokens - cached) * p.input) / 1e6
        high += (cached * max(p.writes.values()) + (r.tokens - cached) * p.input) / 1e6
    return low, high


@settings(max_examples=150, deadline=None)
@given(request_lists(), st.sampled_from([SONNET, "claude-haiku-4-5"]))
def test_cost_lies_between_all_reads_and_all_writes(requests, model):
    sim = simulate(requests, model)
    low, high = bounds(requests, model)
    assert low - 1e-12 <= sim.total_cost <= high + 1e-12
    t = sim.turns
    assert (
        t["input_tokens"] + t["cache_read_input_tokens"] + t["cache_creation_input_tokens"] == t["prompt_tokens"]
    ).all()
    assert (t["ephemeral_5m_input_tokens"] + t["ephemeral_1h_input_tokens"] == t["cache_creation_input_tokens"]).all()
    assert set(t["miss_reason"]) <= {
        "none",
        "first_request",
        "ttl_expired",
        "content_changed",
        "below_minimum",
        "lookback_exceeded",
        "no_breakpoint",
    }


@settings(max_examples=150, deadline=None)
@given(request_lists(), st.integers(0, 299))
def test_an_identical_request_within_the_ttl_reads_up_to_its_last_breakpoint(requests, seconds):
    last = requests[-1]
    again = Request(last.at + timedelta(seconds=seconds), last.blocks)
    row = simulate([*requests, again], SONNET).turns.iloc[-1]
    cached = 0
    total = 0
    for b in last.blocks:
        total += b.tokens
        if b.breakpoint and total >= MODELS[SONNET].min_tokens:
            cached = total
    assert row["cache_read_input_tokens"] == cached
    assert row["cache_creation_input_tokens"] == 0
    assert row["miss_reason"] in (("none",) if cached else ("below_minimum", "no_breakpoint"))


# -- advice on plain request lists


def test_advice_puts_the_breakpoint_on_the_last_stable_block():
    requests = [
        Request(
            at(i),
            [
                Block("prefix", 5000, layer="system", label="rules"),
                Block(f"hud-{i}", 200, breakpoint="5m", layer="system", label="hud"),
                Block(f"user-{i}", 50, label=f"user {i}"),
            ],
        )
        for i in range(3)
    ]
    advice = advise(simulate(requests, SONNET))
    assert round(advice.current_cost, 9) == 0.05895
    # the HUD moved after the prefix, with the breakpoint on the prefix: example 1's $0.024
    assert round(advice.best.cost, 9) == 0.024
    assert [round(c, 9) for c in advice.best.turn_costs] == [0.0195, 0.00225, 0.00225]
    kinds = [s.kind for s in advice.suggestions]
    assert kinds.count("move_volatile") == 1 and "breakpoints" in kinds
    frame = advice.frame()
    assert frame["kind"].tolist()[0] == "current" and frame["kind"].tolist()[-1] == "advised"


def test_advice_for_automatic_caching_only_moves_blocks():
    requests = [
        Request(
            at(i),
            [
                Block(f"clock-{i}", 20, layer="system", label="clock"),
                Block("rules", 3000, layer="system", label="rules"),
            ],
        )
        for i in range(3)
    ]
    advice = advise(simulate(requests, "gpt-5.4"))
    assert [s.kind for s in advice.suggestions] == ["move_volatile"]
    assert advice.best.cost < advice.current_cost


def test_an_estimate_carries_its_band_into_costs_and_the_minimum():
    from wm_kernel.tokens import counter_for

    claude = counter_for("claude-sonnet-4-6")  # ≈ −10%/+20%
    near = [Block("system", 900, breakpoint="5m", layer="system"), Block("hud", 50)]
    far = [Block("system", 500, breakpoint="5m", layer="system"), Block("hud", 50)]
    sim = simulate([Request(at(0), near), Request(at(1), far)], SONNET, counter=claude)
    # 900 tokens could be 1,080: above the 1,024 minimum; 500 could be at most 600
    assert sim.turns["miss_reason"].tolist() == ["uncertain", "below_minimum"]
    low, high = sim.cost_range
    assert (round(low, 8), round(high, 8)) == (round(sim.total_cost * 0.9, 8), round(sim.total_cost * 1.2, 8))
    lines = str(sim).splitlines()
    assert lines[2] == "input cost ≈ $0.004500 ($0.004050–$0.005400) (without caching $0.004500, +0.0%)"
    assert lines[4] == (
        "tokens counted with ≈ claude-sonnet-4-6 (tiktoken o200k_base × 1.25) −10%/+20%; "
        "uncertain: the prefix's token interval straddles claude-sonnet-4-6's minimum of 1,024, "
        "so it may be cached"
    )
    exact = simulate([Request(at(0), near)], SONNET, counter=counter_for("gpt-5.4"))
    assert exact.turns["miss_reason"].tolist() == ["below_minimum"] and exact.cost_range == (exact.total_cost,) * 2
    assert str(exact).splitlines()[4] == "tokens counted with tiktoken o200k_base (for gpt-5.4, not claude-sonnet-4-6)"


_PIECES = [
    Block(f"k{i}", 1 + i * 37 % 500, layer=layer)
    for i, layer in enumerate(["tools"] * 3 + ["system"] * 3 + ["messages"] * 8)
]


@st.composite
def _conversation(draw: st.DrawFn) -> list[Request]:
    """Requests that repeat the one before, change it somewhere, move breakpoints, change params."""
    requests: list[Request] = []
    blocks: list[Block] = []
    for turn in range(draw(st.integers(1, 8))):
        cut = draw(st.integers(0, len(blocks)))
        added = draw(st.lists(st.sampled_from(_PIECES), max_size=5))
        blocks = sorted(blocks[:cut] + added, key=lambda b: ("tools", "system", "messages").index(b.layer))
        marks = draw(st.sets(st.integers(0, max(len(blocks) - 1, 0)), max_size=3)) if blocks else set()
        marked = [
            Block(b.key, b.tokens, layer=b.layer, breakpoint="5m") if i in marks else b for i, b in enumerate(blocks)
        ]
        params = {"temperature": draw(st.sampled_from([0.0, 1.0]))}
        requests.append(Request(at(turn), marked, params=params))
        blocks = marked
    return requests


@settings(max_examples=200, deadline=None)
@given(_conversation())
def test_a_request_prepared_from_the_one_before_is_prepared_as_from_nothing(requests: list[Request]) -> None:
    from wm_kernel.cachesim.engine import _prepare
    from wm_kernel.utils.sequences import shared_start

    profile = get_model("claude-sonnet-4-6")
    before = None
    for index, request in enumerate(requests):
        try:
            alone = _prepare(index, request, profile)
        except ValueError as error:  # too many breakpoints: the same error either way
            with pytest.raises(ValueError, match=re.escape(str(error))):
                _prepare(index, request, profile, before)
            return
        after = _prepare(index, request, profile, before)
        assert after._replace(shared=0) == alone  # all but what it shares with the one before
        expected = (
            0 if before is None or before.sigs != after.sigs else shared_start(request.blocks, before.request.blocks)
        )
        assert after.shared == expected
        before = after


def test_a_request_checks_only_the_blocks_it_does_not_share_with_the_one_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A conversation's requests repeat the one before (the same Block objects): each block's
    checks run once, not once per request that holds it (issue 44 item 6: summary() of a
    transcript grew with the square of its length here)."""
    import wm_kernel.cachesim.engine as engine

    looked: list[Block] = []
    sizes = engine._TOKENS
    monkeypatch.setattr(engine, "_TOKENS", lambda block: looked.append(block) or sizes(block))
    monkeypatch.setattr(engine, "_last_checked", ((), [], 0))
    blocks: list[Block] = [Block("tools", 500, layer="tools"), Block("system", 1500, layer="system")]
    requests = []
    for turn in range(200):
        blocks = [*blocks, Block(f"user {turn}", 10), Block(f"reply {turn}", 20)]
        requests.append(Request(at(turn), blocks))
    assert len(looked) == 2 + 200 * 2  # each block once (every block of every request: 40,400)
    assert [r.tokens for r in requests[:2]] == [2030, 2060]
    assert requests[-1].tokens == 2000 + 200 * 30
    # a request that shares nothing, or shares a start and then breaks the rules, is checked as ever
    with pytest.raises(ValueError, match=r"^blocks\[402\] is in layer 'system' after a 'messages' block"):
        Request(at(300), [*blocks, Block("late system", 1, layer="system")])
    with pytest.raises(TypeError, match=r"^blocks\[403\] is a str, not a Block$"):
        Request(at(300), [*blocks, Block("x", 1), "y"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"^the request holds 9223372036854776307 tokens"):
        Request(at(300), [*blocks[:1], Block("huge", 2**63 - 1)])
    assert Request(at(300), blocks[:3]).tokens == 2010
    assert Request(at(300), []).tokens == 0
    # the simulation of the shared-start requests is the simulation of fresh copies of them
    fresh = [Request(r.at, [Block(b.key, b.tokens, layer=b.layer) for b in r.blocks]) for r in requests]
    assert simulate(requests, SONNET).turns.equals(simulate(fresh, SONNET).turns)


def test_a_simulation_compares_only_what_each_request_adds_to_the_one_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each request was compared with the one made before it when it was made (a log's requests
    are made in order): the simulation takes that count, and looks for where two requests part
    only after it, instead of comparing every request's blocks again (issue 44 item 6); requests
    made out of order are compared as ever, with the same outcome."""
    import wm_kernel.cachesim.engine as engine

    system = Block("system", 1500, breakpoint="1h", layer="system")
    messages: list[Block] = []
    requests = []
    for turn in range(100):
        messages += [Block(f"user {turn}", 10), Block(f"reply {turn}", 20)]
        # the last block marked (as an agent marks it): the next request holds it unmarked
        marked = Block(messages[-1].key, 20, breakpoint="5m")
        requests.append(Request(at(turn), [system, *messages[:-1], marked]))
    compared: list[int] = []
    shared_start = engine.shared_start
    monkeypatch.setattr(engine, "shared_start", lambda a, b: compared.append(len(a)) or shared_start(a, b))
    sim = simulate(requests, SONNET)
    assert list(sim.turns["miss_reason"]) == ["first_request"] + ["none"] * 99
    # where each request parts from the one before: 99 looks at the 2 to 3 blocks after the start
    # they share (every block of both: 99 comparisons of up to 202 blocks, 10,000 in all)
    assert len(compared) == 99 and sum(compared) <= 3 * 99
    compared.clear()
    remade = [Request(r.at, r.blocks) for r in reversed(requests)][::-1]  # made last to first
    assert simulate(remade, SONNET).turns.equals(sim.turns)
    assert len(compared) == 100 + 99 + 99  # made (each after the one made before); prepared; parted
