"""Importing other agents' logs: exact bytes, golden section tables, errors, and every instrument."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from wm_kernel.interop import import_log
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"
FIXTURES = [
    "support_anthropic.jsonl",
    "support_openai_chat.jsonl",
    "support_openai_responses.jsonl",
    "claude_code_session.jsonl",
    "otlp_foreign.json",
    "support_anthropic_billed.jsonl",
]


def load(name: str) -> ImportedSession:
    return import_log(DATA / name, counter=TokenCounter(EstimateTokenizer()))


def table(session: ImportedSession, turn: int) -> list[tuple[str, str, str | None, int, str | None]]:
    return [
        (s.name, s.kind, s.trinket, len(s.text), s.cache) for s in session.request(turn).sections if s.kind != "framing"
    ]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_request_joins_back_to_the_logged_bytes(name: str) -> None:
    session = load(name)
    lines = (DATA / name).read_text(encoding="utf-8").split("\n")
    for turn in session.turns:
        request = session.request(turn)
        assert session.replay(turn) == request.logged_text
        if request.dialect in ("anthropic", "openai.chat", "openai.responses", "claude-code"):
            assert request.logged_text == "".join(lines[n - 1] for n in request.lines)


def test_anthropic_sections_golden() -> None:
    session = load("support_anthropic.jsonl")
    assert [str(e) for e in session.errors] == []
    assert table(session, 1) == [
        ("system[0]", "system", "system", 161, None),
        ("system[0] <policies>", "system", "system", 6515, None),
        ("system[0] ## Refunds", "system", "system", 76, None),
        ("system[0] ## Tone", "system", "system", 63, "1h"),
        ("system[1] <customer_context>", "system", "system", 100, "5m"),
        ("tool:track_parcel", "tool", "tools", 193, None),
        ("tool:open_claim", "tool", "tools", 297, "1h"),
        ("msg[0] user [0] text", "message", "user", 42, None),
        ("msg[0] user [1] image", "message", "user", 27, None),
        ("msg[1] assistant [0] text", "message", "assistant", 13, None),
        ("msg[1] assistant [1] tool_use", "message", "assistant", 101, None),
        ("msg[2] user [0] tool_result", "message", "user", 165, "5m"),
    ]
    sections = {s.name: s for s in session.request(1).sections}
    # an image is a placeholder, never its data; a tool call is its JSON
    assert sections["msg[0] user [1] image"].text == "[image image/png, 96 chars]"
    assert '"data": "iVBORw0KGgo' in sections["msg[0] user [1] image"].raw
    assert sections["msg[1] assistant [1] tool_use"].text.startswith('{"type": "tool_use", "id": "toolu_01"')
    # the order a provider reads: tools, system, messages
    assert [s.name for s in session.sections(1)][:3] == ["tool:track_parcel", "tool:open_claim", "system[0]"]


def test_openai_chat_sections_golden() -> None:
    assert table(load("support_openai_chat.jsonl"), 1) == [
        ("msg[0] developer # Parcelly Help", "system", "developer", 46, None),
        ("msg[0] developer ## Rules", "system", "developer", 103, None),
        ("msg[1] user [0] text", "message", "user", 38, None),
        ("msg[1] user [1] image_url", "message", "user", 22, None),
        ("msg[2] assistant tool_calls", "message", "assistant", 124, None),
        ("msg[3] tool", "message", "tool", 16, None),
        ("tool:track_parcel", "tool", "tools", 202, None),
    ]


def test_openai_responses_sections_golden() -> None:
    assert table(load("support_openai_responses.jsonl"), 2) == [
        ("instructions # Parcelly Help", "system", "system", 46, None),
        ("instructions ## Rules", "system", "system", 103, None),
        ("input[0] user [0] input_text", "message", "user", 22, None),
        ("input[0] user [1] input_image", "message", "user", 24, None),
        ("input[1] function_call", "message", "function_call", 118, None),
        ("input[2] function_call_output output <status>", "message", "function_call_output", 27, None),
        ("input[2] function_call_output output", "message", "function_call_output", 10, None),
        ("input[3] user", "message", "user", 11, None),
        ("tool:track_parcel", "tool", "tools", 94, None),
    ]


def test_claude_code_requests_follow_the_chain_and_count_usage_once() -> None:
    session = load("claude_code_session.jsonl")
    assert [str(e) for e in session.errors] == []
    assert len(session) == 2  # msg_01A (two lines) and msg_01B
    assert table(session, 1) == [
        ("msg[0] user <command-name>", "message", "user", 37, None),
        ("msg[0] user", "message", "user", 49, None),
        ("msg[0] user # Context", "message", "user", 24, None),
        ("msg[1] assistant [0] text", "message", "assistant", 19, None),
        ("msg[1] assistant [1] tool_use", "message", "assistant", 110, None),  # one streamed message
        ("msg[2] user [0] tool_result", "message", "user", 110, None),
    ]
    assert session.request(1).lines == (2, 3, 4, 6)  # the snapshot line (5) is no message
    assert session.request(1).sent_at == datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)
    assert session.usage[["cache_read_input_tokens", "cache_creation_input_tokens"]].values.tolist() == [
        [14053, 7465],
        [21518, 120],
    ]


def test_foreign_otlp_spans_are_cut_from_their_gen_ai_attributes() -> None:
    session = load("otlp_foreign.json")
    assert table(session, 1)[3:] == [
        ("system[0] ## Tone", "system", "system", 63, None),
        ("msg[0] user", "message", "user", 22, None),
        ("msg[1] assistant", "message", "assistant", 100, None),
        ("msg[2] tool", "message", "tool", 70, None),
    ]
    assert session.request(0).lines == (22,)  # the line of its spanId
    assert session.usage["input_tokens"].tolist() == [2300, 2301]


def test_usage_is_kept_in_the_providers_shape_and_read_in_one_vocabulary() -> None:
    session = load("support_anthropic.jsonl")
    assert dict(session.request(1).usage or {}) == {
        "input_tokens": 4,
        "cache_creation_input_tokens": 180,
        "cache_read_input_tokens": 2040,
        "output_tokens": 61,
    }
    assert session.request(1).usage_format == "anthropic"
    assert session.usage.loc[1].tolist()[3:] == [2224, 2040, 180, 61]
    chat = load("support_openai_chat.jsonl")
    assert chat.request(1).usage_format == "openai.chat"
    assert chat.usage.loc[1].tolist()[3:] == [340, 256, 0, 30]


def test_a_bad_line_is_one_error_naming_file_and_line_and_the_rest_imports(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    shutil.copy(DATA / "bad_anthropic.jsonl", path)
    session = import_log(path)
    assert [str(e) for e in session.errors] == [
        f"{path}:2: malformed JSON: Expecting value at column 60",
        f"{path}:4: not an Anthropic Messages request: no 'messages' list",
    ]
    assert len(session) == 3
    assert [r.lines for r in session.requests] == [(1,), (3,), (5,)]


def test_an_unknown_format_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text('{"hello": "world"}\n{"also": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        import_log(path)
    assert str(caught.value) == (
        f"{path}:1: unknown format: not a request body, transcript line or OTLP "
        f"document (anthropic, claude-code, claude-trace, codex, gemini, mira-tap, openai.chat, "
        f"openai.chat.stored, openai.responses, openhands, otlp) "
        f"(nothing imported)"
    )
    with pytest.raises(ValueError, match=r"^unknown format 'csv'; formats: anthropic, "):
        import_log(path, format="csv")
    with pytest.raises(ValueError, match=r"missing.jsonl: cannot read the file"):
        import_log(tmp_path / "missing.jsonl")


def test_user_rules_split_further() -> None:
    session = import_log(DATA / "support_anthropic.jsonl", rules=[r"^- Policy 40:"])
    names = [s.name for s in session.sections(0)]
    assert "system[0] <policies>" in names
    assert "system[0] - Policy 40:" not in names  # inside an XML region: the region stays whole
    chat = import_log(DATA / "support_openai_chat.jsonl", rules=[r"^- Check"])
    assert "msg[0] developer - Check" in [s.name for s in chat.sections(0)]


def test_history_diff_first_change_and_blame() -> None:
    session = load("support_anthropic.jsonl")
    frame = session.history
    assert list(frame.columns[:6]) == ["turn", "segment", "placement", "section", "trinket", "chars"]
    changed = frame[(frame["turn"] == 3) & frame["changed"]]["section"].tolist()
    # the agent moves its cache mark to the newest message: msg[4] lost its mark (a string again)
    assert changed == [
        "tool:track_parcel",
        "system[1] <customer_context>",
        "msg[4] user",
        "msg[5] assistant [0] tool_use",
        "msg[6] user [0] tool_result",
    ]
    first = session.first_change(2, 3)
    assert str(first) == "first change: cached_content at character 80, in tool:track_parcel (tools)"
    diff = session.diff(2, 3)
    assert "tool:track_parcel" in diff.changed_sections
    assert (
        '+{"name": "track_parcel", "description": "Look up a parcel by its tracking number (12 '
        'characters, starts with PX)."' in str(diff)
    )
    prompt = session.prompt_at(0)
    spans = prompt.blame("cached_content")
    assert "".join(prompt["cached_content"][s.start : s.end] for s in spans) == prompt["cached_content"]
    assert [s.section for s in spans[:3]] == ["tool:track_parcel", "(composer)", "tool:open_claim"]


def test_the_cache_simulator_runs_at_the_logs_send_times() -> None:
    session = load("support_anthropic.jsonl")
    sim = session.cache_simulation()
    turns = sim.turns
    assert turns["at"].tolist() == [r.sent_at for r in session.requests]
    assert turns["status"].tolist() == ["write", "partial", "partial", "write", "partial"]
    assert turns["divergent_label"].tolist()[1:] == [
        "system[1] <customer_context> (system)",
        "system[1] <customer_context> (system)",
        "tool:track_parcel (tools)",
        "system[1] <customer_context> (system)",
    ]
    moved = [datetime(2026, 11, 30, 9, minute, tzinfo=UTC) for minute in (0, 1, 2, 3, 4)]
    assert session.cache_simulation(times=moved).turns["at"].tolist() == moved
    with pytest.raises(ValueError, match="times has 2 entries for 5 turns"):
        session.cache_requests(times=moved[:2])


def test_a_replayed_session_drives_the_session_tools_and_the_dashboard() -> None:
    pytest.importorskip("ipywidgets")
    from wm_kernel.jupyter.dashboard.widget import Dashboard

    session = load("support_anthropic.jsonl")
    live = session.to_session()
    assert live.turn == 4
    # its tools are tools, not sections of the system prompt
    logged = json.loads(session.prompt_at(3).section("tool:track_parcel").content)
    assert logged in live.replayed.tools[3]
    assert "tool:track_parcel" not in {r.name for r in live.prompt_at(3).sections}
    history = live.history
    assert sorted(set(history["turn"])) == [0, 1, 2, 3, 4]
    sim = live.cache_simulation()
    assert [t.isoformat() for t in sim.turns["at"]] == [r.sent_at.isoformat() for r in session.requests]
    board = Dashboard(live)
    board.turn = 2
    assert board.driver.mode == "replay"
    assert "viewing turn 2 (read-only)" in board.status
    board.close()
    budgeted = session.to_session(token_budget=1500)
    assert budgeted.composed is not None and budgeted.composed.budget is not None
    assert "system[0] <policies>" in budgeted.composed.budget.dropped_names


def test_to_session_is_that_agents_request_not_miras(ip: Any) -> None:
    """Its tools as tools, its system blocks as sections, its messages as the conversation; no
    scaffolding delimiter, no "friend", no HUD; the cache simulation is the log's own."""
    from wm_kernel.display.wire_view import request_view
    from wm_kernel.jupyter.magics.tables import session_line
    from wm_kernel.session import set_current_session

    log = load("support_anthropic.jsonl")
    live = log.to_session()
    for turn in log.turns:
        prompt = live.prompt_at(turn)
        assert [(r.name, r.content) for r in prompt.sections] == [
            (s.name, s.text) for s in log.sections(turn) if s.kind == "system"
        ]
        assert prompt["conversation_prefix_items"] == [] and prompt["notification_center"] == ""
        assert "MIRA" not in prompt["cached_content"] + prompt["non_cached_content"]
    view = request_view(live, 3)
    tools = [o for o in view.wire.owners if o.kind == "tool"]
    assert [o.label for o in tools] == [f"tool {t['name']}" for t in live.replayed.tools[3]] and tools
    messages = [o for o in view.wire.owners if o.kind == "message"]
    assert len(messages) == len(live.replayed.messages[3]) > 0
    assert not [o for o in view.wire.owners if o.placement in ("conversation_prefix", "notification")]
    assert "max_tokens the logged request sent" in view.headline()
    # the log's requests, played as the log plays them: the same reads, writes and dollars
    mine, its = live.cache_simulation().turns, log.cache_simulation().turns
    for column in ("status", "cache_read_input_tokens", "cache_creation_input_tokens", "cost_usd"):
        assert mine[column].tolist() == its[column].tolist()
    assert "friend" not in session_line(live, "imported")
    set_current_session(live)
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ip.run_line_magic("compose", "")
    assert "friend" not in printed.getvalue()


