"""EventBus: synchronous publish/subscribe with subscriber isolation and a bounded event log.

``publish`` calls each subscriber of the event's type in subscription order, immediately; a
subscriber may publish in turn (nested publishes run depth-first). A subscriber that raises does not
stop the others: its exception is logged and recorded on the event's log record.

An event may be published by its class and fields (``publish(TurnCompletedEvent, "c", "", now, 1,
1)``): it is then built only if a subscriber takes events or the log is read. A subscriber that
takes the fields instead (``subscribe(..., fields=True)``) needs no event, so a compose cycle whose
only subscriber is WorkingMemory builds none of its per-trinket events.

Examples
--------
>>> from wm_kernel.core.events import TurnCompletedEvent
>>> bus = EventBus()
>>> seen = []
>>> bus.subscribe("TurnCompletedEvent", lambda e: seen.append(e.turn_number))
>>> bus.subscribe(TurnCompletedEvent, lambda e: 1 / 0)
>>> record = bus.publish(TurnCompletedEvent.create(continuum_id="c", turn_number=1,
...                                                 segment_turn_number=1))
>>> seen, record.failures[0].error
([1], 'ZeroDivisionError: division by zero')
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import operator
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from wm_kernel.core.events import EVENT_TYPES, Event, event_id_of, event_numbers

logger = logging.getLogger("wm_kernel.core.bus")

Subscriber = Callable[[Event], Any]
E = TypeVar("E", bound=Event)


@dataclass(frozen=True, slots=True)
class SubscriberFailure:
    """A subscriber that raised while handling an event."""

    subscriber: str
    error: str  # "ExceptionType: message"
    exception: BaseException


class EventRecord:
    """One published event in the bus log: sequence number, nesting depth, failures.

    An event published by its fields and built by nobody is kept as its class and fields, and
    built the first time ``event`` is read."""

    __slots__ = ("seq", "_event", "depth", "failures", "_fields")

    def __init__(
        self, seq: int, event: Event | None, depth: int, fields: tuple[type[Event], int, tuple[Any, ...]] | None = None
    ) -> None:
        self.seq = seq
        self._event = event
        self.depth = depth
        self.failures: list[SubscriberFailure] = []
        self._fields = fields

    @property
    def event(self) -> Event:
        """The event published (built now if it was published by its fields and not read before)."""
        event = self._event
        if event is None:
            assert self._fields is not None  # one of the two is always set
            cls, number, (continuum_id, user_id, occurred_at, *rest) = self._fields
            event = self._event = cls(continuum_id, user_id, event_id_of(number), occurred_at, *rest)
            self._fields = None
        return event

    @property
    def event_type(self) -> str:
        fields = self._fields
        return fields[0].__name__ if fields is not None else type(self.event).__name__

    def as_row(self) -> dict[str, Any]:
        """A flat dict for tables: seq, depth, event, time, key fields, failures."""
        event = self.event
        return {
            "seq": self.seq,
            "depth": self.depth,
            "event": type(event).__name__,
            "occurred_at": event.occurred_at,
            "continuum_id": event.continuum_id,
            "user_id": event.user_id,
            "detail": event.detail(),
            "failures": "; ".join(f"{f.subscriber}: {f.error}" for f in self.failures),
        }

    def __repr__(self) -> str:
        failed = f" failures={len(self.failures)}" if self.failures else ""
        return f"<EventRecord #{self.seq} {self.event_type}{failed}>"


#: A log entry: ``(seq, depth, event class number, id number, fields)`` for an event published
#: by its fields (its record, once built, kept by the bus under its seq), and
#: ``(seq, depth, event class number, 0, (), record)`` for an event published built. A compose
#: cycle logs two per trinket, so a row is as cheap as can be: one tuple holding nothing the
#: garbage collector tracks (the class is named by its number, the fields are strings, times and
#: empty dicts), which the collector stops tracking at its first pass instead of walking it in
#: every full collection while the log keeps it.
_Row = tuple[Any, ...]


#: The row "being delivered" outside any delivery: depth -1, so a publish's depth is always its
#: outer row's plus one.
_OUTSIDE: _Row = (0, -1, 0, 0, ())


class _Delivering:
    """Per thread: the log row of the event being delivered (the innermost, when publishes nest;
    ``_OUTSIDE`` outside a delivery). One object per thread, its attribute changed on every
    publish: a thread-local attribute costs more to set."""

    __slots__ = ("row",)

    def __init__(self) -> None:
        self.row: _Row = _OUTSIDE


class _PerThread(threading.local):
    def __init__(self) -> None:
        self.delivering = _Delivering()


#: How a published class reaches its subscribers, worked out once per class and subscription
#: change: its only subscriber when that one takes the fields (a publish by fields then calls it
#: at once), whether one takes the event (it is then built), each subscriber and whether it
#: takes the fields, how to read the fields of an event published built, and the class's number
#: in the log's rows.
_Route = tuple[
    Callable[..., Any] | None,
    bool,
    tuple[tuple[Callable[..., Any], bool], ...],
    Callable[[Event], tuple[Any, ...]],
    int,
]


def _fields_getter(cls: type[Event]) -> Callable[[Event], tuple[Any, ...]]:
    """The fields of an event of ``cls`` in order, all but ``event_id``: what a subscriber taking
    fields is called with."""
    names = [f.name for f in dataclasses.fields(cls) if f.name != "event_id"]
    return operator.attrgetter(*names)  # three names at least: it returns a tuple


def _callback_name(callback: Callable[..., Any]) -> str:
    owner = getattr(callback, "__self__", None)
    name = getattr(callback, "__qualname__", None) or repr(callback)
    if owner is not None and not isinstance(owner, type):
        return f"{type(owner).__name__}.{getattr(callback, '__name__', name)}"
    return name


def _event_type_name(event_type: type[Event] | str) -> str:
    """The name subscriptions are kept under; a name must be a known event class (``EVENT_TYPES``),
    so a misspelt one fails here instead of subscribing to something that never fires."""
    if isinstance(event_type, str):
        if event_type not in EVENT_TYPES:
            raise ValueError(
                f"unknown event type {event_type!r} (known: {', '.join(EVENT_TYPES)}; or pass an Event subclass)"
            )
        return event_type
    if isinstance(event_type, type) and issubclass(event_type, Event):
        return event_type.__name__
    raise TypeError(f"expected an Event subclass or its name, got {event_type!r}")


class EventBus:
    """Synchronous publish/subscribe.

    Parameters
    ----------
    log_size:
        How many published events the log keeps (oldest dropped first), so memory stays flat over
        long runs. 0 disables the log.
    """

    # slots: read on every publish, and a slot's read is cached by the interpreter where a dict's may not be
    __slots__ = (
        "_subscribers",
        "_routes",
        "_only",
        "_lock",
        "_log",
        "_append",
        "_seq",
        "_classes",
        "_class_numbers",
        "_built",
        "_local",
        "failure_count",
        "__weakref__",
    )

    def __init__(self, log_size: int = 10_000) -> None:
        if not isinstance(log_size, int) or isinstance(log_size, bool) or log_size < 0:
            raise ValueError(f"log_size must be a non-negative int, got {log_size!r}")
        # name -> (callback, whether it takes the event's fields), in subscription order
        self._subscribers: dict[str, tuple[tuple[Callable[..., Any], bool], ...]] = {}
        # event class -> its route, filled as classes are published (a publish looks its class
        # up, not its name); emptied whenever a subscription changes
        self._routes: dict[type, _Route] = {}
        # event class -> (its only subscriber, its number) for the classes whose only subscriber
        # takes the fields: a publish by fields of one looks no further
        self._only: dict[type, tuple[Callable[..., Any], int]] = {}
        self._lock = threading.RLock()
        self._log: deque[_Row] = deque(maxlen=log_size)
        self._append = self._log.append  # a log of size 0 drops what it is given
        self._seq = itertools.count(1)
        # the event classes of the log's rows, by number, and the number of each
        self._classes: list[type[Event]] = []
        self._class_numbers: dict[type, int] = {}
        # seq -> the record built for a row published by fields (rows are immutable); pruned to
        # the rows the log still holds as it grows
        self._built: dict[int, EventRecord] = {}
        self._local = _PerThread()
        self.failure_count = 0

    # -- subscriptions
    # A handler of one event type takes that type (``def on_turn(e: TurnCompletedEvent)``), so the
    # callback is typed by the class it subscribes to; a name says nothing to the checker.
    @overload
    def subscribe(self, event_type: type[E], callback: Callable[[E], Any]) -> None: ...
    @overload
    def subscribe(self, event_type: type[Event] | str, callback: Callable[..., Any], *, fields: bool) -> None: ...
    @overload
    def subscribe(self, event_type: str, callback: Callable[[Any], Any]) -> None: ...

    def subscribe(self, event_type: type[Event] | str, callback: Callable[..., Any], *, fields: bool = False) -> None:
        """Call ``callback(event)`` for every published event of ``event_type``.

        ``event_type`` is an Event subclass (the usual way: a typo is then a NameError) or the name
        of a known one (``EVENT_TYPES``; any other name is a ValueError). A subclass defined outside
        wm-kernel is subscribed to by its class.

        With ``fields=True`` the callback is called with the event's fields instead, in their
        order and without ``event_id`` (``callback(continuum_id, user_id, occurred_at, ...)``): an
        event published by its fields is then not built for it. :meth:`current_event` gives it
        the event, should it need it after all."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, got {callback!r}")
        if not isinstance(fields, bool):
            raise TypeError(f"fields must be True or False, got {fields!r}")
        name = _event_type_name(event_type)
        with self._lock:
            # tuples are swapped, not mutated, so a publish in progress keeps its snapshot
            self._subscribers[name] = self._subscribers.get(name, ()) + ((callback, fields),)
            self._routes, self._only = {}, {}

    @overload
    def unsubscribe(self, event_type: type[E], callback: Callable[[E], Any]) -> bool: ...
    @overload
    def unsubscribe(self, event_type: type[Event] | str, callback: Callable[..., Any]) -> bool: ...

    def unsubscribe(self, event_type: type[Event] | str, callback: Callable[..., Any]) -> bool:
        """Remove one subscription (however it takes the event); True if it was there."""
        name = _event_type_name(event_type)
        with self._lock:
            current = self._subscribers.get(name, ())
            for index, (existing, _) in enumerate(current):
                if existing == callback:
                    self._subscribers[name] = current[:index] + current[index + 1 :]
                    self._routes, self._only = {}, {}
                    return True
        return False

    def subscribers(self, event_type: type[Event] | str) -> tuple[Subscriber, ...]:
        """The callbacks subscribed to ``event_type`` (class or name), in calling order."""
        return tuple([callback for callback, _ in self._subscribers.get(_event_type_name(event_type), ())])

    def _route(self, cls: type, by_fields: bool) -> _Route:
        """The route of a class not published since the subscriptions last changed."""
        if not (isinstance(cls, type) and issubclass(cls, Event)):
            what = f"an Event class and its fields, got {cls!r}" if by_fields else f"an Event, got {cls.__name__}"
            raise TypeError(f"publish() takes {what}")
        with self._lock:  # a subscription changing meanwhile must not leave a stale entry
            callbacks = self._subscribers.get(cls.__name__, ())
            only = callbacks[0][0] if len(callbacks) == 1 and callbacks[0][1] else None
            number = self._class_numbers.get(cls)
            if number is None:
                number = self._class_numbers[cls] = len(self._classes)
                self._classes.append(cls)
            route = (only, not all(fields for _, fields in callbacks), callbacks, _fields_getter(cls), number)
            self._routes[cls] = route
            if only is not None:
                self._only[cls] = (only, number)
        return route

    # -- publishing
    @overload
    def publish(self, event: Event) -> EventRecord: ...
    @overload
    def publish(self, event: type[Event], *fields: Any) -> None: ...

    def publish(self, event: Event | type[Event], *fields: Any) -> EventRecord | None:
        """Deliver an event to its subscribers now, in subscription order.

        ``publish(event)`` delivers a built event and returns its log record.
        ``publish(EventClass, continuum_id, user_id, occurred_at, *rest)`` delivers the event of
        those fields (all but ``event_id``, which is taken now, so ids keep publish order) and
        returns None: the event is built only if a subscriber takes events (once, for all of
        them) or when the log is read; a subscriber taking fields gets these."""
        if fields:
            known = self._only.get(event)  # type: ignore[arg-type]
            if known is not None:  # a compose cycle's events: one subscriber, by fields
                delivering = self._local.delivering
                outer = delivering.row
                row: _Row = (next(self._seq), outer[1] + 1, known[1], next(event_numbers), fields)
                self._append(row)
                delivering.row = row
                try:
                    known[0](*fields)
                except Exception as exc:  # isolated as below
                    self._record_failure(row, _callback_name(known[0]), exc)
                finally:
                    delivering.row = outer
                return None
        cls: type = event if fields else type(event)  # type: ignore[assignment]
        route = self._routes.get(cls)
        if route is None:  # a class not published since the subscriptions last changed
            route = self._route(cls, bool(fields))
        _, takes_event, callbacks, fields_of, class_number = route
        delivering = self._local.delivering
        outer = delivering.row
        depth = outer[1] + 1
        record: EventRecord | None = None
        if fields:
            number = next(event_numbers)
            row = (next(self._seq), depth, class_number, number, fields)
            if takes_event:
                event = cls(fields[0], fields[1], event_id_of(number), *fields[2:])
                self._built[row[0]] = EventRecord(row[0], event, depth)  # type: ignore[arg-type]
        else:
            record = EventRecord(next(self._seq), event, depth)  # type: ignore[arg-type]
            row = (record.seq, depth, class_number, 0, (), record)
            if callbacks and not takes_event:  # every subscriber takes the fields
                fields = fields_of(event)  # type: ignore[arg-type]
        self._append(row)
        if callbacks:
            delivering.row = row
            try:
                for callback, takes_fields in callbacks:
                    try:
                        if takes_fields:
                            callback(*(fields or fields_of(event)))  # type: ignore[arg-type]
                        else:
                            callback(event)
                    except Exception as exc:  # isolation: one subscriber never stops the others
                        self._record_failure(row, _callback_name(callback), exc)
            finally:
                delivering.row = outer
        return record

    def current_event(self) -> Event | None:
        """The event being delivered on this thread (the innermost, when publishes nest), built
        now if it was published by its fields; None outside a delivery. A subscriber taking fields
        reads it when it needs the event after all (to hand it to code that takes events)."""
        row = self._local.delivering.row
        return None if row is _OUTSIDE else self._record_of(row).event

    def report_failure(self, who: str, exc: BaseException) -> None:
        """Record a failure that a subscriber caught itself (e.g. WorkingMemory isolating a trinket)
        on the log record of the event being delivered now, so the log shows it."""
        row = self._local.delivering.row
        if row is not _OUTSIDE:
            self._record_of(row).failures.append(SubscriberFailure(who, f"{type(exc).__name__}: {exc}", exc))
        self.failure_count += 1

    def _record_failure(self, row: _Row, name: str, exc: Exception) -> None:
        record = self._record_of(row)
        record.failures.append(SubscriberFailure(name, f"{type(exc).__name__}: {exc}", exc))
        self.failure_count += 1
        logger.error("subscriber %s failed on %s", name, record.event_type, exc_info=exc)

    # -- the log
    def _record_of(self, row: _Row) -> EventRecord:
        """The record of a log row, built the first time it is asked for, then kept, so every
        reader gets the same record and event."""
        if len(row) == 6:
            record: EventRecord = row[5]
            return record
        seq = row[0]
        built = self._built
        record = built.get(seq)  # type: ignore[assignment]
        if record is None:
            record = built.setdefault(seq, EventRecord(seq, None, row[1], (self._classes[row[2]], row[3], row[4])))
            if len(built) > 2 * (self._log.maxlen or 0) + 64:  # forget the records of rows dropped
                try:
                    oldest = self._log[0][0]
                except IndexError:  # an empty log (or one cleared by another thread meanwhile)
                    oldest = seq
                # list() copies the keys at once, should another thread add one meanwhile
                for gone in [s for s in list(built) if s < oldest and s != seq]:
                    built.pop(gone, None)
        return record

    def _records(self, rows: Iterable[_Row]) -> tuple[EventRecord, ...]:
        """:meth:`_record_of` each row, the ones already built without a call (a log is read whole)."""
        built = self._built
        return tuple([row[5] if len(row) == 6 else built.get(row[0]) or self._record_of(row) for row in rows])

    @property
    def log(self) -> Sequence[EventRecord]:
        """The most recent published events, oldest first, in causal (publish-start) order."""
        return self._records(tuple(self._log))

    def tail(self, n: int) -> tuple[EventRecord, ...]:
        """The ``n`` most recent logged events, oldest first, without copying the whole log (a
        live view reads the last few after every compose, from a log of up to ``log_size``)."""
        log = self._log
        try:
            rows = [log[-i] for i in range(min(n, len(log)), 0, -1)]
        except IndexError:  # cleared by another thread meanwhile
            rows = list(log)[-n:] if n > 0 else []
        return self._records(rows)

    def clear_log(self) -> None:
        """Forget the logged events (sequence numbers keep counting)."""
        self._log.clear()
        self._built.clear()

    def log_rows(self, last: int | None = None) -> list[dict[str, Any]]:
        """:meth:`EventRecord.as_row` of the logged events (only the ``last`` N when given)."""
        rows = tuple(self._log)
        if last is not None:
            rows = rows[-last:] if last > 0 else ()
        return [record.as_row() for record in self._records(rows)]

    def __repr__(self) -> str:
        counts = {k: len(v) for k, v in self._subscribers.items() if v}
        return f"<EventBus subscribers={counts} logged={len(self._log)}>"


__all__ = ["EventBus", "EventRecord", "SubscriberFailure"]
