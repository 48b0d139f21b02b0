"""Model profiles: each provider's caching rules and prices, as data.

A :class:`ModelProfile` holds everything the simulator needs to know about one model: which caching
*mode* its provider uses, prices per million tokens, the minimum cacheable prefix, how many
breakpoints a request may carry, how far a breakpoint looks back, the TTLs it offers, OpenAI's
128-token steps, Gemini's storage price, and when and where the figures were read. Prices change:
:func:`register_model` adds or replaces a profile at run time (``replace=True`` to override a
built-in one), and ``simulate(..., model=profile)`` takes a profile directly without registering it.

Modes
-----
``"breakpoints"``
    Anthropic: writes only at breakpoints, reads by looking back ``lookback`` blocks from each
    breakpoint, per-entry TTL refreshed on a hit, mixed-TTL billing (A/B/C), per-model minimum.
``"explicit_breakpoints"``
    OpenAI GPT-5.6 and later: the same write/read model with one TTL (30 minutes), no lookback limit,
    at most 4 breakpoints, an implicit breakpoint when a request marks none.
``"automatic"``
    OpenAI before GPT-5.6 and Gemini's implicit cache: every request of at least ``min_tokens``
    is cached as a whole; the next request reads the longest common prefix with a live entry,
    rounded down to ``min_tokens + step * k`` when ``step`` is set; writes cost nothing extra.
    Gemini also has explicit cached content (blocks marked ``"explicit"``), billed at creation at
    the input price plus ``storage`` per million tokens per hour of TTL.

Examples
--------
>>> MODELS["claude-sonnet-4-6"].write_5m
3.75
>>> get_model("claude-sonnet-9")
Traceback (most recent call last):
...
ValueError: unknown model 'claude-sonnet-9'; known models: claude-haiku-4-5, claude-opus-4-8, claude-sonnet-4-6, gemini-2.5-flash, gemini-2.5-pro, gpt-5.4, gpt-5.6
"""  # noqa: E501 - examples show their output line for line
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from types import MappingProxyType

from wm_kernel.tokens.registry import forget_counter, register_counter

MODES = ("breakpoints", "explicit_breakpoints", "automatic")
#: The model cache views price with when neither they nor the Session name one.
DEFAULT_MODEL = "claude-sonnet-4-6"


