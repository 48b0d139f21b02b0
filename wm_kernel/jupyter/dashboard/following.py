"""What the dashboard follows of its session, and what each change marks for the next draw.

:class:`SessionFollower` observes the session's turn, every compose, its segment, the
WorkingMemory's trinket names and each trinket's traits (through :class:`Panels`), and subscribes
to the bus's turn, collapse and feed events. Each change marks the sections it may have changed
dirty (or forgets the cached items, or ends the driver's turn) and asks for a draw; nothing here
draws or talks to the front end: the dashboard (``widget.py``) does, once per batch.

Every handler is guarded: an exception here would otherwise surface in the code that changed the
session (a user's ``advance_turn``) and print nowhere in JupyterLab; it is shown in the dashboard
instead (``report``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from traitlets import HasTraits

from wm_kernel.core.events import Event, SegmentCollapsedEvent, TrinketFedEvent, TurnCompletedEvent
from wm_kernel.jupyter.dashboard.model import TurnDriver, TurnRecord, serialized
from wm_kernel.jupyter.dashboard.panels import Panels
from wm_kernel.session import Session

__all__ = ["SessionFollower"]


class SessionFollower:
    """Follows ``session`` for a dashboard whose panels are ``book``, recorded turns ``record`` and
    slider ``driver``: ``request_flush(settled=...)`` asks for a draw, ``report(exc)`` shows a
    failure. :meth:`close` removes every observer and subscription it added."""

    def __init__(
        self,
        session: Session,
        book: Panels,
        record: TurnRecord,
        driver: TurnDriver,
        request_flush: Callable[..., None],
        report: Callable[[BaseException], None],
    ) -> None:
        self.session, self.book, self.record, self.driver = session, book, record, driver
        self._request_flush, self.report = request_flush, report
        self._lock = session.working_memory.lock  # what @serialized holds
        self._undo: list[Callable[[], object]] = []
        self._watch(session, self._on_session_turn, ["turn"])
        # ``composed`` notifies on every compose, even one equal to the last: a turn must still end
        self._watch(session, self._on_session_composed, ["composed"])
        self._watch(session, self._on_session_segment, ["segment_number"])
        self._watch(session.working_memory, self._on_trinket_names, ["trinket_names"])
        for event_type in (TurnCompletedEvent, SegmentCollapsedEvent):
            session.bus.subscribe(event_type, self._on_lifecycle_event)
            self._undo.append(functools.partial(session.bus.unsubscribe, event_type, self._on_lifecycle_event))
        session.bus.subscribe(TrinketFedEvent, self._on_feed)
        self._undo.append(functools.partial(session.bus.unsubscribe, TrinketFedEvent, self._on_feed))

    def _watch(self, owner: HasTraits, handler: Callable[[dict[str, Any]], None], names: list[str]) -> None:
        owner.observe(handler, names=names)
        self._undo.append(lambda: owner.unobserve(handler, names=names))

    def close(self) -> None:
        """Remove every observer and subscription added (those already gone are skipped)."""
        for undo in reversed(self._undo):
            try:
                undo()
            except Exception:
                pass  # already gone (e.g. the bus was replaced): nothing left to remove
        self._undo = []

    @serialized
    def on_trinket_change(self, change: dict[str, Any]) -> None:
        """A watched trinket's ``content``, ``error``, ``enabled`` or ``current_turn`` changed
        (:class:`Panels` observes them and calls this)."""
        try:
            trinket = change["owner"]
            self.book.dirty.add(trinket.variable_name)
            self.record.mark_stale(trinket.variable_name)
            # a current_turn change is part of a turn or collapse: the lifecycle handler flushes
            if change["name"] != "current_turn":
                self._request_flush(settled=change["name"] == "enabled")
        except Exception as exc:
            self.report(exc)

    @serialized
    def _on_session_turn(self, change: dict[str, Any]) -> None:
        self.record.forget_items()
        self.driver.start_turn(change["new"])
        self.book.mark_stateful()

    @serialized
    def _on_session_composed(self, change: dict[str, Any]) -> None:
        if change["new"] is None:
            return
        try:
            book = self.book
            self.record.record(change["new"], book.watched.values())
            self.driver.end_turn()
            # when the trinkets, layout or composer-written sections changed, every panel is
            # asked again (those whose inputs are the same work out nothing)
            if book.changed(self.driver.view):
                book.sync(self.driver.view)
                book.dirty.update(book.shown)
            book.dirty.update(s for s in book.shown if s not in book.writers)
            book.mark_stateful()
            self._request_flush(settled=True)
        except Exception as exc:
            self.report(exc)

    @serialized
    def _on_session_segment(self, change: dict[str, Any]) -> None:
        self._request_flush(settled=True)

    @serialized
    def _on_trinket_names(self, change: dict[str, Any]) -> None:
        try:
            self.book.sync(self.driver.view)
            self._request_flush(settled=True)
        except Exception as exc:
            self.report(exc)

    @serialized
    def _on_lifecycle_event(self, event: Event) -> None:
        # subscribed after the trinkets, so this runs once they have handled the event
        self.record.forget_items()
        try:
            if isinstance(event, TurnCompletedEvent) and self.driver.turn_open and self.session.auto_compose:
                return  # the turn's compose comes next; _on_session_composed flushes
            self.driver.end_turn()
            self.book.mark_stateful()
            self._request_flush(settled=True)
        except Exception as exc:
            self.report(exc)

    @serialized
    def _on_feed(self, event: TrinketFedEvent) -> None:
        try:
            trinket = self.book.watched.get(event.trinket_name)
            if trinket is not None:
                # only the trinket fed may have new items: the others are not asked again
                self.book.dirty.add(trinket.variable_name)
                self.record.mark_stale(trinket.variable_name)
            self._request_flush(settled=True)
        except Exception as exc:
            self.report(exc)
