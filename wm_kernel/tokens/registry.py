"""Which counter counts for which model: ``counter_for(model)``, and what a user registers.

A model resolves to a *family* (its tokenizer): a model registered with :func:`register_counter`
first, then the name rules below (so every model the cache simulator knows has one, and so does
any later model of the same families):

======================  ===============  =================================================
model names             family           counter
======================  ===============  =================================================
``gpt-4o``, ``gpt-4.1``, ``o200k``          tiktoken o200k_base, exact, offline
``gpt-4.5``, ``gpt-5*``,
``o1``, ``o3``, ``o4``
``gpt-4``, ``gpt-3.5``   ``cl100k``       tiktoken cl100k_base, exact, offline
``claude-*``            ``claude``       ≈ o200k × 1.25 (−10%/+20%), or the counting endpoint
``gemini-*``            ``gemini``       ≈ o200k × 1.0 (−15%/+15%), or its SentencePiece file
======================  ===============  =================================================

Exact counts for Claude are opt-in (they ask Anthropic's API): pass ``client=`` (an
``anthropic.Anthropic``), or ``exact=True``, or set ``WM_KERNEL_ANTHROPIC_COUNT=1`` (the SDK then reads
``ANTHROPIC_API_KEY``). Gemini counts exactly when given ``sentencepiece_model=`` or
``WM_KERNEL_GEMINI_TOKENIZER`` (the path of its tokenizer file). A calibration
(:func:`wm_kernel.tokens.calibration.calibrate`) replaces a model's factor and band.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from wm_kernel.tokens.counting import Band, EstimateTokenizer, ScaledTokenizer, TokenCounter, Tokenizer

#: Environment variables that opt in to exact counts needing more than the package.
ANTHROPIC_ENV = "WM_KERNEL_ANTHROPIC_COUNT"
GEMINI_ENV = "WM_KERNEL_GEMINI_TOKENIZER"

#: The estimate of each family without a tokenizer of its own: (base encoding, factor, band).
FAMILY_ESTIMATES: dict[str, tuple[str, float, Band]] = {
    "claude": (
        "o200k_base",
        1.25,
        Band(
            -0.10,
            0.20,
            "Anthropic publishes no tokenizer since Claude 3; third-party comparisons put "
            "Claude counts at about 1.2-1.5x OpenAI's o200k on the same text (2024-06 to 2026-06). "
            "Not measured here: calibrate() with billed counts replaces it",
            "2026-11",
        ),
    ),
    "gemini": (
        "o200k_base",
        1.0,
        Band(
            -0.15,
            0.15,
            "assumption: Gemini's 262k-entry SentencePiece vocabulary (gemma3) splits "
            "English text about as o200k does; unmeasured",
            "2026-11",
        ),
    ),
}

# (prefix, family), first match wins: longer prefixes before the shorter ones they start with
_RULES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k"),
    ("gpt-4.1", "o200k"),
    ("gpt-4.5", "o200k"),
    ("gpt-5", "o200k"),
    ("chatgpt-4o", "o200k"),
    ("o1", "o200k"),
    ("o3", "o200k"),
    ("o4", "o200k"),
    ("gpt-4", "cl100k"),
    ("gpt-3.5", "cl100k"),
    ("text-embedding-3", "cl100k"),
    ("claude-", "claude"),
    ("gemini-", "gemini"),
)
#: The families counted exactly offline by their own encoding: family -> tiktoken encoding.
BPE_FAMILIES = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
FAMILIES = (*BPE_FAMILIES, *FAMILY_ESTIMATES)

TokenizerFactory = Callable[[str], Tokenizer]
# model -> a family name, a tokenizer, or a factory(model) -> tokenizer
_registered: dict[str, str | Tokenizer | TokenizerFactory] = {}
# model -> (factor, band) from a calibration, over the family's base encoding
_calibrated: dict[str, tuple[float, Band]] = {}
_tokenizers: dict[str, Tokenizer] = {}


def _bpe(encoding: str) -> Tokenizer:
    found = _tokenizers.get(encoding)
    if found is None:
        from wm_kernel.tokens.bpe import TiktokenTokenizer

        found = _tokenizers[encoding] = TiktokenTokenizer(encoding)
    return found


def family_of(model: str) -> str:
    """The family of ``model`` (a registered family, else the name rules); ValueError if none."""
    if not isinstance(model, str) or not model.strip():
        raise TypeError(f"model must be a non-empty str, got {model!r}")
    registered = _registered.get(model)
    if isinstance(registered, str):
        return registered
    if registered is not None:
        return "registered"
    for prefix, family in _RULES:
        if model.startswith(prefix):
            return family
    raise ValueError(
        f"no token counter for model {model!r}: register one with register_counter({model!r}, tokenizer_or_family)"
    )


def register_counter(model: str, counter: str | Tokenizer | TokenizerFactory, *, replace: bool = False) -> None:
    """Count ``model`` with ``counter``: a family name (``"o200k"``, ``"claude"``...), a tokenizer
    (``name`` and ``count``; declare ``exact = False`` and a ``band`` for an estimate), or a
    factory ``f(model) -> tokenizer``. ``replace=True`` to override an earlier registration."""
    if not isinstance(model, str) or not model.strip():
        raise TypeError(f"model must be a non-empty str, got {model!r}")
    if isinstance(counter, str):
        if counter not in FAMILIES:
            raise ValueError(f"unknown token family {counter!r}; families: {', '.join(FAMILIES)}")
    elif not isinstance(counter, Tokenizer) and not callable(counter):
        raise TypeError(f"counter must be a family name, a tokenizer or a factory, got {counter!r}")
    known = _registered.get(model)
    if known is not None and known != counter and not replace:
        raise ValueError(f"model {model!r} already has a counter; pass replace=True to override it")
    _registered[model] = counter


def unregister_counter(model: str) -> None:
    """Forget a counter registered for ``model`` (its name rules apply again)."""
    if _registered.pop(model, None) is None:
        raise ValueError(f"no counter registered for model {model!r}")


def forget_counter(model: str) -> None:
    """:func:`unregister_counter` that is silent when nothing was registered."""
    _registered.pop(model, None)


def _model_key(model: str) -> str:
    """Where a model's own tokenizer (a calibrated one) is kept among the encodings' (in memory)."""
    return f"model:{model}"


def set_calibration(model: str, factor: float, band: Band) -> None:
    """Estimate ``model`` as its family's base encoding times ``factor``, with ``band`` (a
    calibration's result; ``Calibration.apply()`` calls this)."""
    ScaledTokenizer(EstimateTokenizer(), factor, band)  # the same checks
    _calibrated[model] = (float(factor), band)
    _tokenizers.pop(_model_key(model), None)


