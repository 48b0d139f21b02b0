"""Claude Code transcripts read as the model saw them: one fixture of our own for each fact of the
format (the list in ../shared/real-logs/README.md), each usage figure equal to the raw file's."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from wm_kernel.__main__ import main
from wm_kernel.interop import import_log
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.testing.synthetic import claude_code_session
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

DATA = Path(__file__).resolve().parents[1] / "data" / "interop" / "claude_code"


def load(*names: str, **options: object) -> ImportedSession:
    return import_log(*(DATA / n for n in names), counter=TokenCounter(EstimateTokenizer()), **options)  # type: ignore[arg-type]


def names(session: ImportedSession, turn: int) -> list[str]:
    return [s.name for s in session.sections(turn)]


def figures(session: ImportedSession) -> list[tuple[int, int, int, int, int]]:
    out = []
    for u in session.billed_usage():
        assert u is not None
        out.append(
            (u.input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens, u.cache_write_1h_tokens, u.output_tokens)
        )
    return out


def test_a_streamed_message_is_one_message_and_its_last_line_has_the_usage() -> None:
    session = load("streamed.jsonl")
    assert [str(e) for e in session.errors] == []
    assert len(session) == 2
    # input and cache counts repeat on the three lines; output_tokens grows 2, 2, 187
    assert figures(session) == [(3, 16000, 0, 2400, 187), (5, 18400, 20, 100, 9)]
    first = session.request(0)
    assert (first.request_id, first.response_id, first.response_model, first.conversation_id) == (
        "req_01S",
        "msg_01S",
        "claude-opus-4-6",
        "5e55a000-0000-4000-8000-000000000001",
    )
    assert names(session, 1) == [
        "msg[0] user",
        "msg[1] assistant [0] thinking",
        "msg[1] assistant [1] text",
        "msg[1] assistant [2] tool_use",
        "msg[2] user [0] tool_result",
    ]
    assert session.prompt_at(1).conversation_prefix_items[1].count('"type": "tool_use"') == 1
    assert len(session.prompt_at(1).conversation_prefix_items) == 3  # user, assistant, user
    assert session.usage["output_tokens"].tolist() == [187, 9]
    assert session.usage["cache_creation_input_tokens"].tolist() == [2400, 120]


def test_ordinary_lines_are_counted_and_skipped_not_errors(capsys: pytest.CaptureFixture[str]) -> None:
    session = load("streamed.jsonl")
    assert session.skipped == {
        "file-history-snapshot": 1,
        "progress": 4,
        "queue-operation": 1,
        "summary": 1,
        "system": 1,
    }
    assert main(["import", str(DATA / "streamed.jsonl")]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert (
        "2 requests from streamed.jsonl (8 ordinary lines skipped: file-history-snapshot 1, progress 4, "
        "queue-operation 1, summary 1, system 1)" in captured.out
    )


def test_every_result_of_parallel_tool_calls_is_in_the_next_request() -> None:
    session = load("parallel.jsonl")
    assert [str(e) for e in session.errors] == []
    assert len(session) == 3
    assert names(session, 1)[-4:] == [
        "msg[1] assistant [3] tool_use",
        "msg[2] user [0] tool_result",
        "msg[2] user [1] tool_result",
        "msg[2] user [2] tool_result",
    ]
    assert session.request(1).lines == (1, 2, 3, 4, 5, 6, 7, 8)
    # calls and results interleaved (call, result, call, result): one message each side
    assert names(session, 2)[-4:] == [
        "msg[3] assistant [0] tool_use",
        "msg[3] assistant [1] tool_use",
        "msg[4] user [0] tool_result",
        "msg[4] user [1] tool_result",
    ]
    assert figures(session)[1] == (3, 15900, 0, 300, 61)


def test_a_rewound_branch_is_in_no_later_request_and_compaction_starts_a_chain() -> None:
    session = load("rewind_compact.jsonl")
    assert [str(e) for e in session.errors] == []
    assert len(session) == 4
    texts = ["".join(s.text for s in session.sections(t)) for t in session.turns]
    assert "First attempt" in texts[1] and "First attempt" not in texts[2]
    assert "Second attempt" in texts[2]
    # after the boundary the chain starts at the summary: nothing of before is sent again
    assert texts[3].startswith("This session is being continued") and "Second attempt" not in texts[3]
    assert names(session, 3) == ["msg[0] user", "msg[0] user [1] text"]  # summary + prompt: one turn
    assert [r.marks for r in session.requests] == [(), (), (), ("after-compaction",)]


def test_null_parent_files_and_lines_without_ids_are_read_in_file_order() -> None:
    session = load("null_parents.jsonl")
    assert len(session) == 2
    assert names(session, 1) == ["msg[0] user", "msg[1] assistant [0] text", "msg[2] user"]
    assert figures(session) == [(20, 0, 0, 0, 35), (30, 0, 0, 0, 12)]
    no_ids = load("no_ids.jsonl")
    assert [str(e) for e in no_ids.errors] == []
    assert len(no_ids) == 2  # no message id: each assistant line its own request
    assert names(no_ids, 1) == ["msg[0] user", "msg[1] assistant [0] text", "msg[2] user"]


def test_sidechains_are_their_own_conversations_and_each_request_keeps_its_model() -> None:
    session = load("sidechain.jsonl")
    assert [r.model for r in session.requests] == [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5-20251001",
        "claude-opus-4-6",
    ]
    assert [r.conversation for r in session.requests] == ["sidechain", "sidechain/sidechain-1", "sidechain"]
    assert [r.marks for r in session.requests] == [(), ("sidechain",), ()]
    assert names(session, 1) == ["msg[0] user"]  # the sidechain's own chain
    assert names(session, 2) == ["msg[0] user", "msg[1] assistant [0] text", "msg[2] user"]


def test_a_session_brings_its_subagents_each_its_own_conversation() -> None:
    session = load("session/5e55a000.jsonl")
    assert [str(e) for e in session.errors] == []
    by_id = {str(r.request_id): r for r in session.requests}
    assert sorted(by_id) == ["req_01K", "req_01M", "req_01T", "req_02M", "req_02T"]
    assert by_id["req_01T"].conversation == "5e55a000/agent-a77"
    assert by_id["req_01T"].marks == ("subagent",)
    assert by_id["req_01M"].conversation == "5e55a000"
    # the compaction run reads the session's whole conversation, then its own prompt
    compaction = by_id["req_01K"]
    assert compaction.marks == ("compaction",)
    assert [s.name for s in compaction.sections if s.kind != "framing"] == [
        "msg[0] user",
        "msg[1] assistant [0] text",
        "msg[2] user",
        "msg[3] assistant [0] text",
        "msg[4] user",
    ]
    assert compaction.lines == (1,)  # its own file's line; the rest are the session's
    # the subagent's streamed message: its last line's usage
    assert (by_id["req_01T"].usage or {})["output_tokens"] == 40
    # a folder imports the same
    assert len(load("session")) == 5 == len(load("session/5e55a000"))
    assert len(load("session/5e55a000.jsonl", subagents=False)) == 2


def test_transcripts_hold_no_system_prompt_tools_or_cache_marks() -> None:
    session = load("sidechain.jsonl")
    kinds = {s.kind for t in session.turns for s in session.sections(t)}
    assert kinds == {"message"}
    assert all(s.cache is None for t in session.turns for s in session.sections(t))
    # yet the billed usage reads most of the prompt from the cache
    last = session.billed_usage()[2]
    assert last is not None and last.cache_read_tokens / last.prompt_tokens == pytest.approx(8000 / 8103)


def test_the_5m_1h_split_is_read_from_cache_creation() -> None:
    session = load("streamed.jsonl")
    second = session.billed_usage()[1]
    assert second is not None
    assert (second.cache_write_tokens, second.cache_write_1h_tokens, second.cache_write_5m_tokens) == (120, 100, 20)


def test_requests_share_their_lines_sections_instead_of_copying_the_conversation() -> None:
    session = load("parallel.jsonl")
    first, later = session.request(0).sections, session.request(2).sections
    assert all(a is b for a, b in zip(first, later, strict=False))
    assert session.request(2).source is None
    assert session.replay(2) == "".join(
        (DATA / "parallel.jsonl").read_text(encoding="utf-8").split("\n")[n - 1] for n in session.request(2).lines
    )


def test_a_looping_parent_chain_is_reported_and_does_not_hang(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (DATA / "parallel.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[0]["parentUuid"] = "z2"  # u1 -> z2 -> z1 -> u1
    rows.append({**rows[0], "uuid": "z1", "parentUuid": "u1", "message": {"role": "user", "content": "loop"}})
    rows.append({**rows[0], "uuid": "z2", "parentUuid": "z1", "message": {"role": "user", "content": "loop"}})
    path = tmp_path / "loop.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    session = import_log(path)
    assert [str(e) for e in session.errors] == [
        f"{path}:1: its parentUuid chain loops back to it (u1 -> z2 -> z1 -> u1): read as the start of a new chain"
    ]
    assert len(session) == 3


def test_separators_inside_a_line_stay_inside_it_and_a_bad_byte_names_its_line(tmp_path: Path) -> None:
    text = (DATA / "streamed.jsonl").read_bytes()
    # U+2028, U+0085 and U+2029 written raw inside a message: str.splitlines would cut there
    text = text.replace(b"Fix it.", "Fix\u2028it\u0085now\u2029.".encode())
    path = tmp_path / "seps.jsonl"
    path.write_bytes(text)
    session = import_log(path)
    assert [str(e) for e in session.errors] == []
    assert len(session) == 2
    assert "Fix\u2028it\u0085now\u2029." in session.sections(0)[0].text
    broken = tmp_path / "broken.jsonl"
    lines = text.split(b"\n")
    lines[9] = lines[9].replace(b"def parse", b"def \xff parse")
    broken.write_bytes(b"\n".join(lines))
    partial = import_log(broken)
    column = lines[9].index(b"\xff") + 1
    assert [str(e) for e in partial.errors] == [
        f"{broken}:10: not UTF-8: byte 0xff at column {column}; the line is skipped"
    ]
    assert len(partial) == 2


def test_the_generator_writes_what_the_import_reads(tmp_path: Path) -> None:
    made = claude_code_session(tmp_path / "gen.jsonl", turns=4, calls=3, seed=7)
    session = import_log(tmp_path / "gen.jsonl")
    assert [str(e) for e in session.errors] == []
    assert len(session) == made.requests == 16  # 3 a turn, the rewound one, 3 of the subagent
    totals = [sum(column) for column in zip(*figures(session), strict=True)]
    assert totals == [
        made.input_tokens,
        made.cache_read_tokens,
        made.cache_write_5m_tokens,
        made.cache_write_1h_tokens,
        made.output_tokens,
    ]
    marks = [r.marks for r in session.requests if r.marks]
    assert marks == [("after-compaction",), ("subagent",), ("subagent",), ("subagent",)]
    assert (tmp_path / "gen.jsonl").read_bytes() == (
        claude_code_session(tmp_path / "again.jsonl", turns=4, calls=3, seed=7)
        .path.read_bytes()
        .replace(b"again", b"gen")
    )


def test_a_copied_session_folder_imports_from_the_copy(tmp_path: Path) -> None:
    shutil.copytree(DATA / "session", tmp_path / "session")
    session = import_log(tmp_path / "session" / "5e55a000.jsonl")
    assert len(session) == 5
    assert session.requests[0].sent_at == datetime(2026, 11, 30, 10, 0, 1, tzinfo=UTC)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.jsonl")))
def test_a_requests_chain_gives_its_prompt_order_and_kinds_as_a_plain_list_of_its_sections_would(name: str) -> None:
    from wm_kernel.interop.bodies import kinds_of, prompt_order

    session = load(name)
    assert session.requests
    for request in session.requests:
        plain = list(request.sections)
        assert prompt_order(request.sections) == prompt_order(plain)
        assert kinds_of(request.sections) == kinds_of(plain) == {s.kind for s in plain} - {"framing"}


def test_prompt_order_puts_tools_then_system_then_messages_each_in_text_order() -> None:
    from wm_kernel.interop.bodies import Section, prompt_order

    def section(kind: str, name: str) -> Section:
        return Section(name, kind, name, name)

    mixed = [
        section(k, n)
        for k, n in [
            ("message", "m1"),
            ("framing", "f"),
            ("tool", "t1"),
            ("system", "s1"),
            ("tool", "t2"),
            ("message", "m2"),
        ]
    ]
    assert [s.name for s in prompt_order(mixed)] == ["t1", "t2", "s1", "m1", "m2"]
    assert prompt_order([section("framing", "f")]) == []


def test_the_replies_of_a_replayed_transcript_are_its_assistant_messages_the_last_one_too() -> None:
    from wm_kernel.display.exchanges import exchanges_view

    session = import_log(DATA.parent / "claude_code_session.jsonl", counter=TokenCounter(EstimateTokenizer()))
    view = exchanges_view(session.to_session())
    assert [row.reply for row in view.rows] == [
        # a tool call reads as one line, not as the transcript's JSON block
        'Reading the parser.\n\ncalls Read({"file_path": "/home/dev/parcelly/parser.py"})',
        "The check should be `s.startswith('PX')`.",  # the last request's: no request after it carries it
    ]


def test_one_response_is_one_request_whatever_lines_sit_between_its_blocks() -> None:
    # msg_I1's three tool calls are written call, result, call, result, call, result: still one
    # API response, one request, one usage (its last line: 95 output tokens), and the next request
    # holds every result
    session = load("interleaved.jsonl")
    assert [str(e) for e in session.errors] == []
    assert len(session) == 2
    assert [session.request(i).response_id for i in range(2)] == ["msg_I1", "msg_I2"]
    assert figures(session) == [(3, 12000, 400, 0, 95), (5, 12400, 260, 0, 7)]
    assert [n for n in names(session, 1) if "tool_result" in n] == [
        "msg[2] user [0] tool_result",
        "msg[2] user [1] tool_result",
        "msg[2] user [2] tool_result",
    ]


def test_a_response_written_into_two_files_of_a_session_is_one_request(tmp_path: Path) -> None:
    # a sidechain kept in the session file and again in a subagent file: counted once
    session_file = tmp_path / "5e55a000.jsonl"
    shutil.copy(DATA / "interleaved.jsonl", session_file)
    (tmp_path / "5e55a000" / "subagents").mkdir(parents=True)
    lines = (DATA / "interleaved.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "5e55a000" / "subagents" / "agent-a1.jsonl").write_text("".join(lines[:3]), encoding="utf-8")
    session = import_log(session_file, counter=TokenCounter(EstimateTokenizer()))
    assert len(session) == 2 and session.skipped["duplicate response"] == 1


def _long_transcript(tmp_path: Path) -> tuple[ImportedSession, int]:
    """An 80-prompt transcript imported, and how many sections its turns hold in all (each turn
    repeats the conversation before it)."""
    path = tmp_path / "s.jsonl"
    claude_code_session(path, turns=80)
    log = import_log(path)
    return log, sum(len(log.sections(turn)) for turn in log.turns)


def test_a_summary_counts_each_request_by_what_it_adds_not_the_conversation_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a transcript's request repeats the conversation before it: summing every request's
    # sections counted n**2 sections (x24-x51 for x4 input); now each turn carries on from the
    # sections it shares with the turn before, and its prompt from the one it extends
    import wm_kernel.interop.logged_prompt as logged

    log, held = _long_transcript(tmp_path)
    counted: list[str] = []
    count = TokenCounter.count
    monkeypatch.setattr(TokenCounter, "count", lambda self, text: counted.append(text) or count(self, text))
    added: list[int] = []
    add = logged._Build.add
    monkeypatch.setattr(
        logged._Build,
        "add",
        lambda self, sections, memo: added.append(len(sections) - len(self.sections)) or add(self, sections, memo),
    )
    frame = log.summary()
    assert len(frame) == len(log.requests) > 200
    assert held > 50 * len(log.requests)  # what the requests hold, turn after turn
    assert len(counted) < held / 10
    assert sum(added) < held / 10  # each prompt built from what its request adds


def test_a_summary_looks_at_what_each_request_adds_and_holds_no_prompt_per_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 44 item 6, round 2: summary() of a transcript still did work the size of the whole
    # conversation per request (every block's key listed to find the agent's previous mark, the
    # conversation copied twice per request where its chain parted from the last one's, every
    # turn's prompt kept: each holds the conversation so far)
    import gc

    import wm_kernel.interop.agent_cache as agent_cache
    import wm_kernel.interop.claude_code.chain as chain
    from wm_kernel.core.prompt import ComposedPrompt

    log, held = _long_transcript(tmp_path)
    keyed: list[object] = []
    key = agent_cache._KEY
    monkeypatch.setattr(agent_cache, "_KEY", lambda block: keyed.append(block) or key(block))
    kept: list[list[object]] = []  # the list each request's sections were cut from (kept: ids unique)
    prompt_sections = chain.Chain.prompt_sections

    def watched(self: chain.Chain) -> list[object]:
        out = prompt_sections(self)
        if not kept or kept[-1] is not chain._last_prompt[1]:
            kept.append(chain._last_prompt[1])
        return out  # type: ignore[return-value]

    monkeypatch.setattr(chain.Chain, "prompt_sections", watched)
    prompts = sum(isinstance(o, ComposedPrompt) for o in gc.get_objects())
    frame = log.summary()
    assert len(frame) == len(log.requests) > 200 and held > 50 * len(log.requests)
    assert len(keyed) <= 10  # where a request parts from the one before (every block of every request: `held`)
    # a new list where the requests switch conversation (a subagent's and back) or chain (after a
    # compaction), else the last one cut back and extended in place (was a new list, a copy of the
    # conversation, at each of the 4 asks per request: over 900)
    assert len(kept) < 30
    assert sum(isinstance(o, ComposedPrompt) for o in gc.get_objects()) == prompts  # (one per turn)
    # and what it gives is what the prompts of the turns give
    assert list(frame["first_change"][1:]) == [
        (log.first_change(t - 1, t).section or "")
        for t in log.turns[1:]  # type: ignore[union-attr]
    ]
