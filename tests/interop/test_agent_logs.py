"""Codex CLI rollouts, claude-trace captures, OpenHands trajectories and Gemini generateContent
envelopes: each found from its content, one fact of its format per test (tests/agent_log_files.py
writes the files)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from agent_log_files import (
    ORG,
    SECRET,
    capture_pair,
    claude_trace,
    codex_conversation,
    codex_rollout,
    gemini_envelopes,
    openhands,
    write_lines,
)

from wm_kernel.__main__ import main as cli
from wm_kernel.interop import import_log
from wm_kernel.interop.agents.claude_trace import streamed_message
from wm_kernel.interop.log_files import read_log


def _figures(session: object) -> list[tuple[int, int, int, int, int]]:
    return [
        (u.input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens, u.cache_write_1h_tokens, u.output_tokens)
        for u in session.billed_usage()  # type: ignore[attr-defined]
        if u is not None
    ]


# -- Codex


def test_a_codex_request_is_billed_its_own_usage_not_the_sessions_total(tmp_path: Path) -> None:
    session = import_log(codex_rollout(tmp_path / "rollout-2026-02-23T11-41-04-x.jsonl"))
    assert read_log(tmp_path / "rollout-2026-02-23T11-41-04-x.jsonl").format == "codex"
    # input includes the cached input; output includes the reasoning
    assert _figures(session) == [(1000, 0, 0, 0, 50), (300, 900, 0, 0, 30), (400, 0, 0, 0, 7)]


def test_codex_totals_written_twice_are_one_request(tmp_path: Path) -> None:
    session = import_log(codex_rollout(tmp_path / "r.jsonl"))
    assert len(session) == 3
    assert session.skipped["repeated token_count"] == 2
    assert session.skipped["token_count without usage"] == 1


def test_a_codex_request_is_on_the_model_of_the_turn_context_before_it(tmp_path: Path) -> None:
    session = import_log(codex_rollout(tmp_path / "r.jsonl"))
    assert [r.model for r in session.requests] == ["gpt-5.3-codex", "gpt-5.3-codex", "gpt-5.2"]
    assert {r.conversation_id for r in session.requests} == {"019c-codex-session"}


def test_the_request_after_a_codex_compaction_is_marked(tmp_path: Path) -> None:
    session = import_log(codex_rollout(tmp_path / "r.jsonl"))
    assert [r.marks for r in session.requests] == [(), (), ("after-compaction",)]


def test_a_codex_request_holds_what_it_sent_rebuilt_from_the_rollout(tmp_path: Path) -> None:
    session = import_log(codex_conversation(tmp_path / "r.jsonl"))
    names = [[s.name for s in session.sections(turn) if s.kind != "framing"] for turn in session.turns]
    opening = ["instructions", "input[0] developer [0] input_text", "input[1] user [0] input_text"]
    answer = ["input[2] reasoning", "input[3] assistant [0] output_text", "input[4] function_call"]
    assert names == [
        opening,
        [*opening, *answer, "input[5] function_call_output output"],
        # the compaction's summary replaces the conversation; the instructions are still sent
        ["instructions", "input[0] summary", "input[1] user [0] input_text"],
    ]
    first = session.sections(0)
    assert [(s.kind, s.trinket, s.text) for s in first if s.kind != "framing"] == [
        ("system", "system", "You are Codex, a coding agent."),
        ("system", "developer", "Sandbox: workspace-write."),
        ("message", "user", "List the files."),
    ]
    # what the model answered is the request's response, not part of what it was sent
    assert [s.name for s in session.requests[0].response if s.kind != "framing"] == answer
    assert [s.text for s in session.requests[1].response if s.kind != "framing"] == ["One file: a.py."]
    # the second request repeats the first one's sections (the same objects: cut once)
    assert all(a is b for a, b in zip(first, session.sections(1), strict=False))
    assert session.prompt_at(1)["cached_content"].startswith("You are Codex, a coding agent.")
    # the tool schemas are not in a rollout: their size is inferred from the usage
    assert session.requests[0].unlogged == ("tools",)
    assert set(session.inferred()) == {"019c-codex-talk"}
    assert _figures(session) == [(3000, 0, 0, 0, 40), (156, 2944, 0, 0, 8), (2000, 0, 0, 0, 5)]


def test_the_usage_pass_reads_a_codex_rollout_without_its_sections(tmp_path: Path) -> None:
    path = codex_conversation(tmp_path / "r.jsonl")
    read = read_log(path, usage_only=True)
    assert [(len(r.sections), r.usage_format) for r in read.requests] == [(0, "openai.responses")] * 3
    assert [r.usage for r in read.requests] == [r.usage for r in import_log(path).requests]


# -- claude-trace


def test_a_streamed_response_is_read_from_its_raw_events(tmp_path: Path) -> None:
    session = import_log(claude_trace(tmp_path / "trace.jsonl"))
    assert read_log(tmp_path / "trace.jsonl").format == "claude-trace"
    # message_start's input and cache counts, message_delta's final output
    assert _figures(session) == [(8, 0, 0, 0, 1), (4, 0, 15032, 0, 174)]
    main = session.requests[1]
    assert (main.response_id, main.model, main.finish_reason) == ("msg_main1", "claude-sonnet-4-20250514", "end_turn")


def test_a_stream_that_ends_early_keeps_what_it_said() -> None:
    raw = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"x",'
        '"usage":{"input_tokens":3,"output_tokens":1}}}\n\nevent: content_block_delta\ndata: {"type":"cont'
    )
    assert streamed_message(raw)["usage"] == {"input_tokens": 3, "output_tokens": 1}


def test_a_captured_request_has_its_sections_and_cache_marks(tmp_path: Path) -> None:
    session = import_log(claude_trace(tmp_path / "trace.jsonl"))
    main = session.requests[1]
    marked = {s.name: s.cache for s in main.sections if s.cache}
    assert marked == {"system[0]": "5m", "msg[0] user [0] text": "5m"}
    assert [s.kind for s in main.sections if s.kind != "framing"] == ["system", "system", "tool", "message"]
    # the sections are the body as sent, and nothing else of the line
    assert json.loads("".join(s.raw for s in main.sections))["model"] == "claude-sonnet-4-20250514"


def test_side_calls_on_other_models_are_conversations_of_their_own(tmp_path: Path) -> None:
    session = import_log(claude_trace(tmp_path / "trace.jsonl"))
    side, main = session.requests
    assert side.conversation != main.conversation
    assert [c["conversation"] for c in session.request_context()] == [side.conversation, main.conversation]


def test_no_header_value_reaches_any_view_or_export(tmp_path: Path) -> None:
    path = claude_trace(tmp_path / "trace.jsonl")
    session = import_log(path)
    kept = repr(session.requests) + repr(session.errors) + repr(session.billed_usage())
    kept += session.summary().to_string() + session.history.to_string() + session.usage.to_string()
    kept += "".join(session.replay(turn) for turn in session.turns)
    kept += repr([session.prompt_at(turn) for turn in session.turns])
    out, err = io.StringIO(), io.StringIO()
    trace = tmp_path / "out.otlp.json"
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        cli(["import", str(path), "--sections", "1", "--otlp-out", str(trace)])
        cli(["usage", "--no-cache", "--json", str(path)])
        cli(["usage", "--no-cache", "--csv", str(path), "--html", str(tmp_path / "u.html")])
    kept += out.getvalue() + err.getvalue() + trace.read_text() + (tmp_path / "u.html").read_text()
    for secret in (SECRET, ORG, "authorization", "x-api-key", "anthropic-organization-id"):
        assert secret not in kept


def test_a_failed_call_and_another_endpoint_carry_no_request(tmp_path: Path) -> None:
    failed = capture_pair(1.0, {"model": "m", "messages": []}, answer={"type": "error"})
    failed["response"]["status_code"] = 529
    other = capture_pair(2.0, {"model": "m", "messages": []}, answer={})
    other["request"]["url"] = "https://api.anthropic.com/api/oauth/usage"
    ok = capture_pair(
        3.0,
        {"model": "claude-3-5-haiku-20241022", "max_tokens": 1, "messages": []},
        answer={"id": "a", "usage": {"input_tokens": 1, "output_tokens": 1}},
    )
    session = import_log(write_lines(tmp_path / "t.jsonl", [failed, other, ok]))
    assert len(session) == 1
    assert session.skipped == {"failed call (status 529)": 1, "other call": 1}


# -- OpenHands


def test_an_openhands_request_is_one_distinct_model_response(tmp_path: Path) -> None:
    session = import_log(openhands(tmp_path / "trajectory.json"))
    assert read_log(tmp_path / "trajectory.json").format == "openhands"
    assert [r.response_id for r in session.requests] == ["chatcmpl-1", "chatcmpl-2"]
    assert session.skipped["action of a counted response"] == 1


def test_openhands_litellm_usage_counts_reads_and_writes_inside_the_prompt(tmp_path: Path) -> None:
    session = import_log(openhands(tmp_path / "trajectory.json"))
    # prompt_tokens = input + reads + writes
    assert _figures(session) == [(4, 0, 3482, 0, 1135), (6, 3482, 1158, 0, 177)]
    assert {r.provider for r in session.requests} == {"anthropic"}


# -- Gemini


def test_gemini_envelopes_are_found_and_read_by_their_usage_metadata(tmp_path: Path) -> None:
    session = import_log(gemini_envelopes(tmp_path / "gemini.envelope.jsonl"))
    assert read_log(tmp_path / "gemini.envelope.jsonl").format == "gemini"
    # promptTokenCount includes the cached content; thoughts are output
    assert _figures(session) == [(8, 3512, 0, 0, 44), (8, 3512, 0, 0, 53)]
    assert [r.model for r in session.requests] == ["gemini-2.5-flash"] * 2
    assert [r.response_id for r in session.requests] == ["resp-42", "resp-51"]


def test_a_gemini_body_is_cut_into_its_sections(tmp_path: Path) -> None:
    session = import_log(gemini_envelopes(tmp_path / "gemini.envelope.jsonl"))
    names = [s.name for s in session.requests[0].sections if s.kind != "framing"]
    assert names == ["cachedContent", "system [0] text", "msg[0] user [0] text"]
    # the cache-deciding prefix is the system instruction and the cache named; the question is not
    first, second = session.request_prefixes()
    assert first == second


def test_the_cli_imports_each_new_format(tmp_path: Path) -> None:
    paths = [
        codex_rollout(tmp_path / "r.jsonl"),
        claude_trace(tmp_path / "t.jsonl"),
        openhands(tmp_path / "o.json"),
        gemini_envelopes(tmp_path / "g.jsonl"),
    ]
    for path in paths:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            assert cli(["import", str(path)]) == 0
        assert err.getvalue() == ""
