"""WorkingMemory: the event-driven coordinator of trinkets and the composer.

It handles ComposeSystemPromptEvent (one compose cycle), routes UpdateTrinketEvent to the target
trinket with failure isolation, collects TrinketContentEvent into the composer and the state store,
publishes SystemPromptComposedEvent, and ends the segment of every trinket on SegmentCollapsedEvent
(stateful ones flush their items).

Examples
--------
>>> from wm_kernel.core.bus import EventBus
>>> from wm_kernel.core.events import ComposeSystemPromptEvent
>>> bus = EventBus(); wm = WorkingMemory(bus)
>>> record = bus.publish(ComposeSystemPromptEvent.create(continuum_id="c1", base_prompt="Hi {first_name}"))
>>> wm.composed["cached_content"].splitlines()[0]
'Hi friend'
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from traitlets import Dict, HasTraits, Instance, List, Unicode, observe

from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import Clock, SystemClock
from wm_kernel.core.composer import SystemPromptComposer
from wm_kernel.core.composer.budget import TokenBudget, TokenLimit
from wm_kernel.core.composer.caps import Cap, apply_caps, with_cap
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.events import (
    ComposeSystemPromptEvent,
    SegmentCollapsedEvent,
    SystemPromptComposedEvent,
    TrinketContentEvent,
    UpdateTrinketEvent,
)
from wm_kernel.core.failures import CollapseIncompleteError, failure_kind
from wm_kernel.core.placeholders import Placeholders
from wm_kernel.core.profile import Profile
from wm_kernel.core.prompt import AllTrinketStates, ComposedPrompt, ComposedPromptTrait, TrinketState
from wm_kernel.core.section_store import SectionStore
from wm_kernel.core.trinket_registry import TrinketRegistry
from wm_kernel.core.trinket_shape import Trinket
from wm_kernel.stores.embedded import MemoryStore, StateStore
from wm_kernel.utils.checks import check_str

__all__ = ["WorkingMemory"]

logger = logging.getLogger("wm_kernel.core.working_memory")

#: The kind of trinket a WorkingMemory holds (a Session's holds ``EventAwareTrinket``\ s).
T = TypeVar("T", bound=Trinket)


class WorkingMemory(HasTraits, Generic[T]):
    """Coordinates trinkets through events and composes the system prompt.

    Parameters
    ----------
    event_bus:
        The bus to listen and publish on.
    store:
        Where each trinket's last content is kept (``trinkets:{user_id}`` hash); default MemoryStore.
    user_id:
        Owner of the store entries; every event WorkingMemory creates carries it.
    profile:
        Fills the base prompt's placeholders.
    clock:
        Time source for events, ``last_updated`` and relative times.
    layout:
        The composer's layout (default ``Layout.default()``); ignored if ``composer`` is given.
    composer:
        A ready composer to use instead of a new one.
    continuum_id:
        The conversation id used when none is given; each compose event sets it. Stateful trinkets
        key their stored items by it when constructed, so set it before registering them.
    """

    # the attributes every compose cycle reads, as slots: an attribute in the instance's dict is
    # read through a cache the interpreter (3.11) keeps missing on this class's dict, a slot is not
    __slots__ = (
        "_user_id",
        "_fitting",
        "bus",
        "_stored",
        "profile",
        "clock",
        "composer",
        "budget",
        "lock",
        "continuum_id",
        "_registry",
        "_trinkets",
        "_registering",
        "_placeholders",
    )

    composed = ComposedPromptTrait(
        help="The ComposedPrompt of the last compose cycle (None before the first); notifies on "
        "every compose, even one whose text did not change."
    )
    user_id = Unicode("notebook", help="Owner of the state-store entries and of every event created.")
    trinket_names = List(Unicode(), help="Registered trinket class names, in registration order.")
    token_budget = TokenLimit(
        help="Most tokens a composed prompt may take (None: no budget); the "
        "lowest-priority sections are dropped to fit (see wm_kernel.core.composer.budget)."
    )
    caps = Dict(
        value_trait=Instance(Cap),
        key_trait=Unicode(),
        help="Section name -> Cap: the most a section may show, hard or soft "
        "(see wm_kernel.core.composer.caps); set with set_cap().",
    )
    budget_step = TokenLimit(
        help="Move the budget's cut only when the overflow crosses a multiple "
        "of this many tokens, so the kept prefix stays cache-stable (None: "
        "fit exactly every compose)."
    )

    def __init__(
        self,
        event_bus: EventBus,
        *,
        store: StateStore | None = None,
        user_id: str = "notebook",
        profile: Profile | None = None,
        clock: Clock | None = None,
        layout: Layout | None = None,
        composer: SystemPromptComposer | None = None,
        continuum_id: str = "",
    ) -> None:
        if not isinstance(event_bus, EventBus):
            raise TypeError(f"WorkingMemory needs an EventBus, got {type(event_bus).__name__}")
        # both end up in store keys (wm_kernel.stores.keys): str, and text a store can hold
        check_str(user_id, "user_id")
        check_str(continuum_id, "continuum_id", empty_ok=True)
        super().__init__(user_id=user_id)
        # the values of the traits every compose reads, kept as plain attributes (a trait's read
        # costs two calls): user_id; caps, token_budget and budget_step
        self._user_id = user_id
        self._fitting: tuple[dict[str, Cap], int | None, int | None] = (self.caps, self.token_budget, self.budget_step)
        self.bus = event_bus
        self._stored = SectionStore(store if store is not None else MemoryStore())
        self.profile: Profile = profile if profile is not None else Profile()
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.composer = composer if composer is not None else SystemPromptComposer(layout)
        #: Fits each compose into ``token_budget``; its ``counter`` counts the tokens.
        self.budget = TokenBudget()
        # one lock for compose cycles, updates and trinket state changes, so a compose never sees a
        # half-applied change from another thread
        self.lock = threading.RLock()
        #: The conversation events default to; stateful trinkets key their stored items by it.
        self.continuum_id = continuum_id
        self._registry: TrinketRegistry[T] = TrinketRegistry()
        self._trinkets = self._registry.by_name  # read on every compose
        self._registering = 0  # > 0 inside registering(): trinket_names is set once, at its end
        self._placeholders = Placeholders()
        event_bus.subscribe(ComposeSystemPromptEvent, self._handle_compose)
        # the two events of every trinket's update are taken by their fields: nobody else
        # listening, the bus builds neither (nor the composed prompt's) unless its log is read
        event_bus.subscribe(UpdateTrinketEvent, self._handle_update_trinket, fields=True)
        event_bus.subscribe(TrinketContentEvent, self._handle_trinket_content, fields=True)
        event_bus.subscribe(SegmentCollapsedEvent, self._handle_segment_collapsed)

    @observe("user_id", "caps", "token_budget", "budget_step")
    def _read_on_every_compose_changed(self, change: dict[str, Any]) -> None:
        self._user_id = self.user_id
        self._fitting = (self.caps, self.token_budget, self.budget_step)

    # -- registration
    @property
    def layout(self) -> Layout:
        """The composer's layout (placement -> ordered section names)."""
        return self.composer.layout

    @property
    def trinkets(self) -> dict[str, T]:
        """Registered trinkets by class name, in registration order (a copy)."""
        return dict(self._trinkets)

    @property
    def store(self) -> StateStore:
        """Where each section's last content is kept (and trinkets keep their state)."""
        return self._stored.store

    @store.setter
    def store(self, store: StateStore) -> None:
        self._stored = SectionStore(store)  # what was written to another store says nothing here

    @property
    def store_key(self) -> str:
        """The store hash holding each section's last content: ``trinkets:{user_id}``."""
        return self._stored.key(self.user_id)

    def register_trinket(self, trinket: T, *, replace: bool = False) -> None:
        """Register a trinket by class name. A second trinket with the same name or the same section
        is a ValueError unless ``replace=True``, which detaches the one it replaces."""
        with self.lock:
            for old in self._registry.add(trinket, replace=replace):
                if old.variable_name != trinket.variable_name:
                    self.discard_section(old)
            if not self._registering:
                self.trinket_names = list(self._trinkets)

    @contextlib.contextmanager
    def registering(self) -> Iterator[None]:
        """Register many trinkets at once: ``trinket_names`` (a validated list trait, O(n) to set)
        is set once when the block ends, not once per trinket, so n registrations cost O(n)."""
        with self.lock:
            self._registering += 1
            try:
                yield
            finally:
                self._registering -= 1
                if not self._registering:
                    self.trinket_names = list(self._trinkets)

    def unregister_trinket(self, name: str) -> None:
        """Detach a trinket (class or section name) and drop its section; ValueError if unknown."""
        with self.lock:
            trinket = self._registry.get(name)
            self._registry.remove(trinket)
            self.discard_section(trinket)
            self.trinket_names = list(self._trinkets)

    def get_trinket(self, name: str) -> T:
        """The registered trinket of that class name (or section name); ValueError if none."""
        return self._registry.get(name)

    # -- the compose cycle
    def fill_placeholders(self, template: str) -> str:
        """Fill the base prompt's placeholders from the profile with the original's values, in one
        pass (:meth:`Placeholders.fill <wm_kernel.core.placeholders.Placeholders.fill>` says how)."""
        return self._placeholders.fill(template, self.profile, self.clock.now())

    def set_cap(self, name: str, limit: int | None, *, unit: str = "tokens", mode: str = "hard") -> Cap | None:
        """Cap the section of ``name`` (a section name, or a registered trinket's class name) at
        ``limit`` ``unit`` (``tokens`` or ``chars``), ``hard`` or ``soft``; ``limit=None`` removes
        its cap. Takes effect at the next compose; returns the cap set."""
        check_str(name, "name")
        section = self._trinkets[name].variable_name if name in self._trinkets else name
        self.caps, cap = with_cap(self.caps, section, limit, unit, mode)
        return cap

    def _handle_compose(self, event: ComposeSystemPromptEvent) -> None:
        with self.lock:
            self.continuum_id = event.continuum_id
            composer = self.composer
            composer.set_base_prompt(self.fill_placeholders(event.base_prompt))
            composer.clear_sections(preserve_base=True)
            publish, now = self.bus.publish, self.clock.now
            continuum_id, user_id = event.continuum_id, self._user_id
            for name in list(self._trinkets):
                publish(UpdateTrinketEvent, continuum_id, user_id, now(), name, {})
            self._finish_compose(continuum_id, user_id)

    def _finish_compose(self, continuum_id: str, user_id: str) -> None:
        """Caps, budget, the composer's prompt into ``composed``, and SystemPromptComposedEvent."""
        composer = self.composer
        caps, token_budget, budget_step = self._fitting
        capped = apply_caps(composer, self._trinkets.values(), caps, self.budget.counter) if caps else ()
        fit = self.budget.apply(
            composer,
            self._trinkets.values(),
            budget=token_budget,
            step=budget_step,
            revision=self._registry.revision,
        )
        if capped:
            fit = replace(fit, caps=tuple(capped))
        composed = composer.compose(omitted=[*self._registry.omitted(composer.held), *fit.dropped])
        composed.budget = fit
        previous = composed.previous = self.composed
        if previous is not None:
            previous.previous = None  # keep one step of history, not a chain
        self.composed = composed
        self.bus.publish(
            SystemPromptComposedEvent,
            continuum_id,
            user_id,
            self.clock.now(),
            composed["cached_content"],
            composed["non_cached_content"],
            tuple(composed["conversation_prefix_items"]),
            tuple(composed["post_history_items"]),
            composed["notification_center"],
        )

    def compose(self, base_prompt: str = "", *, continuum_id: str | None = None) -> ComposedPrompt:
        """Publish a ComposeSystemPromptEvent and return the ComposedPrompt it produced."""
        return self._run_compose_cycle(
            ComposeSystemPromptEvent.create(
                continuum_id=continuum_id if continuum_id is not None else self.continuum_id,
                user_id=self.user_id,
                clock=self.clock,
                base_prompt=base_prompt,
            )
        )

    def _run_compose_cycle(self, event: ComposeSystemPromptEvent) -> ComposedPrompt:
        """Publish ``event`` and return the prompt its cycle produced.

        The bus isolates subscribers, so a cycle that raised would leave the previous prompt in
        ``composed`` as if it were new; the caller asked for a prompt, so it gets the exception."""
        before = self.composed
        record = self.bus.publish(event)
        composed = self.composed
        if composed is None or composed is before:
            if record.failures:
                raise record.failures[-1].exception
            raise RuntimeError("the compose cycle produced no prompt (is WorkingMemory still subscribed to this bus?)")
        return composed

    def publish_trinket_update(
        self, target_trinket: str, context: Mapping[str, Any] | None = None, *, continuum_id: str | None = None
    ) -> None:
        """Ask one trinket (by class name) to regenerate, with an optional context."""
        trinket = self._trinkets.get(target_trinket) or self.get_trinket(target_trinket)
        if context is not None and not isinstance(context, Mapping):
            raise TypeError(f"context must be a mapping, got {type(context).__name__}")
        self.bus.publish(
            UpdateTrinketEvent,
            continuum_id if continuum_id is not None else self.continuum_id,
            self.user_id,
            self.clock.now(),
            trinket.name,
            dict(context or {}),
        )

    def refresh_trinket(self, trinket: T, context: Mapping[str, Any], *, continuum_id: str) -> None:
        """What ``publish_trinket_update(trinket.name, context)`` does, for a registered trinket
        asking for its own update from inside an event (a stateful trinket whose items expired at a
        turn): the name is not looked up, the context is copied as it is."""
        # a read-only view (the lifecycle's context) copies its dict ten times faster than dict() does
        copied = context.copy() if type(context) is MappingProxyType else dict(context)
        with self.lock:
            self.bus.publish(UpdateTrinketEvent, continuum_id, self.user_id, self.clock.now(), trinket.name, copied)

    def _handle_update_trinket(
        self, continuum_id: str, user_id: str, at: datetime, target_trinket: str, context: Mapping[str, Any]
    ) -> None:
        """An UpdateTrinketEvent, by its fields: the target trinket's update, isolated."""
        # look up under the lock: a trinket unregistered by another thread meanwhile must not
        # publish a section after its removal. (acquire and release, not ``with``: this runs
        # once per trinket per compose, and ``with`` binds both of the lock's methods each time)
        lock = self.lock
        lock.acquire()
        try:
            trinket = self._trinkets.get(target_trinket)
            if trinket is None:
                logger.warning("UpdateTrinketEvent for unknown trinket %r ignored", target_trinket)
                return
            try:
                trinket.run_update(continuum_id, self._user_id, context)
            except Exception as exc:
                self._isolate_failure(trinket, exc)
        finally:
            lock.release()

    def _isolate_failure(self, trinket: T, exc: Exception, *, doing: str = "") -> None:
        """A trinket raised: keep it out of the prompt and the store, and make the failure visible
        (its ``error`` trait, the composed prompt's ``omitted``, and the log record of the event
        being delivered). ``doing`` says what failed when it was not the update itself (e.g.
        "storing its section")."""
        kind = failure_kind(exc)
        logger.error("%s failure in trinket %s: %s: %s", kind, trinket.name, type(exc).__name__, exc)
        prefix = f"{doing}: " if doing else ""
        with trinket.hold_trait_notifications():
            trinket.error = f"{prefix}{type(exc).__name__}: {exc}"
            trinket.content = ""
            trinket.last_updated = self.clock.now()
        # the store may be what failed (a lock, a full disk): the section leaves the prompt anyway
        self.composer.remove_section(trinket.variable_name)
        try:
            self.discard_section(trinket)
        except Exception as again:
            logger.error("could not remove the stored section of %s: %s: %s", trinket.name, type(again).__name__, again)
        self.bus.report_failure(trinket.name, exc)

    def _handle_trinket_content(
        self,
        continuum_id: str,
        user_id: str,
        at: datetime,
        section: str,
        content: str,
        trinket_name: str,
        cache_policy: bool,
    ) -> None:
        """A TrinketContentEvent, by its fields: the content into the store and the composer."""
        lock = self.lock
        lock.acquire()  # not ``with``: as in _handle_update_trinket
        try:
            try:
                self._stored.write(self._user_id, section, content, cache_policy, at)
            except Exception as exc:
                # without this, the bus would isolate *this* subscriber and the section would
                # silently miss the prompt; instead it is the trinket's visible failure
                trinket = self._trinkets.get(trinket_name)
                if trinket is None:
                    raise
                self._isolate_failure(trinket, exc, doing="storing its section failed")
                return
            self.composer.add_section(section, content, cache_policy, trinket_name or None)
        finally:
            lock.release()

    def discard_section(self, trinket: T) -> None:
        """Remove a trinket's section from the store and the composer (empty, disabled or failed)."""
        with self.lock:
            section = trinket.variable_name
            self._stored.discard(self.user_id, section)
            self.composer.remove_section(section)

    # -- segment collapse
    def _handle_segment_collapsed(self, event: SegmentCollapsedEvent) -> None:
        """Flush every stateful trinket. Each flush is all or nothing for its trinket; one that
        fails (a locked store) is left out of the prompt with its ``error`` set, flushed again
        before its next update, and named in the CollapseIncompleteError raised at the end (the
        bus records it; ``Session.collapse_segment`` raises it to its caller)."""
        with self.lock:
            not_flushed: list[tuple[str, Exception]] = []
            for trinket in list(self._trinkets.values()):
                try:
                    trinket.end_segment()
                except Exception as exc:
                    self._isolate_failure(trinket, exc, doing="not flushed at segment collapse")
                    not_flushed.append((trinket.name, exc))
            if not_flushed:
                raise CollapseIncompleteError(event.segment_id, not_flushed)

    # -- state store views (the original's API)
    def get_trinket_state(self, section_name: str) -> TrinketState | None:
        """The stored state of one section, or None."""
        return self._stored.state(self.user_id, section_name)

    def get_all_trinket_states(self) -> AllTrinketStates:
        """Every stored section state for this user, with a count and the load time."""
        return self._stored.states(self.user_id, self.clock.now().isoformat())

    def __repr__(self) -> str:
        return f"<WorkingMemory user={self.user_id!r} trinkets={list(self._trinkets)} layout={self.layout.name!r}>"
