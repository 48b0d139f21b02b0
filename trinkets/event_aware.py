"""The event-driven trinket contract: :class:`EventAwareTrinket`, ``@feed``, the host it needs.

Import these from :mod:`trinkets.base`, the contract's front door; :mod:`trinkets.stateful` holds
:class:`StatefulTrinket`, built on this.
"""

from __future__ import annotations

import functools
import logging
import threading
from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, cast

from traitlets import Bool, HasTraits, Instance, Int, MetaHasTraits, Unicode, default, observe, validate

from trinkets.commands import Command, CommandError, arg, command, commands_of
from wm_kernel.core.events import TrinketContentEvent, TrinketFedEvent, UpdateTrinketEvent
from wm_kernel.core.trinket_shape import BUDGET_KEEP, DEFAULT_PRIORITY
from wm_kernel.utils import views

if TYPE_CHECKING:
    from wm_kernel.core.bus import EventBus
    from wm_kernel.core.clock import Clock
    from wm_kernel.core.composer import SystemPromptComposer
    from wm_kernel.core.composer.caps import Cap
    from wm_kernel.core.profile import Profile
    from wm_kernel.stores.embedded import StateStore


logger = logging.getLogger("wm_kernel.trinkets")
__all__ = ["EventAwareTrinket", "TrinketHost", "Priority", "feed", "feed_methods", "LIFECYCLE_REFRESH"]

F = TypeVar("F", bound=Callable[..., Any])
_feed_depth = threading.local()


def feed(method: F) -> F:
    """Mark a public method that feeds a trinket data (``add_guidance``, ``add_reminder``...).

    The call runs under the WorkingMemory lock (a compose on another thread never sees half of it)
    and, when it returns, the trinket publishes a
    :class:`~wm_kernel.core.events.TrinketFedEvent` (trinket name, method name, args, kwargs) on its bus;
    the scenario recorder and the dashboard subscribe to it. Nested feed calls (a feed method
    calling another) publish once, for the outermost call.
    """

    @functools.wraps(method)
    def wrapper(self: EventAwareTrinket, *args: Any, **kwargs: Any) -> Any:
        depth = getattr(_feed_depth, "n", 0)
        _feed_depth.n = depth + 1
        try:
            with self.lock:
                # a collapse could not flush it: finish that first, or the new item would be
                # flushed with the old ones by the retry
                self.finish_pending_flush()
                result = method(self, *args, **kwargs)
        finally:
            _feed_depth.n = depth
            self._inputs_changed()  # even after a failure: part of the change may have happened
        wm = getattr(self, "working_memory", None)
        if depth == 0 and wm is not None:
            self.event_bus.publish(
                TrinketFedEvent.create(
                    continuum_id=wm.continuum_id,
                    user_id=wm.user_id,
                    clock=wm.clock,
                    trinket_name=self.name,
                    method=method.__name__,
                    args=args,
                    kwargs=kwargs,
                )
            )
        return result

    # the marker feed_methods() looks for; functions take any attribute
    wrapper.__wm_feed__ = True  # type: ignore[attr-defined]
    return cast(F, wrapper)  # functools.wraps keeps the signature mypy cannot follow


def feed_methods(trinket: EventAwareTrinket | type[EventAwareTrinket]) -> list[str]:
    """Names of the methods marked with :func:`feed` on a trinket (class or instance)."""
    cls = trinket if isinstance(trinket, type) else type(trinket)
    return sorted(name for name in dir(cls) if getattr(getattr(cls, name, None), "__wm_feed__", False))


