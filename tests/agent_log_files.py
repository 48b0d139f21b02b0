"""Small logs of the formats issue 46 adds, written here, one fact each (the facts are in
../shared/real-logs/README.md; no real file is copied): Codex CLI rollouts, claude-trace captures,
OpenHands trajectories and Gemini generateContent envelopes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: A credential in every captured request's headers: it must reach no view and no export.
SECRET = "sk-ant-oat01-SECRET-do-not-show"
ORG = "org-0f0f-SECRET-ORG"


def write_lines(path: Path, records: list[Any], *, end: str = "\n") -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + end, encoding="utf-8")
    return path


# -- Codex CLI rollouts


def codex_line(when: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": when, "type": kind, "payload": payload}


def token_count(when: str, last: tuple[int, int, int, int], total: tuple[int, int, int, int]) -> dict[str, Any]:
    """A token_count event: (input, cached input, output, reasoning output) of the request and of the session."""

    def usage(counts: tuple[int, int, int, int]) -> dict[str, int]:
        i, c, o, r = counts
        return {
            "input_tokens": i,
            "cached_input_tokens": c,
            "output_tokens": o,
            "reasoning_output_tokens": r,
            "total_tokens": i + o,
        }

    info = {"total_token_usage": usage(total), "last_token_usage": usage(last), "model_context_window": 258400}
    return codex_line(when, "event_msg", {"type": "token_count", "info": info, "rate_limits": {}})


def codex_rollout(path: Path) -> Path:
    """Two requests on gpt-5.3-codex, each written twice; a rate-limit report without usage; a
    compaction; then a third request on another model."""
    return write_lines(
        path,
        [
            codex_line("2026-02-23T11:41:04.709Z", "session_meta", {"id": "019c-codex-session", "cwd": "/x"}),
            codex_line("2026-02-23T11:41:05.000Z", "turn_context", {"model": "gpt-5.3-codex", "effort": "high"}),
            codex_line("2026-02-23T11:41:05.100Z", "event_msg", {"type": "token_count", "info": None}),
            codex_line(
                "2026-02-23T11:41:06.000Z",
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            ),
            token_count("2026-02-23T11:41:10.000Z", (1000, 0, 50, 20), (1000, 0, 50, 20)),
            token_count("2026-02-23T11:41:10.001Z", (1000, 0, 50, 20), (1000, 0, 50, 20)),
            token_count("2026-02-23T11:41:20.000Z", (1200, 900, 30, 10), (2200, 900, 80, 30)),
            token_count("2026-02-23T11:41:20.001Z", (1200, 900, 30, 10), (2200, 900, 80, 30)),
            codex_line("2026-02-23T11:42:00.000Z", "compacted", {"message": "summary"}),
            codex_line("2026-02-23T11:42:01.000Z", "turn_context", {"model": "gpt-5.2", "effort": "low"}),
            token_count("2026-02-24T00:00:01.000Z", (400, 0, 7, 0), (2600, 900, 87, 30)),
        ],
    )


def codex_conversation(path: Path) -> Path:
    """A rollout holding what its requests sent: the base instructions, a developer message, the
    user's prompt; the first request answers with reasoning, a message and a function call (its
    totals written twice); the call's output; the second request's answer; a compaction; a third
    request on the summary."""

    def item(when: str, payload: dict[str, Any]) -> dict[str, Any]:
        return codex_line(when, "response_item", payload)

    def message(role: str, text: str) -> dict[str, Any]:
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    meta = {"id": "019c-codex-talk", "base_instructions": {"text": "You are Codex, a coding agent."}}
    return write_lines(
        path,
        [
            codex_line("2026-02-23T11:41:04.709Z", "session_meta", meta),
            item("2026-02-23T11:41:04.800Z", message("developer", "Sandbox: workspace-write.")),
            codex_line("2026-02-23T11:41:05.000Z", "turn_context", {"model": "gpt-5.3-codex", "effort": "high"}),
            item("2026-02-23T11:41:05.100Z", message("user", "List the files.")),
            codex_line("2026-02-23T11:41:05.200Z", "event_msg", {"type": "user_message", "message": "List the files."}),
            item("2026-02-23T11:41:06.000Z", {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}),
            item("2026-02-23T11:41:06.100Z", message("assistant", "Looking.")),
            item(
                "2026-02-23T11:41:06.200Z",
                {"type": "function_call", "name": "shell", "arguments": '{"cmd":"ls"}', "call_id": "call_1"},
            ),
            token_count("2026-02-23T11:41:07.000Z", (3000, 0, 40, 10), (3000, 0, 40, 10)),
            item("2026-02-23T11:41:08.000Z", {"type": "function_call_output", "call_id": "call_1", "output": "a.py"}),
            token_count("2026-02-23T11:41:08.001Z", (3000, 0, 40, 10), (3000, 0, 40, 10)),
            item("2026-02-23T11:41:09.000Z", message("assistant", "One file: a.py.")),
            token_count("2026-02-23T11:41:10.000Z", (3100, 2944, 8, 0), (6100, 2944, 48, 10)),
            codex_line("2026-02-23T11:42:00.000Z", "compacted", {"message": "The user listed the files."}),
            item("2026-02-23T11:42:01.000Z", message("user", "Thanks.")),
            token_count("2026-02-23T11:42:02.000Z", (2000, 0, 5, 0), (8100, 2944, 53, 10)),
        ],
    )


# -- claude-trace captures


def _headers() -> dict[str, str]:
    return {
        "host": "api.anthropic.com",
        "authorization": f"Bearer {SECRET}",
        "x-api-key": SECRET,
        "anthropic-beta": "oauth-2025-04-20",
    }


def _sse(events: list[dict[str, Any]]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def capture_pair(
    when: float,
    body: dict[str, Any],
    *,
    answer: dict[str, Any] | None = None,
    stream: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "timestamp": when + 1,
        "status_code": 200,
        "headers": {"request-id": "req_1", "anthropic-organization-id": ORG},
    }
    if stream is not None:
        response["body_raw"] = _sse(stream)
    else:
        response["body"] = answer
    return {
        "request": {
            "timestamp": when,
            "method": "POST",
            "url": "https://api.anthropic.com/v1/messages?beta=true",
            "headers": _headers(),
            "body": body,
        },
        "response": response,
        "logged_at": "2025-05-29T23:38:31.656680",
    }


MAIN_BODY = {
    "model": "claude-sonnet-4-20250514",
    "system": [
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Rules of the house."},
    ],
    "tools": [{"name": "Read", "description": "read a file", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "make an app", "cache_control": {"type": "ephemeral"}}]}
    ],
    "max_tokens": 32000,
    "stream": True,
}

STREAM = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_main1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [],
            "usage": {
                "input_tokens": 4,
                "cache_creation_input_tokens": 15032,
                "cache_read_input_tokens": 0,
                "output_tokens": 2,
            },
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sure"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 174}},
    {"type": "message_stop"},
]

SIDE_BODY = {"model": "claude-3-5-haiku-20241022", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]}
SIDE_ANSWER = {
    "id": "msg_side1",
    "type": "message",
    "role": "assistant",
    "model": "claude-3-5-haiku-20241022",
    "content": [{"type": "text", "text": "A"}],
    "stop_reason": "max_tokens",
    "usage": {"input_tokens": 8, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1},
}


def claude_trace(path: Path) -> Path:
    """A quota probe on haiku (a plain response), then the main request on sonnet (streamed)."""
    return write_lines(
        path,
        [
            capture_pair(1748554705.0, SIDE_BODY, answer=SIDE_ANSWER),
            capture_pair(1748554707.3, MAIN_BODY, stream=STREAM),
        ],
    )


# -- OpenHands trajectories


def _model_response(rid: str, prompt: int, read: int, written: int, completion: int) -> dict[str, Any]:
    return {
        "id": rid,
        "created": 1738046713,
        "model": "claude-3-5-sonnet-20241022",
        "object": "chat.completion",
        "choices": [{"finish_reason": "tool_calls", "index": 0, "message": {"role": "assistant", "content": ""}}],
        "usage": {
            "completion_tokens": completion,
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": read},
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        },
    }


def openhands(path: Path) -> Path:
    """The user's message, two actions of one model call (one response written twice), and a
    finish action of a second call: two requests."""
    first = _model_response("chatcmpl-1", 3486, 0, 3482, 1135)
    second = _model_response("chatcmpl-2", 4646, 3482, 1158, 177)
    events = [
        {
            "id": 0,
            "timestamp": "2025-01-27T22:44:56.900854",
            "source": "user",
            "message": "hi",
            "action": "message",
            "args": {"content": "hi"},
        },
        {
            "id": 3,
            "timestamp": "2025-01-27T22:45:13.764487",
            "source": "agent",
            "action": "edit",
            "tool_call_metadata": {"function_name": "edit", "model_response": first},
        },
        {
            "id": 4,
            "timestamp": "2025-01-27T22:45:13.801384",
            "source": "agent",
            "action": "edit",
            "tool_call_metadata": {"function_name": "edit", "model_response": first},
        },
        {"id": 5, "timestamp": "2025-01-27T22:45:13.9", "source": "agent", "observation": "edit", "content": "ok"},
        {
            "id": 6,
            "timestamp": "2025-01-27T22:45:18.405685",
            "source": "agent",
            "action": "finish",
            "tool_call_metadata": {"function_name": "finish", "model_response": second},
        },
    ]
    path.write_text(json.dumps(events, indent=2), encoding="utf-8")
    return path


# -- Gemini generateContent envelopes


def gemini_envelopes(path: Path) -> Path:
    """Two generateContent calls on an explicit cache (``cachedContent``); thoughts are output."""

    def one(question: str, thoughts: int) -> dict[str, Any]:
        return {
            "timestamp": "2026-08-01T10:00:00Z",
            "request": {
                "cachedContent": "cachedContents/abc",
                "systemInstruction": {"parts": [{"text": "Answer briefly."}]},
                "contents": [{"role": "user", "parts": [{"text": question}]}],
                "generationConfig": {"responseModalities": ["TEXT"]},
            },
            "response": {
                "candidates": [{"content": {"parts": [{"text": "Paris."}], "role": "model"}, "finishReason": "STOP"}],
                "modelVersion": "gemini-2.5-flash",
                "responseId": f"resp-{thoughts}",
                "usageMetadata": {
                    "cachedContentTokenCount": 3512,
                    "candidatesTokenCount": 2,
                    "promptTokenCount": 3520,
                    "thoughtsTokenCount": thoughts,
                    "totalTokenCount": 3520 + 2 + thoughts,
                },
            },
        }

    return write_lines(path, [one("What is the capital of France?", 42), one("Once more?", 51)])
