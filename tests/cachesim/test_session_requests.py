"""The cache simulator driven by a Session: recorded turns, clock time, a growing conversation,
named sections, and advice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sample_trinkets import Directives, Doc, Ticker

from trinkets.base import EventAwareTrinket
from wm_kernel.cachesim.requests import session_requests, simulate_session
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

BASE = "You help {first_name}. " + "Follow the house rules. " * 200  # 1,265 tokens (estimate)


class StampedLocation(EventAwareTrinket):
    """A cached system section that changes every minute: the classic cache breaker."""

    variable_name = "location_context"
    cache_policy = True

    def generate_content(self, context):
        return f"<where>London at {self.working_memory.clock.now():%H:%M}</where>"


def make_session(*trinkets):
    s = Session(
        base_prompt=BASE,
        profile=Profile(first_name="Ada"),
        continuum_id="c",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=trinkets or [Directives, Ticker, Doc],
    )
    s.recorder.counter = TokenCounter(EstimateTokenizer())
    s.compose()
    return s


def step(s, minutes=1):
    s.clock.advance(minutes=minutes)
    s.advance_turn()


def test_requests_follow_the_prompt_order_with_a_growing_conversation():
    s = make_session()
    step(s)
    turns, requests = session_requests(s, tools_tokens=300)
    assert turns == [0, 1]
    assert [(b.label, b.layer, b.breakpoint, b.tokens) for b in requests[1].blocks] == [
        ("tool definitions", "tools", None, 300),
        ("base_prompt", "system", None, 1265),
        ("behavioral_directives (Directives)", "system", "5m", 3),
        ("user message 1", "messages", None, 100),
        ("assistant reply 1", "messages", None, 400),
        ("user message 2", "messages", None, 100),
        ("domaindoc (Doc)", "messages", None, 4),
        ("datetime_section (Ticker)", "messages", None, 4),
    ]
    assert [r.at.isoformat() for r in requests] == ["2026-11-30T09:00:00+00:00", "2026-11-30T09:01:00+00:00"]


def test_clock_gaps_expire_entries_and_rows_name_the_section_that_broke_the_cache():
    s = make_session()
    step(s)  # 1: hit
    step(s, minutes=10)  # 2: the 5-minute entry lapsed
    s.trinket("Directives").text = "Be thorough."
    step(s)  # 3: a cached section changed
    sim = s.cache_simulation("claude-sonnet-4-6")
    t = sim.turns
    assert t["turn"].tolist() == [0, 1, 2, 3]
    assert t["miss_reason"].tolist() == ["first_request", "none", "ttl_expired", "content_changed"]
    assert t["divergent_label"].tolist() == ["", "", "", "behavioral_directives (Directives)"]
    assert t["first_divergent_block"].tolist() == [None, None, None, 1]
    # a model named counts with that model's counter (the session has none: its history counts cl100k)
    assert sim.counter is not None and sim.counter.model == "claude-sonnet-4-6"
    assert t["cache_read_input_tokens"].tolist() == [0, 1309, 0, 0]
    assert s.cache_simulation().turns["cache_read_input_tokens"].tolist() == [0, 1268, 0, 0]


def test_named_breakpoints_real_messages_and_times():
    s = make_session()
    step(s)
    history = [
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Plan my week"},
    ]
    times = [s.clock.now() - timedelta(minutes=30), s.clock.now()]
    _, requests = session_requests(s, breakpoints=["base_prompt:1h", "last_user"], history=history, times=times)
    assert [(b.label, b.breakpoint, b.tokens) for b in requests[1].blocks[:5]] == [
        ("base_prompt", "1h", 1265),
        ("behavioral_directives (Directives)", None, 3),
        ("user message 1", None, 2),
        ("assistant message 2", None, 2),
        ("user message 3", "5m", 3),
    ]
    sim = simulate_session(s, breakpoints=["base_prompt:1h", "last_user"], history=history, times=times)
    assert sim.turns["ephemeral_1h_input_tokens"].tolist() == [1265, 0]
    assert sim.turns["cache_read_input_tokens"].tolist() == [0, 1265]


def test_bad_session_options_are_clear_errors():
    s = make_session()
    with pytest.raises(
        ValueError,
        match=r"^unknown breakpoint 'hud'; use a recorded section \(base_prompt, "
        r"behavioral_directives, datetime_section, domaindoc\) or one of "
        r"system, last_user$",
    ):
        s.cache_simulation(breakpoints=["hud"])
    with pytest.raises(ValueError, match="^history has 0 user messages; the session recorded 1 turns"):
        s.cache_simulation(history=[])
    with pytest.raises(ValueError, match=r"^unknown model 'nope'; known models: "):
        s.cache_simulation("nope")
    empty = Session(base_prompt="x", trinkets=[], auto_compose=False)
    with pytest.raises(ValueError, match="^nothing recorded yet: compose first$"):
        empty.cache_simulation()


def test_advice_moves_the_volatile_section_out_of_the_cached_prompt():
    s = make_session(StampedLocation, Ticker)
    for _ in range(9):
        step(s)
    sim = s.cache_simulation("claude-sonnet-4-6")  # named, as the advice below: the model's counter
    assert set(sim.turns["miss_reason"][1:]) == {"content_changed"}
    assert set(sim.turns["divergent_label"][1:]) == {"location_context (StampedLocation)"}
    advice = s.cache_advice("claude-sonnet-4-6")
    moves = [x for x in advice.suggestions if x.kind == "move_volatile"]
    assert len(moves) == 1
    assert moves[0].text.startswith(
        "move `location_context (StampedLocation)` (changed in 100% of requests) "
        "out of the cached system prompt to the end (placement notification): $"
    )
    assert moves[0].cost < sim.total_cost
    assert advice.best.cost <= moves[0].cost
    assert len(advice.best.turn_costs) == 10
    assert str(advice).splitlines()[0] == (
        f"claude-sonnet-4-6 on the anthropic wire, 10 requests: current input cost ${sim.total_cost:.6f}"
    )


def test_advice_bridges_long_gaps_with_keepalive_pings():
    s = make_session()
    for minutes in (1, 20, 1, 20, 1):
        step(s, minutes)
    advice = s.cache_advice()
    keep = [x for x in advice.suggestions if x.kind == "keepalive"]
    assert len(keep) == 1 and keep[0].text.startswith("keep-alive: 8 pings every 4m30s through the 2 gaps")
    assert keep[0].cost < advice.current_cost


# -- %cache MODEL


def test_cache_magic_shows_the_table_totals_and_advice(ip, session):
    from IPython.core.error import UsageError

    session.base_prompt = BASE
    session.compose()
    for minutes in (1, 1, 10):
        step(session, minutes)
    view = ip.run_line_magic("cache", "claude-sonnet-4-6")
    assert view.simulation.turns["turn"].tolist() == [0, 1, 2, 3]
    assert view.simulation.turns["miss_reason"].tolist()[-1] == "ttl_expired"
    text = str(view)
    assert text.startswith("claude-sonnet-4-6 on the anthropic wire: 4 requests: ")
    assert "advised: " in text
    page = view._repr_html_()
    assert '<tr class="wm-cache-hit"' in page and 'class="wm-cache-advice"' in page
    plain = ip.run_line_magic("cache", "gpt-5.4 --no-advice --tools 500")
    assert plain.advice is None and plain.simulation.profile.name == "gpt-5.4"
    with pytest.raises(UsageError, match=r"^unknown model 'gpt-0'; known models: "):
        ip.run_line_magic("cache", "gpt-0")
    with pytest.raises(UsageError, match="^unknown breakpoint 'nowhere'"):
        ip.run_line_magic("cache", "--breakpoints nowhere")


def test_a_view_about_another_model_counts_with_that_models_counter(ip):
    """%cache MODEL on a session counting for Claude counts with MODEL's own counter (o200k for
    gpt-5.4), section by section; without a model it counts with the session's."""
    from wm_kernel.session import set_current_session
    from wm_kernel.tokens import counter_for

    s = Session(
        base_prompt="You help {first_name}. " + "Mind the figures. " * 300,
        model="claude-sonnet-4-6",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[],
    )
    s.compose()
    set_current_session(s)
    own = ip.run_line_magic("cache", "--no-advice").simulation
    other = ip.run_line_magic("cache", "gpt-5.4 --no-advice").simulation
    assert own.counter is s.token_counter and other.counter is not None
    assert other.counter.label == "tiktoken o200k_base"
    base = s.composed.section("base_prompt").content
    assert other.requests[0].blocks[0].tokens == counter_for("gpt-5.4").count(base)
    assert own.requests[0].blocks[0].tokens == s.token_counter.count(base)
    assert other.requests[0].blocks[0].tokens != own.requests[0].blocks[0].tokens
    assert "tokens counted with tiktoken o200k_base" in str(other)


