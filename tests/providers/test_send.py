"""send(): the real anthropic and openai SDKs against a mock transport with the documented shapes."""

from __future__ import annotations

import threading
from typing import Any

import httpx2
import pytest
from sdk_mocks import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
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

from wm_kernel.instruments.exchange import ExchangeRecordedEvent
from wm_kernel.providers.recording import Recording
from wm_kernel.providers.send import SendError, send
from wm_kernel.session import Session

A_USAGE = {
    "input_tokens": 50,
    "cache_creation_input_tokens": 1200,
    "cache_read_input_tokens": 0,
    "output_tokens": 12,
    "cache_creation": {"ephemeral_5m_input_tokens": 1200, "ephemeral_1h_input_tokens": 0},
}
O_USAGE = {
    "prompt_tokens": 2006,
    "completion_tokens": 300,
    "total_tokens": 2306,
    "prompt_tokens_details": {"cached_tokens": 1920},
}


def test_send_posts_exactly_to_anthropic_and_records_the_exchange(session: Session) -> None:
    server = Server(
        json_response(anthropic_message("Hello Ada.", A_USAGE), request_id="req_A1"),
        json_response(anthropic_message("Twice.", A_USAGE), request_id="req_A2"),
    )
    client = anthropic_client(server)
    expected = session.compose().to_anthropic(
        history=[{"role": "user", "content": "Hi"}], model="claude-sonnet-4-6", max_tokens=1024
    )
    reply = send(session, client, model="claude-sonnet-4-6", user="Hi")
    first = server.requests[0]
    assert (first["method"], first["path"]) == ("POST", "/v1/messages")
    assert first["json"] == expected
    assert ANTHROPIC_KEY in " ".join(first["headers"].values())  # sent (the header's name depends on the SDK)
    assert reply.text == "Hello Ada."
    assert (reply.exchange.turn, reply.exchange.request_id, reply.exchange.stop_reason) == (0, "req_A1", "end_turn")
    assert reply.usage is not None and reply.usage.cache_write_tokens == 1200
    # 50 input at $3, 1200 written at $3.75, 12 output at $15 (per million)
    assert reply.cost is not None and reply.cost.total_usd == pytest.approx(0.00483)
    assert session.turn == 1  # the exchange completed the turn
    frame = session.history
    assert frame[frame.turn == 0]["reply"].unique().tolist() == ["Hello Ada."]
    assert frame[frame.turn == 0]["usage"].iloc[0]["cache_creation_input_tokens"] == 1200
    assert frame[frame.turn == 1]["reply"].isna().all()
    # the exchange joins the conversation: the next request carries it before the new message
    send(session, client, model="claude-sonnet-4-6", user="Again")
    messages = server.requests[1]["json"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"] == "Hi" and messages[1]["content"] == "Hello Ada."
    assert messages[2]["content"][0] == {"type": "text", "text": "Again"}
    assert [e.reply for e in session.recorder.exchanges()] == ["Hello Ada.", "Twice."]


def test_send_through_openai_with_any_base_url(session: Session) -> None:
    server = Server(json_response(chat_completion("Hi from a local server.", O_USAGE), request_id="req_O1"))
    client = openai_client(server, base_url="http://127.0.0.1:8000/v1")
    expected = session.compose().to_openai(history=[{"role": "user", "content": "Hi"}], model="gpt-5.4")
    reply = send(session, client, model="gpt-5.4", user="Hi")
    assert server.requests[0]["path"] == "/v1/chat/completions"
    # no max_tokens given: the wire's own, which on OpenAI's is none (the model's limit)
    assert server.requests[0]["json"] == expected and "max_completion_tokens" not in expected
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
    assert reply.text == "Hi from a local server."
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.cache_read_tokens) == (86, 1920)
    assert reply.exchange.request_id == "req_O1"


