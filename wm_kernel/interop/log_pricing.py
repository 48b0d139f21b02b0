"""Which model profile prices each request of an imported log, and which one simulates its cache.

A request is priced as its own model (a dated snapshot as its family); a model the registry does
not know is priced as its provider's default (its dialect's ``default_model``, else
``FALLBACK_MODEL``) and says so (``Priced.note``). ``ImportedSession.pricing`` and
``ImportedSession.cache_model`` read these.
"""

from __future__ import annotations

from collections.abc import Sequence

from wm_kernel.cachesim.models import ModelProfile, Priced, family_name, priced_as
from wm_kernel.dialects.registry import get_dialect, known_name
from wm_kernel.interop.formats import LoggedRequest

#: The cache simulator's model when neither the log's own nor its wire's default is a registered profile.
FALLBACK_MODEL = "claude-sonnet-4-6"


def default_model(provider: str) -> str:
    """The model a request of ``provider`` is priced as when its own is unknown: its dialect's
    default, else ``FALLBACK_MODEL``."""
    default = get_dialect(provider).default_model if known_name(provider) else ""
    return default if family_name(default) is not None else FALLBACK_MODEL


def request_pricing(requests: Sequence[LoggedRequest], model: str | ModelProfile | None = None) -> list[Priced]:
    """Per request, the profile it is priced with: ``model`` for all when given (ValueError when
    the registry does not know it), else the request's own model, priced as its provider's
    default when unknown."""
    if model is not None:
        chosen = priced_as(model)
        if chosen.substituted:
            raise ValueError(f"unknown model {model!r}")
        return [chosen] * len(requests)
    return [priced_as(r.model, default_model(r.provider)) for r in requests]


def log_cache_model(requests: Sequence[LoggedRequest]) -> str:
    """The cachesim profile for a log: its first request's model (a dated snapshot as its family)
    if registered, else the provider's default."""
    first = requests[0]
    found = family_name(first.model) if first.model else None
    if found is not None:
        return found
    return default_model(first.provider)


__all__ = ["FALLBACK_MODEL", "default_model", "request_pricing", "log_cache_model"]
