"""What is done to a live Session, kept as it happens: the feeds a scenario is made from.

A :class:`FeedLog` observes a Session's traits (``turn``, ``composed``, ``base_prompt``,
``auto_compose``, ``trinket_names``), its ManualClock's ``current`` and each trinket's ``enabled``,
and subscribes to the bus for ``TrinketFedEvent``, ``SegmentCollapsedEvent`` and
``ExchangeRecordedEvent``. It keeps each step as a plain dict in the scenario format's shape, a
feed's arguments as they were given; ``wm_kernel.experiments`` makes a Scenario of them when asked
(``session_recording(session)``, ``record(session)``), so a Session records the same whichever module
imported it. Every default Session attaches one (:meth:`FeedLog.attach`, one of the session's
default instruments), bounded at :data:`BIRTH_RECORDING_STEPS` steps.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from wm_kernel.core.clock import Clock, ManualClock
from wm_kernel.core.events import SegmentCollapsedEvent, TrinketFedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.instruments.exchange import ExchangeRecordedEvent

if TYPE_CHECKING:
    from trinkets.base import EventAwareTrinket
    from wm_kernel.core.bus import EventBus
    from wm_kernel.core.composer.layout import Layout

__all__ = ["BIRTH_RECORDING_STEPS", "FedSession", "FeedLog"]

#: The most steps a session's own log keeps (a feed, a run of turns, an explicit compose, a clock
#: move each make one): about as many as a day's interactive work, a few megabytes.
BIRTH_RECORDING_STEPS = 10_000


class FedSession(Protocol):
    """What a FeedLog observes: a Session (named here so this module need not import it)."""

    @property
    def turn(self) -> int: ...
    @property
    def segment_number(self) -> int: ...
    @property
    def base_prompt(self) -> str: ...
    @property
    def auto_compose(self) -> bool: ...
    @property
    def profile(self) -> Profile: ...
    @property
    def user_id(self) -> str: ...
    @property
    def continuum_id(self) -> str: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def segment_started_at(self) -> datetime: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def bus(self) -> EventBus: ...
    @property
    def trinkets(self) -> dict[str, EventAwareTrinket]: ...
    def trinket(self, name: str) -> EventAwareTrinket: ...
    def observe(self, handler: Any, names: Any = ..., type: str = ...) -> None: ...  # noqa: A002 - traitlets'
    def unobserve(self, handler: Any, names: Any = ..., type: str = ...) -> None: ...  # noqa: A002


_attached: weakref.WeakKeyDictionary[Any, FeedLog] = weakref.WeakKeyDictionary()
_refusals: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


class FeedLog:
    """The steps done to ``session`` from now on, as plain dicts (see the module docstring).

    Start it before the first turn: a replay starts from a fresh Session built from the header
    (:attr:`base_prompt`, :attr:`profile`, :attr:`start`...), so what was fed before is not in it.
    Profile changes are noticed before the next step. ``max_steps`` bounds the log: at that many
    steps it stops, and :attr:`errors` says so. :meth:`stop` removes every observer.
    """

    def __init__(self, session: FedSession, *, max_steps: int | None = None) -> None:
        clock = session.clock
        if not isinstance(clock, ManualClock):
            raise ValueError(
                "recording needs a Session with a ManualClock: the moves of a "
                f"{type(clock).__name__} cannot be replayed"
            )
        if session.turn != 0 or session.segment_number != 1:
            raise ValueError(
                "start recording before the first turn and collapse: a replay starts "
                f"from a fresh Session (this one is at turn {session.turn}, segment "
                f"{session.segment_number})"
            )
        self.session = session
        self.max_steps = max_steps
        self.errors: list[str] = []
        self.steps: list[dict[str, Any]] = []
        # the header a replay starts from
        self.start = session.segment_started_at
        self.base_prompt = session.base_prompt
        self.profile = session.profile
        self.user_id = session.user_id
        self.trinket_names = tuple(session.trinkets)
        self.continuum_id = session.continuum_id
        self.auto_compose = session.auto_compose
        self.layout = session.layout
        self._clock: ManualClock = clock
        self._profile = session.profile
        self._now = self.start
        self._pending_composes = 0
        self._trinkets = list(session.trinkets.values())
        self._active = True
        session.observe(self._on_turn, "turn")
        session.observe(self._on_composed, "composed")
        session.observe(self._on_base_prompt, "base_prompt")
        session.observe(self._on_auto_compose, "auto_compose")
        session.observe(self._on_trinket_added, "trinket_names")
        clock.observe(self._on_clock, "current")
        session.bus.subscribe(TrinketFedEvent, self._on_feed)
        session.bus.subscribe(SegmentCollapsedEvent, self._on_collapse)
        session.bus.subscribe(ExchangeRecordedEvent, self._on_exchange)
        for trinket in self._trinkets:
            trinket.observe(self._on_enabled, "enabled")
            if not trinket.enabled:
                self._add(_switch(trinket.name, False))
        if clock.now() != self.start:
            self._clock_moved(clock.now())

    @classmethod
    def attach(cls, session: FedSession) -> None:
        """Start ``session``'s own log, bounded at :data:`BIRTH_RECORDING_STEPS` (a default
        instrument of every Session), or note why it cannot have one (:meth:`refusal`)."""
        clock = session.clock
        if not isinstance(clock, ManualClock):
            _refusals[session] = f"its clock is a {type(clock).__name__}, whose moves cannot be replayed"
            return
        try:
            _attached[session] = cls(session, max_steps=BIRTH_RECORDING_STEPS)
        except ValueError as exc:  # it resumed a stored conversation
            _refusals[session] = str(exc)

    @classmethod
    def find(cls, session: object) -> FeedLog | None:
        """The log :meth:`attach` started for ``session``, or None."""
        return _attached.get(session)

    @classmethod
    def refusal(cls, session: object) -> str | None:
        """Why :meth:`attach` could not start a log for ``session`` (None: it did, or was not asked)."""
        return _refusals.get(session)

    @property
    def active(self) -> bool:
        """True until :meth:`stop`."""
        return self._active

    def sync(self) -> None:
        """Note a profile change made since the last step (done before every step and on :meth:`stop`)."""
        current = self.session.profile
        if self._active and current is not self._profile and current != self._profile:
            self.steps.append({"step": "profile", "was": self._profile, "now": current})
            self._profile = current

    def stop(self) -> None:
        """Stop logging (remove every hook). Calling it again is a no-op."""
        if not self._active:
            return
        self.sync()
        self._active = False
        session = self.session
        session.unobserve(self._on_turn, "turn")
        session.unobserve(self._on_composed, "composed")
        self._clock.unobserve(self._on_clock, "current")
        session.bus.unsubscribe(TrinketFedEvent, self._on_feed)
        session.bus.unsubscribe(SegmentCollapsedEvent, self._on_collapse)
        session.bus.unsubscribe(ExchangeRecordedEvent, self._on_exchange)
        session.unobserve(self._on_base_prompt, "base_prompt")
        session.unobserve(self._on_auto_compose, "auto_compose")
        session.unobserve(self._on_trinket_added, "trinket_names")
        for trinket in self._trinkets:
            trinket.unobserve(self._on_enabled, "enabled")

    # -- hooks
    def _add(self, step: dict[str, Any]) -> None:
        if not self._active:
            return
        self.sync()
        if self.max_steps is not None and len(self.steps) >= self.max_steps:
            self.errors.append(f"the recording stopped at its bound of {self.max_steps:,} steps")
            self.stop()
            return
        self.steps.append(step)

    def _replace_last(self, step: dict[str, Any]) -> None:
        self.steps[-1] = step

    def _on_trinket_added(self, change: dict[str, Any]) -> None:
        known = {t.name for t in self._trinkets}
        for name in change["new"]:
            if name in known:
                continue
            trinket = self.session.trinket(name)
            self._trinkets.append(trinket)
            trinket.observe(self._on_enabled, "enabled")
            self._add({"step": "add_trinket", "trinket": name})
            if not trinket.enabled:
                self._add(_switch(name, False))

    def _on_feed(self, event: TrinketFedEvent) -> None:
        if event.method == "set_enabled":
            return  # the 'enabled' observer logs the switch (also when set as a trait)
        args, kwargs = _as_fed(event.args, event.kwargs)
        self._add(
            {"step": "feed", "trinket": event.trinket_name, "method": event.method, "args": args, "kwargs": kwargs}
        )

    def _on_enabled(self, change: dict[str, Any]) -> None:
        self._add(_switch(change["owner"].name, bool(change["new"])))

    def _on_base_prompt(self, change: dict[str, Any]) -> None:
        self._add({"step": "base_prompt", "text": change["new"]})

    def _on_auto_compose(self, change: dict[str, Any]) -> None:
        self._add({"step": "auto_compose", "value": bool(change["new"])})

    def _on_clock(self, change: Any) -> None:
        self._clock_moved(change["new"])

    def _clock_moved(self, now: datetime) -> None:
        before, self._now = self._now, now
        delta = now - before
        if delta >= timedelta(0) and (before + delta).isoformat() == now.isoformat():
            last = self.steps[-1] if self.steps else None
            if last is not None and last["step"] == "clock" and "advance" in last:
                seconds = _seconds(delta + timedelta(seconds=last["advance"]))
                if seconds is not None:
                    self._replace_last({"step": "clock", "advance": seconds})
                    return
            seconds = _seconds(delta)
            if seconds is not None:
                self._add({"step": "clock", "advance": seconds})
                return
        self._add({"step": "clock", "set": now.isoformat()})

    def _on_turn(self, change: Any) -> None:
        self.sync()
        last = self.steps[-1] if self.steps else None
        if self._active and last is not None and last["step"] == "turn":
            self._replace_last({"step": "turn", "n": last["n"] + 1})
        else:
            self._add({"step": "turn", "n": 1})
        if self.session.auto_compose:
            self._pending_composes += 1

    def _on_collapse(self, event: SegmentCollapsedEvent) -> None:
        self._add({"step": "collapse", "summary": event.summary, "tools_used": list(event.tools_used)})
        if self.session.auto_compose:
            self._pending_composes += 1

    def _on_exchange(self, event: ExchangeRecordedEvent) -> None:
        if event.exchange is not None:
            self._add({"step": "send", "exchange": event.exchange.to_json()})

    def _on_composed(self, change: Any) -> None:
        if self._pending_composes:
            self._pending_composes -= 1  # the compose a turn or collapse made by itself
        else:
            self._add({"step": "compose"})


def _as_fed(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A feed's arguments as they were when fed: a list the caller changes later is not what the
    trinket was given (an argument that cannot be copied is kept as it is)."""
    if all(map(_immutable, args)) and all(map(_immutable, kwargs.values())):
        return tuple(args), dict(kwargs)  # most feeds: text, numbers, times; nothing to copy
    try:
        return copy.deepcopy((tuple(args), dict(kwargs)))
    except Exception:  # any object may refuse a copy: the recording then holds it as fed
        return tuple(args), dict(kwargs)


_SCALARS = (str, int, float, bool, type(None), datetime, timedelta)


def _immutable(value: object) -> bool:
    return isinstance(value, _SCALARS) or (type(value) is tuple and all(map(_immutable, value)))


def _switch(trinket: str, enabled: bool) -> dict[str, Any]:
    return {"step": "feed", "trinket": trinket, "method": "set_enabled", "args": (enabled,), "kwargs": {}}


def _seconds(delta: timedelta) -> int | float | None:
    """Seconds as a JSON number that turns back into exactly ``delta`` (None if none does)."""
    seconds = delta.total_seconds()
    value: int | float = int(seconds) if seconds.is_integer() else seconds
    return value if timedelta(seconds=value) == delta else None
