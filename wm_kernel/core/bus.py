"""EventBus: synchronous publish/subscribe with subscriber isolation and a bounded event log.

``publish`` calls each subscriber of the event's type in subscription order, immediately; a
subscriber may publish in turn (nested publishes run depth-first). A subscriber that raises does not
stop the others: its exception is logged and recorded on the event's log record.

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

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from wm_kernel.core.events import EVENT_TYPES, Event, event_id_of, next_event_number

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

    An event delivered straight to its only subscriber (:meth:`EventBus.deliver`) is kept as its
    class and fields, and built the first time ``event`` is read: a compose cycle publishes two
    events per trinket that nobody but the log may ever look at. (The log keeps such an event
    as a compact row until the log is read, see :func:`_record_of`.)"""

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
        """The event published (built now if it was delivered directly and not read before)."""
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


#: A log entry of an event delivered directly, before anyone read it: ``[seq, depth, event class,
#: id number, fields]``, and its :class:`EventRecord` as a sixth item once built. A row costs a
#: list where a record costs an object, a list and a tuple, and a compose cycle logs two per
#: trinket.
_Row = list[Any]


def _record_of(entry: EventRecord | _Row) -> EventRecord:
    """The record of a log entry: the entry itself, or the row's record (built the first time it
    is asked for, then kept in the row, so every reader gets the same record and event)."""
    if isinstance(entry, EventRecord):
        return entry
    if len(entry) == 5:
        seq, depth, event_type, number, fields = entry
        entry.append(EventRecord(seq, None, depth, (event_type, number, fields)))
    record: EventRecord = entry[5]  # the first one appended, should two threads build it at once
    return record


def _records(entries: Iterable[EventRecord | _Row]) -> tuple[EventRecord, ...]:
    """:func:`_record_of` each entry, the ones already built without a call (a log is read whole)."""
    return tuple(
        [
            entry if isinstance(entry, EventRecord) else entry[5] if len(entry) == 6 else _record_of(entry)
            for entry in entries
        ]
    )


class _RowDelivery:
    """The event being delivered (``_Delivery.record``) all through an :meth:`EventBus.deliver_each`
    loop: the row being delivered or, between rows (``row`` None), the loop's own outer event. It
    gives the depth, for the events published meanwhile, and the failures: the row's (on its
    record, built when the first lands) or the outer event's. One object serves the whole loop,
    its attributes changed from row to row: a thread-local costs more to set."""

    __slots__ = ("depth", "row", "outer")

    def __init__(self, outer: EventRecord | _RowDelivery | None) -> None:
        self.outer = outer
        self.row: _Row | None = None
        self.depth: int = outer.depth if outer is not None else -1

    @property
    def failures(self) -> list[SubscriberFailure]:
        row, outer = self.row, self.outer
        if row is not None:
            return _record_of(row).failures
        return outer.failures if outer is not None else []  # no event: reported nowhere, counted


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


class _Delivery(threading.local):
    """Per thread: the record being delivered (its ``depth`` is the nesting depth of publishes); a
    class-level default, so a publish reads it without a getattr fallback."""

    record: EventRecord | _RowDelivery | None = None


