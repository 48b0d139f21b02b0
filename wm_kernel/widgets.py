"""The live dashboard: every prompt section of a Session, grouped by placement, kept up to date.

:class:`Dashboard` is an ipywidgets ``VBox`` showing one tab per placement (system cached, system
non-cached, conversation prefix, post-history, notification centre); inside each, one collapsible
panel per section with its content (escaped, large sections truncated), size, trinket, error badge
and, for stateful trinkets, each item's turns remaining. Above the tabs: a turn slider with a play
control, a collapse button with its summary box, and an error line; two more tabs hold the
per-trinket enable toggles and the tail of the event log.

Live, but frugal. The dashboard observes ``Session.turn``, every compose (``Session.composed``)
and each trinket's ``content``, ``error``, ``enabled`` and ``current_turn``, marks the affected
sections dirty and re-renders only those. Changes that belong to one turn advance (turn counters,
lifecycle refreshes, the compose that follows) are held until the turn's compose ends and then sent
together, so one turn sends at most one update per changed section and nothing for unchanged ones.
The event log refreshes when things settle (after a compose, turn, collapse or feed call), not on
every event.

The slider. Moving it past the session's turn advances the session to that turn in one call; moving
it back shows the prompt recorded at that earlier turn, read-only, under a banner; moving it to the
current turn or beyond resumes the live view. Targets that arrive while an advance is running are
coalesced: only the latest is acted on.

Examples
--------
>>> from wm_kernel.clock import ManualClock
>>> from wm_kernel.session import Session
>>> from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
>>> s = Session(trinkets=[PeanutGalleryTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> d = Dashboard(s)
>>> d.section_names()["system_cached"], d.section_names()["notification"]
(['base_prompt'], ['peanutgallery_guidance'])
>>> _ = s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow <down>.", ttl=1)
>>> "concern: Slow &lt;down&gt;." in d.panel("peanutgallery_guidance").body.value
True
>>> _ = s.advance_turn(2); d.viewing_turn = 1; print(d.status.replace(" · ", "\\n"))
viewing turn 1 (read-only)
the prompt as composed at turn 1
move the slider to turn 2 or beyond to resume the live view
>>> d.close()
"""
from __future__ import annotations

import functools

import html
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, TypeVar, cast

import ipywidgets as widgets
from traitlets import Bool, HasTraits, Instance, Int, observe, validate

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel import render
from wm_kernel.bus import EventRecord
from wm_kernel.events import Event, SegmentCollapsedEvent, TrinketFedEvent, TurnCompletedEvent
from wm_kernel.session import Session
from wm_kernel.types import ComposedPrompt, OmittedSection, SectionRecord

BASE_SECTION = "base_prompt"

#: The placement views, in display order: key -> tab title (short: JupyterLab's tabs are narrow).
#: ``system`` is split by cache policy because that split is what decides prompt-cache hits.
VIEWS: dict[str, str] = {
    "system_cached": "system cached",
    "system_uncached": "system uncached",
    "conversation_prefix": "conv. prefix",
    "post_history": "post-history",
    "notification": "notification",
}

_TRINKET_TRAITS = ["content", "error", "enabled"]
# the latest dashboard of each session, so a re-run cell (or %wm_dashboard) replaces it
_latest: "weakref.WeakKeyDictionary[Session, Dashboard]" = weakref.WeakKeyDictionary()
# Colours are JupyterLab theme variables (with a light fallback for other frontends), so the
# dashboard reads the same in the light and the dark theme.
_PRE_STYLE = ("white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;max-height:28em;"
              "overflow:auto;margin:4px 0;padding:6px;"
              "font-family:var(--jp-code-font-family,monospace);font-size:12px;"
              "color:var(--jp-content-font-color1,#000);"
              "background:var(--jp-cell-editor-background,#f7f7f7);"
              "border:1px solid var(--jp-border-color2,#ddd)")
