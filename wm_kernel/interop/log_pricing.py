"""Which model profile prices each request of an imported log, and which one simulates its cache.

A request is priced as its own model's row of the price table (a dated snapshot or a router's
spelling as its row); a model the table lacks is unpriced, never priced as another: it is simulated
with its provider's cache rules (its dialect's ``default_model``, else ``FALLBACK_MODEL``'s rules)
and its dollars are missing, said in one line (``Priced.note``). ``ImportedSession.pricing`` and
``ImportedSession.cache_model`` read these.
"""

from __future__ import annotations

from collections.abc import Sequence

from wm_kernel.cachesim.models import Priced, family_name, priced_as
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.dialects.registry import get_dialect, known_name
from wm_kernel.interop.formats import LoggedRequest

#: Whose cache rules simulate a request when neither its model nor its wire's default has a row.
FALLBACK_MODEL = "claude-sonnet-4-6"


def default_model(provider: str) -> str:
    """Whose cache rules simulate a request of ``provider`` whose model has no row (unpriced): its
    dialect's default, else ``FALLBACK_MODEL``."""
    default = get_dialect(provider).default_model if known_name(provider) else ""
    return default if family_name(default) is not None else FALLBACK_MODEL


def request_pricing(requests: Sequence[LoggedRequest], model: str | ModelProfile | None = None) -> list[Priced]:
    """Per request, the profile it is priced with: ``model`` for all when given (ValueError when
    the registry does not know it), else the request's own model; a model without a row is
    unpriced (simulated with its provider's default's cache rules)."""
    if model is not None:
        chosen = priced_as(model)
        if chosen.substituted:
            raise ValueError(f"unknown model {model!r}")
        return [chosen] * len(requests)
    # a row's price holds until its ``valid_until``: each request by the day it was sent
    return [priced_as(r.model, default_model(r.provider), at=r.sent_at.date() if r.sent_at else None) for r in requests]


def log_cache_model(requests: Sequence[LoggedRequest]) -> str:
    """The cachesim profile for a log: its first request's model (a dated snapshot as its family)
    if registered, else the provider's default."""
    first = requests[0]
    found = family_name(first.model) if first.model else None
    if found is not None:
        return found
    return default_model(first.provider)


__all__ = ["FALLBACK_MODEL", "default_model", "request_pricing", "log_cache_model"]