def clear_calibration(model: str) -> None:
    """Back to the family's estimate for ``model``."""
    _calibrated.pop(model, None)
    _tokenizers.pop(_model_key(model), None)


def base_encoding(model: str) -> str:
    """The BPE encoding an estimate for ``model`` scales (or that counts it exactly)."""
    family = family_of(model)
    if family in FAMILY_ESTIMATES:
        return FAMILY_ESTIMATES[family][0]
    if family in BPE_FAMILIES:
        return BPE_FAMILIES[family]
    return "o200k_base"


def estimate_tokenizer(model: str) -> Tokenizer:
    """The offline estimate for ``model``: its calibration if any, else its family's factor."""
    key = _model_key(model)
    found = _tokenizers.get(key)
    if found is not None:
        return found
    family = family_of(model)
    calibrated = _calibrated.get(model)
    if calibrated is not None:
        base, (factor, band) = base_encoding(model), calibrated
    elif family in FAMILY_ESTIMATES:
        base, factor, band = FAMILY_ESTIMATES[family]
    else:
        return tokenizer_for(model)
    try:
        found = ScaledTokenizer(_bpe(base), factor, band, family=model)
    except (ImportError, ValueError):
        found = ScaledTokenizer(EstimateTokenizer(), factor * 1.0, _widen(band), family=model)
    _tokenizers[key] = found
    return found


