"""AsyncActivityTrinket (MIRA HEAD): the sidebar's exact text, its order and grouping, ages from
the session's clock at compose time, hidden statuses, html escaping as MIRA's."""

from __future__ import annotations

from typing import Any

import pytest

from trinkets import AsyncActivityTrinket
from trinkets.async_activity_trinket import age
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import SegmentCollapsedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory


def row(n: int, interface: str, summary: str, status: str, updated: str, reason: str | None = None) -> dict[str, Any]:
    return {
        "id": n,
        "interface_name": interface,
        "thread_id": f"th{n}",
        "agent_id": "a",
        "summary": summary,
        "status": status,
        "escalation_reason": reason,
        "run_count": 1,
        "created_at": "2026-11-29 08:00:00",
        "updated_at": updated,
    }


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock("2026-11-30T09:00:00+00:00")


@pytest.fixture
def sidebar(clock: ManualClock) -> AsyncActivityTrinket:
    wm = WorkingMemory(EventBus(), clock=clock, profile=Profile(), continuum_id="c1")
    return AsyncActivityTrinket(wm.bus, wm)


def test_exact_text_order_grouping_and_prefixes(sidebar: AsyncActivityTrinket) -> None:
    sidebar.set_activity(
        [
            row(1, "email", "Filed 3 receipts", "handled", "2026-11-30 07:30:00"),
            row(2, "calendar", "Two rules claim 9am", "conflict", "2026-11-30 08:59:30"),
            row(3, "email", "Refund request", "escalated", "2026-11-30 08:55:00", "over the limit"),
            row(4, "email", "Spam sweep", "dismissed", "2026-11-30 08:59:59"),
            row(5, "email", "Old thread", "resolved", "2026-11-30 08:59:59"),
            row(6, "calendar", "Invite lost", "failed", "2026-11-27 09:00:00"),
            row(7, "email", "Quiet escalation", "escalated", "2026-11-29 20:00:00", ""),
            row(8, "github", "Triaged #12", "whatever complete_task said", "2026-11-30 08:55:00"),
        ]
    )
    assert sidebar.generate_content({}) == (
        "<async_activity>\n"
        "[calendar]\n"
        "  RULE CONFLICT: Two rules claim 9am [just now]\n"
        "  Invite lost [3d ago]\n"
        "[email]\n"
        "  ESCALATION: Refund request Reason: over the limit [5m ago]\n"
        "  Filed 3 receipts [1h ago]\n"
        "  ESCALATION: Quiet escalation [13h ago]\n"
        "[github]\n"
        "  Triaged #12 [5m ago]\n"
        "</async_activity>"
    )


def test_equal_times_come_by_ascending_id_and_the_order_is_by_text(sidebar: AsyncActivityTrinket) -> None:
    sidebar.set_activity(
        [
            row(9, "b", "nine", "handled", "2026-11-30 08:00:00"),
            row(10, "a", "ten", "handled", "2026-11-30 08:00:00"),
            row(11, "a", "eleven", "handled", "2026-11-30 8:30:00"),  # as text, "8:" sorts after "08"
        ]
    )
    assert [r["id"] for r in sidebar.shown()] == [11, 9, 10]


def test_ages_come_from_the_clock_at_compose_time(sidebar: AsyncActivityTrinket, clock: ManualClock) -> None:
    sidebar.set_activity([row(1, "email", "s", "handled", "2026-11-30 09:00:00")])
    lines = []
    for step in (0, 59, 1, 3539, 1, 82799, 1, 86400 * 6):
        clock.advance(seconds=step)
        lines.append(sidebar.generate_content({}).splitlines()[2])
    assert lines == [
        "  s [just now]",
        "  s [just now]",
        "  s [1m ago]",
        "  s [59m ago]",
        "  s [1h ago]",
        "  s [23h ago]",
        "  s [1d ago]",
        "  s [7d ago]",
    ]
    sidebar.working_memory.publish_trinket_update("AsyncActivityTrinket")
    assert sidebar.content.endswith("[7d ago]\n</async_activity>")


def test_age_edges() -> None:
    now = ManualClock("2026-11-30T09:00:00+00:00").now()
    assert age("2026-11-30 09:05:00", now) == "just now"  # in the future
    assert age("2026-11-30 08:59:00.5", now) == "just now"
    assert age("not a time", now) == "recently"


def test_html_escaping_as_mira(sidebar: AsyncActivityTrinket) -> None:
    sidebar.set_activity([row(1, "<x&y>", 'say "hi" </async_activity>', "escalated", "2026-11-30 09:00:00", "it's")])
    assert sidebar.generate_content({}) == (
        "<async_activity>\n"
        "[&lt;x&amp;y&gt;]\n"
        "  ESCALATION: say &quot;hi&quot; &lt;/async_activity&gt; Reason: it&#x27;s [just now]\n"
        "</async_activity>"
    )


def test_nothing_shown_is_empty_and_a_collapse_changes_nothing(sidebar: AsyncActivityTrinket) -> None:
    assert sidebar.generate_content({}) == ""
    sidebar.set_activity([row(1, "e", "gone", "dismissed", "2026-11-30 09:00:00")])
    assert sidebar.generate_content({}) == ""
    sidebar.set_activity([row(1, "e", "kept", "handled", "2026-11-30 09:00:00")])
    wm = sidebar.working_memory
    wm.bus.publish(SegmentCollapsedEvent.create(continuum_id="c1", segment_id="s", summary="x"))
    assert "kept" in sidebar.generate_content({})


def test_the_table_is_kept_by_the_store(clock: ManualClock) -> None:
    from wm_kernel.stores.embedded import MemoryStore

    store = MemoryStore()
    wm = WorkingMemory(EventBus(), clock=clock, profile=Profile(), continuum_id="c1", store=store)
    first = AsyncActivityTrinket(wm.bus, wm)
    first.set_activity([row(1, "email", "kept", "escalated", "2026-11-30 08:00:00", "why")])
    wm2 = WorkingMemory(EventBus(), clock=clock, profile=Profile(), continuum_id="c2", store=store)
    assert AsyncActivityTrinket(wm2.bus, wm2).generate_content({}) == first.generate_content({})
    first.set_activity([])
    assert store.hgetall("sidebar_activity:notebook") == {}
    store.hset("sidebar_activity:notebook", "rows", [{"id": 1}])
    wm3 = WorkingMemory(EventBus(), clock=clock, store=store)
    with pytest.raises(ValueError, match="AsyncActivityTrinket: the rows stored under 'sidebar_activity:notebook'"):
        AsyncActivityTrinket(wm3.bus, wm3)
