"""The MIRA stability presets: tool order that depends on the process, system sections inside the
1-hour block that follow the clock, each priced a day on MIRA's wire (wm_kernel.testing.mira)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mira_tap_files import CHAT, T0, TOOLS, Tap, compose, load, message, mira_body, session, three_turns

from wm_kernel.experiments.scenario import Scenario
from wm_kernel.testing.cost import mira_instability_cost
from wm_kernel.testing.mira import set_order
from wm_kernel.testing.report import Cost
from wm_kernel.testing.stability import check_stability

NAMES = ["reminder_tool", "web_tool", "memory_tool", "domaindoc_tool", "getcontext_tool", "weather_tool"]
SIX: list[dict[str, Any]] = [
    {"name": n, "description": f"The {n}.", "input_schema": {"type": "object", "properties": {}}} for n in NAMES
]


def late_evening() -> Scenario:
    """Three turns from 22:30 with a collapse: the manifest's date label turns at midnight."""
    return (
        Scenario(
            base_prompt="You help {first_name}. " + "Be plain. " * 600,
            clock="2026-11-30T22:30:00+00:00",
            profile={"first_name": "Ada", "timezone": "UTC"},
        )
        .advance_turn(1)
        .advance(minutes=20)
        .collapse_segment(summary="Late chat")
        .advance_turn(1)
        .advance(minutes=20)
        .advance_turn(1)
    )


def test_a_tap_whose_tools_come_in_another_order_is_flagged_and_priced_a_day(tmp_path: Path) -> None:
    tap = Tap(tmp_path)
    prompt = compose(session("You help {first_name}.\n\n" + "Answer plainly. " * 500))
    # two workers of one deployment: the same tools, listed from a set in two orders
    for turn, tools in enumerate([TOOLS, TOOLS, TOOLS[::-1], TOOLS]):
        tap.request(T0 + 60 * turn, mira_body(prompt, [], f"Message {turn}", tools=tools))
        tap.response(T0 + 60 * turn + 2, CHAT, message(CHAT, (10, 0, 3000)))
    report = check_stability(load(tap.requests))
    assert report.flagged() == {
        "logged_prefix": ["tool:reminder_tool", "tool:web_tool"],
        "logged_tool_order": ["(tools)"],
    }
    result = report.result("logged_tool_order")
    (finding,) = result.findings
    assert result.detail == (
        "the same tools in another order in 2 of 3 requests (a set's order differs between processes)"
    )
    assert (finding.turn, finding.expected, finding.actual) == (
        2,
        "'tool:reminder_tool, tool:web_tool'",
        "'tool:web_tool, tool:reminder_tool'",
    )
    cost = finding.cost
    assert cost is not None and (cost.hours, cost.wire, cost.turns_per_hour) == (24, "MIRA's wire", 30)
    assert cost.extra_usd > 0 and cost.unstable_hit_rate < cost.stable_hit_rate
    assert finding.lines()[-1].startswith(
        f"    cost: ${cost.extra_usd:.4f} a day more (30 turns an hour on claude-sonnet-4-6 on MIRA's wire: "
    )


def test_a_non_cached_system_section_that_moves_is_inside_mira_s_hour_block(tmp_path: Path) -> None:
    tap, _ = three_turns(tmp_path)
    report = check_stability(load(tap.requests))
    assert report.flagged() == {"logged_prefix": ["conversation_manifest"]}
    (finding,) = report.findings
    # composed as non-cached, sent under the 1-hour breakpoint: MIRA's wire caches it
    assert (finding.placement, finding.cached, finding.trinket) == ("system", True, "ManifestTrinket")
    assert finding.cost is not None and finding.cost.note.startswith(
        "the bytes that changed read as a time or a date (it may follow the clock); in this log's 3 requests $"
    )
    assert report.result("logged_tool_order").status == "pass"


