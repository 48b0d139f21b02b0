"""Replaying a scenario and keeping every compose, in this process or in a fresh one.

The stability checker compares what two replays composed. A replay here is
:meth:`Scenario.run <wm_kernel.experiments.scenario.Scenario.run>` with one instrument attached,
a collector that keeps, for every compose, the turn, the clock's instant and each section as it went
into the prompt. The collector also stops a replay that runs past its time limit or its last turn
(so every check runs in bounded time) and, when asked, composes every state a second time (the
``recompose`` check).

A replay in a fresh process (:func:`wm_kernel.testing.worker.run_in_subprocess`) runs the same
replay in a worker process with the environment a check chooses (``PYTHONHASHSEED``, ``TZ``,
``LC_ALL``); the scenario goes over as its JSON Lines text, and trinkets that are not built in as import paths
(``module:QualifiedName``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wm_kernel.experiments.scenario import Scenario
    from wm_kernel.session import Session

#: The continuum id a checked scenario gets when it names none: a Session would otherwise make a
#: new random one per replay, and two replays could differ by it.
CHECK_CONTINUUM = "stability-check"
#: The name the tool definitions go by in a :class:`Compose` (when a session declares tools).
TOOLS_SECTION = "(tools)"


@dataclass(frozen=True)
class SectionText:
    """One section of one compose: where it went, whether it was cached, who wrote it, its text."""

    name: str
    placement: str
    cached: bool
    trinket: str | None
    content: str


@dataclass(frozen=True)
class Compose:
    """One compose of a replay: the session turn, the clock's instant, the sections in order."""

    turn: int
    at: datetime
    sections: tuple[SectionText, ...]

    def section(self, name: str) -> SectionText | None:
        return next((s for s in self.sections if s.name == name), None)

    def to_json(self) -> list[Any]:
        return [
            self.turn,
            self.at.isoformat(),
            [[s.name, s.placement, s.cached, s.trinket, s.content] for s in self.sections],
        ]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Compose:
        turn, at, sections = data
        return cls(
            int(turn),
            datetime.fromisoformat(at),
            tuple(SectionText(n, p, bool(c), t, text) for n, p, c, t, text in sections),
        )


def compose_of(session: Session) -> Compose:
    """The session's last composed prompt as a :class:`Compose`."""
    composed = session.composed
    assert composed is not None
    sections = tuple(SectionText(r.name, r.placement, r.cached, r.trinket, r.content) for r in composed.sections)
    tools = getattr(session, "tools", None)
    if isinstance(tools, list) and tools:
        # the tool definitions come first in a request and are part of every cached prefix
        text = json.dumps(tools, ensure_ascii=False, default=repr)
        sections = (SectionText(TOOLS_SECTION, "tools", True, None, text), *sections)
    return Compose(session.turn, session.clock.now(), sections)


@dataclass
class Replay:
    """What a replay composed: ``composes`` in order and, with ``recompose``, the second compose of
    each same state (``recomposes[i]`` pairs with ``composes[i]``). ``stopped`` says why the replay
    ended early (None: it ran every step)."""

    composes: list[Compose] = field(default_factory=list)
    recomposes: list[Compose] = field(default_factory=list)
    stopped: str | None = None


class _Stop(Exception):
    """Raised by the collector to end a replay (not one of the errors Scenario.run re-labels)."""


class _TimeLimit(BaseException):
    """Raised by the alarm inside whatever a replay is running when its time is up (a trinket that
    hangs): a BaseException, so no ``except Exception`` isolating a trinket swallows it."""


#: How long past its time limit a replay that does not return is interrupted.
ALARM_GRACE = 0.5


