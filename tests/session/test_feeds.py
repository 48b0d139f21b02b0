"""A Session's own feed log: listed among its default instruments, the same whichever module was
imported first (issue 42 item 4)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trinkets import PeanutGalleryTrinket
from wm_kernel.core.clock import ManualClock, SystemClock
from wm_kernel.core.events import TrinketFedEvent
from wm_kernel.instruments.history import History
from wm_kernel.instruments.items import ItemHistory
from wm_kernel.session import Session, default_instruments
from wm_kernel.session.feeds import FeedLog

ROOT = Path(__file__).resolve().parents[2]
START = "2026-11-30T09:00:00+00:00"


def test_the_default_instruments_are_one_explicit_list_that_importing_does_not_change() -> None:
    listed = default_instruments()
    assert listed == (History.attach, ItemHistory.attach, FeedLog.attach)
    importlib.import_module("wm_kernel.experiments")  # it used to add the recorder when imported
    importlib.import_module("wm_kernel.jupyter.magics.working_memory")
    assert default_instruments() == listed


def test_a_session_logs_what_it_is_fed_as_plain_steps_below_the_experiments() -> None:
    s = Session(clock=ManualClock(START), trinkets=[PeanutGalleryTrinket])
    s.compose()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=2)
    s.clock.advance(minutes=1)
    s.clock.advance(seconds=30)
    s.advance_turn()
    s.advance_turn()
    log = FeedLog.find(s)
    assert log is not None and log.active and log.errors == []
    assert log.steps == [
        {"step": "compose"},
        {
            "step": "feed",
            "trinket": "PeanutGalleryTrinket",
            "method": "add_guidance",
            "args": ("concern", "Slow down."),
            "kwargs": {"ttl": 2},
        },
        {"step": "clock", "advance": 90},
        {"step": "turn", "n": 2},
    ]
    log.stop()
    s.advance_turn()
    assert not log.active and log.steps[-1] == {"step": "turn", "n": 2}


def test_a_feed_is_logged_as_it_was_when_fed() -> None:
    s = Session(clock=ManualClock(START), trinkets=[PeanutGalleryTrinket])
    log = FeedLog.find(s)
    assert log is not None
    text = ["Slow", "down."]
    fed = TrinketFedEvent.create(
        continuum_id=s.continuum_id, trinket_name="PeanutGalleryTrinket", method="note", args=(text,)
    )
    s.bus.publish(fed)
    text.append("Later.")
    assert log.steps[-1]["args"] == (["Slow", "down."],)


def test_a_session_that_cannot_be_logged_says_why() -> None:
    plain = Session(clock=SystemClock(), trinkets=[])
    assert FeedLog.find(plain) is None
    assert FeedLog.refusal(plain) == "its clock is a SystemClock, whose moves cannot be replayed"
    bare = Session(clock=ManualClock(START), trinkets=[], instruments=())
    assert FeedLog.find(bare) is None and FeedLog.refusal(bare) is None


@pytest.mark.slow
def test_the_recording_is_there_when_only_the_session_module_was_imported() -> None:
    # the reproduction, in a fresh interpreter: no front door, no experiments, no magics
    code = """
import sys
from wm_kernel.session import Session
from wm_kernel.core.clock import ManualClock
s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[])
s.compose(); s.advance_turn(2)
assert "wm_kernel.experiments" not in sys.modules
from wm_kernel.experiments.recorder import session_recording
print([step.to_json() for step in session_recording(s).scenario.steps])
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stderr == ""
    assert done.stdout.strip() == "[{'step': 'compose'}, {'step': 'turn', 'n': 2}]"
