"""Base classes of every trinket: :class:`EventAwareTrinket` and :class:`StatefulTrinket`.

A trinket is a traitlets ``HasTraits``: its observable state (``content``, ``last_updated``,
``error``, ``enabled``, and ``current_turn`` on stateful ones) is declared as traits, so widgets can
link to it. A subclass sets ``variable_name`` (the section it publishes) and implements
``generate_content(context) -> str``; stateful ones also implement ``_expire_items()`` and
``_clear_all_state()``. Missing any of these is a TypeError at construction.

Examples
--------
>>> from wm_kernel.bus import EventBus
>>> from wm_kernel.core import WorkingMemory
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

import functools
import threading
from abc import ABCMeta, abstractmethod
from contextlib import nullcontext
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, TypeVar, cast

from traitlets import Bool, HasTraits, Instance, Int, MetaHasTraits, Unicode, observe, validate
from traitlets.utils.bunch import Bunch

from wm_kernel.events import (TrinketContentEvent, TrinketFedEvent, TurnCompletedEvent,
                              UpdateTrinketEvent, new_event_id)

if TYPE_CHECKING:
    from wm_kernel.bus import EventBus
    from wm_kernel.core import WorkingMemory
    from wm_kernel.store import StateStore


F = TypeVar("F", bound=Callable[..., Any])
_feed_depth = threading.local()


def feed(method: F) -> F:
    """Mark a public method that feeds a trinket data (``add_guidance``, ``add_reminder``...).

    The call runs under the WorkingMemory lock (a compose on another thread never sees half of it)
    and, when it returns, the trinket publishes a
    :class:`~wm_kernel.events.TrinketFedEvent` (trinket name, method name, args, kwargs) on its bus;
    the scenario recorder and the dashboard subscribe to it. Nested feed calls (a feed method
    calling another) publish once, for the outermost call.
    """

    @functools.wraps(method)
    def wrapper(self: "EventAwareTrinket", *args: Any, **kwargs: Any) -> Any:
        depth = getattr(_feed_depth, "n", 0)
        _feed_depth.n = depth + 1
        try:
            with self.lock:
                result = method(self, *args, **kwargs)
        finally:
            _feed_depth.n = depth
            self._inputs_changed()  # even after a failure: part of the change may have happened
        wm = getattr(self, "working_memory", None)
        if depth == 0 and wm is not None:
            self.event_bus.publish(TrinketFedEvent.create(
                continuum_id=wm.continuum_id, user_id=wm.user_id, clock=wm.clock,
                trinket_name=self.name, method=method.__name__, args=args, kwargs=kwargs))
        return result

    # the marker feed_methods() looks for; functions take any attribute
    wrapper.__wm_feed__ = True  # type: ignore[attr-defined]
    return cast(F, wrapper)  # functools.wraps keeps the signature mypy cannot follow


def feed_methods(trinket: "EventAwareTrinket | type[EventAwareTrinket]") -> list[str]:
    """Names of the methods marked with :func:`feed` on a trinket (class or instance)."""
    cls = trinket if isinstance(trinket, type) else type(trinket)
    return sorted(name for name in dir(cls)
                  if getattr(getattr(cls, name, None), "__wm_feed__", False))


#: The context of the update a stateful trinket asks for when items expired.
LIFECYCLE_REFRESH: Mapping[str, str] = MappingProxyType({"action": "lifecycle_refresh"})
#: Traits a trinket sets from its updates; a change of any other trait is a change of its inputs.
_OUTPUT_TRAITS = frozenset({"content", "last_updated", "error"})


class _TrinketMeta(MetaHasTraits, ABCMeta):
    """traitlets' metaclass and abc's, combined, so abstract trinkets cannot be instantiated."""


class EventAwareTrinket(HasTraits, metaclass=_TrinketMeta):
    """A content provider for one prompt section.

    Parameters
    ----------
    event_bus:
        The bus it publishes its content on.
    working_memory:
        The WorkingMemory it registers with (by class name).
    replace:
        Replace an already registered trinket of the same name or section instead of failing.
    """

    #: The section this trinket publishes (e.g. "datetime_section"). Required.
    variable_name: ClassVar[str]
    #: Whether the section may go to the cached part of the system prompt.
    cache_policy: ClassVar[bool] = False

    content = Unicode("", help="The content of the last successful update ('' if none).")
    last_updated = Instance(datetime, allow_none=True,
                            help="When content last changed (clock of the WorkingMemory).")
    error = Unicode("", help="'ExceptionType: message' of the last failed update; '' once one succeeds.")
    enabled = Bool(True, help="A disabled trinket contributes no section (an experiment switch).")
    style = Unicode("original", help="The wording the section is written in: 'original' (the "
                    "original system's exact text, the default) or another name in ``styles``.")

    #: The wordings this trinket can write; "original" is the original system's, byte for byte.
    #: A trinket that offers its own wording adds a name (e.g. "revised") and switches on ``style``.
    styles: ClassVar[tuple[str, ...]] = ("original",)

    #: Whether an update whose inputs did not change since the last generated content reuses that
    #: content instead of calling ``generate_content`` again (the TrinketContentEvent is published
    #: all the same). Inputs are: the trinket's traits (``style``, ``enabled``...), its ``@feed``
    #: calls and lifecycle (turns, segments), its own store writes (it calls
    #: :meth:`_inputs_changed` on those not made from a feed method), the WorkingMemory's profile,
    #: and, when ``time_dependent``, the clock's current instant. An update with a context (other
    #: than a lifecycle refresh's) always generates.
    #: Every built-in trinket sets it; a trinket that reads anything else (a plain attribute, a
    #: global, store data written by others) leaves it False, and a subclass of a built-in one
    #: with such outside inputs opts out by setting it False.
    reuse_content: ClassVar[bool] = False
    #: Whether the content depends on the clock (part of the inputs when ``reuse_content``).
    time_dependent: ClassVar[bool] = False

    def __init__(self, event_bus: "EventBus", working_memory: "WorkingMemory", *,
                 replace: bool = False, **kwargs: Any) -> None:
        section = getattr(type(self), "variable_name", None)
        if not isinstance(section, str) or not section.strip():
            raise TypeError(f"{type(self).__name__} must set the class attribute variable_name "
                            f"(the section it publishes) to a non-empty string")
        # the inputs' revision and (key, content) of the last generated content (reuse_content)
        self._revision = 0
        self._reusable: tuple[tuple[Any, ...], str] | None = None
        super().__init__(**kwargs)
        self.event_bus = event_bus
        self.working_memory = working_memory
        # any trait but the outputs is an input: one observer counts the changes
        self.observe(self._on_trait_change)
        working_memory.register_trinket(self, replace=replace)

    # -- identity
    @property
    def name(self) -> str:
        """The class name: how WorkingMemory and UpdateTrinketEvent address this trinket."""
        return type(self).__name__

    @property
    def section(self) -> str:
        return self.variable_name

    @property
    def lock(self) -> "threading.RLock | nullcontext[None]":
        """The WorkingMemory's lock: hold it while changing state another thread may compose from."""
        wm = getattr(self, "working_memory", None)
        return wm.lock if wm is not None else nullcontext()

    # -- the contract
    @abstractmethod
    def generate_content(self, context: dict[str, Any]) -> str:
        """Return this trinket's section text for the given update context ('' for no section).

        Do not catch infrastructure errors here: let them propagate to WorkingMemory, which isolates
        the failure and shows it on ``error``.
        """

    def handle_update_trinket(self, event: UpdateTrinketEvent) -> None:
        """Regenerate content for an UpdateTrinketEvent and publish it (WorkingMemory calls this).

        With ``reuse_content``, content generated from the same inputs is reused, not generated
        again; everything else (traits, events, the store) happens as after a generation."""
        wm = self.working_memory
        clock = wm.clock
        # traits read straight from their values on this hot path (they are only read here)
        values = self._trait_values
        if not values["enabled"]:
            self._set_content("", clock.now())
            wm.discard_section(self)
            return
        key: tuple[Any, ...] | None = None
        reusable = self._reusable
        context = event.context
        # an update with a context may carry inputs (memories, a report): it always generates;
        # a lifecycle refresh carries none, so a turn's refresh and its compose generate once
        if self.reuse_content and (not context or context == LIFECYCLE_REFRESH):
            key = ((self._revision, wm.profile, clock.now()) if self.time_dependent
                   else (self._revision, wm.profile))
        if reusable is not None and reusable[0] == key:
            content = reusable[1]
        else:
            content = self.generate_content(dict(context))
            if not isinstance(content, str):
                raise TypeError(f"{self.name}.generate_content() returned "
                                f"{type(content).__name__}, expected str")
            self._reusable = (key, content) if key is not None else None
        if values["error"]:
            self.error = ""
        now = clock.now()
        if content and not content.isspace():
            self._set_content(content, now)
            self.event_bus.publish(TrinketContentEvent(
                event.continuum_id, wm._trait_values["user_id"], new_event_id(), now,
                self.variable_name, content, type(self).__name__, self.cache_policy))
        else:
            self._set_content("", now)
            wm.discard_section(self)

    def _set_content(self, content: str, now: datetime) -> None:
        # compare first: an unchanged trait stays quiet, so widgets get no message for it
        old = self._trait_values["content"]
        if old == content:
            return
        old_time = self.last_updated
        # both values are set before either notification goes out, content's first, as
        # hold_trait_notifications would do, without the cost of its context on every turn (both
        # values are already valid: a str, and a datetime from the clock)
        self._trait_values["content"] = content
        self._trait_values["last_updated"] = now
        self.notify_change(Bunch(name="content", old=old, new=content, owner=self, type="change"))
        if old_time != now:
            self.notify_change(Bunch(name="last_updated", old=old_time, new=now, owner=self,
                                     type="change"))

    def _inputs_changed(self) -> None:
        """Something the content depends on changed: the next update generates it again. Called
        by every ``@feed`` call, trait change and lifecycle step; a trinket calls it after a store
        write of its own made elsewhere."""
        self._revision += 1

    def _on_trait_change(self, change: dict[str, Any]) -> None:
        if change["name"] not in _OUTPUT_TRAITS:
            self._revision += 1

    def request_update(self, **context: Any) -> None:
        """Ask WorkingMemory to regenerate this trinket now (publishes an UpdateTrinketEvent)."""
        self.working_memory.publish_trinket_update(self.name, context)

    def detach(self) -> None:
        """Stop listening to the bus (WorkingMemory calls this when the trinket is replaced)."""

    # -- the conversation's lifecycle; drivers call these on every trinket, whatever its kind
    def describe_items(self) -> list[dict[str, Any]]:
        """The live items as dicts with at least ``id``, ``label`` and ``turns_remaining`` (None for
        items that do not expire), for dashboards and expiry reports; none by default."""
        return []

    def resume_at(self, segment_turn: int) -> None:
        """Join a conversation that is at ``segment_turn`` of its segment (a Session calls this when
        it registers the trinket). Nothing to do for a trinket that does not count turns."""

    def begin_segment(self, start: datetime) -> None:
        """A conversation segment that started at ``start`` is the current one (a Session calls
        this once it is built). Nothing to do for most trinkets."""

    def end_segment(self) -> None:
        """The segment collapsed: drop whatever lives only for a segment (WorkingMemory calls this
        on SegmentCollapsedEvent; an exception is isolated like a failed update). Nothing by
        default."""

    @feed
    def set_enabled(self, enabled: bool) -> None:
        """Switch the trinket on or off (recorded by scenario recorders, unlike setting the trait)."""
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
        self.enabled = enabled

    @validate("style")
    def _check_style(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value not in self.styles:
            raise ValueError(f"{self.name} has no style {value!r} (known: {', '.join(self.styles)})")
        return str(value)

    @observe("enabled")
    def _enabled_changed(self, change: dict[str, Any]) -> None:
        if not change["new"] and getattr(self, "working_memory", None) is not None:
            self.working_memory.discard_section(self)

    def __repr__(self) -> str:
        state = "disabled" if not self.enabled else ("failed" if self.error else "ok")
        return f"<{self.name} section={self.variable_name!r} {state} chars={len(self.content)}>"


#: Version of the envelope a stateful trinket's items are stored in (``{"version", "state"}``).
STATE_VERSION = 1
#: Errors that mean "the stored data is not what this trinket wrote" (infrastructure errors, such as
#: sqlite3.OperationalError, are none of these and propagate as they are).
_UNREADABLE = (ValueError, TypeError, KeyError, AttributeError)


class StatefulTrinket(EventAwareTrinket):
    """A trinket whose items live for a number of turns within a conversation segment.

    On TurnCompletedEvent it sets ``current_turn`` to the event's ``segment_turn_number``, expires
    items, and, if anything expired, asks for a refresh (an UpdateTrinketEvent with context
    ``{"action": "lifecycle_refresh"}``). On SegmentCollapsedEvent WorkingMemory flushes it: items
    cleared, ``current_turn`` back to 0, store entry removed.

    Persistence. A subclass that sets ``state_prefix`` keeps its items in the WorkingMemory's store,
    field ``state`` of the hash ``{state_prefix}:{user_id}:{continuum_id}`` (:attr:`state_key`,
    fixed when the trinket is constructed), so a Session on a SQLite file finds them again after a
    restart. It implements ``_dump_state()`` (its items as a JSON-compatible dict, or None when there
    is nothing to keep), ``_parse_state(data)`` (check what was stored and return what
    ``_restore_state`` takes; ValueError for anything else) and ``_restore_state(parsed)``, and calls
    ``_save_state()`` whenever its items change, so a plain compose never writes. Stored data that
    cannot be read (corrupt, or not written by this kind of trinket) is a ValueError naming the key,
    raised before the trinket registers, so a failed construction changes nothing.
    """

    #: Store-key prefix of the items (see the class docstring); None keeps them in memory only.
    state_prefix: ClassVar[str | None] = None

    current_turn = Int(0, help="The turn within the current segment (0 before the first exchange).")

    def __init__(self, event_bus: "EventBus", working_memory: "WorkingMemory", **kwargs: Any) -> None:
        key = None
        if self.state_prefix is not None:
            key = f"{self.state_prefix}:{working_memory.user_id}:{working_memory.continuum_id}"
        # read and check before registering: unreadable data must leave the WorkingMemory as it was
        parsed = self._read_state(working_memory.store, key) if key is not None else None
        self._state_key = key
        self._restoring = True
        self._detached = False
        super().__init__(event_bus, working_memory, **kwargs)
        try:
            if parsed is not None:
                self._restore_state(parsed)
        finally:
            self._restoring = False
        event_bus.subscribe(TurnCompletedEvent, self.handle_turn_completed)

    @abstractmethod
    def _expire_items(self) -> bool:
        """Drop items whose time is over at ``current_turn``; True exactly when something was removed."""

    @abstractmethod
    def _clear_all_state(self) -> None:
        """Forget every item (segment collapse)."""

    # -- persistence (see the class docstring)
    @property
    def state_key(self) -> str | None:
        """The store hash holding the items (``{state_prefix}:{user_id}:{continuum_id}``), or None
        when they are kept in memory only."""
        return self._state_key

    def _dump_state(self) -> dict[str, Any] | None:
        """The items as a JSON-compatible dict, or None when there is nothing to keep."""
        return None

    def _parse_state(self, data: dict[str, Any]) -> Any:
        """Check stored ``data`` (what ``_dump_state`` returned) and return what ``_restore_state``
        takes; ValueError if it is not usable. Runs before registration: touch no trait here."""
        return data

    def _restore_state(self, parsed: Any) -> None:
        """Take the items ``_parse_state`` returned (construction only; nothing is saved meanwhile)."""

    def _read_state(self, store: "StateStore", key: str) -> Any:
        try:
            raw = store.hget(key, "state")
            if raw is None:
                return None
            if not isinstance(raw, dict) or set(raw) != {"version", "state"}:
                raise ValueError('expected {"version", "state"}, found '
                                 + (f"keys {sorted(raw)}" if isinstance(raw, dict)
                                    else type(raw).__name__))
            if raw["version"] != STATE_VERSION:
                raise ValueError(f"version {raw['version']!r}, this trinket reads version "
                                 f"{STATE_VERSION}")
            if not isinstance(raw["state"], dict):
                raise ValueError(f"state is a {type(raw['state']).__name__}, expected a dict")
            return self._parse_state(raw["state"])
        except _UNREADABLE as exc:
            raise ValueError(f"{self.name}: the state stored under {key!r} cannot be read "
                             f"({type(exc).__name__}: {exc}); delete it with "
                             f"store.delete({key!r}) to start empty") from None

    def _save_state(self) -> None:
        """Write the items to the store (call on every change of the items, never per compose)."""
        self._inputs_changed()  # the items changed, whatever the caller (a feed, a turn, a report)
        key = self._state_key
        if key is None or self._restoring or self._detached:
            return
        data = self._dump_state()
        store = self.working_memory.store
        if data is None:
            store.hdel(key, "state")
        else:
            store.hset(key, "state", {"version": STATE_VERSION, "state": data})

    # -- the lifecycle
    def resume_at(self, segment_turn: int) -> None:
        # TTLs of items loaded from the store (a resumed session) count from the segment's turn
        self.current_turn = segment_turn

    def end_segment(self) -> None:
        self._inputs_changed()
        self.flush()
        self._set_content("", self.working_memory.clock.now())
        self.working_memory.discard_section(self)

    def handle_turn_completed(self, event: TurnCompletedEvent) -> None:
        wm = self.working_memory
        with wm.lock:
            self.current_turn = event.segment_turn_number
            if self._expire_items():
                self._inputs_changed()
                # what wm.publish_trinket_update(name, context) publishes, built directly: this
                # trinket is registered and the context is the kernel's own
                self.event_bus.publish(UpdateTrinketEvent(
                    event.continuum_id, wm._trait_values["user_id"], new_event_id(),
                    wm.clock.now(), type(self).__name__, dict(LIFECYCLE_REFRESH)))

    def flush(self) -> None:
        """Clear all state and reset the turn (WorkingMemory calls this on segment collapse)."""
        with self.lock:
            self._clear_all_state()
            self._inputs_changed()
            self.current_turn = 0

    def detach(self) -> None:
        # a detached trinket (replaced or unregistered) no longer writes: its successor owns the key
        self._detached = True
        self.event_bus.unsubscribe(TurnCompletedEvent, self.handle_turn_completed)
