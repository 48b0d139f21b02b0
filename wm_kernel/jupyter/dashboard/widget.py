"""The live dashboard: every prompt section of a Session, grouped by placement, kept up to date.

:class:`Dashboard` is one ``anywidget.AnyWidget``: its state is a handful of synced traits and
its front end is a small ES module and stylesheet shipped in this package (``static/``: no CDN,
no build step), so the same widget renders in JupyterLab, Notebook, VS Code, Colab and marimo
(``mo.ui.anywidget(Dashboard(s))``). What it shows comes from the model (``model.py``: the
options, the turn on view, the recorded turns and the list of tabs), worked out as HTML on the
Python side (``panels.py`` for the sections, ``tabs.py`` for the drawn tabs); the front end only
lays it out and sends back what the user does.

The synced traits: ``turn`` (the turn on view: the slider), ``latest`` (the session's turn: the
slider's end), ``playing``, ``tab`` (the open tab) and ``tabs`` (the model's list), ``banner``,
``error``, ``read_only`` and ``session_closed`` (the switches), ``switches`` (one per trinket),
``sections`` (placement -> its sections), ``panels`` (section -> title, status HTML and whether it
folds), ``text_slots`` (section -> the synced trait ``t0``, ``t1``... holding its text HTML: a
text is sent alone when it changes, so a countdown or another section's new text does not resend a
20,000-character preview), ``tab_html`` (the open drawn tab) and ``theme``.

Live, but frugal. The dashboard observes ``Session.turn``, every compose and each trinket's
``content``, ``error``, ``enabled`` and ``current_turn``, marks the affected sections dirty and
works out only those; everything one turn changes goes out as one message (``hold_sync``), and a
trait whose value did not change is not sent. In a Jupyter kernel the dashboard draws once the
running cell or message handler returns (the ``coalesce`` option), so a cell of 1,000 turns draws
once; code that reads the dashboard (``panel``, ``section_names``) first makes the draw that
waits. Outside a kernel it draws at once.

The slider travels in time, it never changes the session: it reaches from turn 0 to the session's
turn; moving it back shows the prompt recorded at that earlier turn, read-only, under a banner;
moving it to the session's turn resumes the live view. Advancing the session is explicit: the
"advance" button, :meth:`Dashboard.advance`, or ``%turn N``.

A notebook saved with its widget state shows the dashboard as it was, without its controls and
with one line saying to run the cells; where no widget can render at all, the display's
``text/html`` is the view it had when shown, with that line.

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
>>> "concern: Slow &lt;down&gt;." in d.panel("peanutgallery_guidance").html
True
>>> _ = d.advance(2); d.latest, d.turn, d.driver.mode
(2, 2, 'live')
>>> d.turn = 1; print(d.status.replace(" · ", "\\n"))
viewing turn 1 (read-only)
the prompt as composed at turn 1
move the slider to turn 2 to resume the live view
>>> d.driver.mode, d.driver.shown
('replay', 1)
>>> d.close()
"""

from __future__ import annotations

import functools
import html
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anywidget
from IPython import get_ipython
from traitlets import Bool, Dict, Enum, HasTraits, Int, List, Unicode, validate

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.jupyter.dashboard.drawing import DrawSchedule
from wm_kernel.jupyter.dashboard.following import SessionFollower
from wm_kernel.jupyter.dashboard.model import (
    DEFAULT_CACHE_MODEL,
    TABS,
    DashboardModel,
    TurnDriver,
    TurnRecord,
    model_option,
    serialized,
)
from wm_kernel.jupyter.dashboard.panels import Panels
from wm_kernel.jupyter.dashboard.parts import PanelView, badge, banner_html
from wm_kernel.jupyter.dashboard.slots import TextSlots
from wm_kernel.jupyter.dashboard.snapshot import snapshot_html
from wm_kernel.jupyter.dashboard.tabs import (
    UNDRAWN,
    BudgetTab,
    CacheTab,
    EventLogTab,
    OverviewTab,
    RepliesTab,
    RequestTab,
)
from wm_kernel.session import Session
from wm_kernel.utils.htmltext import dollars_as_text

STATIC = Path(__file__).with_name("static")


