"""The module paths of wm-kernel 0.1, kept for one release: each one imports its new home.

Round three put the flat modules into folders by layer (docs/architecture.md). Code written against
the old paths (``from wm_kernel.widgets import Dashboard``, ``import wm_kernel.cache``) keeps working:
the old name is the new module itself (one object, so classes, pickles and ``isinstance`` agree),
and importing it warns once with a DeprecationWarning that names the new path.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: old dotted path -> the module that holds it now
MOVED = {
    "wm_kernel.checks": "wm_kernel.utils.checks",
    "wm_kernel.markup": "wm_kernel.utils.markup",
    "wm_kernel.timefmt": "wm_kernel.utils.timefmt",
    "wm_kernel.frozenmap": "wm_kernel.utils.frozenmap",
    "wm_kernel.quickinit": "wm_kernel.utils.quickinit",
    "wm_kernel.tokens": "wm_kernel.utils.tokens",
    "wm_kernel.keys": "wm_kernel.stores.keys",
    "wm_kernel.store": "wm_kernel.stores.embedded",
    "wm_kernel.valkey_store": "wm_kernel.stores.valkey",
    "wm_kernel.clock": "wm_kernel.core.clock",
    "wm_kernel.events": "wm_kernel.core.events",
    "wm_kernel.bus": "wm_kernel.core.bus",
    "wm_kernel.profile": "wm_kernel.core.profile",
    "wm_kernel.types": "wm_kernel.core.prompt",
    "wm_kernel.composer": "wm_kernel.core.composer",
    "wm_kernel.budget": "wm_kernel.core.budget",
    "wm_kernel.export": "wm_kernel.core.request_bodies",
    "wm_kernel.history": "wm_kernel.instruments.history",
    "wm_kernel.diff": "wm_kernel.instruments.diff",
    "wm_kernel.cache": "wm_kernel.cachesim.report",
    "wm_kernel.cachesim.view": "wm_kernel.display.cache_view",
    "wm_kernel.render": "wm_kernel.display.render",
    "wm_kernel.tables": "wm_kernel.display.tables",
    "wm_kernel.style": "wm_kernel.utils.style",
    "wm_kernel.budget_view": "wm_kernel.display.budget_bars",
    "wm_kernel.overview": "wm_kernel.display.overview",
    "wm_kernel.dashboard_parts": "wm_kernel.jupyter.dashboard_parts",
    "wm_kernel.widgets": "wm_kernel.jupyter.dashboard",
    "wm_kernel.magics": "wm_kernel.jupyter.magics",
}
# ``wm_kernel.core`` was WorkingMemory's module and is now the core's folder: the package itself
# answers for the names the module had (see wm_kernel/core/__init__.py).


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; the old path goes in the next release",
                      DeprecationWarning, stacklevel=2)  # importlib's own frames are skipped
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The module ran under its new name; only its spec, which the import system has just
        # replaced with the old name's, is put back.
        module.__spec__ = self._spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
