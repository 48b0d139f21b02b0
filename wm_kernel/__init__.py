"""wm-kernel: event-driven system prompt composition, in Jupyter.

The public names load lazily (PEP 562): importing a submodule such as ``wm_kernel.core.events`` does not
pull in the rest, which keeps the core/trinkets pair free of import cycles. The core imports neither
IPython nor ipywidgets; ``%load_ext wm_kernel`` loads the Jupyter layer.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from wm_kernel.utils import views

# A library does not decide where its log records go: without this, Python's last-resort handler
# would print trinket failures to stderr in every notebook. Failures stay visible where users look
# (the trinket's error trait, %compose, the event log); configure logging to see the records too.
logging.getLogger("wm_kernel").addHandler(logging.NullHandler())


def _load_display() -> None:
    from wm_kernel.display.render import register_views

    register_views()


# a ComposedPrompt or a trinket's text shown in IPython loads the display layer (see utils/views.py)
views.set_loader(_load_display)

__version__ = "0.1.0"

_EXPORTS = {
    "EventBus": "wm_kernel.core.bus",
    "WorkingMemory": "wm_kernel.core.working_memory",
    "SystemPromptComposer": "wm_kernel.core.composer",
    "Layout": "wm_kernel.core.composer",
    "Session": "wm_kernel.session",
    "current_session": "wm_kernel.session",
    "set_current_session": "wm_kernel.session",
    "Profile": "wm_kernel.core.profile",
    "ManualClock": "wm_kernel.core.clock",
    "SystemClock": "wm_kernel.core.clock",
    "MemoryStore": "wm_kernel.stores.embedded",
    "SQLiteStore": "wm_kernel.stores.embedded",
    "ValkeyStore": "wm_kernel.stores.valkey",  # needs the optional valkey client
    "ComposedPrompt": "wm_kernel.core.prompt",
    "Dashboard": "wm_kernel.jupyter.dashboard.widget",  # one anywidget: JupyterLab, VS Code, Colab, marimo
    # the magic-free ways in (hosts without IPython magics: marimo, a script): the dashboard and
    # the views of %compose, %cache and %request, each a plain function returning a displayable
    "dashboard": "wm_kernel.jupyter.dashboard.widget",
    "compose_view": "wm_kernel.display.session_views",
    "cache_view": "wm_kernel.display.session_views",
    "request_view": "wm_kernel.display.wire_view",
}

__all__ = [*_EXPORTS, "load_ipython_extension", "unload_ipython_extension"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'wm_kernel' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext wm_kernel``: register the magics on this shell."""
    from wm_kernel.jupyter.magics.working_memory import load_extension

    load_extension(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext wm_kernel``: remove every magic, hook and observer the extension added."""
    from wm_kernel.jupyter.magics.working_memory import unload_extension

    unload_extension(ipython)
