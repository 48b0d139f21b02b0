"""Session: the conversation driver a notebook uses.

A Session owns a bus, a WorkingMemory, a clock and a store, registers trinkets (every built-in one
by default), and drives turns and segment collapses the way the original's conversation loop does.

It tells of what changes through traits (``turn``, ``segment``, ``composed``...) and of what happens
through bus events (``TurnCompletedEvent``, ``SegmentCollapsedEvent``); instruments such as
:class:`~wm_kernel.instruments.history.History` observe those, and are attached to a Session rather than built
into it (see ``instruments``).

Beside it in this package: where the conversation is, kept in the store so that a restarted Session
resumes it (:mod:`wm_kernel.session.position`), the views of the turns it recorded, mixed into it
(:mod:`wm_kernel.session.recorded_views`), and the making of a trinket from a class or a factory
(:mod:`wm_kernel.session.trinket_factory`).

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> s = Session(base_prompt="You help {first_name}.", profile=Profile(first_name="Ada"),
...             clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[])
>>> s.compose()["cached_content"].splitlines()[0]
'You help Ada.'
>>> s.advance_turn(2); s.turn
[]
2
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from traitlets import Bool, HasTraits, Instance, Int, List, Unicode, default, observe, validate

from trinkets.base import EventAwareTrinket
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import Clock, SystemClock
from wm_kernel.core.composer.budget import check_limit
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent
from wm_kernel.core.failures import CollapseIncompleteError
from wm_kernel.core.profile import Profile
from wm_kernel.core.prompt import ComposedPrompt, ComposedPromptTrait
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.dialects.registry import get_dialect, wire_for_layout
from wm_kernel.session.position import Segment, StoredPosition
from wm_kernel.session.recorded_views import RecordedViews
from wm_kernel.session.trinket_factory import TrinketFactory, make_trinket
from wm_kernel.stores import keys
from wm_kernel.stores.embedded import MemoryStore, StateStore
from wm_kernel.tokens import TokenCounter, counter_for, family_of
from wm_kernel.utils.checks import check_int, check_str

#: Something attached to a new Session: ``instrument(session)``, called once the session is built.
Instrument = Callable[["Session"], object]


def default_instruments() -> tuple[Instrument, ...]:
    """What a Session attaches when ``instruments`` is not given: a
    :class:`~wm_kernel.instruments.history.History`, so ``session.history`` holds every compose
    from the first, an :class:`~wm_kernel.instruments.items.ItemHistory`, so a dashboard
    opened late shows the items (and their countdowns) of every turn, and a
    :class:`~wm_kernel.session.feeds.FeedLog`, so what the session is fed can be replayed (a
    Scenario is made of it when asked: ``wm_kernel.experiments.recorder.session_recording``).
    The list is the whole of it: nothing is added by importing another module."""
    from wm_kernel.instruments.history import History
    from wm_kernel.instruments.items import ItemHistory
    from wm_kernel.session.feeds import FeedLog

    return (History.attach, ItemHistory.attach, FeedLog.attach)


_current: Session | None = None
_current_lock = threading.Lock()


def current_session() -> Session:
    """The Session the notebook magics drive (created on first use with the defaults)."""
    global _current
    with _current_lock:
        if _current is None or _current.closed:
            _current = Session()
        return _current


def set_current_session(session: Session | None) -> None:
    """Make ``session`` the one the magics drive (None: a fresh one on next use)."""
    global _current
    if session is not None and not isinstance(session, Session):
        raise TypeError(f"expected a Session, got {type(session).__name__}")
    with _current_lock:
        _current = session


#: The most turns one ``advance_turn`` (``%turn N``, a scenario's ``turn`` step) completes: each
#: turn publishes its event and composes, a few milliseconds with every built-in trinket, so this
#: many finish within about a minute; a larger count would run for hours and is refused.
MAX_TURNS_AT_ONCE = 10_000


class Session(RecordedViews, HasTraits):
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
        The conversation id carried by every event (default: a new unique one per Session, so
        Sessions in two processes on one file never share one; pass it to resume a conversation).
    auto_compose:
        Compose after every turn and collapse, so ``composed`` always shows the current prompt and
        every turn is recorded.
    instruments:
        Callables ``f(session)`` attached once the session is built (observers of its traits and
        events). None attaches :func:`default_instruments` (a History); ``()`` attaches nothing,
        and ``session.history`` then records from its first use.

    A Session on a store that already holds this conversation (same ``user_id`` and
    ``continuum_id``, e.g. a SQLite file after a restart) resumes its turn and segment counters, so
    new turns never overwrite old ones.
    token_budget, budget_step:
        The WorkingMemory's token budget and its step (None: no budget; see wm_kernel.core.composer.budget).
    model:
        The model the prompt is for (a name ``wm_kernel.tokens.counter_for`` knows, e.g.
        ``"claude-sonnet-4-6"``, ``"gpt-5.4"``). It picks the session's one token counter, which the
        budget and the history count with, and the model ``cache_simulation`` prices by default.
        None (the default): no model; counts are offline tiktoken cl100k tokens.
    token_counter:
        A TokenCounter to count with instead of the model's (e.g. ``counter_for(model, client=...)``
        for Anthropic's exact counts).
    """

    turn = Int(0, help="Turns completed in this session (global; never goes back).")
    segment_turn = Int(0, help="Turns completed in the current segment (0 right after a collapse).")
    segment_number = Int(1, help="1 for the first segment, +1 after each collapse.")
    segment = Instance(
        Segment,
        help="The current segment (number, start); a new value after each "
        "collapse, so observers see the segment that ended as ``old``.",
    )
    composed = ComposedPromptTrait(help="The last composed prompt; notifies on every compose.")
    base_prompt = Unicode("", help="The base system prompt template.")
    auto_compose = Bool(True, help="Compose after each turn and collapse.")
    closed = Bool(False, help="A closed session refuses to compose, advance or collapse.")
    trinket_names = List(
        Unicode(),
        help="The registered trinkets' class names, in order: a new list "
        "after each add_trinket, so observers hear of a trinket added "
        "later.",
    )
    model = Unicode(
        None, allow_none=True, help="The model the prompt is for: picks the token counter (None: offline cl100k)."
    )
    token_counter = Instance(
        TokenCounter,
        help="The session's one token counter: the budget and the history count with it (follows ``model``).",
    )

    def __init__(
        self,
        base_prompt: str = "You are a helpful assistant talking with {first_name}.",
        *,
        profile: Profile | None = None,
        clock: Clock | None = None,
        store: StateStore | None = None,
        user_id: str = "notebook",
        layout: Layout | None = None,
        trinkets: Iterable[type[EventAwareTrinket] | TrinketFactory] | None = None,
        continuum_id: str | None = None,
        auto_compose: bool = True,
        bus: EventBus | None = None,
        instruments: Iterable[Instrument] | None = None,
        token_budget: int | None = None,
        budget_step: int | None = None,
        model: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        """Build the session (the options: see the class docstring).

        Long because: fifteen options, each checked and then wired in the order they depend on each
        other (counter, clock, store, bus, continuum, working memory, segment, trinkets,
        instruments).
        """
        if not isinstance(base_prompt, str):
            raise TypeError(f"base_prompt must be a str, got {type(base_prompt).__name__}")
        if profile is not None and not isinstance(profile, Profile):
            raise TypeError(f"profile must be a Profile, got {type(profile).__name__}")
        if layout is not None and not isinstance(layout, Layout):
            raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
        check_limit(token_budget, "token_budget")
        check_limit(budget_step, "budget_step")
        if token_counter is not None and not isinstance(token_counter, TokenCounter):
            raise TypeError(f"token_counter must be a TokenCounter, got {type(token_counter).__name__}")
        super().__init__(base_prompt=base_prompt, auto_compose=auto_compose)
        self._registering = 0  # > 0 inside registering(): trinket_names is set once, at its end
        # the counter is chosen before anything counts: the budget and the history share it
        self.model = model
        if token_counter is not None:
            self.token_counter = token_counter
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.store: StateStore = store if store is not None else MemoryStore()
        self.bus = bus if bus is not None else EventBus()
        if continuum_id is not None:
            check_str(continuum_id, "continuum_id")
        # unique across processes: two Sessions on one file never share a conversation by accident
        self.continuum_id = continuum_id or f"continuum-{uuid.uuid4().hex[:12]}"
        # the continuum is set before any trinket registers: stateful trinkets key their items by it
        # (a WorkingMemory of the trinket contract's trinkets: the core knows them as a Protocol)
        self.working_memory = WorkingMemory[EventAwareTrinket](
            self.bus,
            store=self.store,
            user_id=user_id,
            profile=profile,
            clock=self.clock,
            layout=layout,
            continuum_id=self.continuum_id,
        )
        self.working_memory.token_budget = token_budget
        self.working_memory.budget_step = budget_step
        self.segment = Segment(1, self.clock.now())
        #: the imported log this session replays (``ImportedSession.to_session()``: its tools,
        #: conversation and requests by turn, which the cache and request views use), else None
        self.replayed: Any = None
        self._resume()
        if trinkets is None:
            from trinkets import BUILTIN_TRINKETS

            trinkets = BUILTIN_TRINKETS
        for factory in trinkets:
            self.add_trinket(factory)
        for trinket in self.working_memory.trinkets.values():
            trinket.begin_segment(self.segment_started_at)
        self.working_memory.budget.counter = self.token_counter
        for instrument in default_instruments() if instruments is None else tuple(instruments):
            instrument(self)

    @default("token_counter")
    def _default_counter(self) -> TokenCounter:
        return counter_for(self.model) if self.model is not None else TokenCounter()

    @validate("model")
    def _check_model(self, proposal: Any) -> str | None:
        value = proposal["value"]
        if value is not None:
            family_of(value)  # one-line ValueError for a model no counter knows
        return value  # type: ignore[no-any-return]

    @observe("model")
    def _model_changed(self, change: Any) -> None:
        model = change["new"]
        self.token_counter = counter_for(model) if model is not None else TokenCounter()

    @observe("token_counter")
    def _counter_changed(self, change: Any) -> None:
        # hand the one counter to the budget and the history (if attached yet), each text counted once
        working_memory = getattr(self, "working_memory", None)
        if working_memory is not None:
            working_memory.budget.counter = change["new"]
        from wm_kernel.instruments.history import History

        history = History.find(self)
        if history is not None:
            history.counter = change["new"]

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
    def segment_started_at(self) -> datetime:
        """When the current segment started (``segment.started_at``)."""
        return self.segment.started_at

    @property
    def segment_id(self) -> str:
        """The current segment's id: ``{continuum_id}-segment-{segment_number}``."""
        return f"{self.continuum_id}-segment-{self.segment_number}"

    @validate("base_prompt")
    def _check_base_prompt(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        # a lone surrogate could be neither recorded nor stored: refused here, in one line
        return check_str(value, "base_prompt", empty_ok=True)

    def add_trinket(
        self, factory: type[EventAwareTrinket] | TrinketFactory, *, replace: bool = False
    ) -> EventAwareTrinket:
        """Create and register a trinket from its class (or a factory ``f(bus, wm)``).

        A stateful trinket starts at the session's ``segment_turn`` (not 0), so TTLs of items it
        loaded from the store (a resumed session) or receives now count from the right turn."""
        trinket = make_trinket(factory, self.bus, self.working_memory, replace=replace)
        trinket.resume_at(self.segment_turn)
        if not self._registering:
            self.trinket_names = list(self.working_memory.trinkets)
        return trinket

    @contextlib.contextmanager
    def registering(self) -> Iterator[None]:
        """Add many trinkets at once: ``trinket_names`` (a validated list trait, O(n) to set, and
        its observers, such as the feed log, O(n) to hear) is set once when the block ends, here
        and in the WorkingMemory, so n additions cost O(n), not O(n**2)."""
        with self.working_memory.registering():
            self._registering += 1
            try:
                yield
            finally:
                self._registering -= 1
        if not self._registering:
            self.trinket_names = list(self.working_memory.trinkets)

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
        composed = self.working_memory.compose(self.base_prompt, continuum_id=self.continuum_id)
        composed.turn = self.turn
        self.composed = composed
        return composed

    def advance_turn(self, n: int = 1) -> list[dict[str, Any]]:
        """Complete ``n`` turns, one TurnCompletedEvent each, in order (composing after each when
        ``auto_compose``). Returns the items that expired: dicts with turn, trinket, id, label."""
        self._check_open()
        check_int(n, "number of turns", minimum=1)
        if n > MAX_TURNS_AT_ONCE:
            raise ValueError(
                f"at most {MAX_TURNS_AT_ONCE:,} turns at once (got {n}); advance in "
                f"steps of {MAX_TURNS_AT_ONCE:,} or fewer"
            )
        expired: list[dict[str, Any]] = []
        for _ in range(n):
            before = self._live_items()
            self.turn += 1
            self.segment_turn += 1
            self._position.write_turns(self.turn, self.segment_turn)
            self.bus.publish(
                TurnCompletedEvent.create(
                    continuum_id=self.continuum_id,
                    user_id=self.user_id,
                    clock=self.clock,
                    turn_number=self.turn,
                    segment_turn_number=self.segment_turn,
                )
            )
            after = self._live_items()
            for key, item in before.items():
                if key not in after:
                    expired.append(
                        {"turn": self.turn, "trinket": key[0], "id": item.get("id"), "label": item.get("label", "")}
                    )
            if self.auto_compose:
                self.compose()
        return expired

    def _live_items(self) -> dict[tuple[str, Any], dict[str, Any]]:
        items = {}
        for trinket in self.working_memory.trinkets.values():
            for item in trinket.describe_items():
                items[(trinket.name, item.get("id"))] = item
        return items

    def collapse_segment(self, summary: str = "", tools_used: Sequence[str] = ()) -> None:
        """End the current segment: publish SegmentCollapsedEvent (stateful trinkets are flushed,
        the manifest records the segment), start the next ``segment`` with segment turns at 0, and
        compose when ``auto_compose``."""
        self._check_open()
        if not isinstance(summary, str):
            raise TypeError(f"summary must be a str, got {type(summary).__name__}")
        tools = _tool_names(tools_used)
        event = SegmentCollapsedEvent.create(
            continuum_id=self.continuum_id,
            user_id=self.user_id,
            clock=self.clock,
            segment_id=self.segment_id,
            summary=summary,
            tools_used=tools,
        )
        # all or nothing: one store transaction holds every write of the collapse (the trinkets'
        # flushes, the manifest's segment, the new segment's start), so a store another process
        # keeps locked fails it before anything changes, in memory or in the store
        before = (self.segment_turn, self.segment_number, self.segment)
        try:
            # the working memory's lock first, then the store's: the order a compose takes them
            # (a compose on another thread holds the first and waits for the second), so the two
            # never wait for each other
            with self.working_memory.lock, self.store.transaction():
                record = self.bus.publish(event)
                # the segment ends even if a trinket could not be flushed (the others were); that
                # one is reported to the caller once the collapse is complete (see WorkingMemory)
                incomplete = next(
                    (f.exception for f in record.failures if isinstance(f.exception, CollapseIncompleteError)), None
                )
                self.segment_turn = 0
                self.segment_number += 1
                self.segment = Segment(self.segment_number, event.occurred_at)
                position = self._position
                position.write_segment(self.segment_number, self.segment_started_at)
                position.write_turns(self.turn, self.segment_turn)
        except BaseException:
            self.segment_turn, self.segment_number, self.segment = before
            raise
        if self.auto_compose:
            self.compose()
        if incomplete is not None:
            raise incomplete

    # -- where the conversation is, kept in the store so that a restarted Session resumes it
    @property
    def _position(self) -> StoredPosition:
        """This conversation's record in the store (``session:{user_id}:{continuum_id}``)."""
        return StoredPosition(self.store, keys.session(self.user_id, self.continuum_id))

    def _resume(self) -> None:
        """Take the counters and the segment start an earlier Session of this conversation stored
        (nothing stored: a new conversation), then store them as this Session starts."""
        position = self._position
        segment, turns = position.read()
        if segment is not None:
            self.segment_number = segment.number
            self.segment = segment
        if turns is not None:
            self.turn, self.segment_turn = turns
        with self.store.transaction():
            position.write_segment(self.segment_number, self.segment_started_at)
            position.write_turns(self.turn, self.segment_turn)

    # -- the views of the recorded turns (recorder, history, prompt_at, cache_simulation,
    # cache_advice, diff) are RecordedViews'
    @property
    def wire(self) -> str | None:
        """The wire dialect this session's requests go out on by default (``wm_kernel.dialects``):
        the one set here, else MIRA's for a session laid out with ``Layout.original()``, else None
        (each model's provider's own). ``cache_simulation``, ``%cache``, ``%request`` and ``send``
        assume it unless told otherwise."""
        chosen: str | None = self.__dict__.get("_wire")
        return chosen if chosen is not None else wire_for_layout(self.layout.name)

    @wire.setter
    def wire(self, value: str | None) -> None:
        self.__dict__["_wire"] = None if value is None else get_dialect(value).name

    def close(self) -> None:
        """Refuse further driving (the store stays open: it may be shared)."""
        self.closed = True

    def __repr__(self) -> str:
        return f"<Session turn={self.turn} segment={self.segment_number} trinkets={list(self.working_memory.trinkets)}>"


def _tool_names(tools_used: Sequence[str]) -> tuple[str, ...]:
    """``tools_used`` as one tuple of tool names; a TypeError if it is not a sequence of strings."""
    # one tuple, checked and then used: a generator would be empty by its second reading
    try:
        tools = tuple(tools_used) if not isinstance(tools_used, str) else None
    except TypeError:
        tools = None
    if tools is None or not all(isinstance(t, str) for t in tools):
        raise TypeError("tools_used must be a sequence of tool names (strings)")
    return tools
