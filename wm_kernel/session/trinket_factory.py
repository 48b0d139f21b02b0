"""A trinket made from what a Session is given: a trinket class, or a factory ``f(bus, host)``."""

from __future__ import annotations

from collections.abc import Callable

from trinkets.base import EventAwareTrinket, TrinketHost
from wm_kernel.core.bus import EventBus

__all__ = ["TrinketFactory", "make_trinket"]

#: A callable that makes a trinket on a bus for a host (a WorkingMemory), as a class does.
TrinketFactory = Callable[[EventBus, TrinketHost], EventAwareTrinket]


def make_trinket(
    factory: type[EventAwareTrinket] | TrinketFactory, bus: EventBus, host: TrinketHost, *, replace: bool = False
) -> EventAwareTrinket:
    """The trinket ``factory`` makes on ``bus`` for ``host`` (a class is told ``replace``); a
    TypeError if ``factory`` is neither a trinket class nor a callable that returns a trinket."""
    if isinstance(factory, type) and issubclass(factory, EventAwareTrinket):
        return factory(bus, host, replace=replace)
    if callable(factory):
        # any callable may land here (a class that is not a trinket too): check what it made
        make: Callable[..., object] = factory
        made = make(bus, host)
        if not isinstance(made, EventAwareTrinket):
            raise TypeError(f"trinket factory {factory!r} returned {type(made).__name__}")
        return made
    raise TypeError(f"expected a trinket class or factory, got {factory!r}")
