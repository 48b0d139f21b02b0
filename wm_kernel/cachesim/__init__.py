"""Prompt-cache simulator: what each request really costs at each provider, and why it missed.

Independent of Jupyter. Build :class:`Block`\\ s and :class:`Request`\\ s (or let
``wm_kernel.cachesim.requests.simulate_session`` build them from a Session's recorded turns), then
``simulate(requests, model)``; ``advise(simulation)`` tries the alternatives that matter. The rules
are in ``wm_kernel.cachesim.engine``, the model profiles (prices as data) in
``wm_kernel.cachesim.models``; ``edit_economics`` prices one context edit against the cache clock
(``wm_kernel.cachesim.planner``).

Examples
--------
>>> from datetime import datetime, timezone
>>> t0 = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)
>>> sim = simulate([Request(t0, [Block("prefix", 3000, breakpoint="5m")])], "claude-haiku-4-5")
>>> sim.turns.loc[0, "miss_reason"], sim.total_cost
('below_minimum', 0.003)
"""

from __future__ import annotations

from wm_kernel.cachesim.advice import Advice, advise
from wm_kernel.cachesim.engine import LAYERS, MISS_REASONS, Block, Request
from wm_kernel.cachesim.models import MODELS, get_model, register_model, unregister_model
from wm_kernel.cachesim.planner import EditEconomics, edit_economics
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import TURN_COLUMNS, Simulation, simulate

__all__ = [
    "Advice",
    "advise",
    "Block",
    "Request",
    "simulate",
    "Simulation",
    "MODELS",
    "ModelProfile",
    "register_model",
    "unregister_model",
    "get_model",
    "LAYERS",
    "MISS_REASONS",
    "TURN_COLUMNS",
    "edit_economics",
    "EditEconomics",
]
