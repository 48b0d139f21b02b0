"""Base classes of every trinket: :class:`EventAwareTrinket` and :class:`StatefulTrinket`.

The front door of the trinket contract: import from here. The contract lives in
:mod:`trinkets.event_aware` (``EventAwareTrinket``, ``@feed``, ``feed_methods``, ``TrinketHost``,
``Priority``) and :mod:`trinkets.stateful` (``StatefulTrinket``); the ``%trinket`` command
declarations come from :mod:`trinkets.commands`.

A trinket is a traitlets ``HasTraits``: its observable state (``content``, ``last_updated``,
``error``, ``enabled``, and ``current_turn`` on stateful ones) is declared as traits, so widgets can
link to it. A subclass sets ``variable_name`` (the section it publishes) and implements
``generate_content(context) -> str``; stateful ones also implement ``_expire_items()`` and
``_clear_all_state()``. Missing any of these is a TypeError at construction.

Examples
--------
>>> from wm_kernel.core.bus import EventBus
>>> from wm_kernel.core.working_memory import WorkingMemory
>>> bus = EventBus(); wm = WorkingMemory(bus)
>>> class Echo(EventAwareTrinket):
...     variable_name = "echo"
...     def generate_content(self, context):
...         return "hello"
>>> echo = Echo(bus, wm)
>>> wm.get_trinket("Echo") is echo
True
>>> class Broken(EventAwareTrinket):
...     variable_name = "broken"
>>> Broken(bus, wm)
Traceback (most recent call last):
...
TypeError: Can't instantiate abstract class Broken with abstract method generate_content
"""

from __future__ import annotations

from trinkets.commands import Command, CommandError, arg, at, command, instant_or_offset, non_negative_int
from trinkets.event_aware import LIFECYCLE_REFRESH, EventAwareTrinket, Priority, TrinketHost, feed, feed_methods
from trinkets.stateful import STATE_VERSION, StatefulTrinket
from wm_kernel.core.trinket_shape import BUDGET_KEEP, DEFAULT_PRIORITY, NEVER_DROP

__all__ = [
    "EventAwareTrinket",
    "StatefulTrinket",
    "TrinketHost",
    "feed",
    "feed_methods",
    "command",
    "arg",
    "Command",
    "CommandError",
    "non_negative_int",
    "instant_or_offset",
    "at",
    "BUDGET_KEEP",
    "DEFAULT_PRIORITY",
    "NEVER_DROP",
    "Priority",
    "LIFECYCLE_REFRESH",
    "STATE_VERSION",
]
