"""The deprecated ipywidgets dashboard (kept one release behind ``%wm_dashboard --ipywidgets``),
without a browser: every widget gets a recording comm, and the tests count and read the update
messages the dashboard asks the comms to send."""

from __future__ import annotations

import collections
import html
import itertools
import json
import re
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import comm
import pytest
from ipywidgets.widgets.widget_link import Link

from trinkets.base import EventAwareTrinket, StatefulTrinket, feed
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent
from wm_kernel.jupyter.dashboard.legacy import IpywidgetsDashboard as Dashboard
from wm_kernel.jupyter.dashboard.model import TurnDriver
from wm_kernel.jupyter.dashboard.parts import PanelView
from wm_kernel.jupyter.dashboard.tabs import UNDRAWN
from wm_kernel.session import Session
from wm_kernel.utils import style

# made on purpose here: each one says it is deprecated (test_the_ipywidgets_dashboard_says_it_goes)
pytestmark = pytest.mark.filterwarnings("ignore:IpywidgetsDashboard:FutureWarning")


# -- reading what a user sees (structure and text, not styling) --------------------------------------
def text_of(fragment: str) -> str:
    """The text a browser shows for an HTML fragment: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def read(body: str) -> dict[str, Any]:
    """A panel body as its parts: the meta line, the note, the items as (label, turns remaining)
    rows ([] for "no live items", None when the section has no items table) and the section text
    (None when no text is shown). Only the parts present are returned."""
    out: dict[str, Any] = {}
    meta = re.search(r'<div class="wm-meta"[^>]*>(.*?)</div>', body)
    if meta:
        out["meta"] = text_of(meta.group(1))
    note = re.search(r'<div class="wm-note">(.*?)</div>', body)
    if note:
        out["note"] = text_of(note.group(1))
    table = re.search(r'class="wm-items".*?</(table|div)>', body)
    if table:
        out["items"] = [
            (text_of(a), text_of(b))
            for a, b in re.findall(r"<tr><td>(.*?)</td><td[^>]*>(.*?)</td></tr>", table.group(0))
        ]
    pre = re.search(r"<pre[^>]*>(.*)</pre>", body, re.S)
    if pre:
        out["text"] = text_of(pre.group(1))
    return out


def read_update(update: dict[str, Any]) -> dict[str, Any]:
    return read(update["value"])


# -- a comm that records instead of talking to a frontend ------------------------------------------
class RecordingComm:
    """Stands in for a kernel comm: keeps every message a widget asks it to send."""

    kernel = "a kernel"  # ipywidgets sends only through a comm that has one

    def __init__(self, log: list[tuple[RecordingComm, Any]], comm_id: str) -> None:
        self.comm_id = comm_id
        self.log = log
        self.handler: Callable[[dict[str, Any]], None] | None = None
        self.closed = False

    def on_msg(self, handler: Callable[[dict[str, Any]], None]) -> None:
        self.handler = handler

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        self.log.append((self, data))

    def close(self, *args: Any, **kwargs: Any) -> None:
        self.closed = True


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[RecordingComm, Any]]:
    """Every message sent by any widget created during the test, in order."""
    log: list[tuple[RecordingComm, Any]] = []
    ids = itertools.count(1)
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: RecordingComm(log, f"c{next(ids)}"))
    return log


def updates(log: list[tuple[RecordingComm, Any]], widget: Any) -> list[dict[str, Any]]:
    """The states of the update messages sent to one widget, as they go over the wire (JSON)."""
    return [json.loads(json.dumps(data["state"])) for c, data in log if c is widget.comm and data["method"] == "update"]


def panel_updates(log: list[tuple[RecordingComm, Any]], panel: Any) -> list[dict[str, Any]]:
    """The updates sent to any widget of a section's panel (status, text, their box, accordion)."""
    return [u for w in (panel.status, panel.text, panel.body, panel.box) for u in updates(log, w)]


def all_updates(log: list[tuple[RecordingComm, Any]]) -> list[Any]:
    """Every update the kernel originated (not the echo_update acknowledgements of browser changes)."""
    return [data for _, data in log if data["method"] == "update"]


#: What follows a change of the slider's range: the browser's slider (noUiSlider) sends Home and
#: End to the range it was built with, and a change of orientation rebuilds it.
REBUILT = [{"orientation": "vertical"}, {"orientation": "horizontal"}]


def from_frontend(widget: Any, **state: Any) -> None:
    """Deliver an update as the browser would (through the comm's message handler)."""
    widget.comm.handler({"content": {"data": {"method": "update", "state": state}}, "buffers": []})


def play_from_frontend(d: Dashboard, value: int) -> None:
    """What the browser sends when the play control ticks to ``value``: play and slider are linked
    there (``test_play_and_slider_are_linked_in_the_frontend``), so the link moves the slider,
    which syncs first (inside play's change), then play itself."""
    from_frontend(d.slider, value=value)
    from_frontend(d.play, value=value)


# -- small trinkets with predictable output ---------------------------------------------------------
class Inbox(EventAwareTrinket):
    variable_name = "inbox_status"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.text = "2 unread"

    def generate_content(self, context: dict[str, Any]) -> str:
        return self.text


class Location(EventAwareTrinket):
    variable_name = "location_context"
    cache_policy = True

    def generate_content(self, context: dict[str, Any]) -> str:
        return "The user is in London."


class Tasks(StatefulTrinket):
    """Background tasks, each shown for a number of turns."""

    variable_name = "async_activity"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tasks: list[tuple[str, int]] = []  # (name, last turn shown)

    def add(self, name: str, ttl: int) -> None:
        self.tasks.append((name, self.current_turn + ttl))

    @feed
    def add_item(self, name: str, ttl: int) -> None:
        """add() as a feed call (under the WorkingMemory lock), shown at once."""
        self.add(name, ttl)
        self.request_update()

    def describe_items(self) -> list[dict[str, Any]]:
        return [{"id": name, "label": name, "turns_remaining": last - self.current_turn} for name, last in self.tasks]

    def generate_content(self, context: dict[str, Any]) -> str:
        return "\n".join(f"{name}: {last - self.current_turn} turns left" for name, last in self.tasks)

    def _expire_items(self) -> bool:
        kept = [t for t in self.tasks if self.current_turn <= t[1]]
        expired = len(kept) != len(self.tasks)
        self.tasks = kept
        return expired

    def _clear_all_state(self) -> None:
        self.tasks = []


class Flaky(EventAwareTrinket):
    variable_name = "forage_results"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failure = ""

    def generate_content(self, context: dict[str, Any]) -> str:
        if self.failure:
            raise RuntimeError(self.failure)
        return "3 results"


def make_session(*trinkets: type[EventAwareTrinket]) -> Session:
    return Session(
        base_prompt="You help {first_name}.", trinkets=list(trinkets), clock=ManualClock("2026-11-30T09:00:00+00:00")
    )


# -- structure ---------------------------------------------------------------------------------------
def test_one_panel_per_section_grouped_by_placement(sent: list) -> None:
    s = make_session(Inbox, Location, Tasks, Flaky, PeanutGalleryTrinket)
    d = Dashboard(s)
    assert d.section_names() == {
        "system_cached": ["base_prompt", "location_context"],
        "system_uncached": [],
        "conversation_prefix": [],
        "post_history": [],
        "notification": ["async_activity", "inbox_status", "forage_results", "peanutgallery_guidance"],
    }
    assert d.tabs.titles == (
        "overview",
        "system cached",
        "system uncached",
        "conv. prefix",
        "post-history",
        "notification",
        "budget",
        "cache",
        "request",
        "replies",
        "trinkets",
        "event log",
    )
    assert d.tabs.selected_index == 0 and d.tabs.children[0] is d.overview
    # sections with nothing to show fold to their title line; the others stay open
    assert d.panel("peanutgallery_guidance").title == ("peanutgallery_guidance · PeanutGalleryTrinket · empty")
    assert d.panel("peanutgallery_guidance").box.selected_index is None
    assert d.panel("inbox_status").box.selected_index == 0
    assert d.panel("inbox_status").title == "inbox_status · Inbox"
    assert read(d.panel("inbox_status").value) == {"meta": "trinket Inbox · 8 chars", "text": "2 unread"}
    assert read(d.panel("location_context").value) == {
        "meta": "trinket Location · 22 chars · cached",
        "text": "The user is in London.",
    }
    assert [t.description for t in d.toggle_box.children] == [
        "Inbox (inbox_status)",
        "Location (location_context)",
        "Tasks (async_activity)",
        "Flaky (forage_results)",
        "PeanutGalleryTrinket (peanutgallery_guidance)",
    ]
    d.close()


def test_bad_arguments_are_clear_errors(sent: list) -> None:
    s = make_session(Inbox)
    with pytest.raises(TypeError, match="Dashboard needs a Session, got str"):
        Dashboard("session")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="preview_chars must be an int >= 1, got 0"):
        Dashboard(s, preview_chars=0)
    d = Dashboard(s)
    s.advance_turn(2)
    with pytest.raises(
        ValueError,
        match=r"viewing_turn must be None \(live\) or an earlier turn, "
        r"0 to 1; got 2",
    ):
        d.viewing_turn = 2
    assert d.viewing_turn is None
    with pytest.raises(ValueError, match="no panel for section 'nope'"):
        d.panel("nope")
    d.close()


