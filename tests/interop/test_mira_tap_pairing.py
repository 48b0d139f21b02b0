"""Pairing a MIRA tap when two calls of one model start at the same instant (issue 45 item 4): the
response goes to its own request by what the bodies and responses hold (the answer, in the next
request's history), and a pairing nothing decides is an import issue, never a guess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mira_tap_files import CHAT, T0, Tap, background_body, compose, load, message, mira_body, session

from wm_kernel.tokens import EstimateTokenizer, TokenCounter

COUNT = TokenCounter(EstimateTokenizer())
REPLY = "Rent is due on the first of the month."


def tokens(body: dict[str, Any]) -> int:
    return COUNT.count(json.dumps(body, ensure_ascii=False))


def memory_call_like(chat: dict[str, Any]) -> dict[str, Any]:
    """A background call on the chat model whose prompt is a little larger than the chat turn's:
    the sizes alone cannot tell the two apart."""
    text = "Extract memories. "
    while tokens(background_body(CHAT, text)) < tokens(chat) * 1.1:
        text += "Extract memories. "
    return background_body(CHAT, text)


def concurrent_tap(folder: Path, *, next_turn: bool, chat_says: str = REPLY) -> tuple[Tap, dict[str, Any]]:
    """Turn 1; then turn 2 and a same-model memory call sent at one instant, the memory call's
    answer written first, each reporting an input between the two prompts' sizes; then (when
    ``next_turn``) turn 3, whose history holds turn 2's answer as MIRA stores it."""
    prompt = compose(session())
    tap = Tap(folder)
    tap.request(T0, mira_body(prompt, [], "[9:00am] Hi"))
    tap.response(T0 + 2, CHAT, message(CHAT, (10, 0, 4000), output=11, text="Hello Ada."))
    history = [("user", "[9:00am] Hi"), ("assistant", "[9:00am] Hello Ada.")]
    chat = mira_body(prompt, history, "[9:01am] And rent?")
    memory = memory_call_like(chat)
    between = round((tokens(chat) * tokens(memory)) ** 0.5)
    tap.request(T0 + 60, chat)
    tap.request(T0 + 60, memory)
    tap.response(T0 + 63, CHAT, message(CHAT, (between, 0, 0), output=33, text="[]"))
    tap.response(T0 + 64, CHAT, message(CHAT, (between, 0, 0), output=22, text=chat_says))
    if next_turn:
        history += [("user", "[9:01am] And rent?"), ("assistant", f"[9:01am] {REPLY}")]
        tap.request(T0 + 120, mira_body(prompt, history, "[9:02am] Thanks"))
        tap.response(T0 + 122, CHAT, message(CHAT, (10, 4000, 0), output=44))
    return tap, memory


def test_the_next_requests_history_pairs_each_call_with_its_own_response(tmp_path: Path) -> None:
    tap, _ = concurrent_tap(tmp_path, next_turn=True)
    log = load(tap.requests)
    assert [str(e) for e in log.errors] == []
    # turn 2 got its own answer, not the memory call's (written first, at a size nearer turn 2's)
    assert [int(n) for n in log.usage["output_tokens"]] == [11, 22, 44]
    assert [(r.lines, r.usage["output_tokens"] if r.usage else None) for r in log.background] == [((3,), 33)]


def test_mira_s_stored_answer_without_the_tags_it_acted_on_still_pairs(tmp_path: Path) -> None:
    # the model's answer carries a tag MIRA acts on and leaves out of the history: the turn's own
    # answer is not excluded by it, and the memory call's "[]" is; the last one left is the turn's
    tagged = f"{REPLY}\n<mira:my_emotion>🙂</mira:my_emotion>"
    tap, _ = concurrent_tap(tmp_path, next_turn=True, chat_says=tagged)
    log = load(tap.requests)
    assert [str(e) for e in log.errors] == []
    assert [int(n) for n in log.usage["output_tokens"]] == [11, 22, 44]
    assert [r.usage["output_tokens"] if r.usage else None for r in log.background] == [33]


def test_a_pairing_nothing_decides_is_an_import_issue_not_a_guess(tmp_path: Path) -> None:
    tap, _ = concurrent_tap(tmp_path, next_turn=False)  # no later request: no history to read
    log = load(tap.requests)
    could = "(sent at the same instant; neither their sizes nor the history of a later request tells which): not paired"
    assert [str(e) for e in log.errors] == [
        f"{tap.requests}:2: no response pairs with this request (anthropic, {CHAT}); imported without usage",
        f"{tap.requests}:3: no response pairs with this request (anthropic, {CHAT}); imported without usage",
        f"{tap.responses}:2: a response (anthropic, {CHAT}) that could answer the requests on lines 2, 3 of "
        f"llm_requests.jsonl {could}",
        f"{tap.responses}:3: a response (anthropic, {CHAT}) that could answer the requests on lines 2, 3 of "
        f"llm_requests.jsonl {could}",
    ]
    # both calls still import, without usage; turn 1 keeps its own
    assert log.usage["output_tokens"].tolist()[0] == 11 and log.usage["output_tokens"].isna().tolist() == [False, True]
    assert [r.usage for r in log.background] == [None]


def test_sizes_far_apart_still_decide_at_the_same_instant(tmp_path: Path) -> None:
    prompt = compose(session())
    tap = Tap(tmp_path)
    chat = mira_body(prompt, [], "[9:00am] Hi")
    tap.request(T0, chat)
    tap.request(T0, background_body(CHAT, "Extract memories."))
    tap.response(T0 + 1, CHAT, message(CHAT, (tokens(chat), 0, 0), output=22, text="Hello."))
    tap.response(T0 + 2, CHAT, message(CHAT, (30, 0, 0), output=33, text="[]"))
    log = load(tap.requests)
    assert [str(e) for e in log.errors] == []
    assert [int(n) for n in log.usage["output_tokens"]] == [22]
    assert [r.usage["output_tokens"] if r.usage else None for r in log.background] == [33]


def test_the_histories_are_read_once_and_only_when_two_calls_could_take_a_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wm_kernel.interop.mira import pairing

    reads: list[int] = []
    read = pairing.continuations
    monkeypatch.setattr(pairing, "continuations", lambda requests: reads.append(len(requests)) or read(requests))
    (tmp_path / "a").mkdir()
    one_at_a_time = Tap(tmp_path / "a")
    prompt = compose(session())
    for turn in range(3):
        one_at_a_time.request(T0 + 60 * turn, mira_body(prompt, [], f"[9:0{turn}am] Message {turn}"))
        one_at_a_time.response(T0 + 60 * turn + 2, CHAT, message(CHAT, (10, 0, 4000)))
    assert load(one_at_a_time.requests).errors == () and reads == []
    (tmp_path / "b").mkdir()
    tap, _ = concurrent_tap(tmp_path / "b", next_turn=True)
    assert load(tap.requests).errors == () and reads == [4]  # the tap's four requests, once
