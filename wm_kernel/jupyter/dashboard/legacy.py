"""The ipywidgets dashboard of 0.1, deprecated: ``wm_kernel.Dashboard`` (one anywidget) replaces it.

It stays one release, behind ``%wm_dashboard --ipywidgets`` (or this module's
:class:`IpywidgetsDashboard`), and says so with a ``FutureWarning`` when made; the next release
removes it with ``controls.py``, ``sections.py`` and the widget half of ``parts.py``.

:class:`IpywidgetsDashboard` is an ipywidgets ``VBox``: a banner, the turn slider with a play control, the
advance button with its count, a collapse button with its summary box, an error line, and tabs: the
overview (a timeline of every item of the stateful trinkets, the size of each placement, the newest
changes), one tab per placement (system cached, system uncached, conversation prefix,
post-history, notification centre) holding one collapsible panel per section, the budget bars,
the cache strip, the per-trinket enable toggles and the tail of the event log.

It is the widget shell over its parts: ``model`` (the options and the turn on view, as validated
traits, and the record of the turns), ``controls`` and ``sections`` (the widgets around the panels,
and the panels), ``parts`` (a section's panel and its HTML), ``tabs`` (the overview, budget, cache
and event log renderers) and ``drawing`` (when a draw is made).

Live, but frugal. The dashboard observes ``Session.turn``, every compose (``Session.composed``)
and each trinket's ``content``, ``error``, ``enabled`` and ``current_turn``, marks the affected
sections dirty and re-renders only those. Changes that belong to one turn advance are held until
the turn's compose ends and then sent together, so one turn sends at most one update per changed
part of a section and nothing for unchanged ones. The drawn tabs are drawn only while open. In a
Jupyter kernel the dashboard draws once the running cell or widget callback returns (the
``coalesce`` option), so a cell of 1,000 turns draws once; code that reads the dashboard
(``panel``, ``section_names``) first makes the draw that waits. Outside a kernel it draws at once.

The slider travels in time, it never changes the session: it reaches from turn 0 to the session's
turn; moving it back shows the prompt recorded at that earlier turn, read-only, under a banner;
moving it to the session's turn (or pressing play's stop) resumes the live view. Advancing the
session is explicit: the "advance" button, :meth:`IpywidgetsDashboard.advance`, or ``%turn N``.

A notebook saved with a dashboard opens showing it as it was saved, without its controls and with
one line saying to run the cells to bring it to life (its view is styled by whether its widget
is connected to a kernel).

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
>>> s = Session(trinkets=[PeanutGalleryTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", FutureWarning)
...     d = IpywidgetsDashboard(s)
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

import functools
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets
from IPython import get_ipython
from traitlets import HasTraits

from trinkets.base import EventAwareTrinket
from wm_kernel.core.events import Event, SegmentCollapsedEvent, TrinketFedEvent, TurnCompletedEvent
from wm_kernel.jupyter.dashboard.controls import Controls
from wm_kernel.jupyter.dashboard.drawing import DrawSchedule
from wm_kernel.jupyter.dashboard.model import (
    DEFAULT_CACHE_MODEL,
    DashboardModel,
    TurnDriver,
    TurnRecord,
    model_option,
    serialized,
)
from wm_kernel.jupyter.dashboard.parts import SectionPanel
from wm_kernel.jupyter.dashboard.sections import Sections
from wm_kernel.session import Session

# the latest dashboard of each session, so a re-run cell (or %wm_dashboard) replaces it
_latest: weakref.WeakKeyDictionary[Session, IpywidgetsDashboard] = weakref.WeakKeyDictionary()


class IpywidgetsDashboard(widgets.VBox):
    """A live view of a :class:`~wm_kernel.session.Session`.

    Parameters
    ----------
    session:
        The Session to show and drive.
    preview_chars, log_rows, cache_model, coalesce:
        Options; see :class:`~wm_kernel.jupyter.dashboard.model.DashboardModel`. Each is checked
        at every assignment (``d.preview_chars = 0`` is a ValueError); any other keyword is a
        TypeError naming the options.
    compose:
        Compose once on creation if the session has not composed yet, so there is a prompt to show.
    replace:
        Close the dashboard created before for the same session, so re-running a cell (or
        ``%wm_dashboard``) leaves one live dashboard, not one more each time. False keeps both.

    :meth:`close` removes every observer and bus subscription the dashboard added.
    """

    session = property(lambda self: self.model.session, doc="The Session shown and driven.")
    preview_chars = model_option("preview_chars")
    log_rows = model_option("log_rows")
    cache_model = model_option("cache_model")
    coalesce = model_option("coalesce")
    viewing_turn = model_option("viewing_turn")

    def __init__(
        self,
        session: Session,
        *,
        preview_chars: int = 20_000,
        log_rows: int = 12,
        cache_model: str = DEFAULT_CACHE_MODEL,
        coalesce: bool = True,
        compose: bool = True,
        replace: bool = True,
        **unknown: Any,
    ) -> None:
        """Build the deprecated dashboard of ``session`` (the options: see the class docstring).

        Long because: it checks its options, builds the parts it drives (model, draw schedule, turn
        driver, record, sections, widgets), and registers every observer, bus subscription and cell
        hook, each with its undo for ``close``.
        """
        self.closed = False
        for name, flag in (("compose", compose), ("replace", replace)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        self.model = DashboardModel(
            session,
            preview_chars=preview_chars,
            log_rows=log_rows,
            cache_model=cache_model,
            coalesce=coalesce,
            **unknown,
        )
        warnings.warn(
            "IpywidgetsDashboard (the ipywidgets dashboard, %wm_dashboard --ipywidgets) is deprecated "
            "and goes in the next release: use wm_kernel.Dashboard",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__()
        self.add_class("wm-dashboard")
        if replace and (previous := _latest.get(session)) is not None:
            previous.close()
        _latest[session] = self
        self._lock = session.working_memory.lock
        self._unwatch: list[Callable[[], object]] = []
        self.drawing = DrawSchedule(
            self._lock, lambda settled: self._flush(settled=settled), lambda exc: self.controls.report(exc)
        )
        self.driver = TurnDriver(latest=session.turn)
        self.record = TurnRecord(session)
        self.sections = Sections(self.model, self.record, self._on_trinket_change, self._on_toggle)
        self._build_widgets()
        self._watch(self.model, self._on_viewing_turn, ["viewing_turn"])
        self._watch(self.model, self._on_option, ["cache_model", "log_rows"])
        self._watch(session, self._on_session_turn, ["turn"])
        # ``composed`` notifies on every compose, even one equal to the last: a turn must still end
        self._watch(session, self._on_session_composed, ["composed"])
        self._watch(session, self._on_session_segment, ["segment_number"])
        self._watch(session.working_memory, self._on_trinket_names, ["trinket_names"])
        for event_type in (TurnCompletedEvent, SegmentCollapsedEvent):
            session.bus.subscribe(event_type, self._on_lifecycle_event)
            self._unwatch.append(functools.partial(session.bus.unsubscribe, event_type, self._on_lifecycle_event))
        session.bus.subscribe(TrinketFedEvent, self._on_feed)
        self._unwatch.append(functools.partial(session.bus.unsubscribe, TrinketFedEvent, self._on_feed))
        # a cell's draw is made as the cell ends, before the kernel says it is done: so what a
        # notebook saves (nbconvert records the widget state the cell's messages carried) is
        # what the cell left; a widget callback's draw waits for the loop (DrawSchedule.request)
        shell = get_ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            shell.events.register("post_run_cell", self.drawing.on_cell_end)
            self._unwatch.append(functools.partial(shell.events.unregister, "post_run_cell", self.drawing.on_cell_end))
        if compose and session.composed is None and not session.closed:
            session.compose()  # records itself through _on_session_composed
        elif session.composed is not None:
            self.record.record(session.composed, self.sections.watched.values())
        self.sections.sync(self.driver.view)
        self.refresh()

    def _build_widgets(self) -> None:
        controls = self.controls = Controls(self.model, self.driver, self.record, self.sections)
        # the widgets, by name, for code and tests that read them
        self.banner, self.notice, self.errors = controls.banner, controls.notice, controls.errors
        self.slider, self.play, self._play_link = controls.slider, controls.play, controls.play_link
        self.advance_count, self.advance_button = controls.advance_count, controls.advance_button
        self.summary, self.collapse_button = controls.summary, controls.collapse_button
        self.overview, self.budget = controls.overview, controls.budget
        self.cache, self.events, self.tabs = controls.cache, controls.events, controls.tabs
        self.request, self.replies = controls.request, controls.replies
        self.toggle_box, self.views = self.sections.toggle_box, self.sections.views
        self._watch(self.slider, self._on_slider, ["value"])
        self._watch(self.tabs, self._on_tab, ["selected_index"])
        self.play_button, self.stop_button = controls.play_button, controls.stop_button
        for button, handler in (
            (self.collapse_button, self._on_collapse_click),
            (self.advance_button, self._on_advance_click),
            (self.play_button, self._on_play_click),
            (self.stop_button, self._on_stop_click),
        ):
            button.on_click(handler)
            self._unwatch.append(functools.partial(button.on_click, handler, remove=True))
        self.children = controls.children

    # -- public reading helpers (each makes a draw still waiting for the running cell first)
    def panel(self, section: str) -> SectionPanel:
        """The panel of a section; ValueError naming the shown sections if there is none."""
        self.drawing.pending()
        try:
            return self.sections.panels[section]
        except KeyError:
            known = ", ".join(self.sections.panels) or "none"
            raise ValueError(f"no panel for section {section!r} (sections: {known})") from None

    def toggle(self, trinket: str) -> widgets.Checkbox:
        """The enable toggle of a trinket (by class name)."""
        toggles = self.sections.toggles
        try:
            return toggles[trinket]
        except KeyError:
            raise ValueError(f"no toggle for trinket {trinket!r} (trinkets: {', '.join(toggles) or 'none'})") from None

    def section_names(self) -> dict[str, list[str]]:
        """The sections shown in each placement view, in display order."""
        self.drawing.pending()
        return self.sections.names()

    def recorded_turns(self) -> list[int]:
        """The turns for which a composed prompt is recorded (the slider can show these)."""
        return list(self.record.turns)

    def advance(self, n: int = 1) -> list[dict[str, Any]]:
        """Complete ``n`` turns of the live session (what the "advance" button does) and return
        what expired, as :meth:`Session.advance_turn` does; the view returns to live."""
        with self._lock, self._batch():
            self.viewing_turn = None
            return self.session.advance_turn(n)

    @serialized
    def refresh(self) -> None:
        """Re-render every panel and control now (normally not needed: the dashboard is live)."""
        self.sections.dirty.update(self.sections.panels)
        self._flush(settled=True)

    @property
    def status(self) -> str:
        """The banner as plain text: live (turn, segment), or the earlier turn shown read-only."""
        head, tail = self.controls.banner_parts()
        return f"{head} · {tail}"

    # -- observers (each one guarded: an exception here would otherwise surface in the code that
    #    changed the session, e.g. a user's advance_turn, and print nowhere in JupyterLab)
    def _watch(self, owner: HasTraits, handler: Callable[[dict[str, Any]], None], names: list[str]) -> None:
        owner.observe(handler, names=names)
        self._unwatch.append(lambda: owner.unobserve(handler, names=names))

    @serialized
    def _on_viewing_turn(self, change: dict[str, Any]) -> None:
        self.driver.view = change["new"]
        if not self.closed:
            self.sections.sync(change["new"])
            self.sections.dirty.update(self.sections.panels)
            self._request_flush(settled=True)

    @serialized
    def _on_option(self, change: dict[str, Any]) -> None:
        if not self.closed:
            self.controls.sync_tab()

    @serialized
    def _on_trinket_change(self, change: dict[str, Any]) -> None:
        try:
            trinket = change["owner"]
            self.sections.dirty.add(trinket.variable_name)
            self.record.mark_stale(trinket.variable_name)
            if change["name"] == "enabled":
                self._set_toggle(trinket)
            # a current_turn change is part of a turn or collapse: the lifecycle handler flushes
            if change["name"] != "current_turn":
                self._request_flush(settled=False)
        except Exception as exc:
            self.controls.report(exc)

    @serialized
    def _on_session_turn(self, change: dict[str, Any]) -> None:
        self.record.forget_items()
        self.driver.start_turn(change["new"])
        self.sections.mark_stateful()

    @serialized
    def _on_session_composed(self, change: dict[str, Any]) -> None:
        if change["new"] is None:
            return
        try:
            sections = self.sections
            self.record.record(change["new"], sections.watched.values())
            self.driver.end_turn()
            # when the trinkets, layout or composer-written sections changed, every panel is
            # asked again (those whose inputs are the same render nothing)
            if sections.changed(self.driver.view):
                sections.sync(self.driver.view)
                sections.dirty.update(sections.panels)
            sections.dirty.update(s for s in sections.panels if s not in sections.writers)
            sections.mark_stateful()
            self._request_flush(settled=True)
        except Exception as exc:
            self.controls.report(exc)

    @serialized
    def _on_session_segment(self, change: dict[str, Any]) -> None:
        self._request_flush(settled=True)

    @serialized
    def _on_trinket_names(self, change: dict[str, Any]) -> None:
        try:
            self.sections.sync(self.driver.view)
            self._request_flush(settled=True)
        except Exception as exc:
            self.controls.report(exc)

    @serialized
    def _on_lifecycle_event(self, event: Event) -> None:
        # subscribed after the trinkets, so this runs once they have handled the event
        self.record.forget_items()
        try:
            if isinstance(event, TurnCompletedEvent) and self.driver.turn_open and self.session.auto_compose:
                return  # the turn's compose comes next; _on_session_composed flushes
            self.driver.end_turn()
            self.sections.mark_stateful()
            self._request_flush(settled=True)
        except Exception as exc:
            self.controls.report(exc)

    @serialized
    def _on_feed(self, event: TrinketFedEvent) -> None:
        try:
            trinket = self.sections.watched.get(event.trinket_name)
            if trinket is not None:
                # only the trinket fed may have new items: the others are not asked again
                self.sections.dirty.add(trinket.variable_name)
                self.record.mark_stale(trinket.variable_name)
            self._request_flush(settled=True)
        except Exception as exc:
            self.controls.report(exc)

    # -- user actions
    @serialized
    def _on_play_click(self, button: Any) -> None:
        """Play: the browser's timer steps the slider a turn a second (from turn 0 when the
        latest turn is shown, else from the turn shown) up to the latest."""
        self.play.playing = True

    def _on_stop_click(self, button: Any) -> None:
        """Stop: the timer pauses, and the dashboard stays on the turn it reached."""
        self.play.playing = False

    @serialized
    def _on_slider(self, change: dict[str, Any]) -> None:
        """The slider or the play control moved (in the browser, or from code)."""
        target = change["new"]
        if self.driver.echo or not self.driver.seek(target):
            return  # our own echo, or a seek in progress picks the new target up when done
        try:
            target = self.driver.next_seek()
            while target is not None:
                self.driver.latest = self.session.turn
                self.viewing_turn = self.driver.view_for(target)
                target = self.driver.next_seek()
            self.controls.clear_error()
            if change["new"] != self.driver.shown:
                self._flush(settled=True)  # put the slider where the view is
        except Exception as exc:
            self.driver.abort_seek()
            self.controls.report(exc)
            self._flush(settled=True)  # put the slider back where the session is

    @serialized
    def _on_tab(self, change: dict[str, Any]) -> None:
        try:
            self.controls.sync_tab()
        except Exception as exc:
            self.controls.report(exc)

    @serialized
    def _on_advance_click(self, button: widgets.Button) -> None:
        try:
            self.advance(self.advance_count.value)
            self.controls.clear_error()
        except Exception as exc:
            self.controls.report(exc)

    @serialized
    def _on_collapse_click(self, button: widgets.Button) -> None:
        try:
            with self._batch():
                self.viewing_turn = None
                self.session.collapse_segment(summary=self.summary.value)
                self.summary.value = ""
            self.controls.clear_error()
        except Exception as exc:
            self.controls.report(exc)

    @serialized
    def _on_toggle(self, change: dict[str, Any]) -> None:
        if self.driver.echo:
            return
        trinket = self.sections.watched.get(getattr(change["owner"], "_wm_trinket", ""))
        if trinket is None:
            return
        try:
            with self._batch():
                trinket.set_enabled(bool(change["new"]))
                # regenerate now, so the panel (and the next compose) agree with the switch
                trinket.request_update()
            self.controls.clear_error()
        except Exception as exc:
            self.controls.report(exc)
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

    def _request_flush(self, *, settled: bool) -> None:
        if not (self.driver.held or self.closed):
            self.drawing.request(settled=settled, coalesce=self.model.coalesce)

    def _flush(self, *, settled: bool) -> None:
        """Render the dirty panels; when ``settled``, also the controls, banner and open tab."""
        if self.closed:
            return
        self.sections.show_dirty(self.driver.view)
        if settled:
            self.controls.sync()

    def _set_toggle(self, trinket: EventAwareTrinket) -> None:
        checkbox = self.sections.toggles.get(trinket.name)
        if checkbox is not None and checkbox.value != trinket.enabled:
            with self.driver.echoing():
                checkbox.value = trinket.enabled

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
        sections = getattr(self, "sections", None)
        if sections is not None:
            sections.close()
        controls = getattr(self, "controls", None)
        if controls is not None:
            controls.close()
        session = getattr(self, "session", None)
        if session is not None and _latest.get(session) is self:
            del _latest[session]
        self.closed = True
        super().close()


__all__ = ["IpywidgetsDashboard"]
