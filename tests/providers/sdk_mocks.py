"""Real SDK clients on an ``httpx2.MockTransport`` answering with the documented shapes.

The SDKs (anthropic >= 2, openai >= 3) are built on httpx2 and refuse an ``httpx`` client (anthropic)
or accept it only as a legacy path (openai), so the transport is httpx2's. Every request the client
sends is kept in ``requests`` (method, path, headers, JSON body) for the test to read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2

ANTHROPIC_KEY = "sk-ant-test-DO-NOT-RECORD-0123456789"
OPENAI_KEY = "sk-test-DO-NOT-RECORD-9876543210"


def anthropic_message(
    text: str, usage: dict[str, Any], *, model: str = "claude-sonnet-4-6", stop_reason: str = "end_turn"
) -> dict[str, Any]:
    """A Messages API response body (provider_formats.md section 1)."""
    return {
        "id": "msg_01XYZ",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def chat_completion(text: str, usage: dict[str, Any], *, model: str = "gpt-5.4") -> dict[str, Any]:
    """A Chat Completions response body (provider_formats.md section 2)."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1764599580,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": usage,
    }


def sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    """Server-sent events: ``event:`` lines where named, ``data:`` JSON (or a literal like [DONE])."""
    out = []
    for name, data in events:
        if name is not None:
            out.append(f"event: {name}")
        out.append("data: " + (data if isinstance(data, str) else json.dumps(data)))
        out.append("")
    return ("\n".join(out) + "\n").encode()


def anthropic_stream(text_chunks: list[str], usage: dict[str, Any], output_tokens: int) -> bytes:
    """A streamed Messages response: message_start (input/cache usage), text deltas, message_delta
    (cumulative output usage), message_stop; with a ping as captured streams have."""
    start = anthropic_message("", {**usage, "output_tokens": 1})
    start["content"], start["stop_reason"] = [], None
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        ("ping", {"type": "ping"}),
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}},
        )
        for chunk in text_chunks
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(events)


def chat_stream(text_chunks: list[str], usage: dict[str, Any], *, model: str = "gpt-5.4") -> bytes:
    """A streamed Chat Completions response with ``include_usage``: deltas, then a last chunk with
    empty choices and the usage, then [DONE]."""

    def chunk(choices: list[dict[str, Any]], usage_: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1764599580,
            "model": model,
            "choices": choices,
            "usage": usage_,
        }

    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]))
    ]
    events += [(None, chunk([{"index": 0, "delta": {"content": c}, "finish_reason": None}])) for c in text_chunks]
    events += [
        (None, chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
        (None, chunk([], usage)),
        (None, "[DONE]"),
    ]
    return sse(events)


class Server:
    """Answers each request with the next planned response; records what it was sent."""

    def __init__(self, *responses: httpx2.Response | Callable[[httpx2.Request], httpx2.Response]) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(
            {
                "method": request.method,
                "path": request.url.path,
                "headers": dict(request.headers),
                "json": json.loads(request.content) if request.content else None,
            }
        )
        response = self.responses.pop(0)
        return response(request) if callable(response) else response

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self))


def json_response(body: dict[str, Any], status: int = 200, *, request_id: str = "req_01") -> httpx2.Response:
    return httpx2.Response(status, json=body, headers={"request-id": request_id, "x-request-id": request_id})


def sse_response(body: bytes, *, request_id: str = "req_01") -> httpx2.Response:
    return httpx2.Response(
        200,
        content=body,
        headers={"content-type": "text/event-stream", "request-id": request_id, "x-request-id": request_id},
    )


def anthropic_client(server: Server) -> Any:
    import anthropic

    return anthropic.Anthropic(api_key=ANTHROPIC_KEY, http_client=server.client(), max_retries=0)


def openai_client(server: Server, base_url: str = "https://api.openai.com/v1") -> Any:
    import openai

    return openai.OpenAI(api_key=OPENAI_KEY, base_url=base_url, http_client=server.client(), max_retries=0)
