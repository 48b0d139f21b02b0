"""An imported log reconciled with the usage it recorded (or usage kept apart), through the
providers' one usage parser; the log's request bodies tell a provider's miss from an invalidation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wm_kernel.cachesim.simulation import simulate
from wm_kernel.interop import import_log
from wm_kernel.providers import Usage, parse_usage
from wm_kernel.providers.reconcile import reconcile

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"
BILLED = DATA / "support_anthropic_billed.jsonl"
CAUSES = [
    (0, "req_b0", "match", ""),
    (1, "req_b1", "match", ""),
    (
        2,
        "req_b2",
        "provider_miss",
        "prefix byte-identical to the previous request and live (1,857 tokens modelled as read); billed a write",
    ),
    (3, "req_b3", "prefix_changed", "parameters changed since the previous request"),
    (4, "req_b4", "ttl_priced", "55 write tokens billed at the 1h price where 5m was modelled"),
]


def causes(result: object) -> list[tuple[int, str, str, str]]:
    rows = result.rows  # type: ignore[attr-defined]
    return [(int(t), r, c, d) for t, r, c, d in rows[["turn", "request_id", "cause", "detail"]].values]


def test_the_logs_own_usage_is_reconciled_turn_by_turn_with_exact_causes() -> None:
    log = import_log(BILLED)
    result = reconcile(log)
    # turn 5's response was lost: simulated (the cache remembers it) but not reconciled
    assert causes(result) == CAUSES
    assert result.rows[["predicted_read", "billed_read", "predicted_write", "billed_write"]].values.tolist()[2] == [
        1857,
        0,
        33,
        1890,
    ]
    assert result.summary()["causes"] == {"match": 2, "provider_miss": 1, "prefix_changed": 1, "ttl_priced": 1}
    assert result.rows["residual_usd"].tolist()[:2] == [0.0, 0.0]


def test_without_the_request_bodies_a_miss_on_a_live_identical_prefix_is_the_providers() -> None:
    log = import_log(BILLED)
    bare = [u for u in log.billed_usage() if u is not None]
    bare = [
        Usage(
            u.provider,
            u.input_tokens,
            u.cache_read_tokens,
            u.cache_writes,
            u.output_tokens,
        )
        for u in bare
    ]
    simulation = simulate(log.cache_requests()[:5], log.cache_model())
    result = reconcile(simulation, bare)
    # the simulation holds turn 2's prefix live and identical: the provider's miss, even without
    # bodies; turn 3's changed parameters only the bodies show, so without them it reads as a miss too
    assert result.rows["cause"].tolist() == ["match", "match", "provider_miss", "provider_miss", "ttl_priced"]
    assert result.rows["detail"].tolist()[2] == (
        "the simulation holds the prefix live and identical (1,857 tokens modelled as read); billed a read of 0"
    )


def test_usage_kept_apart_aligns_by_request_id_and_takes_the_prefix_from_the_log(tmp_path: Path) -> None:
    # a billing export: responses only, shuffled, each with the request id; no request bodies
    lines = [json.loads(line) for line in BILLED.read_text(encoding="utf-8").splitlines()][:5]
    export = tmp_path / "billing.jsonl"
    export.write_text(
        "".join(
            json.dumps({"request_id": line["request_id"], "response": line["response"]}) + "\n"
            for line in reversed(lines)
        ),
        encoding="utf-8",
    )
    log = import_log(BILLED)
    assert log.request_ids == ["req_b0", "req_b1", "req_b2", "req_b3", "req_b4", "req_b5"]
    assert causes(reconcile(log, export, by="request_id")) == CAUSES
    with pytest.raises(ValueError) as caught:
        reconcile(log, export)
    assert str(caught.value) == (
        "the log has 6 requests but there are 5 usage records; align by request id, or give one record per request"
    )


def test_bad_alignments_are_one_clear_error(tmp_path: Path) -> None:
    log = import_log(BILLED)
    with pytest.raises(ValueError, match=r"^by= and request_ids= align usage given apart; the log's own usage"):
        reconcile(log, by="request_id")
    with pytest.raises(ValueError, match=r"^no usage record has a request id of the log's requests$"):
        reconcile(
            log,
            [{"request_id": "req_zz", "response": {"usage": {"input_tokens": 1, "output_tokens": 1}}}],
            by="request_id",
        )
    bodies = tmp_path / "bodies.jsonl"
    bodies.write_text(
        json.dumps(json.loads(BILLED.read_text(encoding="utf-8").splitlines()[-1])) + "\n", encoding="utf-8"
    )
    with pytest.raises(ValueError) as caught:
        reconcile(import_log(bodies))
    assert str(caught.value) == "the log records no usage; pass usage= (one record per request, or by request id)"


def test_the_parcelly_log_reads_as_a_steady_tokenizer_factor() -> None:
    result = reconcile(import_log(DATA / "support_anthropic.jsonl"))
    assert result.summary()["causes"] == {"tokenizer": 5}
    assert result.rows["billed_read"].tolist() == [0, 2040, 2040, 0, 2050]
    assert result.lines()[2] == "tokenizer factor 1.108 (billed / predicted tokens)"


def test_logged_usage_goes_through_the_providers_parser_in_every_shape() -> None:
    anthropic = import_log(BILLED).billed_usage()
    assert anthropic[4] == Usage(
        "anthropic",
        0,
        1857,
        {"1h": 55},
        40,
        model="claude-sonnet-4-6",
        request_id="req_b4",
        prefix=anthropic[4].prefix if anthropic[4] else {},
        line=None,
    )
    assert anthropic[5] is None
    chat = import_log(DATA / "support_openai_chat.jsonl").billed_usage()[1]
    assert (chat.provider, chat.input_tokens, chat.cache_read_tokens, chat.model) == ("openai", 84, 256, "gpt-5.4")
    assert set(chat.prefix) == {"tools", "system", "params"}
    foreign = import_log(DATA / "otlp_foreign.json").billed_usage()[1]
    assert (foreign.provider, foreign.input_tokens, foreign.cache_read_tokens, foreign.prefix) == (
        "anthropic",
        101,
        2200,
        {},
    )
    transcript = import_log(DATA / "claude_code_session.jsonl").billed_usage()
    assert [(u.request_id, u.cache_write_1h_tokens, u.prefix) for u in transcript if u] == [
        ("req_011A", 7465, {}),
        ("req_011B", 120, {}),
    ]


def test_parse_usage_reads_a_named_shape_and_refuses_an_unknown_one() -> None:
    assert (
        parse_usage({"input_tokens": 10, "output_tokens": 2}, shape="openai.responses").provider == "openai-responses"
    )
    with pytest.raises(ValueError, match=r"^line 3: unknown usage shape 'csv' \(shapes: anthropic, openai, "):
        parse_usage({"input_tokens": 1}, shape="csv", where="line 3")
    with pytest.raises(ValueError) as caught:
        parse_usage({"input_tokens": 10, "cache_read_input_tokens": 11}, shape="gen_ai")
    assert str(caught.value) == (
        "usage: cached (11) and written (0) tokens exceed input_tokens (10), which includes them"
    )
