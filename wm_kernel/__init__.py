"""wm-kernel: event-driven system prompt composition, in Jupyter.

The core (events, bus, composer, WorkingMemory, stores, clocks, Session) imports neither IPython nor
ipywidgets; ``%load_ext wm_kernel`` loads the Jupyter layer lazily.
"""
from __future__ import annotations

from typing import Any

from wm_kernel.bus import EventBus
from wm_kernel.clock import ManualClock, SystemClock
from wm_kernel.composer import Layout, SystemPromptComposer
from wm_kernel.core import WorkingMemory
from wm_kernel.profile import Profile
from wm_kernel.session import Session, current_session, set_current_session
from wm_kernel.store import MemoryStore, SQLiteStore
from wm_kernel.types import ComposedPrompt

__version__ = "0.1.0"

__all__ = ["EventBus", "WorkingMemory", "SystemPromptComposer", "Layout", "Session", "Profile",
           "ManualClock", "SystemClock", "MemoryStore", "SQLiteStore", "ComposedPrompt",
           "current_session", "set_current_session", "load_ipython_extension",
           "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext wm_kernel``: register the magics on this shell."""
    from wm_kernel.magics import load_extension

    load_extension(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext wm_kernel``: remove every magic, hook and observer the extension added."""
    from wm_kernel.magics import unload_extension

    unload_extension(ipython)
