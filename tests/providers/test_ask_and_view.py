"""%ask in a real IPython shell, and the exchanges view a dashboard tab shows."""

from __future__ import annotations

from pathlib import Path
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
    reply = asking.run_line_magic("ask", "--no-stream \"Can you  help? {x} 'quoted'\"")
    assert isinstance(reply, Reply) and reply.text == "Sure."
    assert session.recorder.exchanges()[0].user == "Can you  help? {x} 'quoted'"
    assert server.requests[0]["json"]["messages"][-1]["content"][0]["text"] == "Can you  help? {x} 'quoted'"
    with pytest.raises(UsageError, match="^%ask: unknown option --modle; use --model NAME"):
        asking.run_line_magic("ask", "--modle x Hi")
    with pytest.raises(UsageError, match='^%ask: say what to send: %ask "your message"$'):
        asking.run_line_magic("ask", '""')


def test_ask_failure_is_one_line_and_records_nothing(asking: Any, session: Session) -> None:
    from IPython.core.error import UsageError

    error = json_response(
        {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}, 401
    )
    set_ask_client(anthropic_client(Server(error)), model="claude-sonnet-4-6")
    with pytest.raises(UsageError, match=r"^%ask: anthropic: authentication failed \(401\): invalid x-api-key"):
        asking.run_line_magic("ask", "Hi")
    assert session.recorder.exchanges() == [] and session.turn == 0


def test_ask_answers_from_a_recording_without_a_client(asking: Any, session: Session) -> None:
    from wm_kernel.instruments.exchange import Exchange

    recording = Recording(
        [
            Exchange(
                turn=0, provider="anthropic", model="claude-sonnet-4-6", user="Hi", reply="From the tape.", usage=USAGE
            )
        ]
    )
    set_ask_client(None, model="claude-sonnet-4-6", recording=recording)
    assert asking.run_line_magic("ask", "--no-stream Hi").text == "From the tape."


def test_parse_ask() -> None:
    assert parse_ask("--model m --max-tokens 20 'a b'") == ({"model": "m", "max_tokens": 20, "stream": True}, "a b")
    assert parse_ask('--recording "my sends.jsonl" --no-stream What  is {x}?') == (
        {"model": None, "max_tokens": 1024, "stream": False, "recording": "my sends.jsonl"},
        "What  is {x}?",
    )
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="^%ask: --max-tokens must be a positive integer, got '0'$"):
        parse_ask("--max-tokens 0 Hi")
    with pytest.raises(UsageError, match="^%ask: --recording needs a value$"):
        parse_ask("--recording --no-stream Hi")


def test_ask_sends_to_the_sessions_model_unless_told(asking: Any) -> None:
    asking.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00 --model claude-sonnet-4-6")
    server = Server(json_response(anthropic_message("One.", USAGE)), json_response(anthropic_message("Two.", USAGE)))
    set_ask_client(anthropic_client(server))
    assert asking.run_line_magic("ask", "--no-stream Hi").text == "One."
    assert asking.run_line_magic("ask", "--no-stream --model claude-opus-4-8 Again").text == "Two."
    assert [r["json"]["model"] for r in server.requests] == ["claude-sonnet-4-6", "claude-opus-4-8"]