_MUTED = "var(--jp-content-font-color2,#444)"
_ERROR = "var(--jp-error-color0,#b00020)"
_WARN = "var(--jp-warn-color0,#8a6d00)"
_GREY = "var(--jp-layout-color4,#666)"
_BADGE = ("<span style=\"background:{bg};color:#fff;padding:0 5px;border-radius:3px;"
          "font-size:11px\">{text}</span>")


def _badge(text: str, bg: str = _ERROR) -> str:
    return _BADGE.format(bg=bg, text=html.escape(text))


_F = TypeVar("_F", bound=Callable[..., Any])


def _serialized(method: _F) -> _F:
    """Run a dashboard callback under the session's WorkingMemory lock.

    A trinket fed on another thread notifies the dashboard on that thread; the lock makes it wait
    for a render in progress (and the reverse), so the dirty set, the echo guards and the widgets
    are never changed from two threads at once. It is the lock feed calls and compose cycles
    already hold, so callbacks that run inside them re-enter it rather than order two locks.
    """

    @functools.wraps(method)
    def wrapper(self: "Dashboard", *args: Any) -> Any:
        with self._lock:
            return method(self, *args)

    return cast(_F, wrapper)


class SectionPanel:
    """One section's collapsible panel: an ``Accordion`` (title: section and trinket, plus a marker
    when the trinket failed or is disabled) holding one ``HTML`` body.

    Everything that changes on an ordinary content change lives in the body, so such a change is one
    message; the title changes only when the trinket starts or stops failing, or is switched.
    """

    def __init__(self, section: str) -> None:
        self.section = section
        self.body = widgets.HTML()
        self.box = widgets.Accordion(children=(self.body,), titles=(section,), selected_index=0)

    @property
    def title(self) -> str:
        """The accordion title: section and trinket, plus the failed/disabled marker."""
        return self.box.titles[0]

    def show(self, title: str, body: str) -> None:
        """Set title and body: at most one message per widget, none if nothing changed."""
        if self.body.value == body and self.box.titles == (title,):
            return  # nothing to send: skip the sync holds too
        with self.box.hold_sync(), self.body.hold_sync():
            if self.box.titles != (title,):
                self.box.titles = (title,)
            self.body.value = body

    def close(self) -> None:
        """Close the body and the accordion widgets."""
        self.body.close()
        self.box.close()


