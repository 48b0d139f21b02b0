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
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from wm_kernel.experiments.scenario import Scenario
from wm_kernel.testing import mira
from wm_kernel.testing import perturbations as perturb
from wm_kernel.testing.report import CheckResult, EveryTurnSection, StabilityReport
from wm_kernel.testing.stability.every_turn import every_turn_sections
from wm_kernel.testing.stability.fresh import fresh_results, start_fresh
from wm_kernel.testing.stability.moving import moving_section
from wm_kernel.testing.stability.pricing import priced_report
from wm_kernel.testing.stability.run import CheckOptions, CheckRun, in_process_checks
from wm_kernel.testing.worker import stop_subprocess
from wm_kernel.utils.checks import check_int, check_timeout

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

    Long because: the public entry of the checker documents each of its fourteen options here; the
    body only checks them and hands the run to ``run.py`` (or an imported log to ``logcheck``).
    """
    from wm_kernel.interop.imported import ImportedSession
    from wm_kernel.testing.logcheck import check_imported

    check_timeout(timeout)
    if max_turns is not None:
        check_int(max_turns, "max_turns", minimum=0)
    if preset is not None and preset not in mira.PRESETS:
        raise ValueError(f"unknown preset {preset!r} (presets: {', '.join(mira.PRESETS)})")
    if isinstance(subject, ImportedSession):
        report = check_imported(
            subject,
            perturbing=bool(factories or skip or only is not None),
            model=model,
            turns_per_hour=turns_per_hour,
            scope=scope,
            max_turns=max_turns,
            preset=preset,
            tools=tools,
        )
        report.every_turn = _logged_every_turn(subject, max_turns)
        return report
    if tools is not None and preset is None:
        raise ValueError("tools= is the tool list of the MIRA preset's tool_set_order check; pass preset='mira'")
    on_mira = preset == mira.PRESET
    scope = scope if scope is not None else ("system" if on_mira else "cached")
    scenario, chosen_factories = resolve_subject(subject, factories)
    selected = _selected(skip, only, preset)
    _check_settings(scope, model, turns_per_hour, seeds)
    run = CheckRun.started(scenario, chosen_factories, scope, timeout, max_turns)
    return _checks(run, CheckOptions(selected, seeds, tz, locale_name, model, turns_per_hour, on_mira, tools))


def _logged_every_turn(log: ImportedSession, max_turns: int | None) -> list[EveryTurnSection]:
    """The cached sections new at every logged request (up to ``max_turns``), read as the check
    of the log reads its requests (on MIRA's wire for a MIRA tap)."""
    from wm_kernel.testing.logcheck import log_composes

    composes = mira.log_composes(log) if mira.is_tap(log) else log_composes(log)
    return every_turn_sections([c for c in composes if max_turns is None or c.turn <= max_turns])


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


def _checks(run: CheckRun, options: CheckOptions) -> StabilityReport:
    """Run the selected checks after the baseline: the fresh processes first (they run while this
    one does the in-process checks), then the report, every finding priced."""
    results: dict[str, CheckResult] = {}
    # whatever ends this call (Ctrl-C included), none is left running and no job file is left behind
    processes: dict[str, Any] = {}
    try:
        start_fresh(run, options, processes, results)
        in_process_checks(run, options.selected, results)
        priced = run.baseline.composes
        if options.on_mira and options.tools:
            priced = mira.with_tools(priced, options.tools, mira.tool_names(options.tools))
        if "tool_set_order" in options.selected:
            results["tool_set_order"] = mira.tool_set_order(
                run.baseline.composes, options.tools, options.seeds, options.model, options.turns_per_hour
            )
        if "moving_section" in options.selected:
            results["moving_section"] = moving_section(
                run.baseline.composes, run.scope, run.masked, options.model, options.turns_per_hour, priced
            )
        if processes:
            results.update(fresh_results(run, processes))
        report = priced_report(run, options, results, priced)
        report.every_turn = every_turn_sections(run.baseline.composes)
        return report
    finally:
        for _, process in processes.values():
            stop_subprocess(process)


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
