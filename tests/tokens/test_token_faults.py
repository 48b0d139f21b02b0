"""Token counting under hostile input and faults (issue 34 item 14): a million spaces count (no Rust
panic slipping past ``except Exception``), a damaged count cache is a clear error or a recount, a bad
answer of the counting endpoint is a TokenCountError line, a negative cached count is never used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import pytest

from wm_kernel.tokens import counter_for
from wm_kernel.tokens.bpe import TiktokenTokenizer
from wm_kernel.tokens.providers import AnthropicTokenizer, CountCache, TokenCountError


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_a_million_spaces_count(encoding: str) -> None:
    tokenizer = TiktokenTokenizer(encoding)
    n = tokenizer.count(" " * 1_000_000)
    # 400,000 spaces are 3,125 tokens; a million about 7,813 (one token more per cut at most)
    assert 7_800 <= n <= 7_830
    assert counter_for("gpt-5.4").count("a" + " " * 1_000_000 + "b") >= n


def test_a_long_text_counts_as_it_does_whole() -> None:
    tokenizer = TiktokenTokenizer("o200k_base")
    text = "".join(f"Line {i}: the café's {i * 7} items\n  - and more/paths\n\n" for i in range(8_000))
    assert len(text) > 300_000
    assert tokenizer.count(text) == len(tokenizer.encoding.encode_ordinary(text))


def _client(answer: Any) -> anthropic.Anthropic:
    def endpoint(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answer)

    return anthropic.Anthropic(
        api_key="test-key", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(endpoint))
    )


@pytest.mark.parametrize("answer", [{"input_tokens": "many"}, {}, {"input_tokens": -5}, ["x"]])
def test_a_bad_answer_of_the_counting_endpoint_is_one_line(tmp_path: Path, answer: Any) -> None:
    tokenizer = AnthropicTokenizer("claude-sonnet-4-6", _client(answer), cache=tmp_path / "c.sqlite")
    with pytest.raises(
        TokenCountError,
        match=r"^anthropic count_tokens for claude-sonnet-4-6 answered "
        r"without a usable input_tokens \(",
    ):
        tokenizer.count("hello")
    assert len(tokenizer.cache) == 0  # nothing cached from it


def test_a_damaged_count_cache_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "counts.sqlite"
    path.write_bytes(b"this is not a SQLite database at all, just some bytes" * 20)
    with pytest.raises(
        ValueError,
        match=r"^the token count cache .*counts.sqlite is damaged \(file is not a "
        r"database\); delete it and the counts are asked again$",
    ):
        CountCache(path)


def test_a_negative_or_foreign_cached_count_is_counted_again(tmp_path: Path) -> None:
    path = tmp_path / "counts.sqlite"
    cache = CountCache(path)
    digest = CountCache.digest("hello")
    cache._db.execute("INSERT INTO counts VALUES (?, ?, ?)", ("claude-sonnet-4-6", digest, -40))
    assert cache.get("claude-sonnet-4-6", digest) is None
    cache._db.execute("UPDATE counts SET tokens = 'lots'")
    assert cache.get("claude-sonnet-4-6", digest) is None
    tokenizer = AnthropicTokenizer("claude-sonnet-4-6", _client({"input_tokens": 9}), cache=cache)
    assert tokenizer.count("hello") == 0  # 9 with the system text, 9 without: asked again, not -40
    assert cache.get("claude-sonnet-4-6", digest) == 0


def test_a_count_cache_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    from wm_kernel.tokens.providers import CountCacheError

    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    with pytest.raises(CountCacheError) as under_a_file:
        CountCache(tmp_path / "a-file" / "counts.sqlite")
    assert str(under_a_file.value) == (
        f"the token count cache {tmp_path / 'a-file' / 'counts.sqlite'} cannot be opened "
        "(a part of its folder's path is a file)"
    )
    with pytest.raises(CountCacheError, match=r"^the token count cache .* cannot be opened \(.* is a folder\)$"):
        CountCache(tmp_path)


@pytest.mark.parametrize(
    ("body", "why"),
    [(b"this is not JSON", "JSONDecodeError"), (b'{"input_tokens": 1' + b"0" * 30 + b"}", "usable input_tokens")],
    ids=["not JSON", "10**30 tokens"],
)
def test_a_count_reply_that_is_not_json_or_too_large_is_a_token_count_error(
    tmp_path: Path, body: bytes, why: str
) -> None:
    def endpoint(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    client = anthropic.Anthropic(
        api_key="test-key", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(endpoint))
    )
    tokenizer = AnthropicTokenizer("claude-sonnet-4-6", client, cache=tmp_path / "c.sqlite")
    with pytest.raises(TokenCountError, match=r"^anthropic count_tokens for claude-sonnet-4-6 ") as caught:
        tokenizer.count("hello")
    assert why in str(caught.value) and "\n" not in str(caught.value)
    assert len(tokenizer.cache) == 0


def test_a_count_too_large_for_the_cache_is_refused_in_one_line(tmp_path: Path) -> None:
    from wm_kernel.tokens.providers import CountCacheError

    cache = CountCache(tmp_path / "c.sqlite")
    with pytest.raises(CountCacheError, match=r"^a token count is a whole number from 0 to 1,000,000,000, got 1000"):
        cache.put("m", "d", 10**30)
    assert len(cache) == 0