def _alarm(signum: int, frame: Any) -> None:
    raise _TimeLimit


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[bool]:
    """Interrupt the block half a second after ``seconds`` (a SIGALRM timer, the backstop of the
    check after each compose, for a step that never returns: only in the main thread, where
    signals are delivered; elsewhere only the check after each compose bounds it). Yields whether
    the timer is armed."""
    armed = (
        seconds is not None and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    )
    if not armed or seconds is None:
        yield False
        return
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds + ALARM_GRACE)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Collector:
    """The instrument a checked replay attaches: keeps every compose, composes again when asked,
    and stops the replay past ``deadline`` (a ``time.monotonic()`` value) or ``max_turns``."""

    def __init__(
        self,
        replay: Replay,
        *,
        recompose: bool = False,
        deadline: float | None = None,
        max_turns: int | None = None,
        clock_step: timedelta | None = None,
    ) -> None:
        self.replay = replay
        self.recompose = recompose or clock_step is not None
        # with a step, the second compose of each state is at a later instant (the clock moved
        # forward by it, then back): what differs follows the clock
        self.clock_step = clock_step
        self.deadline = deadline
        self.max_turns = max_turns
        self._again = False

    def __call__(self, session: Session) -> None:
        session.observe(lambda change: self._composed(session), "composed")

    def _composed(self, session: Session) -> None:
        if self._again:
            return
        if self.max_turns is not None and session.turn > self.max_turns:
            self.replay.stopped = f"stopped after turn {self.max_turns} (max_turns)"
            raise _Stop
        self.replay.composes.append(compose_of(session))
        if self.recompose:
            self._again = True
            clock: Any = session.clock
            at = clock.now()
            try:
                if self.clock_step is not None:
                    clock.set(at + self.clock_step)
                session.compose()
            finally:
                if self.clock_step is not None:
                    clock.set(at)
                self._again = False
            self.replay.recomposes.append(compose_of(session))
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.replay.stopped = f"stopped at the time limit, after turn {session.turn}"
            raise _Stop


TrinketFactory = Callable[[Any, Any], Any]


def run_scenario(
    scenario: Scenario,
    factories: Mapping[str, Any] | None = None,
    *,
    recompose: bool = False,
    timeout: float | None = None,
    max_turns: int | None = None,
    wrap: Callable[[Any], Any] | None = None,
    prepare: Callable[[Session], Any] | None = None,
    clock_step: timedelta | None = None,
) -> Replay:
    """Replay ``scenario`` in this process, keeping every compose (see :class:`Collector`).

    ``wrap(trinket)`` is called on each trinket right after it is built, ``prepare(session)`` once
    the session is built, before any step (a check's perturbation). ``clock_step``: compose each
    state again with the clock that much later (``recomposes``)."""
    import trinkets as builtin
    from trinkets import BUILTIN_NAMES

    replay = Replay()
    deadline = None if timeout is None else time.monotonic() + timeout
    chosen: dict[str, Any] = dict(factories or {})
    if wrap is not None:
        for name in scenario.all_trinkets:
            made = chosen.get(name)
            if made is None and name in BUILTIN_NAMES:
                made = getattr(builtin, name)
            if made is not None:
                chosen[name] = _wrapped(made, wrap)
    collector = Collector(replay, recompose=recompose, deadline=deadline, max_turns=max_turns, clock_step=clock_step)
    try:
        with _time_limit(timeout):
            scenario.run(factories=chosen, instruments=[collector] if prepare is None else [prepare, collector])
    except _Stop:
        pass
    except _TimeLimit:
        last = replay.composes[-1].turn if replay.composes else None
        replay.stopped = (
            f"stopped at the time limit ({timeout:g} s), "
            + ("before the first compose" if last is None else f"after turn {last}")
            + ": a trinket or step did not return in time"
        )
    return replay


def _wrapped(factory: Any, wrap: Callable[[Any], Any]) -> TrinketFactory:
    def make(bus: Any, wm: Any) -> Any:
        trinket = factory(bus, wm)
        wrap(trinket)
        return trinket

    return make


# -- in a fresh process ------------------------------------------------------------------------------


def import_path(obj: Any) -> str:
    """``module:QualifiedName`` of a trinket class or factory a fresh process can import; ValueError
    saying why not for one defined in ``__main__`` (a notebook, a script) or inside a function."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    label = getattr(obj, "__name__", repr(obj))
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise ValueError(f"{label} has no module and name to import it by")
    if module == "__main__":
        raise ValueError(
            f"{label} is defined in __main__ (a notebook or a script), which another "
            f"process cannot import; move it to a module"
        )
    if "<locals>" in qualname:
        raise ValueError(
            f"{label} is defined inside a function, which another process cannot import; move it to module level"
        )
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not obj:
        raise ValueError(f"{module}:{qualname} does not import as {label}")
    return f"{module}:{qualname}"


def load_import_path(path: str) -> Any:
    """The object :func:`import_path` named."""
    module, _, qualname = path.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found
