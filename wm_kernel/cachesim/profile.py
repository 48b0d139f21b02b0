"""A model's row of the price table: its caching rules and prices (:class:`ModelProfile`), and the
one cost rule that turns tokens into dollars with them (``ModelProfile.bill``, giving a
:class:`Cost`).

The simulator, ``wm_kernel.providers.pricing.price``, reconcile, advice, send and every view call
``bill``: plain input at ``input``, reads at ``read``, each TTL's writes at that TTL's write price
(``writes``), output at ``output``. A profile whose ``priced`` is False (the cache rules of a model
the price table lacks) bills None for each part: its dollars are missing, never 0.

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from types import MappingProxyType

MODES = ("breakpoints", "explicit_breakpoints", "automatic")


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


__all__ = ["MODES", "ModelProfile", "Cost"]
