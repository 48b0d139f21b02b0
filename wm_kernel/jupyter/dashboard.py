"""The live dashboard: every prompt section of a Session, grouped by placement, kept up to date.

(Long because it is one widget class whose observers,
controls, batching and tab renderers share one state, so splitting it would scatter that state;
the parts that stand alone, the turn driver, a section's panel and its HTML, live in
``wm_kernel/jupyter/dashboard_parts.py``, the overview's pictures in ``wm_kernel/display/overview.py``.)

:class:`Dashboard` is an ipywidgets ``VBox`` whose first tab, the overview, draws a timeline of
every item of the stateful trinkets (live and expired, the turn on view marked), the size of each
placement and the newest changes; then one tab per placement (system cached, system
non-cached, conversation prefix, post-history, notification centre); inside each, one collapsible
panel per section with its content (``render.section_text_html``: escaped, large sections cut by
the one truncation rule of ``render.preview``), size, trinket, error badge and, for stateful
trinkets, each item's turns remaining (a section with no content collapses to its title line).
The "budget" tab holds ``budget_view.budget_bars`` of the prompt on view (tokens by section per
placement, the budget line, dropped sections grey); the "cache" tab a strip with one cell per turn
(hit / partial / write / miss, the reason on hover) from ``Session.cache_simulation(cache_model)``.
Above the tabs: the turn slider with a play control, the advance button with its count, a collapse
button with its summary box, and an error line; two more tabs hold the per-trinket enable toggles
and the tail of the event log.

Live, but frugal. The dashboard observes ``Session.turn``, every compose (``Session.composed``)
and each trinket's ``content``, ``error``, ``enabled`` and ``current_turn``, marks the affected
sections dirty and re-renders only those. Changes that belong to one turn advance (turn counters,
lifecycle refreshes, the compose that follows) are held until the turn's compose ends and then sent
together, so one turn sends at most one update per changed part of a section and nothing for
unchanged ones. A stateful trinket's countdown (its segment turn, its items' turns remaining) is
its panel's own small widget, so a turn that changes only the countdown does not resend the
section's text (``dashboard_parts.SectionPanel``). The overview, budget, cache and event log tabs
are drawn only while they are open (and again when opened), when things settle (after a compose,
turn, collapse or feed call), not on every event: the overview's parts each only when what they
show changed, the event log only if an event came since, the bars once per prompt, the simulation
once per latest turn and compose (kept for slider moves). A live panel is rendered again only when
what it shows changed (its trinket's text, failure, switch, segment turn or items), its text only
when the text changed, and a control is set only when its value differs. The items are read once
per turn from every stateful trinket and, between turns, only from a trinket fed or changed.
In a Jupyter kernel (which runs cells and widget callbacks inside its event loop) the dashboard
draws once the running cell or widget callback returns, not on every change (the ``coalesce`` trait): a cell that completes
1,000 turns sends one update per changed part instead of one per turn, the browser is not flooded,
and the turns cost about 1.2x what they cost without a dashboard instead of 2x
(``bench/dashboard.py``). What it records per turn for the time-travel view is still taken at
every turn; only drawing waits, and code that reads the dashboard (``panel``, ``section_names``)
first makes the draw that waits. Outside a kernel (a script, a test) it draws at once.

Memory: the recorded prompts are the session's History's; the dashboard keeps per turn only the
turn number and what was left out (when anything was), and the items of the stateful trinkets as
changes, not copies (``overview.ItemLog``: per item its text once, the turns it was seen, each
change of its announced last turn). So a turn in which nothing is fed or expires adds a few dozen
bytes, whatever the number of live items (``tests/test_widgets.py`` measures it).

The slider travels in time, it never changes the session: it reaches from turn 0 to the session's
turn; moving it back shows the prompt recorded at that earlier turn, read-only, under a banner;
moving it to the session's turn resumes the live view. Play replays the recorded turns and stops at
the latest; play and slider are linked in the frontend (``jslink``), so a tick of play reaches the
kernel as a slider move and a turn sends the slider (and play's end) only. Advancing the session is explicit: the "advance" button (or :meth:`Dashboard.advance`,
or ``%turn N``) completes as many turns as its count says. Which turn is shown and when rendering
may happen is one :class:`TurnDriver`.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
>>> s = Session(trinkets=[PeanutGalleryTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> d = Dashboard(s)
>>> d.section_names()["system_cached"], d.section_names()["notification"]
(['base_prompt'], ['peanutgallery_guidance'])
>>> _ = s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow <down>.", ttl=1)
>>> "concern: Slow &lt;down&gt;." in d.panel("peanutgallery_guidance").value
True
>>> _ = d.advance(2); d.slider.max, d.play.max, d.driver.mode
(2, 2, 'live')
>>> d.slider.value = 1; print(d.status.replace(" · ", "\\n"))
viewing turn 1 (read-only)
the prompt as composed at turn 1
move the slider to turn 2 to resume the live view
>>> d.driver.mode, d.driver.shown
('replay', 1)
>>> d.close()
"""
from __future__ import annotations

import asyncio
import bisect
import functools
import html
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import ipywidgets as widgets
from IPython import get_ipython
from traitlets import Bool, HasTraits, Instance, Int, Unicode, observe, validate

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel.core.bus import EventRecord
from wm_kernel.core.events import Event, SegmentCollapsedEvent, TrinketFedEvent, TurnCompletedEvent
from wm_kernel.core.prompt import ComposedPrompt, OmittedSection
from wm_kernel.display import overview, render
from wm_kernel.display.budget_bars import budget_bars
from wm_kernel.jupyter.dashboard_parts import (
    SMALL,
    PanelView,
    SectionPanel,
    TurnDriver,
    badge,
    event_row,
    find_record,
    live_section,
    recorded_section,
    section_text,
)
from wm_kernel.jupyter.html_widget import TextHTML
from wm_kernel.session import Session

