"""Token counts per model: exact where they can be had, an honest band where not.

Every figure wm-kernel shows (costs, cache hits, budget cuts, cache minimums) rests on these
counts. See docs/tokens.md for the whole picture.

Public API
----------
``counter_for(model, *, client=None, exact=None, sentencepiece_model=None)``
    A :class:`TokenCounter` for ``model``: OpenAI models count with their own encoding (o200k or
    cl100k, exact, offline); Claude with an estimate (o200k × a family factor, with its band) unless
    the user opts in to Anthropic's counting endpoint; Gemini with its SentencePiece file when given,
    else an estimate (:mod:`wm_kernel.tokens.registry`).
``register_counter(model, family_or_tokenizer)``
    Count any other model (a family name, a tokenizer, or a factory).
``calibrate(model, pairs)``
    Fit a model's factor from billed counts; later estimates use it (:mod:`.calibration`).
``TokenCounter(tokenizer=None, *, model=None)``
    Counts through a tokenizer, remembering the count of every distinct text; says ``exact``,
    ``band``, ``interval(n)`` and ``label`` (the name, with "≈" and the band for an estimate).
``Tokenizer``, ``Band``, ``EstimateTokenizer``, ``ScaledTokenizer``, ``TiktokenTokenizer``,
``AnthropicTokenizer``, ``SentencePieceTokenizer``, ``CountCache``, ``TokenCountError``
    The parts.
``default_tokenizer()``
    The counter without a model: offline tiktoken cl100k, else the chars/4 estimate.

Examples
--------
>>> counter = TokenCounter(EstimateTokenizer())
>>> counter.count("twelve chars"), counter.count("twelve chars"), counter.calls, counter.hits
(3, 3, 1, 1)
>>> counter.name
'estimate (chars/4)'
"""

from __future__ import annotations

from wm_kernel.tokens.bpe import OFFLINE_ENCODING, TiktokenTokenizer
from wm_kernel.tokens.calibration import Calibration, calibrate
from wm_kernel.tokens.counting import (
    Band,
    EstimateTokenizer,
    ScaledTokenizer,
    TokenCounter,
    Tokenizer,
    default_tokenizer,
)
from wm_kernel.tokens.providers import (
    AnthropicTokenizer,
    CountCache,
    SentencePieceTokenizer,
    TokenCountError,
)
from wm_kernel.tokens.registry import (
    ANTHROPIC_ENV,
    FAMILY_ESTIMATES,
    GEMINI_ENV,
    counter_for,
    family_of,
    register_counter,
    tokenizer_for,
    unregister_counter,
)

__all__ = [
    "ANTHROPIC_ENV",
    "AnthropicTokenizer",
    "Band",
    "Calibration",
    "CountCache",
    "EstimateTokenizer",
    "FAMILY_ESTIMATES",
    "GEMINI_ENV",
    "OFFLINE_ENCODING",
    "ScaledTokenizer",
    "SentencePieceTokenizer",
    "TiktokenTokenizer",
    "TokenCountError",
    "TokenCounter",
    "Tokenizer",
    "calibrate",
    "counter_for",
    "default_tokenizer",
    "family_of",
    "register_counter",
    "tokenizer_for",
    "unregister_counter",
]