class EventBus:
    """Synchronous publish/subscribe.

    Parameters
    ----------
    log_size:
        How many published events the log keeps (oldest dropped first), so memory stays flat over
        long runs. 0 disables the log.
    """

    def __init__(self, log_size: int = 10_000) -> None:
        if not isinstance(log_size, int) or isinstance(log_size, bool) or log_size < 0:
            raise ValueError(f"log_size must be a non-negative int, got {log_size!r}")
        self._subscribers: dict[str, tuple[Subscriber, ...]] = {}
        # event class -> its subscribers, filled as classes are published (a publish looks its
        # class up, not its name); emptied whenever a subscription changes
        self._by_class: dict[type, tuple[Subscriber, ...]] = {}
        #: How many times the subscriptions changed: a caller that worked out something from
        #: :meth:`subscribers` keeps it while this number stays the same.
        self.revision = 0
        self._lock = threading.RLock()
        self._log: deque[EventRecord | _Row] = deque(maxlen=log_size)
        self._logging = log_size > 0
        self._seq = itertools.count(1)
        self._local = _Delivery()
        self.failure_count = 0

    # -- subscriptions
    # A handler of one event type takes that type (``def on_turn(e: TurnCompletedEvent)``), so the
    # callback is typed by the class it subscribes to; a name says nothing to the checker.
    @overload
    def subscribe(self, event_type: type[E], callback: Callable[[E], Any]) -> None: ...
    @overload
    def subscribe(self, event_type: str, callback: Callable[[Any], Any]) -> None: ...

    def subscribe(self, event_type: type[Event] | str, callback: Callable[[Any], Any]) -> None:
        """Call ``callback(event)`` for every published event of ``event_type``.

        ``event_type`` is an Event subclass (the usual way: a typo is then a NameError) or the name
        of a known one (``EVENT_TYPES``; any other name is a ValueError). A subclass defined outside
        wm-kernel is subscribed to by its class."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, got {callback!r}")
        name = _event_type_name(event_type)
        with self._lock:
            # tuples are swapped, not mutated, so a publish in progress keeps its snapshot
            self._subscribers[name] = self._subscribers.get(name, ()) + (callback,)
            self._by_class = {}
            self.revision += 1

    @overload
    def unsubscribe(self, event_type: type[E], callback: Callable[[E], Any]) -> bool: ...
    @overload
    def unsubscribe(self, event_type: str, callback: Callable[[Any], Any]) -> bool: ...

    def unsubscribe(self, event_type: type[Event] | str, callback: Callable[[Any], Any]) -> bool:
        """Remove one subscription; True if it was there."""
        name = _event_type_name(event_type)
        with self._lock:
            current = self._subscribers.get(name, ())
            for index, existing in enumerate(current):
                if existing == callback:
                    self._subscribers[name] = current[:index] + current[index + 1 :]
                    self._by_class = {}
                    self.revision += 1
                    return True
        return False

    def subscribers(self, event_type: type[Event] | str) -> tuple[Subscriber, ...]:
        """The callbacks subscribed to ``event_type`` (class or name), in calling order."""
        if isinstance(event_type, type):  # kept by class, as publish() keeps them
            known = self._by_class.get(event_type)
            if known is None:
                name = _event_type_name(event_type)
                with self._lock:
                    known = self._by_class[event_type] = self._subscribers.get(name, ())
            return known
        return self._subscribers.get(_event_type_name(event_type), ())

    # -- publishing
    def publish(self, event: Event) -> EventRecord:
        """Deliver ``event`` to its subscribers now, in subscription order; returns its log record."""
        cls = type(event)
        callbacks = self._by_class.get(cls)
        if callbacks is None:  # a class not published since the subscriptions last changed
            if not isinstance(event, Event):
                raise TypeError(f"publish() takes an Event, got {cls.__name__}")
            with self._lock:  # a subscription changing meanwhile must not leave a stale entry
                callbacks = self._by_class[cls] = self._subscribers.get(cls.__name__, ())
        local = self._local
        outer = local.record
        record = EventRecord(next(self._seq), event, outer.depth + 1 if outer is not None else 0)
        if self._logging:
            self._log.append(record)
        if callbacks:
            local.record = record
            try:
                for callback in callbacks:
                    try:
                        callback(event)
                    except Exception as exc:  # isolation: one subscriber never stops the others
                        self._record_failure(record, _callback_name(callback), exc)
            finally:
                local.record = outer
        return record

    def deliver(
        self,
        event_type: type[Event],
        fields: tuple[Any, ...],
        subscriber: Callable[..., Any] | None,
        call: Callable[..., Any] | None,
        *args: Any,
        answer_type: type[Event] | None = None,
    ) -> Any:
        """Publish an event of ``event_type`` whose only subscriber (``subscriber``, or none) is
        the caller's own: ``call(*args)`` runs where the subscriber would, with the same isolation,
        nesting and log record, but no Event is built unless the log is read. With no subscriber
        (``call`` None) the event is only logged. When ``call`` returns the fields of an
        ``answer_type`` event, that event is logged as :meth:`deliver_each` logs a row's answer.

        ``fields`` are the event's fields without ``event_id`` (continuum_id, user_id,
        occurred_at, then those of its class); the id is taken now, so ids keep publish order.
        Returns what ``call`` returned (None if it raised: the failure is on the record)."""
        if call is None:
            self.note(event_type, fields)
            return None
        local = self._local
        outer = local.record
        depth = outer.depth + 1 if outer is not None else 0
        record = EventRecord(next(self._seq), None, depth, (event_type, next_event_number(), fields))
        if self._logging:
            self._log.append(record)
        local.record = record
        try:
            result = call(*args)
        except Exception as exc:  # isolation, as publish() gives its subscribers
            self._record_failure(record, _callback_name(subscriber or call), exc)
            return None
        finally:
            local.record = outer
        if answer_type is not None and result is not None:
            answered = [next(self._seq), depth + 1, answer_type, next_event_number(), result]
            if self._logging:
                self._log.append(answered)
        return result

    def deliver_each(
        self,
        event_type: type[Event],
        rows: Iterable[tuple[tuple[Any, ...], Any]],
        subscriber: Callable[..., Any],
        call: Callable[[Any], tuple[Any, ...] | None],
        answer_type: type[Event] | None = None,
    ) -> None:
        """:meth:`deliver` for each ``(fields, arg)`` of ``rows``, in order, as the same number of
        publishes would: ``call(arg)`` runs as ``subscriber`` would (a compose cycle's updates: one
        loop here instead of a call each). When ``call`` returns the fields of an ``answer_type``
        event, that event is logged as :meth:`note` logs one, inside the row's event and after
        whatever the call published: the answer the caller delivered to itself."""
        local = self._local
        outer = local.record
        delivery = _RowDelivery(outer)
        outer_depth = delivery.depth
        depth = outer_depth + 1
        append = self._log.append if self._logging else None
        seq = self._seq.__next__
        local.record = delivery
        try:
            for fields, arg in rows:
                row = [seq(), depth, event_type, next_event_number(), fields]
                if append is not None:
                    append(row)
                delivery.row, delivery.depth = row, depth
                try:
                    answer = call(arg)
                except Exception as exc:  # isolation, as publish() gives its subscribers
                    self._record_failure(_record_of(row), _callback_name(subscriber), exc)
                else:
                    if answer is not None:
                        answered = [seq(), depth + 1, answer_type, next_event_number(), answer]
                        if append is not None:
                            append(answered)
                # between rows the outer event is the one being delivered (``rows`` may publish)
                delivery.row, delivery.depth = None, outer_depth
        finally:
            local.record = outer

    def note(self, event_type: type[Event], fields: tuple[Any, ...]) -> _Row:
        """Log an event of ``event_type`` (``fields`` as for :meth:`deliver`) delivered, inside the
        event being delivered now, by a publisher that is its only subscriber and handles it
        itself, publishing nothing meanwhile (it is built only if the log is read). Returns the
        log entry, for :meth:`report_failure` should that handling fail."""
        outer = self._local.record
        depth = outer.depth + 1 if outer is not None else 0
        row = [next(self._seq), depth, event_type, next_event_number(), fields]
        if self._logging:
            self._log.append(row)
        return row

    def report_failure(self, who: str, exc: BaseException, *, on: _Row | EventRecord | None = None) -> None:
        """Record a failure that a subscriber caught itself (e.g. WorkingMemory isolating a trinket)
        on the log record of the event being delivered now (or of the entry ``on`` that
        :meth:`note` returned), so the log shows it."""
        record = self._local.record if on is None else _record_of(on)
        if record is not None:
            record.failures.append(SubscriberFailure(who, f"{type(exc).__name__}: {exc}", exc))
        self.failure_count += 1

    def _record_failure(self, record: EventRecord, name: str, exc: Exception) -> None:
        record.failures.append(SubscriberFailure(name, f"{type(exc).__name__}: {exc}", exc))
        self.failure_count += 1
        logger.error("subscriber %s failed on %s", name, record.event_type, exc_info=exc)

    # -- the log
    @property
    def log(self) -> Sequence[EventRecord]:
        """The most recent published events, oldest first, in causal (publish-start) order."""
        return _records(tuple(self._log))

    def tail(self, n: int) -> tuple[EventRecord, ...]:
        """The ``n`` most recent logged events, oldest first, without copying the whole log (a
        live view reads the last few after every compose, from a log of up to ``log_size``)."""
        log = self._log
        try:
            entries = [log[-i] for i in range(min(n, len(log)), 0, -1)]
        except IndexError:  # cleared by another thread meanwhile
            entries = list(log)[-n:] if n > 0 else []
        return _records(entries)

    def clear_log(self) -> None:
        """Forget the logged events (sequence numbers keep counting)."""
        self._log.clear()

    def log_rows(self, last: int | None = None) -> list[dict[str, Any]]:
        """:meth:`EventRecord.as_row` of the logged events (only the ``last`` N when given)."""
        entries = tuple(self._log)
        if last is not None:
            entries = entries[-last:] if last > 0 else ()
        return [record.as_row() for record in _records(entries)]

    def __repr__(self) -> str:
        counts = {k: len(v) for k, v in self._subscribers.items() if v}
        return f"<EventBus subscribers={counts} logged={len(self._log)}>"


__all__ = ["EventBus", "EventRecord", "SubscriberFailure"]
