"""What the dashboard shows, apart from how: its options, the turn on view and the recorded turns.

:class:`DashboardModel` holds the dashboard's options and the turn on view as traits whose bounds
hold at every assignment (a wrong value is a one-line ``TypeError`` or ``ValueError`` and leaves the
old value in place). :class:`TurnDriver` decides which turn is shown and when drawing may happen;
:class:`TurnRecord` is what the read-only view needs per turn: the recorded prompts (the session's
History keeps them; the record keeps the turn numbers and what each turn left out) and the items of
the stateful trinkets over time (``overview.ItemLog``: changes, not per-turn copies).

Nothing here makes a widget: the shell (``dashboard.Dashboard``) draws what the model says.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> m = DashboardModel(Session(trinkets=[], clock=ManualClock("2026-11-30T09:00:00+00:00")))
>>> m.preview_chars
20000
>>> m.preview_chars = 0
Traceback (most recent call last):
...
ValueError: preview_chars must be an int >= 1, got 0
>>> m.preview_chars
20000
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from traitlets import HasTraits, Instance, TraitType

from trinkets.base import EventAwareTrinket
from wm_kernel.core.prompt import ComposedPrompt, OmittedSection
from wm_kernel.display import render
from wm_kernel.instruments.items import ItemHistory, describe
from wm_kernel.session import Session

_SHORT_TITLES = {
    "system:cached": "system cached",
    "system:uncached": "system uncached",
    "conversation_prefix": "conv. prefix",
    "post_history": "post-history",
    "notification": "notification",
}
#: The placement views, in display order: key -> tab title. The groups are ``render.GROUPS``
#: (system split by cache policy, which decides cache hits).
VIEWS: dict[str, str] = {key.replace(":", "_"): _SHORT_TITLES[key] for key, _ in render.GROUPS}


@dataclass(frozen=True)
class Tab:
    """One tab of the dashboard: its ``key``, its ``title`` and what ``kind`` of content it holds:
    ``"drawn"`` (one HTML view of the turn on view, drawn by the renderer of that key, only while
    the tab is open), ``"sections"`` (the panels of the sections of placement ``key``) or
    ``"toggles"`` (the trinkets' enable switches)."""

    key: str
    title: str
    kind: str

    def as_json(self) -> dict[str, str]:
        return {"key": self.key, "title": self.title, "kind": self.kind}


#: The dashboard's tabs, in order. A front end draws the tabs it is given from this list, so a new
#: view is one entry here (and, for a drawn one, its renderer in ``tabs.py``).
TABS: tuple[Tab, ...] = (
    Tab("overview", "overview", "drawn"),
    *(Tab(key, title, "sections") for key, title in VIEWS.items()),
    Tab("budget", "budget", "drawn"),
    Tab("cache", "cache", "drawn"),
    Tab("plan", "plan", "drawn"),
    Tab("request", "request", "drawn"),
    Tab("replies", "replies", "drawn"),
    Tab("trinkets", "trinkets", "toggles"),
    Tab("events", "event log", "drawn"),
)

#: The model the cache tab simulates unless told otherwise.
DEFAULT_CACHE_MODEL = "claude-sonnet-4-6"


def check_cache_model(model: object) -> str:
    """``model`` if it names a model of ``wm_kernel.cachesim.MODELS``; TypeError or ValueError."""
    from wm_kernel.cachesim import MODELS

    if not isinstance(model, str):
        raise TypeError(f"cache_model must be a str, got {type(model).__name__}")
    if model not in MODELS:
        raise ValueError(f"unknown cache_model {model!r}; known: {', '.join(sorted(MODELS))}")
    return model


class Count(TraitType[int, int]):
    """An int of at least ``low`` (a bool is not a count); anything else is a TypeError or a
    ValueError naming the option, raised at every assignment."""

    def __init__(self, default: int, *, low: int, help: str) -> None:
        super().__init__(default, help=help)
        self.low = low
        self.info_text = f"an int >= {low}"

    def validate(self, obj: Any, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{self.name} must be an int >= {self.low}, got {value!r}")
        if value < self.low:
            raise ValueError(f"{self.name} must be an int >= {self.low}, got {value!r}")
        return value


class Flag(TraitType[bool, bool]):
    """True or False, nothing else (``0`` or ``"no"`` is a TypeError naming the option)."""

    info_text = "a bool"

    def validate(self, obj: Any, value: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"{self.name} must be True or False, got {value!r}")
        return value


class ModelName(TraitType[str, str]):
    """The name of a model whose prompt-cache rules ``wm_kernel.cachesim`` knows."""

    info_text = "a model name of wm_kernel.cachesim.MODELS"

    def validate(self, obj: Any, value: Any) -> str:
        return check_cache_model(value)


class TurnOnView(TraitType[int | None, int | None]):
    """None (live) or an earlier turn of the session, 0 to its turn - 1."""

    info_text = "None or an earlier turn"

    def validate(self, obj: Any, value: Any) -> int | None:
        if value is None:
            return None
        latest = obj.session.turn
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < latest:
            raise ValueError(f"viewing_turn must be None (live) or an earlier turn, 0 to {latest - 1}; got {value!r}")
        return value


#: The options a Dashboard keeps as traits (besides its session); what each means is its help.
OPTIONS = ("preview_chars", "log_rows", "cache_model", "coalesce")


class DashboardModel(HasTraits):
    """The dashboard's options and the turn it shows; every bound holds at every assignment."""

    session = Instance(Session, read_only=True, help="The Session shown and driven.")
    viewing_turn = TurnOnView(
        None, allow_none=True, help="The earlier turn shown read-only, or None for the live view."
    )
    preview_chars = Count(
        20_000,
        low=1,
        help="Sections longer than this show only their first "
        "preview_chars characters (with their full size), so "
        "megabytes never cross the comm.",
    )
    log_rows = Count(12, low=0, help="How many of the most recent bus events the event log shows.")
    cache_model = ModelName(
        DEFAULT_CACHE_MODEL,
        help="The model whose prompt-cache rules the cache strip simulates (a name in wm_kernel.cachesim.MODELS).",
    )
    coalesce = Flag(
        True,
        help="In a Jupyter kernel, draw once the code running now returns (a "
        "cell, a widget callback) instead of on every change: a cell that "
        "completes 1,000 turns sends one update, not 1,000. Outside a "
        "kernel (a script, a test) it always draws at once. False: draw at "
        "once in a kernel too.",
    )

    def __init__(self, session: Session, **options: Any) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"Dashboard needs a Session, got {type(session).__name__}")
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise TypeError(
                f"unknown Dashboard option {unknown[0]!r}; the options are {', '.join(OPTIONS)}, compose and replace"
            )
        super().__init__()
        self.set_trait("session", session)
        for name, value in options.items():
            setattr(self, name, value)
        self._plan: tuple[tuple[Any, ...], str] | None = None

    def plan_html(self, turn: int | None = None) -> str:
        """The plan panel: the cache clock of the session at ``turn`` (default: the turn on view,
        ``viewing_turn``, else the latest), as ``%plan`` draws it (``wm_kernel.display.plan_view``):
        an imported log's requests and compactions (the viewed turn's request marked "now"), or
        the session's simulated requests on ``cache_model`` up to that turn, its recorded
        collapses and where its plan would run a collapse and a tool-result clear. Drawn once
        per (model, turn, latest turn, compose), wrapped as every view is (no typesetter reads its
        dollars as math); a session with nothing to plan says why in one line."""
        import html

        from wm_kernel.display.plan_view import log_clock, plan_view, session_clock
        from wm_kernel.interop.imported import ImportedSession
        from wm_kernel.interop.live import imported_of

        session = self.session
        shown = turn if turn is not None else self.viewing_turn
        key = (self.cache_model, shown, session.turn, session.composed)
        if self._plan is not None and self._plan[0][:3] == key[:3] and self._plan[0][3] is key[3]:
            return self._plan[1]
        imported = imported_of(session)
        try:
            if isinstance(imported, ImportedSession):
                at = None
                if shown is not None and 0 <= shown < len(imported.requests):
                    at = imported.requests[shown].sent_at
                drawn = log_clock(imported, now=at)._repr_html_()
            elif shown is None:
                drawn = plan_view(session, model=self.cache_model).clock._repr_html_()
            else:
                drawn = session_clock(session, self.cache_model, turn=shown)._repr_html_()
        except (TypeError, ValueError) as exc:  # nothing recorded yet, or send times gone
            drawn = f'<div class="wm-cache-clock-view" style="font-size:12px"><i>{html.escape(str(exc))}</i></div>'
        self._plan = (key, drawn)
        return drawn


@dataclass
class TurnDriver:
    """Which turn a dashboard shows and when it may render: all of its turn-driving state.

    ``mode`` is ``"live"`` (the session's latest turn, editable) or ``"replay"`` (an earlier
    recorded turn, read-only). Rendering is held while a dashboard-driven action (a batch) or a
    session turn is in progress, so everything one turn changes goes out together.

    Examples
    --------
    >>> d = TurnDriver(latest=3)
    >>> d.seek(1), d.next_seek(), d.next_seek(), d.view_for(1), d.mode
    (True, 1, None, 1, 'live')
    >>> d.view = 1; d.mode, d.shown, d.view_for(9)
    ('replay', 1, None)
    >>> d.start_turn(4); d.held, d.latest, d.view
    (True, 4, 1)
    >>> d.end_turn(); d.held
    False
    """

    #: The session's turn: the slider's maximum.
    latest: int = 0
    #: The earlier turn shown read-only, or None: live.
    view: int | None = None
    #: Dashboard-driven actions in progress (nested); rendering waits for the outermost.
    batches: int = 0
    #: A session turn has started and its compose (or lifecycle refresh) has not ended it yet.
    turn_open: bool = False
    #: The dashboard is moving its own controls: their change notifications are its own echo.
    echo: bool = False
    #: The latest slider or play target not yet shown; moves arriving while one is shown
    #: collapse into it, so a fast drag shows the turns it ends on, not every turn it crossed.
    pending: int | None = None
    #: A seek is being shown.
    seeking: bool = False

    @property
    def mode(self) -> str:
        """``"live"`` or ``"replay"``."""
        return "live" if self.view is None else "replay"

    @property
    def shown(self) -> int:
        """The turn on view."""
        return self.latest if self.view is None else self.view

    @property
    def held(self) -> bool:
        """Whether rendering must wait (a batch or a session turn is in progress)."""
        return self.batches > 0 or self.turn_open

    def view_for(self, target: int) -> int | None:
        """The view a slider at ``target`` asks for: live at or past the latest turn."""
        return None if target >= self.latest else max(target, 0)

    def start_turn(self, turn: int) -> None:
        """The session moved to ``turn``: hold rendering until the turn ends."""
        self.latest = turn
        self.turn_open = True

    def end_turn(self) -> None:
        """The turn's compose (or lifecycle refresh) ended: rendering may go on."""
        self.turn_open = False

    @contextmanager
    def echoing(self) -> Iterator[None]:
        """The dashboard moves its own controls: their notifications are ignored."""
        self.echo = True
        try:
            yield
        finally:
            self.echo = False

    def open_batch(self) -> None:
        self.batches += 1

    def close_batch(self) -> bool:
        """End a batch; True when it was the outermost (then render once, and any turn it
        drove has ended too)."""
        self.batches -= 1
        if self.batches:
            return False
        self.turn_open = False
        return True

    def seek(self, target: int) -> bool:
        """A control asks for ``target``. True: the caller shows it (and then each
        :meth:`next_seek`); False: a seek in progress will pick it up."""
        self.pending = target
        if self.seeking:
            return False
        self.seeking = True
        return True

    def next_seek(self) -> int | None:
        """The next target to show, or None: the seek is over."""
        target, self.pending = self.pending, None
        if target is None:
            self.seeking = False
        return target

    def abort_seek(self) -> None:
        """A seek failed: drop what is pending."""
        self.pending, self.seeking = None, False


class TurnRecord:
    """What the read-only view needs per turn, and the stateful trinkets' items over time.

    The prompts themselves are the session's History's (rebuilt on demand); the record keeps the
    turn numbers (sorted), what each turn left out when anything was, and the newest two
    composes. The items are the session's :class:`~wm_kernel.instruments.items.ItemHistory`'s
    (recorded from the session's start, so a dashboard opened late shows them all); the record
    reads them again between composes only from a trinket fed or changed (:meth:`mark_stale`),
    and once after a turn or collapse that composed nothing.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.history = ItemHistory.of(session)
        self.items = self.history.log
        #: section -> why its trinket's items could not be read (cleared when they can again)
        self.item_errors = self.history.errors
        self.turns: list[int] = sorted({t for t in getattr(session.recorder, "turns", ()) if isinstance(t, int)})
        self.omitted_at: dict[int, tuple[OmittedSection, ...]] = {}
        # the items as last read (section -> describe_items()) at turn _items_turn (None: never,
        # or anything may have changed them: a turn, a collapse, a new trinket), and the
        # sections whose trinket may have changed them since
        self._items_now: dict[str, list[dict[str, Any]]] = {}
        self._items_turn: int | None = None
        self._items_stale: set[str] = set()
        # the newest two composes, for the overview's "newest changes"
        self.newest: tuple[ComposedPrompt | None, ComposedPrompt | None] = (None, None)
        # the last (turn asked, found) of recorded_at: every panel asks for the same turn
        self._shown: tuple[int, tuple[int, ComposedPrompt] | None] | None = None

    # -- prompts
    def record(self, composed: ComposedPrompt, trinkets: Iterable[EventAwareTrinket]) -> None:
        """Note a compose (at its turn) and the items live then."""
        turn = composed.turn if composed.turn is not None else self.session.turn
        if not self.turns or self.turns[-1] < turn:
            self.turns.append(turn)
        elif turn not in self.turns:
            bisect.insort(self.turns, turn)
        if self._shown is not None and self._shown[0] >= turn:
            self._shown = None
        if composed.omitted:
            self.omitted_at[turn] = composed.omitted
        else:
            self.omitted_at.pop(turn, None)
        self.newest = (self.newest[1], composed)
        if self.history.latest_turn == turn:
            # the ItemHistory observes the compose before the dashboard does: it has just read them
            self._items_now, self._items_turn = self.history.latest, turn
            self._items_stale.clear()
        else:
            self.items_at(turn, trinkets)

    def recorded_at(self, turn: int) -> tuple[int, ComposedPrompt] | None:
        """The last prompt composed at ``turn`` or, if none was, at the nearest earlier turn."""
        if self._shown is not None and self._shown[0] == turn:
            return self._shown[1]
        at = bisect.bisect_right(self.turns, turn)
        found: tuple[int, ComposedPrompt] | None = None
        if at:
            best = self.turns[at - 1]
            found = (best, self.session.recorder.prompt_at(best))
        self._shown = (turn, found)
        return found

    def before(self, turn: int) -> ComposedPrompt | None:
        """The prompt recorded at the last turn before ``turn`` (None: none was)."""
        at = bisect.bisect_left(self.turns, turn)
        return self.session.recorder.prompt_at(self.turns[at - 1]) if at else None

    # -- items
    def forget_items(self) -> None:
        """Anything may have changed the items (a turn, a collapse, a trinket added)."""
        self._items_turn = None

    def mark_stale(self, section: str) -> None:
        """The trinket writing ``section`` may have changed its items (fed, or a trait changed)."""
        self._items_stale.add(section)

    def items_at(self, turn: int, trinkets: Iterable[EventAwareTrinket]) -> dict[str, list[dict[str, Any]]]:
        """The items live now (section -> ``describe_items()``), noted in the item log at ``turn``.
        Every stateful trinket is asked once per turn; within a turn only those marked stale."""
        if self._items_turn != turn:
            self._items_now = self.history.sight(turn, trinkets)
            self._items_turn = turn
        elif self._items_stale:
            stale = [t for t in trinkets if t.variable_name in self._items_stale]
            fresh = describe(stale, self.item_errors)
            if fresh:
                self._items_now = {**self._items_now, **fresh}
                self.items.sight(turn, fresh)
        self._items_stale.clear()
        return self._items_now


_F = TypeVar("_F", bound=Callable[..., Any])


def serialized(method: _F) -> _F:
    """Run a dashboard callback under the session's WorkingMemory lock (``self._lock``): a trinket
    fed on another thread notifies on that thread, and the lock (the one feed calls and composes
    already hold) keeps the dirty set, the driver and the views from being changed from two threads
    at once. Both dashboards (the anywidget one and the deprecated ipywidgets one) use it."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any) -> Any:
        with self._lock:
            return method(self, *args)

    return cast(_F, wrapper)


def model_option(name: str) -> property:
    """A dashboard attribute that reads and writes its model's validated trait ``name``."""
    return property(
        lambda self: getattr(self.model, name),
        lambda self, value: setattr(self.model, name, value),
        doc=DashboardModel.class_traits()[name].help,
    )


__all__ = [
    "serialized",
    "model_option",
    "VIEWS",
    "TABS",
    "Tab",
    "DashboardModel",
    "TurnDriver",
    "TurnRecord",
    "OPTIONS",
    "DEFAULT_CACHE_MODEL",
    "check_cache_model",
]
