"""Session: the conversation driver a notebook uses.

A Session owns a bus, a WorkingMemory, a clock and a store, registers trinkets (every built-in one
by default), and drives turns and segment collapses the way the original's conversation loop does.

Examples
--------
>>> from wm_kernel.clock import ManualClock
>>> s = Session(base_prompt="You help {first_name}.", profile=Profile(first_name="Ada"),
...             clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[])
>>> s.compose()["cached_content"].splitlines()[0]
'You help Ada.'
>>> s.advance_turn(2); s.turn
[]
2
"""
from __future__ import annotations

import itertools
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from traitlets import Bool, HasTraits, Int, Unicode, validate

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel.budget import check_limit
from wm_kernel.bus import EventBus
from wm_kernel.checks import check_int
from wm_kernel.clock import Clock, SystemClock, parse_instant
from wm_kernel.composer import Layout
from wm_kernel.core import WorkingMemory
from wm_kernel.events import (ComposeSystemPromptEvent, SegmentCollapsedEvent, TurnCompletedEvent)
from wm_kernel.history import History
from wm_kernel.profile import Profile
from wm_kernel.store import MemoryStore, StateStore
from wm_kernel.types import ComposedPrompt, ComposedPromptTrait

if TYPE_CHECKING:
    import pandas as pd

    from wm_kernel.diff import PromptDiff

TrinketFactory = Callable[[EventBus, WorkingMemory], EventAwareTrinket]

_current: "Session | None" = None
_current_lock = threading.Lock()


def current_session() -> "Session":
    """The Session the notebook magics drive (created on first use with the defaults)."""
    global _current
    with _current_lock:
        if _current is None or _current.closed:
            _current = Session()
        return _current


def set_current_session(session: "Session | None") -> None:
    """Make ``session`` the one the magics drive (None: a fresh one on next use)."""
    global _current
    if session is not None and not isinstance(session, Session):
        raise TypeError(f"expected a Session, got {type(session).__name__}")
    with _current_lock:
        _current = session