def _widen(band: Band) -> Band:
    """The band of an estimate whose base is chars/4 instead of a BPE (no tiktoken installed)."""
    return Band(
        min(band.low - 0.4, -0.5), band.high + 0.8, band.source + "; counted as chars/4 without tiktoken", band.date
    )


def _anthropic_exact(
    model: str, *, client: Any, exact: bool | None, sentencepiece_model: Any, **options: Any
) -> Tokenizer | None:
    """Anthropic's counting endpoint, when asked for (``client``, ``exact=True`` or the environment)."""
    wanted = (
        exact
        if exact is not None
        else (client is not None or os.environ.get(ANTHROPIC_ENV, "") in ("1", "true", "yes"))
    )
    if wanted:
        from wm_kernel.tokens.providers import AnthropicTokenizer

        return AnthropicTokenizer(model, client, **options)
    if client is not None:
        raise ValueError("client= asks for exact counts; it cannot go with exact=False")
    return None


def _sentencepiece_exact(
    model: str, *, client: Any, exact: bool | None, sentencepiece_model: Any, **options: Any
) -> Tokenizer | None:
    """The model's SentencePiece file, when given (``sentencepiece_model=`` or the environment)."""
    path = sentencepiece_model if sentencepiece_model is not None else os.environ.get(GEMINI_ENV) or None
    if path is not None:
        from wm_kernel.tokens.providers import SentencePieceTokenizer

        return SentencePieceTokenizer(path, name=f"sentencepiece {os.path.basename(str(path))} ({model})")
    if exact:
        raise ValueError(f"exact counts for {model} need its SentencePiece file: sentencepiece_model= or ${GEMINI_ENV}")
    return None


#: How a family counts exactly, beyond the package (its answer None: the family's estimate). The
#: families with an offline encoding of their own are :data:`BPE_FAMILIES`; every other family is
#: estimated (:data:`FAMILY_ESTIMATES`) unless it is here and its counter answers.
EXACT_COUNTERS: dict[str, Callable[..., Tokenizer | None]] = {
    "claude": _anthropic_exact,
    "gemini": _sentencepiece_exact,
}


def tokenizer_for(
    model: str,
    *,
    client: Any = None,
    exact: bool | None = None,
    sentencepiece_model: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Tokenizer:
    """The tokenizer :func:`counter_for` counts ``model`` with (see the module docstring)."""
    registered = _registered.get(model)
    if registered is not None and not isinstance(registered, str):
        return registered if isinstance(registered, Tokenizer) else registered(model)
    family = family_of(model)
    if family in BPE_FAMILIES:
        return estimate_tokenizer(model) if model in _calibrated else _bpe(BPE_FAMILIES[family])
    exact_counter = EXACT_COUNTERS.get(family)
    if exact_counter is not None:
        found = exact_counter(model, client=client, exact=exact, sentencepiece_model=sentencepiece_model, **options)
        if found is not None:
            return found
    return estimate_tokenizer(model)


def counter_for(
    model: str,
    *,
    client: Any = None,
    exact: bool | None = None,
    sentencepiece_model: str | os.PathLike[str] | None = None,
    **options: Any,
) -> TokenCounter:
    """A new TokenCounter for ``model`` (tokenizers are loaded once per process and shared).

    ``client``/``exact``/``options`` (``cache``, ``max_concurrency``) choose Anthropic's counting
    endpoint for Claude models; ``sentencepiece_model`` Gemini's tokenizer file.

    >>> counter_for("gpt-4o").label, counter_for("gpt-4").label
    ('tiktoken o200k_base', 'tiktoken cl100k_base')
    >>> counter_for("claude-sonnet-4-6").label
    '≈ claude-sonnet-4-6 (tiktoken o200k_base × 1.25) −10%/+20%'
    """
    tokenizer = tokenizer_for(model, client=client, exact=exact, sentencepiece_model=sentencepiece_model, **options)
    return TokenCounter(tokenizer, model=model)
