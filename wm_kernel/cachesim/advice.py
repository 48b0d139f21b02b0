"""Advice: the alternatives that matter, each simulated next to the current layout."""
from __future__ import annotations

import math

from wm_kernel.cachesim.models import ModelProfile


def keepalive_breakeven(profile: ModelProfile, ttl: str | None = None) -> int:
    """The longest gap, in TTL intervals, over which keep-alive pings cost less than a rewrite.

    Over a gap of ``n`` intervals, pinging costs ``n`` reads (``n - 1`` pings and the real request's
    read); letting the entry lapse costs one write. Pings win while ``n * read < write``.

    >>> from wm_kernel.cachesim.models import MODELS
    >>> keepalive_breakeven(MODELS["claude-sonnet-4-6"])
    12
    """
    write = profile.write_price(ttl or profile.default_ttl)
    if profile.read == 0:
        return 0 if write == 0 else 2**31
    return max(0, math.ceil(write / profile.read) - 1)
