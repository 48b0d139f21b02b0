"""Usage in (every provider's shape, SDK objects, dicts, JSON Lines) and the pricing conformance table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wm_kernel.cachesim.models import MODELS
from wm_kernel.dialects.usage import request_prefix
from wm_kernel.providers import Usage, parse_usage, read_usage
from wm_kernel.providers.pricing import price

ANTHROPIC = {
    "id": "msg_01XYZ",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-8",
    "content": [{"type": "text", "text": "Checking."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 50,
        "cache_creation_input_tokens": 1200,
        "cache_read_input_tokens": 100000,
        "output_tokens": 87,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 1000},
        "service_tier": "standard",
    },
}
CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-5.4",
    "choices": [],
    "usage": {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 128},
    },
}
RESPONSES = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-5.6",
    "output": [],
    "usage": {
        "input_tokens": 2006,
        "input_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 900},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 128},
        "total_tokens": 2306,
    },
}
GEMINI = {
    "modelVersion": "gemini-2.5-flash",
    "usageMetadata": {
        "promptTokenCount": 5200,
        "cachedContentTokenCount": 4096,
        "candidatesTokenCount": 210,
        "thoughtsTokenCount": 350,
        "toolUsePromptTokenCount": 0,
        "totalTokenCount": 5760,
    },
}


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (ANTHROPIC, Usage("anthropic", 50, 100000, {"5m": 200, "1h": 1000}, 87, model="claude-opus-4-8")),
        (ANTHROPIC["usage"], Usage("anthropic", 50, 100000, {"5m": 200, "1h": 1000}, 87)),
        (CHAT, Usage("openai", 86, 1920, {}, 300, model="gpt-5.4")),
        (RESPONSES, Usage("openai-responses", 82, 1024, {"default": 900}, 300, model="gpt-5.6")),
        (GEMINI, Usage("gemini", 1104, 4096, {}, 560, model="gemini-2.5-flash")),
        (
            {
                "usage_metadata": {
                    "prompt_token_count": 10,
                    "cached_content_token_count": 4,
                    "candidates_token_count": 2,
                }
            },
            Usage("gemini", 6, 4, {}, 2),
        ),
        (
            {
                "input_tokens": 7,
                "output_tokens": 3,
                "cache_creation_input_tokens": None,
                "cache_read_input_tokens": None,
            },
            Usage("anthropic", 7, 0, {}, 3),
        ),
    ],
    ids=["anthropic", "anthropic-usage", "chat", "responses", "gemini", "gemini-snake", "anthropic-nulls"],
)
def test_every_provider_shape_parses(record: dict[str, object], expected: Usage) -> None:
    assert parse_usage(record) == expected


def test_sdk_objects_parse() -> None:
    import anthropic.types
    import openai.types.chat

    message = anthropic.types.Message.model_validate(ANTHROPIC)
    assert parse_usage(message).cache_write_1h_tokens == 1000
    assert parse_usage(message.usage).prompt_tokens == 101250
    completion = openai.types.chat.ChatCompletion.model_validate(CHAT)
    assert parse_usage(completion).cache_read_tokens == 1920


def test_a_jsonl_file_of_raw_responses(tmp_path: Path) -> None:
    request = {"model": "claude-opus-4-8", "max_tokens": 10, "system": "S", "messages": []}
    lines = [
        json.dumps(ANTHROPIC),
        "",
        json.dumps(CHAT),
        json.dumps({"request_id": "req_9", "request": request, "response": GEMINI}),
    ]
    path = tmp_path / "usage.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = read_usage(path)
    assert [(u.provider, u.line, u.request_id) for u in found] == [
        ("anthropic", 1, None),
        ("openai", 3, None),
        ("gemini", 4, "req_9"),
    ]
    assert found[2].prefix == request_prefix(request)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"id": "x", "tokens": 5}',
            "usage.jsonl line 2: not a usage record of Anthropic, OpenAI Chat (and LiteLLM, OpenRouter), "
            "OpenAI Responses, Gemini, Bedrock Converse (keys: id, tokens)",
        ),
        ("not json", "usage.jsonl line 2: not JSON (Expecting value)"),
        (
            '{"usage": {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 11}}}',
            "usage.jsonl line 2: cached (11) and written (0) tokens exceed prompt_tokens (10), which includes them",
        ),
        (
            '{"input_tokens": -1, "output_tokens": 1}',
            "usage.jsonl line 2: input_tokens must be a non-negative int of at most 1,000,000,000,000, got -1",
        ),
        ("[1, 2]", "usage.jsonl line 2: expected a response or usage object, got list"),
    ],
)
def test_a_record_that_is_not_usage_is_one_error_naming_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "usage.jsonl"
    path.write_text(json.dumps(ANTHROPIC) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_usage(path)
    assert str(error.value) == message


# -- pricing conformance: each case is usage and the dollars it must cost, with the mistake it guards.
# Prices per million tokens: claude-sonnet-4-6 input 3, write 5m 3.75, write 1h 6, read 0.30, output 15;
# gpt-5.4 input 2.50, read 0.25, output 15; gpt-5.6 write 3.125; gemini-2.5-flash input 0.30, read 0.03,
# output 2.50.
CONFORMANCE = [
    # (case, model, usage record, dollars)
    (
        "plain input and output",
        "claude-sonnet-4-6",
        {"input_tokens": 1000, "output_tokens": 100},
        1000 * 3e-6 + 100 * 15e-6,
    ),
    (
        "cache writes are billed (not omitted)",
        "claude-sonnet-4-6",
        {"input_tokens": 10, "cache_creation_input_tokens": 10000, "output_tokens": 0},
        10 * 3e-6 + 10000 * 3.75e-6,
    ),
    (
        "1h writes at the 1h price, not the 5m one",
        "claude-sonnet-4-6",
        {
            "input_tokens": 0,
            "cache_creation_input_tokens": 10000,
            "output_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 10000},
        },
        10000 * 6e-6,
    ),
    (
        "mixed 5m and 1h writes",
        "claude-sonnet-4-6",
        {
            "input_tokens": 50,
            "cache_creation_input_tokens": 1200,
            "cache_read_input_tokens": 100000,
            "output_tokens": 87,
            "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 1000},
        },
        50 * 3e-6 + 200 * 3.75e-6 + 1000 * 6e-6 + 100000 * 0.3e-6 + 87 * 15e-6,
    ),
    (
        "Anthropic reads are not also input",
        "claude-sonnet-4-6",
        {"input_tokens": 100, "cache_read_input_tokens": 100000, "output_tokens": 0},
        100 * 3e-6 + 100000 * 0.3e-6,
    ),
    (
        "OpenAI cached tokens are inside prompt_tokens (not input and read)",
        "gpt-5.4",
        {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920},
        },
        86 * 2.5e-6 + 1920 * 0.25e-6 + 300 * 15e-6,
    ),
    (
        "OpenAI Responses: cached and written inside input_tokens",
        "gpt-5.6",
        {
            "input_tokens": 2006,
            "input_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 900},
            "output_tokens": 300,
            "total_tokens": 2306,
        },
        82 * 5e-6 + 1024 * 0.5e-6 + 900 * 6.25e-6 + 300 * 30e-6,  # gpt-5.6: prices.md
    ),
    (
        "Gemini cached content inside promptTokenCount; thoughts are output",
        "gemini-2.5-flash",
        {
            "usageMetadata": {
                "promptTokenCount": 5200,
                "cachedContentTokenCount": 4096,
                "candidatesTokenCount": 210,
                "thoughtsTokenCount": 350,
                "totalTokenCount": 5760,
            }
        },
        1104 * 0.3e-6 + 4096 * 0.03e-6 + 560 * 2.5e-6,
    ),
]


@pytest.mark.parametrize(("case", "model", "record", "dollars"), CONFORMANCE, ids=[c[0] for c in CONFORMANCE])
def test_pricing_conformance(case: str, model: str, record: dict[str, object], dollars: float) -> None:
    assert price(parse_usage(record), model).total_usd == pytest.approx(dollars, rel=1e-12)


def test_the_mistakes_cost_what_they_would_cost() -> None:
    """The peers' mistakes give other figures: these differences are what the table guards."""
    one_hour = parse_usage(CONFORMANCE[2][2])
    assert price(one_hour, "claude-sonnet-4-6").total_usd - 10000 * MODELS["claude-sonnet-4-6"].writes[
        "5m"
    ] / 1e6 == pytest.approx(0.0225)
    chat = parse_usage(CONFORMANCE[5][2])
    double_counted = (2006 * 2.5 + 1920 * 0.25 + 300 * 15) / 1e6
    assert double_counted - price(chat, "gpt-5.4").total_usd == pytest.approx(1920 * 2.5e-6)


def test_a_1h_write_on_a_model_without_a_1h_price_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^gpt-5.4 has no 1h cache write price \(its TTLs: in_memory, 24h\)$"):
        price(Usage("openai", 0, 0, {"1h": 5}, 0), "gpt-5.4")
