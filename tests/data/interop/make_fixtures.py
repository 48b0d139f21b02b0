"""Writes the interop fixture logs (run from the repository root; the outputs are committed).

A made-up support agent, "Parcelly Help", answering parcel questions, logged five ways. The
Anthropic log tells a story the notebook 11_your_agent follows: a timestamp inside the last system
block, a tool description changed by a deploy at turn 3, and a 7-minute pause before turn 4.

``support_anthropic_billed.jsonl`` is the same agent with a stable prompt and the usage a provider
would bill for the simulated requests (run with the repository on PYTHONPATH: its usage is built
from wm_kernel's own cache simulation of the log), with one deviation of each kind a
reconciliation must name: a provider miss (turn 2), a miss after a parameter change (turn 3), 1h
writes where the request asked 5m (turn 4), and a request whose response was lost (turn 5).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

POLICIES = "\n".join(
    f"- Policy {n}: a parcel in state {n % 7} may be {'re-routed' if n % 2 else 'held'} "
    f"for up to {n % 5 + 1} days when the customer asks, after checking the tracking "
    f"history and the carrier's note for depot {100 + n}."
    for n in range(1, 41)
)
PERSONA = (
    "You are Parcelly Help, the support agent of Parcelly, a parcel delivery company.\n"
    "Answer in the customer's language, briefly, and never promise a delivery date.\n\n"
    f"<policies>\n{POLICIES}\n</policies>\n\n"
    "## Refunds\nA refund is offered only for a parcel lost for 10 days or more.\n\n"
    '## Tone\nWarm, plain words, no emoji. Say "sorry" once at most.\n'
)


def tools(deploy: int) -> list[dict]:
    describe = (
        "Look up a parcel by its tracking number."
        if deploy == 1
        else "Look up a parcel by its tracking number (12 characters, starts with PX)."
    )
    return [
        {
            "name": "track_parcel",
            "description": describe,
            "input_schema": {
                "type": "object",
                "properties": {"tracking": {"type": "string"}},
                "required": ["tracking"],
            },
        },
        {
            "name": "open_claim",
            "description": "Open a claim for a lost or damaged parcel.",
            "input_schema": {
                "type": "object",
                "properties": {"tracking": {"type": "string"}, "reason": {"enum": ["lost", "damaged"]}},
                "required": ["tracking", "reason"],
            },
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        },
    ]


def anthropic() -> None:
    times = [
        "2026-11-30T09:00:00Z",
        "2026-11-30T09:00:40Z",
        "2026-11-30T09:01:30Z",
        "2026-11-30T09:02:10Z",
        "2026-11-30T09:09:10Z",
    ]
    turns = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Hi, my parcel PX1234567890 hasn't arrived."},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_01", "name": "track_parcel", "input": {"tracking": "PX1234567890"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": "in depot 104 since 2026-11-18; carrier note: address unclear",
                }
            ],
        },
        {
            "role": "assistant",
            "content": "It has been in our depot since 18 November because the address was "
            "unclear. Shall I open a claim?",
        },
        {"role": "user", "content": "Yes please, it's lost as far as I'm concerned."},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_02",
                    "name": "open_claim",
                    "input": {"tracking": "PX1234567890", "reason": "lost"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "claim C-88 opened"}],
        },
        {"role": "assistant", "content": "Claim C-88 is open. You will hear from us within 2 days."},
        {"role": "user", "content": "Thanks! Can you also tell me the refund rules?"},
    ]
    ends = [1, 3, 5, 7, 9]  # messages sent with each request
    usages = [(4, 2190, 0), (4, 180, 2040), (4, 205, 2040), (4, 2380, 0), (4, 310, 2050)]
    lines = []
    for turn, (at, end) in enumerate(zip(times, ends, strict=True)):
        messages = json.loads(json.dumps(turns[:end]))
        last = messages[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        last["content"][-1]["cache_control"] = {"type": "ephemeral"}
        system = [
            {"type": "text", "text": PERSONA, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {
                "type": "text",
                "text": f"<customer_context>\nCustomer: Ada (since 2021)\nCurrent time: {at}\n</customer_context>",
                "cache_control": {"type": "ephemeral"},
            },
        ]
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": system,
            "tools": tools(1 if turn < 3 else 2),
            "messages": messages,
            "metadata": {"user_id": "u-7f3a"},
        }
        plain, created, read = usages[turn]
        response = {
            "id": f"msg_0{turn}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": plain,
                "cache_creation_input_tokens": created,
                "cache_read_input_tokens": read,
                "output_tokens": 60 + turn,
            },
        }
        lines.append(json.dumps({"timestamp": at, "request": body, "response": response}, ensure_ascii=False))
    (HERE / "support_anthropic.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bad = [
        lines[0],
        '{"timestamp": "2026-11-30T09:00:40Z", "request": {"model": ',
        lines[1],
        '{"hello": "world"}',
        lines[2],
    ]
    (HERE / "bad_anthropic.jsonl").write_text("\n".join(bad) + "\n", encoding="utf-8")


DEVELOPER = (
    "# Parcelly Help\nYou answer parcel questions.\n\n## Rules\n- Never promise a date.\n"
    "- Check tracking first.\n\n```\n# not a heading: inside a code fence\n```\n"
)


def openai_chat() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "track_parcel",
            "description": "Look up a parcel.",
            "parameters": {"type": "object", "properties": {"tracking": {"type": "string"}}, "required": ["tracking"]},
        },
    }
    history = [
        {"role": "developer", "content": DEVELOPER},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Where is PX1234567890? Photo attached."},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "track_parcel", "arguments": '{"tracking":"PX1234567890"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "out for delivery"},
        {"role": "assistant", "content": "It is out for delivery today."},
        {"role": "user", "content": "Great, thanks — été parfait 🚚"},
    ]
    ends = [2, 4, 6]
    times = ["2026-11-30T10:00:00Z", "2026-11-30T10:00:20Z", "2026-11-30T10:01:00Z"]
    lines = []
    for turn, (at, end) in enumerate(zip(times, ends, strict=True)):
        body = {
            "model": "gpt-5.4",
            "messages": history[:end],
            "tools": [tool],
            "prompt_cache_key": "parcelly:ada",
            "stream": False,
        }
        usage = {
            "prompt_tokens": 300 + 40 * turn,
            "completion_tokens": 30,
            "total_tokens": 330 + 40 * turn,
            "prompt_tokens_details": {"cached_tokens": 0 if turn == 0 else 256},
        }
        response = {"id": f"chatcmpl-{turn}", "object": "chat.completion", "model": "gpt-5.4", "usage": usage}
        lines.append(json.dumps({"timestamp": at, "request": body, "response": response}))
    (HERE / "support_openai_chat.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def openai_responses() -> None:
    tool = {"type": "function", "name": "track_parcel", "parameters": {"type": "object"}, "strict": True}
    items = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Where is PX1234567890?"},
                {"type": "input_image", "image_url": "data:image/png;base64," + PNG},
            ],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "track_parcel",
            "arguments": '{"tracking":"PX1234567890"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "<status>delivered</status>\nSigned: A."},
        {"role": "user", "content": "Who signed?"},
    ]
    ends = [1, 3, 4]
    times = ["2026-11-30T11:00:00Z", "2026-11-30T11:00:15Z", "2026-11-30T11:00:50Z"]
    lines = []
    for turn, (at, end) in enumerate(zip(times, ends, strict=True)):
        body = {
            "model": "gpt-5.4",
            "instructions": DEVELOPER,
            "input": items[:end],
            "tools": [tool],
            "prompt_cache_key": "parcelly:ada",
        }
        usage = {
            "input_tokens": 280 + 30 * turn,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 300 + 30 * turn,
        }
        lines.append(json.dumps({"timestamp": at, "request": body, "response": {"object": "response", "usage": usage}}))
    (HERE / "support_openai_responses.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def claude_code() -> None:
    session = "3f2a0000-0000-4000-8000-000000000000"
    base = {
        "sessionId": session,
        "cwd": "/home/dev/parcelly",
        "version": "2.1.230",
        "gitBranch": "main",
        "isSidechain": False,
        "userType": "external",
    }

    def usage(plain: int, created: int, read: int) -> dict:
        return {
            "input_tokens": plain,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
            "output_tokens": 40,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": created},
        }

    rows = [
        {"type": "summary", "summary": "Fix the tracking parser", "leafUuid": "u-0005"},
        {
            **base,
            "type": "user",
            "uuid": "u-0001",
            "parentUuid": None,
            "timestamp": "2026-11-30T12:00:00.000Z",
            "message": {
                "role": "user",
                "content": "<command-name>/review</command-name>\nThe tracking parser "
                "rejects PX numbers. Fix it.\n\n# Context\nSee parser.py.",
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "u-0002",
            "parentUuid": "u-0001",
            "timestamp": "2026-11-30T12:00:04.100Z",
            "requestId": "req_011A",
            "message": {
                "id": "msg_01A",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "stop_reason": "tool_use",
                "content": [{"type": "text", "text": "Reading the parser."}],
                "usage": usage(10, 7465, 14053),
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "u-0003",
            "parentUuid": "u-0002",
            "timestamp": "2026-11-30T12:00:04.300Z",
            "requestId": "req_011A",
            "message": {
                "id": "msg_01A",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "stop_reason": "tool_use",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "Read",
                        "input": {"file_path": "/home/dev/parcelly/parser.py"},
                    }
                ],
                "usage": usage(10, 7465, 14053),
            },
        },
        {"type": "file-history-snapshot", "messageId": "u-0003", "snapshot": {"trackedFileBackups": {}}},
        {
            **base,
            "type": "user",
            "uuid": "u-0004",
            "parentUuid": "u-0003",
            "timestamp": "2026-11-30T12:00:05.000Z",
            "toolUseResult": {"type": "text"},
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": "def parse(s):\n    return s.startswith('P')\n",
                    }
                ],
            },
        },
        {
            **base,
            "type": "assistant",
            "uuid": "u-0005",
            "parentUuid": "u-0004",
            "timestamp": "2026-11-30T12:00:09.000Z",
            "requestId": "req_011B",
            "message": {
                "id": "msg_01B",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "The check should be `s.startswith('PX')`."}],
                "usage": usage(3, 120, 21518),
            },
        },
    ]
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"
    (HERE / "claude_code_session.jsonl").write_text(text, encoding="utf-8")


def otlp_foreign() -> None:
    def attr(key: str, value: object) -> dict:
        if isinstance(value, int):
            return {"key": key, "value": {"intValue": str(value)}}
        return {"key": key, "value": {"stringValue": value}}

    def span(n: int, start: int, messages: list) -> dict:
        return {
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": f"eee19b7ec3c1b17{n}",
            "name": "chat claude-sonnet-4-6",
            "kind": 3,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 1_500_000_000),
            "status": {"code": 0},
            "attributes": [
                attr("gen_ai.operation.name", "chat"),
                attr("gen_ai.provider.name", "anthropic"),
                attr("gen_ai.request.model", "claude-sonnet-4-6"),
                attr("gen_ai.system_instructions", json.dumps([{"type": "text", "content": PERSONA}])),
                attr("gen_ai.input.messages", json.dumps(messages)),
                attr("gen_ai.usage.input_tokens", 2300 + n),
                attr("gen_ai.usage.cache_read.input_tokens", 0 if n == 0 else 2200),
                attr("gen_ai.usage.output_tokens", 50),
            ],
        }

    first = [{"role": "user", "parts": [{"type": "text", "content": "Where is PX1234567890?"}]}]
    second = first + [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "track_parcel", "arguments": {"tracking": "PX1234567890"}}
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "in depot 104"}]},
    ]
    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "parcelly-help")]},
                "scopeSpans": [
                    {
                        "scope": {"name": "opentelemetry.instrumentation.anthropic"},
                        "spans": [span(0, 1796036400000000000, first), span(1, 1796036430000000000, second)],
                    }
                ],
            }
        ]
    }
    (HERE / "otlp_foreign.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def anthropic_billed() -> None:
    from wm_kernel.interop import import_log

    path = HERE / "support_anthropic_billed.jsonl"
    messages = [{"role": "user", "content": f"Question {n} about parcel PX1234567890?"} for n in range(6)]
    times = [f"2026-11-30T14:00:{10 * n:02d}Z" for n in range(6)]
    bodies = []
    for turn in range(6):
        sent = json.loads(json.dumps(messages[: turn + 1]))
        sent[-1]["content"] = [{"type": "text", "text": sent[-1]["content"], "cache_control": {"type": "ephemeral"}}]
        bodies.append(
            {
                "model": "claude-sonnet-4-6",
                "max_tokens": 1024,
                "temperature": 0.2 if turn < 3 else 0.7,
                "system": [{"type": "text", "text": PERSONA, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
                "tools": tools(1),
                "messages": sent,
            }
        )
    path.write_text(
        "".join(
            json.dumps({"timestamp": at, "request_id": f"req_b{turn}", "request": body}) + "\n"
            for turn, (at, body) in enumerate(zip(times, bodies, strict=True))
        ),
        encoding="utf-8",
    )
    sim = import_log(path).cache_simulation().turns
    lines = []
    for turn, (at, body) in enumerate(zip(times, bodies, strict=True)):
        row = sim.iloc[turn]
        read, written, one_hour = (
            int(row["cache_read_input_tokens"]),
            int(row["cache_creation_input_tokens"]),
            int(row["ephemeral_1h_input_tokens"]),
        )
        if turn in (2, 3):  # billed a write of everything where the simulation read
            read, written, one_hour = 0, read + written, int(sim.iloc[0]["ephemeral_1h_input_tokens"])
        if turn == 4:  # the 5m write billed at the 1h price
            one_hour = written
        usage = {
            "input_tokens": int(row["input_tokens"]),
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": 40,
            "cache_creation": {"ephemeral_5m_input_tokens": written - one_hour, "ephemeral_1h_input_tokens": one_hour},
        }
        line = {"timestamp": at, "request_id": f"req_b{turn}", "request": body}
        if turn < 5:
            line["response"] = {
                "id": f"msg_b{turn}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "usage": usage,
            }
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    anthropic()
    anthropic_billed()
    openai_chat()
    openai_responses()
    claude_code()
    otlp_foreign()
