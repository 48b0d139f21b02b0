"""The cache-stability checker: each sample instability flagged by the right check, its fix and the
built-in trinkets passing; the fresh-process checks run real subprocesses (marked slow)."""

from __future__ import annotations

import argparse
import io

import pytest
import stability_samples as samples

from wm_kernel.experiments.scenario import Scenario
from wm_kernel.testing.cli import add_check_parser, check_command
from wm_kernel.testing.perturbations import CHECKS
from wm_kernel.testing.stability import check_stability

START = "2026-11-30T09:00:00+00:00"
IN_PROCESS = ["recompose", "insertion_order", "clock_jitter", "tool_order"]
LONG_PROMPT = "You help {first_name} with their travel plans. " * 200  # over every model's minimum


def sample_scenario(cls: type, *, base_prompt: str = "You help {first_name}.") -> Scenario:
    name = cls.__name__
    scenario = Scenario(
        clock=START, base_prompt=base_prompt, trinkets=["TimeManager", name], profile={"first_name": "Ada"}
    )
    if issubclass(cls, samples.Facts):
        scenario.feed(name, "set_facts", {"city": "London", "units": "metric", "lang": "en"})
    return scenario.compose().advance(minutes=2).advance_turn().advance(seconds=7).advance_turn()


def check(cls: type, **options: object) -> object:
    return check_stability(sample_scenario(cls), factories={cls.__name__: cls}, **options)


@pytest.mark.parametrize(
    ("unstable", "fixed", "flagged_by"),
    [
        (samples.Seconds, samples.DateOnly, "clock_jitter"),
        (samples.FreshId, samples.SegmentId, "recompose"),
        (samples.Facts, samples.SortedFacts, "insertion_order"),
    ],
)
def test_an_in_process_instability_is_flagged_by_its_check_alone_and_its_fix_passes(
    unstable: type, fixed: type, flagged_by: str
) -> None:
    report = check(unstable, only=IN_PROCESS)
    assert report.flagged() == {flagged_by: [unstable.variable_name]}
    assert not report.passed
    assert check(fixed, only=IN_PROCESS).flagged() == {}


def test_a_finding_says_where_the_bytes_moved_and_what_it_costs() -> None:
    scenario = sample_scenario(samples.Seconds, base_prompt=LONG_PROMPT)
    report = check_stability(
        scenario,
        factories={"Seconds": samples.Seconds},
        only=["clock_jitter"],
        model="claude-sonnet-4-6",
        turns_per_hour=30,
    )
    [finding] = report.findings
    assert (finding.check, finding.section, finding.trinket, finding.turn, finding.offset) == (
        "clock_jitter",
        "location_context",
        "Seconds",
        0,
        29,
    )
    assert (finding.moved, finding.compared) == (3, 3)
    assert finding.lines()[1:3] == [
        "    clock as scripted  …'l_time>2026-11-30 09:00:00</local_time>'",
        "    clock +30 s        …'l_time>2026-11-30 09:00:30</local_time>'",
    ]
    cost = finding.cost
    assert cost is not None and cost.model == "claude-sonnet-4-6" and cost.turns_per_hour == 30
    assert cost.stable_hit_rate > 0.85 and cost.unstable_hit_rate == 0.0
    assert cost.extra_usd > 0 and cost.note == ""
    text = str(report)
    assert text.splitlines()[0] == ("cache stability: UNSTABLE: 1 checks (1 fail); 3 composes, cached sections")
    assert "  clock_jitter  FAIL            the clock moved a few seconds within the same minute" in text
    assert f"    cost: ${cost.extra_usd:.4f} an hour more (30 turns an hour on claude-sonnet-4-6" in text


def test_a_prefix_under_the_models_minimum_costs_nothing_and_says_why() -> None:
    [finding] = check(samples.Seconds, only=["clock_jitter"]).findings
    assert finding.cost is not None and finding.cost.extra_usd == 0.0
    assert "below claude-sonnet-4-6's minimum of 1,024: nothing is cached either way" in finding.cost.note


def test_tool_order_is_not_applicable_while_sessions_declare_no_tools() -> None:
    result = check(samples.DateOnly, only=["tool_order"]).result("tool_order")
    assert (result.status, result.detail) == ("not applicable", "the session declares no tools")


