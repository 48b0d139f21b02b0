"""The stability checks run in fresh processes (``hash_seed``, ``tz_locale``): each replays the
scenario in a worker process under a perturbed environment, compared with a baseline process.

:func:`start_fresh` starts them (they run while the checker does the in-process checks);
:func:`fresh_results` waits for them and compares each with the baseline process.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from wm_kernel.testing import perturbations as perturb
from wm_kernel.testing.replay import Replay, import_path
from wm_kernel.testing.report import CheckResult
from wm_kernel.testing.stability.run import CheckOptions, CheckRun
from wm_kernel.testing.worker import finish_subprocess, run_in_subprocess

__all__ = ["start_fresh", "fresh_results"]


def start_fresh(
    run: CheckRun, options: CheckOptions, processes: dict[str, Any], results: dict[str, CheckResult]
) -> None:
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


def _fresh_envs(run: CheckRun, fresh: Sequence[str], options: CheckOptions) -> dict[str, dict[str, str]]:
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


def fresh_results(run: CheckRun, processes: dict[str, Any]) -> dict[str, CheckResult]:
    """The result of each fresh-process check started by :func:`start_fresh`, each compared with
    the baseline process: "timed out" or "error" when either process did not finish its replay."""
    replays: dict[str, Replay | Exception] = {}
    for key, (started, process) in processes.items():
        left = max(1.0, run.timeout - (time.monotonic() - started))
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
        results[name] = run.result(
            name,
            base.composes,
            other.composes,
            run.labels[name],
            base.stopped or other.stopped,
            started,
            run.masked,
        )
    return results