class TrinketHost(Protocol):
    """What a trinket needs of the WorkingMemory it registers with: its store, clock, profile,
    composer, ids and lock, and the calls that register it, drop its section, ask for its
    update (by name, or for itself from inside an event) and cap its section. The trinket
    contract names it here instead of importing WorkingMemory."""

    store: StateStore
    clock: Clock
    profile: Profile
    composer: SystemPromptComposer
    continuum_id: str
    lock: threading.RLock

    @property
    def user_id(self) -> str: ...

    @property
    def store_key(self) -> str: ...

    def register_trinket(self, trinket: EventAwareTrinket, *, replace: bool = False) -> None: ...

    def discard_section(self, trinket: EventAwareTrinket) -> None: ...

    def publish_trinket_update(
        self, target_trinket: str, context: Mapping[str, Any] | None = None, *, continuum_id: str | None = None
    ) -> None: ...

    def refresh_trinket(self, trinket: EventAwareTrinket, context: Mapping[str, Any], *, continuum_id: str) -> None: ...

    def set_cap(self, name: str, limit: int | None, *, unit: str = ..., mode: str = ...) -> Cap | None: ...


class Priority(Int[int, int]):
    """An int trait that refuses anything else with one TypeError (a bool, a float, a str), so a
    bad assignment leaves the old value in place and says why."""

    info_text = "an int"

    def validate(self, obj: Any, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            owner = type(obj).__name__ if obj is not None else "trinket"
            raise TypeError(f"{owner}.{self.name} must be an int, got {type(value).__name__} {value!r}")
        return value


#: How a trinket's update reuses its content: never; on its revision and the profile; on those
#: and what ``_reuse_key`` reads (the clock, store versions).
_REUSE_NEVER, _REUSE_PLAIN, _REUSE_KEYED = 0, 1, 2
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
    last_updated = Instance(datetime, allow_none=True, help="When content last changed (clock of the WorkingMemory).")
    error = Unicode("", help="'ExceptionType: message' of the last failed update; '' once one succeeds.")
    enabled = Bool(True, help="A disabled trinket contributes no section (an experiment switch).")
    style = Unicode(
        "original",
        help="The wording the section is written in: 'original' (the "
        "original system's exact text, the default) or another name in ``styles``.",
    )

    #: The ``priority`` a new instance starts with; built-in trinkets set their own (docs/budgets.md).
    default_priority: ClassVar[int] = DEFAULT_PRIORITY

    priority = Priority(
        help="How long this section survives a token budget: the sections of the "
        "lowest priorities are dropped first; NEVER_DROP (or above) is never dropped."
    )

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
    #: The changes :meth:`_set_content` holds until content and time are both set (None: none).
    _held: list[Any] | None = None

    def __init__(
        self, event_bus: EventBus, working_memory: TrinketHost, *, replace: bool = False, **kwargs: Any
    ) -> None:
        section = getattr(type(self), "variable_name", None)
        if not isinstance(section, str) or not section.strip():
            raise TypeError(
                f"{type(self).__name__} must set the class attribute variable_name "
                f"(the section it publishes) to a non-empty string"
            )
        cls = type(self)
        # what every update reads, in one record (see _Update); made before the traits are set,
        # whose changes it counts
        self._update = update = _Update(self, cls.__name__, section, _reuse_of(cls), event_bus, working_memory)
        super().__init__(**kwargs)
        self.event_bus = event_bus
        self.working_memory = working_memory
        update.enabled, update.error, update.content = self.enabled, self.error, self.content
        if (cls.run_update, cls.handle_update_trinket, cls._refresh) == _BASE_UPDATE:
            # WorkingMemory's call goes straight to the update: the class handles no event
            self.run_update = update.refresh  # type: ignore[method-assign]
        working_memory.register_trinket(self, replace=replace)

    # -- identity
    @property
    def name(self) -> str:
        """The class name: how WorkingMemory and UpdateTrinketEvent address this trinket."""
        return type(self).__name__

    @property
    def lock(self) -> threading.RLock | nullcontext[None]:
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
        """Regenerate content for an UpdateTrinketEvent and publish it.

        With ``reuse_content``, content generated from the same inputs is reused, not generated
        again; everything else (traits, events, the store) happens as after a generation. A
        subclass that reads the update (its context, say) overrides this and calls ``super()``."""
        self._refresh(event.continuum_id, self.working_memory.user_id, event.context)

    def run_update(self, continuum_id: str, user_id: str, context: Mapping[str, Any]) -> None:
        """What WorkingMemory calls while it delivers an UpdateTrinketEvent to this trinket (it
        takes the event by its fields): :meth:`handle_update_trinket` with the event being
        delivered, built only for a class that handles the event its own way. The content is
        published as a TrinketContentEvent of ``continuum_id`` and ``user_id``."""
        if type(self).handle_update_trinket is _BASE_HANDLE:
            self._refresh(continuum_id, user_id, context)
            return
        event = self.event_bus.current_event()
        if not isinstance(event, UpdateTrinketEvent):  # called outside an update's delivery
            event = UpdateTrinketEvent.create(
                continuum_id=continuum_id,
                user_id=user_id,
                clock=self.working_memory.clock,
                target_trinket=self.name,
                context=dict(context),
            )
        self.handle_update_trinket(event)

    def _refresh(self, continuum_id: str, user_id: str, context: Mapping[str, Any]) -> None:
        """The update itself: regenerate (or reuse) the content for ``context``, set the traits,
        and publish the content as a TrinketContentEvent of ``continuum_id`` and ``user_id``
        (nothing is published once the section is dropped: disabled, or no content)."""
        self._update.refresh(continuum_id, user_id, context)

    def _reuse_key(self, wm: TrinketHost) -> tuple[Any, ...] | None:
        """The inputs an update's content is reused on, for a trinket whose content depends on
        the clock or on store keys others write (None: cannot tell, so generate)."""
        key: tuple[Any, ...] = (
            (self._update.revision, wm.profile, wm.clock.now())
            if type(self).time_dependent
            else (self._update.revision, wm.profile)
        )
        if type(self).stored_inputs is not _NO_STORED_INPUTS:
            watched = self.stored_inputs()
            if watched:
                versions = tuple([wm.store.version(name) for name in watched])
                # a store that cannot tell what changed: generate, as the original always does
                return None if None in versions else (*key, versions)
        return key

    def _generate(self, context: Mapping[str, Any]) -> str:
        # a fresh dict for each call; a read-only view (the lifecycle's) copies its own faster
        content = self.generate_content(context.copy() if type(context) is MappingProxyType else dict(context))
        if not isinstance(content, str):
            raise TypeError(f"{self.name}.generate_content() returned {type(content).__name__}, expected str")
        return content

    def _set_content(self, content: str, now: datetime) -> None:
        # compare first: an unchanged trait stays quiet, so widgets get no message for it
        if self.content == content:
            return
        # both values are set before either notification goes out (content's first), so an
        # observer of one reads the other's new value; validators of a subclass run as on any set
        held: list[Any] = []
        self._held = held
        try:
            self.content = content
            self.last_updated = now
        except BaseException:
            # a validator refused one of them: what was set goes back (its change held and
            # dropped with the others), and nobody is told of either
            for change in list(reversed(held)):
                self.set_trait(change.name, change.old)
            raise
        finally:
            self._held = None
        for change in held:
            self.notify_change(change)

    def notify_change(self, change: Any) -> None:
        """traitlets' delivery of a change to the observers (public API, overridden as ipywidgets'
        ``Widget`` does), after the trinket's own bookkeeping: a change of any trait but its
        outputs is a change of its inputs, and the traits every update reads are mirrored in its
        update record (``_Update``: a traitlets read costs a call). While :meth:`_set_content` sets content and
        time, their changes wait until both are set; a ``hold_trait_notifications`` around it
        holds them as usual (this runs when it lets them go)."""
        held = self._held
        if held is not None:
            held.append(change)
            return
        if change["type"] == "change":
            name, update = change["name"], self._update
            if name == "content":
                update.content = change["new"]
            elif name == "error":
                update.error = change["new"]
            elif name not in _OUTPUT_TRAITS:
                update.revision += 1
                if name == "enabled":
                    update.enabled = change["new"]
        super().notify_change(change)

    def stored_inputs(self) -> tuple[str, ...]:
        """The store keys the content reads that others may write too (another process sharing
        the store, a notebook cell): with ``reuse_content``, their :meth:`StateStore.version
        <wm_kernel.stores.embedded.StateStore.version>` is part of the inputs. Default none."""
        return ()

    def _inputs_changed(self) -> None:
        """Something the content depends on changed: the next update generates it again. Called
        by every ``@feed`` call, trait change and lifecycle step; a trinket calls it after a store
        write of its own made elsewhere."""
        self._update.revision += 1

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

    def finish_pending_flush(self) -> None:
        """Finish a segment-collapse flush that failed (a stateful trinket calls this before each
        update, the feed decorator before each feed). Nothing to do by default."""

    # -- %trinket commands (see trinkets.commands); subclasses declare theirs beside their feeds
    @classmethod
    def commands(cls) -> dict[str, Command]:
        """The ``%trinket`` commands of this class, by name: the base's (``enable``, ``disable``,
        ``show``, ``refresh``, ``style``), then those its classes declare with :func:`command`."""
        return commands_of(cls)

    @command("enable", help="Switch the trinket on.", fixed={"enabled": True})
    @command("disable", help="Switch the trinket off: it contributes no section.", fixed={"enabled": False})
    @feed
    def set_enabled(self, enabled: bool) -> None:
        """Switch the trinket on or off (recorded by scenario recorders, unlike setting the trait)."""
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
        self.enabled = enabled

    @default("priority")
    def _default_priority(self) -> int:
        return type(self).default_priority

    # -- items a token budget may drop (see wm_kernel.core.composer.budget)
    def ranked_items(self) -> list[str]:
        """Ids of the items the section shows now, most important first; ``[]`` (the default) when
        the section can only be kept or dropped whole. A token budget drops items from the end."""
        return []

    def content_keeping(self, keep: int) -> str:
        """The section as ``generate_content`` writes it from the current state, showing only the
        first ``keep`` items of :meth:`ranked_items` (in their usual display order).

        It calls ``generate_content`` with the context ``{BUDGET_KEEP: frozenset of the kept ids}``;
        a trinket that ranks its items shows only those ids when the key is present."""
        return self.generate_content({BUDGET_KEEP: frozenset(self.ranked_items()[:keep])})

    @command("show", help="The trinket's current content, exactly.")
    def show(self) -> str:
        """The current content, shown as text (verbatim in a terminal, a ``<pre>`` in a notebook):
        a str, made by the text view the display layer registers (:mod:`wm_kernel.utils.views`)."""
        return views.text(self.content)

    @command(
        "cap",
        arg("limit", help="The most the section may show, or 'off' to remove its cap."),
        arg("--chars", action="store_true", help="Count characters instead of tokens."),
        arg("--soft", action="store_true", help="Mark the section when over, do not cut it."),
        help="Cap the section's size: hard (cut to fit) or soft (marked when over).",
    )
    def cap(self, limit: str, chars: bool = False, soft: bool = False) -> str:
        """Set (or with ``off``, remove) the cap of this trinket's section on its WorkingMemory
        (``WorkingMemory.set_cap``); says what was set."""
        if limit == "off":
            self.working_memory.set_cap(self.variable_name, None)
            return f"{self.variable_name}: no cap"
        try:
            number = int(limit)
        except ValueError:
            raise CommandError(f"cap: limit must be a whole number or 'off', got {limit!r}") from None
        try:
            cap = self.working_memory.set_cap(
                self.variable_name, number, unit="chars" if chars else "tokens", mode="soft" if soft else "hard"
            )
        except ValueError as exc:
            raise CommandError(f"cap: {exc}") from None
        return f"{self.variable_name}: {cap}"

    @command("refresh", help="Ask the trinket to regenerate now (an UpdateTrinketEvent).")
    def refresh(self) -> None:
        """:meth:`request_update` without context."""
        self.request_update()

    @command(
        "style",
        arg("style", choices=lambda cls: cls.styles, help="The wording to use."),
        help="Write the section in another wording (its styles: 'original' is the original's).",
    )
    @feed
    def set_style(self, style: str) -> None:
        """Switch the wording (recorded by scenario recorders, unlike setting the trait); an unknown
        style is a ValueError naming the known ones, and nothing changes."""
        if not isinstance(style, str):
            raise TypeError(f"style must be a str, got {type(style).__name__}")
        self.style = style

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


def _reuse_of(cls: type[EventAwareTrinket]) -> int:
    """How an update of ``cls`` reuses its content (its reuse_content, time_dependent and
    stored_inputs, read when a trinket is made)."""
    if not cls.reuse_content:
        return _REUSE_NEVER
    if not cls.time_dependent and cls.stored_inputs is _NO_STORED_INPUTS:
        return _REUSE_PLAIN
    return _REUSE_KEYED


class _Update:
    """What a trinket's update reads on every compose, kept in one record of one class, and the
    update itself (:meth:`refresh`).

    Every trinket class is a class of its own, so an attribute read on the trinket is looked up
    anew each time the next trinket of a compose comes (the interpreter caches one class per
    place in the code); read on this record, it is not. The trinket keeps the record current:
    ``enabled``, ``error`` and ``content`` mirror its traits, ``revision`` counts the changes of
    its inputs, ``reusable`` is ``(inputs, content, whether it shows)`` of the last generated
    content."""

    __slots__ = (
        "trinket",
        "name",
        "section",
        "reuse",
        "bus",
        "host",
        "enabled",
        "error",
        "content",
        "revision",
        "reusable",
    )

    def __init__(
        self, trinket: EventAwareTrinket, name: str, section: str, reuse: int, bus: EventBus, host: TrinketHost
    ) -> None:
        self.trinket, self.name, self.section, self.reuse, self.bus, self.host = (
            trinket,
            name,
            section,
            reuse,
            bus,
            host,
        )
        self.enabled, self.error, self.content = True, "", ""
        self.revision = 0
        self.reusable: tuple[tuple[Any, ...] | None, str, bool] | None = None

    def refresh(self, continuum_id: str, user_id: str, context: Mapping[str, Any]) -> None:
        """:meth:`EventAwareTrinket._refresh`: the update of the trinket."""
        trinket, wm = self.trinket, self.host
        if not self.enabled:
            trinket._set_content("", wm.clock.now())
            wm.discard_section(trinket)
            return
        # an update with a context may carry inputs (memories, a report): it always generates;
        # a lifecycle refresh carries none, so a turn's refresh and its compose generate once
        reuse = self.reuse
        if reuse and (not context or context is LIFECYCLE_REFRESH or context == LIFECYCLE_REFRESH):
            key = (self.revision, wm.profile) if reuse == _REUSE_PLAIN else trinket._reuse_key(wm)
            reusable = self.reusable
            if reusable is not None and reusable[0] == key:
                content, shown = reusable[1], reusable[2]
            else:
                content = trinket._generate(context)
                shown = bool(content) and not content.isspace()
                self.reusable = (key, content, shown) if key is not None else None
        else:
            content = trinket._generate(context)
            shown = bool(content) and not content.isspace()
            self.reusable = None
        if self.error:
            trinket.error = ""
        now = wm.clock.now()
        if shown:
            current = self.content
            if current is not content and current != content:
                trinket._set_content(content, now)
            self.bus.publish(
                TrinketContentEvent,
                continuum_id,
                user_id,
                now,
                self.section,
                content,
                self.name,
                trinket.cache_policy,  # a class attribute a trinket may change (StoredSection)
            )
            return
        trinket._set_content("", now)
        wm.discard_section(trinket)


# the default stored_inputs (none): an update does not call it
_NO_STORED_INPUTS = EventAwareTrinket.stored_inputs
# the base's update handler: a class that keeps it is not handed the update's event, so the
# event is not built for it
_BASE_HANDLE = EventAwareTrinket.handle_update_trinket
_BASE_RUN = EventAwareTrinket.run_update
# a class that keeps all three of the base's update methods has run_update bound to its record's
# refresh, which does what they do
_BASE_UPDATE = (_BASE_RUN, _BASE_HANDLE, EventAwareTrinket._refresh)