@dataclass(frozen=True)
class ModelProfile:
    """One model's caching rules and prices (US$ per million tokens); see the module docstring.

    ``ttls`` maps each TTL name a request may use to its lifetime, the default first. ``write_1h``
    is None where no one-hour write exists. ``lookback`` None means no limit. ``step`` is OpenAI's
    128-token rounding (None: none). ``storage`` is the per-million-tokens-per-hour price of
    explicit cached content (None: the provider has none). ``tokenizer`` names the token family that
    counts the model when its name does not tell (:func:`register_model` registers it).
    """

    name: str
    provider: str
    mode: str
    input: float
    write_5m: float
    read: float
    output: float
    min_tokens: int
    ttls: Mapping[str, timedelta]
    write_1h: float | None = None
    max_breakpoints: int = 4
    lookback: int | None = None
    step: int | None = None
    storage: float | None = None
    context_window: int | None = None
    max_output: int | None = None
    date_read: str = ""
    source: str = ""
    notes: str = field(default="", compare=False)
    #: the token family counting this model (``"o200k"``, ``"claude"``...; see
    #: ``wm_kernel.tokens.counter_for``); "" leaves it to the model name
    tokenizer: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"model name must be a non-empty string, got {self.name!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for what in ("input", "write_5m", "read", "output", "write_1h", "storage"):
            value = getattr(self, what)
            if value is None and what in ("write_1h", "storage"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ValueError(f"{self.name}: price {what} must be a non-negative number, got {value!r}")
        for what in ("min_tokens", "max_breakpoints", "lookback", "step", "context_window", "max_output"):
            value = getattr(self, what)
            if value is None and what in ("lookback", "step", "context_window", "max_output"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if what == "min_tokens" else 1):
                raise ValueError(f"{self.name}: {what} must be a positive int, got {value!r}")
        if not self.ttls or not all(isinstance(k, str) and isinstance(v, timedelta) and v > timedelta(0)
                                    for k, v in self.ttls.items()):
            raise ValueError(f"{self.name}: ttls must map names to positive timedeltas")
        object.__setattr__(self, "ttls", MappingProxyType(dict(self.ttls)))

    @property
    def default_ttl(self) -> str:
        """The TTL a breakpoint without an explicit one gets (the first of ``ttls``)."""
        return next(iter(self.ttls))

    def write_price(self, ttl: str) -> float:
        """Price per million tokens of writing an entry with ``ttl``."""
        if ttl == "1h" and self.write_1h is not None:
            return self.write_1h
        return self.write_5m

    def with_prices(self, **prices: float) -> ModelProfile:
        """A copy with some fields replaced (prices such as ``input`` or ``read``, or ``name``)."""
        return replace(self, **prices)  # type: ignore[arg-type]


_MIN = timedelta(minutes=1)
_ANTHROPIC_SOURCE = "https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching (and pricing)"
_ANTHROPIC_TTLS = {"5m": 5 * _MIN, "1h": 60 * _MIN}


def _anthropic(name: str, input: float, min_tokens: int, *, read: float | None = None,
               max_output: int = 64_000) -> ModelProfile:
    return ModelProfile(name=name, provider="anthropic", mode="breakpoints", input=input,
                        context_window=200_000, max_output=max_output,
                        write_5m=input * 1.25, write_1h=input * 2, read=input * 0.1 if read is None else read,
                        output=input * 5, min_tokens=min_tokens, ttls=_ANTHROPIC_TTLS, max_breakpoints=4,
                        lookback=20, date_read="2026-11", source=_ANTHROPIC_SOURCE)


_BUILTIN: tuple[ModelProfile, ...] = (
    _anthropic("claude-sonnet-4-6", 3.0, 1024),
    _anthropic("claude-opus-4-8", 5.0, 1024, max_output=32_000),
    _anthropic("claude-haiku-4-5", 1.0, 4096),
    ModelProfile(name="gpt-5.4", provider="openai", mode="automatic", input=2.5, write_5m=2.5, read=0.25,
                 output=15.0, min_tokens=1024, step=128, context_window=400_000, max_output=128_000,
                 # in_memory retention lasts minutes of inactivity; 5 is the documented lower bound
                 ttls={"in_memory": 5 * _MIN, "24h": 24 * 60 * _MIN}, max_breakpoints=4,
                 date_read="2026-11", source="https://platform.openai.com/docs/guides/prompt-caching",
                 notes="automatic prefix caching; writes are free; 1,024 + 128k token steps"),
    ModelProfile(name="gpt-5.6", provider="openai", mode="explicit_breakpoints", input=2.5, write_5m=2.5 * 1.25,
                 read=0.25, output=15.0, min_tokens=1024, ttls={"30m": 30 * _MIN}, max_breakpoints=4,
                 context_window=400_000, max_output=128_000,
                 date_read="2026-11", source="https://platform.openai.com/docs/guides/prompt-caching",
                 notes="prices assumed equal to gpt-5.4's; writes 1.25x input, 30-minute TTL"),
    ModelProfile(name="gemini-2.5-flash", provider="google", mode="automatic", input=0.30, write_5m=0.30,
                 read=0.03, output=2.50, min_tokens=1024, storage=1.00, context_window=1_048_576,
                 max_output=65_536,
                 # the implicit cache's lifetime is not documented: 5 minutes is an assumption
                 ttls={"implicit": 5 * _MIN, "explicit": 60 * _MIN}, date_read="2026-11",
                 source="https://ai.google.dev/gemini-api/docs/caching",
                 notes="implicit cache lifetime assumed 5 minutes; explicit cache TTL 1 hour by default"),
    ModelProfile(name="gemini-2.5-pro", provider="google", mode="automatic", input=1.25, write_5m=1.25,
                 read=0.125, output=10.0, min_tokens=4096, storage=4.50, context_window=1_048_576,
                 max_output=65_536,
                 ttls={"implicit": 5 * _MIN, "explicit": 60 * _MIN}, date_read="2026-11",
                 source="https://ai.google.dev/gemini-api/docs/caching",
                 notes="implicit cache lifetime assumed 5 minutes; prices for prompts up to 200k tokens"),
)

_registry: dict[str, ModelProfile] = {p.name: p for p in _BUILTIN}

#: Every known model id -> its profile (a read-only live view; add profiles with register_model).
MODELS: Mapping[str, ModelProfile] = MappingProxyType(_registry)


def register_model(profile: ModelProfile, *, replace: bool = False) -> ModelProfile:
    """Add ``profile`` under its name (``replace=True`` to override an existing one, e.g. new prices).

    >>> p = register_model(MODELS["claude-sonnet-4-6"].with_prices(input=2.0, name="my-sonnet"))
    >>> MODELS["my-sonnet"].input
    2.0
    >>> unregister_model("my-sonnet")
    """
    if not isinstance(profile, ModelProfile):
        raise TypeError(f"expected a ModelProfile, got {type(profile).__name__}")
    if profile.name in _registry and not replace:
        raise ValueError(f"model {profile.name!r} is already known; pass replace=True to override it")
    if profile.tokenizer:
        register_counter(profile.name, profile.tokenizer, replace=True)
    _registry[profile.name] = profile
    return profile


def unregister_model(name: str) -> None:
    """Forget a profile added with :func:`register_model` (a built-in one returns to its default)."""
    builtin = {p.name: p for p in _BUILTIN}
    if name in builtin:
        _registry[name] = builtin[name]
    elif _registry.pop(name, None) is None:
        raise ValueError(f"unknown model {name!r}")
    else:
        forget_counter(name)


def get_model(model: str | ModelProfile) -> ModelProfile:
    """The profile of ``model`` (a registered id, or a profile used as is)."""
    if isinstance(model, ModelProfile):
        return model
    if not isinstance(model, str):
        raise TypeError(f"model must be a model id or a ModelProfile, got {type(model).__name__}")
    try:
        return _registry[model]
    except KeyError:
        raise ValueError(f"unknown model {model!r}; known models: {', '.join(sorted(_registry))}") from None