# the latest dashboard of each session, so a re-run cell (or %wm_dashboard) replaces it
_latest: weakref.WeakKeyDictionary[Session, Dashboard] = weakref.WeakKeyDictionary()


class Dashboard(anywidget.AnyWidget):
    """A live view of a :class:`~wm_kernel.session.Session`.

    Long because: the anywidget's synced traits, the public calls that drive and read it, its
    reactions to the front end (slider, tab, message) and the batched flush that sends the changed
    panels; what it follows of the session is in ``SessionFollower``, the drawing in the tabs and
    ``Panels``.

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

    _esm = STATIC / "dashboard.js"
    _css = STATIC / "dashboard.css"

    turn = Int(0, help="The turn on view (the slider); at the session's turn, the live view.").tag(sync=True)
    latest = Int(0, help="The session's turn: the slider's end (read-only).").tag(sync=True)
    playing = Bool(False, help="Whether the front end is stepping the slider a turn a second.").tag(sync=True)
    tabs: List[dict[str, str]] = List(
        help="The tabs, from the model's list: key, title and kind of each (read-only)."
    ).tag(sync=True)
    tab = Unicode("overview", help="The key of the open tab.").tag(sync=True)
    banner = Unicode(help="The banner's HTML: live (turn, segment) or the earlier turn on view.").tag(sync=True)
    error = Unicode(help="The last failure of a control or draw, as HTML ('' when none).").tag(sync=True)
    read_only = Bool(False, help="An earlier turn is on view or the session is closed: no switch acts.").tag(sync=True)
    session_closed = Bool(False, help="The session is closed: it cannot be advanced.").tag(sync=True)
    switches: List[dict[str, Any]] = List(help="One enable switch per trinket: trinket, label, enabled.").tag(sync=True)
    sections = Dict(help="Placement view key -> its sections, in display order.").tag(sync=True)
    panels = Dict(help="Section -> its panel's title, status HTML and whether it folds (empty).").tag(sync=True)
    text_slots = Dict(
        help="Section -> the name of the synced trait holding its text as HTML (t0, t1, ...): each text "
        "is sent alone, when it changes."
    ).tag(sync=True)
    tab_html = Unicode(UNDRAWN, help="The open drawn tab's HTML (the others are drawn when opened).").tag(sync=True)
    theme = Enum(
        ("auto", "light", "dark"),
        default_value="auto",
        help="'auto' follows the host (JupyterLab's theme, marimo's, the system's); 'light' or 'dark' forces one.",
    ).tag(sync=True)

    session = property(lambda self: self.model.session, doc="The Session shown and driven.")

    # a host that typesets HTML (JupyterLab's text/html, a notebook viewer) reads "$5 and $6" as
    # math: every HTML the dashboard shows keeps its dollar signs as text
    @validate("banner", "error", "tab_html")
    def _dollars_as_text(self, proposal: Any) -> str:
        return dollars_as_text(str(proposal["value"]))

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
        """Build the dashboard of ``session`` (the options: see the class docstring).

        Long because: it checks its options, builds the parts it drives (model, turn driver, record,
        panels, draw schedule), names the drawer of each of the seven tabs, and registers every
        observer, the session's follower and the cell hook, each with its undo for :meth:`close`.
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
        self._lock = session.working_memory.lock
        self._unwatch: list[Callable[[], object]] = []
        self.driver = TurnDriver(latest=session.turn)
        self.record = TurnRecord(session)
        # the trinkets' trait changes reach the follower, made below (it needs the panels)
        self.book = Panels(self.model, self.record, lambda change: self.follower.on_trinket_change(change))
        self.drawing = DrawSchedule(self._lock, lambda settled: self._flush(settled=settled), self.report)
        # the drawn tabs of the model's TABS, by key: each draws the turn on view (a new drawn tab
        # is an entry here and in TABS)
        overview, budget, cache = OverviewTab(), BudgetTab(), CacheTab()
        request, replies, events = RequestTab(), RepliesTab(), EventLogTab()
        self._drawn: dict[str, Callable[[], str]] = {
            "overview": lambda: overview.html(
                self.record,
                self.book.stateful_names,
                self.driver.shown,
                self.driver.view is None,
                self.prompt_on_view(),
            ),
            "budget": lambda: budget.html(self.session, self.prompt_on_view()),
            "cache": lambda: cache.html(self.session, self.model.cache_model, self.driver.shown),
            "plan": lambda: self.model.plan_html(self.driver.shown),
            "request": lambda: request.html(self.session, self.model.cache_model, self.driver.shown),
            "replies": lambda: replies.html(self.session, self.driver.shown),
            "events": lambda: events.html(self.session, self.model.log_rows),
        }
        # the panels as last sent: what a flush compares against; the text slots no section holds
        self._sent: dict[str, PanelView] = {}
        self.slots = TextSlots(self)
        super().__init__(turn=session.turn, latest=session.turn, tabs=[tab.as_json() for tab in TABS], tab=TABS[0].key)
        if replace and (previous := _latest.get(session)) is not None:
            previous.close()
        _latest[session] = self
        self._watch(self, self._on_turn, ["turn"])
        self._watch(self, self._on_tab, ["tab"])
        self._watch(self.model, self._on_viewing_turn, ["viewing_turn"])
        self._watch(self.model, self._on_option, ["cache_model", "log_rows"])
        #: what the dashboard follows of the session: each change marks sections for the next draw
        self.follower = SessionFollower(session, self.book, self.record, self.driver, self._request_flush, self.report)
        self._unwatch.append(self.follower.close)
        self.on_msg(self._on_message)
        self._unwatch.append(functools.partial(self.on_msg, self._on_message, remove=True))
        # a cell's draw is made as the cell ends, before the kernel says it is done: so what a
        # notebook saves (nbconvert records the widget state the cell's messages carried) is
        # what the cell left; a message handler's draw waits for the loop (DrawSchedule.request)
        shell = get_ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            shell.events.register("post_run_cell", self.drawing.on_cell_end)
            self._unwatch.append(functools.partial(shell.events.unregister, "post_run_cell", self.drawing.on_cell_end))
        if compose and session.composed is None and not session.closed:
            session.compose()  # records itself through _on_session_composed
        elif session.composed is not None:
            self.record.record(session.composed, self.book.watched.values())
        self.book.sync(self.driver.view)
        self.refresh()

    # -- public reading helpers (each makes a draw still waiting for the running cell first)
    def panel(self, section: str) -> PanelView:
        """What the panel of a section shows; ValueError naming the shown sections if none."""
        self.drawing.pending()
        try:
            return self.book.shown[section]
        except KeyError:
            known = ", ".join(self.book.shown) or "none"
            raise ValueError(f"no panel for section {section!r} (sections: {known})") from None

    def section_names(self) -> dict[str, list[str]]:
        """The sections shown in each placement view, in display order."""
        self.drawing.pending()
        return self.book.names()

    def recorded_turns(self) -> list[int]:
        """The turns for which a composed prompt is recorded (the slider can show these)."""
        return list(self.record.turns)

    def advance(self, n: int = 1) -> list[dict[str, Any]]:
        """Complete ``n`` turns of the live session (what the "advance" button does) and return
        what expired, as :meth:`Session.advance_turn` does; the view returns to live."""
        with self._lock, self._batch():
            self.viewing_turn = None
            return self.session.advance_turn(n)

    def collapse(self, summary: str = "") -> None:
        """End the session's segment with ``summary`` (what the "collapse segment" button does);
        the view returns to live."""
        with self._lock, self._batch():
            self.viewing_turn = None
            self.session.collapse_segment(summary=summary)

    def set_enabled(self, trinket: str, enabled: bool) -> None:
        """Switch a trinket (by class name) on or off, as its switch in the trinkets tab does; a
        ValueError names the trinkets, and an earlier turn on view refuses (it is read-only)."""
        with self._lock:
            found = self.book.watched.get(trinket)
            if found is None:
                known = ", ".join(self.book.watched) or "none"
                raise ValueError(f"no switch for trinket {trinket!r} (trinkets: {known})")
            if not isinstance(enabled, bool):
                raise TypeError(f"enabled must be True or False, got {enabled!r}")
            if self.driver.view is not None:
                raise ValueError(f"turn {self.driver.view} is on view, read-only: move to the live turn to switch")
            with self._batch():
                found.set_enabled(enabled)
                # regenerate now, so the panel (and the next compose) agree with the switch
                found.request_update()

    def play(self) -> None:
        """Replay the recorded turns in the front end, one a second (from turn 0 when the latest
        is shown, else from the turn shown); it stops at the latest turn."""
        self.playing = True

    def stop(self) -> None:
        """Stop replaying: the dashboard stays on the turn it reached."""
        self.playing = False

    @serialized
    def refresh(self) -> None:
        """Work out every panel and control again and send what changed (normally not needed:
        the dashboard is live)."""
        self.book.dirty.update(self.book.shown)
        self._flush(settled=True)

    @property
    def status(self) -> str:
        """The banner as plain text: live (turn, segment), or the earlier turn shown read-only."""
        head, tail = self.banner_parts()
        return f"{head} · {tail}"

    def banner_parts(self) -> tuple[str, str]:
        """The banner's head and tail: live (turn, segment), or the earlier turn shown."""
        session, view = self.session, self.driver.view
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

    def prompt_on_view(self) -> ComposedPrompt | None:
        """The prompt of the turn on view (live: the session's last compose)."""
        if self.driver.view is None:
            return self.session.composed
        found = self.record.recorded_at(self.driver.view)
        return found[1] if found else None

    def snapshot_html(self) -> str:
        """The dashboard as static HTML: the banner, the one line a saved view shows, the open
        tab and every section's panel (what a host that renders no widget shows)."""
        self.drawing.pending()
        open_tab = (self.tab, self.tab_html) if self.tab in self._drawn else None
        return snapshot_html(self.banner, self.tabs, open_tab, self.sections, self.panels, self.texts)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, with the view it has now as ``text/html`` for hosts that render no widget."""
        shown = super()._repr_mimebundle_(**kwargs)
        if shown is None:
            return None
        data, metadata = shown if isinstance(shown, tuple) else (shown, {})
        data = {**data, "text/html": self.snapshot_html()}
        return data, metadata

    def report(self, exc: BaseException) -> None:
        """Show an error in the dashboard itself (print in a callback is lost in JupyterLab)."""
        try:
            self.error = (
                f'<div class="wm-error">{badge("error")} <code>'
                f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}"
                "</code></div>"
            )
        except Exception:
            pass  # a closed widget: nowhere left to show it

    # -- the dashboard's own traits (the session's are followed by SessionFollower)
    def _watch(self, owner: HasTraits, handler: Callable[[dict[str, Any]], None], names: list[str]) -> None:
        owner.observe(handler, names=names)
        self._unwatch.append(lambda: owner.unobserve(handler, names=names))

    @serialized
    def _on_viewing_turn(self, change: dict[str, Any]) -> None:
        self.driver.view = change["new"]
        if not self.closed:
            self.book.sync(change["new"])
            self.book.dirty.update(self.book.shown)
            self._request_flush(settled=True)

    @serialized
    def _on_option(self, change: dict[str, Any]) -> None:
        if not self.closed:
            self._sync_tab()

    # -- user actions
    @serialized
    def _on_turn(self, change: dict[str, Any]) -> None:
        """The slider or the play timer moved (in the browser, or from code)."""
        target = change["new"]
        if self.driver.echo or not self.driver.seek(target):
            return  # our own echo, or a seek in progress picks the new target up when done
        try:
            target = self.driver.next_seek()
            while target is not None:
                self.driver.latest = self.session.turn
                self.viewing_turn = self.driver.view_for(target)
                target = self.driver.next_seek()
            self.error = ""
            if change["new"] != self.driver.shown:
                self._flush(settled=True)  # put the slider where the view is
        except Exception as exc:
            self.driver.abort_seek()
            self.report(exc)
            self._flush(settled=True)  # put the slider back where the session is

    @serialized
    def _on_tab(self, change: dict[str, Any]) -> None:
        try:
            self._sync_tab()
        except Exception as exc:
            self.report(exc)

    def _on_message(self, widget: Any, content: Any, buffers: Any) -> None:
        """An action from the front end: ``{"do": "advance", "n": N}``, ``{"do": "collapse",
        "summary": S}`` or ``{"do": "switch", "trinket": NAME, "enabled": BOOL}``."""
        try:
            if not isinstance(content, dict):
                raise TypeError(f"a dashboard message is a dict, got {type(content).__name__}")
            if "kind" in content and "do" not in content:
                return  # another protocol's message (anywidget's commands carry a "kind")
            action = content.get("do")
            if action == "advance":
                n = content.get("n", 1)
                if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                    raise ValueError(f"advance takes a whole number of turns >= 1, got {n!r}")
                self.advance(n)
            elif action == "collapse":
                self.collapse(str(content.get("summary", "")))
            elif action == "switch":
                self.set_enabled(str(content.get("trinket")), content.get("enabled"))  # type: ignore[arg-type]
            else:
                raise ValueError(f"unknown dashboard action {action!r} (advance, collapse, switch)")
            self.error = ""
        except Exception as exc:
            self.report(exc)
            with self._lock:
                self._flush(settled=True)  # put a refused switch back

    # -- batching and flushing
    @contextmanager
    def _batch(self) -> Iterator[None]:
        """Hold every draw until the outermost batch ends, then flush once."""
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
        """Send the dirty panels; when ``settled``, also the controls, banner and open tab: all
        in one message."""
        if self.closed:
            return
        with self.hold_sync():
            self._send_panels()
            if settled:
                self._sync_controls()

    def _send_panels(self) -> None:
        book = self.book
        changed = book.show_dirty(self.driver.view)
        sections = book.names()
        if sections != self.sections:
            self.sections = sections
        shown = book.shown
        if not changed and shown.keys() == self._sent.keys():
            return
        sent = self._sent
        if any(shown[s][:2] + shown[s][3:] != sent[s][:2] + sent[s][3:] for s in shown if s in sent) or (
            shown.keys() != sent.keys()
        ):
            self.panels = {s: {"title": v.title, "status": v.status, "empty": v.empty} for s, v in shown.items()}
        if any(s not in sent or shown[s].text != sent[s].text for s in shown) or shown.keys() != sent.keys():
            self.slots.send(shown)  # each text compared with its slot: only the changed ones go
        self._sent = dict(shown)

    @property
    def texts(self) -> dict[str, str]:
        """Section -> its text as HTML, as the front end has it (read from the text slots)."""
        return self.slots.texts()

    def _sync_controls(self) -> None:
        """Set every control to what the session and the turn on view say (a trait set to its
        own value sends nothing), then draw the open tab."""
        session, driver = self.session, self.driver
        driver.latest = top = session.turn
        with driver.echoing():  # the dashboard moves its own controls: not a user's move
            self.latest = top
            self.turn = driver.shown
        closed = session.closed
        self.read_only = driver.view is not None or closed
        self.session_closed = closed
        switches = self.book.switches()
        if switches != self.switches:
            self.switches = switches
        self.record.items_at(top, self.book.watched.values())  # fed since a compose
        self.banner = banner_html(*self.banner_parts(), driver.view is not None)
        self._sync_tab()

    def _sync_tab(self) -> None:
        """Draw the open tab if it is a drawn one (the others cost nothing until opened)."""
        draw = self._drawn.get(self.tab)
        if draw is not None:
            self.tab_html = draw()

    # -- closing
    def close(self) -> None:
        """Remove every observer and subscription this dashboard added; close the widget."""
        if getattr(self, "_closing", False):
            return
        self._closing = True
        for undo in reversed(getattr(self, "_unwatch", [])):
            try:
                undo()
            except Exception:
                pass  # already gone (e.g. the bus was replaced): nothing left to remove
        self._unwatch = []
        book = getattr(self, "book", None)
        if book is not None:
            book.close()
        session = getattr(self, "model", None) and self.session
        if session is not None and _latest.get(session) is self:
            del _latest[session]
        self.closed = True
        super().close()


def dashboard(session: Session, **options: Any) -> Dashboard:
    """The live dashboard of ``session`` (``options`` as :class:`Dashboard` takes them), for a host
    without IPython magics: show it as the cell's value in JupyterLab, VS Code or Colab, or
    through ``mo.ui.anywidget(wm_kernel.dashboard(s))`` in marimo. ``%wm_dashboard`` shows the
    same widget for the notebook's current session."""
    return Dashboard(session, **options)


__all__ = ["Dashboard", "dashboard", "STATIC"]