def test_anthropic_streaming_shows_the_reply_as_it_comes(session: Session) -> None:
    usage = {"input_tokens": 40, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1800}
    server = Server(sse_response(anthropic_stream(["Hel", "lo ", "Ada."], usage, output_tokens=9)))
    seen: list[str] = []
    reply = send(
        session, anthropic_client(server), model="claude-sonnet-4-6", user="Hi", stream=True, on_text=seen.append
    )
    assert seen == ["Hel", "lo ", "Ada."]
    assert server.requests[0]["json"]["stream"] is True
    assert reply.text == "Hello Ada."
    assert reply.usage is not None
    assert (reply.usage.cache_read_tokens, reply.usage.output_tokens) == (1800, 9)  # last delta kept, not summed


def test_openai_streaming_reads_the_usage_of_the_last_chunk(
    session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    server = Server(sse_response(chat_stream(["Hi ", "there."], O_USAGE)))
    reply = send(session, openai_client(server), model="gpt-5.4", user="Hi", stream=True)
    assert capsys.readouterr().out == "Hi there."  # printed as it came
    assert server.requests[0]["json"]["stream_options"] == {"include_usage": True}
    assert reply.text == "Hi there."
    assert reply.usage is not None and reply.usage.output_tokens == 300


def _error(status: int, kind: str, message: str) -> httpx2.Response:
    return json_response(
        {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_E"},
        status,
        request_id="req_E",
    )


@pytest.mark.parametrize(
    ("response", "line"),
    [
        (
            _error(401, "authentication_error", "invalid x-api-key"),
            "anthropic: authentication failed (401): invalid x-api-key (request req_E)",
        ),
        (
            _error(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            "anthropic: rate limited (429): Number of request tokens has exceeded your per-minute rate limit "
            "(request req_E)",
        ),
        (_error(529, "overloaded_error", "Overloaded"), "anthropic: overloaded (529): Overloaded (request req_E)"),
    ],
)
def test_a_failed_send_is_one_line_and_records_nothing(session: Session, response: httpx2.Response, line: str) -> None:
    session.compose()
    before = (session.turn, session.history.to_json(), len(session.bus.log))
    with pytest.raises(SendError) as error:
        send(session, anthropic_client(Server(response)), model="claude-sonnet-4-6", user="Hi")
    assert str(error.value) == line
    assert (session.turn, session.history.to_json(), len(session.bus.log)) == before
    assert session.recorder.exchanges() == []


@pytest.mark.parametrize(
    ("provider", "client_of", "model"),
    [("openai", openai_client, "gpt-5.4"), ("anthropic", anthropic_client, "claude-sonnet-4-6")],
)
def test_a_network_error_is_one_line(session: Session, provider: str, client_of: Any, model: str) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    session.compose()
    with pytest.raises(SendError) as caught:
        send(session, client_of(Server(refuse)), model=model, user="Hi")
    # ours: the provider, what happened and the network's reason; the SDK's wording between them
    # changes between its releases ("Connection error.", "Connection to HOST failed: ..."), so it
    # is not compared
    line = str(caught.value)
    assert line.startswith(f"{provider}: could not connect: ") and "\n" not in line
    assert line.rstrip(")").endswith("[Errno 111] Connection refused")
    assert session.turn == 0 and session.recorder.exchanges() == []


def test_openai_errors_name_the_cause(session: Session) -> None:
    body = {
        "error": {
            "message": "Incorrect API key provided.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    with pytest.raises(
        SendError,
        match=r"^openai: authentication failed \(401\): Incorrect API key provided\. "
        r"\(request req_01\)$",
    ):
        send(session, openai_client(Server(json_response(body, 401))), model="gpt-5.4", user="Hi")


def test_bad_arguments_are_clear(session: Session) -> None:
    with pytest.raises(TypeError, match="^client must be an anthropic.Anthropic or openai.OpenAI client, got dict$"):
        send(session, {}, model="m", user="Hi")
    with pytest.raises(ValueError, match="^user must be a non-empty message$"):
        send(session, None, model="m", user=" ")
    with pytest.raises(ValueError) as found:
        send(session, None, model="m", user="Hi")
    # one line, naming both ways on: a client, a recording
    assert str(found.value) == (
        "nothing to send with: pass a client (anthropic.Anthropic(), openai.OpenAI()) or "
        "a recording to answer from (recording=Recording.load(FILE)); WM_KERNEL_OFFLINE=1 "
        "needs the recording"
    )


def test_a_recording_replays_offline_and_never_holds_the_key(
    session: Session, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = Server(json_response(anthropic_message("Recorded reply.", A_USAGE), request_id="req_R1"))
    recording = Recording()
    send(session, anthropic_client(server), model="claude-sonnet-4-6", user="Hi", recording=recording)
    path = tmp_path / "sends.jsonl"
    recording.save(path)
    text = path.read_text(encoding="utf-8")
    assert ANTHROPIC_KEY not in text and "x-api-key" not in text.lower()
    assert text.splitlines()[0] == '{"v": 2, "kind": "wm-kernel recording"}'
    # another session of the same prompt, no client: the recording answers
    again = Session(base_prompt="You help {first_name}.", profile=session.working_memory.profile, clock=session.clock)
    reply = send(again, None, model="claude-sonnet-4-6", user="Hi", recording=Recording.load(path))
    assert reply.text == "Recorded reply." and reply.exchange.request_id == "req_R1"
    # WM_KERNEL_OFFLINE=1: a client is given, yet nothing is sent
    monkeypatch.setenv("WM_KERNEL_OFFLINE", "1")
    third = Session(base_prompt="You help {first_name}.", profile=session.working_memory.profile, clock=session.clock)
    untouched = Server()
    assert (
        send(
            third, anthropic_client(untouched), model="claude-sonnet-4-6", user="Hi", recording=Recording.load(path)
        ).text
        == "Recorded reply."
    )
    assert untouched.requests == []
    with pytest.raises(ValueError, match="^recorded send 1 was 'Hi' to claude-sonnet-4-6, not 'Bye'"):
        send(Session(clock=session.clock), None, model="claude-sonnet-4-6", user="Bye", recording=Recording.load(path))


def test_a_scenario_records_sends_and_replays_them_without_a_client(session: Session, tmp_path: Any) -> None:
    from wm_kernel.experiments import Scenario, record

    server = Server(
        json_response(anthropic_message("One.", A_USAGE), request_id="req_S1"),
        json_response(anthropic_message("Two.", A_USAGE), request_id="req_S2"),
    )
    client = anthropic_client(server)
    heard: list[ExchangeRecordedEvent] = []
    session.bus.subscribe(ExchangeRecordedEvent, heard.append)
    with record(session) as recorder:
        send(session, client, model="claude-sonnet-4-6", user="First")
        session.clock.advance(minutes=3)
        send(session, client, model="claude-sonnet-4-6", user="Second")
    assert [e.exchange.user for e in heard if e.exchange is not None] == ["First", "Second"]
    path = tmp_path / "scenario.jsonl"
    recorder.save(path)
    text = path.read_text(encoding="utf-8")
    assert ANTHROPIC_KEY not in text
    assert [s.to_json()["step"] for s in Scenario.load(path).steps] == [
        "compose",
        "send",
        "turn",
        "clock",
        "send",
        "turn",
    ]
    replayed = Scenario.load(path).run()
    assert [(e.turn, e.user, e.reply, e.request_id) for e in replayed.recorder.exchanges()] == [
        (0, "First", "One.", "req_S1"),
        (1, "Second", "Two.", "req_S2"),
    ]
    assert replayed.recorder.conversation()[-1] == {"role": "assistant", "content": "Two."}
    assert len(Recording.from_scenario(Scenario.load(path))) == 2


def test_exchanges_persist_in_a_sqlite_history_and_a_turn_holds_one(tmp_path: Any) -> None:
    from wm_kernel.core.clock import ManualClock
    from wm_kernel.instruments.exchange import Exchange
    from wm_kernel.instruments.history import History
    from wm_kernel.stores.embedded import SQLiteStore

    store = SQLiteStore(tmp_path / "state.db")
    first = Session(store=store, continuum_id="chat-1", clock=ManualClock("2026-11-30T09:00:00+00:00"))
    recording = Recording(
        [
            Exchange(
                turn=0, provider="openai", model="gpt-5.4", user="Hi", reply="Hello.", usage=O_USAGE, request_id="req_1"
            )
        ]
    )
    send(first, None, model="gpt-5.4", user="Hi", recording=recording, advance=False)
    with pytest.raises(ValueError, match="^turn 0 already has an exchange; advance the turn first$"):
        send(first, None, model="gpt-5.4", user="Hi", recording=recording)
    again = History(store, user_id="notebook", continuum_id="chat-1")
    assert [(e.turn, e.reply, e.usage) for e in again.exchanges()] == [(0, "Hello.", O_USAGE)]
    assert again.conversation() == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]


def test_a_bad_send_step_names_the_line() -> None:
    from wm_kernel.experiments import Scenario
    from wm_kernel.experiments.steps import ScenarioError

    text = (
        Scenario().dumps()
        + '{"step": "send", "exchange": {"turn": 0, "provider": "mistral", "model": "m", "user": "u", "reply": "r"}}\n'
    )
    with pytest.raises(ScenarioError) as error:
        Scenario.loads(text, "s.jsonl")
    assert str(error.value).endswith(
        "field 'exchange': provider must be one of anthropic, openai, openai-responses, gemini, bedrock, got 'mistral'"
    )


class _Held:
    """A response the server holds until the test lets it go (so a send is in flight)."""

    def __init__(self, response: httpx2.Response) -> None:
        self.response = response
        self.arrived = threading.Event()
        self.go = threading.Event()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.arrived.set()
        self.go.wait(30)  # a bound against a hang only; the test sets it
        return self.response


def _in_flight(session: Session, held: _Held, client: Any) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def first() -> None:
        try:
            outcome.append(send(session, client, model="claude-sonnet-4-6", user="First"))
        except Exception as exc:  # noqa: BLE001 - the test reads what the thread raised
            outcome.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    assert held.arrived.wait(30)
    return thread, outcome


def test_a_second_send_while_one_is_in_flight_is_refused_in_one_line_and_the_first_records_as_sent(
    session: Session,
) -> None:
    held = _Held(json_response(anthropic_message("One.", A_USAGE)))
    server = Server(held)
    client = anthropic_client(server)
    thread, outcome = _in_flight(session, held, client)
    with pytest.raises(SendError) as refused:
        send(session, client, model="claude-sonnet-4-6", user="Second")
    held.go.set()
    thread.join()
    assert str(refused.value) == (
        "a send is already in flight on this session (turn 0): a session sends one request at a time; "
        "send again when it has answered"
    )
    assert server.requests[0]["json"]["messages"][-1]["content"][0] == {"type": "text", "text": "First"}
    assert len(server.requests) == 1 and outcome[0].text == "One."
    assert [(e.turn, e.user, e.reply) for e in session.recorder.exchanges()] == [(0, "First", "One.")]
    assert session.turn == 1


def test_a_session_advanced_while_its_request_is_in_flight_records_nothing(session: Session) -> None:
    held = _Held(json_response(anthropic_message("Late.", A_USAGE)))
    client = anthropic_client(Server(held))
    thread, outcome = _in_flight(session, held, client)
    session.advance_turn()
    held.go.set()
    thread.join()
    assert isinstance(outcome[0], SendError)
    assert str(outcome[0]) == "the session moved to turn 1 while the request of turn 0 was in flight; nothing recorded"
    assert session.recorder.exchanges() == [] and session.turn == 1
