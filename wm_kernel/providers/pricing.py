"""Dollars from usage: the one cost rule of ``wm_kernel.cachesim.models`` applied to a Usage.

:func:`price` is the only place billed usage becomes money, and it asks the model's row of the price
table (``ModelProfile.bill``), which the simulator asks too, so a simulation and a bill are priced
by the same rule: plain input at ``input``, reads at ``read``, each TTL's writes at that TTL's write
price (``writes``: Claude's 5m and 1h, GPT-5.6's 30m; writes whose TTL the usage does not name at
the model's default), output at ``output``. A model the table lacks is unpriced: every part of its
Cost is None (missing, never 0).

Gemini's explicit cached content also bills storage per hour, which a response's usage does not
report: it is not priced here.

Examples
--------
>>> from wm_kernel.dialects.usage import Usage
>>> cost = price(Usage("anthropic", 50, 100_000, {"5m": 200, "1h": 1000}, 87), "claude-sonnet-4-6")
>>> round(cost.input_usd, 6), round(cost.cache_read_usd, 6), round(cost.cache_write_usd, 6)
(0.00015, 0.03, 0.00675)
>>> round(cost.total_usd, 6)
0.038205
>>> from wm_kernel.cachesim.models import priced_as
>>> price(Usage("anthropic", 50), priced_as("claude-opus-9").profile).total_usd is None
True
"""

from __future__ import annotations

from wm_kernel.cachesim.models import get_model
from wm_kernel.cachesim.profile import Cost, ModelProfile
from wm_kernel.dialects.usage import Usage


def price(usage: Usage, model: str | ModelProfile) -> Cost:
    """The cost of ``usage`` at ``model``'s prices (a row of the price table, by name or as a
    profile; an unpriced profile gives a Cost of Nones). A write at a TTL the model does not offer
    is a ValueError: billing it at another TTL's price would hide exactly the mistake this function
    exists to avoid."""
    if not isinstance(usage, Usage):
        raise TypeError(f"expected a Usage, got {type(usage).__name__}")
    profile = get_model(model)
    return profile.bill(usage.input_tokens, usage.cache_read_tokens, usage.cache_writes, usage.output_tokens)


__all__ = ["price"]
