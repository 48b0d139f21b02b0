"""Writes the fixtures of the real log formats' facts (run from anywhere; the outputs are committed).

Each file reproduces one or more facts that real logs nobody here wrote show (the list in
../shared/real-logs/README.md), with made-up content: ``claude_code/`` (streamed messages, ordinary
lines, parallel tool calls, rewinds and compaction, null parents, lines without ids, sidechains, a
session with its subagents), ``otlp/`` (each instrumentation's usage names, a malformed span) and
``documents/`` (files that are one JSON document).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
S = "5e55a000-0000-4000-8000-000000000001"


def base(kind: str, uuid: str, parent: str | None, t: str, **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/app",
        "sessionId": S,
        "version": "2.1.39",
        "gitBranch": "main",
        "type": kind,
    }
    d.update(kw)
    d["uuid"] = uuid
    d["timestamp"] = f"2026-11-30T10:{t}Z"
    return d


def user(uuid: str, parent: str | None, t: str, content: Any, **kw: Any) -> dict[str, Any]:
    return base("user", uuid, parent, t, message={"role": "user", "content": content}, **kw)


def usage(inp: int, write: int, read: int, out: int, h1: int | None = None) -> dict[str, Any]:
    h1 = write if h1 is None else h1
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": write - h1, "ephemeral_1h_input_tokens": h1},
        "output_tokens": out,
        "service_tier": "standard",
    }


def asst(
    uuid: str,
    parent: str | None,
    t: str,
    mid: str,
    block: dict[str, Any],
    u: dict[str, Any],
    model: str = "claude-opus-4-6",
    **kw: Any,
) -> dict[str, Any]:
    return base(
        "assistant",
        uuid,
        parent,
        t,
        requestId="req_" + mid[4:],
        message={
            "model": model,
            "id": mid,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": u,
        },
        **kw,
    )


def text(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


def tu(i: int, name: str = "Read") -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {"file_path": f"/home/dev/app/{i}.py"}}


def tr(i: int, s: str) -> list[dict[str, Any]]:
    return [{"tool_use_id": f"toolu_{i}", "type": "tool_result", "content": s}]


def progress(uuid: str, parent: str | None, t: str) -> dict[str, Any]:
    return base(
        "progress",
        uuid,
        parent,
        t,
        data={"type": "hook_progress", "hookEvent": "PostToolUse"},
        toolUseID="toolu_x",
        parentToolUseID="toolu_x",
    )


def write(name: str, rows: list[dict[str, Any]]) -> None:
    path = HERE / "claude_code" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def agent(row: dict[str, Any], agent_id: str) -> dict[str, Any]:
    return {**row, "isSidechain": True, "agentId": agent_id}


def claude_code() -> None:
    def u1(out: int) -> dict[str, Any]:
        return usage(3, 2400, 16000, out)

    # one streamed message over three lines; usage repeats, output grows; plus ordinary lines
    write(
        "streamed.jsonl",
        [
            {
                "type": "queue-operation",
                "operation": "enqueue",
                "timestamp": "2026-11-30T10:00:00.000Z",
                "sessionId": S,
                "content": "fix it",
            },
            {
                "type": "file-history-snapshot",
                "messageId": "u1",
                "snapshot": {"messageId": "u1", "trackedFileBackups": {}, "timestamp": "2026-11-30T10:00:00.000Z"},
                "isSnapshotUpdate": False,
            },
            progress("p0", None, "00:00.100"),
            user("u1", "p0", "00:01.000", "The parser rejects PX numbers. Fix it."),
            asst(
                "a1",
                "u1",
                "00:03.000",
                "msg_01S",
                {"type": "thinking", "thinking": "Look at the parser first.", "signature": "c2ln"},
                u1(2),
            ),
            asst("a2", "a1", "00:03.200", "msg_01S", text("Reading the parser."), u1(2)),
            asst("a3", "a2", "00:03.900", "msg_01S", tu(1), u1(187)),
            progress("p1", "a3", "00:04.000"),
            progress("p2", "p1", "00:04.100"),
            user(
                "r1",
                "a3",
                "00:04.500",
                tr(1, "def parse(n): ..."),
                toolUseResult={"type": "text"},
                sourceToolAssistantUUID="a3",
            ),
            progress("p3", "r1", "00:04.600"),
            asst("b1", "p3", "00:06.000", "msg_02S", text("Fixed."), usage(5, 120, 18400, 9, h1=100)),
            base("system", "s1", "b1", "00:06.100", subtype="turn_duration", durationMs=6100, isMeta=False),
            {"type": "summary", "summary": "Fix the PX parser", "leafUuid": "b1"},
        ],
    )
    # parallel tool calls: results each parented on its own tool_use, interleaved and after
    write(
        "parallel.jsonl",
        [
            user("u1", None, "00:01.000", "Read the three modules."),
            asst("a1", "u1", "00:02.000", "msg_01P", text("Reading all three."), usage(3, 900, 15000, 4)),
            asst("a2", "a1", "00:02.100", "msg_01P", tu(1), usage(3, 900, 15000, 4)),
            asst("a3", "a2", "00:02.200", "msg_01P", tu(2), usage(3, 900, 15000, 4)),
            asst("a4", "a3", "00:02.300", "msg_01P", tu(3), usage(3, 900, 15000, 140)),
            user("r1", "a2", "00:03.000", tr(1, "one"), toolUseResult={"type": "text"}),
            user("r2", "a3", "00:03.100", tr(2, "two"), toolUseResult={"type": "text"}),
            user("r3", "a4", "00:03.200", tr(3, "three"), toolUseResult={"type": "text"}),
            # one message whose calls and results interleave (call, result, call, result)
            asst("b1", "r3", "00:04.000", "msg_02P", tu(4), usage(3, 300, 15900, 5)),
            user("q1", "b1", "00:04.500", tr(4, "four"), toolUseResult={"type": "text"}),
            asst("b2", "q1", "00:04.600", "msg_02P", tu(5), usage(3, 300, 15900, 61)),
            user("q2", "b2", "00:05.000", tr(5, "five"), toolUseResult={"type": "text"}),
            asst("c1", "q2", "00:06.000", "msg_03P", text("All read."), usage(3, 200, 16200, 7)),
        ],
    )
    # a rewind: the first attempt is abandoned; then compaction: a boundary starts a new chain
    write(
        "rewind_compact.jsonl",
        [
            user("u1", None, "00:01.000", "Start."),
            asst("a1", "u1", "00:02.000", "msg_01R", text("Ready."), usage(3, 5000, 0, 3)),
            user("x1", "a1", "00:03.000", "First attempt, abandoned."),
            asst("x2", "x1", "00:04.000", "msg_02R", text("First answer."), usage(3, 40, 5000, 4)),
            user("y1", "a1", "00:05.000", "Second attempt."),
            asst("y2", "y1", "00:06.000", "msg_03R", text("Second answer."), usage(3, 40, 5000, 4)),
            base(
                "system",
                "cb",
                None,
                "00:07.000",
                subtype="compact_boundary",
                content="Conversation compacted",
                logicalParentUuid="y2",
                level="info",
                compactMetadata={"trigger": "auto", "preTokens": 5100},
            ),
            user(
                "cs",
                "cb",
                "00:07.100",
                "This session is being continued from a previous conversation. Summary: two attempts.",
                isCompactSummary=True,
            ),
            user("z1", "cs", "00:08.000", "Go on."),
            asst("z2", "z1", "00:09.000", "msg_04R", text("Going on."), usage(3, 600, 0, 5)),
        ],
    )
    # older writers: parentUuid null on every line; lines without uuid or message id
    write(
        "null_parents.jsonl",
        [
            {**user("n1", None, "00:01.000", "First."), "parentUuid": None},
            asst(
                "n2",
                None,
                "00:02.000",
                "msg_01N",
                text("One."),
                {
                    "input_tokens": 20,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 35,
                },
            ),
            user("n3", None, "00:03.000", "Second."),
            asst("n4", None, "00:04.000", "msg_02N", text("Two."), {"input_tokens": 30, "output_tokens": 12}),
        ],
    )
    noids = [
        user("k1", None, "00:01.000", "Hello."),
        asst("k2", "k1", "00:02.000", "msg_x", text("Hi."), {"input_tokens": 8, "output_tokens": 3}),
        user("k3", "k2", "00:03.000", "Again."),
        asst("k4", "k3", "00:04.000", "msg_x", text("Hi again."), {"input_tokens": 12, "output_tokens": 4}),
    ]
    for row in noids:
        row.pop("uuid")
        row.pop("parentUuid")
        if row["type"] == "assistant":
            row["message"].pop("id")
            row.pop("requestId")
    write("no_ids.jsonl", noids)
    # sidechain lines in the session file; a model switch; dated ids
    write(
        "sidechain.jsonl",
        [
            user("u1", None, "00:01.000", "Plan the change."),
            asst(
                "a1",
                "u1",
                "00:02.000",
                "msg_01C",
                text("Delegating."),
                usage(3, 8000, 0, 20),
                model="claude-sonnet-4-5-20250929",
            ),
            {**user("s1", None, "00:02.500", "Search the code for PX."), "isSidechain": True},
            {
                **asst(
                    "s2",
                    "s1",
                    "00:03.000",
                    "msg_01D",
                    text("Found in parser.py."),
                    usage(3, 1500, 0, 12, h1=0),
                    model="claude-haiku-4-5-20251001",
                ),
                "isSidechain": True,
            },
            user("u2", "a1", "00:04.000", "Now do it."),
            asst("a2", "u2", "00:05.000", "msg_02C", text("Done."), usage(3, 100, 8000, 30), model="claude-opus-4-6"),
        ],
    )
    # a session with its subagents folder: a task agent and a compaction run parented into the session
    write(
        "session/5e55a000.jsonl",
        [
            user("m1", None, "00:01.000", "Refactor the parser."),
            asst("m2", "m1", "00:02.000", "msg_01M", text("On it."), usage(3, 9000, 0, 6)),
            user("m3", "m2", "00:03.000", "And the tests."),
            asst("m4", "m3", "00:04.000", "msg_02M", text("Both done."), usage(3, 200, 9000, 8)),
        ],
    )
    haiku = "claude-haiku-4-5-20251001"
    write(
        "session/5e55a000/subagents/agent-a77.jsonl",
        [
            agent(user("t1", None, "00:02.200", "Find every caller of parse()."), "a77"),
            agent(
                asst("t2", "t1", "00:02.500", "msg_01T", tu(9, "Grep"), usage(3, 1200, 0, 2, h1=0), model=haiku), "a77"
            ),
            agent(
                asst("t3", "t2", "00:02.600", "msg_01T", text("Searching."), usage(3, 1200, 0, 40, h1=0), model=haiku),
                "a77",
            ),
            agent(user("t4", "t2", "00:02.800", tr(9, "app.py:3")), "a77"),
            agent(
                asst("t5", "t4", "00:03.000", "msg_02T", text("One caller."), usage(3, 30, 1200, 9, h1=0), model=haiku),
                "a77",
            ),
        ],
    )
    write(
        "session/5e55a000/subagents/agent-acompact-c0ffee.jsonl",
        [
            agent(
                user("c1", "m4", "00:05.000", "Your task is to create a detailed summary of the conversation so far."),
                "acompact-c0ffee",
            ),
            agent(
                asst(
                    "c2",
                    "c1",
                    "00:06.000",
                    "msg_01K",
                    text("Summary: parser and tests refactored."),
                    usage(3, 50, 9200, 25),
                ),
                "acompact-c0ffee",
            ),
        ],
    )


def attr(k: str, v: Any) -> dict[str, Any]:
    return {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}


def span(i: int, attrs: list[dict[str, Any]], name: str = "chat claude-sonnet-4-5-20250929") -> dict[str, Any]:
    return {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": f"{i:016x}",
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(1796036400000000000 + i * 10**10),
        "endTimeUnixNano": str(1796036401000000000 + i * 10**10),
        "status": {"code": 0},
        "attributes": attrs,
    }


def doc(scope: str, spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "fixture")]},
                "scopeSpans": [{"scope": {"name": scope}, "spans": spans}],
            }
        ]
    }


def otlp() -> None:
    folder = HERE / "otlp"
    folder.mkdir(exist_ok=True)
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Summarise the article."}]}])

    def common() -> list[dict[str, Any]]:
        return [
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.provider.name", "anthropic"),
            attr("gen_ai.request.model", "claude-sonnet-4-5-20250929"),
            attr("gen_ai.input.messages", msgs),
        ]

    # the anthropic SDK's own tracing: writes under cache_write; input includes them
    sdk = doc(
        "com.anthropic.sdk.python",
        [
            span(
                1,
                common()
                + [
                    attr("gen_ai.usage.input_tokens", 2010),
                    attr("gen_ai.usage.cache_write.input_tokens", 2000),
                    attr("gen_ai.usage.cache_read.input_tokens", 0),
                    attr("gen_ai.usage.output_tokens", 50),
                    attr("anthropic.request.id", "req_01F1"),
                    attr("gen_ai.conversation.id", "conv-7"),
                    attr("gen_ai.response.id", "msg_01F1"),
                    attr("gen_ai.response.model", "claude-sonnet-4-5-20250929"),
                    {
                        "key": "gen_ai.response.finish_reasons",
                        "value": {"arrayValue": {"values": [{"stringValue": "end_turn"}]}},
                    },
                ],
            ),
            span(
                2,
                common()
                + [
                    attr("gen_ai.usage.input_tokens", 2012),
                    attr("gen_ai.usage.cache_write.input_tokens", 0),
                    attr("gen_ai.usage.cache_read.input_tokens", 2000),
                    attr("gen_ai.usage.output_tokens", 61),
                ],
            ),
        ],
    )
    (folder / "anthropic_sdk.otlp.json").write_text(json.dumps(sdk, indent=1) + "\n")
    # the GenAI registry / OpenLLMetry names, and the older OpenLLMetry underscore names, one span each
    reg = doc(
        "opentelemetry.instrumentation.anthropic",
        [
            span(
                1,
                common()
                + [
                    attr("gen_ai.usage.input_tokens", 1500),
                    attr("gen_ai.usage.cache_creation.input_tokens", 1200),
                    attr("gen_ai.usage.cache_read.input_tokens", 200),
                    attr("gen_ai.usage.output_tokens", 30),
                ],
            ),
            span(
                2,
                common()
                + [
                    attr("gen_ai.usage.prompt_tokens", 1510),
                    attr("gen_ai.usage.cache_creation_input_tokens", 8),
                    attr("gen_ai.usage.cache_read_input_tokens", 1400),
                    attr("gen_ai.usage.completion_tokens", 31),
                ],
            ),
        ],
    )
    (folder / "genai_registry.otlp.json").write_text(json.dumps(reg, indent=1) + "\n")
    # OpenInference: llm.token_count.*, messages as flattened attributes; no gen_ai.operation.name
    oi = doc(
        "openinference.instrumentation.anthropic",
        [
            span(
                1,
                [
                    attr("openinference.span.kind", "LLM"),
                    attr("llm.provider", "anthropic"),
                    attr("llm.model_name", "claude-haiku-4-5-20251001"),
                    attr("llm.input_messages.0.message.role", "system"),
                    attr("llm.input_messages.0.message.content", "You are terse."),
                    attr("llm.input_messages.1.message.role", "user"),
                    attr("llm.input_messages.1.message.content", "Weather in Paris?"),
                    attr(
                        "llm.tools.0.tool.json_schema",
                        json.dumps({"name": "get_weather", "input_schema": {"type": "object"}}),
                    ),
                    attr("llm.token_count.prompt", 900),
                    attr("llm.token_count.prompt_details.cache_read", 700),
                    attr("llm.token_count.prompt_details.cache_write", 150),
                    attr("llm.token_count.completion", 12),
                    attr("session.id", "s-42"),
                ],
                name="Messages",
            )
        ],
    )
    (folder / "openinference.otlp.json").write_text(json.dumps(oi, indent=1) + "\n")
    # collector file exporter: one document per line; the second span is malformed (no start time)
    good = span(1, common() + [attr("gen_ai.usage.input_tokens", 100), attr("gen_ai.usage.output_tokens", 5)])
    bad = span(2, common() + [attr("gen_ai.usage.input_tokens", 100)])
    del bad["startTimeUnixNano"]
    third = span(3, common() + [attr("gen_ai.usage.input_tokens", 120), attr("gen_ai.usage.output_tokens", 6)])
    rows = [json.dumps(doc("x", [s])) for s in (good, bad, third)]
    (folder / "one_bad_span.otlp.jsonl").write_text("\n".join(rows) + "\n")


def documents() -> None:
    folder = HERE / "documents"
    folder.mkdir(exist_ok=True)
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 512,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }
    env = {
        "timestamp": "2026-11-30T12:00:00Z",
        "request_id": "req_doc1",
        "request": body,
        "response": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": "Rainy."}],
            "usage": {
                "input_tokens": 12,
                "cache_creation_input_tokens": 1100,
                "cache_read_input_tokens": 0,
                "output_tokens": 4,
            },
        },
    }
    (folder / "pretty_envelope.json").write_text(json.dumps(env, indent=2) + "\n")

    def chat(i: int, cached: int) -> dict[str, Any]:
        return {
            "timestamp": f"2026-11-30T12:00:0{i}Z",
            "request_id": f"req_c{i}",
            "request": {
                "model": "gpt-4o-mini",
                "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": f"Question {i}?"}],
            },
            "response": {
                "id": f"chatcmpl-{i}",
                "object": "chat.completion",
                "model": "gpt-4o-mini-2024-07-18",
                "choices": [],
                "usage": {
                    "prompt_tokens": 1300 + i,
                    "completion_tokens": 20,
                    "total_tokens": 1320 + i,
                    "prompt_tokens_details": {"cached_tokens": cached},
                },
            },
        }

    (folder / "array_of_envelopes.json").write_text(json.dumps([chat(1, 0), chat(2, 1280)], indent=2) + "\n")
    (folder / "data_list.json").write_text(
        json.dumps({"object": "list", "data": [chat(1, 0), chat(2, 1280)], "has_more": False}, indent=2) + "\n"
    )


if __name__ == "__main__":
    claude_code()
    otlp()
    documents()
