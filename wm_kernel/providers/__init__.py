"""Talking to models: send the composed request, read and price the usage a provider bills, and
reconcile it with a cache simulation (the layer above ``wm_kernel.session`` and experiments).

The SDKs (``anthropic``, ``openai``) are the optional extra ``wm-kernel[providers]``; nothing here
imports them until a request is sent.

Its public names: ``from wm_kernel.providers import send, reconcile, Recording``. They are imported
here, not loaded lazily: two of them (``send``, ``reconcile``) share their module's name, and a lazy
attribute would lose to the submodule once that is imported.
"""

from __future__ import annotations

from wm_kernel.cachesim.profile import Cost
from wm_kernel.dialects.usage import Usage, parse_usage, read_usage
from wm_kernel.providers.pricing import price
from wm_kernel.providers.reconcile import reconcile
from wm_kernel.providers.reconciliation import Reconciliation
from wm_kernel.providers.recording import Recording
from wm_kernel.providers.send import Reply, SendError, send

__all__ = [
    "Cost",
    "Reconciliation",
    "Recording",
    "Reply",
    "SendError",
    "Usage",
    "parse_usage",
    "price",
    "read_usage",
    "reconcile",
    "send",
]