def test_cache_magic_takes_the_assumed_exchange_and_refuses_a_bad_one(ip):
    from IPython.core.error import UsageError

    from wm_kernel.session import set_current_session

    s = Session(base_prompt="Hi.", clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[])
    s.compose()
    s.clock.advance(minutes=1)
    s.advance_turn()
    set_current_session(s)
    sim = ip.run_line_magic("cache", "--no-advice --exchange 10,20").simulation
    assert sim.exchange_note() == "assuming a 30-token exchange per turn (10-token message, 20-token reply)"
    assert [b.tokens for b in sim.requests[1].blocks if b.key.startswith(("user-", "assistant-"))] == [10, 20, 10]
    with pytest.raises(UsageError, match=r"^--exchange takes USER,REPLY tokens \(two numbers\), got '10'$"):
        ip.run_line_magic("cache", "--exchange 10")


@pytest.mark.parametrize("wire", ["anthropic", "mira"])
def test_a_replay_builds_each_message_block_once_not_once_per_later_turn(monkeypatch, wire):
    # the requests of n turns hold n**2 message blocks; built anew per turn, that was 4 million
    # blocks for 2,000 turns. Now each message's block is built once and every later request
    # reuses it: the blocks built grow with the turns, not with their square.
    import wm_kernel.cachesim.requests as module

    s = make_session()
    for _ in range(300):
        step(s)
    built = []
    block = module.Block

    def counting(*args, **kwargs):
        built.append(args[0])
        return block(*args, **kwargs)

    monkeypatch.setattr(module, "Block", counting)
    turns, requests = session_requests(s, wire=wire)
    assert len(turns) == 301
    per_turn = len(requests[0].blocks) + 4  # its sections and user message, the reply, the message before
    assert len(built) <= per_turn * len(turns)
    assert sum(len(r.blocks) for r in requests) > 30 * len(built)  # what the requests hold
    # the messages a request repeats are the very blocks of the request before
    before, after = requests[-2].blocks, requests[-1].blocks
    assert all(a is b for a, b in zip(before[4:500], after[4:500], strict=True))