class Dashboard(widgets.VBox):
    """A live view of a :class:`~wm_kernel.session.Session`.

    Parameters
    ----------
    session:
        The Session to show and drive.
    preview_chars, log_rows, lookahead:
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
    lookahead = Int(5, help="How many turns past the current one the slider reaches (moving there "
                            "advances the session).")
    closed = Bool(False, help="True once close() has removed the observers and closed the widgets.")

    def __init__(self, session: Session, *, preview_chars: int = 20_000, log_rows: int = 12,
                 lookahead: int = 5, compose: bool = True, replace: bool = True,
                 **kwargs: Any) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"Dashboard needs a Session, got {type(session).__name__}")
        for name, value, low in (("preview_chars", preview_chars, 1), ("log_rows", log_rows, 0),
                                 ("lookahead", lookahead, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
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
        # what the read-only view needs per turn: the recorder keeps the prompts themselves
        # (compactly); the dashboard keeps only the small extras the recorder does not
        self._turns: set[int] = set()
        self._omitted_at: dict[int, tuple[OmittedSection, ...]] = {}
        self._items_at: dict[int, dict[str, list[dict[str, Any]]]] = {}
        # the stateful trinkets' items as the last compose left them (one snapshot per turn, taken
        # by _record), or None once anything may have changed them since
        self._items_now: dict[str, list[dict[str, Any]]] | None = None
        # section -> (what its live view was rendered from, (title, body)): a panel whose inputs
        # did not change is not rendered again
        self._rendered: dict[str, tuple[tuple[Any, ...], tuple[str, str]]] = {}
        self._structure: tuple[Any, ...] | None = None  # what _sync_structure last followed
        self._events_shown: tuple[tuple[tuple[int, int], ...], str] | None = None
        self._own_prompts: dict[int, ComposedPrompt] = {}   # only if the recorder cannot rebuild
        self._shown: tuple[int, tuple[int, ComposedPrompt] | None] | None = None
        self._hold = 0            # explicit batches (dashboard-driven actions) in progress
        self._in_turn = False     # a Session turn is running; wait for its compose to end
        self._syncing = False     # the dashboard itself is moving a control: ignore its echo
        self._driving = False     # the slider loop is running
        self._target: int | None = None
        self._event_rows: dict[int, tuple[EventRecord, int, str]] = {}  # seq -> (record, failures, row)
        self.preview_chars, self.log_rows, self.lookahead = preview_chars, log_rows, lookahead
        self.session = session

        self.banner = widgets.HTML()
        self.errors = widgets.HTML()
        self.slider = widgets.IntSlider(min=0, max=session.turn + lookahead, value=session.turn,
                                        description="turn", continuous_update=False)
        self.play = widgets.Play(min=0, max=self.slider.max, value=session.turn, interval=1500,
                                 description="play turns", show_repeat=False)
        self.summary = widgets.Text(placeholder="summary of the segment", description="summary")
        self.collapse_button = widgets.Button(
            description="collapse segment",
            tooltip="End the segment: stateful trinkets are flushed")
        self.events = widgets.HTML()
        self.toggle_box = widgets.VBox()
        self.views = {key: widgets.VBox() for key in VIEWS}
        self.tabs = widgets.Tab(children=[*self.views.values(), self.toggle_box, self.events],
                                titles=[*VIEWS.values(), "trinkets", "event log"])

        # play and slider are linked here rather than with widgets.link, so that one move updates
        # each of them once, value and range together, after the move is done
        self._watch(self.slider, self._on_slider, ["value"])
        self._watch(self.play, self._on_slider, ["value"])
        self.collapse_button.on_click(self._on_collapse_click)
        self._unwatch.append(lambda: self.collapse_button.on_click(self._on_collapse_click,
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

        self._turns.update(_recorded_turns(session))
        if compose and session.composed is None and not session.closed:
            session.compose()          # records itself through _on_session_composed
        elif session.composed is not None:
            self._record(session.composed)
        self._sync_structure()
        self.children = [self.banner, widgets.HBox([self.play, self.slider]),
                         widgets.HBox([self.summary, self.collapse_button]), self.errors, self.tabs]
        self.refresh()

    # -- public reading helpers
    def panel(self, section: str) -> SectionPanel:
        """The panel of a section; ValueError naming the shown sections if there is none."""
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
        return {key: [getattr(child, "_wm_section", "") for child in box.children
                      if getattr(child, "_wm_section", None)]
                for key, box in self.views.items()}

    def recorded_turns(self) -> list[int]:
        """The turns for which a composed prompt is recorded (the slider can show these)."""
        return sorted(self._turns)

    @_serialized
    def refresh(self) -> None:
        """Re-render every panel and control now (normally not needed: the dashboard is live)."""
        self._dirty.update(self._panels)
        self._flush(settled=True)

    # -- trait validation and reactions
    @validate("viewing_turn")
    def _check_viewing_turn(self, proposal: dict[str, Any]) -> int | None:
        turn = proposal["value"]
        if turn is None:
            return None
        current = self.session.turn
        if isinstance(turn, bool) or not isinstance(turn, int) or not 0 <= turn < current:
            raise ValueError(f"viewing_turn must be None (live) or an earlier turn, 0 to "
                             f"{current - 1}; got {turn!r}")
        return turn

    @observe("viewing_turn")
    @_serialized
    def _on_viewing_turn(self, change: dict[str, Any]) -> None:
        if self.closed:
            return
        self._sync_structure()
        self._dirty.update(self._panels)
        self._request_flush(settled=True)

    # -- observers (each one guarded: an exception here would otherwise surface in the code that
    #    changed the session, e.g. a user's advance_turn, and print nowhere in JupyterLab)
    def _watch(self, owner: HasTraits, handler: Callable[[dict[str, Any]], None],
               names: list[str]) -> None:
        owner.observe(handler, names=names)
        self._unwatch.append(lambda: owner.unobserve(handler, names=names))

    @_serialized
    def _on_trinket_change(self, change: dict[str, Any]) -> None:
        try:
            self._items_now = None
            trinket = change["owner"]
            self._dirty.add(trinket.variable_name)
            if change["name"] == "enabled":
                self._set_toggle(trinket)
            # a current_turn change is part of a turn or collapse: the lifecycle handler flushes
            if change["name"] != "current_turn":
                self._request_flush(settled=False)
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_session_turn(self, change: dict[str, Any]) -> None:
        self._items_now = None
        self._in_turn = True
        self._mark_stateful()

    @_serialized
    def _on_session_composed(self, change: dict[str, Any]) -> None:
        if change["new"] is None:
            return
        try:
            self._record(change["new"])
            self._in_turn = False
            # the panels and observers follow the trinkets, the layout and the prompt's sections:
            # when none of these changed since the last compose, neither did the structure
            composed = change["new"]
            structure = (tuple((t, t.cache_policy)
                               for t in self.session.working_memory.trinkets.values()),
                         self.session.layout,
                         tuple((r.name, r.placement, r.cache_policy) for r in composed.sections),
                         self.viewing_turn)
            if structure != self._structure:
                if self._sync_structure():
                    self._dirty.update(self._panels)
                self._structure = structure
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
        self._items_now = None
        try:
            if (isinstance(event, TurnCompletedEvent) and self._in_turn
                    and self.session.auto_compose):
                return  # the turn's compose comes next; _on_session_composed flushes
            self._in_turn = False
            self._mark_stateful()
            self._request_flush(settled=True)
        except Exception as exc:
            self._report(exc)

    @_serialized
    def _on_feed(self, event: TrinketFedEvent) -> None:
        self._items_now = None
        try:
            trinket = self._watched.get(event.trinket_name)
            if trinket is not None:
                self._dirty.add(trinket.variable_name)
            self._request_flush(settled=True)
        except Exception as exc:
            self._report(exc)

    # -- user actions
    @_serialized
    def _on_slider(self, change: dict[str, Any]) -> None:
        """The slider or the play control moved (in the browser, or from code)."""
        if self._syncing:
            return
        self._target = change["new"]
        if self._driving:
            return  # the loop below is running: it picks up the latest target when done
        self._driving = True
        try:
            while self._target is not None:
                target, self._target = self._target, None
                self._go_to(target)
            self._clear_error()
        except Exception as exc:
            self._target = None
            self._report(exc)
            self._flush(settled=True)  # put the slider back where the session is
        finally:
            self._driving = False

    def _go_to(self, target: int) -> None:
        session = self.session
        if target > session.turn:
            with self._batch():
                session.advance_turn(target - session.turn)
                self.viewing_turn = None
        elif target == session.turn:
            self.viewing_turn = None
        else:
            self.viewing_turn = target

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
        if self._syncing:
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
        self._hold += 1
        try:
            yield
        finally:
            self._hold -= 1
            if self._hold == 0:
                self._in_turn = False
                self._flush(settled=True)

    def _request_flush(self, *, settled: bool) -> None:
        if self._hold or self._in_turn or self.closed:
            return
        self._flush(settled=settled)

    def _flush(self, *, settled: bool) -> None:
        """Render the dirty panels; when ``settled``, also the controls, banner and event log."""
        if self.closed:
            return
        dirty, self._dirty = self._dirty, set()
        for section in dirty:
            panel = self._panels.get(section)
            if panel is not None:
                panel.show(*self._view(section))
        if settled:
            self._sync_controls()

    def _sync_controls(self) -> None:
        session = self.session
        shown = session.turn if self.viewing_turn is None else self.viewing_turn
        self._syncing = True
        try:
            top = session.turn + self.lookahead
            for control in (self.slider, self.play):
                if control.value == shown and control.max == top:
                    continue  # nothing to send: skip the sync hold too
                with control.hold_sync():
                    # widen before moving and narrow after, so the value is never clamped
                    if top > control.max:
                        control.max = top
                    control.value = shown
                    if top < control.max:
                        control.max = top
            read_only = self.viewing_turn is not None or session.closed
            for checkbox in self._toggles.values():
                if checkbox.disabled != read_only:
                    checkbox.disabled = read_only
            if self.collapse_button.disabled != read_only:
                self.collapse_button.disabled = read_only
        finally:
            self._syncing = False
        self.banner.value = self._banner_html()
        self.events.value = self._events_html()

    def _mark_stateful(self) -> None:
        self._dirty.update(t.variable_name for t in self._watched.values()
                           if isinstance(t, StatefulTrinket))

    def _set_toggle(self, trinket: EventAwareTrinket) -> None:
        checkbox = self._toggles.get(trinket.name)
        if checkbox is not None and checkbox.value != trinket.enabled:
            self._syncing = True
            try:
                checkbox.value = trinket.enabled
            finally:
                self._syncing = False

    def _report(self, exc: BaseException) -> None:
        """Show an error in the dashboard itself (print in a callback is lost in JupyterLab)."""
        try:
            self.errors.value = (f"<div>{_badge('error')} <code>{html.escape(type(exc).__name__)}: "
                                 f"{html.escape(str(exc))}</code></div>")
        except Exception:
            pass  # a closed widget: nowhere left to show it

    def _clear_error(self) -> None:
        self.errors.value = ""

    # -- the recorded turns
    def _record(self, composed: ComposedPrompt) -> None:
        turn = composed.turn if composed.turn is not None else self.session.turn
        self._turns.add(turn)
        if self._shown is not None and self._shown[0] >= turn:
            self._shown = None
        if not callable(getattr(self.session.recorder, "prompt_at", None)):
            self._own_prompts[turn] = composed
        self._omitted_at[turn] = composed.omitted
        self._items_now = self._items_at[turn] = {
            t.variable_name: t.describe_items()
            for t in self._watched.values() if isinstance(t, StatefulTrinket)}

    def _recorded_at(self, turn: int) -> tuple[int, ComposedPrompt] | None:
        """The last prompt composed at ``turn`` or, if none was, at the nearest earlier turn
        (rebuilt by the session's recorder; the last answer is kept, as every panel asks)."""
        if self._shown is not None and self._shown[0] == turn:
            return self._shown[1]
        earlier = [t for t in self._turns if t <= turn]
        found: tuple[int, ComposedPrompt] | None = None
        if earlier:
            best = max(earlier)
            prompt = self._own_prompts.get(best)
            found = (best, prompt if prompt is not None else self.session.recorder.prompt_at(best))
        self._shown = (turn, found)
        return found

    # -- structure: which panels exist, in which view
    def _watched_sections(self) -> set[str]:
        return {t.variable_name for t in self._watched.values()}

    def _sync_structure(self) -> bool:
        """Create panels and observers for new sections and trinkets, drop gone ones; True if the
        set of panels changed."""
        current = self.session.working_memory.trinkets
        for name, trinket in list(self._watched.items()):
            if current.get(name) is not trinket:
                trinket.unobserve(self._on_trinket_change, names=_trinket_traits(trinket))
                del self._watched[name]
                checkbox = self._toggles.pop(name, None)
                if checkbox is not None:
                    checkbox.unobserve(self._on_toggle, names=["value"])
                    checkbox.close()
        for name, trinket in current.items():
            if name not in self._watched:
                trinket.observe(self._on_trinket_change, names=_trinket_traits(trinket))
                self._watched[name] = trinket
                checkbox = widgets.Checkbox(value=trinket.enabled, indent=False,
                                            description=f"{name} ({trinket.variable_name})")
                checkbox._wm_trinket = name
                checkbox.observe(self._on_toggle, names=["value"])
                self._toggles[name] = checkbox
                self._dirty.add(trinket.variable_name)
        toggles = tuple(self._toggles[name] for name in current if name in self._toggles)
        if self.toggle_box.children != toggles:
            self.toggle_box.children = toggles

        placed = self._placement_plan()
        wanted = {section for sections in placed.values() for section in sections}
        changed = False
        for section in list(self._panels):
            if section not in wanted:
                self._panels.pop(section).close()
                changed = True
        for section in wanted:
            if section not in self._panels:
                panel = SectionPanel(section)
                panel.box._wm_section = section
                self._panels[section] = panel
                self._dirty.add(section)
                changed = True
        for key, sections in placed.items():
            boxes = tuple(self._panels[s].box for s in sections)
            if self.views[key].children != boxes:
                self.views[key].children = boxes
        return changed

    def _placement_plan(self) -> dict[str, list[str]]:
        """View key -> section names, in layout order (sections the layout does not list go last in
        system, as the composer puts them)."""
        session = self.session
        layout = session.layout
        info: dict[str, tuple[str, bool]] = {}     # section -> (placement, cache_policy)
        prompts = [session.composed]
        if self.viewing_turn is not None:
            found = self._recorded_at(self.viewing_turn)
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
            key = ("system_cached" if cached else "system_uncached") if placement == "system" \
                else placement
            plan.setdefault(key, []).append(section)
        return plan

    # -- rendering
    def _view(self, section: str) -> tuple[str, str]:
        """(title, body HTML) of a section in the current mode."""
        if self.viewing_turn is None:
            return self._live_view(section)
        return self._recorded_view(section, self.viewing_turn)

    def _trinket_of(self, section: str) -> EventAwareTrinket | None:
        for trinket in self._watched.values():
            if trinket.variable_name == section:
                return trinket
        return None

    def _live_view(self, section: str) -> tuple[str, str]:
        trinket = self._trinket_of(section)
        if trinket is None:
            composed = self.session.composed
            record = _find_record(composed, section)
            content = record.content if record is not None else ""
            cached = record is not None and record.cached
            meta = f"composer · {_size(content)}" + (" · cached" if cached else "")
            note = "" if record is not None else "<i>not in the prompt</i>"
            return section, self._body_html(meta, note, None, content)
        stateful = isinstance(trinket, StatefulTrinket)
        items = None
        if stateful:
            snapshot = self._items_now
            items = (snapshot[section] if snapshot is not None and section in snapshot
                     else trinket.describe_items())
        placement = self.session.layout.placement_of(section)
        values = trinket._trait_values  # read only
        key = (trinket, values["content"], values["error"], values["enabled"],
               trinket.cache_policy, placement, values.get("current_turn"), items,
               self.preview_chars)
        rendered = self._rendered.get(section)
        if rendered is not None and rendered[0] == key:
            return rendered[1]
        view = self._render_live(section, trinket, placement, items)
        self._rendered[section] = (key, view)
        return view

    def _render_live(self, section: str, trinket: EventAwareTrinket, placement: str | None,
                     items: list[dict[str, Any]] | None) -> tuple[str, str]:
        title = f"{section} · {trinket.name}"
        notes = []
        content = ""
        if trinket.error:
            title += " · ⚠ failed"
            notes.append(f"{_badge('error')} <code>{html.escape(trinket.error)}</code> "
                         f"<i>the section is left out of the prompt</i>")
        elif not trinket.enabled:
            title += " · disabled"
            notes.append(f"{_badge('disabled', _GREY)} <i>contributes no section</i>")
        else:
            content = trinket.content
            if not content:
                notes.append("<i>no content: the section is left out</i>")
        cached = trinket.cache_policy and placement in (None, "system")
        meta = (f"trinket <b>{html.escape(trinket.name)}</b> · {_size(content)}"
                + (" · cached" if cached else ""))
        if isinstance(trinket, StatefulTrinket):
            meta += f" · segment turn {trinket.current_turn}"
        return title, self._body_html(meta, "<br>".join(notes), items, content)

    def _recorded_view(self, section: str, turn: int) -> tuple[str, str]:
        found = self._recorded_at(turn)
        trinket = self._trinket_of(section)
        title = section if trinket is None else f"{section} · {trinket.name}"
        if found is None:
            return title, self._body_html("", f"<i>no prompt was composed by turn {turn}</i>",
                                          None, "")
        shown_turn, composed = found
        record = _find_record(composed, section)
        omitted = _find_omitted(self._omitted_at.get(shown_turn, composed.omitted), section)
        note = ""
        content = ""
        owner = trinket.name if trinket is not None else None
        if record is not None:
            content = record.content
            owner = record.trinket or owner
        elif omitted is not None:
            owner = omitted.trinket or owner
            if omitted.error:
                title = f"{section} · {owner} · ⚠ failed"
                note = (f"{_badge('error')} <code>{html.escape(omitted.error)}</code> "
                        f"<i>{html.escape(omitted.reason)}</i>")
            else:
                note = f"<i>left out: {html.escape(omitted.reason)}</i>"
        else:
            note = "<i>not in the prompt at this turn</i>"
        if owner is not None and record is not None:
            title = f"{section} · {owner}"
        meta = (f"turn {shown_turn} (read-only) · "
                + (f"trinket <b>{html.escape(owner)}</b> · " if owner else "composer · ")
                + _size(content) + (" · cached" if record is not None and record.cached else ""))
        items = self._items_at.get(shown_turn, {}).get(section)
        return title, self._body_html(meta, note, items, content)

    def _body_html(self, meta: str, note: str, items: list[dict[str, Any]] | None,
                   content: str) -> str:
        parts = [f'<div style="font-size:12px;color:{_MUTED}">{meta}</div>'] if meta else []
        if note:
            parts.append(f"<div>{note}</div>")
        if items is not None:
            if items:
                rows = "".join(
                    f"<tr><td>{html.escape(str(item.get('label') or item.get('id')))}</td>"
                    '<td style="text-align:right">'
                    f"{_remaining(item.get('turns_remaining'))}</td></tr>"
                    for item in items)
                parts.append('<table style="font-size:12px"><tr>'
                             '<th style="text-align:left">item</th>'
                             f"<th>turns remaining</th></tr>{rows}</table>")
            else:
                parts.append('<div style="font-size:12px"><i>no live items</i></div>')
        if content:
            limit = self.preview_chars
            if len(content) > limit:
                parts.append(f"<div>{_badge('truncated', _WARN)} showing the first "
                             f"{limit:,} of {len(content):,} characters</div>")
                content = content[:limit]
            parts.append(f'<pre style="{_PRE_STYLE}">{html.escape(content)}</pre>')
        return "".join(parts)

    @property
    def status(self) -> str:
        """The banner as plain text: live (turn, segment), or the earlier turn shown read-only."""
        head, tail = self._banner_parts()
        return f"{head} · {tail}"

    def _banner_parts(self) -> tuple[str, str]:
        session = self.session
        if self.viewing_turn is not None:
            return (f"viewing turn {self.viewing_turn} (read-only)",
                    f"the prompt as composed at turn {self._shown_label()} · move the slider to "
                    f"turn {session.turn} or beyond to resume the live view")
        return ("closed" if session.closed else "live",
                f"turn {session.turn} · segment {session.segment_number} "
                f"(segment turn {session.segment_turn})")

    def _banner_html(self) -> str:
        head, tail = self._banner_parts()
        style = ("background:var(--jp-layout-color2,#fff3cd);"
                 "border:1px solid var(--jp-warn-color1,#e0c46c);border-left-width:4px;"
                 "padding:4px 8px"
                 if self.viewing_turn is not None else "padding:4px 8px")
        return f'<div style="{style}"><b>{html.escape(head)}</b> · {html.escape(tail)}</div>'

    def _shown_label(self) -> str:
        assert self.viewing_turn is not None
        found = self._recorded_at(self.viewing_turn)
        if found is None:
            return f"{self.viewing_turn} (none recorded)"
        if found[0] != self.viewing_turn:
            return f"{found[0]} (nothing composed at turn {self.viewing_turn})"
        return str(found[0])

    def _events_html(self) -> str:
        records = self.session.bus.tail(self.log_rows)
        shown = tuple((record.seq, len(record.failures)) for record in records)
        if self._events_shown is not None and self._events_shown[0] == shown:
            return self._events_shown[1]  # no event since the last settle: the same table
        # each settle shows mostly the rows shown last time: render each record once (again only
        # if a failure was added to it since)
        known, self._event_rows = self._event_rows, {}
        rows = []
        for record in records:
            cached = known.get(record.seq)
            if cached is None or cached[0] is not record or cached[1] != len(record.failures):
                cached = (record, len(record.failures), _event_row(record))
            self._event_rows[record.seq] = cached
            rows.append(cached[2])
        body = "".join(rows)
        table = (f'<div style="font-size:12px">last {len(records)} events</div>'
                 '<table style="font-size:12px"><tr><th>#</th><th style="text-align:left">event</th>'
                 f'<th style="text-align:left">detail</th><th>failures</th></tr>{body}</table>')
        self._events_shown = (shown, table)
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
        owned: list[widgets.Widget] = []
        for panel in getattr(self, "_panels", {}).values():
            owned.extend((panel.body, panel.box))
        owned.extend(getattr(self, "_toggles", {}).values())
        owned.extend(getattr(self, "views", {}).values())
        for name in ("banner", "errors", "slider", "play", "summary", "collapse_button", "events",
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


def _trinket_traits(trinket: EventAwareTrinket) -> list[str]:
    if isinstance(trinket, StatefulTrinket):
        return [*_TRINKET_TRAITS, "current_turn"]
    return list(_TRINKET_TRAITS)


def _find_record(composed: ComposedPrompt | None, section: str) -> SectionRecord | None:
    for record in (composed.sections if composed is not None else ()):
        if record.name == section:
            return record
    return None


def _find_omitted(omitted: Iterable[OmittedSection], section: str) -> OmittedSection | None:
    for gone in omitted:
        if gone.name == section:
            return gone
    return None


def _event_row(record: EventRecord) -> str:
    return (f"<tr><td>{record.seq}</td>"
            f"<td style=\"padding-left:{4 + 12 * record.depth}px\">{html.escape(record.event_type)}"
            f"</td><td>{html.escape(render.event_detail(record.event))}</td>"
            f"<td style=\"color:{_ERROR}\">{html.escape(_failures(record.failures))}</td></tr>")


def _failures(failures: Iterable[Any]) -> str:
    return "; ".join(f"{f.subscriber}: {f.error}" for f in failures)


def _size(content: str) -> str:
    return f"{len(content):,} chars"


def _remaining(turns: Any) -> str:
    if turns is None:
        return "until collapse"
    return html.escape(str(turns))


def _recorded_turns(session: Session) -> Iterable[int]:
    """The turns the session's recorder already holds (e.g. resumed from a SQLite store)."""
    turns = getattr(session.recorder, "turns", ())
    return [t for t in turns if isinstance(t, int)]


__all__ = ["Dashboard", "SectionPanel", "VIEWS"]
