"""The money of a log that does not hold the whole request: a Claude-Code-shaped transcript (made
here) with no system prompt, tools or cache marks, whose usage bills what the agent really sent.
Each request is priced with its own model, the missing part is inferred from the usage and shown
as its own owner, the agent's caching is modelled from what the usage shows, and reconcile names
the cause of every turn."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from wm_kernel.interop import import_log
from wm_kernel.interop.imported import INFERRED_SECTION
from wm_kernel.providers.reconcile import reconcile
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

SYSTEM = 20_000  # the agent's system prompt and tools, which the transcript does not hold
FACTOR = 1.2  # the provider counts the conversation 1.2x what the counter here does
SUB_SYSTEM = 6_000  # the subagent's own system prompt
T0 = datetime(2026, 11, 30, 12, tzinfo=UTC)
OPUS, HAIKU, SONNET = "claude-opus-4-6", "claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"
# (minutes after T0, model, what the provider's cache did: "first" / "live" / "miss" (read only the
# system prompt although the rest was live: the agent changed text it does not log) / "deep" (read
# into the logged conversation although the rest was live: the provider's own miss) / "cold" (wrote
# everything) / "compacted" (a new chain)
MAIN = [
    (0, OPUS, "first"),
    (1, OPUS, "live"),
    (2, OPUS, "miss"),
    (150, OPUS, "cold"),
    (151, HAIKU, "cold"),
    (152, HAIKU, "live"),
    (153, HAIKU, "compacted"),
]
# the subagent's system prompt was cached before the log (an earlier session wrote it)
SUB = [(1.5, SONNET, "warm"), (1.7, SONNET, "live")]


def counter() -> TokenCounter:
    return TokenCounter(EstimateTokenizer())


def write(
    path: Path,
    turns: list[tuple[float, str, str]],
    billed: list[dict[str, Any]] | None,
    session: str = "5e551000-0000-4000-8000-000000000000",
    sidechain: bool = False,
) -> None:
    lines, parent = [], None
    for n, (minutes, model, kind) in enumerate(turns):
        at = T0 + timedelta(minutes=minutes)
        if kind == "compacted":
            parent = None
        user = {
            "type": "user",
            "uuid": f"u{n}",
            "parentUuid": parent,
            "sessionId": session,
            "isSidechain": sidechain,
            "timestamp": at.isoformat().replace("+00:00", "Z"),
            "message": {
                "role": "user",
                "content": ("Summary of the work so far. " if kind == "compacted" else f"Step {n}: ")
                + "please look at the parser. " * 400,
            },
        }
        usage = billed[n] if billed is not None else {"input_tokens": 1, "output_tokens": 1}
        reply = {
            "type": "assistant",
            "uuid": f"a{n}",
            "parentUuid": f"u{n}",
            "sessionId": session,
            "isSidechain": sidechain,
            "requestId": f"req_{path.stem[-6:]}{n}",  # an API response's ids are its own, in any file
            "timestamp": (at + timedelta(seconds=5)).isoformat().replace("+00:00", "Z"),
            "message": {
                "id": f"msg_{path.stem[-6:]}{n}",
                "role": "assistant",
                "model": model,
                "stop_reason": "end_turn",
                "usage": usage,
                "content": [{"type": "text", "text": f"Done with step {n}. " * 300}],
            },
        }
        lines += [user, reply]
        parent = f"a{n}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def bills(counted: list[int], turns: list[tuple[float, str, str]], system: int) -> list[dict[str, Any]]:
    """What the provider billed: the agent caches every request (1-hour writes)."""
    out, previous = [], 0
    for count, (_, _, kind) in zip(counted, turns, strict=True):
        total = system + round(FACTOR * count)
        read = {
            "first": 0,
            "cold": 0,
            "live": previous,
            "miss": system,
            "deep": system + 2_000,
            "compacted": system,
            "warm": system,
        }[kind]
        out.append(
            {
                "input_tokens": 0,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": total - read,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": total - read},
                "output_tokens": 50,
            }
        )
        previous = total
    return out


@pytest.fixture
def transcript(tmp_path: Path) -> tuple[Path, Path]:
    main = tmp_path / "5e551000-0000-4000-8000-000000000000.jsonl"
    sub = tmp_path / "5e551000-0000-4000-8000-000000000000" / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    for path, turns, system in ((main, MAIN, SYSTEM), (sub, SUB, SUB_SYSTEM)):
        write(path, turns, None, sidechain=path is sub)
        draft = import_log(path, counter=counter())
        counted = [sum(draft.counter.count(s.text) for s in draft.sections(t)) for t in draft.turns]
        write(path, turns, bills(counted, turns, system), sidechain=path is sub)
    return main, sub


def test_the_missing_system_prompt_is_inferred_from_the_usage_and_shown_as_its_own_owner(
    transcript: tuple[Path, Path],
) -> None:
    main, _ = transcript
    log = import_log(main, counter=counter(), subagents=False)  # the session alone
    (found,) = log.inferred().values()
    assert (found.tokens, found.factor, found.requests, found.ttl) == (
        pytest.approx(SYSTEM, abs=2),
        pytest.approx(FACTOR, abs=0.001),
        7,
        "1h",
    )
    assert found.label == f"system prompt and tools, not in the log: about {found.tokens:,} tokens, from the usage"
    rows = log.history[log.history["section"] == INFERRED_SECTION]
    assert rows["turn"].tolist() == list(range(7)) and set(rows["tokens"]) == {found.tokens}
    assert set(rows["trinket"]) == {"(not in the log)"}
    sim = log.cache_simulation()
    assert any(line.startswith(found.label) for line in str(sim).splitlines())
    # the agent's own caching as the usage shows it: the simulated hit rate follows the billed one
    billed = [u for u in log.billed_usage() if u is not None]
    billed_rate = sum(u.cache_read_tokens for u in billed) / sum(u.prompt_tokens for u in billed)
    assert sim.hit_rate == pytest.approx(billed_rate, abs=0.05)


def test_each_request_is_priced_with_its_own_model_and_every_turn_gets_a_named_cause(
    transcript: tuple[Path, Path],
) -> None:
    main, sub = transcript
    log = import_log(main, sub, counter=counter())
    result = reconcile(log)
    rows = result.rows
    assert rows["model"].tolist() == [
        "claude-opus-4-6",
        "claude-opus-4-6",
        "claude-sonnet-4-5",
        "claude-sonnet-4-5",
        "claude-opus-4-6",
        "claude-opus-4-6",
        "claude-haiku-4-5",
        "claude-haiku-4-5",
        "claude-haiku-4-5",
    ]
    assert rows["cause"].tolist() == [
        "match",
        "match",
        "subagent",
        "match",
        "prefix_changed",
        "ttl_expired",
        "model_switch",
        "match",
        "compaction",
    ]
    assert rows.loc[5, "detail"].startswith("a pause of 148 min since the previous request, over the 60 min TTL")
    assert rows.loc[6, "detail"].startswith("claude-opus-4-6 -> claude-haiku-4-5: a provider caches per model")
    assert rows.loc[2, "billed_read"] == SUB_SYSTEM
    assert rows.loc[2, "predicted_read"] == pytest.approx(SUB_SYSTEM, abs=2)
    assert any(
        line.endswith(
            f"its first request read {SUB_SYSTEM:,} tokens cached before the log, modelled as cached just before it"
        )
        for line in result.lines()
    )
    table = str(log.cache_simulation()).splitlines()
    header = next(line for line in table if line.split()[:3] == ["turn", "request", "model"])
    assert table[table.index(header) + 7].split()[2] == "claude-haiku-4-5"
    # the read fell to the system prompt's end: the agent rewrote what follows, modelled so
    assert rows.loc[4, "detail"].startswith(
        f"the provider read only the first {SYSTEM:,} tokens although the rest was live: the agent "
        f"changed what follows them, in the part its log does not hold (modelled from the usage"
    )
    assert rows.loc[4, "predicted_read"] == pytest.approx(SYSTEM, abs=2)
    assert rows.loc[4, "predicted_usd"] == pytest.approx(rows.loc[4, "billed_usd"], rel=0.02)
    assert log.rewrites() == {4: SYSTEM}
    summary = result.summary()
    assert summary["named_share"] == 1.0
    assert summary["predicted_usd"] == pytest.approx(summary["billed_usd"], rel=0.02)
    # the haiku turns are billed at haiku's prices: a 1-hour write at $2 per million
    haiku = rows.loc[6]
    assert haiku["billed_usd"] == pytest.approx(haiku["billed_write"] * 2.0 / 1e6)
    assert rows.loc[0, "billed_usd"] == pytest.approx(rows.loc[0, "billed_write"] * 10.0 / 1e6)  # opus 1h: $10


def test_a_read_that_falls_inside_the_logged_conversation_is_the_providers_miss(tmp_path: Path) -> None:
    turns = [(0, OPUS, "first"), (1, OPUS, "live"), (2, OPUS, "deep"), (3, OPUS, "live")]
    path = tmp_path / "deep.jsonl"
    write(path, turns, None)
    draft = import_log(path, counter=counter())
    write(
        path,
        turns,
        bills([sum(draft.counter.count(s.text) for s in draft.sections(t)) for t in draft.turns], turns, SYSTEM),
    )
    log = import_log(path, counter=counter())
    assert log.rewrites() == {}  # the log holds that text, unchanged: the agent did not rewrite it
    rows = reconcile(log).rows
    assert rows["cause"].tolist()[2] == "provider_miss"
    assert rows.loc[2, "billed_read"] == SYSTEM + 2_000 and rows.loc[2, "predicted_read"] > SYSTEM + 2_000


def test_an_unknown_model_is_unpriced_never_priced_as_another_and_said(tmp_path: Path) -> None:
    body = {"model": "claude-3-sonnet-20240229", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "envelopes.jsonl"
    path.write_text(
        json.dumps(
            {
                "timestamp": "2026-11-30T09:00:00Z",
                "request": body,
                "response": {"model": "claude-3-sonnet-20240229", "usage": {"input_tokens": 1000, "output_tokens": 10}},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    log = import_log(path, counter=counter())
    note = (
        "unpriced: claude-3-sonnet-20240229 is not in the price table; add its price with "
        "register_model(MODELS['claude-sonnet-4-6'].with_prices(name='claude-3-sonnet-20240229', input=..., "
        "read=..., writes={...}, output=...)) from wm_kernel.cachesim"
    )
    result = reconcile(log)
    assert result.lines()[0] == (
        "claude-3-sonnet-20240229: 1 turns; predicted unpriced, billed unpriced (prompt side), residual unpriced"
    )
    assert "1 of 1 requests unpriced: their model is not in the price table (the notes say which); " in "\n".join(
        result.lines()
    )
    assert note in result.lines() and note in result.summary()["notes"]
    assert math.isnan(result.summary()["billed_usd"]) and result.summary()["unpriced"] == 1
    assert result.rows.loc[0, "detail"].endswith(note)
    sim = log.cache_simulation()
    assert note in str(sim).splitlines() and math.isnan(sim.total_cost)
    assert "input cost unpriced (1 of 1 requests' models are not in the price table)" in str(sim).splitlines()
    assert log.summary()["priced_as"].tolist() == ["unpriced"]


def test_a_log_without_send_times_is_simulated_and_reconciled_at_the_gap_given(tmp_path: Path) -> None:
    body = {
        "model": "gpt-4o-mini-2024-07-18",
        "messages": [{"role": "system", "content": "Rules. " * 2000}, {"role": "user", "content": "hi"}],
    }
    path = tmp_path / "bodies.jsonl"
    path.write_text((json.dumps(body) + "\n") * 3, encoding="utf-8")
    log = import_log(path, counter=counter())
    default = log.cache_simulation()  # 30 s apart when nothing says, and said in one line
    assert (
        "send times assumed: the log has none; requests in file order 30 s apart, the default "
        "(pass gap= or times= to set them)"
    ) in default.assumptions
    said = "send times assumed: the log has none; requests in file order 60 s apart (gap=)"
    sim = log.cache_simulation(gap=60)
    assert said in str(sim).splitlines() and said in sim.headline()
    assert [t.isoformat() for t in sim.turns["at"]][:2] == ["2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00"]
    assert sim.models[0].name == "gpt-4o-mini"
    kept = import_log(path, counter=counter(), gap=timedelta(minutes=1))
    assert said in kept.cache_simulation().assumptions
    usage = [
        {"prompt_tokens": int(n), "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}}
        for n in sim.turns["prompt_tokens"]
    ]
    result = reconcile(log, usage, gap=60)
    assert said in result.lines()
    # OpenAI reports no writes: fewer cached tokens than the simulation's live identical prefix is the miss
    assert result.rows["cause"].tolist() == ["match", "provider_miss", "provider_miss"]
    assert result.rows.loc[1, "detail"] == (
        "prefix byte-identical to the previous request and live (3,456 tokens modelled as read); billed a read of 0"
    )


def test_one_bill_per_session_in_every_view(transcript: tuple[Path, Path], ip: Any) -> None:
    # an imported session (two models, a subagent): the log's simulation, its replayed session's,
    # %cache on it and reconcile's predicted side are one bill: the same models, tokens and dollars
    from wm_kernel import current_session

    main, _ = transcript
    ip.run_line_magic("wm_import", f"'{main}'")
    session = current_session()
    log = session.replayed.log
    own = log.cache_simulation()
    replayed = session.cache_simulation()
    shown = ip.run_line_magic("cache", "--no-advice")
    for other in (replayed, shown.simulation):
        assert [m.name for m in other.models] == [m.name for m in own.models]
        assert other.turns["prompt_tokens"].tolist() == own.turns["prompt_tokens"].tolist()
        assert other.total_cost == pytest.approx(own.total_cost, rel=1e-12)
    assert {m.name for m in own.models} == {"claude-opus-4-6", "claude-sonnet-4-5", "claude-haiku-4-5"}
    assert reconcile(log).summary()["predicted_usd"] == pytest.approx(own.total_cost, rel=1e-12)
    assert session.model == "claude-opus-4-6"  # the log's own, not the kit's default
    # %request shows the logged request, and names what the log lacks and the cost views count
    view = ip.run_line_magic("request", "")
    assert repr(view).startswith(f"turn {session.turn}, anthropic request for claude-opus-4-6: ")
    assert any(
        line.startswith("not in the log, so not in this request: system prompt and tools") for line in view.notes()
    )
