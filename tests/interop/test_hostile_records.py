"""One hostile record never refuses a whole log (issue 44 item 3): NaN, Infinity, a number out of
range, nesting too deep, an integer of more than 4,300 digits, a time out of range, a byte order
mark, a subagent file with no request, a symlink loop. The bad line is an issue naming its file and
line; the rest imports."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from mira_tap_files import load, three_turns

from wm_kernel.interop.log_files import import_log
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"
FILES = {
    "anthropic": DATA / "support_anthropic.jsonl",
    "openai-chat": DATA / "support_openai_chat.jsonl",
    "openai-responses": DATA / "support_openai_responses.jsonl",
    "claude-code": DATA / "claude_code_session.jsonl",
    "otlp": DATA / "otlp" / "one_bad_span.otlp.jsonl",
}
#: each a change to one record (its text) that makes it hostile, and what its issue says
HOSTILE: dict[str, tuple[Callable[[str], str], str]] = {
    "NaN": (lambda line: line[:-1] + ', "x": NaN}', "NaN is not a JSON number"),
    "Infinity": (lambda line: line[:-1] + ', "x": -Infinity}', "-Infinity is not a JSON number"),
    "1e999": (lambda line: line[:-1] + ', "x": 1e999}', "1e999 is out of a float's range"),
    "huge integer": (lambda line: line[:-1] + ', "x": ' + "9" * 5000 + "}", "Exceeds the limit (4300 digits)"),
    "deep": (lambda line: line[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deeply to read"),
}


def read(path: Path) -> object:
    return import_log(path, counter=TokenCounter(EstimateTokenizer()))


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("name", sorted(FILES))
def test_one_hostile_record_is_an_issue_of_its_line_and_the_rest_imports(tmp_path: Path, name: str, kind: str) -> None:
    source = FILES[name]
    lines = source.read_text(encoding="utf-8").rstrip("\n").split("\n")
    plain = read(source)
    change, says = HOSTILE[kind]
    where = len(lines) - 1  # the last record: nothing after it depends on it
    lines[where] = change(lines[where])
    path = tmp_path / source.name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = read(path)
    issue = next(e for e in log.errors if e.line == where + 1 and says in e.message)
    assert issue.path == str(path) and "\n" not in str(issue)
    assert 0 < len(log.requests) <= len(plain.requests)  # type: ignore[attr-defined]
    log.summary()


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_deeply_nested_line_among_the_first_five_is_an_issue_and_the_file_imports(tmp_path: Path, name: str) -> None:
    source = FILES[name]
    path = tmp_path / source.name
    path.write_text("[" * 5000 + "]" * 5000 + "\n" + source.read_text(encoding="utf-8"), encoding="utf-8")
    log = read(path)
    assert [(e.line, e.message) for e in log.errors if e.line == 1] == [
        (1, "malformed JSON: nested too deeply to read")
    ]
    assert len(log.requests) == len(read(source).requests)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_byte_order_mark_drops_no_record(tmp_path: Path, name: str) -> None:
    source = FILES[name]
    path = tmp_path / source.name
    path.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    log, plain = read(path), read(source)
    assert len(log.requests) == len(plain.requests)  # type: ignore[attr-defined]
    assert [e.message for e in log.errors] == [e.message for e in plain.errors]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "stamp", ["9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+01:00", "2300-01-01T00:00:00Z", "1969-12-31T23:59:59Z"]
)
def test_a_transcript_time_out_of_range_is_an_issue_of_its_line(tmp_path: Path, stamp: str) -> None:
    lines = (DATA / "claude_code_session.jsonl").read_text(encoding="utf-8").rstrip("\n").split("\n")
    last = json.loads(lines[-1])
    last["timestamp"] = stamp
    lines[-1] = json.dumps(last)
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = read(path)
    assert any(e.line == len(lines) and "not an ISO-8601 time from 1970 to 2262" in e.message for e in log.errors)
    log.summary()


def test_transcript_times_with_two_utc_offsets_summarise(tmp_path: Path) -> None:
    lines = (DATA / "claude_code_session.jsonl").read_text(encoding="utf-8").rstrip("\n").split("\n")
    records = [json.loads(line) for line in lines]
    for number, record in enumerate(records):
        if "timestamp" in record and number % 2:
            record["timestamp"] = record["timestamp"].replace("T12:", "T14:").replace("Z", "+02:00")
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    log = read(path)
    plain = read(DATA / "claude_code_session.jsonl")
    assert log.send_times()[0] == plain.send_times()[0]  # type: ignore[attr-defined]
    assert str(log.summary()) == str(plain.summary())  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "ts", [1e20, -5, 10**400, "soon", True], ids=["1e20", "negative", "10**400", "a string", "a bool"]
)
def test_a_tap_time_out_of_range_is_an_issue_of_its_line(tmp_path: Path, ts: object) -> None:
    tap, _ = three_turns(tmp_path)
    lines = tap.requests.read_text(encoding="utf-8").rstrip("\n").split("\n")
    record = json.loads(lines[-1])
    record["ts"] = ts
    lines[-1] = json.dumps(record)
    tap.requests.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = load(tap.requests)
    issue = next(e for e in log.errors if e.path == str(tap.requests) and e.line == len(lines))
    assert "ts" in issue.message and "\n" not in issue.message
    assert len(log.requests) == 2


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_tap_response_is_an_issue_and_its_request_imports_without_usage(tmp_path: Path, kind: str) -> None:
    tap, _ = three_turns(tmp_path)
    lines = tap.responses.read_text(encoding="utf-8").rstrip("\n").split("\n")
    change, says = HOSTILE[kind]
    lines[-1] = change(lines[-1])
    tap.responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = load(tap.requests)
    assert any(e.path == str(tap.responses) and e.line == 3 and says in e.message for e in log.errors)
    assert len(log.requests) == 3 and log.requests[2].usage is None


@pytest.mark.parametrize("content", ["", '{"type": "progress", "data": {}}\n'])
def test_a_subagent_file_without_requests_is_an_issue_and_the_session_imports(tmp_path: Path, content: str) -> None:
    shutil.copytree(DATA / "claude_code" / "session", tmp_path / "session")
    session = tmp_path / "session" / "5e55a000.jsonl"
    plain = read(session)
    empty = tmp_path / "session" / "5e55a000" / "subagents" / "agent-empty.jsonl"
    empty.write_text(content, encoding="utf-8")
    log = read(session)
    assert len(log.requests) == len(plain.requests)  # type: ignore[attr-defined]
    issue = next(e for e in log.errors if e.path == str(empty))
    assert issue.message.endswith("nothing imported from this subagent file")


def test_a_symlink_loop_is_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "a.jsonl"
    os.symlink(tmp_path / "b.jsonl", loop)
    os.symlink(loop, tmp_path / "b.jsonl")
    with pytest.raises(ValueError) as caught:
        import_log(loop)
    assert str(caught.value) == f"{loop}: a symbolic link that loops (or too many links)"
