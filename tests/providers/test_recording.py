"""Recordings under faults (issue 34 items 4, 5, 12; issue 31 item 6): saving is atomic (a process
killed while saving leaves the earlier file whole), every reply is storable and loadable, a replay
against a changed prompt names the first differing section, and a hostile path is one line."""

from __future__ import annotations

import html
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from sdk_mocks import Server, anthropic_client, anthropic_message, json_response

from wm_kernel.display.exchanges import exchanges_view
from wm_kernel.instruments.exchange import Exchange
from wm_kernel.providers.recording import CHANGED_PROMPT, ChangedPromptWarning, Recording, UncheckedRecordingWarning
from wm_kernel.providers.send import send
from wm_kernel.session import Session

ROOT = Path(__file__).resolve().parents[2]
USAGE = {"input_tokens": 50, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5}


def _exchange(turn: int, reply: str) -> Exchange:
    return Exchange(turn=turn, provider="anthropic", model="claude-sonnet-4-6", user=f"u{turn}", reply=reply)


@pytest.mark.parametrize(
    "reply",
    ["lone \ud800 surrogate", "line\u2028separator", "para\u2029graph", "next\u0085line", "cr\rlf\r\nend", "\udfff"],
)
def test_every_reply_saves_and_loads_back_as_it_was(tmp_path: Path, reply: str) -> None:
    path = tmp_path / "r.jsonl"
    rec = Recording([_exchange(0, "earlier send"), _exchange(1, reply)])
    rec.save(path)
    rec.append(_exchange(2, "a later send"))
    rec.save(path)  # the next save works too, and keeps every earlier send
    again = Recording.load(path)
    assert [e.reply for e in again.exchanges] == ["earlier send", reply, "a later send"]


def test_a_save_that_fails_leaves_the_earlier_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    Recording([_exchange(0, "kept")]).save(path)
    before = path.read_bytes()
    broken = Recording([_exchange(0, "kept")])
    broken.exchanges.append(object())  # type: ignore[arg-type]  # cannot be written
    broken.sections.append(None)
    with pytest.raises(AttributeError):
        broken.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.jsonl"]  # no temporary file left


SAVER = textwrap.dedent("""
    import sys
    from wm_kernel.instruments.exchange import Exchange
    from wm_kernel.providers.recording import Recording
    path = sys.argv[1]
    big = "x" * 200_000
    rec = Recording(Exchange(turn=t, provider="openai", model="m", user="u", reply=big) for t in range(40))
    print("saving", flush=True)
    while True:
        rec.append(Exchange(turn=len(rec), provider="openai", model="m", user="u", reply=big))
        rec.save(path)
""")


@pytest.mark.slow
def test_a_process_killed_while_saving_never_leaves_the_file_empty_or_torn(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    Recording([_exchange(t, "first") for t in range(3)]).save(path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for trial in range(8):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(path)], stdout=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stdout.readline() == b"saving\n"
        time.sleep(0.05 + 0.037 * trial)  # lands at a different point of a save each trial
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        loaded = Recording.load(path)
        assert len(loaded) >= 3, f"trial {trial}: {len(loaded)} sends"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "r.jsonl"]
    # a killed save may leave its temporary file (a dot file beside it); never a torn recording
    assert all(name.startswith(".r.jsonl.") and name.endswith(".tmp") for name in leftovers)


