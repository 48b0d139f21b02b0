"""What one usage object counts, as a wire dialect reads it field by field.

A dialect's usage reader (``Dialect.parse_usage``) turns its provider's usage object into
:class:`UsageCounts`: tokens billed as plain input, read from the cache, written to it (by TTL),
and output. ``wm_kernel.dialects.usage.parse_usage`` makes a ``Usage`` of them with the provider,
model and ids; the readers need nothing of the registry, so the registry can name them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The key of ``cache_writes`` for writes whose TTL the usage does not name (OpenAI's
#: ``cache_write_tokens``, Bedrock's ``cacheWriteInputTokens``): billed at the TTL the model's
#: price row names first (5 minutes for Claude, 30 minutes for GPT-5.6).
DEFAULT_TTL = "default"

#: The largest count a usage field may hold: more tokens than any model reads in a year of requests
#: (a count past it is a corrupt record, not a bill).
MAX_COUNT = 10**12


@dataclass(frozen=True, slots=True)
class UsageCounts:
    """One usage object's counts (see the module docstring): ``billed_usd`` is what the provider
    says it billed, where it says so (OpenRouter's ``usage.cost``); ``steps`` counts the
    server-side steps summed into it (Anthropic's ``usage.iterations``)."""

    input_tokens: int
    cache_read_tokens: int = 0
    cache_writes: Mapping[str, int] = field(default_factory=dict)
    output_tokens: int = 0
    billed_usd: float | None = None
    steps: int = 1


def add_counts(parts: Sequence[UsageCounts]) -> UsageCounts:
    """The sum of several steps' counts: one request's bill (the first step's ``billed_usd``)."""
    writes: dict[str, int] = {}
    for part in parts:
        for ttl, count in part.cache_writes.items():
            writes[ttl] = writes.get(ttl, 0) + count
    return UsageCounts(
        sum(p.input_tokens for p in parts),
        sum(p.cache_read_tokens for p in parts),
        writes,
        sum(p.output_tokens for p in parts),
        parts[0].billed_usd,
        sum(p.steps for p in parts),
    )


def check_count(value: Any, name: str, where: str = "") -> int:
    """``value`` when it is a plausible token count (a non-negative int below ``MAX_COUNT``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > MAX_COUNT:
        prefix = f"{where}: " if where else ""
        raise ValueError(f"{prefix}{name} must be a non-negative int of at most {MAX_COUNT:,}, got {value!r}")
    return value


def usage_int(record: Mapping[str, Any], key: str, where: str) -> int:
    """The non-negative int at ``key`` (0 when absent or null); ValueError naming ``where``."""
    value = record.get(key)
    if value is None:
        return 0
    return check_count(value, key, where)


def usage_details(record: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """The object at ``key`` ({} when absent or null); ValueError naming ``where``."""
    details = record.get(key)
    if details is None:
        return {}
    if not isinstance(details, Mapping):
        raise ValueError(f"{where}: {key} must be an object, got {type(details).__name__}")
    return details


__all__ = [
    "DEFAULT_TTL",
    "MAX_COUNT",
    "UsageCounts",
    "add_counts",
    "check_count",
    "usage_int",
    "usage_details",
]
