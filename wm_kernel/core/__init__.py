"""The core: clocks, events, the bus, the composed prompt, the composer, budgets, WorkingMemory.

It imports neither IPython nor ipywidgets, and nothing above it (trinkets, instruments, the
session, display or the Jupyter layer)."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

# ``wm_kernel.core`` was WorkingMemory's module before round three; its names still resolve here,
# with a DeprecationWarning, for one release.
_FORMER = {"WorkingMemory", "CollapseIncompleteError", "failure_kind"}


def __getattr__(name: str) -> Any:
    if name in _FORMER:
        warnings.warn(
            f"wm_kernel.core.{name} moved to wm_kernel.core.working_memory.{name}; "
            "the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        value = getattr(importlib.import_module("wm_kernel.core.working_memory"), name)
        globals()[name] = value  # warned once; ``from ... import`` asks twice
        return value
    raise AttributeError(f"module 'wm_kernel.core' has no attribute {name!r}")
