"""The cache simulator on MIRA's wire against the kit's: MIRA's breakpoints and TTLs, priced."""

from __future__ import annotations

import pytest
from sample_trinkets import Directives, Doc, Ticker

from trinkets.base import EventAwareTrinket
from wm_kernel.cachesim.requests import session_requests
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer.layout import Layout
from wm_kernel.session import Session
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

BASE = "You help. " + "Follow the house rules. " * 200  # 1,264 tokens (estimate)
COLUMNS = [
    "turn",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "ephemeral_1h_input_tokens",
    "input_tokens",
    "miss_reason",
]


class Where(EventAwareTrinket):
    """A non-cached system section ("location_context" in the original's layout)."""

    variable_name = "location_context"
    cache_policy = False
    text = "<where>London</where>"

    def generate_content(self, context):  # type: ignore[no-untyped-def]
        return self.text


def make_session(layout: Layout | None = None) -> Session:
    """Base prompt and directives (cached system), a non-cached system section, the domaindoc after
    the history and a clock in the HUD that changes every minute."""
    Where.text = "<where>London</where>"
    s = Session(
        base_prompt=BASE,
        continuum_id="c",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[Directives, Where, Ticker, Doc],
        layout=layout or Layout.original(),
    )
    s.recorder.counter = TokenCounter(EstimateTokenizer())
    s.compose()
    return s


def play(s: Session) -> Session:
    """Turns 1, 2 a minute apart (the HUD changes each time), turn 3 ten minutes later, turn 4 with
    the non-cached system section changed."""
    for minutes in (1, 1, 10):
        s.clock.advance(minutes=minutes)
        s.advance_turn()
    Where.text = "<where>Paris</where>"
    s.clock.advance(minutes=1)
    s.advance_turn()
    return s


def table(sim) -> list[list[object]]:  # type: ignore[no-untyped-def]
    return sim.turns[COLUMNS].values.tolist()


def test_a_session_laid_out_as_the_original_uses_mira_s_wire() -> None:
    s = make_session()
    assert s.wire == "mira"
    assert make_session(Layout.default()).wire is None
    sim = s.cache_simulation()
    assert sim.wire == "mira"
    assert sim.headline().startswith("claude-sonnet-4-6 on the mira wire: ")
    assert str(sim).startswith("claude-sonnet-4-6 on the mira wire: 1 requests: ")
    s.wire = "anthropic"
    assert s.cache_simulation().wire == "anthropic"
    s.wire = None
    assert s.wire == "mira"
    with pytest.raises(
        ValueError,
        match=r"^unknown wire 'mistral'; wires: anthropic, openai, openai-responses, "
        r"gemini, bedrock, mira$",
    ):
        s.wire = "mistral"
    # a model MIRA's wire cannot send to is simulated on its provider's own wire, unless asked
    assert s.cache_simulation("gpt-5.4").wire == "openai"
    with pytest.raises(ValueError, match=r"^gpt-5.4 is a openai model; the mira wire sends to anthropic models$"):
        s.cache_simulation("gpt-5.4", wire="mira")


def test_mira_s_requests_block_by_block() -> None:
    s = play(make_session())
    _, requests = session_requests(s)
    assert [(b.label, b.tokens, b.breakpoint, b.layer) for b in requests[1].blocks] == [
        ("base_prompt", 1264, None, "system"),
        ("behavioral_directives (Directives)", 3, None, "system"),
        # the non-cached section is in MIRA's one system block, its 1-hour breakpoint after it
        ("location_context (Where)", 6, "1h", "system"),
        ("user message 1", 100, None, "messages"),
        ("assistant reply 1", 400, "1h", "messages"),
        ("domaindoc (Doc)", 4, "5m", "messages"),
        ("datetime_section (Ticker)", 4, None, "messages"),
        ("user message 2", 100, None, "messages"),
    ]
    _, kit = session_requests(s, wire="anthropic")
    assert [(b.label, b.breakpoint) for b in kit[1].blocks] == [
        ("base_prompt", None),
        ("behavioral_directives (Directives)", "5m"),
        ("location_context (Where)", None),
        ("user message 1", None),
        ("assistant reply 1", None),
        ("user message 2", None),
        ("domaindoc (Doc)", None),
        ("datetime_section (Ticker)", None),
    ]
    # with tools, MIRA marks them for an hour too: five marks with the domaindoc's
    _, tooled = session_requests(s, tools_tokens=500)
    assert [(b.label, b.breakpoint, b.layer) for b in tooled[1].blocks[:1]] == [("tool definitions", "1h", "tools")]
    # a list of breakpoints replaces the wire's own
    _, named = session_requests(s, breakpoints=["system:1h", "domaindoc"])
    assert [b.breakpoint for b in named[1].blocks] == [None, "1h", None, None, None, "5m", None, None]


