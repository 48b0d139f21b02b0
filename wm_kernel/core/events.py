"""Immutable events of the working-memory flow, named and shaped as in the reference.

Every event carries ``continuum_id``, ``user_id``, ``event_id`` and ``occurred_at``. Build events with
``Event.create(...)``: it fills the id and the time (from the clock in use, or the system clock).

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> e = ComposeSystemPromptEvent.create(continuum_id="c1", base_prompt="Hi",
...                                     clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> e.base_prompt, e.occurred_at.isoformat()
('Hi', '2026-11-30T09:00:00+00:00')
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Self

from wm_kernel.utils.quickinit import quick_init

if TYPE_CHECKING:
    from wm_kernel.core.clock import Clock

# Event ids: a per-process random prefix and a counter. Unique within a run and across runs in
# practice, and an order of magnitude cheaper than uuid4 on the compose hot path.
_ID_PREFIX = os.urandom(4).hex()
_ID_COUNTER = itertools.count(1)


def new_event_id() -> str:
    """A fresh event id. Hot paths build events positionally, ``TrinketContentEvent(continuum_id,
    user_id, new_event_id(), now, ...)``, which spares ``create``'s keyword re-packing."""
    return f"{_ID_PREFIX}-{next(_ID_COUNTER):x}"


_new_event_id = new_event_id


#: The numbers of event ids: ``next(event_numbers)`` is taken when an event is published by its
#: fields and written out by :func:`event_id_of` when it is built (an event built only when read
#: keeps the id it would have had). ``next()`` on the counter itself: a call of its ``__next__``
#: costs more.
event_numbers = _ID_COUNTER


def event_id_of(number: int) -> str:
    """The event id of a number taken from :data:`event_numbers`."""
    return f"{_ID_PREFIX}-{number:x}"


def _chars(n: int) -> str:
    return f"{n:,} char" + ("" if n == 1 else "s")


def _clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@quick_init
@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event: who, which conversation, which event, when."""

    continuum_id: str
    user_id: str
    event_id: str
    occurred_at: datetime

    #: Field names shown in the bus log besides the common ones.
    key_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def create(cls, *, continuum_id: str, user_id: str = "", clock: Clock | None = None, **fields_: Any) -> Self:
        """Build an event with a fresh ``event_id`` and ``occurred_at`` from ``clock``."""
        now = clock.now() if clock is not None else datetime.now(UTC)
        return cls(continuum_id, user_id, _new_event_id(), now, **fields_)

    @property
    def event_type(self) -> str:
        return type(self).__name__

    def key_values(self) -> dict[str, Any]:
        """The key fields of this event (``key_fields``) and their values, for logs and tables."""
        return {name: getattr(self, name) for name in self.key_fields}

    def detail(self) -> str:
        """One line saying what the event carries, for event logs: its key fields plus what each
        type adds (an update's context, content sizes). Never the event id."""
        return ", ".join(f"{k}={v}" for k, v in self.key_values().items())

    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dict (the event type under ``event_type``)."""
        out: dict[str, Any] = {"event_type": self.event_type}
        for f in fields(self):
            out[f.name] = getattr(self, f.name)
        return out


@quick_init
@dataclass(frozen=True, slots=True)
class ComposeSystemPromptEvent(Event):
    """Asks WorkingMemory to compose the system prompt (the driver publishes it once per turn)."""

    base_prompt: str = ""
    key_fields: ClassVar[tuple[str, ...]] = ()

    def detail(self) -> str:
        return f"base_prompt={_chars(len(self.base_prompt))}"


@quick_init
@dataclass(frozen=True, slots=True)
class UpdateTrinketEvent(Event):
    """Asks one trinket (by class name) to regenerate its content, with an optional context."""

    target_trinket: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)
    key_fields: ClassVar[tuple[str, ...]] = ("target_trinket",)

    def detail(self) -> str:
        line = Event.detail(self)
        return f"{line}, context={_clip(repr(dict(self.context)))}" if self.context else line


@quick_init
@dataclass(frozen=True, slots=True)
class TrinketContentEvent(Event):
    """A trinket's freshly generated, non-empty content for one section."""

    variable_name: str = ""
    content: str = ""
    trinket_name: str = ""
    cache_policy: bool = False
    key_fields: ClassVar[tuple[str, ...]] = ("trinket_name", "variable_name")

    def detail(self) -> str:
        cached = ", cached" if self.cache_policy else ""
        return f"{Event.detail(self)}, content={_chars(len(self.content))}{cached}"


@quick_init
@dataclass(frozen=True, slots=True)
class SystemPromptComposedEvent(Event):
    """The composed prompt, published by WorkingMemory at the end of a compose cycle."""

    cached_content: str = ""
    non_cached_content: str = ""
    conversation_prefix_items: tuple[str, ...] = ()
    post_history_items: tuple[str, ...] = ()
    notification_center: str = ""
    key_fields: ClassVar[tuple[str, ...]] = ()

    def detail(self) -> str:
        # the size of each non-empty part, by the reference's field names
        parts = []
        for name in (
            "cached_content",
            "non_cached_content",
            "conversation_prefix_items",
            "post_history_items",
            "notification_center",
        ):
            value = getattr(self, name)
            if isinstance(value, str):
                if value:
                    parts.append(f"{name}={_chars(len(value))}")
            elif value:
                parts.append(f"{name}={len(value)} item" + ("" if len(value) == 1 else "s"))
        return ", ".join(parts) or "(empty prompt)"


@quick_init
@dataclass(frozen=True, slots=True)
class TurnCompletedEvent(Event):
    """One user+assistant exchange finished. ``turn_number`` is global, the other per segment."""

    turn_number: int = 0
    segment_turn_number: int = 0
    key_fields: ClassVar[tuple[str, ...]] = ("turn_number", "segment_turn_number")


@quick_init
@dataclass(frozen=True, slots=True)
class SegmentCollapsedEvent(Event):
    """A conversation segment ended and was summarised; stateful trinkets are flushed."""

    segment_id: str = ""
    summary: str = ""
    tools_used: tuple[str, ...] = ()
    key_fields: ClassVar[tuple[str, ...]] = ("segment_id", "summary")


@quick_init
@dataclass(frozen=True, slots=True)
class TrinketFedEvent(Event):
    """A ``@feed`` method of a trinket returned: what was called, with which arguments.

    Not in the reference: wm-kernel publishes it so that observers (the scenario recorder, the
    dashboard) hear of data given to a trinket without the trinket knowing about them. Nested feed
    calls (a feed method calling another) publish one event, for the outermost call.
    """

    trinket_name: str = ""
    method: str = ""
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    key_fields: ClassVar[tuple[str, ...]] = ("trinket_name", "method")


#: Every event class by name: what ``EventBus.subscribe`` accepts as a name.
EVENT_TYPES: dict[str, type[Event]] = {
    cls.__name__: cls
    for cls in (
        ComposeSystemPromptEvent,
        UpdateTrinketEvent,
        TrinketContentEvent,
        SystemPromptComposedEvent,
        TurnCompletedEvent,
        SegmentCollapsedEvent,
        TrinketFedEvent,
    )
}