def test_each_check_can_be_switched_off_and_unknown_names_are_refused() -> None:
    report = check(samples.Seconds, skip=["clock_jitter", "hash_seed", "tz_locale"])
    assert [r.name for r in report.results] == ["recompose", "insertion_order", "tool_order"]
    assert report.passed
    with pytest.raises(ValueError, match=r"unknown check 'clock' \(checks: recompose, hash_seed, "):
        check(samples.Seconds, skip=["clock"])
    with pytest.raises(ValueError, match="unknown model"):
        check(samples.Seconds, model="gpt-0")


def test_a_replay_past_its_time_limit_stops_and_says_so() -> None:
    scenario = Scenario(clock=START).compose().advance_turn(50)
    report = check_stability(scenario, only=["recompose"], timeout=1e-9)
    assert report.composes == 1
    assert report.stopped == "stopped at the time limit, after turn 0"
    assert report.result("recompose").composes == 1


def test_max_turns_bounds_every_replay() -> None:
    report = check_stability(Scenario(clock=START).compose().advance_turn(10), only=IN_PROCESS, max_turns=3)
    assert report.composes == 4 and report.passed
    assert {r.composes for r in report.results if r.status == "pass"} == {4}


def test_a_trinket_defined_in_a_function_makes_the_fresh_process_checks_not_applicable() -> None:
    class Local(samples.DateOnly):
        pass

    report = check(Local, only=["hash_seed", "tz_locale"])
    assert [(r.status, r.detail) for r in report.results] == [
        (
            "not applicable",
            "a fresh process cannot build the trinkets: Local is defined inside a function, "
            "which another process cannot import; move it to module level",
        )
    ] * 2


def builtin_scenario() -> Scenario:
    """Every built-in trinket fed, over turns, a collapse and clock moves."""
    s = Scenario(clock=START, base_prompt=LONG_PROMPT, profile={"first_name": "Ada", "timezone": "Europe/London"})
    s.compose()
    s.feed("PeanutGalleryTrinket", "add_guidance", "concern", "Slow </guidance> down.", ttl=3)
    s.feed("ReminderManager", "add_reminder", "Call Bo", "2026-11-30T15:00:00+00:00")
    s.feed(
        "ProactiveMemoryTrinket",
        "surface",
        [
            {"id": "m1", "text": "Likes trains", "importance": 0.8},
            {"id": "m2", "text": "Lives in Leeds", "importance": 0.5},
        ],
    )
    s.feed("GetContextTrinket", "add_pending", "t1", "flights to Oslo")
    s.feed("LoraTrinket", "set_user_model", "Ada prefers short answers.")
    s.feed("DomaindocTrinket", "create_document", "trip", "Trip", "Plans for the Oslo trip")
    s.advance(minutes=3).advance_turn()
    s.feed("GetContextTrinket", "add_success", "t1", "flights to Oslo", "3 flights found")
    s.advance(seconds=40).advance_turn(2)
    s.collapse_segment(summary="Planned the trip", tools_used=["search"])
    return s.advance(minutes=1).advance_turn(2)


def test_the_built_in_trinkets_pass_the_in_process_checks_on_every_section() -> None:
    report = check_stability(builtin_scenario(), only=IN_PROCESS, scope="all")
    assert report.composes == 7
    assert report.passed, str(report)
    assert [r.status for r in report.results] == ["pass", "pass", "pass", "not applicable"]


@pytest.mark.slow  # two fresh processes per check
def test_a_set_iterated_in_hash_order_is_flagged_by_the_hash_seed_check_alone() -> None:
    report = check(samples.SetTags)
    assert report.flagged() == {"hash_seed": ["tool_availability"]}
    [finding] = report.findings
    assert finding.labels == ("PYTHONHASHSEED=1", "PYTHONHASHSEED=2")
    assert check(samples.SortedTags, only=["hash_seed"]).passed


@pytest.mark.slow  # fresh processes
def test_the_machines_time_zone_is_flagged_by_the_tz_locale_check_alone() -> None:
    report = check(samples.LocalClock)
    assert report.flagged() == {"tz_locale": ["location_context"]}
    [finding] = report.findings
    assert finding.labels[0].startswith("TZ=UTC LC_ALL=") and finding.labels[1].startswith("TZ=Pacific/Chatham")
    assert "+0000" in finding.expected and ("+1300" in finding.actual or "+1345" in finding.actual)


