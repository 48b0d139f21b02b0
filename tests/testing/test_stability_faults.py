"""The stability checker under faults (issue 34 items 10, 17): its timeout holds when a trinket
hangs, Ctrl-C leaves no worker process and no job file, bad bounds are clear errors, and a U+2028
in fed text does not fail a stable scenario."""

from __future__ import annotations

import glob
import math
import os
import subprocess
import sys
import tempfile

import pytest

from wm_kernel.experiments.scenario import Scenario
from wm_kernel.testing import worker
from wm_kernel.testing.stability import check_stability

START = "2026-11-30T09:00:00+00:00"


def _jobs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "wm-check-*.json")))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": math.inf}, "timeout must be a positive, finite number of seconds, got inf"),
        ({"timeout": math.nan}, "timeout must be a positive, finite number of seconds, got nan"),
        ({"timeout": -1}, "timeout must be a positive, finite number of seconds, got -1"),
        ({"max_turns": -5}, "max_turns must be at least 0, got -5"),
        ({"max_turns": 2.5}, "max_turns must be an int, got float"),
    ],
)
def test_bad_bounds_are_clear_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises((ValueError, TypeError)) as error:
        check_stability(Scenario(clock=START).compose(), only=["recompose"], **options)  # type: ignore[arg-type]
    assert str(error.value) == message


HANGING = """
import sys
sys.path.insert(0, sys.argv[1])
import stability_samples as samples
from wm_kernel.experiments.scenario import Scenario
from wm_kernel.testing.stability import check_stability
scenario = Scenario(clock="2026-11-30T09:00:00+00:00", trinkets=["Hangs"]).compose().advance_turn(3)
report = check_stability(scenario, factories={"Hangs": samples.Hangs}, only=["recompose"], timeout=1.0)
print(report.composes, report.stopped)
"""


@pytest.mark.slow
def test_a_hanging_trinket_stops_at_the_time_limit() -> None:
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.dirname(tests)
    try:
        done = subprocess.run(
            [sys.executable, "-c", HANGING, tests],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": root},
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the checker ignored its timeout: a hanging trinket hung it")
    assert done.returncode == 0, done.stderr[-500:]
    # the composes done before the stop depend on how fast the worker started (a loaded machine: 0)
    composes, _, stopped = done.stdout.partition(" ")
    assert composes.isdigit() and stopped.startswith("stopped at the time limit (1 s)"), done.stdout


@pytest.mark.slow
def test_ctrl_c_leaves_no_worker_and_no_job_file(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []
    real = worker.run_in_subprocess

    def spy(*args: object, **kwargs: object) -> object:
        process = real(*args, **kwargs)  # type: ignore[arg-type]
        started.append(process)
        return process

    monkeypatch.setattr("wm_kernel.testing.stability.fresh.run_in_subprocess", spy)
    from wm_kernel.testing.stability.run import CheckRun

    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    before = _jobs()
    monkeypatch.setattr(CheckRun, "recompose", interrupted)
    scenario = Scenario(clock=START).compose().advance_turn(3)
    with pytest.raises(KeyboardInterrupt):
        check_stability(scenario, only=["hash_seed", "tz_locale", "recompose"])
    assert len(started) == 3
    assert all(p.poll() is not None for p in started)  # type: ignore[attr-defined]
    assert _jobs() - before == set()


@pytest.mark.slow
def test_a_line_separator_in_fed_text_passes_a_stable_scenario() -> None:
    scenario = (
        Scenario(clock=START, trinkets=["PeanutGalleryTrinket"])
        .feed("PeanutGalleryTrinket", "add_guidance", "concern", "one\u2028two\u2029three\u0085four")
        .compose()
        .advance_turn()
    )
    report = check_stability(scenario, only=["recompose", "insertion_order", "hash_seed"])
    assert report.passed, str(report)