def test_mira_s_wire_against_the_kit_s_turn_by_turn() -> None:
    s = play(make_session())
    mira, kit = s.cache_simulation(), s.cache_simulation(wire="anthropic")
    assert table(mira) == [
        [0, 0, 1277, 1273, 104, "first_request"],
        # the HUD changed, and nothing cached is invalidated: the 1-hour system entry is read, the
        # conversation written up to the last assistant message (1 hour) and the domaindoc (5 minutes)
        [1, 1273, 504, 500, 104, "content_changed"],
        [2, 1773, 504, 500, 104, "content_changed"],
        # ten minutes later the 1-hour entries are still there
        [3, 2273, 504, 500, 104, "content_changed"],
        # a non-cached system section changed: it is inside the 1-hour block, everything is rewritten
        [4, 0, 3276, 3272, 104, "content_changed"],
    ]
    assert mira.turns["divergent_label"].tolist()[4] == "location_context (Where)"
    assert table(kit) == [
        [0, 0, 1267, 0, 114, "first_request"],
        [1, 1267, 0, 0, 614, "none"],
        [2, 1267, 0, 0, 1114, "none"],
        # the kit's 5-minute entry is gone after ten minutes
        [3, 0, 1267, 0, 1614, "ttl_expired"],
        # the non-cached section lies after the kit's breakpoint: nothing cached changed
        [4, 1267, 0, 0, 2113, "none"],
    ]
    # 1-hour writes priced as 1-hour writes: turn 0 writes 1,273 at $6 and 4 at $3.75, 104 plain at $3
    assert mira.turns["cost_usd"].tolist()[0] == pytest.approx((1273 * 6 + 4 * 3.75 + 104 * 3) / 1e6)
    # turn 3: 2,273 read at $0.30, 500 written for an hour, 4 for five minutes
    assert mira.turns["cost_usd"].tolist()[3] == pytest.approx((2273 * 0.3 + 500 * 6 + 4 * 3.75 + 104 * 3) / 1e6)
    assert kit.turns["cost_usd"].tolist()[0] == pytest.approx((1267 * 3.75 + 114 * 3) / 1e6)
    assert (round(mira.total_cost, 6), round(kit.total_cost, 6)) == (0.039501, 0.02735)


def test_a_hud_change_invalidates_nothing_cached_on_mira_s_wire() -> None:
    s = make_session()
    for _ in range(3):
        s.clock.advance(minutes=1)
        s.advance_turn()
    hud = s.history[s.history.section == "datetime_section"]["digest"].tolist()
    assert len(set(hud)) == 4  # the HUD differs at every turn
    sim = s.cache_simulation()
    cached = [
        sum(b.tokens for b in r.blocks[: max(i for i, b in enumerate(r.blocks) if b.breakpoint == "1h") + 1])
        for r in sim.requests
    ]
    # every request reads all it wrote before up to its last 1-hour breakpoint
    assert sim.turns["cache_read_input_tokens"].tolist()[1:] == [cached[0], cached[1], cached[2]]


def test_more_post_history_items_than_the_api_allows_are_refused_by_the_simulator_too() -> None:
    class Other(Doc):
        variable_name = "other_doc"

    layout = Layout.original().with_section("other_doc", "post_history")
    s = Session(
        base_prompt=BASE,
        continuum_id="c",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[Doc, Other, Ticker],
        layout=layout,
    )
    s.compose()
    s.advance_turn()
    with pytest.raises(
        ValueError,
        match=r"^requests\[1\] has 5 cache breakpoints; claude-sonnet-4-6 allows at "
        r"most 4$",
    ):
        s.cache_simulation(tools_tokens=10)


def test_the_cache_magic_on_mira_s_wire(ip, session) -> None:  # type: ignore[no-untyped-def]
    from IPython.core.error import UsageError

    session.base_prompt = BASE
    session.compose()
    session.clock.advance(minutes=1)
    session.advance_turn()
    view = ip.run_line_magic("cache", "--wire mira --no-advice")
    assert view.simulation.wire == "mira"
    assert str(view).startswith("claude-sonnet-4-6 on the mira wire: 2 requests: ")
    assert ip.run_line_magic("cache", "--no-advice").simulation.wire == "anthropic"
    with pytest.raises(
        UsageError,
        match=r"^unknown wire 'x'; wires: anthropic, openai, openai-responses, "
        r"gemini, bedrock, mira$",
    ):
        ip.run_line_magic("cache", "--wire x")
    with pytest.raises(UsageError, match=r"^gpt-5.4 is a openai model; the mira wire sends to anthropic models$"):
        ip.run_line_magic("cache", "gpt-5.4 --wire mira")
