"""Model profiles: each provider's caching rules and prices, as data.

A :class:`ModelProfile` holds everything the simulator needs to know about one model: which caching
*mode* its provider uses, prices per million tokens, the minimum cacheable prefix, how many
breakpoints a request may carry, how far a breakpoint looks back, the TTLs it offers, OpenAI's
128-token steps, Gemini's storage price, and when and where the figures were read. Prices change:
:func:`register_model` adds or replaces a profile at run time (``replace=True`` to override a
built-in one), and ``simulate(..., model=profile)`` takes a profile directly without registering it.

Every profile carries where its prices were read (``source``) and when (``date_read``); a price
the project's references (``cache_rules.md``, ``provider_formats.md``) do not give says so in its
``notes``. A dated snapshot id (``claude-haiku-4-5-20251001``) is priced as its family
(:func:`family_name`); :func:`priced_as` says "priced as X: model Y unknown" for any other id.

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
>>> get_model("claude-haiku-4-5-20251001").name
'claude-haiku-4-5'
>>> get_model("claude-sonnet-9")
Traceback (most recent call last):
...
ValueError: unknown model 'claude-sonnet-9'; known models: claude-haiku-4-5, claude-opus-4-1, claude-opus-4-5, claude-opus-4-6, claude-opus-4-8, claude-sonnet-4, claude-sonnet-4-5, claude-sonnet-4-6, gemini-2.5-flash, gemini-2.5-pro, gpt-4.1, gpt-4.1-mini, gpt-4.1-nano, gpt-4o, gpt-4o-mini, gpt-5.4, gpt-5.6
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

import math
import re
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
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{self.name}: price {what} must be a non-negative number, got {value!r}")
        for what in ("min_tokens", "max_breakpoints", "lookback", "step", "context_window", "max_output"):
            value = getattr(self, what)
            if value is None and what in ("lookback", "step", "context_window", "max_output"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if what == "min_tokens" else 1):
                raise ValueError(f"{self.name}: {what} must be a positive int, got {value!r}")
        if not self.ttls or not all(
            isinstance(k, str) and isinstance(v, timedelta) and v > timedelta(0) for k, v in self.ttls.items()
        ):
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
#: Where the prices of the models the project's own references do not list were read (third-party
#: copies of the providers' pages, read through the search tool; the reference files are
#: ../shared/reference/cache_rules.md and provider_formats.md).
_ANTHROPIC_PAGES = (
    "https://docs.anthropic.com/en/docs/about-claude/pricing (stored copy) and "
    "third-party price tables (deploybase.ai claude-api-pricing, 2026-03; tokr pricing.toml)"
)
_NOT_IN_REFERENCES = "price not in the project's references (cache_rules.md lists it not); read from "


def _anthropic(
    name: str,
    input: float,
    min_tokens: int,
    *,
    read: float | None = None,
    max_output: int = 64_000,
    date_read: str = "2026-11",
    source: str = _ANTHROPIC_SOURCE,
    notes: str = "",
) -> ModelProfile:
    return ModelProfile(
        name=name,
        provider="anthropic",
        mode="breakpoints",
        input=input,
        context_window=200_000,
        max_output=max_output,
        write_5m=input * 1.25,
        write_1h=input * 2,
        read=input * 0.1 if read is None else read,
        output=input * 5,
        min_tokens=min_tokens,
        ttls=_ANTHROPIC_TTLS,
        max_breakpoints=4,
        lookback=20,
        date_read=date_read,
        source=source,
        notes=notes,
    )


def _anthropic_read_elsewhere(
    name: str, input: float, min_tokens: int, *, max_output: int = 64_000, minimum: str = ""
) -> ModelProfile:
    note = (
        _NOT_IN_REFERENCES + _ANTHROPIC_PAGES + " on 2026-12-01; writes 1.25x / 2x and reads 0.1x input "
        "as cache_rules.md states for Anthropic"
    )
    if minimum:
        note += f"; {minimum}"
    return _anthropic(
        name, input, min_tokens, max_output=max_output, date_read="2026-12-01", source=_ANTHROPIC_PAGES, notes=note
    )


_OPENAI_CACHING = "https://openai.com/index/api-prompt-caching/ (stored copy, read 2026-12-01)"
_OPENAI_PRICES = (
    "third-party copies of https://platform.openai.com/docs/pricing (deploybase.ai openai-pricing "
    "2026-03, aumiqx 2026-04)"
)


def _openai_automatic(
    name: str, input: float, read: float, output: float, *, context: int, max_output: int, source: str, note: str
) -> ModelProfile:
    return ModelProfile(
        name=name,
        provider="openai",
        mode="automatic",
        input=input,
        write_5m=input,
        read=read,
        output=output,
        min_tokens=1024,
        step=128,
        context_window=context,
        max_output=max_output,
        ttls={"in_memory": 5 * _MIN, "24h": 24 * 60 * _MIN},
        max_breakpoints=4,
        date_read="2026-12-01",
        source=source,
        notes=_NOT_IN_REFERENCES + note + "; automatic prefix caching as gpt-5.4's "
        "(1,024 + 128k token steps, writes free)",
    )


_BUILTIN: tuple[ModelProfile, ...] = (
    _anthropic("claude-sonnet-4-6", 3.0, 1024),
    _anthropic("claude-opus-4-8", 5.0, 1024, max_output=32_000),
    _anthropic("claude-haiku-4-5", 1.0, 4096),
    _anthropic_read_elsewhere(
        "claude-opus-4-6", 5.0, 4096, max_output=128_000, minimum="minimum 4,096 tokens from cache_rules.md"
    ),
    _anthropic_read_elsewhere("claude-opus-4-5", 5.0, 4096, minimum="minimum 4,096 tokens from cache_rules.md"),
    _anthropic_read_elsewhere("claude-sonnet-4-5", 3.0, 1024, minimum="minimum 1,024 (Sonnet 4.x) from cache_rules.md"),
    _anthropic_read_elsewhere("claude-sonnet-4", 3.0, 1024, minimum="minimum 1,024 (Sonnet 4.x) from cache_rules.md"),
    _anthropic_read_elsewhere(
        "claude-opus-4-1", 15.0, 1024, max_output=32_000, minimum="minimum 1,024 (Opus 4.1) from cache_rules.md"
    ),
    ModelProfile(
        name="gpt-5.4",
        provider="openai",
        mode="automatic",
        input=2.5,
        write_5m=2.5,
        read=0.25,
        output=15.0,
        min_tokens=1024,
        step=128,
        context_window=400_000,
        max_output=128_000,
        # in_memory retention lasts minutes of inactivity; 5 is the documented lower bound
        ttls={"in_memory": 5 * _MIN, "24h": 24 * 60 * _MIN},
        max_breakpoints=4,
        date_read="2026-11",
        source="https://platform.openai.com/docs/guides/prompt-caching",
        notes="automatic prefix caching; writes are free; 1,024 + 128k token steps",
    ),
    ModelProfile(
        name="gpt-5.6",
        provider="openai",
        mode="explicit_breakpoints",
        input=2.5,
        write_5m=2.5 * 1.25,
        read=0.25,
        output=15.0,
        min_tokens=1024,
        ttls={"30m": 30 * _MIN},
        max_breakpoints=4,
        context_window=400_000,
        max_output=128_000,
        date_read="2026-11",
        source="https://platform.openai.com/docs/guides/prompt-caching",
        notes="prices assumed equal to gpt-5.4's (the references give none); writes 1.25x input, 30-minute TTL",
    ),
    _openai_automatic(
        "gpt-4o",
        2.5,
        1.25,
        10.0,
        context=128_000,
        max_output=16_384,
        source=_OPENAI_CACHING,
        note="OpenAI's prompt-caching announcement (gpt-4o-2024-08-06: 2.50 / cached 1.25 / 10.00)",
    ),
    _openai_automatic(
        "gpt-4o-mini",
        0.15,
        0.075,
        0.60,
        context=128_000,
        max_output=16_384,
        source=_OPENAI_CACHING,
        note="OpenAI's prompt-caching announcement (gpt-4o-mini-2024-07-18: 0.15 / cached 0.075 / 0.60)",
    ),
    _openai_automatic(
        "gpt-4.1",
        2.0,
        0.50,
        8.0,
        context=1_047_576,
        max_output=32_768,
        source=_OPENAI_PRICES,
        note=_OPENAI_PRICES + " (input 2.00, output 8.00; cached 0.50 = 75% off, as those tables give it)",
    ),
    _openai_automatic(
        "gpt-4.1-mini",
        0.40,
        0.10,
        1.60,
        context=1_047_576,
        max_output=32_768,
        source=_OPENAI_PRICES,
        note=_OPENAI_PRICES + " (input 0.40, cached 0.10, output 1.60)",
    ),
    _openai_automatic(
        "gpt-4.1-nano",
        0.10,
        0.025,
        0.40,
        context=1_047_576,
        max_output=32_768,
        source=_OPENAI_PRICES,
        note=_OPENAI_PRICES + " (input 0.10, output 0.40; cached 0.025 assumed at 75% off like gpt-4.1's)",
    ),
    ModelProfile(
        name="gemini-2.5-flash",
        provider="google",
        mode="automatic",
        input=0.30,
        write_5m=0.30,
        read=0.03,
        output=2.50,
        min_tokens=1024,
        storage=1.00,
        context_window=1_048_576,
        max_output=65_536,
        # the implicit cache's lifetime is not documented: 5 minutes is an assumption
        ttls={"implicit": 5 * _MIN, "explicit": 60 * _MIN},
        date_read="2026-11",
        source="https://ai.google.dev/gemini-api/docs/caching",
        notes="implicit cache lifetime assumed 5 minutes; explicit cache TTL 1 hour by default; "
        "output price not in the references",
    ),
    ModelProfile(
        name="gemini-2.5-pro",
        provider="google",
        mode="automatic",
        input=1.25,
        write_5m=1.25,
        read=0.125,
        output=10.0,
        min_tokens=4096,
        storage=4.50,
        context_window=1_048_576,
        max_output=65_536,
        ttls={"implicit": 5 * _MIN, "explicit": 60 * _MIN},
        date_read="2026-11",
        source="https://ai.google.dev/gemini-api/docs/caching",
        notes="implicit cache lifetime assumed 5 minutes; prices for prompts up to 200k tokens; "
        "input, read and output prices not in the references (only storage 4.50 is)",
    ),
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


_SNAPSHOT = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|-v\d+(?::\d+)?|\[[^\]]*\])$")


def family_name(model: str) -> str | None:
    """The registered id ``model`` stands for: itself, or the family of a dated snapshot or alias
    (``claude-haiku-4-5-20251001`` -> ``claude-haiku-4-5``, ``gpt-4o-mini-2024-07-18`` ->
    ``gpt-4o-mini``, ``claude-sonnet-4-5-latest``, ``claude-opus-4-6[1m]``, ``models/gemini-2.5-pro``);
    None when no registered profile fits.

    >>> family_name("claude-haiku-4-5-20251001"), family_name("gpt-4o-mini-2024-07-18"), family_name("gpt-9")
    ('claude-haiku-4-5', 'gpt-4o-mini', None)
    """
    if not isinstance(model, str):
        return None
    name = model.strip()
    if name in _registry:
        return name
    name = name.removeprefix("models/").removeprefix("anthropic.").removeprefix("openai/")
    while name and name not in _registry:
        shorter = _SNAPSHOT.sub("", name)
        if shorter == name:
            return None
        name = shorter
    return name or None


def get_model(model: str | ModelProfile) -> ModelProfile:
    """The profile of ``model`` (a registered id or a dated snapshot of one, see
    :func:`family_name`; or a profile used as is)."""
    if isinstance(model, ModelProfile):
        return model
    if not isinstance(model, str):
        raise TypeError(f"model must be a model id or a ModelProfile, got {type(model).__name__}")
    found = family_name(model)
    if found is None:
        raise ValueError(f"unknown model {model!r}; known models: {', '.join(sorted(_registry))}")
    return _registry[found]


@dataclass(frozen=True)
class Priced:
    """The profile a request of ``model`` is priced with, and why: ``note`` is "" when it is the
    model's own (or its family's), else "priced as X: model Y unknown"."""

    requested: str | None
    profile: ModelProfile
    note: str = ""

    @property
    def substituted(self) -> bool:
        return bool(self.note)


def priced_as(model: str | ModelProfile | None, fallback: str | ModelProfile = DEFAULT_MODEL) -> Priced:
    """The profile ``model`` is priced with: its own, its family's, else ``fallback``'s, said.

    >>> priced_as("claude-opus-4-6").profile.name
    'claude-opus-4-6'
    >>> priced_as("claude-3-sonnet-20240229").note
    'priced as claude-sonnet-4-6: model claude-3-sonnet-20240229 unknown'
    >>> priced_as(None).note
    'priced as claude-sonnet-4-6: the log names no model'
    """
    if isinstance(model, ModelProfile):
        return Priced(model.name, model)
    found = family_name(model) if isinstance(model, str) else None
    if found is not None:
        return Priced(model, _registry[found])
    substitute = get_model(fallback)
    why = f"model {model} unknown" if isinstance(model, str) and model.strip() else "the log names no model"
    return Priced(model if isinstance(model, str) else None, substitute, f"priced as {substitute.name}: {why}")
