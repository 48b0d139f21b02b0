"""Dollars from usage, with the prices of ``wm_kernel.cachesim.models`` (the one cost model).

:func:`price` is the only place usage becomes money, for billed usage and for simulated usage alike,
so a simulation and a bill are priced by the same rules:

* plain input tokens at ``input``; tokens read from the cache at ``read``, and only there (an
  Anthropic ``input_tokens`` already excludes them; OpenAI and Gemini prompt counts include them,
  and :mod:`wm_kernel.dialects.usage` takes them out);
* cache writes at the write price: 1-hour writes at ``write_1h``, the others at the price of the
  model's default TTL (``write_5m``); a model with free writes (OpenAI's automatic cache) has
  ``write_5m == input``;
* output tokens at ``output``.

Gemini's explicit cached content also bills storage per hour, which a response's usage does not
report: it is not priced here.

Examples
--------
>>> from wm_kernel.dialects.usage import Usage
>>> cost = price(Usage("anthropic", 50, cache_read_tokens=100_000, cache_write_tokens=1200,
...                    cache_write_1h_tokens=1000, output_tokens=87), "claude-sonnet-4-6")
>>> round(cost.input_usd, 6), round(cost.cache_read_usd, 6), round(cost.cache_write_usd, 6)
(0.00015, 0.03, 0.00675)
>>> round(cost.total_usd, 6)
0.038205
"""

from __future__ import annotations

from dataclasses import dataclass

from wm_kernel.cachesim.models import ModelProfile, get_model
from wm_kernel.dialects.usage import Usage


@dataclass(frozen=True)
class Cost:
    """What one request costs, in US dollars, by kind of token."""

    input_usd: float
    cache_read_usd: float
    cache_write_usd: float
    output_usd: float

    @property
    def prompt_usd(self) -> float:
        """Everything but the output: what a cache simulation predicts."""
        return self.input_usd + self.cache_read_usd + self.cache_write_usd

    @property
    def total_usd(self) -> float:
        """The whole bill of the request."""
        return self.prompt_usd + self.output_usd


def price(usage: Usage, model: str | ModelProfile) -> Cost:
    """The cost of ``usage`` at ``model``'s prices (see the module docstring for the rules).

    A 1-hour write on a model without a 1-hour price is a ValueError: billing it at the 5-minute
    price would hide exactly the mistake this function exists to avoid."""
    if not isinstance(usage, Usage):
        raise TypeError(f"expected a Usage, got {type(usage).__name__}")
    profile = get_model(model)
    if usage.cache_write_1h_tokens and profile.write_1h is None:
        raise ValueError(
            f"{profile.name} has no 1-hour cache write price, yet the usage bills "
            f"{usage.cache_write_1h_tokens} 1-hour write tokens"
        )
    write = usage.cache_write_5m_tokens * profile.write_price(profile.default_ttl) + usage.cache_write_1h_tokens * (
        profile.write_1h or 0.0
    )
    return Cost(
        input_usd=usage.input_tokens * profile.input / 1e6,
        cache_read_usd=usage.cache_read_tokens * profile.read / 1e6,
        cache_write_usd=write / 1e6,
        output_usd=usage.output_tokens * profile.output / 1e6,
    )