@pytest.mark.slow
def test_the_mira_preset_on_a_session_finds_the_clock_and_the_set_order() -> None:
    report = check_stability(late_evening(), preset="mira", tools=SIX, skip=["tz_locale", "hash_seed"])
    assert report.scope == "system"
    assert [(r.name, r.status) for r in report.results] == [
        ("recompose", "pass"),
        ("insertion_order", "pass"),
        ("clock_jitter", "pass"),
        ("tool_order", "not applicable"),
        ("clock_hour", "fail"),
        ("tool_set_order", "fail"),
        ("moving_section", "pass"),
    ]
    assert report.result("moving_section").detail == (
        "no section rewrote the warm block twice; moved it once: conversation_manifest (ManifestTrinket) at turn 1"
    )
    hour = report.result("clock_hour").findings[0]
    assert (hour.section, hour.trinket, hour.placement) == ("conversation_manifest", "ManifestTrinket", "system")
    assert hour.labels == ("composed", "composed an hour later")
    assert 'label="TODAY"' in hour.expected and 'label="YESTERDAY"' in hour.actual
    tools = report.result("tool_set_order").findings[0]
    assert (tools.section, tools.placement, tools.labels) == (
        "(tools)",
        "tools",
        ("PYTHONHASHSEED=1", "PYTHONHASHSEED=2"),
    )
    first, second = set_order(NAMES, 1), set_order(NAMES, 2)
    assert first != second and sorted(first) == sorted(second) == sorted(NAMES)
    for finding in (hour, tools):
        assert finding.cost is not None and (finding.cost.hours, finding.cost.wire) == (24, "MIRA's wire")
        assert finding.cost.extra_usd > 0


def hourly_location(hours: int = 3, turns_an_hour: int = 3) -> Scenario:
    """MIRA HEAD's trinkets on MIRA's layout; the front end POSTs a new forecast each hour, and a
    turn comes every 60 / ``turns_an_hour`` minutes."""
    from trinkets import MIRA_HEAD_NAMES
    from wm_kernel import Layout

    scenario = Scenario(
        base_prompt="You help {first_name}. " + "Be plain. " * 600,
        clock="2026-11-30T09:00:00+00:00",
        profile={"first_name": "Ada", "timezone": "UTC"},
        trinkets=MIRA_HEAD_NAMES,
        layout=Layout.original(),
    )
    for hour in range(hours):
        forecast = [{"hour": f"{9 + hour} AM", "temp": f"{hour}°C", "condition": "Snow", "precip_pct": 80}]
        scenario = scenario.feed("LocationTrinket", "set_location", {"location_name": "Oslo", "forecast": forecast})
        for _ in range(turns_an_hour):
            scenario = scenario.advance_turn().advance(minutes=60 // turns_an_hour)
    return scenario


def test_the_mira_preset_names_the_location_as_the_section_that_moves_the_block() -> None:
    report = check_stability(hourly_location(), preset="mira", only=["recompose", "moving_section"])
    assert [(r.name, r.status) for r in report.results] == [("recompose", "pass"), ("moving_section", "fail")]
    result = report.result("moving_section")
    assert result.detail == "location_context (LocationTrinket) rewrote the warm block at 2 of 8 composes, every 1 h"
    (finding,) = result.findings
    assert (finding.section, finding.trinket, finding.placement, finding.turn) == (
        "location_context",
        "LocationTrinket",
        "system",
        4,
    )
    assert finding.labels == ("turn 3 at 09:40", "turn 4 at 10:00")
    assert finding.expected == "…'ecast (next 2 hours):\\n- 9 AM: 0°C, Snow, 80% chance of rain'"
    assert finding.actual == "…'ecast (next 2 hours):\\n- 10 AM: 1°C, Snow, 80% chance of rain'"
    cost = finding.cost
    assert cost is not None and (cost.hours, cost.wire) == (24, "MIRA's wire")
    assert cost.note == "priced as a rewrite every 1 h, as in the scenario"
    assert cost.extra_usd > 0
    # a rewrite an hour costs less than a rewrite on every request
    every_request = mira_instability_cost(report_composes(), finding, "claude-sonnet-4-6", 30)
    assert 0 < cost.extra_usd < every_request.extra_usd
    assert str(report).splitlines()[2:4] == [
        "  moving_section  FAIL            the scenario's own steps rewriting the 1-hour block while it is warm  "
        "(location_context (LocationTrinket) rewrote the warm block at 2 of 8 composes, every 1 h)",
        "moving_section: section 'location_context' (LocationTrinket), cached system: moved at turn 4 (compose 3; "
        "2 of 8 composes), first difference at character 67",
    ]


def report_composes() -> list[Any]:
    from wm_kernel.testing.replay import run_scenario

    return run_scenario(hourly_location(), {}).composes


def test_the_kits_own_checks_never_move_the_location() -> None:
    # its perturbations compose the same forecast: only moving_section sees it
    report = check_stability(hourly_location(), preset="mira", skip=["tz_locale", "hash_seed", "moving_section"])
    assert report.passed


def test_a_location_set_once_or_a_cold_block_does_not_fail() -> None:
    once = check_stability(hourly_location(hours=1), preset="mira", only=["moving_section"]).result("moving_section")
    assert (once.status, once.detail) == ("pass", "no section rewrote the warm block twice")
    # one turn every 2 hours: the block has expired at each compose, rewritten whatever moved
    cold = (
        Scenario(clock="2026-11-30T09:00:00+00:00", trinkets=["LocationTrinket"])
        .feed("LocationTrinket", "set_location", {"location_name": "Oslo"})
        .advance_turn()
        .advance(hours=2)
        .feed("LocationTrinket", "set_location", {"location_name": "Bergen"})
        .advance_turn()
    )
    result = check_stability(cold, preset="mira", only=["moving_section"]).result("moving_section")
    assert (result.status, result.detail) == (
        "not applicable",
        "no compose came within an hour of the one before it",
    )


def test_without_the_preset_the_kits_checks_see_neither() -> None:
    report = check_stability(late_evening(), skip=["tz_locale", "hash_seed"])
    assert report.scope == "cached" and report.passed
    assert [r.name for r in report.results] == ["recompose", "insertion_order", "clock_jitter", "tool_order"]


def test_preset_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match=r"unknown preset 'kit' \(presets: mira\)"):
        check_stability(late_evening(), preset="kit")
    with pytest.raises(ValueError, match=r"tools= is the tool list of the MIRA preset"):
        check_stability(late_evening(), tools=SIX)
    with pytest.raises(ValueError, match=r"unknown check 'clock_hour' \(a check of preset='mira'\)"):
        check_stability(late_evening(), only=["clock_hour"])
    with pytest.raises(TypeError, match=r"a tool is a definition with a 'name' or a name, got 3"):
        check_stability(late_evening(), preset="mira", tools=[3], only=["tool_set_order"])  # type: ignore[list-item]