def test_version_1_recordings_still_load(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(
        '{"v": 1, "kind": "wm-kernel recording"}\n'
        '{"v": 1, "turn": 0, "provider": "openai", "model": "m", "user": "Hi", "reply": "a\u2028b"}\n',
        encoding="utf-8",
    )
    assert [e.reply for e in Recording.load(path).exchanges] == ["a\u2028b"]


def test_a_version_1_replay_says_once_in_one_line_that_it_skips_the_prompt_check(
    session: Session, tmp_path: Path
) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(
        '{"v": 1, "kind": "wm-kernel recording"}\n'
        '{"v": 1, "turn": 0, "provider": "anthropic", "model": "claude-sonnet-4-6", "user": "Hi", "reply": "A"}\n'
        '{"v": 1, "turn": 1, "provider": "anthropic", "model": "claude-sonnet-4-6", "user": "Bye", "reply": "B"}\n',
        encoding="utf-8",
    )
    old = Recording.load(path)
    with pytest.warns(UncheckedRecordingWarning) as told:
        send(session, None, model="claude-sonnet-4-6", user="Hi", recording=old)
    [warning] = told.list
    assert str(warning.message) == (
        "old.jsonl is a version-1 recording (no prompt digests): its replies are replayed without checking "
        "the prompt they answer; record it again with a client to check it"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per recording: the second send says nothing
        assert send(session, None, model="claude-sonnet-4-6", user="Bye", recording=old).text == "B"


def test_the_shipped_recordings_are_in_the_current_format() -> None:
    """Notebook 10's recordings keep the digests of every prompt they answered: the check applies."""
    folder = Path(__file__).resolve().parents[2] / "notebooks" / "recordings"
    for name in ("10_sends.jsonl", "10_ask.jsonl"):
        recording = Recording.load(folder / name)
        assert (folder / name).read_text("utf-8").splitlines()[0] == '{"v": 2, "kind": "wm-kernel recording"}'
        assert recording.unchecked is None and len(recording) >= 2
        assert all(sections for sections in recording.sections), name


def _recorded(tmp_path: Path, session: Session) -> Path:
    server = Server(json_response(anthropic_message("Recorded.", USAGE)))
    rec = Recording()
    send(session, anthropic_client(server), model="claude-sonnet-4-6", user="Hi", recording=rec)
    path = tmp_path / "sends.jsonl"
    rec.save(path)
    return path


def test_a_replay_against_a_changed_prompt_names_the_first_differing_section(session: Session, tmp_path: Path) -> None:
    path = _recorded(tmp_path, session)
    changed = Session(
        base_prompt="You help {first_name} and nobody else.",
        profile=session.working_memory.profile,
        clock=session.clock,
    )
    with pytest.raises(
        ValueError,
        match=r"^recorded send 1 was sent with another prompt: section "
        r"'base_prompt' differs; record again with a client "
        r"\(or load with on_changed_prompt='warn'\)$",
    ):
        send(changed, None, model="claude-sonnet-4-6", user="Hi", recording=Recording.load(path))
    assert changed.recorder.exchanges() == [] and changed.turn == 0
    # asked for: the replay goes on, warns, and the exchange says so wherever it is shown
    with pytest.warns(ChangedPromptWarning, match="section 'base_prompt' differs"):
        reply = send(
            changed,
            None,
            model="claude-sonnet-4-6",
            user="Hi",
            recording=Recording.load(path, on_changed_prompt="warn"),
        )
    assert reply.exchange.stop_reason == CHANGED_PROMPT
    recorded = changed.recorder.exchange_at(0)
    assert recorded is not None and recorded.stop_reason == CHANGED_PROMPT
    # the replies view (the dashboard's replies tab) says so above its rows, in text and HTML
    view = exchanges_view(changed)
    said = (
        "turn 0 replayed against a changed prompt (on_changed_prompt='warn'): the reply and the "
        "billed usage are the recording's, for another prompt; record again with a client for this one's"
    )
    assert str(view).splitlines()[0] == f"warning: {said}"
    assert html.escape(said) in view._repr_html_() and 'role="alert"' in view._repr_html_()
    assert exchanges_view(session).banner == ""  # a replay of the same prompt says nothing


def test_a_replay_against_the_same_prompt_answers(session: Session, tmp_path: Path) -> None:
    path = _recorded(tmp_path, session)
    again = Session(base_prompt="You help {first_name}.", profile=session.working_memory.profile, clock=session.clock)
    assert send(again, None, model="claude-sonnet-4-6", user="Hi", recording=Recording.load(path)).text == "Recorded."


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_a_device_or_deep_nesting_is_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"^pipe.jsonl: not a regular file"):
        Recording.load(fifo)
    with pytest.raises(ValueError, match=r"^zero: not a regular file"):
        Recording.load("/dev/zero")
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"v": 2, "kind": "wm-kernel recording"}\n' + "[" * 200_000 + "\n")
    with pytest.raises(ValueError, match=r"^deep.jsonl line 2: JSON nested too deeply to read"):
        Recording.load(deep)
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(ValueError, match=r"^folder: not a regular file"):
        Recording.load(folder)


def test_bad_records_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"v": 2, "kind": "wm-kernel recording"}\n{"turn": 0}\n')
    with pytest.raises(ValueError, match=r"^r.jsonl line 2: an exchange record lacks provider"):
        Recording.load(path)
    path.write_text('{"v": 9, "kind": "wm-kernel recording"}\n')
    with pytest.raises(ValueError, match=r"^r.jsonl line 1: expected the header"):
        Recording.load(path)
    with pytest.raises(ValueError, match="on_changed_prompt must be 'error' or 'warn', got 'x'"):
        Recording(on_changed_prompt="x")


def test_a_recording_behind_a_byte_order_mark_loads_every_exchange(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    Recording([_exchange(0, "first"), _exchange(1, "second")]).save(path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # as an editor that writes one saves it
    assert [e.reply for e in Recording.load(path).exchanges] == ["first", "second"]
