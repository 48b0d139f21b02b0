"""Log formats read right: OTLP in every usage convention (writes as writes), a malformed span as
one issue, files that are one JSON document, the OTLP reader at scale, and the acceptance script
over the real logs when they are there."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from wm_kernel.interop import import_log
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.testing.synthetic import otlp_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"
ROOT = Path(__file__).resolve().parents[2]


def figures(session: ImportedSession) -> list[tuple[int, int, int, int]]:
    out = []
    for u in session.billed_usage():
        assert u is not None
        out.append((u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens))
    return out


def test_the_anthropic_sdks_own_tracing_names_writes_cache_write() -> None:
    session = import_log(DATA / "otlp" / "anthropic_sdk.otlp.json")
    assert [str(e) for e in session.errors] == []
    # gen_ai.usage.input_tokens (2010) includes the 2000 written: 10 plain, 2000 written
    assert figures(session) == [(10, 0, 2000, 50), (12, 2000, 0, 61)]
    assert session.usage["cache_creation_input_tokens"].tolist() == [2000, 0]
    first = session.request(0)
    assert (first.request_id, first.conversation, first.model) == ("req_01F1", "conv-7", "claude-sonnet-4-5-20250929")
    assert (first.response_id, first.response_model, first.finish_reason, first.conversation_id) == (
        "msg_01F1",
        "claude-sonnet-4-5-20250929",
        "end_turn",
        "conv-7",
    )
    assert session.request(1).response_id is None


def test_the_genai_registry_and_older_openllmetry_names_read_alike() -> None:
    session = import_log(DATA / "otlp" / "genai_registry.otlp.json")
    assert [str(e) for e in session.errors] == []
    assert figures(session) == [(100, 200, 1200, 30), (102, 1400, 8, 31)]


def test_openinference_spans_read_with_their_messages_and_counts() -> None:
    session = import_log(DATA / "otlp" / "openinference.otlp.json")
    assert [str(e) for e in session.errors] == []
    assert figures(session) == [(50, 700, 150, 12)]
    assert [(s.name, s.kind, s.text) for s in session.sections(0)] == [
        ("tool:get_weather", "tool", '{"name": "get_weather", "input_schema": {"type": "object"}}'),
        ("msg[0] system", "system", "You are terse."),
        ("msg[1] user", "message", "Weather in Paris?"),
    ]
    request = session.request(0)
    assert (request.provider, request.model, request.conversation) == ("anthropic", "claude-haiku-4-5-20251001", "s-42")


def test_one_malformed_span_is_one_issue_and_the_others_import() -> None:
    path = DATA / "otlp" / "one_bad_span.otlp.jsonl"
    session = import_log(path)
    assert [str(e) for e in session.errors] == [
        f"{path}:2: span 'chat claude-sonnet-4-5-20250929': no 'startTimeUnixNano'; the span is skipped"
    ]
    assert figures(session) == [(100, 0, 0, 5), (120, 0, 0, 6)]


def test_a_span_whose_input_excludes_cached_tokens_is_said_and_read_whole(tmp_path: Path) -> None:
    text = (DATA / "otlp" / "genai_registry.otlp.json").read_text(encoding="utf-8")
    path = tmp_path / "low.otlp.json"
    path.write_text(text.replace('"1500"', '"100"'), encoding="utf-8")
    session = import_log(path)
    assert [e.message for e in session.errors] == [
        "input tokens (100) fewer than cached (200) and written (1200) ones, which they include: read as not "
        "including them"
    ]
    assert figures(session)[0] == (100, 200, 1200, 30)


@pytest.mark.parametrize("convention", ["gen_ai", "anthropic-sdk", "openinference"])
@pytest.mark.parametrize("per_line", [False, True])
def test_generated_traces_read_back_to_their_counts(tmp_path: Path, convention: str, per_line: bool) -> None:
    made = otlp_trace(tmp_path / "t.json", spans=30, convention=convention, per_line=per_line, seed=3)
    session = import_log(made.path)
    assert [str(e) for e in session.errors] == []
    totals = [sum(c) for c in zip(*figures(session), strict=True)]
    assert totals == [made.input_tokens, made.cache_read_tokens, made.cache_write_5m_tokens, made.output_tokens]


def test_each_spans_line_is_found_by_a_forward_search(tmp_path: Path) -> None:
    made = otlp_trace(tmp_path / "t.json", spans=12, seed=1)
    lines = made.path.read_text(encoding="utf-8").split("\n")
    session = import_log(made.path)
    for request in session.requests:
        assert '"spanId"' in lines[request.lines[0] - 1]
    assert [r.lines[0] for r in session.requests] == sorted(r.lines[0] for r in session.requests)


def test_a_file_that_is_one_pretty_printed_json_document_imports() -> None:
    session = import_log(DATA / "documents" / "pretty_envelope.json")
    assert [str(e) for e in session.errors] == []
    assert len(session) == 1
    assert figures(session) == [(12, 0, 1100, 4)]
    assert [s.name for s in session.sections(0)] == ["system[0]", "msg[0] user"]
    assert session.replay(0) == (DATA / "documents" / "pretty_envelope.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["array_of_envelopes.json", "data_list.json"])
def test_a_document_holding_a_list_of_records_imports_each(name: str) -> None:
    session = import_log(DATA / "documents" / name)
    assert [str(e) for e in session.errors] == []
    assert figures(session) == [(1301, 0, 0, 20), (22, 1280, 0, 20)]
    assert [r.lines for r in session.requests] == ([(2,), (33,)] if name.startswith("array") else [(4,), (35,)])
    assert [r.model for r in session.requests] == ["gpt-4o-mini", "gpt-4o-mini"]


def test_one_line_holding_an_array_of_records_imports_each(tmp_path: Path) -> None:
    records = json.loads((DATA / "documents" / "array_of_envelopes.json").read_text(encoding="utf-8"))
    path = tmp_path / "one_line.json"
    path.write_text(json.dumps(records) + "\n", encoding="utf-8")
    session = import_log(path)
    assert [str(e) for e in session.errors] == []
    assert figures(session) == [(1301, 0, 0, 20), (22, 1280, 0, 20)]


def _accept() -> object:
    spec = importlib.util.spec_from_file_location("accept_real_logs", ROOT / "tools" / "accept_real_logs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["accept_real_logs"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # megabytes of real logs, every figure of each
def test_every_figure_of_the_real_logs_equals_a_plain_count(capsys: pytest.CaptureFixture[str]) -> None:
    accept: object = _accept()
    folder = accept.default_folder()  # type: ignore[attr-defined]
    if folder is None:
        pytest.skip("../shared/real-logs (or /work/shared/real-logs) is absent: acceptance over real logs skipped")
    status = accept.main([str(folder)])  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.rstrip().endswith("all figures agree")
