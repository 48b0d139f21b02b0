"""notebooks/marimo_tour.py, the marimo notebook of the dashboard: ``marimo check`` finds nothing,
and it runs headless to the end, its dashboard's value the widget's synced traits."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # marimo check is a process of its own; the run imports marimo

ROOT = Path(__file__).resolve().parents[1]
TOUR = ROOT / "notebooks" / "marimo_tour.py"


def test_marimo_check_is_clean_on_the_tour() -> None:
    pytest.importorskip("marimo")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-m", "marimo", "check", "--strict", str(TOUR)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert (done.returncode, done.stdout.strip(), done.stderr.strip()) == (0, "", "")


def test_the_tour_runs_headless_and_its_turn_is_the_dashboards_value() -> None:
    pytest.importorskip("marimo")
    from wm_kernel import Dashboard

    spec = importlib.util.spec_from_file_location("marimo_tour", TOUR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    outputs, defs = module.app.run()
    element, session = defs["dashboard"], defs["session"]
    board = element.widget
    assert isinstance(board, Dashboard) and board.session is session
    assert element.value["turn"] == session.turn == 6 and element.value["latest"] == 6
    shown = [o.text for o in outputs if o is not None and "The dashboard shows turn" in getattr(o, "text", "")]
    assert len(shown) == 1 and "turn <strong>6</strong> of 6" in shown[0]
    # the slider's move is a change of the widget's trait: the element's value (what marimo's
    # reactivity reads) follows it, and the dashboard shows that turn read-only
    board.turn = 2
    assert element.value["turn"] == 2 and board.viewing_turn == 2
    board.close()
