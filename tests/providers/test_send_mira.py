"""send(wire="mira"): the real anthropic SDK posts MIRA's body (to_mira) through a mock transport."""

from __future__ import annotations

import pytest
from sdk_mocks import (
    Server,
    anthropic_client,
    anthropic_stream,
    chat_completion,
    json_response,
    openai_client,
    sse_response,
)

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.profile import Profile
from wm_kernel.dialects.mira import to_mira
from wm_kernel.providers.send import send
from wm_kernel.session import Session

USAGE = {
    "input_tokens": 40,
    "cache_creation_input_tokens": 1500,
    "cache_read_input_tokens": 0,
    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1500},
}


def original() -> Session:
    return Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        layout=Layout.original(),
    )


def test_a_session_laid_out_as_the_original_sends_mira_s_body() -> None:
    s = original()
    server = Server(
        sse_response(anthropic_stream(["Hello ", "Ada."], USAGE, output_tokens=7), request_id="req_M1"),
        sse_response(anthropic_stream(["Again."], USAGE, output_tokens=3), request_id="req_M2"),
    )
    client = anthropic_client(server)
    expected = to_mira(s.compose(), [], user="Hi", model="claude-sonnet-4-6")
    shown: list[str] = []
    reply = send(s, client, model="claude-sonnet-4-6", user="Hi", on_text=shown.append)
    first = server.requests[0]
    assert (first["method"], first["path"]) == ("POST", "/v1/messages")
    assert first["json"] == expected  # every field: stream, temperature, 31999, the 1-hour marks
    assert first["json"]["stream"] is True and first["json"]["max_tokens"] == 31999
    assert shown == []  # MIRA streams the call; the reply is shown only when asked (stream=True)
    assert reply.text == "Hello Ada." and reply.exchange.provider == "anthropic"
    assert reply.exchange.request_id == "req_M1"
    # 1,500 tokens written for an hour ($6), 40 plain ($3), 7 out ($15) per million
    assert reply.usage is not None and reply.usage.cache_write_1h_tokens == 1500
    assert reply.cost is not None and reply.cost.total_usd == pytest.approx((1500 * 6 + 40 * 3 + 7 * 15) / 1e6)
    # the next request carries the exchange: the assistant reply with MIRA's 1-hour mark, the HUD,
    # then the new message
    expected = to_mira(
        s.compose(),
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello Ada."}],
        user="Again",
        model="claude-sonnet-4-6",
        effort="low",
    )
    send(s, client, model="claude-sonnet-4-6", user="Again", effort="low", stream=True, on_text=shown.append)
    assert server.requests[1]["json"] == expected
    assert server.requests[1]["json"]["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert shown == ["Again."]


def test_the_wire_is_chosen_or_refused() -> None:
    s = original()
    server = Server(
        json_response(chat_completion("Hi.", {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}))
    )
    # an OpenAI client on a MIRA session sends on OpenAI's wire (MIRA's needs an Anthropic client)
    send(s, openai_client(server), model="gpt-5.4", user="Hi")
    assert server.requests[0]["json"]["messages"][0]["role"] == "system"
    with pytest.raises(TypeError, match=r"^the mira wire sends with a anthropic client, got a openai one$"):
        send(s, openai_client(Server()), model="gpt-5.4", user="Again", wire="mira")
    with pytest.raises(ValueError, match=r"^unknown wire 'carrier-pigeon'; wires: "):
        send(s, anthropic_client(Server()), model="claude-sonnet-4-6", user="Again", wire="carrier-pigeon")
    assert s.turn == 1  # the refused sends changed nothing


def test_a_default_session_sends_mira_s_body_when_asked() -> None:
    s = Session(base_prompt="You help.", clock=ManualClock("2026-11-30T09:00:00+00:00"))
    assert s.wire is None
    server = Server(sse_response(anthropic_stream(["Yes."], USAGE, output_tokens=2)))
    composed = s.compose()
    send(s, anthropic_client(server), model="claude-haiku-4-5", user="Hi", wire="mira")
    assert server.requests[0]["json"] == to_mira(composed, [], user="Hi", model="claude-haiku-4-5")
    assert server.requests[0]["json"]["max_tokens"] == 8192
