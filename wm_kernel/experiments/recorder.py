"""Recording a live Session into a :class:`~wm_kernel.experiments.scenario.Scenario`.

The recorder is an observer: it watches the Session's traits and its bus, and the Session knows
nothing of it (``Scenario.record(session)`` starts one).
"""

from __future__ import annotations

import os
import weakref
from datetime import datetime, timedelta
from typing import Any

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import SegmentCollapsedEvent, TrinketFedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.experiments.codec import encode_arguments
from wm_kernel.experiments.scenario import Scenario, register_recorder
from wm_kernel.experiments.scenario_file import profile_fields
from wm_kernel.experiments.steps import PROFILE_FIELDS, ClockStep, ScenarioError, TurnStep
from wm_kernel.instruments.exchange import ExchangeRecordedEvent
from wm_kernel.session import Session, register_default_instrument


class ScenarioRecorder:
    """Records what is done to a live Session into a :class:`Scenario`.

    From construction on it observes the Session's traits (``turn``, ``composed``, ``base_prompt``,
    ``auto_compose``), its ManualClock's ``current`` and each trinket's ``enabled``, and subscribes
    to the bus for TrinketFedEvent and SegmentCollapsedEvent. It hears: feeds (``@feed`` methods,
    and ``enabled`` switches), turns,
    collapses, explicit composes (composes that follow a turn or collapse by ``auto_compose`` are
    part of those steps), clock moves, base prompt and ``auto_compose`` changes, and profile changes
    (noticed before the next step). :meth:`stop` removes every observer and subscription; a ``with``
    block stops on exit.

    Start recording before the first turn: a replay starts from a fresh Session built from the
    header, so trinket data fed before recording started is not in it. A trinket registered later
    (``session.add_trinket``) is an ``add_trinket`` step. Data a trinket reads from a
    persistent store (reminders in a SQLite file) is not recorded, nor are changes made
    other than through ``@feed`` methods: update contexts (``request_update(action=...)``), trait
    assignments other than ``enabled``, composer attributes.

    ``max_steps`` bounds the recording: at that many steps it stops, and :attr:`errors` says so.
    """

    def __init__(self, session: Session, *, max_steps: int | None = None) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"Scenario.record needs a Session, got {type(session).__name__}")
        if not isinstance(session.clock, ManualClock):
            raise ValueError(
                "Scenario.record needs a Session with a ManualClock: the moves of a "
                f"{type(session.clock).__name__} cannot be replayed"
            )
        if session.turn != 0 or session.segment_number != 1:
            raise ValueError(
                "start recording before the first turn and collapse: a replay starts "
                f"from a fresh Session (this one is at turn {session.turn}, segment "
                f"{session.segment_number})"
            )
        self.session = session
        self.errors: list[str] = []
        self.max_steps = max_steps
        self._clock: ManualClock = session.clock
        start = session.segment_started_at
        self._scenario = Scenario(
            base_prompt=session.base_prompt,
            profile=profile_fields(session.profile),
            clock=start.isoformat(),
            user_id=session.user_id,
            trinkets=tuple(session.trinkets),
            continuum_id=session.continuum_id,
            auto_compose=session.auto_compose,
            layout=session.layout,
        )
        self._profile = session.profile
        self._now = start
        self._pending_composes = 0
        self._trinkets = list(session.trinkets.values())
        self._active = True
        session.observe(self._on_turn, "turn")
        session.observe(self._on_composed, "composed")
        session.observe(self._on_base_prompt, "base_prompt")
        session.observe(self._on_auto_compose, "auto_compose")
        session.observe(self._on_trinket_added, "trinket_names")
        self._clock.observe(self._on_clock, "current")
        session.bus.subscribe(TrinketFedEvent, self._on_feed)
        session.bus.subscribe(SegmentCollapsedEvent, self._on_collapse)
        session.bus.subscribe(ExchangeRecordedEvent, self._on_exchange)
        for trinket in self._trinkets:
            trinket.observe(self._on_enabled, "enabled")
            if not trinket.enabled:
                self._add(
                    {"step": "feed", "trinket": trinket.name, "method": "set_enabled", "args": [False], "kwargs": {}}
                )
        if self._clock.now() != start:
            self._clock_moved(self._clock.now())

    @property
    def scenario(self) -> Scenario:
        """The scenario recorded so far (the live object: it grows while recording)."""
        if self._active:
            self._sync_profile()
        return self._scenario

    @property
    def active(self) -> bool:
        """True until :meth:`stop`."""
        return self._active

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the recorded scenario (atomically); ScenarioError if a feed could not be recorded."""
        scenario = self.scenario
        if self.errors:
            raise ScenarioError(f"the recording is incomplete: {self.errors[0]}")
        scenario.save(path)

    def stop(self) -> Scenario:
        """Stop recording (remove every hook) and return the scenario. Calling it again is a no-op."""
        if self._active:
            self._sync_profile()
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
        return self._scenario

    def __enter__(self) -> ScenarioRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "recording" if self._active else "stopped"
        return f"<ScenarioRecorder {state}: {self._scenario!r}>"

    # -- hooks
    def _add(self, step: dict[str, Any]) -> None:
        if not self._active:
            return
        self._sync_profile()
        if self.max_steps is not None and len(self._scenario) >= self.max_steps:
            self.errors.append(f"the recording stopped at its bound of {self.max_steps:,} steps")
            self.stop()
            return
        self._scenario._append(step)

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
                self._add({"step": "feed", "trinket": name, "method": "set_enabled", "args": [False], "kwargs": {}})

    def _sync_profile(self) -> None:
        current = self.session.profile
        if current == self._profile:
            return
        old, new = profile_fields(self._profile), profile_fields(current)
        changed = {
            name: new.get(name, getattr(Profile(), name)) for name in PROFILE_FIELDS if old.get(name) != new.get(name)
        }
        self._profile = current
        self._scenario._append({"step": "profile", "fields": changed})

    def _on_feed(self, event: TrinketFedEvent) -> None:
        trinket, method, args, kwargs = event.trinket_name, event.method, event.args, event.kwargs
        if method == "set_enabled":
            return  # the 'enabled' observer records the switch (also when set as a trait)
        # the feed itself already happened: a step that cannot be recorded (an unrecordable value,
        # a trinket registered after recording started) fails the save, not the caller
        try:
            encoded_args, encoded_kwargs = encode_arguments(args, kwargs)
            self._add(
                {"step": "feed", "trinket": trinket, "method": method, "args": encoded_args, "kwargs": encoded_kwargs}
            )
        except (TypeError, ScenarioError) as exc:
            # numbered as the step it would have been, so the error says which call it was
            number = len(self._scenario) + 1
            reason = str(exc).removeprefix(f"step {number}: ")
            self.errors.append(f"step {number} (feed {trinket}.{method}): {reason}")

    def _on_enabled(self, change: dict[str, Any]) -> None:
        self._add(
            {
                "step": "feed",
                "trinket": change["owner"].name,
                "method": "set_enabled",
                "args": [bool(change["new"])],
                "kwargs": {},
            }
        )

    def _on_base_prompt(self, change: dict[str, Any]) -> None:
        self._add({"step": "base_prompt", "text": change["new"]})

    def _on_auto_compose(self, change: dict[str, Any]) -> None:
        self._add({"step": "auto_compose", "value": bool(change["new"])})

    def _on_clock(self, change: Any) -> None:
        self._clock_moved(change["new"])

    def _clock_moved(self, now: datetime) -> None:
        before, self._now = self._now, now
        delta = now - before
        steps = self._scenario.steps
        if delta >= timedelta(0) and (before + delta).isoformat() == now.isoformat():
            last = steps[-1] if steps else None
            if isinstance(last, ClockStep) and last.advance is not None:
                seconds = _seconds(delta + timedelta(seconds=last.advance))
                if seconds is not None:
                    self._scenario._replace_last(ClockStep(advance=seconds))
                    return
            seconds = _seconds(delta)
            if seconds is not None:
                self._add({"step": "clock", "advance": seconds})
                return
        self._add({"step": "clock", "set": now.isoformat()})

    def _on_turn(self, change: Any) -> None:
        self._sync_profile()
        last = self._scenario.steps[-1] if self._scenario.steps else None
        if isinstance(last, TurnStep):
            self._scenario._replace_last(TurnStep(last.n + 1))
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


def _seconds(delta: timedelta) -> int | float | None:
    """Seconds as a JSON number that turns back into exactly ``delta`` (None if none does)."""
    seconds = delta.total_seconds()
    value: int | float = int(seconds) if seconds.is_integer() else seconds
    return value if timedelta(seconds=value) == delta else None


register_recorder(ScenarioRecorder)  # Scenario.record() builds one


# -- every session's own recording, from its birth --------------------------------------------------

#: The most steps a session's own recording keeps (a feed, a run of turns, an explicit compose,
#: a clock move each make one): about as many as a day's interactive work, a few megabytes.
BIRTH_RECORDING_STEPS = 10_000

_births: weakref.WeakKeyDictionary[Session, weakref.ref[ScenarioRecorder]] = weakref.WeakKeyDictionary()
_refusals: weakref.WeakKeyDictionary[Session, str] = weakref.WeakKeyDictionary()


def record_from_birth(session: Session) -> None:
    """Start ``session``'s own recording (an instrument every default Session attaches once
    ``wm_kernel.experiments`` is imported), or note why it cannot have one."""
    if not isinstance(session.clock, ManualClock):
        _refusals[session] = f"its clock is a {type(session.clock).__name__}, whose moves cannot be replayed"
        return
    try:
        recorder = ScenarioRecorder(session, max_steps=BIRTH_RECORDING_STEPS)
    except ValueError as exc:
        _refusals[session] = str(exc)
        return
    # the recorder lives as long as the session (the session's observers hold it); this map must
    # not keep either alive
    _births[session] = weakref.ref(recorder)


def session_recording(session: Session) -> ScenarioRecorder:
    """The recording ``session`` has kept of what it was fed since it was built; ValueError saying
    why there is none (or why it is incomplete) otherwise."""
    found = _births.get(session)
    recorder = found() if found is not None else None
    if recorder is None:
        reason = _refusals.get(
            session,
            "it was built with instruments=... that leave the recording out, "
            "or before wm_kernel.experiments was imported",
        )
        raise ValueError(f"this session has no recording to replay: {reason}")
    if recorder.errors:
        raise ValueError(f"this session's recording cannot be replayed: {recorder.errors[0]}")
    return recorder


register_default_instrument(record_from_birth)
