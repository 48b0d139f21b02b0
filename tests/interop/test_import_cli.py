"""``python -m wm_kernel import`` and ``%wm_import``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from wm_kernel.__main__ import main
from wm_kernel.interop.imported import ImportedSession

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"


def test_import_prints_one_row_per_request_and_reports_skipped_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.jsonl"
    shutil.copy(DATA / "bad_anthropic.jsonl", path)
    assert main(["import", str(path), "--model", "claude-sonnet-4-6"]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"skipped {path}:2: malformed JSON: Expecting value at column 60",
        f"skipped {path}:4: not an Anthropic Messages request: no 'messages' list",
    ]
    lines = out.splitlines()
    assert lines[0] == "3 requests from log.jsonl; tokens counted with tiktoken cl100k_base"
    assert lines[1].split() == [
        "turn",
        "sent_at",
        "sections",
        "tokens",
        "first_change",
        "sim_status",
        "sim_read",
        "sim_written",
        "logged_read",
        "logged_written",
        "priced_as",
    ]
    assert lines[3].split()[:3] == ["1", "2026-11-30", "09:00:40"]
    assert "system[1] <customer_context>" in lines[3] and lines[3].split()[-3:] == ["2040", "180", "claude-sonnet-4-6"]


def test_import_shows_a_turns_sections_and_writes_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("opentelemetry.sdk")
    trace = tmp_path / "trace.json"
    assert main(["import", str(DATA / "support_openai_chat.jsonl"), "--sections", "0", "--otlp-out", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "msg[0] developer ## Rules developer              system" in out
    assert out.splitlines()[-1] == f"trace written to {trace}"
    assert main(["import", str(trace)]) == 0


def test_import_checks_the_sections_turn_before_printing_anything(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(DATA / "support_openai_chat.jsonl"), "--sections", "99"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("python -m wm_kernel import: error: --sections 99: no turn 99: this log has turns 0..")
    assert len(err.splitlines()) == 1


def test_import_of_nothing_readable_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("not json\n", encoding="utf-8")
    assert main(["import", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"python -m wm_kernel import: error: {path}:1: malformed JSON: Expecting value at column 1 (nothing imported)\n"
    )


def test_wm_import_returns_the_session_and_lists_skipped_lines(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from IPython.core.error import UsageError

    path = tmp_path / "my log.jsonl"
    shutil.copy(DATA / "bad_anthropic.jsonl", path)
    session = ip.run_line_magic("wm_import", f"'{path}' --split '^## '")
    assert isinstance(session, ImportedSession) and len(session) == 3
    assert capsys.readouterr().out.splitlines()[0] == f"skipped {path}:2: malformed JSON: Expecting value at column 60"
    with pytest.raises(UsageError, match=r"absent.jsonl: cannot read the file \(\[Errno 2\] No such file"):
        ip.run_line_magic("wm_import", str(tmp_path / "absent.jsonl"))
    with pytest.raises(UsageError, match=r"argument --format: invalid choice: 'csv'"):
        ip.run_line_magic("wm_import", f"'{path}' --format csv")


def test_unload_removes_wm_import(ip: Any) -> None:
    assert ip.find_line_magic("wm_import") is not None
    ip.extension_manager.unload_extension("wm_kernel")
    try:
        assert ip.find_line_magic("wm_import") is None
        assert "InteropMagics" not in ip.magics_manager.registry
    finally:
        ip.extension_manager.load_extension("wm_kernel")


def test_wm_import_makes_the_log_the_current_session(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from wm_kernel.interop.live import imported_of
    from wm_kernel.session import current_session

    before = current_session()
    log = ip.run_line_magic("wm_import", f"'{DATA / 'bad_anthropic.jsonl'}' --keep-current")
    assert current_session() is before
    assert not any(line.startswith("current session") for line in capsys.readouterr().out.splitlines())
    log = ip.run_line_magic("wm_import", f"'{DATA / 'bad_anthropic.jsonl'}'")
    live = current_session()
    assert live is not before and imported_of(live) is log
    assert capsys.readouterr().out.splitlines()[-1] == (
        "current session: bad_anthropic.jsonl, 3 turns replayed, claude-sonnet-4-6 (%cache, %request, %wm_check "
        "and %wm_dashboard show it; --keep-current keeps the previous session)"
    )
    assert (live.turn, live.model) == (2, "claude-sonnet-4-6")
    # the magics that read the current session read the log's turns
    assert list(ip.run_line_magic("cache", "--no-advice").simulation.turns["turn"]) == [0, 1, 2]
    assert ip.run_line_magic("request", "1") is not None


def test_a_log_that_cannot_be_replayed_leaves_the_current_session(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from wm_kernel.session import current_session

    path = tmp_path / "untimed.jsonl"
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 10,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    path.write_text(json.dumps(body) + "\n", encoding="utf-8")
    before = current_session()
    ip.run_line_magic("wm_import", str(path))
    assert current_session() is before
    assert capsys.readouterr().out.splitlines()[-1] == (
        "the current session is unchanged: untimed.jsonl cannot be replayed into a live session (the log has no "
        "send time for every request; a replayed session needs them)"
    )


def test_a_log_without_send_times_imports_at_the_gap_given_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    body = {"model": "claude-haiku-4-5-20251001", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "bodies.jsonl"
    path.write_text((json.dumps(body) + "\n") * 2, encoding="utf-8")
    assert main(["import", str(path), "--gap", "45"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "send times assumed: the log has none; requests in file order 45 s apart (gap=)"
    assert out[3].split()[:3] == ["1", "2026-01-01", "00:00:45"]
    assert out[3].split()[-1] == "claude-haiku-4-5"
    assert main(["import", str(path)]) == 0  # without --gap: simulated at the default spacing, said
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == (
        "send times assumed: the log has none; requests in file order 30 s apart, the default "
        "(pass gap= or times= to set them)"
    )
    assert out[3].split()[:3] == ["1", "2026-01-01", "00:00:30"]
