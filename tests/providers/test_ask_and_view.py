"""%ask in a real IPython shell, and the exchanges view a dashboard tab shows."""
from __future__ import annotations

from typing import Any

import pytest
from sdk_mocks import Server, anthropic_client, anthropic_message, json_response

from wm_kernel.display.exchanges import exchanges_view
from wm_kernel.jupyter.magics.ask import parse_ask, set_ask_client
from wm_kernel.providers.recording import Recording
from wm_kernel.providers.send import Reply
from wm_kernel.session import Session

USAGE = {"input_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5}


@pytest.fixture
def asking(ip: Any) -> Any:
    yield ip
    set_ask_client(None)


def test_ask_sends_the_message_verbatim_and_returns_the_reply(asking: Any, session: Session) -> None:
    from IPython.core.error import UsageError

    server = Server(json_response(anthropic_message("Sure.", USAGE)))
    set_ask_client(anthropic_client(server), model="claude-sonnet-4-6")
    reply = asking.run_line_magic("ask", '--no-stream "Can you  help? {x} \'quoted\'"')
    assert isinstance(reply, Reply) and reply.text == "Sure."
    assert session.recorder.exchanges()[0].user == "Can you  help? {x} 'quoted'"
    assert server.requests[0]["json"]["messages"][-1]["content"][0]["text"] == "Can you  help? {x} 'quoted'"
    with pytest.raises(UsageError, match="^%ask: unknown option --modle; use --model NAME"):
        asking.run_line_magic("ask", "--modle x Hi")
    with pytest.raises(UsageError, match='^%ask: say what to send: %ask "your message"$'):
        asking.run_line_magic("ask", '""')


def test_ask_failure_is_one_line_and_records_nothing(asking: Any, session: Session) -> None:
    from IPython.core.error import UsageError

    error = json_response({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
                          401)
    set_ask_client(anthropic_client(Server(error)), model="claude-sonnet-4-6")
    with pytest.raises(UsageError, match=r"^%ask: anthropic: authentication failed \(401\): invalid x-api-key"):
        asking.run_line_magic("ask", "Hi")
    assert session.recorder.exchanges() == [] and session.turn == 0


def test_ask_answers_from_a_recording_without_a_client(asking: Any, session: Session) -> None:
    from wm_kernel.instruments.exchange import Exchange

    recording = Recording([Exchange(turn=0, provider="anthropic", model="claude-sonnet-4-6", user="Hi",
                                    reply="From the tape.", usage=USAGE)])
    set_ask_client(None, model="claude-sonnet-4-6", recording=recording)
    assert asking.run_line_magic("ask", "--no-stream Hi").text == "From the tape."


def test_parse_ask() -> None:
    assert parse_ask("--model m --max-tokens 20 'a b'") == ({"model": "m", "max_tokens": 20, "stream": True}, "a b")


def test_the_view_shows_reply_and_billed_next_to_simulated(session: Session) -> None:
    assert str(exchanges_view(session)) == "nothing sent yet"
    server = Server(json_response(anthropic_message("Hello <Ada>.", USAGE)))
    from wm_kernel.providers.send import send

    send(session, anthropic_client(server), model="claude-sonnet-4-6", user="Hi")
    view = exchanges_view(session)
    [row] = view.rows
    assert (row.turn, row.user, row.reply, row.billed_usd) == (0, "Hi", "Hello <Ada>.", pytest.approx(30 * 3e-6))
    assert row.simulated_usd is not None and row.cause is not None
    assert str(view).splitlines()[1:] == ["  user: Hi", "  reply: Hello <Ada>."]
    assert "Hello &lt;Ada&gt;." in view._repr_html_()


def test_ask_streams_into_the_cell(asking: Any, session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    from sdk_mocks import anthropic_stream, sse_response

    usage = {"input_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    set_ask_client(anthropic_client(Server(sse_response(anthropic_stream(["Par", "tly."], usage, 4)))),
                   model="claude-sonnet-4-6")
    reply = asking.run_line_magic("ask", "Is it shipped?")
    assert reply.text == "Partly."
    # a terminal shell shows each update of the streamed output in turn
    assert capsys.readouterr().out.count("<IPython.core.display.HTML object>") == 3
