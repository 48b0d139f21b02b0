"""One run of the stability checker: the baseline replay and the in-process perturbed replays.

A :class:`CheckRun` holds what every check compares with (the scenario, its baseline replay, the
bounds); each of its methods replays the scenario under one perturbation in this process and
compares it with the baseline. :class:`CheckOptions` is what the run was asked for besides.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from wm_kernel.experiments.scenario import Scenario
from wm_kernel.testing import mira
from wm_kernel.testing import perturbations as perturb
from wm_kernel.testing.replay import CHECK_CONTINUUM, TOOLS_SECTION, Compose, Replay, run_scenario
from wm_kernel.testing.report import CheckResult
from wm_kernel.testing.stability.compare import compare_replays

__all__ = ["CheckOptions", "CheckRun", "in_process_checks"]


@dataclass(frozen=True)
class CheckOptions:
    """What a check of a scenario was asked for besides the scenario and its bounds: the checks,
    the settings of the fresh processes, and what each finding is priced on."""

    selected: list[str]
    seeds: tuple[int, int]
    tz: str
    locale_name: str | None
    model: str
    turns_per_hour: int
    on_mira: bool
    tools: Sequence[Mapping[str, Any]] | None


@dataclass
class CheckRun:
    """One checker run's shared state: the scenario, the baseline replay (and its seconds), the
    bounds."""

    scenario: Scenario
    factories: dict[str, Any]
    scope: str
    timeout: float
    max_turns: int | None
    baseline: Replay = field(default_factory=Replay)
    baseline_seconds: float = 0.0
    masked: set[str] = field(default_factory=set)
    labels: dict[str, tuple[str, str]] = field(default_factory=dict)

    @classmethod
    def started(
        cls, scenario: Scenario, factories: dict[str, Any], scope: str, timeout: float, max_turns: int | None
    ) -> CheckRun:
        """A run of ``scenario`` (in the checker's continuum when it names none) with its baseline
        replayed: what every check compares with. When the baseline stopped early, every other
        replay stops where it did."""
        if scenario.continuum_id is None:
            scenario = perturb.with_continuum(scenario, CHECK_CONTINUUM)
        run = cls(scenario, factories, scope, timeout, max_turns)
        started = time.monotonic()
        run.baseline = run_scenario(scenario, factories, timeout=timeout, max_turns=max_turns)
        if run.baseline.stopped and run.baseline.composes:
            run.max_turns = run.baseline.composes[-1].turn
        run.baseline_seconds = time.monotonic() - started
        return run

    def recompose(self) -> CheckResult:
        started = time.monotonic()
        replay = run_scenario(
            self.scenario, self.factories, recompose=True, timeout=self.timeout, max_turns=self.max_turns
        )
        return self.result(
            "recompose",
            replay.composes,
            replay.recomposes,
            ("first compose", "composed again"),
            replay.stopped,
            started,
            set(),
        )

    def in_process(
        self,
        name: str,
        labels: tuple[str, str],
        *,
        scenario: Scenario | None = None,
        wrap: Any = None,
        prepare: Any = None,
    ) -> CheckResult:
        started = time.monotonic()
        replay = run_scenario(
            scenario or self.scenario,
            self.factories,
            timeout=self.timeout,
            max_turns=self.max_turns,
            wrap=wrap,
            prepare=prepare,
        )
        return self.result(name, self.baseline.composes, replay.composes, labels, replay.stopped, started, self.masked)

    def clock_jitter(self) -> CheckResult:
        """The baseline against the scenario on a clock moved by seconds that keep every minute."""
        shift = perturb.minute_preserving_shift([c.at for c in self.baseline.composes])
        if shift == 0:
            return CheckResult(
                "clock_jitter",
                perturb.CHECKS["clock_jitter"],
                "not applicable",
                "the composes fill their minutes from :00 to :59: no second to move them by",
            )
        return self.in_process(
            "clock_jitter",
            ("clock as scripted", f"clock {shift:+d} s"),
            scenario=perturb.shifted_scenario(self.scenario, shift),
        )

    def tool_order(self) -> CheckResult:
        """The baseline against the replay with the session's tools reversed."""
        if not any(c.section(TOOLS_SECTION) for c in self.baseline.composes):
            return CheckResult(
                "tool_order", perturb.CHECKS["tool_order"], "not applicable", "the session declares no tools"
            )
        return self.in_process("tool_order", ("tools as declared", "tools reversed"), prepare=perturb.reverse_tools)

    def clock_hour(self) -> CheckResult:
        """Each state composed, then composed again an hour on (a scenario runs on a ManualClock)."""
        started = time.monotonic()
        replay = run_scenario(
            self.scenario, self.factories, timeout=self.timeout, max_turns=self.max_turns, clock_step=timedelta(hours=1)
        )
        return self.result(
            "clock_hour",
            replay.composes,
            replay.recomposes,
            ("composed", "composed an hour later"),
            replay.stopped,
            started,
            self.masked,
        )

    def result(
        self,
        name: str,
        base: Sequence[Compose],
        other: Sequence[Compose],
        labels: tuple[str, str],
        stopped: str | None,
        started: float,
        masked: set[str],
    ) -> CheckResult:
        """The result of check ``name``: ``other`` compared with ``base`` in this run's scope
        (sections in ``masked`` left out), with the notes of how the replays stopped."""
        findings, note = compare_replays(name, base, other, self.scope, labels, masked)
        notes = [n for n in (note, stopped) if n]
        if masked and findings == [] and any(m for m in masked):
            notes.append(f"left out (moved on recompose): {', '.join(sorted(masked))}")
        timed_out = stopped is not None and "time limit" in stopped
        status = "fail" if findings else ("timed out" if timed_out else "pass")
        return CheckResult(
            name,
            {**perturb.CHECKS, **mira.CHECKS}[name],
            status,
            "; ".join(notes),
            findings,
            composes=min(len(base), len(other)),
            seconds=time.monotonic() - started,
        )


def in_process_checks(run: CheckRun, selected: Sequence[str], results: dict[str, CheckResult]) -> None:
    """Run the selected checks of this process into ``results``: ``recompose`` first (what it
    finds moved is left out of the others), then each perturbed replay."""
    masked: set[str] = set()
    if "recompose" in selected:
        results["recompose"] = run.recompose()
        masked = {f.section for f in results["recompose"].findings}
    run.masked = masked
    if "insertion_order" in selected:
        results["insertion_order"] = run.in_process(
            "insertion_order", ("as fed", "dicts and sets reordered"), wrap=perturb.reorder_inputs
        )
    if "clock_jitter" in selected:
        results["clock_jitter"] = run.clock_jitter()
    if "tool_order" in selected:
        results["tool_order"] = run.tool_order()
    if "clock_hour" in selected:
        results["clock_hour"] = run.clock_hour()