@pytest.mark.slow  # fresh processes
def test_the_built_in_trinkets_pass_every_check_on_every_section() -> None:
    report = check_stability(builtin_scenario(), scope="all")
    assert report.passed, str(report)
    assert [r.name for r in report.results] == list(CHECKS)


@pytest.mark.slow  # fresh processes
def test_the_command_line_prints_the_report_and_exits_1_when_unstable(tmp_path: object) -> None:
    import argparse
    from pathlib import Path

    path = Path(str(tmp_path)) / "s.jsonl"
    sample_scenario(samples.SetTags).save(path)
    parser = argparse.ArgumentParser(prog="python -m wm_kernel")
    add_check_parser(parser.add_subparsers(dest="command"))
    out = io.StringIO()
    args = parser.parse_args(
        ["check", str(path), "--trinket", "SetTags=stability_samples:SetTags", "--skip", "tz_locale"]
    )
    assert check_command(args, out) == 1
    assert out.getvalue().splitlines()[0] == (
        "cache stability: UNSTABLE: 5 checks (3 pass, 1 fail, 1 not applicable); 3 composes, cached sections"
    )
    assert "hash_seed: section 'tool_availability' (SetTags), cached system: moved at turn 0" in out.getvalue()
    args = parser.parse_args(["check", str(path), "--trinket", "SetTags=stability_samples:SortedTags"])
    out = io.StringIO()
    assert check_command(args, out) == 0


def _report(*statuses: str) -> object:
    from wm_kernel.testing.report import CheckResult, StabilityReport

    results = [CheckResult(f"check{i}", "a perturbation", status) for i, status in enumerate(statuses)]
    return StabilityReport(results, model="claude-sonnet-4-6", turns_per_hour=30, scope="cached", composes=0)


@pytest.mark.parametrize(
    ("statuses", "passed", "verdict"),
    [
        (("timed out", "timed out", "timed out"), False, "inconclusive"),
        ((), False, "inconclusive"),
        (("timed out", "not applicable"), False, "inconclusive"),
        (("pass", "timed out"), False, "inconclusive"),
        (("error",), False, "inconclusive"),
        (("pass", "fail", "timed out"), False, "UNSTABLE"),
        (("pass", "not applicable"), True, "stable"),
        (("not applicable",), True, "not applicable"),
    ],
)
def test_a_check_that_compared_nothing_is_not_passed(statuses: tuple[str, ...], passed: bool, verdict: str) -> None:
    report = _report(*statuses)
    assert (report.passed, report.verdict) == (passed, verdict)  # type: ignore[attr-defined]
    assert report.headline().startswith(f"cache stability: {verdict}: ")  # type: ignore[attr-defined]


def test_the_check_command_exits_1_when_every_check_timed_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    import wm_kernel.testing.stability as stability

    monkeypatch.setattr(stability, "check_stability", lambda *a, **k: _report("timed out", "timed out"))
    scenario = Scenario(clock=START).compose()
    path = f"{tmp_path}/s.jsonl"
    scenario.save(path)
    parser = add_check_parser(argparse.ArgumentParser().add_subparsers())
    out = io.StringIO()
    assert check_command(parser.parse_args([path]), out=out) == 1
    assert out.getvalue().startswith("cache stability: inconclusive: 2 checks (2 timed out)")


def test_a_timeout_of_1e308_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    scenario = Scenario(clock=START).compose().advance_turn()
    with pytest.raises(ValueError) as caught:
        check_stability(scenario, timeout=1e308, only=["recompose"])
    assert str(caught.value) == "timeout must be at most 1,000,000,000 seconds (about 31 years), got 1e+308"
    path = f"{tmp_path}/s.jsonl"
    scenario.save(path)
    from wm_kernel.__main__ import main

    with pytest.raises(SystemExit):
        main(["check", path, "--timeout", "1e308"])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m wm_kernel check: error: argument --timeout: "
        "the timeout must be at most 1,000,000,000 seconds (about 31 years), got 1e+308"
    )
