"""The event log's views are built one way (wm_kernel/display/event_log.py): the %wm_events table
and the dashboard's rows say the same of every event."""

from __future__ import annotations

from typing import Any

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import TurnCompletedEvent
from wm_kernel.display.event_log import TABLE_COLUMNS, event_row_html, events_table
from wm_kernel.session import Session
from wm_kernel.utils import style


def logged_session() -> Session:
    s = Session(base_prompt="Hi.", clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[], auto_compose=False)

    def refuse(event: Any) -> None:
        raise RuntimeError("no <turns> today")

    s.bus.subscribe(TurnCompletedEvent, refuse)
    s.compose()
    s.advance_turn()
    return s


def test_the_table_has_one_row_per_event_in_publish_order() -> None:
    records = list(logged_session().bus.log)
    frame = events_table(records)
    assert [frame.index.name, *frame.columns] == TABLE_COLUMNS
    assert list(frame["event"]) == ["ComposeSystemPromptEvent", "SystemPromptComposedEvent", "TurnCompletedEvent"]
    assert list(frame["occurred_at"]) == ["2026-11-30T09:00:00+00:00"] * 3
    assert list(frame["failures"])[-1] == "logged_session.<locals>.refuse: RuntimeError: no <turns> today"


def test_the_dashboard_rows_say_what_the_table_says() -> None:
    records = list(logged_session().bus.log)
    rows = [event_row_html(r) for r in records]
    assert rows[-1] == (
        '<tr><td>3</td><td style="padding-left:4px">TurnCompletedEvent</td><td>'
        + records[-1].as_row()["detail"]
        + f'</td><td style="color:{style.ERROR}">'
        "logged_session.&lt;locals&gt;.refuse: RuntimeError: no &lt;turns&gt; today</td></tr>"
    )
