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
>>> MODELS["claude-sonnet-4-6"].writes["5m"]
3.75
>>> get_model("claude-haiku-4-5-20251001").name
'claude-haiku-4-5'
>>> get_model("claude-sonnet-9")
Traceback (most recent call last):
...
ValueError: unknown model 'claude-sonnet-9'; known models: claude-3-5-haiku, claude-3-5-sonnet, claude-3-7-sonnet, claude-fable-5, claude-haiku-4-5, claude-opus-4-1, claude-opus-4-5, claude-opus-4-6, claude-opus-4-7, claude-opus-4-8, claude-sonnet-4, claude-sonnet-4-5, claude-sonnet-4-6, claude-sonnet-5, gemini-2.5-flash, gemini-2.5-pro, gpt-4.1, gpt-4.1-mini, gpt-4.1-nano, gpt-4o, gpt-4o-mini, gpt-5, gpt-5.3-codex, gpt-5.4, gpt-5.6
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
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
    writes: Mapping[str, float]
    read: float
    output: float
    min_tokens: int
    ttls: Mapping[str, timedelta]
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
    #: other names of the model in logs (OpenRouter's ``anthropic/claude-sonnet-4.6``...); a dated
    #: snapshot, a regional or vendor prefix and a ``-v1:0`` suffix are stripped without listing them
    aliases: tuple[str, ...] = ()
    #: the last day the prices hold ("" while they do): an introductory price's end
    valid_until: str = ""
    #: False for the cache rules of a model the price table lacks: its requests are unpriced
    priced: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"model name must be a non-empty string, got {self.name!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for what in ("input", "read", "output", "storage"):
            value = getattr(self, what)
            if value is None and what == "storage":
                continue
            _check_price(self.name, what, value)
        if not isinstance(self.writes, Mapping):
            raise ValueError(f"{self.name}: writes must map TTL names to prices")
        for ttl, value in self.writes.items():
            _check_price(self.name, f"writes[{ttl!r}]", value)
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
        missing = [ttl for ttl in self.ttls if ttl not in self.writes]
        if missing:
            raise ValueError(f"{self.name}: no write price for the TTL {', '.join(missing)}")
        object.__setattr__(self, "writes", MappingProxyType(dict(self.writes)))
        object.__setattr__(self, "aliases", tuple(self.aliases))

    @property
    def default_ttl(self) -> str:
        """The TTL a breakpoint without an explicit one gets (the first of ``ttls``)."""
        return next(iter(self.ttls))

    def write_price(self, ttl: str) -> float:
        """Price per million tokens of writing an entry with ``ttl`` (a TTL of ``ttls``, or
        ``"default"``: the first); ValueError for a TTL the model does not offer."""
        if ttl == "default":
            ttl = self.default_ttl
        try:
            return self.writes[ttl]
        except KeyError:
            raise ValueError(f"{self.name} has no {ttl} cache write price (its TTLs: {', '.join(self.ttls)})") from None

    def bill(self, input: int = 0, read: int = 0, writes: Mapping[str, int] | None = None, output: int = 0) -> Cost:
        """The one cost rule: ``input`` tokens at the input price, ``read`` at the read price, each
        TTL's ``writes`` at its write price, ``output`` at the output price (US$). A model the price
        table lacks (``priced`` False) bills None for each part: its dollars are missing, not 0."""
        if not self.priced:
            return Cost(None, None, None, None)
        written = sum(count * self.write_price(ttl) for ttl, count in (writes or {}).items() if count)
        return Cost(input * self.input / 1e6, read * self.read / 1e6, written / 1e6, output * self.output / 1e6)

    def with_prices(self, **prices: float) -> ModelProfile:
        """A copy with some fields replaced (prices such as ``input`` or ``read``, or ``name``)."""
        return replace(self, **prices)  # type: ignore[arg-type]


