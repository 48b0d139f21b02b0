"""Recording a live Session into a :class:`~wm_kernel.experiments.scenario.Scenario`.

What is done to a Session is kept below it, by a :class:`~wm_kernel.session.feeds.FeedLog` (every
default Session has one from its birth, whichever module imported it); a
:class:`ScenarioRecorder` makes a Scenario of a log's steps when asked. :func:`record` starts a
log of its own, :func:`session_recording` reads the one a session was born with.
"""

from __future__ import annotations

import os
from typing import Any

from wm_kernel.core.profile import Profile
from wm_kernel.experiments.codec import encode_arguments
from wm_kernel.experiments.scenario import Scenario
from wm_kernel.experiments.scenario_file import profile_fields
from wm_kernel.experiments.steps import PROFILE_FIELDS, ScenarioError
from wm_kernel.session import Session
from wm_kernel.session.feeds import FeedLog

__all__ = ["ScenarioRecorder", "record", "session_recording"]


class ScenarioRecorder:
    """Records what is done to a live Session into a :class:`Scenario`.

    From construction on a :class:`~wm_kernel.session.feeds.FeedLog` observes the Session's traits
    (``turn``, ``composed``, ``base_prompt``, ``auto_compose``), its ManualClock's ``current`` and
    each trinket's ``enabled``, and subscribes to the bus for TrinketFedEvent and
    SegmentCollapsedEvent. It hears: feeds (``@feed`` methods, and ``enabled`` switches), turns,
    collapses, explicit composes (composes that follow a turn or collapse by ``auto_compose`` are
    part of those steps), clock moves, base prompt and ``auto_compose`` changes, and profile changes
    (noticed before the next step). :attr:`scenario` makes the Scenario of what it heard;
    :meth:`stop` removes every observer and subscription; a ``with`` block stops on exit.

    Start recording before the first turn: a replay starts from a fresh Session built from the
    header, so trinket data fed before recording started is not in it. A trinket registered later
    (``session.add_trinket``) is an ``add_trinket`` step. Data a trinket reads from a
    persistent store (reminders in a SQLite file) is not recorded, nor are changes made
    other than through ``@feed`` methods: update contexts (``request_update(action=...)``), trait
    assignments other than ``enabled``, composer attributes.

    ``max_steps`` bounds the recording: at that many steps it stops, and :attr:`errors` says so.
    """

    def __init__(self, session: Session, *, max_steps: int | None = None, log: FeedLog | None = None) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"recording needs a Session, got {type(session).__name__}")
        self.session = session
        self.log = log if log is not None else FeedLog(session, max_steps=max_steps)
        self.max_steps = self.log.max_steps
        self._made: tuple[int, Any, Scenario, list[str]] | None = None

    @property
    def scenario(self) -> Scenario:
        """The scenario recorded so far (made from the log when asked; the same object until the
        log grows)."""
        return self._make()[0]

    @property
    def errors(self) -> list[str]:
        """Why the scenario is incomplete: a feed whose arguments cannot be written, the bound reached."""
        return self._make()[1]

    @property
    def active(self) -> bool:
        """True until :meth:`stop`."""
        return self.log.active

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the recorded scenario (atomically); ScenarioError if a feed could not be recorded."""
        scenario, errors = self._make()
        if errors:
            raise ScenarioError(f"the recording is incomplete: {errors[0]}")
        scenario.save(path)

    def stop(self) -> Scenario:
        """Stop recording (remove every hook) and return the scenario. Calling it again is a no-op."""
        self.log.stop()
        return self.scenario

    def __enter__(self) -> ScenarioRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "recording" if self.active else "stopped"
        return f"<ScenarioRecorder {state}: {self.scenario!r}>"

    def _make(self) -> tuple[Scenario, list[str]]:
        log = self.log
        if log.active:
            log.sync()
        key = (len(log.steps), log.steps[-1] if log.steps else None)
        if self._made is not None and self._made[:2] == key:
            return self._made[2], self._made[3]
        scenario = Scenario(
            base_prompt=log.base_prompt,
            profile=profile_fields(log.profile),
            clock=log.start.isoformat(),
            user_id=log.user_id,
            trinkets=log.trinket_names,
            continuum_id=log.continuum_id,
            auto_compose=log.auto_compose,
            layout=log.layout,
        )
        errors: list[str] = []
        for step in log.steps:
            if step["step"] == "profile":
                scenario._append({"step": "profile", "fields": _changed(step["was"], step["now"])})
            elif step["step"] == "feed":
                _add_feed(scenario, step, errors)
            else:
                scenario._append(step)
        errors += log.errors
        self._made = (*key, scenario, errors)
        return scenario, errors


def _changed(was: Profile, now: Profile) -> dict[str, Any]:
    old, new = profile_fields(was), profile_fields(now)
    return {name: new.get(name, getattr(Profile(), name)) for name in PROFILE_FIELDS if old.get(name) != new.get(name)}


def _add_feed(scenario: Scenario, step: dict[str, Any], errors: list[str]) -> None:
    """Append a logged feed, its arguments written as JSON; a feed that cannot be written (an
    unrecordable value) is left out and named in ``errors``: it fails the save, not the caller."""
    trinket, method = step["trinket"], step["method"]
    try:
        args, kwargs = encode_arguments(step["args"], step["kwargs"])
        scenario._append({"step": "feed", "trinket": trinket, "method": method, "args": args, "kwargs": kwargs})
    except (TypeError, ScenarioError) as exc:
        # numbered as the step it would have been, so the error says which call it was
        number = len(scenario) + 1
        reason = str(exc).removeprefix(f"step {number}: ")
        errors.append(f"step {number} (feed {trinket}.{method}): {reason}")


def record(session: Session) -> ScenarioRecorder:
    """Start recording everything done to ``session`` (before its first turn, on a ManualClock):
    a :class:`ScenarioRecorder`, whose ``scenario`` is what was recorded."""
    return ScenarioRecorder(session)


def session_recording(session: Session) -> ScenarioRecorder:
    """The recording ``session`` has kept of what it was fed since it was built; ValueError saying
    why there is none (or why it is incomplete) otherwise."""
    log = FeedLog.find(session)
    if log is None:
        reason = FeedLog.refusal(session) or "it was built with instruments=... that leave the recording out"
        raise ValueError(f"this session has no recording to replay: {reason}")
    recorder = ScenarioRecorder(session, log=log)
    if recorder.errors:
        raise ValueError(f"this session's recording cannot be replayed: {recorder.errors[0]}")
    return recorder
