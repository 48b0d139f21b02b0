"""The price table's rows: one :class:`~wm_kernel.cachesim.profile.ModelProfile` per model, each with
where and when its prices were read (``source``, ``date_read``), what is assumed (``notes``) and how
long an introductory price holds (``valid_until``). ``wm_kernel.cachesim.models`` registers them.
"""

from __future__ import annotations

from datetime import timedelta

from wm_kernel.cachesim.profile import ModelProfile

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
BUILTIN: tuple[ModelProfile, ...] = (
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


__all__ = ["BUILTIN"]
