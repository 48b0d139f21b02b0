"""The cache-stability checker: replay a scenario under perturbations that must not move a cached
byte, and report each section that moved, which perturbation moved it, where, and what it costs.

>>> from wm_kernel.experiments.scenario import Scenario
>>> scenario = Scenario(clock="2026-11-30T09:00:00+00:00").advance_turn(2)
>>> report = check_stability(scenario, skip=["hash_seed", "tz_locale"])
>>> report.passed, [r.status for r in report.results]
(True, ['pass', 'pass', 'pass', 'not applicable'])

The checks are named in :data:`~wm_kernel.testing.perturbations.CHECKS`; ``skip=`` switches some
off, ``only=`` keeps some. Each replay stops at ``timeout`` seconds (a check then says it timed out
and compares what was composed) and after ``max_turns``. A section that differs when the same state
is composed twice (``recompose``) would differ under every other check too: it is reported once,
there, and left out of the others.

Cost: for each moved section, the cache simulator (:mod:`wm_kernel.cachesim`) plays an hour of
``turns_per_hour`` requests on ``model`` carrying the compose where it moved, once with the
section's bytes fixed and once with them new on every request (what a deployment sees when they
move between workers, or every second), and the difference is the cost of the instability
(:func:`wm_kernel.testing.cost.instability_cost`).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

from wm_kernel.experiments.scenario import Scenario
from wm_kernel.testing import mira
from wm_kernel.testing import perturbations as perturb
from wm_kernel.testing.cost import instability_cost, mira_instability_cost
from wm_kernel.testing.replay import (
    CHECK_CONTINUUM,
    TOOLS_SECTION,
    Compose,
    Replay,
    import_path,
    run_scenario,
)
from wm_kernel.testing.report import CheckResult, Finding, StabilityReport, excerpt
from wm_kernel.testing.worker import finish_subprocess, run_in_subprocess, stop_subprocess
from wm_kernel.utils.checks import check_int, check_number

__all__ = ["check_stability", "SCOPES"]

#: What a check compares: ``cached`` (the cached system sections and the tools: what a provider
#: caches), ``system`` (every system section) or ``all`` (every section, wherever it goes).
SCOPES = ("cached", "system", "all")

if TYPE_CHECKING:
    from wm_kernel.experiments.recorder import ScenarioRecorder
    from wm_kernel.interop.imported import ImportedSession

#: What :func:`check_stability` checks: a scenario, a scenario file's path, a recorder of a live
#: session, or an imported log.
StabilitySubject: TypeAlias = "Scenario | str | os.PathLike[str] | ScenarioRecorder | ImportedSession"


def _in_scope(placement: str, cached: bool, scope: str) -> bool:
    if scope == "cached":
        return cached and placement in ("system", "tools")
    if scope == "system":
        return placement in ("system", "tools")
    return True


def resolve_subject(subject: StabilitySubject, factories: Mapping[str, Any] | None) -> tuple[Scenario, dict[str, Any]]:
    """The scenario to check and its trinket factories, from a Scenario, a scenario file's path, or
    a :class:`~wm_kernel.experiments.recorder.ScenarioRecorder` (whose session's trinket classes
    are the factories of the trinkets that are not built in)."""
    from wm_kernel.experiments.recorder import ScenarioRecorder

    chosen = dict(factories or {})
    if isinstance(subject, ScenarioRecorder):
        import trinkets as builtin
        from trinkets import BUILTIN_NAMES

        for name, trinket in subject.session.trinkets.items():
            cls = type(trinket)
            if name not in chosen and (name not in BUILTIN_NAMES or getattr(builtin, name) is not cls):
                chosen[name] = cls
        return subject.scenario, chosen
    if isinstance(subject, Scenario):
        return subject, chosen
    if isinstance(subject, (str, os.PathLike)):
        return Scenario.load(subject), chosen
    raise TypeError(
        f"check_stability needs a Scenario, a scenario file or a ScenarioRecorder, got {type(subject).__name__}"
    )


def check_stability(
    subject: StabilitySubject,
    *,
    factories: Mapping[str, Any] | None = None,
    skip: Iterable[str] = (),
    only: Iterable[str] | None = None,
    model: str = "claude-sonnet-4-6",
    turns_per_hour: int = 30,
    scope: str | None = None,
    timeout: float = 60.0,
    max_turns: int | None = None,
    seeds: tuple[int, int] = (1, 2),
    tz: str = perturb.DEFAULT_TZ,
    locale_name: str | None = None,
    preset: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> StabilityReport:
    """Replay ``subject`` under every selected perturbation and report what moved.

    Parameters
    ----------
    subject:
        A :class:`~wm_kernel.experiments.scenario.Scenario`, the path of a scenario file, or a
        ScenarioRecorder of a live session; or an imported log
        (:class:`~wm_kernel.interop.imported.ImportedSession`), checked request against request
        by :func:`wm_kernel.testing.logcheck.check_log` (``model``, ``turns_per_hour``, ``scope``
        and ``max_turns`` apply; the rest choose perturbations and must be left out).
    factories:
        Trinket classes (or factories) by name, for trinkets that are not built in. The fresh-process
        checks import them by module and name: a class defined in a notebook makes those two checks
        "not applicable", with the reason.
    skip, only:
        Check names to leave out, or the only ones to run (see ``CHECKS``).
    model, turns_per_hour:
        What the cost of a moved section is priced on: a model of ``wm_kernel.cachesim.MODELS`` and
        the number of requests in the simulated hour.
    scope:
        Which sections count (see :data:`SCOPES`; default the cached ones, with the MIRA preset
        every system section).
    timeout, max_turns:
        Bounds of every replay: seconds, and the last turn composed.
    seeds, tz, locale_name:
        The two ``PYTHONHASHSEED`` values, the other ``TZ``, the other locale (default: one
        installed that is not C's).
    preset, tools:
        ``preset="mira"``: check as MIRA's wire caches (:mod:`wm_kernel.testing.mira`): every
        system section is inside the 1-hour block, the checks ``clock_hour`` and
        ``tool_set_order`` (the order MIRA's set gives ``tools``, definitions with a ``name``, in
        two processes) are added, and each finding is priced on MIRA's wire over a day. An
        imported MIRA tap is checked this way without asking.
    """
    from wm_kernel.interop.imported import ImportedSession

    check_number(timeout, "timeout", strict=True, unit="seconds")
    if max_turns is not None:
        check_int(max_turns, "max_turns", minimum=0)
    if preset is not None and preset not in mira.PRESETS:
        raise ValueError(f"unknown preset {preset!r} (presets: {', '.join(mira.PRESETS)})")
    if isinstance(subject, ImportedSession):
        return _check_imported(
            subject,
            perturbing=bool(factories or skip or only is not None),
            model=model,
            turns_per_hour=turns_per_hour,
            scope=scope,
            max_turns=max_turns,
            preset=preset,
            tools=tools,
        )
    if tools is not None and preset is None:
        raise ValueError("tools= is the tool list of the MIRA preset's tool_set_order check; pass preset='mira'")
    on_mira = preset == mira.PRESET
    scope = scope if scope is not None else ("system" if on_mira else "cached")
    scenario, chosen_factories = resolve_subject(subject, factories)
    selected = _selected(skip, only, preset)
    _check_settings(scope, model, turns_per_hour, seeds)
    run = _Run.started(scenario, chosen_factories, scope, timeout, max_turns)
    return _checks(run, _Options(selected, seeds, tz, locale_name, model, turns_per_hour, on_mira, tools))


def _check_imported(
    subject: ImportedSession,
    *,
    perturbing: bool,
    model: str,
    turns_per_hour: int,
    scope: str | None,
    max_turns: int | None,
    preset: str | None,
    tools: Sequence[Mapping[str, Any]] | None,
) -> StabilityReport:
    """The check of an imported log: another agent's log cannot be recomposed under
    perturbations, so its requests are checked against each other
    (:func:`wm_kernel.testing.logcheck.check_log`). ``perturbing``: the call chose factories or
    checks, which is a ValueError here, as ``tools`` is."""
    from wm_kernel.cachesim.models import get_model
    from wm_kernel.testing.logcheck import check_log

    if perturbing:
        raise ValueError(
            "factories, skip and only choose perturbation checks of a scenario; an imported "
            "log is checked request against request (check 'logged_prefix')"
        )
    if tools is not None:
        raise ValueError(
            "tools= is for a session's tool_set_order check; an imported log's tools are the ones it logged"
        )
    get_model(model)
    return check_log(
        subject,
        model=model,
        turns_per_hour=turns_per_hour,
        scope=scope or "cached",
        max_turns=max_turns,
        preset=preset,
    )


def _check_settings(scope: str, model: str, turns_per_hour: int, seeds: tuple[int, int]) -> None:
    """A ValueError before anything runs for a scope, model, hourly rate or pair of seeds that
    cannot be used."""
    from wm_kernel.cachesim.models import get_model

    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    get_model(model)  # an unknown model is an error before anything runs
    if isinstance(turns_per_hour, bool) or not isinstance(turns_per_hour, int) or turns_per_hour < 1:
        raise ValueError(f"turns_per_hour must be a positive int, got {turns_per_hour!r}")
    if len(seeds) != 2 or seeds[0] == seeds[1]:
        raise ValueError(f"seeds must be two different PYTHONHASHSEED values, got {seeds!r}")


@dataclass(frozen=True)
class _Options:
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


def _checks(run: _Run, options: _Options) -> StabilityReport:
    """Run the selected checks after the baseline: the fresh processes first (they run while this
    one does the in-process checks), then the report, every finding priced."""
    results: dict[str, CheckResult] = {}
    # whatever ends this call (Ctrl-C included), none is left running and no job file is left behind
    processes: dict[str, Any] = {}
    try:
        _start_fresh(run, options, processes, results)
        _in_process(run, options.selected, results)
        priced = run.baseline.composes
        if options.on_mira and options.tools:
            priced = mira.with_tools(priced, options.tools, mira.tool_names(options.tools))
        if "tool_set_order" in options.selected:
            results["tool_set_order"] = mira.tool_set_order(
                run.baseline.composes, options.tools, options.seeds, options.model, options.turns_per_hour
            )
        if processes:
            results.update(run.fresh_results(processes))
        return _priced_report(run, options, results, priced)
    finally:
        for _, process in processes.values():
            stop_subprocess(process)


def _start_fresh(run: _Run, options: _Options, processes: dict[str, Any], results: dict[str, CheckResult]) -> None:
    """Start the selected fresh-process checks (``hash_seed``, ``tz_locale``) and the baseline
    process they compare with, each in ``processes``; both "not applicable" in ``results`` when
    a fresh process cannot import the trinkets."""
    fresh = [name for name in ("hash_seed", "tz_locale") if name in options.selected]
    if not fresh:
        return
    try:
        paths = {name: import_path(f) for name, f in run.factories.items()}
    except ValueError as exc:
        for name in fresh:
            results[name] = CheckResult(
                name, perturb.CHECKS[name], "not applicable", f"a fresh process cannot build the trinkets: {exc}"
            )
        return
    text = run.scenario.dumps()
    for key, env in _fresh_envs(run, fresh, options).items():
        processes[key] = (
            time.monotonic(),
            run_in_subprocess(text, paths, env, timeout=run.timeout, max_turns=run.max_turns, set_locale=True),
        )


def _fresh_envs(run: _Run, fresh: Sequence[str], options: _Options) -> dict[str, dict[str, str]]:
    """The environment of each fresh process: the baseline's (``base``) and, for each check in
    ``fresh``, the baseline's with its perturbation; the labels of both checks go on ``run``."""
    seeds, tz = options.seeds, options.tz
    other = options.locale_name or perturb.other_locale()
    base_locale = (
        perturb.BASELINE_LOCALE
        if perturb.BASELINE_LOCALE in perturb.installed_locales() or not perturb.installed_locales()
        else "C"
    )
    envs = {
        "base": {
            "PYTHONHASHSEED": str(seeds[0]),
            "TZ": perturb.BASELINE_TZ,
            "LC_ALL": base_locale,
            "LANG": base_locale,
        }
    }
    if "hash_seed" in fresh:
        envs["hash_seed"] = {**envs["base"], "PYTHONHASHSEED": str(seeds[1])}
    if "tz_locale" in fresh:
        envs["tz_locale"] = {**envs["base"], "TZ": tz, "LC_ALL": other, "LANG": other}
    run.labels["hash_seed"] = (f"PYTHONHASHSEED={seeds[0]}", f"PYTHONHASHSEED={seeds[1]}")
    run.labels["tz_locale"] = (f"TZ={perturb.BASELINE_TZ} LC_ALL={base_locale}", f"TZ={tz} LC_ALL={other}")
    return envs


def _in_process(run: _Run, selected: Sequence[str], results: dict[str, CheckResult]) -> None:
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


def _priced_report(
    run: _Run,
    options: _Options,
    results: Mapping[str, CheckResult],
    priced: Sequence[Compose],
) -> StabilityReport:
    """The report of ``results`` in the order of the checks, each finding not yet priced priced
    on ``options.model`` (on MIRA's wire, over ``priced``, with the MIRA preset)."""
    model, turns_per_hour = options.model, options.turns_per_hour
    ordered = [results[name] for name in [*perturb.CHECKS, *mira.CHECKS] if name in results]
    report = StabilityReport(
        ordered,
        model=model,
        turns_per_hour=turns_per_hour,
        scope=run.scope,
        composes=len(run.baseline.composes),
        baseline_seconds=run.baseline_seconds,
        stopped=run.baseline.stopped,
    )
    for result in ordered:
        result.findings[:] = [
            f
            if f.cost is not None
            else f.with_cost(
                mira_instability_cost(priced, f, model, turns_per_hour)
                if options.on_mira
                else instability_cost(run.baseline.composes, f, model, turns_per_hour)
            )
            for f in result.findings
        ]
    return report


def _selected(skip: Iterable[str], only: Iterable[str] | None, preset: str | None = None) -> list[str]:
    on_mira = preset == mira.PRESET
    known = {**perturb.CHECKS, **(mira.CHECKS if on_mira else {})}
    skip = [skip] if isinstance(skip, str) else list(skip)
    chosen = list(known) if only is None else ([only] if isinstance(only, str) else list(only))
    for name in [*skip, *chosen]:
        if name not in known:
            extra = "" if on_mira or name not in mira.CHECKS else f" (a check of preset={mira.PRESET!r})"
            raise ValueError(f"unknown check {name!r}{extra} (checks: {', '.join(known)})")
    return [name for name in known if name in chosen and name not in skip]


@dataclass
class _Run:
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
    ) -> _Run:
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
        return self._result(
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
        return self._result(name, self.baseline.composes, replay.composes, labels, replay.stopped, started, self.masked)

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
        return self._result(
            "clock_hour",
            replay.composes,
            replay.recomposes,
            ("composed", "composed an hour later"),
            replay.stopped,
            started,
            self.masked,
        )

    def fresh_results(self, processes: dict[str, Any]) -> dict[str, CheckResult]:
        replays: dict[str, Replay | Exception] = {}
        for key, (started, process) in processes.items():
            left = max(1.0, self.timeout - (time.monotonic() - started))
            try:
                replays[key] = finish_subprocess(process, left)
            except (RuntimeError, TimeoutError, ValueError) as exc:
                replays[key] = exc
        results = {}
        for name in processes:
            if name == "base":
                continue
            started = processes[name][0]
            base, other = replays["base"], replays[name]
            failed = base if isinstance(base, Exception) else other if isinstance(other, Exception) else None
            if failed is not None:
                status = "timed out" if isinstance(failed, TimeoutError) else "error"
                results[name] = CheckResult(
                    name, perturb.CHECKS[name], status, str(failed), seconds=time.monotonic() - started
                )
                continue
            assert isinstance(base, Replay) and isinstance(other, Replay)
            results[name] = self._result(
                name,
                base.composes,
                other.composes,
                self.labels[name],
                base.stopped or other.stopped,
                started,
                self.masked,
            )
        return results

    def _result(
        self,
        name: str,
        base: Sequence[Compose],
        other: Sequence[Compose],
        labels: tuple[str, str],
        stopped: str | None,
        started: float,
        masked: set[str],
    ) -> CheckResult:
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


def compare_replays(
    check: str,
    base: Sequence[Compose],
    other: Sequence[Compose],
    scope: str,
    labels: tuple[str, str],
    masked: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[list[Finding], str]:
    """The sections in ``scope`` whose text differs between two replays, compose by compose: one
    :class:`Finding` per section, at the first compose where it moved, with the number of composes
    where it did. Sections in ``masked`` are left out. Also a note when the replays composed a
    different number of times (the common ones are compared)."""
    n = min(len(base), len(other))
    note = (
        ""
        if len(base) == len(other)
        else (f"the replays composed {len(base)} and {len(other)} times; the first {n} were compared")
    )
    first: dict[str, Finding] = {}
    moved: Counter[str] = Counter()
    for index in range(n):
        a, b = base[index], other[index]
        names = list(
            dict.fromkeys(
                [s.name for s in a.sections if _in_scope(s.placement, s.cached, scope)]
                + [s.name for s in b.sections if _in_scope(s.placement, s.cached, scope)]
            )
        )
        for name in names:
            if name in masked:
                continue
            sa, sb = a.section(name), b.section(name)
            ta = sa.content if sa is not None and _in_scope(sa.placement, sa.cached, scope) else None
            tb = sb.content if sb is not None and _in_scope(sb.placement, sb.cached, scope) else None
            if ta == tb:
                continue
            moved[name] += 1
            if name not in first:
                where = sa if sa is not None else sb
                assert where is not None
                offset = len(os.path.commonprefix([ta or "", tb or ""]))
                first[name] = Finding(
                    check=check,
                    section=name,
                    trinket=where.trinket,
                    placement=where.placement,
                    cached=where.cached,
                    turn=a.turn,
                    compose=index,
                    offset=offset,
                    expected=excerpt(ta, offset),
                    actual=excerpt(tb, offset),
                    labels=labels,
                )
    findings = [f.with_counts(moved[f.section], n) for f in first.values()]
    return findings, note
