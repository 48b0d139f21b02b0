"""A session with MIRA HEAD's trinkets, fed as MIRA feeds them (update contexts included), records
into a scenario whose replay composes the identical prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trinkets import MIRA_HEAD_NAMES, MIRA_HEAD_TRINKETS
from wm_kernel.core.clock import ManualClock
from wm_kernel.experiments import record
from wm_kernel.experiments.scenario import Scenario
from wm_kernel.session import Session


def test_mira_s_contexts_are_recorded_and_replayed(tmp_path: Path) -> None:
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    live = Session(base_prompt="You help.", clock=clock, trinkets=MIRA_HEAD_TRINKETS)
    composed: list[dict[str, Any]] = []
    live.observe(lambda change: composed.append(change["new"].as_dict()), "composed")
    recorder = record(live)
    wm = live.working_memory
    wm.publish_trinket_update("ForageTrinket", {"task_id": "f1", "status": "pending", "query": "tides"})
    wm.publish_trinket_update(
        "ForageTrinket",
        {
            "task_id": "f1",
            "status": "in_progress",
            "query": "tides",
            "iteration": 1,
            "max_iterations": 2,
            "summary": "s",
        },
    )
    wm.publish_trinket_update("WhileTheCatsAwayTrinket", {"task_id": "w", "status": "timeout", "topic": "moons"})
    wm.publish_trinket_update("EmailTrinket", {"data": [{"uid": "INBOX:1", "from_addr": "a", "subject": "s"}]})
    live.trinket("LocationTrinket").set_location({"location_name": "Oslo"})  # type: ignore[attr-defined]
    live.trinket("AsyncActivityTrinket").set_activity(  # type: ignore[attr-defined]
        [{"id": 1, "interface_name": "e", "summary": "x", "status": "escalated", "updated_at": "2026-11-30 08:00:00"}]
    )
    live.compose()
    live.advance_turn()
    clock.advance(hours=2)
    wm.publish_trinket_update("ForageTrinket", {"task_id": "f1", "status": "failed", "error": "e"})
    live.compose()
    recorder.stop()
    path = tmp_path / "mira_head.jsonl"
    recorder.save(path)
    scenario = Scenario.load(path)
    assert scenario.all_trinkets == MIRA_HEAD_NAMES
    again: list[dict[str, Any]] = []
    scenario.run(instruments=[lambda s: s.observe(lambda change: again.append(change["new"].as_dict()), "composed")])
    assert again[-2:] == composed[-2:]
    assert "Forage failed: Error — e" in again[-1]["notification_center"]