class Session(HasTraits):
    """A conversation: base prompt, profile, turns, segments, and the trinkets that fill the prompt.

    Parameters
    ----------
    base_prompt:
        The base system prompt, with placeholders such as ``{first_name}``.
    profile, clock, store, user_id, layout:
        Passed to the WorkingMemory (defaults: ``Profile()``, ``SystemClock()``, ``MemoryStore()``,
        "notebook", ``Layout.default()``).
    trinkets:
        Trinket classes (or factories ``f(bus, wm) -> trinket``) to register, in order. None registers
        every built-in trinket.
    continuum_id:
        The conversation id carried by every event (default: a new one per Session).
    auto_compose:
        Compose after every turn and collapse, so ``composed`` always shows the current prompt and
        every turn is recorded.
    token_budget, budget_step:
        The WorkingMemory's token budget and its step (None: no budget; see wm_kernel.budget); the
        budget counts with the history's token counter.
    """

    turn = Int(0, help="Turns completed in this session (global; never goes back).")
    segment_turn = Int(0, help="Turns completed in the current segment (0 right after a collapse).")
    segment_number = Int(1, help="1 for the first segment, +1 after each collapse.")
    composed = ComposedPromptTrait(help="The last composed prompt; notifies on every compose.")
    base_prompt = Unicode("", help="The base system prompt template.")
    auto_compose = Bool(True, help="Compose after each turn and collapse.")
    closed = Bool(False, help="A closed session refuses to compose, advance or collapse.")

    _ids = itertools.count(1)

    def __init__(self, base_prompt: str = "You are a helpful assistant talking with {first_name}.", *,
                 profile: Profile | None = None, clock: Clock | None = None,
                 store: StateStore | None = None, user_id: str = "notebook",
                 layout: Layout | None = None,
                 trinkets: Iterable[type[EventAwareTrinket] | TrinketFactory] | None = None,
                 continuum_id: str | None = None, auto_compose: bool = True,
                 bus: EventBus | None = None, token_budget: int | None = None,
                 budget_step: int | None = None) -> None:
        if not isinstance(base_prompt, str):
            raise TypeError(f"base_prompt must be a str, got {type(base_prompt).__name__}")
        if profile is not None and not isinstance(profile, Profile):
            raise TypeError(f"profile must be a Profile, got {type(profile).__name__}")
        if layout is not None and not isinstance(layout, Layout):
            raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
        check_limit(token_budget, "token_budget")
        check_limit(budget_step, "budget_step")
        super().__init__(base_prompt=base_prompt, auto_compose=auto_compose)
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.store: StateStore = store if store is not None else MemoryStore()
        self.bus = bus if bus is not None else EventBus()
        self.continuum_id = continuum_id or f"continuum-{next(self._ids)}"
        # the continuum is set before any trinket registers: stateful trinkets key their items by it
        self.working_memory = WorkingMemory(self.bus, store=self.store, user_id=user_id,
                                            profile=profile, clock=self.clock, layout=layout,
                                            continuum_id=self.continuum_id)
        self.working_memory.token_budget = token_budget
        self.working_memory.budget_step = budget_step
        self.segment_started_at = self.clock.now()
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        # the history is identified by (user_id, continuum_id); in a SQLite store it reloads, and the
        # turn and segment counters resume after its last turn so new turns never overwrite old ones
        self.recorder = History(self.store, user_id=user_id, continuum_id=self.continuum_id)
        if token_budget is not None:  # budgets and the history's tokens column count alike, once
            self.working_memory.budget.counter = self.recorder.counter
        resumed = self.recorder.last_position()
        if resumed is not None:
            self.turn, self.segment_number, self.segment_turn = resumed
            self.segment_started_at = self._stored_segment_start() or self.segment_started_at
        self._store_segment_start()
        if trinkets is None:
            from trinkets import BUILTIN_TRINKETS
            trinkets = BUILTIN_TRINKETS
        for factory in trinkets:
            self.add_trinket(factory)
        self._record_segment_in_manifest(None)

    # -- parts
    @property
    def profile(self) -> Profile:
        """The WorkingMemory's profile; assigning a new one shows from the next compose."""
        return self.working_memory.profile

    @profile.setter
    def profile(self, profile: Profile) -> None:
        if not isinstance(profile, Profile):
            raise TypeError(f"profile must be a Profile, got {type(profile).__name__}")
        self.working_memory.profile = profile

    @property
    def user_id(self) -> str:
        """Owner of the store entries and of every event (the WorkingMemory's)."""
        return self.working_memory.user_id

    @property
    def layout(self) -> Layout:
        """The layout the prompt is composed by (the WorkingMemory's)."""
        return self.working_memory.layout

    @property
    def segment_id(self) -> str:
        """The current segment's id: ``{continuum_id}-segment-{segment_number}``."""
        return f"{self.continuum_id}-segment-{self.segment_number}"

    @validate("base_prompt")
    def _check_base_prompt(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if not isinstance(value, str):
            raise TypeError(f"base_prompt must be a str, got {type(value).__name__}")
        return value

    def add_trinket(self, factory: type[EventAwareTrinket] | TrinketFactory, *,
                    replace: bool = False) -> EventAwareTrinket:
        """Create and register a trinket from its class (or a factory ``f(bus, wm)``).

        A stateful trinket starts at the session's ``segment_turn`` (not 0), so TTLs of items it
        loaded from the store (a resumed session) or receives now count from the right turn."""
        if isinstance(factory, type) and issubclass(factory, EventAwareTrinket):
            trinket = factory(self.bus, self.working_memory, replace=replace)
        elif callable(factory):
            # any callable may land here (a class that is not a trinket too): check what it made
            make: Callable[..., object] = factory
            made = make(self.bus, self.working_memory)
            if not isinstance(made, EventAwareTrinket):
                raise TypeError(f"trinket factory {factory!r} returned {type(made).__name__}")
            trinket = made
        else:
            raise TypeError(f"expected a trinket class or factory, got {factory!r}")
        if isinstance(trinket, StatefulTrinket):
            trinket.current_turn = self.segment_turn
        return trinket

    def trinket(self, name: str) -> EventAwareTrinket:
        """A registered trinket by class name (or section name); ValueError naming the known ones."""
        return self.working_memory.get_trinket(name)

    @property
    def trinkets(self) -> dict[str, EventAwareTrinket]:
        """Registered trinkets by class name, in registration order (a copy)."""
        return self.working_memory.trinkets

    # -- driving
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this session is closed; start a new Session")

    def compose(self, base_prompt: str | None = None) -> ComposedPrompt:
        """Run one compose cycle and return the ComposedPrompt (also kept in ``composed``)."""
        self._check_open()
        if base_prompt is not None:
            self.base_prompt = base_prompt
        composed = self.working_memory._run_compose_cycle(ComposeSystemPromptEvent.create(
            continuum_id=self.continuum_id, user_id=self.user_id, clock=self.clock,
            base_prompt=self.base_prompt))
        composed.turn = self.turn
        self.recorder.record(self.turn, self.segment_number, composed, segment_turn=self.segment_turn)
        self.composed = composed
        self._notify("composed", {"composed": composed})
        return composed

    def advance_turn(self, n: int = 1) -> list[dict[str, Any]]:
        """Complete ``n`` turns, one TurnCompletedEvent each, in order (composing after each when
        ``auto_compose``). Returns the items that expired: dicts with turn, trinket, id, label."""
        self._check_open()
        check_int(n, "number of turns", minimum=1)
        expired: list[dict[str, Any]] = []
        for _ in range(n):
            before = self._live_items()
            self.turn += 1
            self.segment_turn += 1
            self.bus.publish(TurnCompletedEvent.create(
                continuum_id=self.continuum_id, user_id=self.user_id, clock=self.clock,
                turn_number=self.turn, segment_turn_number=self.segment_turn))
            after = self._live_items()
            for key, item in before.items():
                if key not in after:
                    expired.append({"turn": self.turn, "trinket": key[0], "id": item.get("id"),
                                    "label": item.get("label", "")})
            self._notify("turn", {"turn": self.turn})
            if self.auto_compose:
                self.compose()
        return expired

    def _live_items(self) -> dict[tuple[str, Any], dict[str, Any]]:
        items = {}
        for trinket in self.working_memory.trinkets.values():
            if isinstance(trinket, StatefulTrinket):
                for item in trinket.describe_items():
                    items[(trinket.name, item.get("id"))] = item
        return items

    def collapse_segment(self, summary: str = "", tools_used: Sequence[str] = ()) -> None:
        """End the current segment: publish SegmentCollapsedEvent (stateful trinkets are flushed),
        restart segment turns at 0, and compose when ``auto_compose``."""
        self._check_open()
        if not isinstance(summary, str):
            raise TypeError(f"summary must be a str, got {type(summary).__name__}")
        # one tuple, checked and then used: a generator would be empty by its second reading
        try:
            tools = tuple(tools_used) if not isinstance(tools_used, str) else None
        except TypeError:
            tools = None
        if tools is None or not all(isinstance(t, str) for t in tools):
            raise TypeError("tools_used must be a sequence of tool names (strings)")
        ended_at = self.clock.now()
        details = {"segment_id": self.segment_id, "summary": summary, "tools_used": tools,
                   "started_at": self.segment_started_at, "ended_at": ended_at}
        self.bus.publish(SegmentCollapsedEvent.create(
            continuum_id=self.continuum_id, user_id=self.user_id, clock=self.clock,
            segment_id=self.segment_id, summary=summary, tools_used=tools))
        self._record_segment_in_manifest(details)
        self._notify("collapsed", details)
        self.segment_turn = 0
        self.segment_number += 1
        self.segment_started_at = ended_at
        self._store_segment_start()
        if self.auto_compose:
            self.compose()

    @property
    def _segment_key(self) -> str:
        return f"session:{self.user_id}:{self.continuum_id}"

    def _store_segment_start(self) -> None:
        """Keep when the current segment started, so a resumed session (and its manifest) keeps it."""
        self.store.hset(self._segment_key, "segment", {
            "number": self.segment_number, "started_at": self.segment_started_at.isoformat()})

    def _stored_segment_start(self) -> datetime | None:
        """When the current segment started, as stored by an earlier Session of this conversation;
        None if nothing is stored for this segment number (an older file), ValueError if what is
        stored is unreadable."""
        key = self._segment_key
        stored = self.store.hget(key, "segment")
        if stored is None:
            return None
        try:
            if not isinstance(stored, dict) or set(stored) != {"number", "started_at"}:
                raise ValueError("expected {'number', 'started_at'}")
            started_at = parse_instant(stored["started_at"], what="started_at")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the segment stored under {key!r} cannot be read ({exc}); delete it "
                             f"with store.delete({key!r}) to start the segment now") from None
        return started_at if stored["number"] == self.segment_number else None

    def _record_segment_in_manifest(self, details: dict[str, Any] | None) -> None:
        """Tell a registered ManifestTrinket that a segment collapsed (``details``) and the next
        one is active, or, with None, that the current segment is active (the session start)."""
        from trinkets.manifest_trinket import ManifestTrinket

        for trinket in self.working_memory.trinkets.values():
            if isinstance(trinket, ManifestTrinket):
                if details is None:
                    trinket.begin_segment(self.segment_started_at)
                else:
                    trinket.record_collapse(details["summary"], details["started_at"],
                                            details["ended_at"], self.segment_number)

    def _notify(self, what: str, details: dict[str, Any]) -> None:
        # listeners (the manifest, recorders) learn of session-level facts no event carries
        for listener in tuple(self.listeners):
            listener(what, details)

    @property
    def history(self) -> "pd.DataFrame":
        """pandas DataFrame, one row per (turn, section) of every compose (see wm_kernel.history)."""
        return self.recorder.frame()

    def prompt_at(self, turn: int) -> ComposedPrompt:
        """The prompt composed at ``turn`` (its last compose), from the history."""
        return self.recorder.prompt_at(turn)

    def diff(self, turn_a: int, turn_b: int | None = None, *,
             other: "Session | None" = None) -> "PromptDiff":
        """A PromptDiff from turn ``turn_a`` to ``turn_b`` (default: the latest recorded turn), or to
        ``other``'s prompt at ``turn_b`` (default ``turn_a``) when another Session is given."""
        from wm_kernel.diff import diff_prompts

        if other is not None and not isinstance(other, Session):
            raise TypeError(f"other must be a Session, got {type(other).__name__}")
        target = other if other is not None else self
        if turn_b is None:
            if other is not None:
                turn_b = turn_a
            else:
                last = self.recorder.last_position()
                if last is None:
                    raise ValueError("nothing recorded yet: compose first")
                turn_b = last[0]
        old = self.prompt_at(turn_a)
        new = target.prompt_at(turn_b)
        if other is None:
            return diff_prompts(old, new, old_label=f"turn {turn_a}", new_label=f"turn {turn_b}")
        return diff_prompts(old, new, old_label=f"{self.continuum_id} turn {turn_a}",
                            new_label=f"{other.continuum_id} turn {turn_b}")

    def close(self) -> None:
        """Refuse further driving (the store stays open: it may be shared)."""
        self.closed = True

    def __repr__(self) -> str:
        return (f"<Session turn={self.turn} segment={self.segment_number} "
                f"trinkets={list(self.working_memory.trinkets)}>")
