"""Token counting: offline BPE, the labelled estimate, the content cache and its call counter."""

from __future__ import annotations

import sys

import pytest

import wm_kernel.tokens.counting as counting
from wm_kernel.tokens import EstimateTokenizer, TiktokenTokenizer, TokenCounter, Tokenizer, default_tokenizer


@pytest.fixture
def no_network(monkeypatch):
    """Load the encoding from scratch with sockets refused and tiktoken's file cache off."""
    import socket

    import tiktoken.registry

    def refuse(*args, **kwargs):
        raise AssertionError("tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})


def test_offline_tiktoken_counts_real_bpe_tokens(no_network):
    tok = TiktokenTokenizer()
    assert tok.name == "tiktoken cl100k_base"
    assert isinstance(tok, Tokenizer)
    assert tok.count("Hello world, this is a test.") == 8
    assert tok.count("") == 0
    # special-token text in a prompt is ordinary text: counted, never an error
    assert tok.count("<|endoftext|>") == 7


def test_encodings_that_would_download_are_refused():
    with pytest.raises(
        ValueError,
        match="^encoding 'p50k_base' is not on disk: tiktoken would download "
        "it; use one of cl100k_base, o200k_base or pass a tiktoken.Encoding$",
    ):
        TiktokenTokenizer("p50k_base")
    with pytest.raises(ValueError, match="^unknown offline encoding 'nope_offline'; on disk: cl100k_base, o200k_base$"):
        TiktokenTokenizer("nope_offline")


def test_default_is_tiktoken_offline_and_the_estimate_without_tiktoken(monkeypatch):
    monkeypatch.setattr(counting, "_default", None)
    assert default_tokenizer().name == "tiktoken cl100k_base"
    monkeypatch.setattr(counting, "_default", None)
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken now raises ImportError
    fallback = default_tokenizer()
    assert isinstance(fallback, EstimateTokenizer)
    assert fallback.name == "estimate (chars/4)"
    assert TokenCounter().name == "estimate (chars/4)"
    assert [fallback.count("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def test_counter_tokenizes_each_distinct_text_once():
    seen = []

    class Spy:
        name = "spy"

        def count(self, text):
            seen.append(text)
            return len(text.split())

    counter = TokenCounter(Spy())
    texts = ["a b c", "a b c", "d e", "a b" + " c", "d e"]
    assert [counter.count(t) for t in texts] == [3, 3, 2, 3, 2]
    assert seen == ["a b c", "d e"]
    assert (counter.calls, counter.hits, len(counter)) == (2, 3, 2)
    assert counter.name == "spy"
    counter.clear()
    counter.count("d e")
    assert counter.calls == 3


def test_a_tokenizer_needs_a_name_and_count():
    class Nameless:
        def count(self, text):
            return 1

    with pytest.raises(TypeError, match="^tokenizer must have a name"):
        TokenCounter(Nameless())
    with pytest.raises(TypeError, match="^can only count tokens of a str, got bytes$"):
        TokenCounter(EstimateTokenizer()).count(b"abc")


def test_an_unhashable_text_is_the_same_clear_error():
    with pytest.raises(TypeError, match=r"^can only count tokens of a str, got list$"):
        TokenCounter(EstimateTokenizer()).count(["abc"])  # type: ignore[arg-type]


def test_a_new_tokenizer_forgets_the_counts_of_the_old_one():
    class Words:
        name = "words"

        def count(self, text):
            return len(text.split())

    counter = TokenCounter(EstimateTokenizer())
    assert counter.count("one two three four") == 5
    counter.tokenizer = Words()
    assert (counter.count("one two three four"), counter.name, len(counter)) == (4, "words", 1)
    with pytest.raises(TypeError, match="^tokenizer must have a name"):
        counter.tokenizer = object()  # type: ignore[assignment]
    assert counter.name == "words"