BASE_SECTION = "base_prompt"

_SHORT_TITLES = {"system:cached": "system cached", "system:uncached": "system uncached",
                 "conversation_prefix": "conv. prefix", "post_history": "post-history",
                 "notification": "notification"}
#: The placement views, in display order: key -> tab title (short: JupyterLab's tabs are narrow).
#: The groups are ``render.GROUPS`` (system split by cache policy, which decides cache hits).
VIEWS: dict[str, str] = {key.replace(":", "_"): _SHORT_TITLES[key] for key, _ in render.GROUPS}

_TRINKET_TRAITS = ["content", "error", "enabled"]
# the latest dashboard of each session, so a re-run cell (or %wm_dashboard) replaces it
_latest: weakref.WeakKeyDictionary[Session, Dashboard] = weakref.WeakKeyDictionary()


_F = TypeVar("_F", bound=Callable[..., Any])


def _kernel_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop of the Jupyter kernel running this code now (a cell, a widget callback), or
    None: outside a kernel (a script, a test), or on another thread. Both are asked, because a
    loop can be registered as running where nothing will run its callbacks soon (Playwright's
    synchronous API keeps one in the main thread), while a kernel's loop runs them as soon as
    the cell or callback returns."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    shell = get_ipython()
    return loop if getattr(shell, "kernel", None) is not None else None


def _serialized(method: _F) -> _F:
    """Run a dashboard callback under the session's WorkingMemory lock.

    A trinket fed on another thread notifies the dashboard on that thread; the lock makes it wait
    for a render in progress (and the reverse), so the dirty set, the driver and the widgets
    are never changed from two threads at once. It is the lock feed calls and compose cycles
    already hold, so callbacks that run inside them re-enter it rather than order two locks.
    """

    @functools.wraps(method)
    def wrapper(self: Dashboard, *args: Any) -> Any:
        with self._lock:
            return method(self, *args)

    return cast(_F, wrapper)


