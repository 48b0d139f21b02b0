"""send() under faults (issue 34 items 8, 9, 11): the real SDKs against httpx2.MockTransport. A
malformed usage block, a malformed 200 reply, a stream cut half-way or a broken connection is one
SendError line, and the session is as it was: nothing recorded, the turn not advanced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from sdk_mocks import (
    Server,
    anthropic_client,
    anthropic_message,
    anthropic_stream,
    chat_completion,
    chat_stream,
    json_response,
    openai_client,
    sse_response,
)

from wm_kernel.providers.recording import Recording
from wm_kernel.providers.send import SendError, send
from wm_kernel.session import Session

A_USAGE = {"input_tokens": 50, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5}
O_USAGE = {
    "prompt_tokens": 2006,
    "completion_tokens": 300,
    "total_tokens": 2306,
    "prompt_tokens_details": {"cached_tokens": 1920},
}


def _state(session: Session) -> tuple[Any, ...]:
    return (session.turn, session.history.to_json(), len(session.recorder.exchanges()))


def _fails(session: Session, client: Any, pattern: str, **kwargs: Any) -> None:
    session.compose()
    before = _state(session)
    recording = Recording()
    model = "claude-sonnet-4-6" if type(client).__module__.startswith("anthropic") else "gpt-5.4"
    with pytest.raises(SendError) as error:
        send(session, client, model=model, user="Hi", recording=recording, on_text=lambda _: None, **kwargs)
    line = str(error.value)
    assert "\n" not in line and "Traceback" not in line
    assert __import__("re").search(pattern, line), line
    assert _state(session) == before
    assert len(recording) == 0


# the SDK warns while it serializes the bad count the test feeds it: that is the test's input
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_a_malformed_usage_block_records_nothing(session: Session) -> None:
    bad = {"input_tokens": "many", "output_tokens": 5}
    server = Server(json_response(anthropic_message("Hello.", bad)))
    _fails(session, anthropic_client(server), r"^anthropic: the reply's usage cannot be read: ")
    # the session goes on: the next send works and reconciles
    good = Server(json_response(anthropic_message("Hello.", A_USAGE)))
    reply = send(session, anthropic_client(good), model="claude-sonnet-4-6", user="Hi")
    assert reply.usage is not None and session.turn == 1


def test_a_negative_token_count_in_the_usage_records_nothing(session: Session) -> None:
    server = Server(json_response(chat_completion("Hello.", {**O_USAGE, "prompt_tokens": -3})))
    _fails(session, openai_client(server), r"^openai: the reply's usage cannot be read: ")


@pytest.mark.parametrize("body", [b"this is not JSON", b'{"id": "msg_1", "content": 5}', b"[1, 2]"])
def test_a_malformed_200_reply_is_one_send_error(session: Session, body: bytes) -> None:
    response = httpx2.Response(200, content=body, headers={"content-type": "application/json"})
    _fails(session, anthropic_client(Server(response)), r"^anthropic: malformed reply \(")


def test_a_malformed_openai_reply_is_one_send_error(session: Session) -> None:
    response = httpx2.Response(200, content=b'{"choices": []}', headers={"content-type": "application/json"})
    _fails(session, openai_client(Server(response)), r"^openai: malformed reply \(")


def _cut(body: bytes, marker: bytes) -> bytes:
    return body[: body.index(marker)]


def test_an_anthropic_stream_cut_half_way_is_an_error(session: Session) -> None:
    full = anthropic_stream(["Hel", "lo ", "Ada."], {**A_USAGE}, output_tokens=9)
    cut = _cut(full, b"event: content_block_stop")
    _fails(
        session,
        anthropic_client(Server(sse_response(cut))),
        r"^anthropic: the reply stream ended before the reply was complete \(10 characters received\); "
        r"nothing recorded$",
        stream=True,
    )


def test_an_openai_stream_cut_half_way_is_an_error(session: Session) -> None:
    full = chat_stream(["Hi ", "there."], O_USAGE)
    cut = _cut(full, b'"finish_reason": "stop"')
    cut = cut[: cut.rindex(b"data: ")]
    _fails(
        session,
        openai_client(Server(sse_response(cut))),
        r"^openai: the reply stream ended before the reply was complete \(9 characters received\); "
        r"nothing recorded$",
        stream=True,
    )


def _broken(first: bytes) -> httpx2.Response:
    def chunks() -> Iterator[bytes]:
        yield first
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    return httpx2.Response(200, content=chunks(), headers={"content-type": "text/event-stream"})


def test_a_broken_stream_is_one_send_error(session: Session) -> None:
    full = anthropic_stream(["Hel", "lo"], {**A_USAGE}, output_tokens=9)
    _fails(
        session,
        anthropic_client(Server(_broken(_cut(full, b"event: ping")))),
        r"^anthropic: (could not connect|the connection broke|malformed reply).*peer closed connection",
        stream=True,
    )


def test_a_broken_openai_stream_is_one_send_error(session: Session) -> None:
    full = chat_stream(["Hi ", "there."], O_USAGE)
    _fails(
        session,
        openai_client(Server(_broken(full[:120]))),
        r"^openai: (could not connect|the connection broke|malformed reply).*peer closed connection",
        stream=True,
    )


def test_a_bad_stream_event_is_one_send_error(session: Session) -> None:
    body = b'event: message_start\ndata: {"type": "message_start", "message": 7}\n\n'
    _fails(session, anthropic_client(Server(sse_response(body))), r"^anthropic: malformed reply \(", stream=True)


def test_an_offline_replay_that_cannot_be_recorded_leaves_the_recording_where_it_was(session: Session) -> None:
    from wm_kernel.instruments.exchange import Exchange

    rec = Recording(
        [
            Exchange(
                turn=0,
                provider="anthropic",
                model="claude-sonnet-4-6",
                user="Hi",
                reply="r",
                usage={"input_tokens": "x"},
            )
        ]
    )
    session.compose()
    before = _state(session)
    with pytest.raises(SendError, match=r"^anthropic: the reply's usage cannot be read: "):
        send(session, None, model="claude-sonnet-4-6", user="Hi", recording=rec)
    assert _state(session) == before and rec.position == 0
    assert json.dumps(before[1]) is not None


def test_an_openai_reply_whose_content_is_not_text_is_one_send_error(session: Session) -> None:
    body = chat_completion("x", O_USAGE)
    body["choices"][0]["message"]["content"] = 5
    _fails(session, openai_client(Server(json_response(body))), r"^openai: malformed reply \(TypeError: ")


def test_an_anthropic_reply_whose_content_is_a_string_is_one_send_error_not_an_empty_reply(session: Session) -> None:
    body = anthropic_message("x", A_USAGE)
    body["content"] = "Hello, as a bare string."
    _fails(session, anthropic_client(Server(json_response(body))), r"^anthropic: malformed reply \(TypeError: ")


def test_a_count_past_any_plausible_bill_records_nothing(session: Session) -> None:
    # 10**30 tokens would price at $3e+24: a corrupt count, refused in one line, nothing recorded
    server = Server(json_response(anthropic_message("Hello.", {**A_USAGE, "input_tokens": 10**30})))
    _fails(
        session,
        anthropic_client(server),
        r"^anthropic: the reply's usage cannot be read: the usage of turn 0: input_tokens must be a "
        r"non-negative int of at most 1,000,000,000,000, got 10+; nothing recorded$",
    )