# -- message economy ---------------------------------------------------------------------------------
def test_one_turn_sends_one_update_for_the_changed_section_and_none_for_the_others(sent: list) -> None:
    s = make_session(Inbox, Location, Tasks)
    s.trinket("Tasks").add("index the wiki", ttl=3)
    d = Dashboard(s)
    tasks = d.panel("async_activity")
    sent.clear()

    s.advance_turn()

    # the tasks section changed twice inside the turn (counter, then compose): one message for
    # its countdown and one for its text (which counts down too)
    assert [read_update(u) for u in updates(sent, tasks.status)] == [
        {"meta": "trinket Tasks · 28 chars · segment turn 1", "items": [("index the wiki", "2")]}
    ]
    assert [read_update(u) for u in updates(sent, tasks.text)] == [{"text": "index the wiki: 2 turns left"}]
    assert updates(sent, tasks.box) == [] and updates(sent, tasks.body) == []
    for unchanged in ("base_prompt", "inbox_status", "location_context"):
        assert panel_updates(sent, d.panel(unchanged)) == []
    # the controls: one message each (play follows the slider's value in the frontend, its end
    # is set here; the slider's new range is followed by its rebuild, see REBUILT), the banner,
    # the open overview tab, and nothing else at all
    assert updates(sent, d.slider) == [{"max": 1, "value": 1}, *REBUILT]
    assert updates(sent, d.play) == [{"max": 1}]
    assert [text_of(u["value"]) for u in updates(sent, d.banner)] == ["live · turn 1 · segment 1 (segment turn 1)"]
    assert updates(sent, d.events) == []  # its tab is closed
    assert len(updates(sent, d.overview)) == 1
    assert len(sent) == 8 and all(data["method"] == "update" for _, data in sent)
    d.close()


def test_a_turn_that_changes_no_section_sends_only_the_controls(sent: list) -> None:
    s = make_session(Inbox, Location)
    d = Dashboard(s)
    sent.clear()
    s.advance_turn(3)
    panels = [d.panel(n) for n in ("base_prompt", "inbox_status", "location_context")]
    assert [m for p in panels for m in panel_updates(sent, p)] == []
    # three turns from another cell: each turn settles once
    assert updates(sent, d.slider) == [
        {"max": 1, "value": 1},
        *REBUILT,
        {"max": 2, "value": 2},
        *REBUILT,
        {"max": 3, "value": 3},
        *REBUILT,
    ]
    assert len(sent) == 18  # slider (and its rebuild), play's end, banner, the overview, per turn
    d.close()


def test_a_change_from_another_cell_updates_only_its_panel(sent: list) -> None:
    s = make_session(Inbox, Location)
    d = Dashboard(s)
    sent.clear()
    inbox = s.trinket("Inbox")
    inbox.text = "5 unread, 1 urgent"
    inbox.request_update()
    assert [(c, data["method"], list(data["state"])) for c, data in sent] == [
        (d.panel("inbox_status").text.comm, "update", ["value"])
    ]
    assert read(d.panel("inbox_status").value) == {"meta": "trinket Inbox · 18 chars", "text": "5 unread, 1 urgent"}
    d.close()


# -- toggles, errors, escaping, size -------------------------------------------------------------------
def test_toggling_a_trinket_updates_its_panel(sent: list) -> None:
    s = make_session(Inbox, Location)
    d = Dashboard(s)
    panel, toggle = d.panel("inbox_status"), d.toggle("Inbox")
    sent.clear()

    from_frontend(toggle, value=False)

    inbox = s.trinket("Inbox")
    assert inbox.enabled is False and inbox.content == ""
    assert updates(sent, panel.box) == [{"titles": ["inbox_status · Inbox · disabled"]}]
    assert [read_update(u) for u in updates(sent, panel.text)] == [
        {"meta": "trinket Inbox · 0 chars", "note": "disabled contributes no section"}
    ]
    assert updates(sent, panel.status) == []  # a section without items has no countdown
    assert updates(sent, toggle) == []  # the browser already shows the new value
    assert panel_updates(sent, d.panel("location_context")) == []
    assert "inbox_status" not in s.compose().section_names()

    sent.clear()
    inbox.set_enabled(True)  # from code: the toggle follows
    assert updates(sent, toggle) == [{"value": True}]
    # switched on, it has no content until it is next asked: folded until then
    assert updates(sent, panel.box) == [{"titles": ["inbox_status · Inbox · empty"], "selected_index": None}]
    sent.clear()
    inbox.request_update()
    assert updates(sent, panel.box) == [{"titles": ["inbox_status · Inbox"], "selected_index": 0}]
    d.close()


def test_a_failing_trinket_shows_its_error_with_a_badge(sent: list) -> None:
    s = make_session(Inbox, Flaky)
    d = Dashboard(s)
    panel = d.panel("forage_results")
    s.trinket("Flaky").failure = "search <backend> down"
    sent.clear()
    s.compose()
    assert panel.title == "forage_results · Flaky · ⚠ failed"
    assert read(panel.value) == {
        "meta": "trinket Flaky · 0 chars",
        "note": "error RuntimeError: search <backend> down the section is left out of the prompt",
    }
    assert 'class="wm-badge"' in panel.value
    assert len(updates(sent, panel.text)) == 1
    assert panel_updates(sent, d.panel("inbox_status")) == []

    s.trinket("Flaky").failure = ""
    s.advance_turn()
    assert panel.title == "forage_results · Flaky"
    assert read(panel.value) == {"meta": "trinket Flaky · 9 chars", "text": "3 results"}
    d.viewing_turn = 0  # the failure stays visible in the record
    assert panel.title == "forage_results · Flaky · ⚠ failed"
    assert read(panel.value) == {
        "meta": "turn 0 (read-only) · trinket Flaky · 0 chars",
        "note": "error forage_results · Flaky · trinket failed: RuntimeError: search <backend> down",
    }
    d.close()


def test_hostile_content_is_shown_as_text(sent: list) -> None:
    s = make_session(Inbox)
    s.trinket("Inbox").text = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    d = Dashboard(s)
    assert read(d.panel("inbox_status").value) == {
        "meta": "trinket Inbox · 55 chars",
        "text": '<img src=x onerror="alert(1)"><script>alert(2)</script>',
    }
    wire = json.dumps([data for _, data in sent])
    assert "<img" not in wire and "<script" not in wire
    d.close()


