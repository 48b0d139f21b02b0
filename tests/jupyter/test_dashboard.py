"""The live dashboard (one anywidget), without a browser: its comm records every message it is asked
to send, and the tests count and read them; the front end's actions arrive through the comm's
message handler as the browser sends them."""

from __future__ import annotations

import html
import itertools
import json
import re
import warnings
from collections.abc import Callable
from typing import Any

import comm
import pytest
from traitlets import TraitError

from trinkets.base import EventAwareTrinket, StatefulTrinket
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.jupyter.dashboard.model import TABS
from wm_kernel.jupyter.dashboard.snapshot import OFFLINE_LINE
from wm_kernel.jupyter.dashboard.widget import STATIC, Dashboard
from wm_kernel.session import Session


# -- reading what a user sees (structure and text, not styling) --------------------------------------
def text_of(fragment: str) -> str:
    """The text a browser shows for an HTML fragment: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def read(body: str) -> dict[str, Any]:
    """A panel's HTML as its parts: meta line, note, items as (label, turns remaining) rows and the
    section text; only the parts present."""
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


def updates(log: list[tuple[RecordingComm, Any]]) -> list[dict[str, Any]]:
    """The states of the update messages the kernel sent, as they go over the wire (JSON)."""
    return [json.loads(json.dumps(data["state"])) for _, data in log if data["method"] == "update"]


def texts_sent(d: Dashboard, state: dict[str, Any]) -> dict[str, str]:
    """Section -> the text an update carries (each section's text is a synced trait of its own)."""
    return {section: state[slot] for section, slot in d.text_slots.items() if slot in state}


def from_frontend(d: Dashboard, **state: Any) -> None:
    """Deliver a change of synced traits as the browser does (the slider, the play timer, a tab)."""
    d.comm.handler({"content": {"data": {"method": "update", "state": state}}, "buffers": []})


def act(d: Dashboard, **content: Any) -> None:
    """Deliver a button's or switch's action message as the browser does (``model.send``)."""
    d.comm.handler({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


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
    """Background tasks, each shown for a number of turns; ``countdown`` False: the text does not
    count down (only the items table does)."""

    variable_name = "async_activity"
    countdown = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tasks: list[tuple[str, int]] = []  # (name, last turn shown)

    def add(self, name: str, ttl: int) -> None:
        self.tasks.append((name, self.current_turn + ttl))

    def describe_items(self) -> list[dict[str, Any]]:
        return [{"id": name, "label": name, "turns_remaining": last - self.current_turn} for name, last in self.tasks]

    def generate_content(self, context: dict[str, Any]) -> str:
        if not self.countdown:
            return "\n".join(name for name, _ in self.tasks)
        return "\n".join(f"{name}: {last - self.current_turn} turns left" for name, last in self.tasks)

    def _expire_items(self) -> bool:
        kept = [t for t in self.tasks if self.current_turn <= t[1]]
        expired = len(kept) != len(self.tasks)
        self.tasks = kept
        return expired

    def _clear_all_state(self) -> None:
        self.tasks = []


class QuietTasks(Tasks):
    countdown = False


def make_session(*trinkets: type[EventAwareTrinket]) -> Session:
    return Session(
        base_prompt="You help {first_name}.", trinkets=list(trinkets), clock=ManualClock("2026-11-30T09:00:00+00:00")
    )


# -- structure ---------------------------------------------------------------------------------------
def test_one_panel_per_section_grouped_by_placement_and_tabs_from_the_model(sent: list) -> None:
    s = make_session(Inbox, Location, Tasks, PeanutGalleryTrinket)
    d = Dashboard(s)
    assert d.sections == {
        "system_cached": ["base_prompt", "location_context"],
        "system_uncached": [],
        "conversation_prefix": [],
        "post_history": [],
        "notification": ["async_activity", "inbox_status", "peanutgallery_guidance"],
    }
    assert d.section_names() == d.sections
    # the tabs are the model's list: a new entry there is a new tab in every front end
    assert [(t["key"], t["title"], t["kind"]) for t in d.tabs] == [(t.key, t.title, t.kind) for t in TABS]
    assert [t["title"] for t in d.tabs] == [
        "overview",
        "system cached",
        "system uncached",
        "conv. prefix",
        "post-history",
        "notification",
        "budget",
        "cache",
        "plan",
        "request",
        "replies",
        "trinkets",
        "event log",
    ]
    assert d.tab == "overview" and "items: when each lives" in text_of(d.tab_html)
    # sections with nothing to show fold to their title line
    assert d.panels["peanutgallery_guidance"]["empty"] is True
    assert d.panels["inbox_status"] == {"title": "inbox_status · Inbox", "status": "", "empty": False}
    assert read(d.texts["inbox_status"]) == {"meta": "trinket Inbox · 8 chars", "text": "2 unread"}
    assert read(d.texts["location_context"]) == {
        "meta": "trinket Location · 22 chars · cached",
        "text": "The user is in London.",
    }
    assert d.switches == [
        {"trinket": "Inbox", "label": "Inbox (inbox_status)", "enabled": True},
        {"trinket": "Location", "label": "Location (location_context)", "enabled": True},
        {"trinket": "Tasks", "label": "Tasks (async_activity)", "enabled": True},
        {
            "trinket": "PeanutGalleryTrinket",
            "label": "PeanutGalleryTrinket (peanutgallery_guidance)",
            "enabled": True,
        },
    ]
    d.close()


def test_every_drawn_tab_of_the_model_has_a_renderer(sent: list) -> None:
    s = make_session(Inbox)
    s.advance_turn()
    d = Dashboard(s)
    for tab in TABS:
        if tab.kind == "drawn":
            d.tab = tab.key
            assert d.tab_html and "drawn when this tab is opened" not in d.tab_html, tab.key
    d.close()


def test_bad_arguments_are_clear_errors_and_change_nothing(sent: list) -> None:
    s = make_session(Inbox)
    with pytest.raises(TypeError, match="Dashboard needs a Session, got str"):
        Dashboard("session")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="preview_chars must be an int >= 1, got 0"):
        Dashboard(s, preview_chars=0)
    with pytest.raises(TypeError, match="unknown Dashboard option 'colour'"):
        Dashboard(s, colour="red")
    d = Dashboard(s)
    s.advance_turn(2)
    with pytest.raises(ValueError, match=r"viewing_turn must be None \(live\) or an earlier turn, 0 to 1; got 2"):
        d.viewing_turn = 2
    assert d.viewing_turn is None
    with pytest.raises(ValueError, match="no panel for section 'nope'"):
        d.panel("nope")
    with pytest.raises(TraitError, match="'blue'"):
        d.theme = "blue"
    assert d.theme == "auto"
    with pytest.raises(ValueError, match=r"no switch for trinket 'Nope' \(trinkets: Inbox\)"):
        d.set_enabled("Nope", False)
    d.close()


# -- message economy ---------------------------------------------------------------------------------
def test_one_turn_sends_one_message_with_what_changed_and_fewer_than_the_ipywidgets_one(sent: list) -> None:
    from wm_kernel.jupyter.dashboard.legacy import IpywidgetsDashboard

    def one_turn(make: Callable[[Session], Any]) -> list[dict[str, Any]]:
        s = make_session(Inbox, Location, Tasks)
        s.trinket("Tasks").add("index the wiki", ttl=3)
        d = make(s)
        sent.clear()
        s.advance_turn()
        messages = [data for _, data in sent]
        if isinstance(d, Dashboard):
            texts.update(texts_sent(d, messages[0]["state"]))
        d.close()
        return messages

    texts: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        before = one_turn(IpywidgetsDashboard)
    after = one_turn(Dashboard)
    # the ipywidgets dashboard: slider (and its rebuild), play's end, banner, the open overview,
    # the tasks panel's countdown and text: 8 messages; the anywidget: one
    assert len(before) == 8
    assert len(after) == 1 and after[0]["method"] == "update"
    state = after[0]["state"]
    # the one text that changed goes in its own slot; the others are not sent
    assert sorted(k for k in state if not k[1:].isdigit()) == ["banner", "latest", "panels", "tab_html", "turn"]
    assert list(texts) == ["async_activity"]
    assert (state["turn"], state["latest"]) == (1, 1)
    assert text_of(state["banner"]) == "live · turn 1 · segment 1 (segment turn 1)"
    assert read(state["panels"]["async_activity"]["status"]) == {
        "meta": "trinket Tasks · 28 chars · segment turn 1",
        "items": [("index the wiki", "2")],
    }
    assert read(texts["async_activity"]) == {"text": "index the wiki: 2 turns left"}


def test_a_countdown_alone_does_not_resend_the_texts(sent: list) -> None:
    s = make_session(Inbox, QuietTasks)
    s.trinket("QuietTasks").add("index the wiki", ttl=3)
    d = Dashboard(s)
    sent.clear()
    s.advance_turn()
    [state] = updates(sent)
    assert texts_sent(d, state) == {}  # the items table counted down; no text changed
    assert read(state["panels"]["async_activity"]["status"])["items"] == [("index the wiki", "2")]
    d.close()


def test_a_turn_that_changes_no_section_sends_only_the_controls(sent: list) -> None:
    s = make_session(Inbox, Location)
    d = Dashboard(s)
    sent.clear()
    s.advance_turn(3)
    # three turns from another cell: each settles once, with the slider, banner and open tab
    assert [sorted(u) for u in updates(sent)] == [["banner", "latest", "tab_html", "turn"]] * 3
    assert [(u["turn"], u["latest"]) for u in updates(sent)] == [(1, 1), (2, 2), (3, 3)]
    d.close()


def test_a_change_from_another_cell_sends_only_its_text(sent: list) -> None:
    s = make_session(Inbox, Location)
    d = Dashboard(s)
    sent.clear()
    s.trinket("Inbox").text = "5 unread, 1 urgent"
    s.trinket("Inbox").request_update()
    [state] = updates(sent)
    # its text alone, in its slot: not the base prompt's nor the location's
    assert list(state) == [d.text_slots["inbox_status"]]
    assert read(state[d.text_slots["inbox_status"]]) == {
        "meta": "trinket Inbox · 18 chars",
        "text": "5 unread, 1 urgent",
    }
    d.close()


# -- the slider, play and the buttons, as the browser drives them ------------------------------------
def test_the_slider_travels_in_time_and_never_changes_the_session(sent: list) -> None:
    s = make_session(Inbox, Tasks)
    s.trinket("Tasks").add("index the wiki", ttl=5)
    d = Dashboard(s)
    d.advance(3)
    composes = len(s.recorder.turns)
    sent.clear()

    from_frontend(d, turn=1)
    assert s.turn == 3 and d.driver.mode == "replay" and d.viewing_turn == 1
    assert d.status == (
        "viewing turn 1 (read-only) · the prompt as composed at turn 1 · "
        "move the slider to turn 3 to resume the live view"
    )
    assert read(d.panel("async_activity").status)["meta"] == "turn 1 (read-only) · trinket Tasks · 28 chars"
    assert d.read_only is True
    # one message back: the panels of turn 1, the banner, the open tab, the switches' lock
    assert len(updates(sent)) == 1

    from_frontend(d, turn=99)  # past the end: the live view, and the slider put back on it
    assert d.viewing_turn is None and d.turn == 3 and d.read_only is False
    assert len(s.recorder.turns) == composes  # travelling composed nothing
    d.close()


def test_play_is_the_front_ends_timer_and_stop_stays_on_the_turn_reached(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    d.advance(3)
    d.play()
    assert d.playing is True
    assert updates(sent)[-1] == {"playing": True}
    for turn in (0, 1):  # the timer's ticks
        from_frontend(d, turn=turn)
    from_frontend(d, playing=False)  # Stop
    assert d.playing is False and d.turn == 1 and d.viewing_turn == 1 and s.turn == 3
    d.close()


def test_advance_and_collapse_buttons_drive_the_live_session(sent: list) -> None:
    s = make_session(Inbox, Tasks)
    d = Dashboard(s)
    from_frontend(d, turn=0)
    sent.clear()
    act(d, do="advance", n=2)
    assert s.turn == 2 and d.turn == 2 and d.viewing_turn is None  # back to live
    assert len(updates(sent)) == 1
    act(d, do="collapse", summary="planning chat")
    assert s.segment_number == 2 and d.error == ""
    d.close()


def test_a_refused_action_shows_one_line_in_the_dashboard_and_changes_nothing(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    act(d, do="advance", n=0)
    assert text_of(d.error) == "error ValueError: advance takes a whole number of turns >= 1, got 0"
    assert s.turn == 0
    act(d, do="dance")
    assert text_of(d.error) == "error ValueError: unknown dashboard action 'dance' (advance, collapse, switch)"
    act(d, do="advance", n=1)
    assert d.error == "" and s.turn == 1
    act(d, kind="anywidget-command", name="other", msg={})  # another protocol's: not ours to refuse
    assert d.error == "" and s.turn == 1
    d.close()


def test_a_switch_turns_a_trinket_off_and_is_refused_on_an_earlier_turn(sent: list) -> None:
    s = make_session(Inbox, Location)
    d = Dashboard(s)
    sent.clear()
    act(d, do="switch", trinket="Inbox", enabled=False)
    inbox = s.trinket("Inbox")
    assert inbox.enabled is False and "inbox_status" not in s.compose().section_names()
    assert d.panels["inbox_status"]["title"] == "inbox_status · Inbox · disabled"
    assert d.switches[0] == {"trinket": "Inbox", "label": "Inbox (inbox_status)", "enabled": False}
    inbox.set_enabled(True)  # from code: the switch follows
    assert d.switches[0]["enabled"] is True

    s.advance_turn()
    from_frontend(d, turn=0)
    act(d, do="switch", trinket="Inbox", enabled=False)
    assert text_of(d.error) == ("error ValueError: turn 0 is on view, read-only: move to the live turn to switch")
    assert inbox.enabled is True and d.switches[0]["enabled"] is True  # the browser's box put back
    d.close()


# -- what is shown -----------------------------------------------------------------------------------
def test_hostile_content_is_shown_as_text(sent: list) -> None:
    s = make_session(Inbox)
    s.trinket("Inbox").text = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    d = Dashboard(s)
    assert read(d.texts["inbox_status"])["text"] == '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    wire = json.dumps([data for _, data in sent])
    assert "<img" not in wire and "<script" not in wire
    d.close()


def test_a_5_mb_section_sends_a_truncated_preview(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    sent.clear()
    inbox = s.trinket("Inbox")
    inbox.text = "<x>" + "y" * 5_000_000
    inbox.request_update()
    assert read(d.texts["inbox_status"]) == {
        "meta": "trinket Inbox · 5,000,003 chars",
        "text": "<x>" + "y" * 19_997 + "\n[preview: the first 20,000 of 5,000,003 characters]",
    }
    assert len(json.dumps([data for _, data in sent])) < 30_000
    d.close()


def test_a_saved_or_widgetless_view_shows_the_last_view_and_one_line(sent: list) -> None:
    s = make_session(Inbox)
    d = Dashboard(s)
    d.advance(2)
    data, _ = d._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == d.model_id
    shown = text_of(data["text/html"])
    assert "live · turn 2 · segment 1 (segment turn 2)" in shown
    assert OFFLINE_LINE in shown and "2 unread" in shown
    assert "Error displaying widget" not in data["text/html"]
    # the front end shows the same line, and only where no kernel is connected
    assert OFFLINE_LINE in (STATIC / "dashboard.js").read_text("utf-8")
    assert ".jupyter-widgets-disconnected .wm-dash .wm-offline { display: block; }" in (
        STATIC / "dashboard.css"
    ).read_text("utf-8")
    d.close()


# -- closing -----------------------------------------------------------------------------------------
def _observer_count(*owners: Any) -> int:
    return sum(
        len(handlers) for owner in owners for kinds in owner._trait_notifiers.values() for handlers in kinds.values()
    )


def test_close_removes_every_observer_it_added_and_a_rerun_replaces_the_last(sent: list) -> None:
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
    second = Dashboard(s)  # the cell ran again: the first one is closed for us
    assert first.closed and not second.closed and footprint() == one
    second.close()
    assert footprint() == before
    sent.clear()
    s.trinket("Inbox").text = "after close"
    s.advance_turn()
    assert sent == []


# -- the replies and budget tabs ----------------------------------------------------------------------
def a_long_log(path: Any, requests: int) -> Any:
    """An Anthropic request log of one conversation of ``requests`` requests, each carrying the
    answers so far; every third answer is a tool call (a block a log keeps as JSON), whose result
    comes back in the next user message."""
    lines = []
    messages: list[dict[str, Any]] = []
    for i in range(requests):
        asked: list[dict[str, Any]] = [{"type": "text", "text": f"Question {i}?"}]
        if i and (i - 1) % 3 == 0:
            asked.insert(0, {"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": f"in depot {i - 1}"})
        messages = [*messages, {"role": "user", "content": asked}]
        lines.append(
            {
                "timestamp": f"2026-11-30T{9 + i // 60:02d}:{i % 60:02d}:00Z",
                "request_id": f"req_{i}",
                "request": {
                    "model": "claude-sonnet-4-6",
                    "max_tokens": 256,
                    "system": [{"type": "text", "text": "You answer parcel questions."}],
                    "messages": messages,
                },
            }
        )
        answer: list[dict[str, Any]] = (
            [{"type": "tool_use", "id": f"t{i}", "name": "track_parcel", "input": {"tracking": f"PX{i}"}}]
            if i % 3 == 0
            else [{"type": "text", "text": f"Answer {i}."}]
        )
        messages = [*messages, {"role": "assistant", "content": answer}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def replies_rows(page: str) -> list[tuple[bool, str, str, str]]:
    """The replies table as (marked, turn, user, reply) rows."""
    rows = re.findall(r"<tr([^>]*)>(.*?)</tr>", page, re.S)
    out = []
    for attributes, cells in rows:
        values = [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", cells, re.S)]
        if values:
            out.append(('aria-current="true"' in attributes, values[0], values[2], values[3]))
    return out


def test_the_replies_tab_shows_text_follows_the_slider_and_windows_156_turns(sent: list, tmp_path: Any) -> None:
    from wm_kernel.interop import import_log

    live = import_log(a_long_log(tmp_path / "long.jsonl", 156)).to_session()
    d = Dashboard(live)
    d.tab = "replies"
    rows = replies_rows(d.tab_html)
    # the latest turn on view: the last 20 of 156, the turn on view marked
    assert "rows 137-156 of 156 (turns 136-155): the slider moves this window" in text_of(d.tab_html)
    assert len(rows) == 20 and rows[-1][:2] == (True, "155") and not any(r[0] for r in rows[:-1])
    # text, not the log's JSON: a tool call is one readable line
    assert rows[-3][2:] == ("Question 153?", 'calls track_parcel({"tracking": "PX153"})')
    assert rows[-2][2:] == ("tool result: in depot 153\n\nQuestion 154?", "Answer 154.")
    assert '{"type"' not in d.tab_html
    from_frontend(d, turn=40)  # the slider moves the window, centred on the turn on view
    rows = replies_rows(d.tab_html)
    assert "rows 31-50 of 156 (turns 30-49)" in text_of(d.tab_html)
    assert [r[1] for r in rows if r[0]] == ["40"]
    from_frontend(d, turn=0)
    assert "rows 1-20 of 156 (turns 0-19)" in text_of(d.tab_html)
    d.close()


BUDGET = 95  # the base prompt (87 tokens) and one of the two small sections


def test_the_budget_tab_has_a_legend_of_its_colours(sent: list) -> None:
    s = make_session(Inbox, Location)
    s.working_memory.token_budget = BUDGET
    d = Dashboard(s)
    s.compose()
    d.tab = "budget"
    legend = re.search(r'<ul class="wm-legend".*?</ul>', d.tab_html, re.S)
    assert legend is not None
    items = [text_of(item) for item in re.findall(r"<li[^>]*>(.*?)</li>", legend.group(0))]
    kept = [name for name in ("base_prompt", "location_context", "inbox_status") if name in items]
    assert kept and items[len(kept) :] == ["dropped over budget", f"budget {BUDGET}"]
    # each swatch is the colour its section has in the bars
    for name in kept:
        colour = re.search(rf'background:(#[0-9a-f]{{6}})"></span>{name}<', legend.group(0))
        assert colour is not None and f'fill="{colour.group(1)}"' in d.tab_html
    d.close()
