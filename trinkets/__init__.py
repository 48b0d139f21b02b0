"""The built-in trinkets (their base classes are ``trinkets.base``'s).

Names load lazily (PEP 562), so importing ``trinkets.base`` from the core does not pull in every
trinket module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type checkers see the classes ("X as X" exports them); at run time they load lazily
    from trinkets.async_activity_trinket import AsyncActivityTrinket as AsyncActivityTrinket
    from trinkets.domaindoc import DomaindocTrinket as DomaindocTrinket
    from trinkets.email_trinket import EmailTrinket as EmailTrinket
    from trinkets.forage_trinket import ForageTrinket as ForageTrinket
    from trinkets.getcontext import GetContextTrinket as GetContextTrinket
    from trinkets.location_trinket import LocationTrinket as LocationTrinket
    from trinkets.lora_trinket import LoraTrinket as LoraTrinket
    from trinkets.manifest_trinket import ManifestTrinket as ManifestTrinket
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket as PeanutGalleryTrinket
    from trinkets.proactive_memory_trinket import ProactiveMemoryTrinket as ProactiveMemoryTrinket
    from trinkets.reminders import ReminderManager as ReminderManager
    from trinkets.time_manager import TimeManager as TimeManager
    from trinkets.whilethecatsaway_trinket import WhileTheCatsAwayTrinket as WhileTheCatsAwayTrinket

_MODULES = {
    "TimeManager": "trinkets.time_manager",
    "LoraTrinket": "trinkets.lora_trinket",
    "ManifestTrinket": "trinkets.manifest_trinket",
    "ReminderManager": "trinkets.reminders",
    "ProactiveMemoryTrinket": "trinkets.proactive_memory_trinket",
    "GetContextTrinket": "trinkets.getcontext",
    "PeanutGalleryTrinket": "trinkets.peanutgallery_trinket",
    "DomaindocTrinket": "trinkets.domaindoc",
    # MIRA HEAD's five newer trinkets (reference/head_trinkets.md): not in the default Session
    "LocationTrinket": "trinkets.location_trinket",
    "AsyncActivityTrinket": "trinkets.async_activity_trinket",
    "EmailTrinket": "trinkets.email_trinket",
    "ForageTrinket": "trinkets.forage_trinket",
    "WhileTheCatsAwayTrinket": "trinkets.whilethecatsaway_trinket",
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

#: MIRA at HEAD's thirteen trinkets: the design's eight, then the five newer ones (cached system
#: section first, then the notification-centre providers). ``Session(trinkets=MIRA_HEAD_TRINKETS)``
#: registers them all; the default Session stays the eight of ``BUILTIN_NAMES``.
MIRA_HEAD_NAMES = (
    *BUILTIN_NAMES,
    "LocationTrinket",
    "AsyncActivityTrinket",
    "EmailTrinket",
    "ForageTrinket",
    "WhileTheCatsAwayTrinket",
)

__all__ = [*_MODULES, "BUILTIN_TRINKETS", "BUILTIN_NAMES", "MIRA_HEAD_TRINKETS", "MIRA_HEAD_NAMES"]


def __getattr__(name: str) -> Any:
    if name == "BUILTIN_TRINKETS":
        return tuple(__getattr__(n) for n in BUILTIN_NAMES)
    if name == "MIRA_HEAD_TRINKETS":
        return tuple(__getattr__(n) for n in MIRA_HEAD_NAMES)
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'trinkets' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