def _check_price(name: str, what: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: price {what} must be a non-negative number, got {value!r}")


@dataclass(frozen=True)
class Cost:
    """What one request costs, in US dollars, by kind of token; each part None when the model is
    unpriced (the price table lacks it): missing, never 0."""

    input_usd: float | None
    cache_read_usd: float | None
    cache_write_usd: float | None
    output_usd: float | None

    @property
    def priced(self) -> bool:
        return self.input_usd is not None

    @property
    def prompt_usd(self) -> float | None:
        """Everything but the output: what a cache simulation predicts (None when unpriced)."""
        if self.input_usd is None or self.cache_read_usd is None or self.cache_write_usd is None:
            return None
        return self.input_usd + self.cache_read_usd + self.cache_write_usd

    @property
    def total_usd(self) -> float | None:
        """The whole bill of the request (None when unpriced)."""
        prompt = self.prompt_usd
        return None if prompt is None or self.output_usd is None else prompt + self.output_usd


_MIN = timedelta(minutes=1)
_ANTHROPIC_TTLS = {"5m": 5 * _MIN, "1h": 60 * _MIN}
#: Where each row's prices were read. The project's references (../shared/reference/prices.md,
#: cache_rules.md) quote the providers' pages; a row read elsewhere names its page.
_PRICES_MD = "prices.md (the project's reference: Anthropic's pricing page as quoted in 2026)"
_PRICES_MD_LEGACY = "prices.md (the project's reference: Anthropic's pricing page, legacy models)"
_FABLE = "prices.md (the project's reference: digitalapplied.com 'Fable 5 usage credits', 2026)"
_CACHE_RULES = "cache_rules.md (the project's reference: Anthropic's prompt-caching page)"


def _anthropic(
    name: str,
    input: float,
    min_tokens: int,
    *,
    source: str = _PRICES_MD,
    date_read: str = "2026-12-07",
    max_output: int = 64_000,
    aliases: tuple[str, ...] = (),
    valid_until: str = "",
    notes: str = "",
) -> ModelProfile:
    """A Claude row: writes 1.25x input for 5 minutes and 2x for one hour, reads 0.1x, output 5x
    (the ratios prices.md and cache_rules.md give for every Claude model)."""
    return ModelProfile(
        name=name,
        provider="anthropic",
        mode="breakpoints",
        input=input,
        writes={"5m": input * 1.25, "1h": input * 2},
        read=input * 0.1,
        output=input * 5,
        min_tokens=min_tokens,
        ttls=_ANTHROPIC_TTLS,
        context_window=200_000,
        max_output=max_output,
        max_breakpoints=4,
        lookback=20,
        date_read=date_read,
        source=source,
        notes=notes or f"cache minimum {min_tokens:,} tokens ({_CACHE_RULES})",
        aliases=aliases,
        valid_until=valid_until,
    )


_OPENAI_CACHING = "https://openai.com/index/api-prompt-caching/ (stored copy, read 2026-12-01)"
_OPENAI_TTLS = {"in_memory": 5 * _MIN, "24h": 24 * 60 * _MIN}


def _openai_automatic(
    name: str,
    input: float,
    read: float,
    output: float,
    *,
    context: int,
    max_output: int,
    source: str,
    date_read: str = "2026-12-07",
    notes: str = "",
) -> ModelProfile:
    """An OpenAI row with automatic prefix caching: writes free (the input price), 1,024 + 128k
    token steps; in-memory retention for minutes (5 the documented lower bound) or 24 hours."""
    return ModelProfile(
        name=name,
        provider="openai",
        mode="automatic",
        input=input,
        writes={ttl: input for ttl in _OPENAI_TTLS},
        read=read,
        output=output,
        min_tokens=1024,
        step=128,
        context_window=context,
        max_output=max_output,
        ttls=_OPENAI_TTLS,
        max_breakpoints=4,
        date_read=date_read,
        source=source,
        notes=notes or "automatic prefix caching; writes are free; 1,024 + 128k token steps",
    )


def _gemini(
    name: str, input: float, read: float, output: float, storage: float, min_tokens: int, notes: str
) -> ModelProfile:
    return ModelProfile(
        name=name,
        provider="google",
        mode="automatic",
        input=input,
        writes={"implicit": input, "explicit": input},
        read=read,
        output=output,
        min_tokens=min_tokens,
        storage=storage,
        context_window=1_048_576,
        max_output=65_536,
        # the implicit cache's lifetime is not documented: 5 minutes is an assumption
        ttls={"implicit": 5 * _MIN, "explicit": 60 * _MIN},
        date_read="2026-11",
        source="https://ai.google.dev/gemini-api/docs/caching",
        notes=notes,
    )


#: The price table: one row per model, each with where and when its prices were read. A model not
#: here is unpriced (its dollars missing, said in one line), never priced as another model.
_BUILTIN: tuple[ModelProfile, ...] = (
    _anthropic(
        "claude-3-5-haiku",
        0.80,
        2048,
        source=_PRICES_MD_LEGACY,
        max_output=8_192,
        notes="cache minimum 2,048 tokens (Haiku 3.5: Anthropic's prompt-caching page)",
    ),
    _anthropic("claude-3-5-sonnet", 3.0, 1024, source=_PRICES_MD_LEGACY, max_output=8_192),
    _anthropic("claude-3-7-sonnet", 3.0, 1024, source=_PRICES_MD_LEGACY),
    _anthropic("claude-sonnet-4", 3.0, 1024),
    _anthropic("claude-sonnet-4-5", 3.0, 1024),
    _anthropic("claude-sonnet-4-6", 3.0, 1024),
    _anthropic(
        "claude-sonnet-5",
        2.0,
        1024,
        source=_FABLE,
        valid_until="2026-08-31",
        notes="an introductory price, until 2026-08-31 (the source gives no price after it); "
        "cache minimum 1,024 assumed as Sonnet 4.x's",
    ),
    _anthropic("claude-haiku-4-5", 1.0, 4096),
    _anthropic("claude-opus-4-1", 15.0, 1024, max_output=32_000, source=_CACHE_RULES),
    _anthropic("claude-opus-4-5", 5.0, 4096),
    _anthropic("claude-opus-4-6", 5.0, 4096, max_output=128_000),
    _anthropic(
        "claude-opus-4-7", 5.0, 2048, notes="cache minimum 2,048 tokens (prices.md; third-party pages disagree)"
    ),
    _anthropic("claude-opus-4-8", 5.0, 1024, max_output=32_000),
    _anthropic("claude-fable-5", 10.0, 512, source=_FABLE, notes="cache minimum 512 tokens (prices.md)"),
    _openai_automatic(
        "gpt-4o",
        2.5,
        1.25,
        10.0,
        context=128_000,
        max_output=16_384,
        source=_OPENAI_CACHING,
        notes="OpenAI's prompt-caching announcement (gpt-4o-2024-08-06: 2.50 / cached 1.25 / 10.00); writes free",
    ),
    _openai_automatic(
        "gpt-4o-mini",
        0.15,
        0.075,
        0.60,
        context=128_000,
        max_output=16_384,
        source=_OPENAI_CACHING,
        notes="OpenAI's prompt-caching announcement (gpt-4o-mini-2024-07-18: 0.15 / cached 0.075 / 0.60); writes free",
    ),
    _openai_automatic(
        "gpt-5",
        1.25,
        0.125,
        10.0,
        context=400_000,
        max_output=128_000,
        source="crazyrouter.com 'GPT-5 Pricing Explained' (2026-04-27; quotes OpenAI's pricing page)",
    ),
    _openai_automatic(
        "gpt-5.3-codex",
        1.75,
        0.175,
        14.0,
        context=400_000,
        max_output=128_000,
        source="vercel.com/ai-gateway/models/gpt-5.3-codex (OpenAI's rates as resold at list price; "
        "kissapi.ai's GPT-5.3-Codex guide gives the same)",
    ),
    _openai_automatic(
        "gpt-5.4",
        2.5,
        0.25,
        15.0,
        context=400_000,
        max_output=128_000,
        source="https://platform.openai.com/docs/guides/prompt-caching",
        date_read="2026-11",
    ),
    ModelProfile(
        name="gpt-5.6",
        provider="openai",
        mode="explicit_breakpoints",
        input=5.0,
        writes={"30m": 5.0 * 1.25},
        read=0.5,
        output=30.0,
        min_tokens=1024,
        ttls={"30m": 30 * _MIN},
        max_breakpoints=4,
        context_window=400_000,
        max_output=128_000,
        date_read="2026-12-07",
        source="prices.md (the project's reference: OpenAI's GPT-5.6 preview as quoted by Simon Willison, "
        "2026-06; OpenAI's prompt-caching guide)",
        notes="writes 1.25x input, reads 0.1x, a 30-minute TTL, explicit breakpoints",
        aliases=("gpt-5.6-sol",),
    ),
    _openai_automatic(
        "gpt-4.1",
        2.0,
        0.50,
        8.0,
        context=1_047_576,
        max_output=32_768,
        source="third-party copies of https://platform.openai.com/docs/pricing (deploybase.ai openai-pricing 2026-03)",
        date_read="2026-12-01",
    ),
    _openai_automatic(
        "gpt-4.1-mini",
        0.40,
        0.10,
        1.60,
        context=1_047_576,
        max_output=32_768,
        source="third-party copies of https://platform.openai.com/docs/pricing (deploybase.ai openai-pricing 2026-03)",
        date_read="2026-12-01",
    ),
    _openai_automatic(
        "gpt-4.1-nano",
        0.10,
        0.025,
        0.40,
        context=1_047_576,
        max_output=32_768,
        source="third-party copies of https://platform.openai.com/docs/pricing (deploybase.ai openai-pricing 2026-03)",
        date_read="2026-12-01",
        notes="cached 0.025 assumed at 75% off like gpt-4.1's",
    ),
    _gemini(
        "gemini-2.5-flash",
        0.30,
        0.03,
        2.50,
        1.00,
        1024,
        "implicit cache lifetime assumed 5 minutes; explicit cache TTL 1 hour by default; "
        "output price not in the references",
    ),
    _gemini(
        "gemini-2.5-pro",
        1.25,
        0.125,
        10.0,
        4.50,
        4096,
        "implicit cache lifetime assumed 5 minutes; prices for prompts up to 200k tokens; "
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


#: Prefixes a vendor or router puts before a model id: OpenRouter's ``anthropic/``, Bedrock's
#: regional ``us.`` and ``anthropic.``, Gemini's ``models/``...
_PREFIX = re.compile(
    r"^(?:models/|(?:anthropic|openai|google|vertex_ai|bedrock)/|(?:us|eu|apac|au|jp|global)\.|anthropic\.)"
)
#: Suffixes of a dated snapshot or a version: ``-20251001``, ``-2024-07-18``, ``-latest``, ``-v1:0``,
#: Vertex's ``@20250929``, Claude Code's ``[1m]``
_SNAPSHOT = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|-v\d+(?::\d+)?|@[\w.-]+|\[[^\]]*\]|:\d+)$")
#: Claude's version-first spellings (``claude-4.6-sonnet``, as OpenRouter answers) of the
#: family-first ids of Claude 4 and later
_VERSION_FIRST = re.compile(r"^claude-(\d+)((?:-\d+)?)-(opus|sonnet|haiku|fable)$")


def _row(name: str) -> str | None:
    if name in _registry:
        return name
    for profile in _registry.values():
        if name in profile.aliases:
            return profile.name
    return None


def _spellings(name: str) -> Iterator[str]:
    """``name`` and what it becomes as each vendor's decoration is taken off, one step at a time."""
    yield name
    while True:
        shorter = _PREFIX.sub("", name)
        shorter = _SNAPSHOT.sub("", shorter)
        if shorter.startswith("claude-"):
            shorter = re.sub(r"(?<=\d)\.(?=\d)", "-", shorter)  # claude-sonnet-4.6 -> claude-sonnet-4-6
            flipped = _VERSION_FIRST.match(shorter)
            if flipped and int(flipped.group(1)) >= 4:
                shorter = f"claude-{flipped.group(3)}-{flipped.group(1)}{flipped.group(2)}"
        if shorter == name or not shorter:
            return
        name = shorter
        yield name


def family_name(model: str) -> str | None:
    """The price table's row ``model`` stands for: itself, an alias, or the row of a dated snapshot
    or a vendor's spelling (``claude-haiku-4-5-20251001``, OpenRouter's ``anthropic/claude-sonnet-4.6``
    and ``anthropic/claude-4.6-sonnet-20260217``, Bedrock's ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
    Vertex's ``claude-sonnet-4-5@20250929``, ``models/gemini-2.5-pro``); None when no row fits.

    >>> family_name("claude-haiku-4-5-20251001"), family_name("gpt-4o-mini-2024-07-18"), family_name("gpt-9")
    ('claude-haiku-4-5', 'gpt-4o-mini', None)
    >>> family_name("anthropic/claude-4.6-sonnet-20260217"), family_name("us.anthropic.claude-3-5-haiku-20241022-v1:0")
    ('claude-sonnet-4-6', 'claude-3-5-haiku')
    """
    if not isinstance(model, str) or not model.strip():
        return None
    for spelling in _spellings(model.strip()):
        found = _row(spelling)
        if found is not None:
            return found
    return None


def get_model(model: str | ModelProfile) -> ModelProfile:
    """The profile of ``model`` (a row of the price table, or a spelling of one, see
    :func:`family_name`; or a profile used as is); ValueError for a model the table lacks."""
    if isinstance(model, ModelProfile):
        return model
    if not isinstance(model, str):
        raise TypeError(f"model must be a model id or a ModelProfile, got {type(model).__name__}")
    found = family_name(model)
    if found is None:
        raise ValueError(f"unknown model {model!r}; known models: {', '.join(sorted(_registry))}")
    return _registry[found]


def how_to_price(model: str) -> str:
    """The one line that says how to give ``model`` a price."""
    return (
        f"register_model(MODELS['claude-sonnet-4-6'].with_prices(name={model!r}, input=..., "
        "read=..., writes={...}, output=...)) from wm_kernel.cachesim"
    )


@dataclass(frozen=True)
class Priced:
    """The profile a request of ``model`` is priced with, and why.

    ``profile`` is the model's row when the price table has it (``note`` ""). Otherwise it holds
    the cache rules the request is simulated with (its provider's) but no prices
    (``profile.priced`` False: its dollars are missing), and ``note`` says so in one line, naming
    the model and how to add its price."""

    requested: str | None
    profile: ModelProfile
    note: str = ""

    @property
    def substituted(self) -> bool:
        return bool(self.note)

    @property
    def priced(self) -> bool:
        return self.profile.priced


def priced_as(
    model: str | ModelProfile | None, rules: str | ModelProfile = DEFAULT_MODEL, *, at: date | None = None
) -> Priced:
    """The profile ``model`` is priced with: its row of the price table; else none (unpriced, never
    another model's prices), with ``rules``' cache rules for the simulator. ``at``, a request's
    day, past a row's ``valid_until`` is unpriced too.

    >>> priced_as("claude-opus-4-6").profile.name
    'claude-opus-4-6'
    >>> p = priced_as("claude-3-sonnet-20240229")
    >>> p.priced, p.profile.name, p.note.split(";")[0]
    (False, 'claude-3-sonnet-20240229', 'unpriced: claude-3-sonnet-20240229 is not in the price table')
    >>> priced_as(None).note.split(";")[0]
    'unpriced: the log names no model'
    """
    if isinstance(model, ModelProfile):
        return Priced(model.name, model, "" if model.priced else f"unpriced: {model.name} has no prices")
    found = family_name(model) if isinstance(model, str) else None
    if found is not None:
        row = _registry[found]
        if at is not None and row.valid_until and at.isoformat() > row.valid_until:
            note = f"unpriced: {row.name}'s price held until {row.valid_until} ({row.notes})"
            return Priced(model, replace(row, name=str(model), priced=False), note)
        return Priced(model, row)
    rules_row = get_model(rules)
    named = isinstance(model, str) and bool(model.strip())
    if named:
        assert isinstance(model, str)
        note = f"unpriced: {model} is not in the price table; add its price with {how_to_price(model)}"
        name = model
    else:
        note = "unpriced: the log names no model; pass model= to price it"
        name = "unknown model"
    return Priced(model if named else None, replace(rules_row, name=name, priced=False), note)
