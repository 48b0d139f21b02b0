"""The stability checker's report: the checks' results in order, each finding priced on a model
(on MIRA's wire with the MIRA preset) by :mod:`wm_kernel.testing.cost`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wm_kernel.testing import mira
from wm_kernel.testing import perturbations as perturb
from wm_kernel.testing.cost import instability_cost, mira_instability_cost
from wm_kernel.testing.replay import Compose
from wm_kernel.testing.report import CheckResult, StabilityReport
from wm_kernel.testing.stability.run import CheckOptions, CheckRun

__all__ = ["priced_report"]


def priced_report(
    run: CheckRun,
    options: CheckOptions,
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
