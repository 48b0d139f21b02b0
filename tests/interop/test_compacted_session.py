"""The compacted session notebook 15 walks through (notebooks/logs/compacted/): the generator's
output byte for byte, and the shared real session's compaction figures, which it reproduces."""

from __future__ import annotations

from pathlib import Path

import pytest

from wm_kernel.interop.log_files import import_log
from wm_kernel.testing.synthetic import COMPACTED_SESSION, compacted_session

SHIPPED = Path(__file__).resolve().parents[2] / "notebooks" / "logs" / "compacted"


def test_the_shipped_files_are_what_the_generator_writes(tmp_path: Path) -> None:
    made = compacted_session(tmp_path)
    assert made == tmp_path / f"{COMPACTED_SESSION}.jsonl"
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.jsonl"))
    shipped = sorted(p.relative_to(SHIPPED) for p in SHIPPED.rglob("*.jsonl"))
    assert written == shipped and len(written) == 4
    for name in written:
        assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes(), name


def test_its_automatic_compaction_has_the_shared_sessions_figures_and_its_manual_one_is_planned() -> None:
    log = import_log(SHIPPED / f"{COMPACTED_SESSION}.jsonl")
    auto, manual = log.compactions().to_dict("records")
    # the shared session (docs/planner.md): auto, 167,094, warm, 25.737 s, read 166,758, 2,487 at
    # one hour, 3 plain tokens, $0.108264; the next request read the system prompt and tools
    assert (auto["trigger"], auto["pre_tokens"], auto["warm"], auto["model_switch"]) == ("auto", 167_094, True, False)
    assert auto["idle_s"] == pytest.approx(25.737, abs=0.01)
    assert (auto["read"], auto["write_5m"], auto["write_1h"], auto["input"]) == (166_758, 0, 2_487, 3)
    assert auto["cost_usd"] == pytest.approx(0.108264, abs=1e-6) and auto["after_read"] == 21_460
    assert log.usage.loc[auto["call"] - 1, "input_tokens"] == 166_759
    # 13 minutes idle and a switch to Sonnet: the summary writes the whole history again
    assert (manual["trigger"], manual["warm"], manual["model_switch"], manual["read"]) == ("manual", False, True, 0)
    assert manual["idle_s"] == pytest.approx(780.0, abs=0.01)
    assert manual["cost_usd"] == pytest.approx(0.77, abs=0.005)
    plan = log.compaction_plan()
    assert plan["recommended"].tolist()[0].startswith("as recorded, without a cache write (its 2,487 written")
    assert plan.loc[0, "saving_usd"] == pytest.approx(2_487 * (10.0 - 5.0) / 1e6, abs=1e-9)
    assert plan["recommended"].tolist()[1] == (
        "compact before the cache expires (within 3600 s of 2026-02-11 09:55:53 UTC, on claude-opus-4-6)"
    )
    # on Opus, which held the conversation (P its last request's input), within the hour: 3 plain,
    # P read, the call's 497 more written at one hour; as recorded on Sonnet: 3 plain, P + 497 written
    held = int(log.usage.loc[manual["call"] - 1, "input_tokens"])
    planned = (3 * 5.0 + held * 0.5 + 497 * 10.0) / 1e6
    recorded = (3 * 3.0 + (held + 497) * 6.0) / 1e6
    assert manual["cost_usd"] == pytest.approx(recorded, abs=1e-9)
    assert plan.loc[1, "planned_usd"] == pytest.approx(planned, abs=1e-9)
    assert plan.loc[1, "saving_usd"] == pytest.approx(recorded - planned, abs=1e-9)
    assert plan.attrs["total_saving_usd"] == pytest.approx(recorded - planned + 0.012435, abs=1e-9)
