"""The dashboard's widgets around its section panels: banner, slider and play, buttons, tabs.

:class:`Controls` makes them and keeps them showing what the model says: the banner (live, or
the earlier turn shown read-only), the slider and play over the recorded turns, the switches
(disabled while an earlier turn is shown or the session is closed), the error line, and the one
drawn tab that is open (overview, budget, cache or event log; the others cost nothing until they
are opened). A control is set only when its value differs, so a settle that changed nothing
sends nothing.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.jupyter.dashboard.model import VIEWS, DashboardModel, TurnDriver, TurnRecord
from wm_kernel.jupyter.dashboard.parts import OFFLINE_HTML, badge, banner_html
from wm_kernel.jupyter.dashboard.sections import Sections
from wm_kernel.jupyter.dashboard.tabs import (
    UNDRAWN,
    BudgetTab,
    CacheTab,
    EventLogTab,
    OverviewTab,
    RepliesTab,
    RequestTab,
)
from wm_kernel.jupyter.html_widget import TextHTML

#: What hovering the Play and Stop buttons says.
PLAY_TOOLTIP = "Replay the recorded turns, one a second (from the first when the latest is shown)"
STOP_TOOLTIP = "Stop replaying: stay on the turn shown (move the slider to the end for the live view)"


class Controls:
    """The banner, offline line, slider and play, advance and collapse controls, error line and
    tabs of one dashboard, and the renderers of its drawn tabs."""

    def __init__(self, model: DashboardModel, driver: TurnDriver, record: TurnRecord, sections: Sections) -> None:
        """The controls and tab views of the dashboard ``model`` describes, before anything is
        drawn.

        Long because: one widget constructor per control of the dashboard (banner, slider, play,
        buttons, advance, summary, tabs), each with its layout and tooltip, then the rows that hold
        them.
        """
        self.model, self.driver, self.record, self.sections = model, driver, record, sections
        session = model.session
        turn = session.turn
        self.banner = TextHTML()
        # shown only where the dashboard's widgets are not connected to a kernel (DASHBOARD_STYLE)
        self.notice = TextHTML(OFFLINE_HTML)
        self.notice.add_class("wm-notice")
        self.errors = TextHTML()
        # slider and play reach only the recorded turns: time travel, never a side effect
        self.slider = widgets.IntSlider(min=0, max=turn, value=turn, description="turn", continuous_update=False)
        # the frontend's timer that steps the slider; hidden (its own buttons have no labels, and
        # its stop jumps to the first turn): the labelled Play and Stop buttons start and pause it,
        # and a paused play stays on the turn it reached
        self.play = widgets.Play(
            min=0, max=turn, value=turn, interval=1000, show_repeat=False, layout=widgets.Layout(display="none")
        )
        self.play_button = widgets.Button(
            description="Play", icon="play", tooltip=PLAY_TOOLTIP, layout=widgets.Layout(width="6em")
        )
        self.stop_button = widgets.Button(
            description="Stop", icon="stop", tooltip=STOP_TOOLTIP, layout=widgets.Layout(width="6em")
        )
        self.advance_count = widgets.BoundedIntText(
            value=1,
            min=1,
            max=10_000,
            description="turns",
            layout=widgets.Layout(width="9em"),
            style={"description_width": "initial"},
        )
        self.advance_button = widgets.Button(
            description="advance",
            icon="forward",
            tooltip="Complete this many turns of the live session (as %turn N does)",
        )
        self.summary = widgets.Text(placeholder="summary of the segment", description="summary")
        self.collapse_button = widgets.Button(
            description="collapse segment", tooltip="End the segment: stateful trinkets are flushed"
        )
        self.overview, self.budget = TextHTML(UNDRAWN), TextHTML(UNDRAWN)
        self.cache, self.events = TextHTML(UNDRAWN), TextHTML(UNDRAWN)
        self.request, self.replies = TextHTML(UNDRAWN), TextHTML(UNDRAWN)
        self.tabs = widgets.Tab(
            children=[
                self.overview,
                *sections.views.values(),
                self.budget,
                self.cache,
                self.request,
                self.replies,
                sections.toggle_box,
                self.events,
            ],
            titles=["overview", *VIEWS.values(), "budget", "cache", "request", "replies", "trinkets", "event log"],
            selected_index=0,
        )
        self.tabs.add_class("wm-tabs")
        # play and slider are linked in the frontend, the slider first: a saved notebook's link
        # starts by copying the slider's value to play, and a tick of play moves the slider
        # (which tells the kernel), so a turn sends the slider alone (and play's range)
        self.play_link = widgets.jslink((self.slider, "value"), (self.play, "value"))
        self.rows = [
            widgets.HBox([self.play, self.play_button, self.stop_button, self.slider]),
            widgets.HBox([self.advance_count, self.advance_button, self.summary, self.collapse_button]),
        ]
        for box in self.rows:
            box.add_class("wm-controls")  # hidden where no kernel is connected
        self._overview_tab, self._budget_tab = OverviewTab(), BudgetTab()
        self._cache_tab, self._events_tab = CacheTab(), EventLogTab()
        self._request_tab, self._replies_tab = RequestTab(), RepliesTab()
        # what the switches and the banner were last drawn for, and the range the slider's End
        # key reaches in the browser
        self._switched: tuple[bool, bool] | None = None
        self._banner: tuple[object, ...] | None = None
        self._keys_reach = turn

    @property
    def children(self) -> list[widgets.Widget]:
        """The dashboard's rows, top to bottom."""
        return [self.banner, self.notice, *self.rows, self.errors, self.tabs]

    def sync(self) -> None:
        """Set every control to what the session and the turn on view say (each only if it
        differs), then draw the open tab."""
        session, driver = self.model.session, self.driver
        driver.latest = top = session.turn
        shown = driver.shown
        slider, play = self.slider, self.play
        with driver.echoing():  # the dashboard moves its own controls: not a user's move
            # play follows the slider's value in the frontend (the link), its range is set here:
            # widened before the slider moves, so the link never moves play past its end
            if top > play.max:
                play.max = top
            if slider.value != shown or slider.max != top:  # else nothing to send, not even a hold
                with slider.hold_sync():
                    # widen before moving and narrow after, so the value is never clamped
                    if top > slider.max:
                        slider.max = top
                    slider.value = shown
                    if top < slider.max:
                        slider.max = top
            if top < play.max:
                with play.hold_sync():  # the kernel's copy of play's value may be stale: set both
                    play.value = min(shown, top)
                    play.max = top
            if slider.max != self._keys_reach:
                # the browser's slider (noUiSlider) sends Home and End to the range it was built
                # with, not to the range it has now; a change of orientation rebuilds it
                slider.orientation = "vertical"
                slider.orientation = "horizontal"
                self._keys_reach = slider.max
            closed = session.closed
            read_only = driver.view is not None or closed
            if self.sections.new_toggle or self._switched != (read_only, closed):
                self.sections.new_toggle = False
                for checkbox in self.sections.toggles.values():
                    if checkbox.disabled != read_only:
                        checkbox.disabled = read_only
                if self.collapse_button.disabled != read_only:
                    self.collapse_button.disabled = read_only
                if self.advance_button.disabled != closed:
                    self.advance_button.disabled = closed
                self._switched = (read_only, closed)
        self.record.items_at(top, self.sections.watched.values())  # fed since a compose
        banner = (driver.view, top, session.segment_number, session.segment_turn, closed, len(self.record.turns))
        if banner != self._banner:
            _set(self.banner, banner_html(*self.banner_parts(), driver.view is not None))
            self._banner = banner
        self.sync_tab()

    def sync_tab(self) -> None:
        """Draw the overview, budget, cache, request, replies or event log tab if it is the one
        open."""
        selected = self.tabs.children[self.tabs.selected_index or 0]
        session, model = self.model.session, self.model
        shown, live = self.driver.shown, self.driver.view is None
        if selected is self.overview:
            _set(
                self.overview,
                self._overview_tab.html(self.record, self.sections.stateful_names, shown, live, self.prompt_on_view()),
            )
        elif selected is self.events:
            _set(self.events, self._events_tab.html(session, model.log_rows))
        elif selected is self.budget:
            _set(self.budget, self._budget_tab.html(session, self.prompt_on_view()))
        elif selected is self.cache:
            _set(self.cache, self._cache_tab.html(session, model.cache_model, shown))
        elif selected is self.request:
            _set(self.request, self._request_tab.html(session, model.cache_model, shown))
        elif selected is self.replies:
            _set(self.replies, self._replies_tab.html(session, shown))

    def prompt_on_view(self) -> ComposedPrompt | None:
        if self.driver.view is None:
            return self.model.session.composed
        found = self.record.recorded_at(self.driver.view)
        return found[1] if found else None

    def banner_parts(self) -> tuple[str, str]:
        """The banner's head and tail: live (turn, segment), or the earlier turn shown."""
        session, view = self.model.session, self.driver.view
        if view is not None:
            return (
                f"viewing turn {view} (read-only)",
                f"the prompt as composed at turn {self._shown_label(view)} · move the slider "
                f"to turn {session.turn} to resume the live view",
            )
        return (
            "closed" if session.closed else "live",
            f"turn {session.turn} · segment {session.segment_number} (segment turn {session.segment_turn})",
        )

    def _shown_label(self, view: int) -> str:
        found = self.record.recorded_at(view)
        if found is None:
            return f"{view} (none recorded)"
        if found[0] != view:
            return f"{found[0]} (nothing composed at turn {view})"
        return str(found[0])

    def report(self, exc: BaseException) -> None:
        """Show an error in the dashboard itself (print in a callback is lost in JupyterLab)."""
        try:
            self.errors.value = (
                f'<div class="wm-error">{badge("error")} <code>'
                f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}"
                "</code></div>"
            )
        except Exception:
            pass  # a closed widget: nowhere left to show it

    def clear_error(self) -> None:
        self.errors.value = ""

    def close(self) -> None:
        """Close every widget made here."""
        for widget in (
            self.play_link,
            self.banner,
            self.notice,
            self.errors,
            self.slider,
            self.play,
            self.play_button,
            self.stop_button,
            self.advance_count,
            self.advance_button,
            self.summary,
            self.collapse_button,
            self.overview,
            self.budget,
            self.cache,
            self.request,
            self.replies,
            self.events,
            self.tabs,
            *self.rows,
        ):
            widget.close()


def _set(widget: widgets.HTML, value: str) -> None:
    """Set an HTML widget's value if it differs (a trait set costs its validation even when the
    value is equal, and every settle asks)."""
    if widget.value != value:
        widget.value = value


__all__ = ["Controls", "PLAY_TOOLTIP", "STOP_TOOLTIP"]
