"""The two sides a reconciliation compares, as :class:`~wm_kernel.dialects.usage.Usage` records:
what each simulated request would be billed (:func:`simulated_usage`) and the billed usage as it is
given (:func:`usage_list`: a JSON Lines path, Usage objects, or usage/response records).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import Simulation
from wm_kernel.dialects.registry import dialect_for_provider, get_dialect, known_name
from wm_kernel.dialects.usage import Usage, read_usage

__all__ = ["simulated_usage", "usage_list"]


def simulated_usage(simulation: Simulation) -> list[Usage]:
    """The usage each simulated request would be billed, in the provider-neutral shape (each with
    its own model, ``Simulation.models``)."""
    if not isinstance(simulation, Simulation):
        raise TypeError(f"expected a Simulation, got {type(simulation).__name__}")
    # the provider billing the simulated wire (a model profile's provider resolves to its wire)
    wire = getattr(simulation, "wire", "")

    def provider(profile: ModelProfile) -> str:
        name = wire or profile.provider
        return get_dialect(name).provider if known_name(name) else dialect_for_provider(name).provider

    t = simulation.turns
    return [
        Usage(provider(m), int(i), int(r), {"1h": int(h), m.default_ttl: int(w) - int(h)}, model=m.name)
        for i, r, w, h, m in zip(
            t["input_tokens"],
            t["cache_read_input_tokens"],
            t["cache_creation_input_tokens"],
            t["ephemeral_1h_input_tokens"],
            simulation.models,
            strict=True,
        )
    ]


def usage_list(usage: Any) -> list[Usage]:
    """The usage records ``usage`` gives: read from a JSON Lines path, Usage objects as they are,
    usage or response records read as usage."""
    if isinstance(usage, (str, os.PathLike)):
        return read_usage(usage)
    if isinstance(usage, Iterable) and not isinstance(usage, (bytes, dict)):
        items = list(usage)
        if all(isinstance(u, Usage) for u in items):
            return items
        return read_usage(items)
    raise TypeError(f"usage must be a path, or a list of Usage / usage records, got {type(usage).__name__}")