def test_compose_of_an_imported_log_titles_each_section_by_its_name_alone(ip):
    """%compose of an imported log names its sections as the log's blocks are named, never by the
    class made to show each one (Stored_system_0___policies_), in the text, HTML and blame views."""
    from wm_kernel.display.render import render_blame_text, render_html, render_text

    ip.run_line_magic("wm_import", str(DATA / "support_anthropic.jsonl"))
    prompt = ip.run_line_magic("compose", "")
    assert [r.trinket for r in prompt.sections][1] == "Stored_system_0___policies_"  # still its address
    text = render_text(prompt)
    assert [line for line in text.splitlines() if line.startswith("--- ")] == [
        "--- system[0] · 161 chars ---",
        "--- system[0] <policies> · 6,515 chars ---",
        "--- system[0] ## Refunds · 76 chars ---",
        "--- system[0] ## Tone · 63 chars ---",
        "--- system[1] <customer_context> · 100 chars ---",
    ]
    for view in (
        text,
        render_html(prompt),
        render_blame_text(prompt),
        ip.display_formatter.format(prompt)[0]["text/html"],
    ):
        assert "Stored_" not in view
    assert "[0:159] system[0] · 159 chars" in render_blame_text(prompt)
    # a trinket of its own is still named beside its section
    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00 --trinkets TimeManager")
    assert "--- datetime_section · TimeManager · " in render_text(ip.run_line_magic("compose", ""))