def test_a_5_mb_section_sends_a_truncated_preview_with_its_full_size(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    sent.clear()
    inbox = s.trinket("Inbox")
    inbox.text = "<x>" + "y" * 5_000_000
    inbox.request_update()
    # the one truncation rule of every view (render.preview), at the dashboard's preview_chars
    assert read(d.panel("inbox_status").value) == {
        "meta": "trinket Inbox · 5,000,003 chars",
        "text": "<x>" + "y" * 19_997 + "\n[preview: the first 20,000 of 5,000,003 characters]",
    }
    assert len(json.dumps([data for _, data in sent])) < 25_000
    d.close()


# -- the turn slider ---------------------------------------------------------------------------------
def test_slider_travels_in_time_and_only_the_advance_button_changes_the_session(sent: list) -> None:
    s = make_session(Inbox, Tasks)
    s.trinket("Tasks").add("index the wiki", ttl=4)
    d = Dashboard(s)
    calls: list[int] = []
    advance = s.advance_turn
    s.advance_turn = lambda n=1: calls.append(n) or advance(n)  # type: ignore[method-assign]
    assert (d.slider.max, d.play.max) == (0, 0)  # nothing recorded but turn 0: nowhere to go

    d.advance_count.value = 3
    d.advance_button.click()
    assert (s.turn, calls, d.viewing_turn) == (3, [3], None)
    assert (d.slider.max, d.slider.value, d.play.max) == (3, 3, 3)
    assert read(d.panel("async_activity").value)["text"] == "index the wiki: 1 turns left"

    from_frontend(d.slider, value=1)
    assert (s.turn, calls, d.viewing_turn) == (3, [3], 1)
    assert d.status == (
        "viewing turn 1 (read-only) · the prompt as composed at turn 1 · move the "
        "slider to turn 3 to resume the live view"
    )
    assert text_of(d.banner.value) == d.status
    assert (d.driver.mode, d.driver.shown, d.driver.latest) == ("replay", 1, 3)
    assert read(d.panel("async_activity").value) == {
        "meta": "turn 1 (read-only) · trinket Tasks · 28 chars",
        "items": [("index the wiki", "3")],
        "text": "index the wiki: 3 turns left",
    }
    assert d.toggle("Inbox").disabled and d.collapse_button.disabled
    assert not d.advance_button.disabled  # advancing from the past returns to live
    # live changes while viewing history do not disturb the read-only view
    s.trinket("Inbox").text = "changed"
    s.trinket("Inbox").request_update()
    assert read(d.panel("inbox_status").value)["text"] == "2 unread"

    from_frontend(d.slider, value=3)
    assert (s.turn, calls, d.viewing_turn) == (3, [3], None)
    assert text_of(d.banner.value) == "live · turn 3 · segment 1 (segment turn 3)"
    assert d.driver.mode == "live"
    assert read(d.panel("inbox_status").value)["text"] == "changed"
    assert not d.toggle("Inbox").disabled

    d.slider.value = 7  # past the latest turn: clamped, nothing advances
    assert (s.turn, calls, d.slider.value, d.viewing_turn) == (3, [3], 3, None)

    d.advance_count.value = 2
    from_frontend(d.slider, value=0)
    d.advance_button.click()  # from the past: advance, back to live
    assert (s.turn, calls, d.viewing_turn, d.slider.value) == (5, [3, 2], None, 5)
    assert read(d.panel("async_activity").value) == {
        "meta": "trinket Tasks · 0 chars · segment turn 5",
        "note": "no content: the section is left out",
        "items": [],
    }
    assert d.panel("async_activity").title == "async_activity · Tasks · empty"
    assert d.panel("async_activity").box.selected_index is None  # folded once it emptied
    d.close()


def test_without_auto_compose_a_turn_still_sends_one_update_and_old_turns_show_the_last_compose(sent: list) -> None:
    s = make_session(Inbox, Tasks)
    s.auto_compose = False
    tasks = s.trinket("Tasks")
    tasks.add("short job", ttl=0)
    tasks.add("long job", ttl=5)
    d = Dashboard(s)  # composes once, at turn 0
    sent.clear()
    s.advance_turn()  # "short job" expires: a lifecycle refresh
    tasks_panel = d.panel("async_activity")
    assert [read_update(u) for u in updates(sent, tasks_panel.status)] == [
        {"meta": "trinket Tasks · 22 chars · segment turn 1", "items": [("long job", "4")]}
    ]
    assert [read_update(u) for u in updates(sent, tasks_panel.text)] == [{"text": "long job: 4 turns left"}]
    s.advance_turn()
    d.viewing_turn = 1
    assert d.status == (
        "viewing turn 1 (read-only) · the prompt as composed at turn 0 (nothing "
        "composed at turn 1) · move the slider to turn 2 to resume the live view"
    )
    assert read(d.panel("async_activity").value) == {
        "meta": "turn 0 (read-only) · trinket Tasks · 46 chars",
        "items": [("short job", "0"), ("long job", "5")],
        "text": "short job: 0 turns left\nlong job: 5 turns left",
    }
    d.close()


def test_play_replays_the_recorded_turns_and_never_advances(sent: list) -> None:
    s = make_session(Inbox, Tasks)
    s.trinket("Tasks").add("index the wiki", ttl=1)
    d = Dashboard(s)
    d.advance(3)
    turns: list[int] = []
    s.bus.subscribe(TurnCompletedEvent, lambda e: turns.append(e.turn_number))
    play_from_frontend(d, 0)  # the browser rewinds and plays: 0, 1, 2, 3
    assert (d.viewing_turn, d.slider.value) == (0, 0)
    assert "index the wiki: 1 turns left" in d.panel("async_activity").value
    play_from_frontend(d, 2)
    assert (d.viewing_turn, d.slider.value) == (2, 2)
    assert "index the wiki" not in d.panel("async_activity").value
    play_from_frontend(d, 3)  # the last recorded turn: live again, and the end
    assert (d.viewing_turn, d.play.max, s.turn, turns) == (None, 3, 3, [])
    d.close()


def test_moving_back_and_forth_does_bounded_work_and_never_composes(sent: list) -> None:
    s = make_session(Inbox, Tasks)
    s.trinket("Tasks").add("index the wiki", ttl=100)
    d = Dashboard(s)
    d.advance(35)
    composes: list[str] = []
    s.bus.subscribe("ComposeSystemPromptEvent", lambda e: composes.append(e.event_type))
    sent.clear()
    for value in [10, 2, 35]:
        from_frontend(d.slider, value=value)
    assert (s.turn, composes) == (35, [])
    # back to 10: the 3 panels, play, 2 toggles and the collapse button made read-only, banner,
    # overview (9); back to 2: the 3 panels, play, banner, overview (6); forward to 35: the 3 panels,
    # play, 2 toggles, the button, banner, overview (9)
    assert len(all_updates(sent)) == 9 + 6 + 9
    d.close()


def test_errors_in_callbacks_show_in_the_dashboard(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    s.close()
    d.advance_count.value = 2
    d.advance_button.click()
    assert text_of(d.errors.value) == ("error RuntimeError: this session is closed; start a new Session")
    assert (s.turn, d.slider.value) == (0, 0)
    d.close()


def test_collapse_button_ends_the_segment_with_the_summary(sent: list) -> None:
    s = make_session(Inbox, Tasks)
    s.trinket("Tasks").add("index the wiki", ttl=9)
    d = Dashboard(s)
    s.advance_turn()
    from_frontend(d.summary, value="Planning chat")
    collapsed: list[SegmentCollapsedEvent] = []
    s.bus.subscribe(SegmentCollapsedEvent, collapsed.append)
    sent.clear()
    d.collapse_button.click()
    assert [c.summary for c in collapsed] == ["Planning chat"]
    assert (s.segment_number, d.summary.value) == (2, "")
    tasks_panel = d.panel("async_activity")
    assert [read_update(u) for u in updates(sent, tasks_panel.status)] == [
        {"meta": "trinket Tasks · 0 chars · segment turn 0", "note": "no content: the section is left out", "items": []}
    ]
    assert updates(sent, tasks_panel.text) == [{"value": ""}]  # its text is gone
    assert panel_updates(sent, d.panel("inbox_status")) == []
    d.close()


# -- the real stateful trinket -----------------------------------------------------------------------
def test_peanut_gallery_guidance_counts_down_and_expires(sent: list) -> None:
    s = make_session(PeanutGalleryTrinket)
    d = Dashboard(s)
    pg = s.trinket("PeanutGalleryTrinket")
    pg.add_guidance("concern", "Check the units.", ttl=2)
    pg.add_guidance("coaching", "One question at a time.", ttl=0)
    table = d.panel("peanutgallery_guidance").value
    # the feed call shows the items at once; the content follows at the next compose
    assert read(table) == {
        "meta": "trinket PeanutGalleryTrinket · 0 chars · segment turn 0",
        "note": "no content: the section is left out",
        "items": [("concern: Check the units.", "2"), ("coaching: One question at a time.", "0")],
    }
    s.advance_turn()
    assert read(d.panel("peanutgallery_guidance").value) == {
        "meta": "trinket PeanutGalleryTrinket · 118 chars · segment turn 1",
        "items": [("concern: Check the units.", "1")],
        "text": '<mira:peanutgallery>\n  <guidance type="concern" expires_in="1_turns">Check the units.'
        "</guidance>\n</mira:peanutgallery>",
    }
    d.close()


# -- closing -----------------------------------------------------------------------------------------
def _observer_count(*owners: Any) -> int:
    return sum(
        len(handlers) for owner in owners for kinds in owner._trait_notifiers.values() for handlers in kinds.values()
    )


def test_close_removes_every_observer_it_added(sent: list) -> None:
    s = make_session(Inbox, Tasks, PeanutGalleryTrinket)
    s.compose()
    owners = (s, s.working_memory, *s.trinkets.values())

    def footprint() -> tuple[int, int]:
        return (
            _observer_count(*owners),
            sum(len(s.bus.subscribers(t)) for t in ("TurnCompletedEvent", "SegmentCollapsedEvent", "TrinketFedEvent")),
        )

    before = footprint()
    first = Dashboard(s)
    one = footprint()
    assert one != before
    second = Dashboard(s)  # the cell ran again: the first one is closed for us
    assert first.closed and not second.closed
    assert footprint() == one
    both = Dashboard(s, replace=False)  # asked for two side by side
    assert not second.closed
    second.close()
    both.close()
    assert footprint() == before
    assert first.closed and second.closed and both.closed
    sent.clear()
    s.trinket("Inbox").text = "after close"
    s.advance_turn()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Still quiet?", ttl=1)
    assert sent == []


def test_every_colour_follows_the_jupyterlab_theme(sent: list) -> None:
    # a failing, a disabled and a truncated section, a failure in the event log and the read-only
    # banner: every colour they use is a theme variable (white text only on a coloured badge)
    s = make_session(Inbox, Tasks, Flaky)
    s.trinket("Flaky").failure = "down"
    d = Dashboard(s, preview_chars=10)
    s.trinket("Tasks").add("a long running background job", ttl=3)
    s.trinket("Inbox").set_enabled(False)
    s.advance_turn()
    d.viewing_turn = 0
    d.tabs.selected_index = d.tabs.children.index(d.events)  # drawn while open, as a user sees it
    pages = [d.banner.value, d.events.value, *(d.panel(n).value for n in d.sections.panels)]
    d.viewing_turn = None
    pages += [d.panel(n).value for n in d.sections.panels]
    values = re.findall(r"(?:color|background|border[a-z-]*):([^;\"]*)", "".join(pages))
    assert {v for v in values if "var(--jp-" not in v and not v.strip()[:1].isdigit()} == {"#fff"}
    assert f"color:{style.ERROR}" in d.events.value  # the failure, in the error colour
    assert "[preview: the first 10 of" in d.panel("async_activity").value  # truncated
    assert "disabled" in read(d.panel("inbox_status").value)["note"]
    d.close()


def test_event_log_says_what_each_event_carries(sent: list) -> None:
    s = make_session(Tasks)
    d = Dashboard(s, log_rows=5)
    s.trinket("Tasks").add("index <the> wiki", ttl=0)
    s.advance_turn()
    d.tabs.selected_index = d.tabs.children.index(d.events)  # what a user opens to read it
    assert re.sub(r"(<[^>]+>)+", "|", d.events.value) == (
        "|last 5 events|#|event|detail|failures|"
        "4|TurnCompletedEvent|turn_number=1, segment_turn_number=1|"
        "5|UpdateTrinketEvent|target_trinket=Tasks, "
        "context={&#x27;action&#x27;: &#x27;lifecycle_refresh&#x27;}|"  # escaped like all text
        "6|ComposeSystemPromptEvent|base_prompt=22 chars|"
        "7|UpdateTrinketEvent|target_trinket=Tasks|"
        "8|SystemPromptComposedEvent|cached_content=259 chars|"
    )
    d.close()


# -- threads -----------------------------------------------------------------------------------------
def test_a_feed_on_another_thread_waits_for_a_render_in_progress_then_shows(sent: list) -> None:
    import threading

    s = make_session(Inbox, Tasks)
    d = Dashboard(s)
    tasks = s.trinket("Tasks")
    panel = d.panel("async_activity")
    feeder = threading.Thread(target=lambda: tasks.add_item("crawl the docs", ttl=3))
    render = panel.show
    blocked: list[bool] = []

    def show_while_another_thread_feeds(view: PanelView) -> None:
        if not feeder.is_alive() and not blocked:
            feeder.start()
            feeder.join(timeout=0.5)
            blocked.append(feeder.is_alive())  # still waiting for this render to end
        render(view)

    panel.show = show_while_another_thread_feeds
    d.refresh()
    feeder.join(timeout=10)
    assert blocked == [True]
    assert "crawl the docs" in panel.value and d.errors.value == ""
    d.close()


# -- the overview --------------------------------------------------------------------------------------
def bars(d: Dashboard) -> list[tuple[str, str, str]]:
    """(item id, state, turns remaining) of every timeline bar, top to bottom."""
    return re.findall(r'data-item="([^"]*)" data-state="(\w+)" data-remaining="(\d*)"', d.overview.value)


def test_overview_timeline_has_a_bar_per_item_live_and_expired_at_the_turn_on_view(sent: list) -> None:
    s = make_session(PeanutGalleryTrinket)
    pg = s.trinket("PeanutGalleryTrinket")
    d = Dashboard(s)
    brief = pg.add_guidance("coaching", "Be brief.", ttl=0)
    units = pg.add_guidance("concern", "<img src=x onerror=alert(1)>", ttl=2)
    assert bars(d) == [(brief, "live", "0"), (units, "live", "2")]  # fed, not yet composed
    d.advance(3)
    assert bars(d) == [(brief, "expired", "0"), (units, "expired", "0")]
    assert '<line class="wm-now"' in d.overview.value and "<title>turn 3</title>" in d.overview.value
    # hostile text is escaped in the label and in the hover title
    assert "<img" not in d.overview.value and "&lt;img src=x onerror=alert(1)&gt;" in d.overview.value
    d.viewing_turn = 1
    assert bars(d) == [(brief, "expired", "0"), (units, "live", "1")]
    assert "<title>turn 1 (read-only)</title>" in d.overview.value
    d.viewing_turn = None
    assert "<b>size of each placement</b>" in d.overview.value
    assert re.search(r"<code>peanutgallery_guidance</code> removed", d.overview.value)
    d.close()


def test_the_timeline_ends_an_item_where_it_was_last_seen_when_cut_short(sent: list) -> None:
    s = make_session(Tasks)
    d = Dashboard(s)
    s.trinket("Tasks").add_item("crawl", ttl=9)
    d.advance(2)
    d.collapse_button.click()  # flushed at turn 2, announced to turn 9
    d.advance(1)
    assert bars(d) == [("crawl", "expired", "0")]
    d.viewing_turn = 1
    assert bars(d) == [("crawl", "live", "1")]  # shown at turns 0 to 2 only
    assert read(d.panel("async_activity").value)["items"] == [("crawl", "8")]
    d.close()


def test_the_item_log_gives_the_spans_and_items_the_per_turn_copies_gave() -> None:
    import random

    from wm_kernel.instruments.items import ItemLog, item_spans

    rng = random.Random(7)
    for _ in range(200):
        copies: dict[int, dict[str, list[dict[str, Any]]]] = {}
        log = ItemLog()
        live: dict[str, int | None] = {}  # id -> announced last turn
        for turn in sorted(rng.sample(range(40), rng.randint(1, 25))):
            for name in list(live):  # expiries, and some cut short
                end = live[name]
                if (end is not None and end < turn) or rng.random() < 0.1:
                    del live[name]
            for _ in range(rng.randint(0, 2)):
                live[f"i{rng.randint(0, 30)}"] = rng.choice([None, turn + rng.randint(0, 6)])
            items = [
                {"id": n, "label": f"<{n}>", "turns_remaining": None if e is None else e - turn}
                for n, e in live.items()
            ]
            copies[turn] = {"g": items}
            log.sight(turn, {"g": items})
            if rng.random() < 0.3:  # a second sighting in the same turn
                log.sight(turn, {"g": items[:1]})
        assert log.spans({"g": "T"}) == item_spans(copies, {"g": "T"})
        for turn, seen in copies.items():  # in the order first seen, which may differ
            assert sorted(log.items_at(turn, "g"), key=str) == sorted(seen["g"], key=str)


# -- the turn driver -------------------------------------------------------------------------------------
def test_turn_driver_seeks_collapse_into_the_latest_target() -> None:
    driver = TurnDriver(latest=10)
    assert driver.seek(3) is True  # the caller shows it
    assert driver.seek(5) is False and driver.seek(7) is False  # arrive while 3 is shown
    assert driver.next_seek() == 7  # only the latest of them is shown next
    assert driver.next_seek() is None and not driver.seeking
    assert driver.seek(2) is True
    driver.abort_seek()
    assert (driver.pending, driver.seeking) == (None, False)


def test_turn_driver_modes_and_views() -> None:
    driver = TurnDriver(latest=4)
    assert (driver.mode, driver.shown) == ("live", 4)
    assert [driver.view_for(t) for t in (-1, 0, 3, 4, 9)] == [0, 0, 3, None, None]
    driver.view = 2
    assert (driver.mode, driver.shown) == ("replay", 2)


def test_the_turn_on_view_is_checked_at_every_assignment(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    d.advance(4)
    d.viewing_turn = 2
    assert (d.driver.mode, d.driver.shown) == ("replay", 2)
    for bad in (4, -1, True, "2"):
        with pytest.raises(
            ValueError,
            match=r"viewing_turn must be None \(live\) or an earlier "
            r"turn, 0 to 3; got",
        ):
            d.viewing_turn = bad
    assert d.viewing_turn == 2 and d.driver.view == 2  # a refused view changes nothing
    d.viewing_turn = None
    assert d.driver.mode == "live"
    d.close()


def test_turn_driver_holds_rendering_through_batches_and_turns() -> None:
    driver = TurnDriver(latest=0)
    assert not driver.held
    driver.start_turn(1)
    assert (driver.held, driver.latest) == (True, 1)
    driver.end_turn()
    assert not driver.held
    driver.open_batch()
    driver.open_batch()
    driver.start_turn(2)  # a turn the batch drives
    assert driver.close_batch() is False and driver.held  # inner batch: keep holding
    assert driver.close_batch() is True and not driver.held  # outer: render once, turn over


def test_the_dashboards_driver_follows_the_session_and_the_slider(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    d.advance(3)
    assert (d.driver.latest, d.driver.mode, d.driver.held) == (3, "live", False)
    from_frontend(d.slider, value=1)
    assert (d.driver.view, d.driver.mode, d.viewing_turn) == (1, "replay", 1)
    s.advance_turn()  # from another cell: the view stays where it is
    assert (d.driver.latest, d.driver.view, d.slider.max, d.slider.value) == (4, 1, 4, 1)
    play_from_frontend(d, 4)
    assert (d.driver.mode, d.viewing_turn, d.driver.seeking) == ("live", None, False)
    d.close()


# -- golden snapshots: one per view (the exact HTML, styling included) ---------------------------------
GOLDEN_LIVE = (
    '<div class="wm-meta" style="font-size:12px;color:var(--jp-ui-font-color2, #616161)">trinket '
    '<b>Tasks</b> · 41 chars · segment turn 0</div><div class="wm-scroll" style="overflow-x:auto;max-width:100%">'
    '<table class="wm-items" style="font-size:12px">'
    '<tr><th style="text-align:left">item</th><th>turns remaining</th></tr><tr><td>a &lt;b&gt;</td>'
    '<td style="text-align:right">2</td></tr><tr><td>forever</td><td style="text-align:right">9'
    '</td></tr></table></div><pre style="white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;'
    "font-family:var(--jp-code-font-family, monospace);font-size:var(--jp-code-font-size, 13px);"
    "line-height:1.35;max-height:24em;overflow:auto;margin:2px 0 6px 14px;padding:2px 0 2px 8px;"
    'border-left:2px solid var(--jp-border-color2, #e0e0e0)">a &lt;b&gt;: 2 turns left\n'
    "forever: 9 turns left</pre>"
)
GOLDEN_READ_ONLY_FAILED = (
    '<div class="wm-meta" style="font-size:12px;color:var(--jp-ui-font-color2, #616161)">turn 0 '
    '(read-only) · trinket <b>Flaky</b> · 0 chars</div><div class="wm-note"><span class="wm-badge" '
    'style="background:color-mix(in srgb, var(--jp-error-color1, #d32f2f) 70%, #000);color:#fff;'
    "padding:0 5px;border-radius:3px;"
    'font-size:11px">error</span> <code>forage_results</code> · Flaky · trinket failed: <span '
    'style="color:color-mix(in srgb, var(--jp-error-color1, #d32f2f) 65%, var(--jp-content-font-color0, '
    '#000))">RuntimeError: down</span></div>'
)


def test_golden_panels(sent: list) -> None:
    s = make_session(Tasks, Flaky)
    s.trinket("Tasks").add("a <b>", ttl=2)
    s.trinket("Tasks").add("forever", ttl=9)
    s.trinket("Flaky").failure = "down"
    d = Dashboard(s)
    assert d.panel("async_activity").value == GOLDEN_LIVE
    s.trinket("Flaky").failure = ""
    d.advance(1)
    d.viewing_turn = 0
    assert d.panel("forage_results").value == GOLDEN_READ_ONLY_FAILED
    d.close()


# -- budget and cache tabs ----------------------------------------------------------------------------
def test_budget_tab_draws_the_bars_of_the_prompt_on_view_only_while_open(sent: list) -> None:
    s = Session(
        base_prompt="You help.",
        trinkets=[Inbox, Tasks],
        token_budget=120,
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
    )
    s.trinket("Tasks").add("a long running background job " * 30, ttl=9)
    d = Dashboard(s)
    d.advance(1)
    assert d.budget.value == UNDRAWN and updates(sent, d.budget) == []  # closed: never drawn
    d.tabs.selected_index = d.tabs.children.index(d.budget)
    bars = d.budget.value
    assert bars.startswith('<div class="wm-budget">') and "<svg" in bars
    assert "budget 120" in text_of(bars)
    dropped = re.findall(r"<title>([^<]*)</title>", bars)
    assert any("async_activity" in t and "dropped" in t for t in dropped), dropped
    sent.clear()
    s.trinket("Inbox").request_update()  # the same prompt: nothing to send
    assert updates(sent, d.budget) == []
    d.viewing_turn = 0  # the bars follow the turn on view
    assert "turn 0" in text_of(d.budget.value)
    d.close()


def test_cache_strip_has_a_cell_per_turn_and_simulates_once_per_latest_turn(
    sent: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = make_session(Inbox, Tasks)
    d = Dashboard(s, cache_model="claude-haiku-4-5")
    d.advance(3)
    runs: list[str] = []
    simulate = s.cache_simulation
    monkeypatch.setattr(s, "cache_simulation", lambda model, **kw: runs.append(model) or simulate(model, **kw))
    d.tabs.selected_index = d.tabs.children.index(d.cache)
    cells = re.findall(r'data-turn="(\d+)" data-status="(\w+)" title="([^"]*)"', d.cache.value)
    assert [int(turn) for turn, _, _ in cells] == [0, 1, 2, 3]
    assert all(status in ("hit", "partial", "write", "miss") for _, status, _ in cells)
    assert all(html.unescape(title).startswith(f"turn {turn}: {status}") for turn, status, title in cells)
    assert "claude-haiku-4-5" in text_of(d.cache.value)
    for value in (0, 2, 1, 3):  # slider moves: the strip's mark moves, no re-run
        from_frontend(d.slider, value=value)
    assert runs == ["claude-haiku-4-5"]
    d.advance(1)  # a new turn: one more simulation
    assert runs == ["claude-haiku-4-5"] * 2 and d.cache.value.count("wm-cache-cell") == 5
    d.cache_model = "claude-sonnet-4-6"
    assert runs[-1] == "claude-sonnet-4-6" and "claude-sonnet-4-6" in text_of(d.cache.value)
    with pytest.raises(ValueError, match="unknown cache_model 'gpt-nope'"):
        d.cache_model = "gpt-nope"
    assert d.cache_model == "claude-sonnet-4-6"
    d.close()


def test_an_unknown_cache_model_is_refused_at_creation(sent: list) -> None:
    with pytest.raises(ValueError, match="unknown cache_model 'nope'; known: "):
        Dashboard(make_session(Inbox), cache_model="nope")


# -- memory ----------------------------------------------------------------------------------------------
def _bytes_per_turn(dashboard: bool, turns: int) -> float:
    import gc
    import tracemalloc

    s = make_session(Tasks, PeanutGalleryTrinket)
    for i in range(10):
        s.trinket("Tasks").add(f"background job number {i} with a longish label", ttl=10**6)
    for i in range(5):
        s.trinket("PeanutGalleryTrinket").add_guidance("concern", f"Guidance {i}, for long.", ttl=10**5)
    d = Dashboard(s) if dashboard else None
    s.advance_turn(20)  # warm: caches and first-time structures
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        s.advance_turn(turns)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    if d is not None:
        d.close()
    return grown / turns


@pytest.mark.slow
def test_an_open_dashboard_keeps_a_small_constant_per_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    import collections

    # comms that send nowhere and keep nothing (the recording ones would keep every message)
    gone: Any = collections.deque(maxlen=0)
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: RecordingComm(gone, "c"))
    # 15 live items on every turn: copies of their lists per turn cost the dashboard about as much
    # again as the session itself (8.0 KB -> 17.0 KB per turn before); changes cost ~nothing
    without = _bytes_per_turn(False, 1_000)
    with_dashboard = _bytes_per_turn(True, 1_000)
    assert with_dashboard < 1.25 * without + 400, (without, with_dashboard)


# -- what the dashboard's frugality relies on ------------------------------------------------------------
def count_renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sections whose live view is rendered from now on, in order."""
    import wm_kernel.jupyter.dashboard.sections as module

    rendered: list[str] = []
    real = module.live_section

    def spy(session: Session, section: str, *args: Any, **kwargs: Any) -> Any:
        rendered.append(section)
        return real(session, section, *args, **kwargs)

    monkeypatch.setattr(module, "live_section", spy)
    return rendered


def test_a_panel_whose_inputs_did_not_change_is_not_rendered_again(sent: list, monkeypatch: pytest.MonkeyPatch) -> None:
    s = make_session(Inbox, Location, Tasks)
    d = Dashboard(s)
    rendered = count_renders(monkeypatch)
    sent.clear()
    d.refresh()  # every panel asked again: none changed
    assert rendered == [] and all_updates(sent) == []
    s.compose()  # the same prompt again: new events only
    panels = [d.panel(n) for n in ("base_prompt", "inbox_status", "location_context", "async_activity")]
    assert rendered == [] and [m for p in panels for m in panel_updates(sent, p)] == []
    inbox = s.trinket("Inbox")
    inbox.text = "7 unread"
    inbox.request_update()
    assert rendered == ["inbox_status"]
    assert read(d.panel("inbox_status").value)["text"] == "7 unread"
    d.close()


def test_a_change_of_text_error_switch_or_items_renders_the_panel_again(
    sent: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = make_session(Inbox, Flaky, Tasks)
    d = Dashboard(s)
    rendered = count_renders(monkeypatch)
    flaky, tasks = s.trinket("Flaky"), s.trinket("Tasks")
    flaky.failure = "down"
    s.compose()
    assert rendered.count("forage_results") == 1
    assert d.panel("forage_results").title == "forage_results · Flaky · ⚠ failed"
    flaky.failure = "still down"  # a new error, the same (empty) content
    s.compose()
    assert "error RuntimeError: still down" in read(d.panel("forage_results").value)["note"]
    flaky.failure = ""
    s.compose()
    assert read(d.panel("forage_results").value)["text"] == "3 results"
    flaky.set_enabled(False)
    assert d.panel("forage_results").title == "forage_results · Flaky · disabled"
    # a stateful trinket's items: fed, then counted down by a turn
    tasks.add_item("crawl", ttl=2)
    assert read(d.panel("async_activity").value)["items"] == [("crawl", "2")]
    d.advance(1)
    assert read(d.panel("async_activity").value)["items"] == [("crawl", "1")]
    assert read(d.panel("async_activity").value)["meta"].endswith("segment turn 1")
    # the preview size is an input too
    d.preview_chars = 3
    d.refresh()
    assert "3 results" not in d.panel("forage_results").value
    d.close()


class Watchlist(StatefulTrinket):
    """Items whose text does not count down: a turn changes only their turns remaining."""

    variable_name = "whilethecatsaway_results"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watched: dict[str, int] = {}  # name -> last turn shown

    @feed
    def watch(self, name: str, ttl: int) -> None:
        self.watched[name] = self.current_turn + ttl
        self.request_update()

    def describe_items(self) -> list[dict[str, Any]]:
        return [
            {"id": name, "label": name, "turns_remaining": last - self.current_turn}
            for name, last in self.watched.items()
        ]

    def generate_content(self, context: dict[str, Any]) -> str:
        return "\n".join(f"watching {name}" for name in self.watched)

    def _expire_items(self) -> bool:
        kept = {n: last for n, last in self.watched.items() if self.current_turn <= last}
        expired = len(kept) != len(self.watched)
        self.watched = kept
        return expired

    def _clear_all_state(self) -> None:
        self.watched = {}


def test_a_countdown_change_is_sent_without_the_sections_text(sent: list) -> None:
    s = make_session(Watchlist)
    d = Dashboard(s)
    s.trinket("Watchlist").watch("the build", ttl=5)
    panel = d.panel("whilethecatsaway_results")
    texts: list[str] = []
    panel.text.observe(lambda change: texts.append(change["new"]), names=["value"])
    sent.clear()

    d.advance(1)
    d.advance(1)

    # the text did not change: its widget is not set (so not sent); the countdown went out alone
    assert texts == [] and updates(sent, panel.text) == []
    assert [read_update(u) for u in updates(sent, panel.status)] == [
        {"meta": f"trinket Watchlist · 18 chars · segment turn {turn}", "items": [("the build", str(5 - turn))]}
        for turn in (1, 2)
    ]
    assert read(panel.value) == {
        "meta": "trinket Watchlist · 18 chars · segment turn 2",
        "items": [("the build", "3")],
        "text": "watching the build",
    }
    s.trinket("Watchlist").watch("the tests", ttl=1)  # new text: the text widget is set, once
    assert [read_update(u) for u in updates(sent, panel.text)] == [{"text": "watching the build\nwatching the tests"}]
    d.close()


def test_a_feed_reads_the_items_of_the_trinket_fed_only(sent: list) -> None:
    s = make_session(Tasks, Watchlist, PeanutGalleryTrinket)
    d = Dashboard(s)
    d.advance(1)
    asked: list[str] = []
    for trinket in s.trinkets.values():

        def counting(describe: Any = trinket.describe_items, name: str = trinket.name) -> Any:
            asked.append(name)
            return describe()

        trinket.describe_items = counting  # type: ignore[method-assign]
    s.trinket("Watchlist").watch("the build", ttl=3)
    # the dashboard asks the trinket fed (for its new content, and when the feed call ends) and no
    # other; its countdown and the timeline show the new item
    assert set(asked) == {"Watchlist"}
    assert read(d.panel("whilethecatsaway_results").value)["items"] == [("the build", "3")]
    assert ("the build", "live", "3") in bars(d)
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=2)
    assert set(asked) == {"Watchlist", "PeanutGalleryTrinket"}
    asked.clear()
    d.refresh()  # nothing fed or turned since: nobody asked
    assert asked == []
    s.advance_turn()  # a turn: the dashboard reads the items the
    with_dashboard = collections.Counter(asked)  # session's ItemHistory read at its compose
    d.close()
    asked.clear()
    s.advance_turn()
    assert with_dashboard == collections.Counter(asked)


def test_play_and_slider_are_linked_in_the_frontend(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    link = d._play_link
    assert isinstance(link, Link)
    # the slider is the source: a saved notebook's link starts by copying the slider's value to
    # play (play's copy in the kernel is stale), not play's to the slider
    assert (link.source, link.target) == ((d.slider, "value"), (d.play, "value"))
    # so the kernel moves the slider alone (the link moves play in the browser) and keeps play's
    # end, widened before the slider moves so the link never moves play past it
    sent.clear()
    s.advance_turn()
    assert [(c, data["state"]) for c, data in sent if c in (d.slider.comm, d.play.comm)] == [
        (d.play.comm, {"max": 1}),
        (d.slider.comm, {"max": 1, "value": 1}),
        *((d.slider.comm, state) for state in REBUILT),
    ]
    # no Python observer moves one with the other
    assert not d.play._trait_notifiers.get("value")
    d.close()
    assert link.comm is None  # closed with the dashboard


def test_items_changed_without_a_feed_or_content_change_still_show_at_the_next_turn(sent: list) -> None:
    s = make_session(Tasks)
    d = Dashboard(s)
    tasks = s.trinket("Tasks")
    tasks.add("index", ttl=5)  # no feed call: nothing tells the dashboard
    d.advance(1)  # the turn asks the trinkets again
    assert read(d.panel("async_activity").value)["items"] == [("index", "4")]
    assert bars(d) == [("index", "live", "4")]
    d.close()


def test_a_new_event_shows_in_the_event_log_and_a_settle_without_one_sends_nothing(sent: list) -> None:
    s = make_session(Tasks)
    d = Dashboard(s, log_rows=3)
    d.tabs.selected_index = d.tabs.children.index(d.events)
    sent.clear()
    d.refresh()
    assert updates(sent, d.events) == []  # no event since the last settle

    def rows() -> list[tuple[int, str]]:
        return [(int(n), e) for n, e in re.findall(r"<tr><td>(\d+)</td><td[^>]*>(\w+)</td>", d.events.value)]

    s.trinket("Tasks").add_item("crawl", ttl=1)
    assert len(updates(sent, d.events)) == 1
    fed = rows()
    assert [n for n, _ in fed] == list(range(fed[-1][0] - 2, fed[-1][0] + 1))  # newest three
    assert "TrinketFedEvent" in [e for _, e in fed]
    d.advance(1)
    assert rows()[0][0] > fed[-1][0] and rows()[-1][1] == "SystemPromptComposedEvent"
    d.close()


def test_the_controls_follow_the_turn_and_are_sent_only_when_they_change(sent: list) -> None:
    s = make_session(Inbox, Tasks)
    d = Dashboard(s)
    d.advance(3)
    assert (d.slider.value, d.slider.max, d.play.max) == (3, 3, 3)
    sent.clear()
    d.refresh()
    s.trinket("Tasks").add_item("crawl", ttl=1)
    assert updates(sent, d.slider) == updates(sent, d.play) == []
    assert updates(sent, d.collapse_button) == [] and updates(sent, d.toggle("Inbox")) == []
    d.viewing_turn = 1
    assert (d.slider.value, d.slider.max, d.play.max) == (1, 3, 3)
    assert updates(sent, d.play) == []  # play follows the slider in the frontend
    assert d.collapse_button.disabled and d.toggle("Inbox").disabled
    d.viewing_turn = None
    assert d.slider.value == 3
    assert not d.collapse_button.disabled and not d.toggle("Inbox").disabled
    s.advance_turn(2)  # from another cell
    assert (d.slider.value, d.slider.max, d.play.max) == (5, 5, 5)
    assert text_of(d.banner.value) == "live · turn 5 · segment 1 (segment turn 5)"
    d.close()


def test_the_overview_is_drawn_only_while_open_and_current_when_opened(sent: list) -> None:
    s = make_session(Tasks)
    d = Dashboard(s)
    d.tabs.selected_index = d.tabs.children.index(d.events)
    sent.clear()
    s.trinket("Tasks").add_item("crawl", ttl=9)
    d.advance(2)
    assert updates(sent, d.overview) == []
    d.tabs.selected_index = 0
    assert len(updates(sent, d.overview)) == 1
    assert bars(d) == [("crawl", "live", "7")]  # fed while closed, still on the timeline
    assert "<title>turn 2</title>" in d.overview.value
    d.close()


def test_the_event_log_is_drawn_only_while_open_and_current_when_opened(sent: list) -> None:
    s = make_session(Tasks)
    d = Dashboard(s, log_rows=2)
    assert d.events.value == UNDRAWN  # never opened: never drawn
    sent.clear()
    s.trinket("Tasks").add_item("crawl", ttl=9)
    d.advance(2)
    assert updates(sent, d.events) == []
    d.tabs.selected_index = d.tabs.children.index(d.events)
    assert len(updates(sent, d.events)) == 1
    assert re.findall(r"<td[^>]*>(\w+Event)</td>", d.events.value) == [
        "TrinketContentEvent",
        "SystemPromptComposedEvent",
    ]  # the end of the turn just completed
    d.tabs.selected_index = 0  # closed again: what happens is not drawn
    sent.clear()
    s.trinket("Tasks").add_item("index", ttl=9)
    assert updates(sent, d.events) == []
    d.close()


def test_a_section_moved_by_a_new_layout_moves_to_its_view(sent: list) -> None:
    from wm_kernel.core.composer.layout import Layout

    s = make_session(Inbox, Location)
    d = Dashboard(s)
    assert "location_context" in d.section_names()["system_cached"]
    placements = s.layout.as_dict()
    placements["system"].remove("location_context")
    placements["post_history"].append("location_context")
    s.working_memory.composer.layout = Layout(placements)
    s.compose()
    assert "location_context" not in d.section_names()["system_cached"]
    assert "location_context" in d.section_names()["post_history"]
    # no longer in the cached system prompt: its panel says so, though its text is the same
    assert read(d.panel("location_context").value)["meta"] == "trinket Location · 22 chars"
    d.close()


def test_the_timeline_draws_the_items_of_its_window_and_counts_the_earlier_ones(sent: list) -> None:
    from wm_kernel.instruments.items import WINDOW

    s = make_session(Tasks)
    d = Dashboard(s)
    tasks = s.trinket("Tasks")
    tasks.add_item("early", ttl=0)
    d.advance(WINDOW + 5)
    tasks.add_item("late", ttl=3)
    d.advance(1)
    assert bars(d) == [("late", "live", "2")]
    caption = text_of(d.overview.value)
    # at turn WINDOW + 6, "late" is shown to WINDOW + 8: the window is turns 9 to WINDOW + 8
    assert f"(turns 9 to {WINDOW + 8}); 1 item that ended before turn 9 not drawn;" in caption
    assert ">early<" not in d.overview.value
    d.viewing_turn = 0  # the window is the latest turns, as before
    assert bars(d) == [("late", "future", str(WINDOW + 8))]
    d.close()


def test_newest_changes_match_the_full_diff_for_any_pair_of_prompts() -> None:
    import random

    from wm_kernel.core.prompt import ComposedPrompt, SectionRecord
    from wm_kernel.display.overview import changes_between, changes_html
    from wm_kernel.instruments.diff import diff_prompts

    rng = random.Random(3)
    names = [f"s{i}" for i in range(8)]

    def prompt() -> ComposedPrompt:
        chosen = rng.sample(names, rng.randint(1, len(names)))
        return ComposedPrompt(
            sections=[
                SectionRecord(
                    name,
                    rng.choice(["system", "notification"]),
                    rng.choice(["a", "b\nc", ""]),
                    rng.random() < 0.5,
                    None,
                )
                for name in chosen
            ]
        )

    for _ in range(300):
        before, after = prompt(), prompt()
        assert changes_between(before, after, "t") == changes_html(diff_prompts(before, after), "t")
    # prompts without section records: the full diff decides
    plain = ComposedPrompt(cached_content="x")
    assert changes_between(plain, ComposedPrompt(cached_content="y"), "t") == changes_html(
        diff_prompts(plain, ComposedPrompt(cached_content="y")), "t"
    )


def test_the_item_log_spans_asked_between_sightings_match_the_copies() -> None:
    import random

    from wm_kernel.instruments.items import ItemLog, item_spans

    rng = random.Random(11)
    for _ in range(200):
        copies: dict[int, dict[str, list[dict[str, Any]]]] = {}
        log = ItemLog()
        live: dict[str, int | None] = {}
        versions: list[tuple[int, list[Any]]] = []
        for turn in sorted(rng.sample(range(30), rng.randint(1, 20))):
            for name in list(live):
                if (live[name] is not None and live[name] < turn) or rng.random() < 0.15:
                    del live[name]
            for _ in range(rng.randint(0, 2)):
                live[f"i{rng.randint(0, 20)}"] = rng.choice([None, turn + rng.randint(0, 5)])
            items = [{"id": n, "label": n, "turns_remaining": None if e is None else e - turn} for n, e in live.items()]
            cut = rng.randint(0, len(items))
            copies[turn] = {"g": items}
            log.sight(turn, {"g": items[:cut]})  # a first sighting of some of them,
            if rng.random() < 0.5:  # spans asked in between,
                log.spans({"g": "T"})
            log.sight(turn, {"g": items[cut:]})  # then the rest at the same turn
            spans = log.spans({"g": "T"})
            assert spans == item_spans(copies, {"g": "T"})
            versions.append((log.version, spans))
        # equal versions, equal spans: what a caller keeps by version is never stale
        for (a, x), (b, y) in pairwise(versions):
            assert a != b or x == y


def test_the_item_log_window_is_what_the_timeline_draws_from_every_span() -> None:
    import random

    from wm_kernel.display.overview import timeline_html
    from wm_kernel.instruments.items import WINDOW, ItemLog

    rng = random.Random(5)
    for _ in range(100):
        log = ItemLog()
        live: dict[str, int | None] = {}
        for turn in sorted(rng.sample(range(3 * WINDOW), rng.randint(1, 60))):
            for name in list(live):
                if (live[name] is not None and live[name] < turn) or rng.random() < 0.1:
                    del live[name]
            for _ in range(rng.randint(0, 3)):
                live[f"i{rng.randint(0, 80)}"] = rng.choice([None, turn + rng.randint(0, 8)])
            log.sight(
                turn,
                {
                    "g": [
                        {"id": n, "label": n, "turns_remaining": None if e is None else e - turn}
                        for n, e in live.items()
                    ]
                },
            )
            marked = rng.choice([turn, rng.randint(0, turn)])  # live, or an earlier turn on view
            if rng.random() < 0.5:
                shown, left_out = log.window({"g": "T"}, marked)
                assert timeline_html(shown, marked, left_out=left_out) == timeline_html(log.spans({"g": "T"}), marked)


# -- coalescing in a running event loop (a Jupyter kernel runs cells inside one) --------------------
@pytest.fixture
def in_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Code runs as in a Jupyter kernel: inside the kernel's running event loop. (A real kernel:
    test_a_cell_of_many_turns_in_a_real_kernel_sends_few_messages.)"""

    import wm_kernel.jupyter.dashboard.drawing

    monkeypatch.setattr(wm_kernel.jupyter.dashboard.drawing, "_kernel_loop", _running_loop)


def run_cell(cell: Callable[[], Any]) -> Any:
    """Run an async "cell" in an event loop of its own, on its own thread (this thread may
    already have a loop running: Playwright's, after the browser tests), and return its result."""
    import asyncio
    import threading

    result: list[Any] = []
    failure: list[BaseException] = []

    def main() -> None:
        try:
            result.append(asyncio.run(cell()))
        except BaseException as exc:  # re-raised in the test's thread
            failure.append(exc)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def _running_loop() -> object:
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def test_in_a_kernel_a_cell_of_many_turns_sends_one_update_per_part_when_it_returns(
    sent: list, in_kernel: None
) -> None:
    import asyncio

    s = make_session(Inbox, Location, Tasks)
    s.trinket("Tasks").add("index the wiki", ttl=30)
    d = Dashboard(s)
    tasks = d.panel("async_activity")
    sent.clear()

    async def cell() -> list:
        s.advance_turn(20)  # what a cell running a loop of turns does
        s.trinket("Inbox").text = "5 unread"  # and a change from the same cell
        s.compose()
        during = list(sent)  # nothing drawn while the cell runs
        await asyncio.sleep(0)  # the kernel goes back to its loop: one draw
        return during

    assert run_cell(cell) == []
    # one update per changed part, showing the state the cell left
    assert updates(sent, d.slider) == [{"max": 20, "value": 20}, *REBUILT]
    assert updates(sent, d.play) == [{"max": 20}]
    assert [text_of(u["value"]) for u in updates(sent, d.banner)] == ["live · turn 20 · segment 1 (segment turn 20)"]
    assert [read_update(u) for u in updates(sent, tasks.status)] == [
        {"meta": "trinket Tasks · 29 chars · segment turn 20", "items": [("index the wiki", "10")]}
    ]
    assert [read_update(u)["text"] for u in updates(sent, d.panel("inbox_status").text)] == ["5 unread"]
    assert len(updates(sent, d.overview)) == 1
    # what the dashboard shows is what a dashboard drawing every change ends up showing
    eager = Dashboard(s, replace=False, coalesce=False)
    assert d.panel("async_activity").value == eager.panel("async_activity").value
    assert d.banner.value == eager.banner.value
    eager.close()
    d.close()


@pytest.mark.parametrize(
    "kernel, coalesce",
    [(True, False), (False, True)],
    ids=["in a kernel, coalesce=False", "a running loop outside a kernel"],
)
def test_a_dashboard_that_does_not_coalesce_draws_every_turn(
    sent: list, monkeypatch: pytest.MonkeyPatch, kernel: bool, coalesce: bool
) -> None:
    # outside a kernel a running loop may never run the draw soon (Playwright's synchronous API
    # keeps one running in the main thread): the dashboard draws at once there

    import wm_kernel.jupyter.dashboard.drawing

    if kernel:
        monkeypatch.setattr(wm_kernel.jupyter.dashboard.drawing, "_kernel_loop", _running_loop)
    s = make_session(Inbox, Location)
    d = Dashboard(s, coalesce=coalesce)
    sent.clear()

    async def cell() -> None:
        s.advance_turn(3)

    run_cell(cell)
    assert updates(sent, d.slider) == [
        {"max": 1, "value": 1},
        *REBUILT,
        {"max": 2, "value": 2},
        *REBUILT,
        {"max": 3, "value": 3},
        *REBUILT,
    ]
    d.close()


def test_a_draw_scheduled_before_close_draws_nothing(sent: list, in_kernel: None) -> None:
    import asyncio

    s = make_session(Inbox)
    d = Dashboard(s)
    sent.clear()

    async def cell() -> None:
        s.advance_turn()
        d.close()
        await asyncio.sleep(0)

    run_cell(cell)
    assert all_updates(sent) == []


def test_a_draw_asked_of_a_loop_that_never_runs_does_not_block_later_draws(
    sent: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    import wm_kernel.jupyter.dashboard.drawing

    idle = asyncio.new_event_loop()  # never run: a loop that will not draw soon, or ever
    monkeypatch.setattr(wm_kernel.jupyter.dashboard.drawing, "_kernel_loop", lambda: idle)
    s = make_session(Inbox)
    d = Dashboard(s)
    s.advance_turn()  # its draw waits on the idle loop
    monkeypatch.setattr(wm_kernel.jupyter.dashboard.drawing, "_kernel_loop", _running_loop)
    sent.clear()

    async def cell() -> None:
        s.advance_turn()
        await asyncio.sleep(0)

    run_cell(cell)
    assert updates(sent, d.slider) == [{"max": 2, "value": 2}, *REBUILT]
    idle.close()
    d.close()


def test_code_reading_the_dashboard_in_the_same_cell_reads_what_it_will_show(sent: list, in_kernel: None) -> None:
    import asyncio

    s = make_session(Inbox, Tasks)
    s.trinket("Tasks").add("index the wiki", ttl=30)
    d = Dashboard(s)

    async def cell() -> tuple[str, str]:
        s.advance_turn(3)
        value = read(d.panel("async_activity").value)["meta"]  # before the cell returns
        await asyncio.sleep(0)
        return value, read(d.panel("async_activity").value)["meta"]

    assert run_cell(cell) == ("trinket Tasks · 29 chars · segment turn 3",) * 2
    d.close()


# -- options are validated traits ------------------------------------------------------------------
def test_every_option_is_checked_at_every_assignment_and_a_refused_value_changes_nothing(sent: list) -> None:
    d = Dashboard(make_session(Inbox, Tasks))
    for name, bad, error, message in [
        ("preview_chars", 0, ValueError, "preview_chars must be an int >= 1, got 0"),
        ("preview_chars", "9", TypeError, "preview_chars must be an int >= 1, got '9'"),
        ("preview_chars", True, TypeError, "preview_chars must be an int >= 1, got True"),
        ("log_rows", -1, ValueError, "log_rows must be an int >= 0, got -1"),
        ("coalesce", 1, TypeError, "coalesce must be True or False, got 1"),
        ("cache_model", 3, TypeError, "cache_model must be a str, got int"),
    ]:
        before = getattr(d, name)
        with pytest.raises(error, match=re.escape(message)):
            setattr(d, name, bad)
        assert getattr(d, name) == before
    d.preview_chars, d.log_rows, d.coalesce = 5, 0, False
    assert (d.model.preview_chars, d.model.log_rows, d.model.coalesce) == (5, 0, False)
    d.close()


def test_an_unknown_or_removed_option_is_an_error_naming_the_options(sent: list) -> None:
    s = make_session(Inbox)
    with pytest.raises(
        TypeError,
        match=re.escape(
            "unknown Dashboard option 'lookahead'; the options are preview_chars, log_rows, "
            "cache_model, coalesce, compose and replace"
        ),
    ):
        Dashboard(s, lookahead=1.5)
    with pytest.raises(ValueError, match="log_rows must be an int >= 0, got -2"):
        Dashboard(s, log_rows=-2)
    with pytest.raises(TypeError, match="compose must be True or False, got 'no'"):
        Dashboard(s, compose="no")  # type: ignore[arg-type]
    d = Dashboard(s)
    with pytest.raises(AttributeError):
        d.session = make_session(Inbox)  # type: ignore[misc]
    assert d.session is s and d.model.session is s
    d.close()


# -- a faulty trinket is isolated ---------------------------------------------------------------------
class BadCountdown(Tasks):
    """A stateful trinket whose describe_items() answers a turns_remaining that is not a number."""

    variable_name = "bad_countdown"

    def describe_items(self) -> list[dict[str, Any]]:
        return [{"id": "x", "label": "x", "turns_remaining": "soon"}]


def test_a_trinket_whose_items_cannot_be_read_shows_its_error_and_the_others_work(sent: list) -> None:
    s = make_session(Tasks, BadCountdown)
    s.trinket("Tasks").add("crawl", ttl=2)
    d = Dashboard(s)  # no exception: the faulty trinket is isolated
    bad = d.panel("bad_countdown")
    assert bad.title == "bad_countdown · BadCountdown · ⚠ failed"
    assert read(bad.value)["note"] == (
        "no content: the section is left out error describe_items() failed: TypeError: item 'x': "
        "turns_remaining must be an int or None, got 'soon' its items are not shown"
    )
    assert read(d.panel("async_activity").value)["items"] == [("crawl", "2")]
    d.advance(1)  # turns go on; the others still count down
    assert read(d.panel("async_activity").value)["items"] == [("crawl", "1")]
    assert bars(d) == [("crawl", "live", "1")]
    d.close()


# -- play's stop, the saved view ----------------------------------------------------------------------
def test_play_and_stop_are_labelled_and_stop_stays_on_the_turn_reached(sent: list) -> None:
    from wm_kernel.jupyter.dashboard.controls import PLAY_TOOLTIP, STOP_TOOLTIP

    s = make_session(Inbox)
    d = Dashboard(s)
    d.advance(4)
    assert [(b.description, b.icon, b.tooltip) for b in (d.play_button, d.stop_button)] == [
        ("Play", "play", PLAY_TOOLTIP),
        ("Stop", "stop", STOP_TOOLTIP),
    ]
    assert d.play.layout.display == "none"  # the unlabelled control only keeps time
    d.play_button.click()
    assert d.play.playing
    for turn in (0, 1, 2):  # replaying: the browser's timer moves the slider
        play_from_frontend(d, turn)
    d.stop_button.click()
    assert not d.play.playing
    # stop pauses where it is: the turn it reached stays on view, read-only
    assert (d.driver.mode, d.driver.shown, d.viewing_turn, d.slider.value) == ("replay", 2, 2, 2)
    d.play_button.click()  # play again goes on from there
    play_from_frontend(d, 3)
    play_from_frontend(d, 4)  # the latest turn: live again
    assert (d.driver.mode, d.viewing_turn) == ("live", None)
    d.close()


def test_a_saved_dashboard_carries_the_line_and_style_that_show_when_no_kernel_is_connected(sent: list) -> None:
    d = Dashboard(make_session(Inbox))
    assert "wm-dashboard" in d._dom_classes and "wm-tabs" in d.tabs._dom_classes
    assert "wm-notice" in d.notice._dom_classes
    assert d.children[1] is d.notice
    assert text_of(d.notice.value.split("<style>")[0]) == (
        "a saved view: run the notebook's cells to bring this dashboard to life"
    )
    style = d.notice.value.split("<style>")[1]
    assert ".wm-dashboard.jupyter-widgets-disconnected .wm-offline { display: block; }" in style
    assert ".wm-dashboard .wm-offline { display: none; }" in style
    # the controls that would do nothing offline are the boxes marked wm-controls
    controls = [c for c in d.children if "wm-controls" in getattr(c, "_dom_classes", ())]
    assert [list(c.children) for c in controls] == [
        [d.play, d.play_button, d.stop_button, d.slider],
        [d.advance_count, d.advance_button, d.summary, d.collapse_button],
    ]
    # offline the banner's head ("live") is hidden: it is marked
    assert '<span class="wm-live"><b>live</b> · </span>' in d.banner.value
    # a tab never opened says so in a saved notebook, instead of being blank
    assert text_of(d.budget.value) == "drawn when this tab is opened in a running notebook"
    d.close()


# -- a dashboard opened late shows the whole recorded history ------------------------------------------
def test_a_dashboard_opened_late_shows_every_turns_items_and_changes(sent: list) -> None:
    s = make_session(PeanutGalleryTrinket)
    s.compose()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=1)
    s.advance_turn(3)  # the guidance expired at turn 2
    d = Dashboard(s)  # opened at turn 3
    overview_text = text_of(d.overview.value)
    assert "no items yet" not in overview_text
    assert "the first compose" not in overview_text
    assert "turn 2 → turn 3" in overview_text
    assert [(item, state) for item, state, _ in bars(d)] == [("guidance-1", "expired")]
    d.viewing_turn = 1
    panel = read(d.panel("peanutgallery_guidance").value)
    assert panel["items"] == [("concern: Slow down.", "0")]
    assert "Slow down." in panel["text"]
    d.close()


def test_the_cache_strip_names_the_turns_it_covers(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s, cache_model="claude-haiku-4-5")
    d.advance(3)
    d.tabs.selected_index = d.tabs.children.index(d.cache)
    assert text_of(d.cache.value).startswith(
        "turns 0-3 · claude-haiku-4-5 on the anthropic wire: 0% of input tokens read from the cache"
    )
    d.close()


def test_turns_before_any_item_record_say_so_instead_of_no_live_items(sent: list) -> None:
    from wm_kernel.instruments.history import History

    # a session without the ItemHistory every Session attaches by default: the dashboard starts
    # one when it opens, so the items of the turns before are not known
    s = Session(
        base_prompt="You help.",
        trinkets=[PeanutGalleryTrinket],
        instruments=[History.attach],
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
    )
    s.compose()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=3)
    s.advance_turn(2)
    d = Dashboard(s)
    d.viewing_turn = 1
    panel = read(d.panel("peanutgallery_guidance").value)
    assert "items" not in panel
    assert panel["note"] == ("its items' countdowns were not recorded at this turn (the dashboard was opened later)")
    assert "Slow down." in panel["text"]
    d.close()


def test_the_request_tab_follows_the_slider(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s, cache_model="gpt-5.4")
    d.advance(2)
    d.tabs.selected_index = d.tabs.children.index(d.controls.request)
    live = text_of(d.controls.request.value)
    assert live.startswith("turn 2, openai request for gpt-5.4: ")
    d.controls.slider.value = 0
    assert text_of(d.controls.request.value).startswith("turn 0, openai request for gpt-5.4: ")
    d.model.cache_model = "gemini-2.5-pro"  # a model the wire view cannot build a body for
    assert "is a google model" in text_of(d.controls.request.value)
    d.close()


def test_the_replies_tab_says_when_nothing_was_sent(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    d.tabs.selected_index = d.tabs.children.index(d.controls.replies)
    assert "nothing" in text_of(d.controls.replies.value).lower()
    d.close()


def test_a_capped_sections_panel_says_its_cap_and_how_full_it_is(sent: list) -> None:
    s = make_session(Inbox, PeanutGalleryTrinket)
    gallery = s.trinket("PeanutGalleryTrinket")
    for i in range(6):
        gallery.add_guidance("concern", f"Point {i}: check the units before you answer.", ttl=10)
    s.working_memory.set_cap("PeanutGalleryTrinket", 60)
    d = Dashboard(s)
    meta = text_of(d.panel("peanutgallery_guidance").status.value + d.panel("peanutgallery_guidance").text.value)
    [result] = s.composed.budget.caps
    assert f"hard cap of 60 tokens: {result.share:.0%} full, {result.action}" in meta
    s.working_memory.set_cap("PeanutGalleryTrinket", 5000, mode="soft")
    s.compose()
    meta = text_of(d.panel("peanutgallery_guidance").status.value + d.panel("peanutgallery_guidance").text.value)
    assert "soft cap of 5,000 tokens: " in meta and "full, " not in meta
    d.close()


def test_the_ipywidgets_dashboard_says_it_goes(sent: list) -> None:
    with pytest.warns(FutureWarning, match=r"deprecated and goes in the next release: use wm_kernel.Dashboard"):
        Dashboard(make_session(Inbox)).close()
