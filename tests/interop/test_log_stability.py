"""The stability check of an imported log: each request's cached prefix against the one before."""

# ruff: noqa: E501  (the golden report is written out as the terminal shows it, long lines included)
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wm_kernel.interop import import_log
from wm_kernel.testing.logcheck import check_log
from wm_kernel.testing.stability import check_stability

ROOT = Path(__file__).resolve().parents[2]
PARCELLY = ROOT / "notebooks" / "logs" / "parcelly_support.jsonl"
DATA = ROOT / "tests" / "data" / "interop"

PARCELLY_REPORT = """\
cache stability: UNSTABLE: 1 checks (1 fail); 5 composes, cached sections
  logged_prefix  FAIL            the cached prefix's bytes are the same from one logged request to the next  (4 request pairs compared)
logged_prefix: section 'system[1] <customer_context>' (system), cached system: moved at turn 1 (compose 1; 3 of 4 composes), first difference at character 77
    turn 0  …' time: 2026-11-30T09:00:00Z\\n</customer_context>'
    turn 1  …' time: 2026-11-30T09:00:40Z\\n</customer_context>'
    cost: $0.1893 an hour more (30 turns an hour on claude-sonnet-4-6: $0.0429 -> $0.2322, hit rate 86.8% -> 0.0%); in this log's 5 requests $0.0274 as logged, $0.0270 with it held still
logged_prefix: section 'tool:track_parcel' (tools), cached system: moved at turn 3 (compose 3; 1 of 4 composes), first difference at character 80
    turn 2  …'l by its tracking number.", "input_schema": {"type": "object'…
    turn 3  …'l by its tracking number (12 characters, starts with PX).", '…
    cost: $0.1901 an hour more (30 turns an hour on claude-sonnet-4-6: $0.0525 -> $0.2426, hit rate 82.7% -> 0.0%); in this log's 5 requests $0.0274 as logged, $0.0168 with it held still
every turn: section 'system[1] <customer_context>' (system), cached system: new at each of the 4 turns after the first, at character 7,337 of the 7,437-character cached prefix: each change writes the 100 characters from it on again and saves nothing, so it never pays back (break-even infinite)"""


def test_the_parcelly_timestamp_is_named_with_its_cost_and_the_deploy_after_it() -> None:
    report = check_stability(import_log(PARCELLY))
    assert str(report) == PARCELLY_REPORT
    assert not report.passed
    timestamp, deploy = report.findings
    assert (timestamp.turn, timestamp.moved, timestamp.compared, timestamp.offset) == (1, 3, 4, 77)
    # the timestamp is new at every request (the deploy, not the timestamp, broke the prefix first at
    # turn 3): an edit that fires every turn, named below the checks, whose verdict it leaves be
    (every,) = report.every_turn
    assert (every.section, every.changed, every.compared, every.offset, every.prefix_chars) == (
        "system[1] <customer_context>",
        4,
        4,
        7_337,
        7_437,
    )
    # turn 3 moved both: the tools come first, so the tool is what broke the cache there
    assert (deploy.section, deploy.turn, deploy.moved) == ("tool:track_parcel", 3, 1)


def test_a_stable_log_passes_and_max_turns_bounds_it() -> None:
    billed = import_log(DATA / "support_anthropic_billed.jsonl")
    assert check_log(billed).passed
    early = check_log(import_log(PARCELLY), max_turns=2)
    assert early.flagged() == {"logged_prefix": ["system[1] <customer_context>"]}
    assert early.findings[0].compared == 2


def test_one_request_is_not_applicable_and_perturbation_options_are_refused(tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(PARCELLY.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    report = check_log(import_log(one))
    assert report.passed and report.results[0].status == "not applicable"
    assert report.results[0].detail == "the log has one request: nothing to compare"
    with pytest.raises(ValueError, match=r"^factories, skip and only choose perturbation checks of a scenario"):
        check_stability(import_log(PARCELLY), skip=["hash_seed"])
    with pytest.raises(ValueError, match=r"^scope must be one of cached, system, all, got 'x'$"):
        check_log(import_log(PARCELLY), scope="x")


@pytest.mark.slow
def test_the_check_command_takes_a_log(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "wm_kernel", "check", str(PARCELLY)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert (run.returncode, run.stdout.rstrip("\n"), run.stderr) == (1, PARCELLY_REPORT, "")
    stable = subprocess.run(
        [sys.executable, "-m", "wm_kernel", "check", str(DATA / "support_anthropic_billed.jsonl")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert stable.returncode == 0 and stable.stdout.startswith("cache stability: stable: 1 checks (1 pass)")
    refused = subprocess.run(
        [sys.executable, "-m", "wm_kernel", "check", str(PARCELLY), "--only", "recompose"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert refused.returncode == 2
    assert refused.stderr == (
        f"python -m wm_kernel check: error: {PARCELLY} is a request log, not a scenario: --trinket, "
        f"--skip and --only choose perturbation checks of a scenario\n"
    )
    scenario = tmp_path / "s.jsonl"
    scenario.write_text(
        json.dumps({"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00"}) + "\n",
        encoding="utf-8",
    )
    plain = subprocess.run(
        [sys.executable, "-m", "wm_kernel", "check", str(scenario), "--only", "recompose"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert plain.returncode == 0 and "recompose" in plain.stdout


def test_a_log_without_cache_marks_is_not_applicable_and_says_why() -> None:
    from wm_kernel.testing.stability import check_stability

    log = import_log(Path(__file__).resolve().parents[1] / "data" / "interop" / "claude_code_session.jsonl")
    report = check_stability(log)
    assert report.results[0].status == "not applicable"
    assert report.headline().startswith("cache stability: not applicable: 1 checks (1 not applicable)")
    assert report.results[0].detail.startswith(
        "no section of the log is in a cached prefix: its requests carry "
        "no cache mark (a Claude Code transcript holds neither"
    )
    # every section compared when asked: the bytes of the conversation can be checked all the same
    assert check_stability(log, scope="all").results[0].status in ("pass", "fail")
