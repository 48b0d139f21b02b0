"""log.compactions() and log.compaction_plan() (planner.md sections 2 and 3) on transcripts the
tests write (tests/compaction_transcripts.py), and on the shared real session when it is there."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from compaction_transcripts import (
    T0,
    Transcript,
    call_missing_then_cold,
    manual_after_idle_and_switch,
    no_compaction,
    usage,
    warm_auto,
)

from wm_kernel.cachesim import get_model
from wm_kernel.interop.claude_code.compactions import COMPACTION_COLUMNS, PLAN_COLUMNS
from wm_kernel.interop.log_files import import_log

OPUS, HAIKU, SONNET = (get_model(m) for m in ("claude-opus-4-6", "claude-haiku-4-5", "claude-sonnet-4-6"))


def _usd(profile: Any, input: int = 0, read: int = 0, w5: int = 0, w1h: int = 0) -> float:
    """Dollars the plain way, per million tokens, for the expectations."""
    return (input * profile.input + read * profile.read + w5 * profile.writes["5m"] + w1h * profile.writes["1h"]) / 1e6


def _plan_rules(plan: pd.DataFrame) -> None:
    assert list(plan.columns[: len(PLAN_COLUMNS)]) == list(PLAN_COLUMNS)
    assert (plan["saving_usd"] >= 0).all()
    assert (
        (plan["saving_usd"] == 0) == plan["recommended"].isin(["as recorded", "compaction call not in the log"])
    ).all()
    assert plan.attrs["total_saving_usd"] == pytest.approx(float(plan["saving_usd"].sum()), abs=1e-12)


def test_a_warm_automatic_compaction(tmp_path: Path) -> None:
    log = import_log(warm_auto(tmp_path))
    table = log.compactions()
    assert list(table.columns) == list(COMPACTION_COLUMNS)
    assert isinstance(table.index, pd.RangeIndex) and len(table) == 1
    row = table.iloc[0].to_dict()
    assert "compaction" in log.requests[row["call"]].marks and "after-compaction" in log.requests[row["request"]].marks
    assert {k: row[k] for k in ("request", "call", "trigger", "pre_tokens", "warm", "model_switch")} == {
        "request": 4,
        "call": 3,
        "trigger": "auto",
        "pre_tokens": 23_100,
        "warm": True,
        "model_switch": False,
    }
    assert row["idle_s"] == pytest.approx(20.0, abs=0.01)
    assert (row["read"], row["write_5m"], row["write_1h"], row["input"]) == (23_004, 0, 1_500, 3)
    assert row["cost_usd"] == pytest.approx(_usd(OPUS, input=3, read=23_004, w1h=1_500), abs=1e-9)
    assert row["cost_usd"] == pytest.approx(0.026517, abs=1e-9)
    assert row["after_read"] == 12_000
    plan = log.compaction_plan()
    _plan_rules(plan)
    # warm, so it stays where it ran; what it wrote (1,500) is never read: as plain input instead
    assert plan.loc[0, "recommended"] == (
        "as recorded, without a cache write (its 1,500 written tokens as plain input: the next request "
        "reads only the system prompt and tools)"
    )
    assert plan.loc[0, "recorded_usd"] == row["cost_usd"]
    assert plan.loc[0, "planned_usd"] == pytest.approx(_usd(OPUS, input=1_503, read=23_004), abs=1e-9)
    assert plan.attrs["total_saving_usd"] == pytest.approx(1_500 * (10.0 - 5.0) / 1e6, abs=1e-9)
    # the plan runs it where it ran, at the call's send time
    assert plan.loc[0, "planned_at"] == log.requests[3].sent_at == T0 + timedelta(seconds=80)


def test_a_manual_compaction_after_an_idle_past_the_ttl_and_a_model_switch(tmp_path: Path) -> None:
    log = import_log(manual_after_idle_and_switch(tmp_path))
    row = log.compactions().iloc[0].to_dict()
    assert (row["request"], row["call"], row["trigger"], row["pre_tokens"]) == (3, 2, "manual", 100_000)
    assert row["warm"] is False or row["warm"] == False  # noqa: E712 - numpy's bool
    assert row["model_switch"] == True  # noqa: E712
    assert row["idle_s"] == pytest.approx(600.0, abs=0.01)
    assert (row["read"], row["write_5m"], row["write_1h"], row["input"]) == (12_000, 90_000, 0, 3)
    recorded = _usd(OPUS, input=3, read=12_000, w5=90_000)
    assert row["cost_usd"] == pytest.approx(recorded, abs=1e-9) and row["after_read"] == 0
    plan = log.compaction_plan()
    _plan_rules(plan)
    # on Haiku, which built the conversation: P = 100,000 read, T - i - P = 2,000 written at 5m
    candidate = _usd(HAIKU, input=3, read=100_000, w5=2_000)
    assert plan.loc[0, "planned_usd"] == pytest.approx(candidate, abs=1e-9)
    assert plan.loc[0, "saving_usd"] == pytest.approx(recorded - candidate, abs=1e-9)
    assert plan.loc[0, "recommended"] == (
        "compact before the cache expires (within 300 s of 2026-01-05 10:00:30 UTC, on claude-haiku-4-5)"
    )
    assert plan.attrs["total_saving_usd"] == pytest.approx(0.556012, abs=1e-9)
    # moved: right after the previous request, whose cache still held the conversation
    assert plan.loc[0, "planned_at"] == T0 + timedelta(seconds=30)


def test_a_boundary_whose_call_is_missing_and_a_cold_one_on_the_same_model(tmp_path: Path) -> None:
    log = import_log(call_missing_then_cold(tmp_path))
    table = log.compactions()
    assert table["request"].tolist() == [1, 4]
    missing, cold = table.iloc[0].to_dict(), table.iloc[1].to_dict()
    assert (missing["trigger"], missing["pre_tokens"], missing["after_read"]) == ("auto", 50_100, 4_000)
    assert missing["call"] is None and missing["warm"] is None and missing["model_switch"] is None
    for name in ("idle_s", "read", "write_5m", "write_1h", "input", "cost_usd"):
        assert math.isnan(missing[name]), name
    assert (cold["call"], cold["trigger"], cold["warm"], cold["model_switch"]) == (3, "manual", False, False)
    assert cold["idle_s"] == pytest.approx(1_710.0, abs=0.01)
    assert cold["cost_usd"] == pytest.approx(_usd(SONNET, input=3, read=4_000, w5=7_000), abs=1e-9)
    plan = log.compaction_plan()
    _plan_rules(plan)
    assert plan.loc[0, "recommended"] == "compaction call not in the log" and plan.loc[0, "saving_usd"] == 0.0
    assert math.isnan(plan.loc[0, "recorded_usd"]) and math.isnan(plan.loc[0, "planned_usd"])
    assert plan["planned_at"].tolist() == [None, T0 + timedelta(seconds=90)]
    candidate = _usd(SONNET, input=3, read=10_504, w5=496)
    assert plan.loc[1, "planned_usd"] == pytest.approx(candidate, abs=1e-9)
    assert plan.loc[1, "recommended"] == "compact before the cache expires (within 300 s of 2026-01-05 10:01:30 UTC)"
    assert plan.attrs["total_saving_usd"] == pytest.approx(cold["cost_usd"] - candidate, abs=1e-9)


def test_without_its_subagents_the_call_is_missing(tmp_path: Path) -> None:
    log = import_log(warm_auto(tmp_path), subagents=False)
    row = log.compactions().iloc[0].to_dict()
    assert (row["request"], row["call"], row["trigger"], row["after_read"]) == (3, None, "auto", 12_000)
    assert log.compaction_plan().loc[0, "recommended"] == "compaction call not in the log"


def test_a_session_without_a_boundary_and_another_format_give_empty_frames(tmp_path: Path) -> None:
    body = tmp_path / "bodies.jsonl"
    body.write_text(
        json.dumps(
            {
                "timestamp": "2026-01-05T10:00:00Z",
                "request": {
                    "model": "claude-sonnet-4-6",
                    "max_tokens": 10,
                    "messages": [{"role": "user", "content": "hi"}],
                },
                "response": {"usage": {"input_tokens": 5, "output_tokens": 2}},
            }
        )
        + "\n"
    )
    for log in (import_log(no_compaction(tmp_path)), import_log(body)):
        table = log.compactions()
        assert table.empty and list(table.columns) == list(COMPACTION_COLUMNS)
        plan = log.compaction_plan()
        assert plan.empty and list(plan.columns) == list(PLAN_COLUMNS)
        assert plan.attrs["total_saving_usd"] == 0.0


# -- the shared real session (../shared/real-logs/README.md): checked against a plain reading of
# its raw files, skipped where the folder is absent
SHARED = Path(__file__).resolve().parents[3] / "shared" / "real-logs" / "claude-code"
SESSION = SHARED / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def _raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _last_usage(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for line in lines:
        message = line.get("message")
        if line.get("type") == "assistant" and isinstance(message, dict) and "usage" in message:
            found[message["id"]] = line
    return found


@pytest.mark.slow
def test_the_shared_session_against_a_plain_reading_of_its_files() -> None:
    if not SESSION.is_file():
        pytest.skip(f"the shared real logs are not here ({SHARED})")
    log = import_log(SESSION)
    table = log.compactions()
    assert len(table) == 1
    row = table.iloc[0].to_dict()
    main = _raw(SESSION)
    boundary = next(line for line in main if line.get("subtype") == "compact_boundary")
    (agent,) = (SESSION.with_suffix("") / "subagents").glob("agent-acompact-*.jsonl")
    (call_line,) = _last_usage(_raw(agent)).values()
    usage = call_line["message"]["usage"]
    assert row == {
        "request": 103,
        "call": 102,
        "trigger": boundary["compactMetadata"]["trigger"],
        "pre_tokens": boundary["compactMetadata"]["preTokens"],
        "warm": True,
        "idle_s": pytest.approx(25.737, abs=0.01),
        "model_switch": False,
        "read": usage["cache_read_input_tokens"],
        "write_5m": usage["cache_creation"]["ephemeral_5m_input_tokens"],
        "write_1h": usage["cache_creation"]["ephemeral_1h_input_tokens"],
        "input": usage["input_tokens"],
        "cost_usd": pytest.approx(0.108264, abs=1e-6),
        "after_read": 21_460,
    }
    assert (row["trigger"], row["pre_tokens"], row["read"], row["write_1h"], row["input"]) == (
        "auto",
        167_094,
        166_758,
        2_487,
        3,
    )
    # the previous main-chain request, read plainly: the last usage line of the session file sent
    # before the call (send time: the last line of its chain before it), and the one after the boundary
    ids = list(_last_usage(main))
    index = {line["uuid"]: line for line in main if "uuid" in line}
    sent = {}
    for mid, line in _last_usage(main).items():
        parent = index.get(line["parentUuid"])
        while parent is not None and parent.get("type") == "assistant" and parent["message"].get("id") == mid:
            parent = index.get(parent["parentUuid"])
        sent[mid] = datetime.fromisoformat((parent or line)["timestamp"].replace("Z", "+00:00"))
    call_at = log.requests[102].sent_at
    before = max((m for m in ids if sent[m] < call_at), key=lambda m: sent[m])
    prev = _last_usage(main)[before]["message"]["usage"]
    total = prev["input_tokens"] + prev["cache_read_input_tokens"] + prev["cache_creation_input_tokens"]
    assert total == 166_759 and usage["cache_read_input_tokens"] >= 0.95 * total
    assert row["idle_s"] == pytest.approx((call_at - sent[before]).total_seconds(), abs=0.01)
    plan = log.compaction_plan()
    _plan_rules(plan)
    # warm: nothing to move; but the 2,487 tokens the call wrote are never read again (the next
    # request reads the system prompt and tools): written as plain input they cost $0.012435 less
    assert plan.loc[0, "recommended"] == (
        "as recorded, without a cache write (its 2,487 written tokens as plain input: the next request "
        "reads only the system prompt and tools)"
    )
    unwritten = (usage["input_tokens"] + 2_487) * OPUS.input / 1e6 + usage["cache_read_input_tokens"] * OPUS.read / 1e6
    assert plan.loc[0, "planned_usd"] == pytest.approx(unwritten, abs=1e-9)
    assert plan.attrs["total_saving_usd"] == pytest.approx(0.012435, abs=1e-9)


def test_a_call_that_wrote_nothing_stays_as_recorded(tmp_path: Path) -> None:
    t = Transcript(tmp_path)
    t.turn(0, "claude-opus-4-6", usage(3, 0, w1h=20_000))
    t.turn(30, "claude-opus-4-6", usage(1, 20_003, w1h=1_000))
    t.compaction_call("e0e0e0", 50, "claude-opus-4-6", usage(3, 21_004))
    t.boundary(90, "auto", 21_100)
    t.turn(91, "claude-opus-4-6", usage(3, 12_000, w1h=3_000))
    plan = import_log(t.write()).compaction_plan()
    _plan_rules(plan)
    assert plan.loc[0, "recommended"] == "as recorded" and plan.loc[0, "saving_usd"] == 0.0