def test_a_cost_says_its_period_and_wire() -> None:
    day = Cost("claude-sonnet-4-6", 30, 1.0, 3.5, 0.9, 0.1, 5000, hours=24, wire="MIRA's wire")
    assert day.per_day_usd == 2.5
    assert day.describe() == (
        "$2.5000 a day more (30 turns an hour on claude-sonnet-4-6 on MIRA's wire: "
        "$1.0000 -> $3.5000, hit rate 90.0% -> 10.0%)"
    )
    hour = Cost("claude-sonnet-4-6", 30, 1.0, 1.5, 0.9, 0.1, 5000)
    assert hour.per_day_usd == 12.0 and hour.describe().startswith(
        "$0.5000 an hour more (30 turns an hour on claude-sonnet-4-6: "
    )


@pytest.mark.slow
def test_the_command_line_takes_the_preset_and_a_tools_file(tmp_path: Path) -> None:
    import argparse
    import contextlib
    import io
    import json

    from wm_kernel.testing.cli import add_check_parser, check_command

    scenario_path, tools_path = tmp_path / "s.jsonl", tmp_path / "tools.json"
    late_evening().save(scenario_path)
    tools_path.write_text(json.dumps(SIX), encoding="utf-8")
    parser = argparse.ArgumentParser(prog="python -m wm_kernel")
    add_check_parser(parser.add_subparsers(dest="command"))
    out = io.StringIO()
    args = parser.parse_args(
        [
            "check",
            str(scenario_path),
            "--preset",
            "mira",
            "--tools",
            str(tools_path),
            "--only",
            "clock_hour",
            "--only",
            "tool_set_order",
        ]
    )
    assert check_command(args, out) == 1
    assert out.getvalue().splitlines()[:3] == [
        "cache stability: UNSTABLE: 2 checks (2 fail); 4 composes, system sections",
        "  clock_hour      FAIL            the same state composed again an hour later",
        "  tool_set_order  FAIL            the tool list built from a set, in processes with two PYTHONHASHSEED "
        "values  (the tool list's order depends on the process)",
    ]
    tools_path.write_text("{", encoding="utf-8")
    err = io.StringIO()
    args = parser.parse_args(["check", str(scenario_path), "--preset", "mira", "--tools", str(tools_path)])
    with contextlib.redirect_stderr(err):
        assert check_command(args, io.StringIO()) == 2
    assert err.getvalue().startswith(f"python -m wm_kernel check: error: --tools {tools_path}: not JSON")
