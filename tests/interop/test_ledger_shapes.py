"""One ledger on the usage shapes of real logs: each fact of ../shared/real-logs/README.md reproduced
with a fixture of our own, imported as a user would, its tokens and dollars checked by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from wm_kernel.interop import import_log
from wm_kernel.providers import reconcile
from wm_kernel.providers.pricing import price
from wm_kernel.tokens import EstimateTokenizer, TokenCounter


def envelopes(tmp_path: Path, *records: dict[str, Any]) -> Path:
    path = tmp_path / "log.envelope.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def anthropic_body(model: str | None = "claude-sonnet-4-6") -> dict[str, Any]:
    body: dict[str, Any] = {"max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    if model:
        body["model"] = model
    return body


def load(path: Path):  # type: ignore[no-untyped-def]
    return import_log(path, counter=TokenCounter(EstimateTokenizer()))


def test_a_server_side_compaction_bills_the_sum_of_its_iterations(tmp_path: Path) -> None:
    # the top level leaves the compaction step out: 229 input, 5 output; the bill is both steps
    usage = {
        "input_tokens": 229,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 5,
        "iterations": [
            {"type": "compaction", "input_tokens": 100, "cache_creation_input_tokens": 55096,
             "cache_read_input_tokens": 0, "output_tokens": 131,
             "cache_creation": {"ephemeral_5m_input_tokens": 55096, "ephemeral_1h_input_tokens": 0}},
            {"type": "message", "input_tokens": 229, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "output_tokens": 5},
        ],
    }  # fmt: skip
    log = load(
        envelopes(tmp_path, {"request": anthropic_body(), "response": {"model": "claude-sonnet-4-6", "usage": usage}})
    )
    [billed] = log.billed_usage()
    assert billed is not None
    assert (billed.input_tokens, billed.cache_writes, billed.output_tokens, billed.steps) == (
        329,
        {"5m": 55096},
        136,
        2,
    )
    # 329 x $3 + 55,096 x $3.75 + 136 x $15 per million: $0.2096, not the $0.0008 of the top level
    assert price(billed, "claude-sonnet-4-6").total_usd == pytest.approx(0.209637)


def test_litellm_counts_the_cache_inside_prompt_tokens_and_names_the_writes_beside_it(tmp_path: Path) -> None:
    usage = {
        "prompt_tokens": 4646,
        "completion_tokens": 177,
        "total_tokens": 4823,
        "prompt_tokens_details": {"cached_tokens": 3482},
        "cache_creation_input_tokens": 1158,
        "cache_read_input_tokens": 3482,
    }
    body = {
        "model": "claude-3-5-sonnet-20241022",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}],
    }
    log = load(
        envelopes(tmp_path, {"request": body, "response": {"model": "claude-3-5-sonnet-20241022", "usage": usage}})
    )
    [billed] = log.billed_usage()
    assert billed is not None
    # 1,158 writes are writes, not plain input; the 6 left are the plain input
    assert (billed.input_tokens, billed.cache_read_tokens, billed.cache_write_tokens) == (6, 3482, 1158)
    assert log.pricing()[0].profile.name == "claude-3-5-sonnet"
    expected = (6 * 3 + 3482 * 0.3 + 1158 * 3.75 + 177 * 15) / 1e6
    assert price(billed, log.pricing()[0].profile).total_usd == pytest.approx(expected)


def test_openrouter_names_and_billed_cost_are_read_and_agree_with_the_table(tmp_path: Path) -> None:
    usage = {
        "prompt_tokens": 2649,
        "completion_tokens": 100,
        "total_tokens": 2749,
        "cost": 0.00256995,
        "prompt_tokens_details": {"cached_tokens": 2569, "cache_write_tokens": 79},
    }
    body = {
        "model": "anthropic/claude-sonnet-4.6",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}],
    }
    log = load(
        envelopes(
            tmp_path, {"request": body, "response": {"model": "anthropic/claude-4.6-sonnet-20260217", "usage": usage}}
        )
    )
    [billed] = log.billed_usage()
    assert billed is not None and billed.billed_usd == 0.00256995
    chosen = log.pricing()[0]
    assert chosen.profile.name == "claude-sonnet-4-6" and chosen.note == ""
    # the writes OpenRouter names without a TTL are billed at the model's first: Claude's 5 minutes
    assert price(billed, chosen.profile).total_usd == pytest.approx(0.00256995, abs=1e-12)


def test_bedrock_converse_usage_and_the_model_from_the_url(tmp_path: Path) -> None:
    usage = {
        "inputTokens": 2,
        "outputTokens": 5,
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": 1322,
        "totalTokens": 1329,
    }
    body = {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "system": [{"text": "S"}, {"cachePoint": {"type": "default"}}],
    }
    url = (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    )
    log = load(envelopes(tmp_path, {"url": url, "request": body, "response": {"usage": usage}}))
    [billed] = log.billed_usage()
    assert billed is not None
    assert (billed.provider, billed.input_tokens, billed.cache_write_tokens, billed.output_tokens) == (
        "bedrock",
        2,
        1322,
        5,
    )
    assert log.requests[0].model == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert log.pricing()[0].profile.name == "claude-sonnet-4-5"
    assert price(billed, log.pricing()[0].profile).total_usd == pytest.approx((2 * 3 + 1322 * 3.75 + 5 * 15) / 1e6)


def test_gpt_5_6_writes_are_priced_at_its_30_minute_write_price(tmp_path: Path) -> None:
    usage = {
        "prompt_tokens": 4020,
        "completion_tokens": 4,
        "prompt_tokens_details": {"cache_write_tokens": 4012, "cached_tokens": 0},
    }
    body = {"model": "gpt-5.6-sol", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]}
    log = load(envelopes(tmp_path, {"request": body, "response": {"model": "gpt-5.6-sol", "usage": usage}}))
    [billed] = log.billed_usage()
    assert billed is not None and log.pricing()[0].profile.name == "gpt-5.6"
    assert price(billed, "gpt-5.6").total_usd == pytest.approx((8 * 5 + 4012 * 6.25 + 4 * 30) / 1e6)


def test_a_usage_holding_no_shape_is_one_error_naming_file_and_line_never_zeros(tmp_path: Path) -> None:
    path = envelopes(
        tmp_path,
        {"request": anthropic_body(), "response": {"usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"request": anthropic_body(), "response": {"usage": {"tokens": 7}}},
    )
    log = load(path)
    # the bad record is kept without its usage, and said; the other's figures stand
    assert len(log) == 2 and log.billed_usage()[1] is None and log.billed_usage()[0] is not None
    [issue] = log.errors
    assert str(issue) == (
        f"{path}:2: usage not read: {path}:2: not a usage record of Anthropic, OpenAI Chat (and LiteLLM, "
        "OpenRouter), OpenAI Responses, Gemini, Bedrock Converse (keys: tokens)"
    )


def test_an_unknown_models_dollars_are_missing_and_totals_say_how_many(tmp_path: Path) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 10}
    path = envelopes(
        tmp_path,
        {
            "timestamp": "2026-11-30T09:00:00Z",
            "request": anthropic_body("claude-haiku-4-5"),
            "response": {"usage": usage},
        },
        {"timestamp": "2026-11-30T09:01:00Z", "request": anthropic_body("claude-opus-5"), "response": {"usage": usage}},
    )
    log = load(path)
    assert [p.priced for p in log.pricing()] == [True, False]
    result = reconcile(log)
    assert math.isnan(result.summary()["billed_usd"]) and result.summary()["unpriced"] == 1
    assert "1 of 2 requests unpriced" in "\n".join(result.lines())
    sim = log.cache_simulation()
    assert sim.unpriced == 1 and math.isnan(sim.total_cost)
    assert any(line.startswith("unpriced: claude-opus-5 is not in the price table") for line in sim.assumptions)


def test_a_request_level_cache_control_is_a_breakpoint_on_the_last_cacheable_block(tmp_path: Path) -> None:
    # automatic caching: the body's own cache_control caches up to its last block, as a mark there
    first = {
        "cache_control": {"type": "ephemeral", "ttl": "5m"},
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Tell me about the parser. " * 200}]}],
        "system": "You review code.",
    }
    second = dict(
        first,
        messages=[
            *first["messages"],
            {"role": "assistant", "content": "It reads JSON."},
            {"role": "user", "content": "More."},
        ],
    )
    log = load(
        envelopes(
            tmp_path,
            {"timestamp": "2026-11-30T09:00:00Z", "request": first},
            {"timestamp": "2026-11-30T09:01:00Z", "request": second},
        )
    )
    assert [[(s.name, s.cache) for s in log.sections(t) if s.cache] for t in log.turns] == [
        [("msg[0] user [0] text", "5m")],
        [("msg[2] user", "5m")],
    ]
    sim = log.cache_simulation()
    written = int(sim.turns["cache_creation_input_tokens"].iloc[0])
    assert written > 1024 and int(sim.turns["cache_read_input_tokens"].iloc[1]) == written


def test_openrouters_own_bill_is_shown_beside_the_kits_dollars(tmp_path: Path) -> None:
    usage = {
        "prompt_tokens": 2572,
        "completion_tokens": 63,
        "cost": 0.01058775,
        "prompt_tokens_details": {"cache_write_tokens": 2569, "cached_tokens": 0},
    }
    body = {"model": "anthropic/claude-sonnet-4.6", "messages": [{"role": "user", "content": "hi"}]}
    log = load(
        envelopes(tmp_path, {"request": body, "response": {"model": "anthropic/claude-sonnet-4.6", "usage": usage}})
    )
    result = reconcile(log)
    assert result.rows.loc[0, "provider_usd"] == 0.01058775
    assert (
        "the provider's own bill for 1 of 1 requests (its usage.cost): $0.010588; priced here $0.010588 "
        "(prompt and output)"
    ) in result.lines()


@pytest.mark.parametrize("bad", [-1, "12", True, 10**30, 1.5])
def test_a_bad_count_is_an_issue_of_its_line_and_the_rest_keeps_its_figures(tmp_path: Path, bad: object) -> None:
    good = {"input_tokens": 5, "output_tokens": 1}
    path = envelopes(
        tmp_path,
        {"request": anthropic_body(), "response": {"usage": good}},
        {"request": anthropic_body(), "response": {"usage": {**good, "cache_read_input_tokens": bad}}},
    )
    log = load(path)
    assert [u is not None for u in log.billed_usage()] == [True, False]
    [issue] = log.errors
    assert (issue.line, issue.message.split(": ", 1)[0]) == (2, "usage not read")
    assert "cache_read_input_tokens must be a non-negative int of at most 1,000,000,000,000" in issue.message
    # summary, reconcile and the trace work for the whole log
    assert len(log.summary()) == 2
    assert len(reconcile(log).rows) == 1
