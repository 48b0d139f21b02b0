"""Talking to models: send the composed request, read and price the usage a provider bills, and
reconcile it with a cache simulation (the layer above ``wm_kernel.session`` and experiments).

The SDKs (``anthropic``, ``openai``) are the optional extra ``wm-kernel[providers]``; nothing here
imports them until a request is sent.
"""
from __future__ import annotations

from wm_kernel.dialects.usage import Usage, parse_usage, read_usage, request_prefix

__all__ = ["Usage", "parse_usage", "read_usage", "request_prefix"]
