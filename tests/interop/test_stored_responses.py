"""OpenAI's stored chat completions (``GET /chat/completions``: ``{"object": "list", "data": [...]}``
of ``chat.completion`` objects) import as requests whose text the log does not hold: their usage,
model, time and response are the record's, the prompt is sized from the usage (issue 29 item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from wm_kernel.interop import import_log
from wm_kernel.providers.reconcile import reconcile
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

ROOT = Path(__file__).resolve().parents[2]


def completion(n: int, prompt: int, cached: int, model: str = "gpt-4o-mini-2024-07-18") -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1764579600 + 60 * n,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Reply {n}."}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": 30 + n,
            "total_tokens": prompt + 30 + n,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
        "metadata": {"run": "nightly"},
    }


RECORDS = [completion(0, 2006, 0), completion(1, 2100, 1920), completion(2, 2300, 2048, model="gpt-4.1-2025-04-14")]


def listing(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"object": "list", "data": records, "first_id": "chatcmpl-0", "last_id": "chatcmpl-2", "has_more": False}


@pytest.mark.parametrize("shape", ["document", "json-lines"])
def test_stored_completions_import_with_the_records_usage_models_and_times(tmp_path: Path, shape: str) -> None:
    path = tmp_path / ("completions.json" if shape == "document" else "completions.jsonl")
    if shape == "document":
        path.write_text(json.dumps(listing(RECORDS), indent=2), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    log = import_log(path, counter=TokenCounter(EstimateTokenizer()))
    assert log.errors == ()
    usage = log.usage
    assert usage["input_tokens"].tolist() == [2006, 2100, 2300]
    assert usage["cache_read_input_tokens"].tolist() == [0, 1920, 2048]
    assert usage["output_tokens"].tolist() == [30, 31, 32]
    assert usage["model"].tolist() == ["gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18", "gpt-4.1-2025-04-14"]
    assert [r.sent_at for r in log.requests] == [datetime.fromtimestamp(1764579600 + 60 * n, UTC) for n in range(3)]
    assert [r.response_id for r in log.requests] == ["chatcmpl-0", "chatcmpl-1", "chatcmpl-2"]
    assert [r.finish_reason for r in log.requests] == ["stop"] * 3
    assert log.replay(0) == ""  # the messages sent are not in a stored completion
    (found,) = log.inferred().values()
    assert found.label.startswith("the request, not in the log: about ")
    result = reconcile(log)
    assert result.rows["model"].tolist() == ["gpt-4o-mini", "gpt-4o-mini", "gpt-4.1"]
    assert result.rows["billed_read"].tolist() == [0, 1920, 2048]


def test_a_stored_completion_without_usage_is_an_issue_with_its_line(tmp_path: Path) -> None:
    broken = dict(completion(1, 10, 0))
    del broken["usage"]
    path = tmp_path / "completions.jsonl"
    path.write_text(json.dumps(completion(0, 2006, 0)) + "\n" + json.dumps(broken) + "\n", encoding="utf-8")
    log = import_log(path)
    assert len(log) == 1
    assert [str(e) for e in log.errors] == [f"{path}:2: OpenAI stored chat completions: a response without usage"]


@pytest.mark.slow  # starts a process
def test_the_command_line_imports_a_stored_completions_export_and_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "completions.json"
    path.write_text(json.dumps(listing(RECORDS)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "wm_kernel", "import", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("3 requests from completions.json; tokens counted with ")
    assert "the request, not in the log: about " in done.stdout
