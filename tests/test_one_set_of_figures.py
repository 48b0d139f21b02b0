"""One set of figures: every view of the same prompts (history, %trinkets, budget summary and bars,
%cache, %request, the dashboard's cache, request and replies tabs, reconcile, compare) reports the
same token total and the same cost, with one counter: for a session that never sends, one that sends
(through the real SDK against a mock transport, recorded), one replayed offline from that recording,
and another agent's imported log replayed into a Session."""

from __future__ import annotations

import html
import itertools
import re
from typing import Any

import comm
import pytest

from wm_kernel.cachesim.requests import uncounted_tokens
from wm_kernel.display.budget_bars import budget_bars
from wm_kernel.experiments import Scenario, compare
from wm_kernel.jupyter.dashboard.widget import Dashboard
from wm_kernel.jupyter.magics.tables import trinkets_frame
from wm_kernel.session import set_current_session

MODEL = "claude-sonnet-4-6"
BASE = "You help {first_name}. " + "Keep the house rules; answer in full sentences. " * 120


class QuietComm:
    kernel = "a kernel"

    def __init__(self, **kwargs: Any) -> None:
        self.comm_id = f"c{next(_ids)}"

    def on_msg(self, handler: Any) -> None:
        pass

    def send(self, *args: Any, **kwargs: Any) -> None:
        pass

    def close(self, *args: Any, **kwargs: Any) -> None:
        pass


_ids = itertools.count(1)


def scenario() -> Scenario:
    s = Scenario(
        base_prompt=BASE,
        profile={"first_name": "Ada"},
        clock="2026-11-30T09:00:00+00:00",
        trinkets=["TimeManager", "PeanutGalleryTrinket"],
    )
    s.compose()
    s.feed("PeanutGalleryTrinket", "add_guidance", "concern", "Slow down and check the figures.", ttl=2)
    s.advance(minutes=2).advance_turn(2)
    s.advance(minutes=9).advance_turn(1)  # past the 5-minute cache lifetime
    return s


