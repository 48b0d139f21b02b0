"""``%%wm_check`` and ``%wm_check stability`` in a real InteractiveShell."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("IPython")

from IPython.core.error import UsageError  # noqa: E402

from wm_kernel.experiments.scenario import Scenario  # noqa: E402
from wm_kernel.jupyter.magics.check import CheckTable  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.testing.report import StabilityReport  # noqa: E402

CELL = """
# guidance shows for two turns
section_present peanutgallery_guidance --turns 0..2
section_present peanutgallery_guidance --turns 0..3
placement_under notification 5
cached_prefix_stable
no_markup_escape "</guidance><x>"
"""


def test_a_cell_of_assertions_shows_a_pass_fail_table(ip: Any, session: Session) -> None:
    session.trinket("PeanutGalleryTrinket").add_guidance("concern", "</guidance><x>", ttl=2)
    session.compose()
    session.advance_turn(3)
    table = ip.run_cell_magic("wm_check", "", CELL)
    assert isinstance(table, CheckTable)
    assert [(r.check, r.passed) for r in table.rows] == [
        ("section_present peanutgallery_guidance --turns 0..2", True),
        ("section_present peanutgallery_guidance --turns 0..3", False),
        ("placement_under notification 5", False),
        ("cached_prefix_stable", True),
        ('no_markup_escape "</guidance><x>"', True),
    ]
    assert table.rows[1].message == (
        "section 'peanutgallery_guidance' is missing from turn 3 (checked turns 0..3; sections at turn 3: "
        "base_prompt, conversation_manifest, datetime_section)"
    )
    assert repr(table).splitlines()[0] == "5 checks: 3 passed, 2 failed"
    assert (
        "<td>FAIL</td><td><code>section_present peanutgallery_guidance --turns 0..3</code></td>" in table._repr_html_()
    )


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (
            "section_presnt x",
            "line 1: unknown assertion 'section_presnt' (assertions: section_present, "
            "placement_under, cached_prefix_stable, hit_rate, no_markup_escape)",
        ),
        ("\nplacement_under system lots", "line 2 (placement_under): argument tokens: invalid int value: 'lots'"),
        (
            "section_present x --turns 3..1",
            "line 1 (section_present): argument --turns: expected turns A..B with 0 <= A <= B, got '3..1'",
        ),
        (
            "hit_rate claude-sonnet-4-6 180%",
            "line 1 (hit_rate): argument at_least: a rate is between 0 and 1 (0% and 100%), got '180%'",
        ),
        ("# nothing", "%%wm_check needs at least one assertion line (e.g. section_present base_prompt)"),
    ],
)
def test_a_line_that_cannot_be_read_is_one_usage_error(ip: Any, cell: str, message: str) -> None:
    with pytest.raises(UsageError) as failed:
        ip.run_cell_magic("wm_check", "", cell)
    assert str(failed.value) == message


def test_wm_check_stability_runs_the_checker_on_a_scenario(ip: Any) -> None:
    ip.user_ns["sc"] = Scenario(clock="2026-11-30T09:00:00+00:00").compose().advance_turn(2)
    report = ip.run_line_magic("wm_check", "stability --scenario sc --only recompose --only clock_jitter")
    assert isinstance(report, StabilityReport)
    assert [(r.name, r.status) for r in report.results] == [("recompose", "pass"), ("clock_jitter", "pass")]
    with pytest.raises(UsageError, match="unknown check 'clock'"):
        ip.run_line_magic("wm_check", "stability --scenario sc --skip clock")
    with pytest.raises(UsageError, match="no variable 'nope' in the notebook"):
        ip.run_line_magic("wm_check", "stability --scenario nope")
    with pytest.raises(UsageError, match="runs the stability checker"):
        ip.run_line_magic("wm_check", "")
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("wm_check", "bogus")
    assert str(caught.value) == (
        "%wm_check: unknown command 'bogus': %wm_check stability runs the stability checker; "
        "%%wm_check (a cell) runs assertions"
    )


def test_a_turn_range_the_session_never_had_is_a_usage_error_before_any_line_runs(ip: Any, session: Session) -> None:
    session.compose()
    session.advance_turn(2)
    with pytest.raises(UsageError) as caught:
        ip.run_cell_magic("wm_check", "", "section_present base_prompt\nsection_present base_prompt --turns 1..5")
    assert str(caught.value) == (
        "line 2 (section_present): --turns 1..5: turn 3 was not recorded (recorded turns: 0..2)"
    )
    table = ip.run_cell_magic("wm_check", "", "section_present base_prompt --turns 1..2")
    assert [(r.check, r.passed) for r in table.rows] == [("section_present base_prompt --turns 1..2", True)]


def test_wm_check_stability_replays_the_current_session_from_its_birth(ip: Any) -> None:
    from stability_samples import Seconds

    from wm_kernel.session import current_session

    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00 --trinkets TimeManager")
    live = current_session()
    live.compose()
    live.add_trinket(Seconds)  # a trinket added later is in the recording too
    for _ in range(3):
        live.clock.advance(seconds=90)
        live.advance_turn()
    report = ip.run_line_magic("wm_check", "stability --only recompose --only clock_jitter")
    assert [(r.name, r.status) for r in report.results] == [("recompose", "pass"), ("clock_jitter", "fail")]
    assert [f.section for f in report.findings] == ["location_context"]


def test_a_session_that_cannot_be_replayed_says_why_and_what_to_do(ip: Any) -> None:
    from wm_kernel.session import set_current_session

    set_current_session(Session())  # a SystemClock: its moves cannot be replayed
    with pytest.raises(UsageError) as failed:
        ip.run_line_magic("wm_check", "stability")
    assert str(failed.value) == (
        "%wm_check stability: this session has no recording to replay: its clock is a SystemClock, whose moves "
        "cannot be replayed. Start a session that records from its first turn (%wm_session --clock "
        "2026-11-30T09:00:00+00:00, a ManualClock), or pass --scenario NAME (a Scenario in the notebook)"
    )


def test_wm_check_stability_checks_an_imported_log_request_against_request(ip: Any) -> None:
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data" / "interop" / "bad_anthropic.jsonl"
    ip.run_line_magic("wm_import", f"'{data}'")
    report = ip.run_line_magic("wm_check", "stability")
    assert [r.name for r in report.results] == ["logged_prefix"]
    with pytest.raises(UsageError, match=r"^an imported log is checked request against request"):
        ip.run_line_magic("wm_check", "stability --only recompose")


def test_unloading_the_extension_removes_the_check_magics(ip: Any) -> None:
    assert "wm_check" in ip.magics_manager.magics["cell"]
    ip.extension_manager.unload_extension("wm_kernel")
    assert "wm_check" not in ip.magics_manager.magics["cell"]
    assert "wm_check" not in ip.magics_manager.magics["line"]
    ip.extension_manager.load_extension("wm_kernel")
    assert "wm_check" in ip.magics_manager.magics["line"]
