"""``python -m wm_kernel.testing.worker``: one replay in a fresh process, for the stability checker.

Reads a JSON job from the file named by its argument (``scenario``: the JSON Lines text, ``factories``: name ->
``module:QualifiedName``, ``max_turns``, ``timeout``, ``set_locale``) and writes
``{"composes": [...], "stopped": ...}`` on stdout (see :mod:`wm_kernel.testing.replay`). With
``set_locale`` the process first adopts the locale of its environment (``setlocale(LC_ALL, "")``),
as an application that localises its output does.
"""
from __future__ import annotations

import json
import locale
import sys


def main() -> int:
    from wm_kernel.experiments.scenario import Scenario
    from wm_kernel.testing.replay import load_import_path, run_scenario

    with open(sys.argv[1], encoding="utf-8") as handle:
        job = json.load(handle)
    if job.get("set_locale"):
        locale.setlocale(locale.LC_ALL, "")
    scenario = Scenario.loads(job["scenario"], source="<checked scenario>")
    factories = {name: load_import_path(path) for name, path in job["factories"].items()}
    replay = run_scenario(scenario, factories, timeout=job.get("timeout"), max_turns=job.get("max_turns"))
    json.dump({"composes": [c.to_json() for c in replay.composes], "stopped": replay.stopped},
              sys.stdout, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
