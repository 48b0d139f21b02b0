"""The built-in trinkets (their base classes are ``trinkets.base``'s).

Names load lazily (PEP 562), so importing ``trinkets.base`` from the core does not pull in every
trinket module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type checkers see the classes ("X as X" exports them); at run time they load lazily
    from trinkets.domaindoc import DomaindocTrinket as DomaindocTrinket
    from trinkets.getcontext import GetContextTrinket as GetContextTrinket
    from trinkets.lora_trinket import LoraTrinket as LoraTrinket
    from trinkets.manifest_trinket import ManifestTrinket as ManifestTrinket
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket as PeanutGalleryTrinket
    from trinkets.proactive_memory_trinket import ProactiveMemoryTrinket as ProactiveMemoryTrinket
    from trinkets.reminders import ReminderManager as ReminderManager
    from trinkets.time_manager import TimeManager as TimeManager

_MODULES = {
    "TimeManager": "trinkets.time_manager",
    "LoraTrinket": "trinkets.lora_trinket",
    "ManifestTrinket": "trinkets.manifest_trinket",
    "ReminderManager": "trinkets.reminders",
    "ProactiveMemoryTrinket": "trinkets.proactive_memory_trinket",
    "GetContextTrinket": "trinkets.getcontext",
    "PeanutGalleryTrinket": "trinkets.peanutgallery_trinket",
    "DomaindocTrinket": "trinkets.domaindoc",
}

#: Registration order of the built-in trinkets in a default Session: cached system sections first,
#: then the notification-centre providers, then post-history.
BUILTIN_NAMES = (
    "TimeManager",
    "LoraTrinket",
    "ManifestTrinket",
    "ReminderManager",
    "ProactiveMemoryTrinket",
    "GetContextTrinket",
    "PeanutGalleryTrinket",
    "DomaindocTrinket",
)

__all__ = [*_MODULES, "BUILTIN_TRINKETS", "BUILTIN_NAMES"]


def __getattr__(name: str) -> Any:
    if name == "BUILTIN_TRINKETS":
        return tuple(__getattr__(n) for n in BUILTIN_NAMES)
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'trinkets' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
