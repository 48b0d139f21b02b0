"""The cache consequence of MIRA HEAD's LocationTrinket (issue 45 item 3, first part): its section
sits in the one-hour cached system block while its forecast changes by the hour, so the cache
simulation and ``%cache`` name it as the section that moved."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from trinkets import MIRA_HEAD_TRINKETS
from wm_kernel import Layout
from wm_kernel.core.clock import ManualClock
from wm_kernel.session import Session, set_current_session


@pytest.fixture
def session() -> Iterator[Session]:
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    s = Session(
        base_prompt="You help {first_name}. " * 300, clock=clock, trinkets=MIRA_HEAD_TRINKETS, layout=Layout.original()
    )
    location = s.trinket("LocationTrinket")
    for hour in range(3):  # a new forecast each hour, as the front end POSTs it on each page load
        location.set_location(  # type: ignore[attr-defined]
            {
                "location_name": "Oslo",
                "forecast": [{"hour": f"{9 + hour} AM", "temp": f"{hour}°C", "condition": "Snow", "precip_pct": 80}],
            }
        )
        s.compose()
        s.advance_turn()
        clock.advance(hours=1)
    set_current_session(s)
    yield s
    set_current_session(None)


def test_the_simulation_names_the_location_as_what_moved_the_cached_block(session: Session) -> None:
    turns = session.cache_simulation(wire="mira").turns
    assert turns["miss_reason"].tolist()[:3] == ["first_request", "content_changed", "content_changed"]
    assert turns["divergent_label"].tolist()[1:3] == ["location_context (LocationTrinket)"] * 2


def test_cache_magic_names_it(ip: Any, session: Session) -> None:
    view = ip.run_line_magic("cache", "--wire mira --no-advice")
    assert "location_context (LocationTrinket)" in repr(view)
