"""The trinket updates WorkingMemory runs itself, without building their events.

Where WorkingMemory is the only subscriber of ``UpdateTrinketEvent`` (and of
``TrinketContentEvent``), it hands a trinket its update directly: a compose cycle's updates
(:meth:`DirectUpdates.cycle`) and the refresh a trinket asks for from inside an event, such as a
stateful trinket whose items expired at a turn (:meth:`DirectUpdates.refresh`). The bus logs the
events they stand for, in the same order and depths and with the same failures
(``EventBus.deliver_each``, ``deliver`` and ``note``), and builds them only when the log is read.
A trinket that handles its update its own way (its class's ``plain_update`` is False) is
published its event, as is every update once someone else subscribes.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from wm_kernel.core.bus import EventBus
from wm_kernel.core.composer import SystemPromptComposer
from wm_kernel.core.events import TrinketContentEvent, UpdateTrinketEvent, new_event_id
from wm_kernel.core.section_store import SectionStore
from wm_kernel.core.trinket_shape import RefreshesDirectly, Trinket

__all__ = ["DirectUpdates"]

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=Trinket)

#: The context of a compose cycle's updates.
_NO_CONTEXT: Mapping[str, Any] = MappingProxyType({})


class DirectUpdates(Generic[T]):
    """Runs the updates of one WorkingMemory's trinkets where its handlers are the only
    subscribers.

    Parameters
    ----------
    bus, composer, sections:
        The WorkingMemory's bus, composer and section store.
    trinkets:
        Its registered trinkets by class name (the registry's own dict, read on every update).
    isolate:
        Its ``_isolate_failure(trinket, exc, *, doing="", on=None)``.
    on_update, on_content:
        Its subscribers of the two events: while they are the only ones, updates run directly.
    """

    def __init__(
        self,
        bus: EventBus,
        composer: SystemPromptComposer,
        sections: SectionStore,
        trinkets: Mapping[str, T],
        isolate: Callable[..., None],
        on_update: Callable[[UpdateTrinketEvent], None],
        on_content: Callable[[TrinketContentEvent], None],
    ) -> None:
        self._bus, self._composer, self._trinkets = bus, composer, trinkets
        #: The section store contents are kept in (WorkingMemory replaces it with its store).
        self.sections = sections
        self._isolate, self._on_update, self._on_content = isolate, on_update, on_content
        # (the bus's subscription revision, the update handler or None, whether contents are kept)
        self._route: tuple[int, Callable[..., Any] | None, bool] = (-1, None, False)

    def route(self) -> tuple[int, Callable[..., Any] | None, bool]:
        """How an update is delivered while the bus's subscriptions stay as they are: the bus's
        revision; the update handler when it is WorkingMemory's own and the only one (None: the
        update is published); whether WorkingMemory alone keeps the contents. Worked out again
        only when the subscriptions changed."""
        bus, route = self._bus, self._route
        if route[0] != bus.revision:
            updates, contents = bus.subscribers(UpdateTrinketEvent), bus.subscribers(TrinketContentEvent)
            handler = self._on_update
            direct = handler if len(updates) == 1 and updates[0] == handler else None
            keep = len(contents) == 1 and contents[0] == self._on_content
            route = self._route = (bus.revision, direct, keep)
        return route

    def cycle(self, continuum_id: str, user_id: str, now: Callable[[], Any]) -> bool:
        """A compose cycle's updates, one per trinket in registration order; False (nothing done)
        when they are to be published."""
        _, handler, keep = self.route()
        if handler is None:
            return False
        self._bus.deliver_each(
            UpdateTrinketEvent,
            self._rows(continuum_id, user_id, now),
            handler,
            functools.partial(self.update, continuum_id, user_id, keep, _NO_CONTEXT),
            TrinketContentEvent,
        )
        return True

    def refresh(self, trinket: T, context: Mapping[str, Any], fields: tuple[Any, ...]) -> bool:
        """The update a trinket asked for itself (``fields``: its event's fields without the id;
        their context a copy of ``context``); False (nothing done) when it is to be published."""
        _, handler, keep = self.route()
        if handler is None or not getattr(type(trinket), "plain_update", False):
            return False
        self._bus.deliver(
            UpdateTrinketEvent,
            fields,
            handler,
            self.update,
            fields[0],
            fields[1],
            keep,
            context,
            fields[3],
            answer_type=TrinketContentEvent,
        )
        return True

    def _rows(self, continuum_id: str, user_id: str, now: Callable[[], Any]) -> Iterator[tuple[tuple[Any, ...], str]]:
        """The fields of each trinket's update and its name, for ``bus.deliver_each``; a trinket
        that handles its update its own way is published its event between them."""
        for name, trinket in list(self._trinkets.items()):
            if getattr(type(trinket), "plain_update", False):
                yield (continuum_id, user_id, now(), name, {}), name
            else:
                self._bus.publish(UpdateTrinketEvent(continuum_id, user_id, new_event_id(), now(), name, {}))

    def update(
        self, continuum_id: str, user_id: str, keep: bool, context: Mapping[str, Any], name: str
    ) -> tuple[Any, ...] | None:
        """What WorkingMemory's update handler does with an update of trinket ``name``, and the
        trinket's answer kept as its content handler would (``keep``) or published when someone
        else listens to it. Returns the fields of the answer's TrinketContentEvent when the bus is
        to log it (its section was kept without a store write, which cannot fail)."""
        found = self._trinkets.get(name)
        if found is None:  # unregistered by an earlier trinket's update
            logger.warning("UpdateTrinketEvent for unknown trinket %r ignored", name)
            return None
        trinket: RefreshesDirectly = found  # type: ignore[assignment]  # its class said plain_update
        try:
            trinket.finish_pending_flush()  # a collapse could not: old items must not return
            content, at = trinket.refresh_content(context)
        except Exception as exc:
            self._isolate(found, exc)
            return None
        if not content:
            return None
        section, cached = trinket.variable_name, trinket.cache_policy
        if not keep:
            self._bus.publish(
                TrinketContentEvent(continuum_id, user_id, new_event_id(), at, section, content, name, cached)
            )
        elif self.sections.holds(section, content, cached):  # no store write: nothing can fail
            self._composer.add_section(section, content, cached, name)
            return (continuum_id, user_id, at, section, content, name, cached)
        else:
            # what the content handler does, without a delivery: the content is logged first
            # (inside the update), and a failed store write is reported on it
            row = self._bus.note(TrinketContentEvent, (continuum_id, user_id, at, section, content, name, cached))
            try:
                self.sections.write(user_id, section, content, cached, at)
            except Exception as exc:
                self._isolate(found, exc, doing="storing its section failed", on=row)
                return None
            self._composer.add_section(section, content, cached, name)
        return None