def test_every_view_reports_the_same_tokens_and_cost(ip, monkeypatch):
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: QuietComm())
    recorded = scenario()
    session = recorded.run()
    session.model = MODEL
    counter = session.token_counter
    assert counter.label == "≈ claude-sonnet-4-6 (tiktoken o200k_base × 1.25) −10%/+20%"
    set_current_session(session)

    # the history: tokens per turn, one counter
    frame = session.history
    per_turn = frame[~frame["dropped"]].groupby("turn")["tokens"].sum().to_dict()
    last = max(per_turn)
    assert session.recorder.counter is counter is session.working_memory.budget.counter
    assert frame.attrs["tokens"] == counter.label

    # %trinkets: each trinket's section, plus the base prompt, is the last turn's total
    table = trinkets_frame(session)
    column = f"tokens ({counter.label})"
    base = int(frame[(frame["turn"] == last) & (frame["section"] == "base_prompt")]["tokens"].iloc[-1])
    assert base + int(table[column].sum()) == per_turn[last]

    # %cache: each request's prompt sections are the history's turn total; its cost is the one cost
    view = ip.run_line_magic("cache", "")
    sim = view.simulation
    assert sim.profile.name == MODEL and sim.counter is counter
    sections = [
        sum(b.tokens for b in request.blocks if not b.key.startswith(("user-", "assistant-")))
        for request in sim.requests
    ]
    assert dict(zip(sim.turns["turn"].tolist(), sections, strict=True)) == per_turn
    assert f"input cost {sim.cost_text()}" in str(view)
    assert str(view).splitlines()[4].startswith(f"tokens counted with {counter.label}")

    # compare: the same replay, the same model: the same tokens and the same cost
    compared = compare(recorded, {"recorded": None}, model=MODEL)
    assert compared.xs("recorded")["tokens_total"].to_dict() == per_turn
    assert compared["cost"].sum() == pytest.approx(sim.total_cost, abs=1e-12)
    assert compared.attrs["tokenizer"] == counter.label

    # the dashboard's cache tab: the simulation's headline, the same cost range
    dashboard = Dashboard(session, cache_model=MODEL, compose=False)
    dashboard.tab = "cache"
    # tags between words are spaces; the span that keeps a dollar sign from typesetting is not
    shown = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<span[^>]*>(&#36;|\$)</span>", "$", dashboard.tab_html)))
    assert sim.headline() in " ".join(shown.split())
    assert "≈ $" in sim.headline() and counter.label in sim.headline()

    # a budget: its summary and its bars give one total, and both say what it includes
    session.working_memory.token_budget = 10**6
    report = session.compose().budget
    bars = budget_bars(session.composed, counter=counter)
    assert bars.total == report.total
    assert report.summary().startswith(
        f"≈ {report.total} tokens, up to {report.upper} / 1000000, sections "
        f"with joiners and HUD frame ({counter.label}; cut on the upper bound)"
    )
    assert f"total · {report.total}<" in bars.svg
    assert f"tokens ({counter.label}) of sections with their joiners, and the HUD frame" in html.unescape(bars.svg)
    dashboard.tab = "budget"
    assert f"total · {report.total}<" in dashboard.tab_html


def test_cache_names_what_it_leaves_out_of_the_request_and_that_is_the_whole_gap_to_request(ip):
    """%cache and %request of one turn differ by what %cache says it leaves out (the separators
    and HUD frame, the provider's framing) and the exchange it says it assumes: nothing else."""
    session = scenario().run()
    session.model = MODEL
    set_current_session(session)
    view = ip.run_line_magic("cache", "--no-advice")
    sim = view.simulation
    assert sim.turns["turn"].tolist() == [0, 1, 2, 3]
    request = ip.run_line_magic("request", "3")
    framing = {o.label: o.tokens for o in request.wire.owners if o.kind == "framing" and o.tokens}
    assert framing == {"separators and HUD frame": 60} and request.wire.framing_estimate == 9
    assert str(view).splitlines()[5] == (
        "not in these figures (they count each section's and message's own text): at turn 3, "
        "69 tokens that %request 3 counts: separators and HUD frame 60, provider framing (estimate) 9"
    )
    assert "at turn 3, 69 tokens that %request 3 counts" in view._repr_html_()
    # the gap, exactly: %cache's request of turn 3 carries the exchange it says it assumes (four
    # 100-token messages, three 400-token replies); %request 3 none (nothing was sent)
    assert sim.exchange_note() == "assuming a 500-token exchange per turn (100-token message, 400-token reply)"
    assert sim.exchange_note() in str(view).splitlines()[0]
    assert int(sim.turns["prompt_tokens"].iloc[-1]) == 3191
    assert 3191 - (4 * 100 + 3 * 400) + 69 == request.wire.tokens == 1660
    assert request.headline().startswith("turn 3, anthropic request for claude-sonnet-4-6: 1,660 tokens")


# -- a session that sends, one replayed from its recording, one imported, one that never sends

RULES = "Check the parcel's tracking number before anything else. " * 60
USERS = [
    "Where is my parcel PX1234567890?",
    "It says delivered, but it is not here.",
    "Can you open a claim for it, please?",
]


def _predicted_usage(session: Any, user: str) -> dict[str, Any]:
    """The usage the simulator predicts for the request being sent now: the mock provider bills it,
    so billed and simulated agree where the figures are one (the point here is every view)."""
    conversation = session.recorder.conversation() + [{"role": "user", "content": user}]
    row = session.cache_simulation(history=conversation).turns.iloc[-1]
    return {
        "input_tokens": int(row["input_tokens"]),
        "cache_read_input_tokens": int(row["cache_read_input_tokens"]),
        "cache_creation_input_tokens": int(row["cache_creation_input_tokens"]),
        "output_tokens": 40,
        "cache_creation": {
            "ephemeral_5m_input_tokens": int(row["ephemeral_5m_input_tokens"]),
            "ephemeral_1h_input_tokens": int(row["ephemeral_1h_input_tokens"]),
        },
    }


def _talking_session(client: Any, recording: Any, made: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Three sends 2, 9 (past the 5-minute lifetime) and 1 minutes apart, recorded as a scenario
    (``made["s"]`` is the session, for the mock provider to bill)."""
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
    from trinkets.time_manager import TimeManager
    from wm_kernel.core.clock import ManualClock
    from wm_kernel.core.profile import Profile
    from wm_kernel.experiments.recorder import ScenarioRecorder
    from wm_kernel.providers.send import send
    from wm_kernel.session import Session

    s = Session(
        "You help {first_name}. " + RULES,
        profile=Profile(first_name="Ada"),
        model=MODEL,
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[TimeManager, PeanutGalleryTrinket],
    )
    if made is not None:
        made["s"] = s
    recorder = ScenarioRecorder(s)
    s.compose()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Ask for the tracking number first.", ttl=2)
    for minutes, user in zip((2, 9, 1), USERS, strict=True):
        s.clock.advance(minutes=minutes)
        s.compose()
        send(s, client, model=MODEL, user=user, recording=recording, max_tokens=512)
    return s, recorder.stop()


def _dollars(html_text: str) -> str:
    return " ".join(
        html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<span[^>]*>(&#36;|\$)</span>", "$", html_text))).split()
    )


def _check_every_view(ip: Any, session: Any, *, sent: bool, log: Any = None) -> None:
    """history, %trinkets, %cache, %request, the dashboard's cache, request and replies tabs and
    reconcile report the same tokens and the same dollars for every turn of ``session``."""
    from wm_kernel.jupyter.dashboard.widget import Dashboard
    from wm_kernel.providers.reconcile import reconcile

    set_current_session(session)
    counter = session.token_counter
    frame = session.history
    sections = frame[~frame["dropped"]].groupby("turn")["tokens"].sum().to_dict()
    turns = sorted(sections)

    # %trinkets: each trinket's section (and the base prompt) add up to the last turn's sections
    table = trinkets_frame(session)
    last = turns[-1]
    base = frame[(frame["turn"] == last) & (frame["section"] == "base_prompt")]["tokens"]
    assert int(base.sum()) + int(table[f"tokens ({counter.label})"].sum()) == sections[last]

    # %cache: the conversation that happened (no assumed exchange where every turn was recorded),
    # its sections the history's, counted with the session's (the model's) counter
    view = ip.run_line_magic("cache", "--no-advice")
    sim = view.simulation
    assert sim.profile.name == MODEL and sim.counter is counter
    rows = sim.turns.set_index("turn")
    unsent = [t for t in turns if session.recorder.exchange_at(t) is None]
    if log is not None:
        assert sim.exchange_note() == "" and "assuming" not in str(view)
    elif sent:
        assert unsent == [turns[-1]]  # composed after the last send, not sent
        assert sim.exchange_note() == (
            f"assuming a 500-token exchange per turn (100-token message, 400-token reply) "
            f"where none was recorded (turn {turns[-1]})"
        )
    else:
        note = sim.exchange_note()
        assert note.startswith("assuming a 500-token exchange per turn") and "where" not in note
    assert sim.exchange_note() in str(view).splitlines()[0]
    for turn, request in zip(rows.index, sim.requests, strict=True):
        in_sections = sum(
            b.tokens
            for b in request.blocks
            if b.layer == "system" or (log is None and not b.key.startswith(("user-", "assistant-")))
        )
        messages = [
            b
            for b in request.blocks
            if b.key.startswith(("user-", "assistant-")) or (log is not None and b.layer == "messages")
        ]
        assert in_sections == sections[turn]
        # %request of that turn: the same sections, the same conversation, the same counter
        wire = ip.run_line_magic("request", str(turn))
        if log is None:  # and what %cache leaves out (it says so) is the whole difference
            left = sum(uncounted_tokens(session, turn, model=MODEL).values())
            unsent_user = messages[-1].tokens if session.recorder.exchange_at(turn) is None else 0
            assert int(rows.loc[turn, "prompt_tokens"]) - unsent_user + left == wire.wire.tokens
            if turn == turns[-1]:
                assert f"at turn {turn}, {left:,} tokens that %request {turn} counts: " in str(view)
        assert wire.counter_name == counter.label
        assert sum(o.tokens for o in wire.wire.owners if o.kind == "section") == sections[turn]
        if log is None:
            assert sum(o.tokens for o in wire.wire.owners if o.kind == "message") == sum(
                b.tokens for b in messages if session.recorder.exchange_at(turn) is not None or b is not messages[-1]
            )
            sent_at = session.recorder.exchange_at(turn)
            if sent_at is not None:
                assert [b.tokens for b in messages][-1] == counter.count(sent_at.user)
        else:
            # the log's messages, one per message (its pieces joined), the same text
            assert len([o for o in wire.wire.owners if o.kind == "message"]) == len(session.replayed.messages[turn])

    # reconcile: the same simulated tokens and dollars for every turn that reached the provider
    result = reconcile(log if log is not None else session, model=MODEL)
    reconciled = result.rows.set_index("turn")
    for turn in reconciled.index:
        assert reconciled.loc[turn, "predicted_usd"] == pytest.approx(rows.loc[turn, "cost_usd"], abs=1e-12)
        assert reconciled.loc[turn, "predicted_read"] == rows.loc[turn, "cache_read_input_tokens"]
        assert reconciled.loc[turn, "predicted_write"] == rows.loc[turn, "cache_creation_input_tokens"]
        assert reconciled.loc[turn, "predicted_input"] == rows.loc[turn, "input_tokens"]
        if sent:  # billed as predicted: the same tokens, the same dollars
            assert reconciled.loc[turn, "billed_usd"] == pytest.approx(reconciled.loc[turn, "predicted_usd"])
        else:  # the log's own bill, as the log reports it
            usage = log.usage.set_index("turn")
            assert reconciled.loc[turn, "billed_read"] == usage.loc[turn, "cache_read_input_tokens"]
            assert reconciled.loc[turn, "billed_write"] == usage.loc[turn, "cache_creation_input_tokens"]
    # an estimated count is shown with its band, in dollars too
    low, high = sim.cost_range
    assert (low < sim.total_cost < high) == (not counter.exact)
    if sent:
        assert sorted(reconciled.index) == [t for t in turns if t not in unsent]

    # the dashboard: the cache tab's headline is the simulation's; the request tab is %request's;
    # the replies tab shows the simulated dollars of every turn sent
    dashboard = Dashboard(session, cache_model=MODEL, compose=False)
    dashboard.tab = "cache"
    assert sim.headline() in _dollars(dashboard.tab_html)
    dashboard.tab = "request"
    assert ip.run_line_magic("request", str(turns[-1])).headline() in _dollars(dashboard.tab_html)
    if sent:
        dashboard.tab = "replies"
        shown = _dollars(dashboard.tab_html)
        for turn in reconciled.index:
            assert f"{reconciled.loc[turn, 'predicted_usd']:.6f}" in shown
            assert f"{rows.loc[turn, 'cost_usd']:.6f}" in shown
    elif log is not None:  # the log's requests, each with the log's own reconciliation
        dashboard.tab = "replies"
        shown = _dollars(dashboard.tab_html)
        assert "nothing sent yet" not in shown and "the log's requests" in shown
        for _, row in reconcile(log).rows.iterrows():
            assert f"{row['billed_usd']:.6f}" in shown and f"{row['predicted_usd']:.6f}" in shown


def test_a_session_that_sends_one_replayed_one_imported_and_one_that_never_sends_agree(ip, monkeypatch):
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: QuietComm())
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "providers"))
    from sdk_mocks import Server, anthropic_client, anthropic_message, json_response

    from wm_kernel.interop import import_log
    from wm_kernel.providers.recording import Recording
    from wm_kernel.tokens import counter_for

    holder: dict[str, Any] = {}

    def respond(request: Any) -> Any:
        import json

        body = json.loads(request.content)
        user = body["messages"][-1]["content"][0]["text"]
        return json_response(anthropic_message(f"On it: {user[:12]}", _predicted_usage(holder["s"], user)))

    # sends through the real SDK against a mock transport, recording every exchange
    server = Server(*([respond] * len(USERS)))
    recording = Recording()

    talking, recorded = _talking_session(anthropic_client(server), recording, holder)
    assert len(server.requests) == len(USERS)
    assert [e.max_tokens for e in talking.recorder.exchanges()] == [512] * len(USERS)
    _check_every_view(ip, talking, sent=True)

    # the same conversation answered offline from the recording: the same figures, turn by turn
    recording.rewind()
    replayed, _ = _talking_session(None, recording)
    _check_every_view(ip, replayed, sent=True)
    costs = talking.cache_simulation().turns["cost_usd"].tolist()
    assert replayed.cache_simulation().turns["cost_usd"].tolist() == costs

    # compare replays the recorded scenario (its send steps answer): the same tokens and dollars
    compared = compare(recorded, {"recorded": None}, model=MODEL).xs("recorded")
    sim = talking.cache_simulation()
    assert compared["cost"].tolist() == pytest.approx(sim.turns["cost_usd"].tolist(), abs=1e-12)
    assert compared["cache_read_tokens"].tolist() == sim.turns["cache_read_input_tokens"].tolist()

    # imported: another agent's log, counted with its model's counter, replayed into a Session
    log = import_log(Path(__file__).parent / "data" / "interop" / "support_anthropic.jsonl", counter=counter_for(MODEL))
    live = log.to_session()
    assert live.token_counter is log.counter and live.model == MODEL
    _check_every_view(ip, live, sent=False, log=log)
    assert live.cache_simulation().turns["cost_usd"].tolist() == log.cache_simulation(MODEL).turns["cost_usd"].tolist()

    # never sends: the assumed exchange, said
    quiet = scenario().run()
    quiet.model = MODEL
    set_current_session(quiet)
    view = ip.run_line_magic("cache", "--no-advice --exchange 50,150")
    assert view.simulation.exchange_note() == (
        "assuming a 200-token exchange per turn (50-token message, 150-token reply)"
    )
    assert view.simulation.exchange_note() in view.simulation.headline()
