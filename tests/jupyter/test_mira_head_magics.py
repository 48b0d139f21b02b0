"""MIRA HEAD's five trinkets in a notebook: ``Session(trinkets=MIRA_HEAD_TRINKETS)``, their
``%trinket`` commands, their rows in ``%trinkets``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from trinkets import BUILTIN_NAMES, MIRA_HEAD_NAMES, MIRA_HEAD_TRINKETS
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session, set_current_session


@pytest.fixture
def session() -> Iterator[Session]:
    s = Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada", timezone="Europe/London"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=MIRA_HEAD_TRINKETS,
    )
    set_current_session(s)
    yield s
    set_current_session(None)


def test_one_argument_registers_mira_head_s_thirteen_and_the_default_stays_eight(session: Session) -> None:
    assert list(session.trinkets) == list(MIRA_HEAD_NAMES)
    assert len(MIRA_HEAD_NAMES) == 13 and MIRA_HEAD_NAMES[:8] == BUILTIN_NAMES
    assert list(Session(clock=ManualClock("2026-11-30T09:00:00+00:00")).trinkets) == list(BUILTIN_NAMES)


def test_trinket_commands_feed_each_of_the_five(ip: Any, session: Session) -> None:
    ip.run_line_magic("trinket", 'forage report f1 pending --query "tide tables"')
    ip.run_line_magic(
        "trinket",
        "forage report f1 in_progress --query tides --iteration 1 --max-iterations 3 --summary 'Read <NOAA>.'",
    )
    ip.run_line_magic("trinket", "forage report f2 timeout --query comets --elapsed 90 --iteration 2")
    ip.run_line_magic("trinket", "forage dismiss f2")
    ip.run_line_magic("trinket", "whilethecatsaway report w1 failed --topic moons --error offline")
    ip.run_line_magic("trinket", "email add INBOX:4 --from 'Bea <bea@example.org>' --subject Lunch --date Mon")
    ip.run_line_magic(
        "trinket",
        "location set Brighton, England --sunrise '7:41 AM' --sunset '3:58 PM' --uv 11 "
        "--forecast '10 AM | 8°C | Drizzle | 60'",
    )
    ip.run_line_magic("trinket", "async_activity add email Filed three receipts")
    ip.run_line_magic("trinket", "async_activity add calendar Two rules claim 9am --status conflict")
    hud = session.compose()["notification_center"]
    assert (
        "<async_activity>\n[email]\n  Filed three receipts [just now]\n[calendar]\n"
        "  RULE CONFLICT: Two rules claim 9am [just now]\n</async_activity>"
    ) in hud
    assert '<email uid="INBOX:4" from="Bea &lt;bea@example.org&gt;" subject="Lunch" date="Mon"/>' in hud
    assert (
        "<forage_results>\n"
        '<result type="in_progress" task_id="f1" query="tides" iteration="1/3">\n'
        "[1] Read &lt;NOAA&gt;.\n"
        "</result>\n"
        "</forage_results>"
    ) in hud
    assert (
        '<result type="failed" task_id="w1" topic="moons" turns_remaining="8">\n'
        "Background research failed: offline\n</result>"
    ) in hud
    assert session.composed is not None
    assert session.composed["cached_content"].endswith(
        "=== Location Context ===\n"
        "Location: Brighton, England\n"
        "Sunrise: 7:41 AM / Sunset: 3:58 PM\n"
        "⚠️ UV INDEX: 11 (EXTREME) — Dangerous sun exposure levels\n"
        "Forecast (next 2 hours):\n"
        "- 10 AM: 8°C, Drizzle, 60% chance of rain"
    )
    ip.run_line_magic("trinket", "email clear")
    ip.run_line_magic("trinket", "location clear")
    ip.run_line_magic("trinket", "async_activity status 1 dismissed")
    composed = session.compose()
    assert "<inbox_status>" not in composed["notification_center"]
    assert "Location Context" not in composed["cached_content"]
    assert "Filed three receipts" not in composed["notification_center"]


def test_a_bad_command_line_is_a_usage_error_and_changes_nothing(ip: Any, session: Session) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError):
        ip.run_line_magic("trinket", "forage report f1 finished")
    with pytest.raises(UsageError):
        ip.run_line_magic("trinket", "location set Oslo --forecast 'only | three | parts'")
    assert dict(session.trinket("ForageTrinket").results) == {}  # type: ignore[attr-defined]
    assert session.trinket("LocationTrinket").payload is None  # type: ignore[attr-defined]


def test_each_has_a_row_in_trinkets(ip: Any, session: Session) -> None:
    session.trinket("ForageTrinket").request_update(task_id="f", status="pending", query="q")
    session.compose()
    table = ip.run_line_magic("trinkets", "")
    frame = getattr(table, "frame", table)
    rows = frame.loc[
        ["LocationTrinket", "AsyncActivityTrinket", "EmailTrinket", "ForageTrinket", "WhileTheCatsAwayTrinket"]
    ]
    assert rows["section"].tolist() == [
        "location_context",
        "async_activity",
        "inbox_status",
        "forage_results",
        "whilethecatsaway_results",
    ]
    assert rows["placement"].tolist() == ["system", "notification", "notification", "notification", "notification"]
    assert rows["stateful"].tolist() == [False, False, True, True, True]
    assert rows.loc["ForageTrinket", "size"] > 0


def test_hostile_text_is_escaped_in_the_dashboard(session: Session) -> None:
    pytest.importorskip("ipywidgets")
    from wm_kernel import Dashboard

    hostile = "<script>alert('x')</script> & \"q\""
    wm = session.working_memory
    wm.publish_trinket_update("ForageTrinket", {"task_id": hostile, "status": "pending", "query": hostile})
    wm.publish_trinket_update("EmailTrinket", {"data": [{"uid": "INBOX:1", "from_addr": hostile, "subject": hostile}]})
    session.trinket("AsyncActivityTrinket").set_activity(  # type: ignore[attr-defined]
        [
            {
                "id": 1,
                "interface_name": hostile,
                "summary": hostile,
                "status": "handled",
                "updated_at": "2026-11-30 09:00:00",
            }
        ]
    )
    session.trinket("LocationTrinket").set_location({"location_name": hostile})  # type: ignore[attr-defined]
    board = Dashboard(session)
    for section in ("forage_results", "inbox_status", "async_activity", "location_context"):
        shown = board.panel(section).html
        assert "<script>" not in shown and "script" in shown, section  # escaped (twice where MIRA escapes)
