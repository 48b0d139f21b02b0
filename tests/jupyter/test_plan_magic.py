"""``%plan``: the current session's plan beside its cache clock: an imported log's compactions, or
the kit session's own collapse and tool-result clear."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from compaction_transcripts import manual_after_idle_and_switch, no_compaction
from IPython.core.error import UsageError

from wm_kernel import Layout, ManualClock, Profile, Session
from wm_kernel.display.plan_view import PlanView
from wm_kernel.session import set_current_session


def test_plan_shows_the_table_the_total_saving_and_the_clock(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = manual_after_idle_and_switch(tmp_path)
    ip.run_line_magic("wm_import", f"'{path}'")
    capsys.readouterr()
    view = ip.run_line_magic("plan", "")
    assert isinstance(view, PlanView) and len(view.plan) == 1 and capsys.readouterr().out == ""
    assert view.plan.attrs["total_saving_usd"] == pytest.approx(0.556012, abs=1e-9)
    assert view.headline == (
        f"{path.name}: 1 compaction, total saving $0.556012 (a plan never costs more than what was recorded)"
    )
    text = str(view)
    assert text.startswith(view.headline + "\n")
    assert "compact before the cache expires (within 300 s of 2026-01-05 10:00:30 UTC, on claude-haiku-4-5)" in text
    # the clock: the compaction that ran cold at 10:10:30 and where the plan runs it, at 10:00:30
    assert "  cold 10:05:30 to 10:10:30 (5e551011, 5 min): TTL ran out\n" in text
    assert "  2. ran 10:10:30: compaction (manual) on a cold cache, 600 s after the previous request" in text
    page = view._repr_html_()
    assert "<table" in page and '<svg class="wm-cache-clock"' in page
    assert page.index("<svg") < page.index("<table")  # the picture, then the table beside it
    assert re.findall(r'data-planned="(\w+)"', page) == ["true", "false"]


def test_plan_says_so_in_one_line_without_a_compaction(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = no_compaction(tmp_path)
    ip.run_line_magic("wm_import", f"'{path}'")
    capsys.readouterr()
    assert ip.run_line_magic("plan", "") is None
    assert capsys.readouterr().out == f"{path.name}: no compaction in the log, nothing to plan\n"


def test_plan_on_the_kit_session_prices_its_collapse_and_clear(ip: Any) -> None:
    s = Session(
        base_prompt="You help {first_name}. " + "Rules. " * 800,
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        layout=Layout.original(),
    )
    set_current_session(s)
    s.compose()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=3)
    for minutes in (2, 70):  # the second turn after the one-hour entry expired
        s.clock.advance(minutes=minutes)
        s.advance_turn()
        s.compose()
    s.clock.advance(minutes=1)
    view = ip.run_line_magic("plan", "--summary 120")
    assert isinstance(view, PlanView)
    assert view.plan["edit"].tolist() == ["segment collapse", "tool-result clear"]
    assert view.plan.loc[0, "added"] == 120 and view.plan.loc[0, "removed"] > 0
    assert view.headline == (
        "the session after turn 2: a segment collapse and a tool-result clear, priced now (warm cache) "
        "and at the next cold miss"
    )
    clock = view.clock
    assert clock.title == "cache clock: the session on claude-sonnet-4-6"
    assert [(r.index, r.at.strftime("%H:%M"), r.ttl_s) for r in clock.requests] == [
        (0, "09:00", 3600.0),
        (1, "09:02", 3600.0),
        (2, "10:12", 3600.0),
    ]
    assert [(c.start.strftime("%H:%M"), c.end.strftime("%H:%M")) for c in clock.cold_spans()] == [("10:02", "10:12")]
    assert clock.now == s.clock.now()
    # the collapse pays back within a turn (its rewrite is small next to what it removes): now, at 10:13
    assert view.plan.loc[0, "recommended"] == "now: $0.000420 now pays back within a turn (0.6)"
    assert [(e.kind, e.planned, e.at.strftime("%H:%M")) for e in clock.edits] == [("segment collapse", True, "10:13")]
    assert "tool-result clear: nothing to remove" in clock.notes
    with pytest.raises(UsageError, match=r"^--summary takes a non-negative number of tokens, got '-3'$"):
        ip.run_line_magic("plan", "--summary=-3")


def test_plan_refuses_bad_arguments_and_an_empty_session_in_one_line(ip: Any) -> None:
    with pytest.raises(UsageError, match="unrecognized arguments: --soon"):
        ip.run_line_magic("plan", "--soon")
    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00")
    with pytest.raises(UsageError, match=r"^%plan: nothing recorded yet: compose first$"):
        ip.run_line_magic("plan", "")


def test_unloading_the_extension_removes_plan(ip: Any) -> None:
    assert ip.find_line_magic("plan") is not None
    ip.extension_manager.unload_extension("wm_kernel")
    try:
        assert ip.find_line_magic("plan") is None
    finally:
        ip.extension_manager.load_extension("wm_kernel")
