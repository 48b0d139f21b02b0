"""The dashboard's plan panel (DashboardModel.plan_html): the cache clock of the turn on view, as
%plan draws it, drawn once per (model, turn, latest turn, compose)."""

from __future__ import annotations

import re
from pathlib import Path

from compaction_transcripts import manual_after_idle_and_switch

from wm_kernel import Layout, ManualClock, Profile, Session
from wm_kernel.interop.log_files import import_log
from wm_kernel.jupyter.dashboard.model import DashboardModel


def _session() -> Session:
    s = Session(
        base_prompt="You help {first_name}. " + "Rules. " * 800,
        profile=Profile(first_name="Ada <b>"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        layout=Layout.original(),
    )
    s.compose()
    for _ in range(3):
        s.clock.advance(minutes=2)
        s.advance_turn()
        s.compose()
    return s


def requests_drawn(page: str) -> list[str]:
    return re.findall(r'data-request="(\d+)"', page)


def test_the_plan_panel_draws_the_clock_up_to_the_turn_on_view() -> None:
    s = _session()
    model = DashboardModel(s)
    live = model.plan_html()
    # wrapped as every view is, so no typesetter reads its dollars as math
    assert live.startswith('<div class="mathjax_ignore tex2jax_ignore"><div class="wm-cache-clock-view"')
    assert '<svg class="wm-cache-clock"' in live
    assert requests_drawn(live) == ["0", "1", "2", "3"]
    assert "cache clock: the session on claude-sonnet-4-6" in live
    assert model.plan_html() is live  # nothing changed: the same drawing
    model.viewing_turn = 1
    earlier = model.plan_html()
    assert requests_drawn(earlier) == ["0", "1"]
    assert "<title>now: 09:02:00</title>" in earlier  # planned right after turn 1's request
    model.cache_model = "claude-haiku-4-5"
    assert "on claude-haiku-4-5" in model.plan_html()


def test_the_plan_panel_of_a_session_with_nothing_recorded_says_why() -> None:
    s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"))
    assert DashboardModel(s).plan_html() == (
        '<div class="wm-cache-clock-view" style="font-size:12px"><i>nothing recorded yet: compose first</i></div>'
    )


def test_the_plan_panel_of_an_imported_log_marks_the_request_on_view(tmp_path: Path) -> None:
    log = import_log(manual_after_idle_and_switch(tmp_path))
    live = log.to_session()
    model = DashboardModel(live)
    model.viewing_turn = 1
    page = model.plan_html()
    assert requests_drawn(page) == ["0", "1", "2", "3"]
    assert "<title>now: 10:00:30</title>" in page
    assert re.findall(r'data-planned="(\w+)"', page) == ["true", "false"]


def test_the_dashboards_plan_tab_draws_the_clock_of_the_turn_on_the_slider() -> None:
    from wm_kernel.jupyter.dashboard.widget import Dashboard

    s = _session()
    d = Dashboard(s)
    d.tab = "plan"
    assert '<svg class="wm-cache-clock"' in d.tab_html
    assert requests_drawn(d.tab_html) == ["0", "1", "2", "3"]
    d.turn = 1  # the slider: the tab follows it
    assert requests_drawn(d.tab_html) == ["0", "1"]
    d.close()
