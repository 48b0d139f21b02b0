"""One set of figures: every view of the same prompts (history, %trinkets, budget summary and bars,
%cache, the dashboard, compare) reports the same token total and the same cost, with one counter."""
from __future__ import annotations

import html
import itertools
import re
from typing import Any

import comm
import pytest

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
    s = Scenario(base_prompt=BASE, profile={"first_name": "Ada"}, clock="2026-11-30T09:00:00+00:00",
                 trinkets=["TimeManager", "PeanutGalleryTrinket"])
    s.compose()
    s.feed("PeanutGalleryTrinket", "add_guidance", "concern", "Slow down and check the figures.", ttl=2)
    s.advance(minutes=2).advance_turn(2)
    s.advance(minutes=9).advance_turn(1)      # past the 5-minute cache lifetime
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
    sections = [sum(b.tokens for b in request.blocks if not b.key.startswith(("user-", "assistant-")))
                for request in sim.requests]
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
    dashboard.tabs.selected_index = dashboard.tabs.children.index(dashboard.cache)
    # tags between words are spaces; the span that keeps a dollar sign from typesetting is not
    shown = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<span[^>]*>(&#36;|\$)</span>", "$", dashboard.cache.value)))
    assert sim.headline() in " ".join(shown.split())
    assert "≈ $" in sim.headline() and counter.label in sim.headline()

    # a budget: its summary and its bars give one total, and both say what it includes
    session.working_memory.token_budget = 10**6
    report = session.compose().budget
    bars = budget_bars(session.composed, counter=counter)
    assert bars.total == report.total
    assert report.summary().startswith(f"≈ {report.total} tokens, up to {report.upper} / 1000000, sections "
                                       f"with joiners and HUD frame ({counter.label}; cut on the upper bound)")
    assert f"total · {report.total}<" in bars.svg
    assert f"tokens ({counter.label}) of sections with their joiners, and the HUD frame" in html.unescape(bars.svg)
    dashboard.tabs.selected_index = dashboard.tabs.children.index(dashboard.budget)
    assert f"total · {report.total}<" in dashboard.budget.value