def test_every_cannot_send_message_names_a_client_and_a_recording(
    asking: Any, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.error import UsageError

    ways = (
        "set a client (set_ask_client(anthropic.Anthropic())) or replay a recording (%ask --recording FILE, "
        "or set_ask_client(None, recording=Recording.load(FILE)))"
    )
    with pytest.raises(UsageError) as found:
        asking.run_line_magic("ask", "Hi")
    assert str(found.value) == f"%ask: nothing to send with: {ways}"
    set_ask_client(anthropic_client(Server()), model="claude-sonnet-4-6")
    monkeypatch.setenv("WM_KERNEL_OFFLINE", "1")
    with pytest.raises(UsageError) as found:
        asking.run_line_magic("ask", "Hi")
    assert str(found.value) == f"%ask: WM_KERNEL_OFFLINE is set and there is no recording to answer from: {ways}"
    assert session.recorder.exchanges() == [] and session.turn == 0


def test_ask_replays_a_recording_file_in_order(asking: Any, session: Session, tmp_path: Any) -> None:
    from IPython.core.error import UsageError

    from wm_kernel.instruments.exchange import Exchange

    path = tmp_path / "sends.jsonl"
    Recording(
        [
            Exchange(turn=0, provider="anthropic", model="claude-haiku-4-5", user="Hi", reply="Hello.", usage=USAGE),
            Exchange(turn=1, provider="anthropic", model="claude-haiku-4-5", user="Bye", reply="Bye!", usage=USAGE),
        ]
    ).save(path)
    # no client, no model: the session has none, so the recorded one is used
    assert asking.run_line_magic("ask", f"--recording {path} --no-stream Hi").text == "Hello."
    assert asking.run_line_magic("ask", f"--recording {path} --no-stream Bye").text == "Bye!"
    assert [(e.turn, e.model, e.reply) for e in session.recorder.exchanges()] == [
        (0, "claude-haiku-4-5", "Hello."),
        (1, "claude-haiku-4-5", "Bye!"),
    ]
    with pytest.raises(UsageError, match=r"^%ask: the recording has no more sends \(2 recorded, all answered\)"):
        asking.run_line_magic("ask", f"--recording {path} --model claude-haiku-4-5 --no-stream More")
    with pytest.raises(UsageError, match=r"^%ask: --recording: cannot read nowhere.jsonl: No such file"):
        asking.run_line_magic("ask", "--recording nowhere.jsonl Hi")


def test_ask_on_a_request_log_points_to_wm_import(asking: Any) -> None:
    from IPython.core.error import UsageError

    log = Path(__file__).resolve().parents[2] / "notebooks" / "logs" / "parcelly_support.jsonl"
    with pytest.raises(UsageError) as caught:
        asking.run_line_magic("ask", f"--recording {log} --no-stream Hi")
    assert str(caught.value) == (
        f"%ask: --recording: {log} is a request log (anthropic), not a recording of sends; "
        f"import it with %wm_import {log}"
    )


def test_ask_says_in_one_line_that_an_old_recording_is_replayed_unchecked(
    asking: Any, session: Session, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(
        '{"v": 1, "kind": "wm-kernel recording"}\n'
        '{"v": 1, "turn": 0, "provider": "anthropic", "model": "claude-haiku-4-5", "user": "Hi", "reply": "A"}\n'
        '{"v": 1, "turn": 1, "provider": "anthropic", "model": "claude-haiku-4-5", "user": "Bye", "reply": "B"}\n',
        encoding="utf-8",
    )
    assert asking.run_line_magic("ask", f"--recording {path} --no-stream Hi").text == "A"
    assert capsys.readouterr().out == (
        "%ask: old.jsonl is a version-1 recording (no prompt digests): its replies are replayed without "
        "checking the prompt they answer; record it again with a client to check it\n"
    )
    assert asking.run_line_magic("ask", f"--recording {path} --no-stream Bye").text == "B"
    assert capsys.readouterr().out == ""


def test_ask_help_shows_every_option(asking: Any, capsys: pytest.CaptureFixture[str]) -> None:
    doc = asking.find_line_magic("ask").__doc__
    # argparse wraps the usage to the terminal's width (COLUMNS): its words, not its lines, are compared
    assert doc.split("\n\n")[1].split() == [
        "%ask",
        "[--model",
        "NAME]",
        "[--max-tokens",
        "N]",
        "[--no-stream]",
        "[--recording",
        "FILE]",
        "[message",
        "...]",
    ]
    for option in ("--model NAME", "--max-tokens N", "--no-stream", "--recording FILE", "set_ask_client("):
        assert option in doc
    assert asking.run_line_magic("ask", "--help") is None
    assert capsys.readouterr().out.strip() == doc.strip()


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
    set_ask_client(
        anthropic_client(Server(sse_response(anthropic_stream(["Par", "tly."], usage, 4)))), model="claude-sonnet-4-6"
    )
    reply = asking.run_line_magic("ask", "Is it shipped?")
    assert reply.text == "Partly."
    # a terminal shell shows each update of the streamed output in turn
    assert capsys.readouterr().out.count("<IPython.core.display.HTML object>") == 3