class Dashboard(widgets.VBox):
    """A live view of a :class:`~wm_kernel.session.Session`.

    Parameters
    ----------
    session:
        The Session to show and drive.
    preview_chars, log_rows, cache_model:
        See the traits of the same name.
    compose:
        Compose once on creation if the session has not composed yet, so there is a prompt to show.
    replace:
        Close the dashboard created before for the same session, so re-running a cell (or
        ``%wm_dashboard``) leaves one live dashboard, not one more each time. False keeps both.

    :meth:`close` removes every observer and bus subscription the dashboard added.
    """

    session = Instance(Session, help="The Session shown and driven.")
    viewing_turn = Int(None, allow_none=True,
                       help="The earlier turn shown read-only, or None for the live view.")
    preview_chars = Int(20_000, help="Sections longer than this show only their first "
                                     "preview_chars characters (with their full size), so "
                                     "megabytes never cross the comm.")
    log_rows = Int(12, help="How many of the most recent bus events the event log pane shows.")
    cache_model = Unicode("claude-sonnet-4-6",
                          help="The model whose prompt-cache rules the cache strip simulates "
                               "(a name in wm_kernel.cachesim.MODELS).")
    closed = Bool(False, help="True once close() has removed the observers and closed the widgets.")
    coalesce = Bool(True, help="In a Jupyter kernel, draw once the code running now returns (a "
                               "cell, a widget callback) instead of on every change: a cell that "
                               "completes 1,000 turns sends one update, not 1,000. Outside a "
                               "kernel (a script, a test) it always draws at once. False: draw at "
                               "once in a kernel too.")

    def __init__(self, session: Session, *, preview_chars: int = 20_000, log_rows: int = 12,
                 cache_model: str = "claude-sonnet-4-6", compose: bool = True,
                 replace: bool = True, **kwargs: Any) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"Dashboard needs a Session, got {type(session).__name__}")
        for name, value, low in (("preview_chars", preview_chars, 1), ("log_rows", log_rows, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        _check_model(cache_model)
        super().__init__(**kwargs)
        if replace:
            previous = _latest.get(session)
            if previous is not None:
                previous.close()
        _latest[session] = self
        self._lock = session.working_memory.lock
        self._unwatch: list[Callable[[], object]] = []
        self._watched: dict[str, EventAwareTrinket] = {}
        self._panels: dict[str, SectionPanel] = {}
        self._toggles: dict[str, widgets.Checkbox] = {}
        self._dirty: set[str] = set()
        # a draw asked for while coalescing (see the coalesce trait): the loop it is scheduled
        # on, and whether it must also settle the controls
        self._flush_loop: asyncio.AbstractEventLoop | None = None
        self._settle_pending = False
        self.driver = TurnDriver(latest=session.turn)
        # what the read-only view needs per turn: the recorder keeps the prompts themselves
        # (compactly); the dashboard keeps the turn numbers (sorted), what was left out when
        # anything was, and the items as changes (see the module docstring)
        self._turns: list[int] = []
        self._omitted_at: dict[int, tuple[OmittedSection, ...]] = {}
        self._items = overview.ItemLog()
        # the stateful trinkets' items as last sighted (section -> describe_items()) at turn
        # _items_turn (None: never, or anything may have changed them: a turn, a collapse, a new
        # trinket), and the sections whose trinket may have changed them since (fed, or a trait
        # changed): a turn reads every stateful trinket once, a feed only the trinket fed
        self._items_now: dict[str, list[dict[str, Any]]] = {}
        self._items_turn: int | None = None
        self._items_stale: set[str] = set()
        # section -> (what its live view was rendered from, the view): a panel whose inputs did
        # not change is not rendered again; and section -> (content, limit, its HTML): a section
        # whose countdown changed but not its text does not draw its text again
        self._rendered: dict[str, tuple[tuple[Any, ...], PanelView]] = {}
        self._texts: dict[str, tuple[str, int, str]] = {}
        # section -> the watched trinket that writes it; and section -> name of the stateful ones
        self._writers: dict[str, EventAwareTrinket] = {}
        self._stateful_names: dict[str, str] = {}
        # what the switches (toggles, buttons) and the banner were last drawn for
        self._switched: tuple[bool, bool] | None = None
        self._banner: tuple[Any, ...] | None = None
        # what the structure (panels, observers, toggles) last followed; see _structure_key
        self._structure: tuple[Any, ...] | None = None
        self._shown: tuple[int, tuple[int, ComposedPrompt] | None] | None = None
        self._event_rows: dict[int, tuple[EventRecord, int, str]] = {}  # seq -> (record, failures, row)
        # the event table last drawn, with the (seq, failures) of its rows: equal rows, same table
        self._events_drawn: tuple[tuple[tuple[EventRecord, int], ...], str] | None = None
        # the overview's parts last drawn, each with what it was drawn from
        self._timeline: tuple[tuple[Any, ...], str] | None = None
        self._sizes: tuple[ComposedPrompt | None, str] | None = None
        self._overview_parts: tuple[str, str, str] | None = None
        self.preview_chars, self.log_rows, self.cache_model = preview_chars, log_rows, cache_model
        # the newest two composes, for the overview's "newest changes"; and its last diff, kept
        # because every settle asks again and the prompts are usually the same two
        self._newest: tuple[ComposedPrompt | None, ComposedPrompt | None] = (None, None)
        self._changes: tuple[ComposedPrompt, ComposedPrompt, str] | None = None
        # the budget bars of the last prompt drawn, and the cache simulation of the latest turn:
        # (what they were computed for, the result)
        self._bars: tuple[ComposedPrompt, str] | None = None
        self._simulation: tuple[tuple[str, int, ComposedPrompt | None],
                                list[tuple[int, str, str, str]] | str, str] | None = None
        self.session = session

        self.banner = TextHTML()
        self.errors = TextHTML()
        # slider and play reach only the recorded turns: time travel, never a side effect
        self.slider = widgets.IntSlider(min=0, max=session.turn, value=session.turn,
                                        description="turn", continuous_update=False)
        self.play = widgets.Play(min=0, max=session.turn, value=session.turn, interval=1000,
                                 description="replay the recorded turns", show_repeat=False)
        self.advance_count = widgets.BoundedIntText(
            value=1, min=1, max=10_000, description="turns",
            layout=widgets.Layout(width="9em"), style={"description_width": "initial"})
        self.advance_button = widgets.Button(
            description="advance", icon="forward",
            tooltip="Complete this many turns of the live session (as %turn N does)")
        self.overview = TextHTML()
        self.budget = TextHTML()
        self.cache = TextHTML()
        self.summary = widgets.Text(placeholder="summary of the segment", description="summary")
        self.collapse_button = widgets.Button(
            description="collapse segment",
            tooltip="End the segment: stateful trinkets are flushed")
        self.events = TextHTML()
        self.toggle_box = widgets.VBox()
        self.views = {key: widgets.VBox() for key in VIEWS}
        self.tabs = widgets.Tab(
            children=[self.overview, *self.views.values(), self.budget, self.cache,
                      self.toggle_box, self.events],
            titles=["overview", *VIEWS.values(), "budget", "cache", "trinkets", "event log"],
            selected_index=0)

        # play and slider are linked in the frontend: a play tick moves the slider there (which
        # tells the kernel), and a slider set here moves play there, so a turn sends the slider
        # alone (and play's range, which the kernel keeps: see _sync_controls)
        self._play_link = widgets.jslink((self.play, "value"), (self.slider, "value"))
        self._watch(self.slider, self._on_slider, ["value"])
        self._watch(self.tabs, self._on_tab, ["selected_index"])
        self.collapse_button.on_click(self._on_collapse_click)
        self._unwatch.append(lambda: self.collapse_button.on_click(self._on_collapse_click,
                                                                    remove=True))
        self.advance_button.on_click(self._on_advance_click)
        self._unwatch.append(lambda: self.advance_button.on_click(self._on_advance_click,
                                                                   remove=True))
        self._watch(session, self._on_session_turn, ["turn"])
        # ``composed`` notifies on every compose, even one equal to the last: a turn must still end
        self._watch(session, self._on_session_composed, ["composed"])
        self._watch(session, self._on_session_segment, ["segment_number"])
        self._watch(session.working_memory, self._on_trinket_names, ["trinket_names"])
        for event_type in (TurnCompletedEvent, SegmentCollapsedEvent):
            session.bus.subscribe(event_type, self._on_lifecycle_event)
            self._unwatch.append(
                functools.partial(session.bus.unsubscribe, event_type, self._on_lifecycle_event))
        session.bus.subscribe(TrinketFedEvent, self._on_feed)
        self._unwatch.append(functools.partial(session.bus.unsubscribe, TrinketFedEvent, self._on_feed))

        self._turns = sorted(set(_recorded_turns(session)))
        if compose and session.composed is None and not session.closed:
            session.compose()          # records itself through _on_session_composed
        elif session.composed is not None:
            self._record(session.composed)
        self._sync_structure()
        self.children = [self.banner, widgets.HBox([self.play, self.slider]),
                         widgets.HBox([self.advance_count, self.advance_button, self.summary,
                                       self.collapse_button]), self.errors, self.tabs]
        self.refresh()

    # -- public reading helpers (each makes a draw still waiting for the running cell first, so
    # code reading the dashboard reads what it is about to show)
    def panel(self, section: str) -> SectionPanel:
        """The panel of a section; ValueError naming the shown sections if there is none."""
        self._draw_pending()
        try:
            return self._panels[section]
        except KeyError:
            known = ", ".join(self._panels) or "none"
            raise ValueError(f"no panel for section {section!r} (sections: {known})") from None

    def toggle(self, trinket: str) -> widgets.Checkbox:
        """The enable toggle of a trinket (by class name)."""
        try:
            return self._toggles[trinket]
        except KeyError:
            raise ValueError(f"no toggle for trinket {trinket!r} "
                             f"(trinkets: {', '.join(self._toggles) or 'none'})") from None

    def section_names(self) -> dict[str, list[str]]:
        """The sections shown in each placement view, in display order."""
        self._draw_pending()
        return {key: [getattr(child, "_wm_section", "") for child in box.children
                      if getattr(child, "_wm_section", None)]
                for key, box in self.views.items()}

    def recorded_turns(self) -> list[int]:
        """The turns for which a composed prompt is recorded (the slider can show these)."""
        return list(self._turns)

    def advance(self, n: int = 1) -> list[dict[str, Any]]:
        """Complete ``n`` turns of the live session (what the "advance" button does) and return
        what expired, as :meth:`Session.advance_turn` does; the view returns to live."""
        with self._lock, self._batch():
            self.viewing_turn = None
            return self.session.advance_turn(n)

    @_serialized
    def refresh(self) -> None:
        """Re-render every panel and control now (normally not needed: the dashboard is live)."""
        self._dirty.update(self._panels)
        self._flush(settled=True)

    # -- trait validation and reactions
    @validate("viewing_turn")
    def _check_viewing_turn(self, proposal: dict[str, Any]) -> int | None:
        self.driver.latest = self.session.turn
        return self.driver.check_view(proposal["value"])

    @validate("cache_model")
    def _check_cache_model(self, proposal: dict[str, Any]) -> str:
        return _check_model(proposal["value"])

    @observe("viewing_turn")
    @_serialized
    def _on_viewing_turn(self, change: dict[str, Any]) -> None:
        self.driver.view = change["new"]
        if self.closed:
            return
        self._sync_structure()
        self._dirty.update(self._panels)
        self._request_flush(settled=True)

    @observe("cache_model")
    @_serialized
    def _on_cache_model(self, change: dict[str, Any]) -> None:
        if getattr(self, "tabs", None) is not None and not self.closed:
            self._sync_tab()

    # -- observers (each one guarded: an exception here would otherwise surface in the code that
    #    changed the session, e.g. a user's advance_turn, and print nowhere in JupyterLab)
    def _watch(self, owner: HasTraits, handler: Callable[[dict[str, Any]], None],
               names: list[str]) -> None:
        owner.observe(handler, names=names)
        self._unwatch.append(lambda: owner.unobserve(handler, names=names))

    @_serialized
    def _on_trinket_change(self, change: dict[str, Any]) -> None:
        try:
            trinket = change["owner"]
            self._dirty.add(trinket.variable_name)
            self._items_stale.add(trinket.variable_name)
            if change["name"] == "enabled":
                self._set_toggle(trinket)
            # a current_turn change is part of a turn or collapse: the lifecycle handler flushes
            if change["name"] != "current_turn":
                self._request_flush(settled=False)
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_session_turn(self, change: dict[str, Any]) -> None:
        self._items_turn = None
        self.driver.start_turn(change["new"])
        self._mark_stateful()

    @_serialized
    def _on_session_composed(self, change: dict[str, Any]) -> None:
        if change["new"] is None:
            return
        try:
            self._record(change["new"])
            self.driver.end_turn()
            # panels and observers follow the trinkets, the layout and the prompt's sections:
            # when none of them changed since the last sync, neither did the structure; when one
            # did, every panel is asked again (a moved section's "cached" may change with its
            # placement, not its text), and those whose inputs are the same render nothing
            if self._structure_key() != self._structure:
                self._sync_structure()
                self._dirty.update(self._panels)
            watched = self._watched_sections()
            self._dirty.update(s for s in self._panels if s not in watched)
            self._mark_stateful()
            self._request_flush(settled=True)
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_session_segment(self, change: dict[str, Any]) -> None:
        try:
            self._request_flush(settled=True)
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_trinket_names(self, change: dict[str, Any]) -> None:
        try:
            self._sync_structure()
            self._request_flush(settled=True)
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_lifecycle_event(self, event: Event) -> None:
        # subscribed after the trinkets, so this runs once they have handled the event
        self._items_turn = None
        try:
            if (isinstance(event, TurnCompletedEvent) and self.driver.turn_open
                    and self.session.auto_compose):
                return  # the turn's compose comes next; _on_session_composed flushes
            self.driver.end_turn()
            self._mark_stateful()
            self._request_flush(settled=True)
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_feed(self, event: TrinketFedEvent) -> None:
        try:
            trinket = self._watched.get(event.trinket_name)
            if trinket is not None:
                # only the trinket fed may have new items: the others are not asked again
                self._dirty.add(trinket.variable_name)
                self._items_stale.add(trinket.variable_name)
            self._request_flush(settled=True)
        except Exception as exc:
            self._report(exc)

    # -- user actions
    @_serialized
    def _on_slider(self, change: dict[str, Any]) -> None:
        """The slider or the play control moved (in the browser, or from code)."""
        if self.driver.echo or not self.driver.seek(change["new"]):
            return  # our own echo, or a seek in progress picks the new target up when done
        try:
            target = self.driver.next_seek()
            while target is not None:
                self.driver.latest = self.session.turn
                self.viewing_turn = self.driver.view_for(target)
                target = self.driver.next_seek()
            self._clear_error()
        except Exception as exc:
            self.driver.abort_seek()
            self._report(exc)
            self._flush(settled=True)  # put the slider back where the session is

    @_serialized
    def _on_tab(self, change: dict[str, Any]) -> None:
        try:
            self._sync_tab()
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_advance_click(self, button: widgets.Button) -> None:
        try:
            self.advance(self.advance_count.value)
            self._clear_error()
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_collapse_click(self, button: widgets.Button) -> None:
        try:
            with self._batch():
                self.viewing_turn = None
                self.session.collapse_segment(summary=self.summary.value)
                self.summary.value = ""
            self._clear_error()
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_toggle(self, change: dict[str, Any]) -> None:
        if self.driver.echo:
            return
        checkbox = change["owner"]
        trinket = self._watched.get(getattr(checkbox, "_wm_trinket", ""))
        if trinket is None:
            return
        try:
            with self._batch():
                trinket.set_enabled(bool(change["new"]))
                # regenerate now, so the panel (and the next compose) agree with the switch
                trinket.request_update()
            self._clear_error()
        except Exception as exc:
            self._report(exc)
            self._set_toggle(trinket)

    # -- batching and flushing
    @contextmanager
    def _batch(self) -> Iterator[None]:
        """Hold every render until the outermost batch ends, then flush once."""
        self.driver.open_batch()
        try:
            yield
        finally:
            if self.driver.close_batch():
                self._flush(settled=True)

    @contextmanager
    def _echo(self) -> Iterator[None]:
        """The dashboard moves its own controls: their notifications are ignored."""
        self.driver.echo = True
        try:
            yield
        finally:
            self.driver.echo = False

    def _request_flush(self, *, settled: bool) -> None:
        if self.driver.held or self.closed:
            return
        loop = _kernel_loop() if self.coalesce else None
        if loop is None:
            self._flush(settled=settled)
            return
        # draw when the loop next runs its callbacks: after the cell or callback running now,
        # once, however many turns and feeds it made (what it draws is the state then)
        self._settle_pending = self._settle_pending or settled
        if self._flush_loop is not loop:  # once per loop: a draw asked of another never blocks
            self._flush_loop = loop
            loop.call_soon(self._deferred_flush)

    @_serialized
    def _draw_pending(self) -> None:
        """Make now the draw that waits for the running cell or callback to return, if any."""
        if self._flush_loop is not None:
            self._deferred_flush()

    @_serialized
    def _deferred_flush(self) -> None:
        self._flush_loop = None
        settled, self._settle_pending = self._settle_pending, False
        try:
            self._flush(settled=settled)
        except Exception as exc:
            self._report(exc)

    def _flush(self, *, settled: bool) -> None:
        """Render the dirty panels; when ``settled``, also the controls, banner and event log."""
        if self.closed:
            return
        dirty, self._dirty = self._dirty, set()
        for section in dirty:
            panel = self._panels.get(section)
            if panel is not None:
                panel.show(self._view(section))
        if settled:
            self._sync_controls()

    def _sync_controls(self) -> None:
        session = self.session
        self.driver.latest = top = session.turn
        shown = self.driver.shown
        slider, play = self.slider, self.play
        with self._echo():
            # play follows the slider's value in the frontend (the link), its range is set here:
            # widened before the slider moves, so the link never moves play past its end
            if top > play.max:
                play.max = top
            if slider.value != shown or slider.max != top:   # else nothing to send, not even a hold
                with slider.hold_sync():
                    # widen before moving and narrow after, so the value is never clamped
                    if top > slider.max:
                        slider.max = top
                    slider.value = shown
                    if top < slider.max:
                        slider.max = top
            if top < play.max:
                with play.hold_sync():   # the kernel's copy of play's value may be stale: set both
                    play.value = min(shown, top)
                    play.max = top
            closed = session.closed
            read_only = self.driver.view is not None or closed
            # the switches are set only here (and made where a toggle is made, which forgets
            # _switched): a settle that did not change what they follow reads none of them
            if self._switched != (read_only, closed):
                # each control only if it differs (a trait set costs its validation even when equal)
                for checkbox in self._toggles.values():
                    if checkbox.disabled != read_only:
                        checkbox.disabled = read_only
                if self.collapse_button.disabled != read_only:
                    self.collapse_button.disabled = read_only
                if self.advance_button.disabled != closed:
                    self.advance_button.disabled = closed
                self._switched = (read_only, closed)
        self._items_at(session.turn)    # items fed since the last compose are live too
        # the banner follows the turn on view, the session's turn, segment and state, and which
        # turns are recorded (the one shown read-only)
        banner = (self.driver.view, top, session.segment_number, session.segment_turn, closed,
                  len(self._turns))
        if banner != self._banner:
            _set(self.banner, self._banner_html())
            self._banner = banner
        self._sync_tab()

    def _sync_tab(self) -> None:
        """Draw the overview, budget, cache or event log tab if it is the one open (the others
        cost nothing until they are opened, and are drawn then)."""
        selected = self.tabs.children[self.tabs.selected_index or 0]
        if selected is self.overview:
            _set(self.overview, self._overview_html())
        elif selected is self.events:
            _set(self.events, self._events_html())
        elif selected is self.budget:
            _set(self.budget, self._budget_html())
        elif selected is self.cache:
            _set(self.cache, self._cache_html())

    def _mark_stateful(self) -> None:
        self._dirty.update(self._stateful_names)

    def _set_toggle(self, trinket: EventAwareTrinket) -> None:
        checkbox = self._toggles.get(trinket.name)
        if checkbox is not None and checkbox.value != trinket.enabled:
            with self._echo():
                checkbox.value = trinket.enabled

    def _report(self, exc: BaseException) -> None:
        """Show an error in the dashboard itself (print in a callback is lost in JupyterLab)."""
        try:
            self.errors.value = (f'<div class="wm-error">{badge("error")} <code>'
                                 f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}"
                                 "</code></div>")
        except Exception:
            pass  # a closed widget: nowhere left to show it

    def _clear_error(self) -> None:
        self.errors.value = ""

    # -- the recorded turns
    def _record(self, composed: ComposedPrompt) -> None:
        turn = composed.turn if composed.turn is not None else self.session.turn
        if not self._turns or self._turns[-1] < turn:
            self._turns.append(turn)
        elif turn not in self._turns:
            bisect.insort(self._turns, turn)
        if self._shown is not None and self._shown[0] >= turn:
            self._shown = None
        if composed.omitted:
            self._omitted_at[turn] = composed.omitted
        else:
            self._omitted_at.pop(turn, None)
        self._newest = (self._newest[1], composed)
        self._items_at(turn)

    def _recorded_at(self, turn: int) -> tuple[int, ComposedPrompt] | None:
        """The last prompt composed at ``turn`` or, if none was, at the nearest earlier turn
        (rebuilt by the session's recorder; the last answer is kept, as every panel asks)."""
        if self._shown is not None and self._shown[0] == turn:
            return self._shown[1]
        at = bisect.bisect_right(self._turns, turn)
        found: tuple[int, ComposedPrompt] | None = None
        if at:
            best = self._turns[at - 1]
            found = (best, self.session.recorder.prompt_at(best))
        self._shown = (turn, found)
        return found

    def _items_at(self, turn: int) -> dict[str, list[dict[str, Any]]]:
        """The items live now (section -> ``describe_items()``), noted in the item log at ``turn``
        (a compose, or a settle: items fed since the last compose are live too). Every stateful
        trinket is asked once per turn; within a turn only those that may have changed their
        items since (see ``_items_stale``); what is seen at one turn adds up in the item log."""
        if self._items_turn != turn:
            self._items_now = {t.variable_name: t.describe_items()
                               for t in self._watched.values() if isinstance(t, StatefulTrinket)}
            self._items.sight(turn, self._items_now)
            self._items_turn = turn
        elif self._items_stale:
            fresh = {}
            for section in self._items_stale:
                trinket = self._writers.get(section)
                if isinstance(trinket, StatefulTrinket):
                    fresh[section] = trinket.describe_items()
            if fresh:
                self._items_now.update(fresh)
                self._items.sight(turn, fresh)
        self._items_stale.clear()
        return self._items_now

    # -- structure: which panels exist, in which view
    def _watched_sections(self) -> set[str]:
        return {t.variable_name for t in self._watched.values()}

    def _structure_key(self) -> tuple[Any, ...]:
        """What the structure follows: the trinkets (and their cache policies), the layout, the
        sections the composer wrote into the latest prompt (with their placements), and the turn
        on view. A trinket's section is placed by the layout whether or not it is in the prompt,
        so its coming and going (a search with no results) changes nothing here."""
        composed = self.session.composed
        trinkets = self.session.working_memory.trinkets.values()
        owned = {t.variable_name for t in trinkets}
        return (tuple((t, t.cache_policy) for t in trinkets), self.session.layout,
                tuple((r.name, r.placement, r.cache_policy) for r in composed.sections
                      if r.name not in owned) if composed is not None else None,
                self.driver.view)

    def _sync_structure(self) -> bool:
        """Create panels and observers for new sections and trinkets, drop gone ones; True if the
        set of panels changed."""
        key = self._structure_key()
        current = self.session.working_memory.trinkets
        for name, trinket in list(self._watched.items()):
            if current.get(name) is not trinket:
                trinket.unobserve(self._on_trinket_change, names=_trinket_traits(trinket))
                del self._watched[name]
                self._items_turn = None
                checkbox = self._toggles.pop(name, None)
                if checkbox is not None:
                    checkbox.unobserve(self._on_toggle, names=["value"])
                    checkbox.close()
        for name, trinket in current.items():
            if name not in self._watched:
                trinket.observe(self._on_trinket_change, names=_trinket_traits(trinket))
                self._watched[name] = trinket
                self._items_turn = None
                # the description's default width cuts long trinket names: let it take its own
                checkbox = widgets.Checkbox(value=trinket.enabled, indent=False,
                                            description=f"{name} ({trinket.variable_name})",
                                            style={"description_width": "initial"},
                                            layout=widgets.Layout(width="auto"))
                checkbox._wm_trinket = name
                checkbox.observe(self._on_toggle, names=["value"])
                self._switched = None   # a new toggle: enabled or not by the next settle
                self._toggles[name] = checkbox
                self._dirty.add(trinket.variable_name)
        # the first trinket writing a section is the one shown, as a search through them found it
        self._writers = {t.variable_name: t for t in reversed(list(self._watched.values()))}
        self._stateful_names = {t.variable_name: t.name for t in self._watched.values()
                                if isinstance(t, StatefulTrinket)}
        toggles = tuple(self._toggles[name] for name in current if name in self._toggles)
        if self.toggle_box.children != toggles:
            self.toggle_box.children = toggles

        placed = self._placement_plan()
        wanted = {section for sections in placed.values() for section in sections}
        changed = False
        for section in list(self._panels):
            if section not in wanted:
                self._panels.pop(section).close()
                self._rendered.pop(section, None)
                self._texts.pop(section, None)
                changed = True
        for section in wanted:
            if section not in self._panels:
                panel = SectionPanel(section)
                panel.box._wm_section = section
                self._panels[section] = panel
                self._dirty.add(section)
                changed = True
        for view, sections in placed.items():
            boxes = tuple(self._panels[s].box for s in sections)
            if self.views[view].children != boxes:
                self.views[view].children = boxes
        self._structure = key
        return changed

    def _placement_plan(self) -> dict[str, list[str]]:
        """View key -> section names, in layout order (sections the layout does not list go last in
        system, as the composer puts them); the groups are ``render.group_of``'s."""
        session = self.session
        layout = session.layout
        info: dict[str, tuple[str, bool]] = {}     # section -> (placement, cache_policy)
        prompts = [session.composed]
        if self.driver.view is not None:
            found = self._recorded_at(self.driver.view)
            prompts.append(found[1] if found else None)
        for composed in prompts:
            for record in (composed.sections if composed is not None else ()):
                info.setdefault(record.name, (record.placement, record.cache_policy))
        info.setdefault(BASE_SECTION, ("system", True))
        for trinket in session.working_memory.trinkets.values():
            section = trinket.variable_name
            info[section] = (layout.placement_of(section) or "system", trinket.cache_policy)
        order = {name: index for index, name in enumerate(layout.sections())}
        plan: dict[str, list[str]] = {key: [] for key in VIEWS}
        for section in sorted(info, key=lambda s: order.get(s, len(order))):
            placement, cached = info[section]
            plan.setdefault(render.group_of(placement, cached).replace(":", "_"), []).append(section)
        return plan

    # -- rendering
    def _view(self, section: str) -> PanelView:
        """What the panel of a section shows in the current mode."""
        if self.driver.view is None:
            return self._live_view(section)
        view = self.driver.view
        return recorded_section(self._recorded_at(view), view, section, self._writers.get(section),
                                self._omitted_at, self._items, self.preview_chars)

    def _live_view(self, section: str) -> PanelView:
        """The live view of a section, rendered again only when what it shows changed: the
        trinket's text, failure, switch, cache policy, placement, segment turn and items (or, for a
        section the composer writes, its record) and the preview size; its text is drawn again
        only when the text changed (a countdown alone does not)."""
        session = self.session
        limit = self.preview_chars
        trinket = self._writers.get(section)
        key: tuple[Any, ...]
        items: list[dict[str, Any]] | None = None
        if trinket is None:
            record = find_record(session.composed, section)
            key = (None, None if record is None else (record.content, record.cached), limit)
        else:
            if isinstance(trinket, StatefulTrinket):
                items = self._items_at(session.turn).get(section)
                turn: int | None = trinket.current_turn
            else:
                turn = None
            key = (trinket, trinket.content, trinket.error, trinket.enabled, trinket.cache_policy,
                   session.layout.placement_of(section), turn, items, limit)
        rendered = self._rendered.get(section)
        if rendered is not None and rendered[0] == key:
            return rendered[1]
        view = live_section(session, section, trinket, limit, items=items,
                            text_html=functools.partial(self._section_text, section))
        self._rendered[section] = (key, view)
        return view

    def _section_text(self, section: str, content: str, limit: int) -> str:
        """``section_text``, kept per section while its text and the limit stay the same."""
        drawn = self._texts.get(section)
        if drawn is None or drawn[1] != limit or drawn[0] != content:
            drawn = self._texts[section] = (content, limit, section_text(content, limit))
        return drawn[2]

    def _prompt_on_view(self) -> ComposedPrompt | None:
        if self.driver.view is None:
            return self.session.composed
        found = self._recorded_at(self.driver.view)
        return found[1] if found else None

    def _overview_html(self) -> str:
        """The overview tab: the items' timeline, the placements' sizes, the newest changes, all
        as seen at the turn on view."""
        viewing = self.driver.view
        names = self._stateful_names
        # the timeline changes with the items, the turn on view and the mode; each part is drawn
        # again only when what it shows changed, so a settle that changed none of them costs
        # three comparisons
        key = (self._items.version, names, self.driver.shown, viewing is None)
        if self._timeline is None or self._timeline[0] != key:
            spans, left_out = self._items.window(names, self.driver.shown)
            self._timeline = (key, overview.timeline_html(spans, self.driver.shown,
                                                          live=viewing is None, left_out=left_out))
        composed = self._prompt_on_view()
        if self._sizes is None or self._sizes[0] is not composed:
            self._sizes = (composed, overview.sizes_html(composed))
        if viewing is None:
            before = self._newest[0] if self._newest[0] is not self._newest[1] else None
        else:
            found = self._recorded_at(viewing)
            at = bisect.bisect_left(self._turns, found[0]) if found else 0
            before = self.session.recorder.prompt_at(self._turns[at - 1]) if at else None
        parts = (self._timeline[1], self._sizes[1], self._changes_html(before, composed))
        if self._overview_parts is not None and all(
                a is b for a, b in zip(parts, self._overview_parts)):
            return self.overview.value
        self._overview_parts = parts
        return ('<div class="wm-overview">'
                "<b>items: when each lives</b>" + parts[0]
                + '<div style="display:flex;gap:2em;flex-wrap:wrap;margin-top:6px">'
                "<div><b>size of each placement</b>" + parts[1] + "</div>"
                "<div><b>newest changes</b>" + parts[2] + "</div>"
                "</div></div>")

    def _changes_html(self, before: ComposedPrompt | None, after: ComposedPrompt | None) -> str:
        if after is None:
            return overview.changes_html(None, "nothing composed yet")
        if before is None:
            return overview.changes_html(None, "the first compose: nothing to compare with")
        # the pair is held (not its ids), so a rebuilt prompt can never match a stale entry
        if self._changes is None or self._changes[0] is not before or self._changes[1] is not after:
            label = f"turn {before.turn} → turn {after.turn}"
            self._changes = (before, after, overview.changes_between(before, after, label))
        return self._changes[2]

    def _budget_html(self) -> str:
        """The budget bars of the prompt on view, drawn once per prompt."""
        composed = self._prompt_on_view()
        if composed is None:
            return "<i>nothing composed yet</i>"
        if self._bars is None or self._bars[0] is not composed:
            counter = getattr(self.session.recorder, "counter", None)
            bars = budget_bars(composed, counter=counter)
            label = (f"turn {composed.turn} · tokens by section ({bars.tokenizer})"
                     + (f" · budget {bars.budget:,}" if bars.budget is not None else " · no budget"))
            self._bars = (composed, f'<div class="wm-budget"><div style="{SMALL}">'
                                    f"{html.escape(label)}</div>{bars.svg}</div>")
        return self._bars[1]

    def _cache_html(self) -> str:
        """The cache strip, from one simulation per (model, latest turn, compose): moving the
        slider only moves the marked cell."""
        session = self.session
        # the prompt itself is held, not its id: a later compose can never match a stale entry
        key = (self.cache_model, session.turn, session.composed)
        done = self._simulation[0] if self._simulation is not None else None
        if done is None or done[:2] != key[:2] or done[2] is not key[2]:
            try:
                sim = session.cache_simulation(self.cache_model)
            except ValueError as exc:   # nothing recorded, or send times gone from the bus log
                self._simulation = (key, str(exc), "")
            else:
                t = sim.turns
                rows = list(zip(t["turn"].astype(int).tolist(), t["status"].tolist(),
                                t["miss_reason"].tolist(),
                                [label or "" for label in t["divergent_label"].tolist()]))
                summary = sim.headline()
                self._simulation = (key, rows, summary)
        assert self._simulation is not None
        _, found, summary = self._simulation
        if isinstance(found, str):
            return f'<div class="wm-cache-strip" style="{SMALL}"><i>{html.escape(found)}</i></div>'
        return overview.cache_strip_html(found, self.driver.shown, summary)

    @property
    def status(self) -> str:
        """The banner as plain text: live (turn, segment), or the earlier turn shown read-only."""
        head, tail = self._banner_parts()
        return f"{head} · {tail}"

    def _banner_parts(self) -> tuple[str, str]:
        session = self.session
        view = self.driver.view
        if view is not None:
            return (f"viewing turn {view} (read-only)",
                    f"the prompt as composed at turn {self._shown_label(view)} · move the slider "
                    f"to turn {session.turn} to resume the live view")
        return ("closed" if session.closed else "live",
                f"turn {session.turn} · segment {session.segment_number} "
                f"(segment turn {session.segment_turn})")

    def _banner_html(self) -> str:
        head, tail = self._banner_parts()
        style_ = ("background:var(--jp-layout-color2,#fff3cd);"
                  "border:1px solid var(--jp-warn-color1,#e0c46c);border-left-width:4px;"
                  "padding:4px 8px"
                  if self.driver.view is not None else "padding:4px 8px")
        return f'<div style="{style_}"><b>{html.escape(head)}</b> · {html.escape(tail)}</div>'

    def _shown_label(self, view: int) -> str:
        found = self._recorded_at(view)
        if found is None:
            return f"{view} (none recorded)"
        if found[0] != view:
            return f"{found[0]} (nothing composed at turn {view})"
        return str(found[0])

    def _events_html(self) -> str:
        records = self.session.bus.tail(self.log_rows)
        # records compare by identity (EventRecord has no __eq__), failures by count
        drawn = tuple((record, len(record.failures)) for record in records)
        if self._events_drawn is not None and self._events_drawn[0] == drawn:
            return self._events_drawn[1]   # no event (and no failure) since the last settle
        # each settle shows mostly the rows shown last time: render each record once (again only
        # if a failure was added to it since)
        known, self._event_rows = self._event_rows, {}
        rows = []
        for record in records:
            cached = known.get(record.seq)
            if cached is None or cached[0] is not record or cached[1] != len(record.failures):
                cached = (record, len(record.failures), event_row(record))
            self._event_rows[record.seq] = cached
            rows.append(cached[2])
        table = (f'<div style="{SMALL}">last {len(records)} events</div>'
                 f'<table class="wm-events" style="{SMALL}"><tr><th>#</th>'
                 '<th style="text-align:left">event</th><th style="text-align:left">detail</th>'
                 f'<th>failures</th></tr>{"".join(rows)}</table>')
        self._events_drawn = (drawn, table)
        return table

    # -- closing
    def close(self) -> None:
        """Remove every observer and subscription this dashboard added; close its widgets."""
        if getattr(self, "_closing", False):
            return
        self._closing = True
        for undo in reversed(getattr(self, "_unwatch", [])):
            try:
                undo()
            except Exception:
                pass  # already gone (e.g. the bus was replaced): nothing left to remove
        self._unwatch = []
        for name, trinket in list(getattr(self, "_watched", {}).items()):
            trinket.unobserve(self._on_trinket_change, names=_trinket_traits(trinket))
        self._watched = {}
        for panel in getattr(self, "_panels", {}).values():
            panel.close()
        owned: list[widgets.Widget] = []
        owned.extend(getattr(self, "_toggles", {}).values())
        owned.extend(getattr(self, "views", {}).values())
        for name in ("_play_link", "banner", "errors", "slider", "play", "advance_count",
                     "advance_button",
                     "summary", "collapse_button", "overview", "budget", "cache", "events",
                     "toggle_box", "tabs"):
            widget = getattr(self, name, None)
            if widget is not None:
                owned.append(widget)
        owned.extend(c for c in getattr(self, "children", ()) if isinstance(c, widgets.HBox))
        for widget in owned:
            widget.close()
        self._panels, self._toggles = {}, {}
        # a Dashboard whose __init__ failed has no session (traitlets raises rather than default)
        session = self._trait_values.get("session")
        if session is not None and _latest.get(session) is self:
            del _latest[session]
        if self.has_trait("closed"):
            self.set_trait("closed", True)
        super().close()



def _set(widget: widgets.HTML, value: str) -> None:
    """Set an HTML widget's value if it differs (a trait set costs its validation even when the
    value is equal, and every settle asks)."""
    if widget.value != value:
        widget.value = value


def _check_model(model: object) -> str:
    from wm_kernel.cachesim import MODELS

    if not isinstance(model, str):
        raise TypeError(f"cache_model must be a str, got {type(model).__name__}")
    if model not in MODELS:
        raise ValueError(f"unknown cache_model {model!r}; known: {', '.join(sorted(MODELS))}")
    return model


def _trinket_traits(trinket: EventAwareTrinket) -> list[str]:
    if isinstance(trinket, StatefulTrinket):
        return [*_TRINKET_TRAITS, "current_turn"]
    return list(_TRINKET_TRAITS)


def _recorded_turns(session: Session) -> Iterable[int]:
    """The turns the session's recorder already holds (e.g. resumed from a SQLite store)."""
    turns = getattr(session.recorder, "turns", ())
    return [t for t in turns if isinstance(t, int)]


__all__ = ["Dashboard", "SectionPanel", "TurnDriver", "VIEWS"]
