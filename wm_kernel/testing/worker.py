"""``python -m wm_kernel.testing.worker``: one replay in a fresh process, for the stability checker.

:func:`run_in_subprocess` starts the worker and :func:`finish_subprocess` reads what it composed,
so the job's format and the worker's answer are defined in one place.

Reads a JSON job from the file named by its argument (``scenario``: the JSON Lines text, ``factories``: name ->
``module:QualifiedName``, ``max_turns``, ``timeout``, ``set_locale``) and writes
``{"composes": [...], "stopped": ...}`` on stdout (see :mod:`wm_kernel.testing.replay`). With
``set_locale`` the process first adopts the locale of its environment (``setlocale(LC_ALL, "")``),
as an application that localises its output does.
"""

from __future__ import annotations

import contextlib
import json
import locale
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping

from wm_kernel.testing.replay import Compose, Replay, load_import_path, run_scenario


def main() -> int:
    from wm_kernel.experiments.scenario import Scenario

    with open(sys.argv[1], encoding="utf-8") as handle:
        job = json.load(handle)
    with contextlib.suppress(OSError):
        os.unlink(sys.argv[1])  # read: the scenario's text is not left on disk
    if job.get("set_locale"):
        locale.setlocale(locale.LC_ALL, "")
    scenario = Scenario.loads(job["scenario"], source="<checked scenario>")
    factories = {name: load_import_path(path) for name, path in job["factories"].items()}
    replay = run_scenario(scenario, factories, timeout=job.get("timeout"), max_turns=job.get("max_turns"))
    json.dump(
        {"composes": [c.to_json() for c in replay.composes], "stopped": replay.stopped}, sys.stdout, ensure_ascii=False
    )
    return 0


def run_in_subprocess(
    scenario_text: str,
    factories: Mapping[str, str],
    env: Mapping[str, str],
    *,
    timeout: float,
    max_turns: int | None = None,
    set_locale: bool = False,
) -> subprocess.Popen[str]:
    """Start a replay of ``scenario_text`` in a fresh Python with ``env`` added to this process's
    environment (and this process's ``sys.path`` as ``PYTHONPATH``); read it with
    :func:`finish_subprocess`. Started, not awaited, so several run side by side."""
    job = {
        "scenario": scenario_text,
        "factories": dict(factories),
        "max_turns": max_turns,
        "timeout": timeout,
        "set_locale": set_locale,
    }
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    full_env.update(env)
    # the job goes in a file, so that several workers can be started before any is read
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".json", prefix="wm-check-", delete=False) as handle:
        json.dump(job, handle, ensure_ascii=False)
    process = subprocess.Popen(
        [sys.executable, "-m", "wm_kernel.testing.worker", handle.name],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=full_env,
    )
    process.job_file = handle.name  # type: ignore[attr-defined]
    return process


def stop_subprocess(process: subprocess.Popen[str]) -> None:
    """Kill a worker still running (and wait for it) and remove its job file: what a check that
    ends early (an error, Ctrl-C) leaves of it is nothing."""
    if process.poll() is None:
        process.kill()
        with contextlib.suppress(Exception):
            process.communicate(timeout=10)
    with contextlib.suppress(OSError):
        os.unlink(process.job_file)  # type: ignore[attr-defined]


def finish_subprocess(process: subprocess.Popen[str], timeout: float) -> Replay:
    """Wait for a replay started by :func:`run_in_subprocess` (at most ``timeout`` seconds: then it
    is killed) and read what it composed; RuntimeError with the worker's last error line if it
    failed, TimeoutError if it ran out of time."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise TimeoutError(f"the replay in a fresh process took more than {timeout:g} s") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(process.job_file)  # type: ignore[attr-defined]
    if process.returncode != 0:
        lines = [line for line in err.strip().splitlines() if line.strip()]
        raise RuntimeError(lines[-1] if lines else f"the worker exited with {process.returncode}")
    data = json.loads(out)
    return Replay([Compose.from_json(c) for c in data["composes"]], [], data["stopped"])


if __name__ == "__main__":
    sys.exit(main())
