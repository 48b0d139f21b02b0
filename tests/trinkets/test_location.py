"""LocationTrinket (MIRA HEAD): MIRA's exact text for every part of the payload, the 24-hour expiry
from the session's clock, cached placement, no reaction to turns or collapses."""

from __future__ import annotations

from typing import Any

import pytest

from trinkets import LocationTrinket
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.session import Session

FULL: dict[str, Any] = {
    "location_name": "Brighton, England",
    "forecast": [
        {"hour": "10 AM", "temp": "8°C", "condition": "Light drizzle", "precip_pct": 60},
        {"hour": "11 AM", "temp": "9°C", "condition": "Overcast", "precip_pct": None},
    ],
    "sunrise": "7:41 AM",
    "sunset": "3:58 PM",
    "uv_index": 9,
    "recent_weather": [
        {"date": "2026-11-28", "day_label": "Saturday", "high": "11°C", "low": "4°C", "condition": "Sunny",
         "precipitation": "0mm"},
        {"date": "2026-11-29", "day_label": "Yesterday", "high": "10°C", "condition": "Rain", "precipitation": "4mm"},
        {"date": "2026-11-29", "day_label": "Last night"},
    ],
}  # fmt: skip


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock("2026-11-30T09:00:00+00:00")


@pytest.fixture
def pair(clock: ManualClock) -> tuple[WorkingMemory, LocationTrinket]:
    wm = WorkingMemory(EventBus(), clock=clock, profile=Profile(), continuum_id="c1")
    return wm, LocationTrinket(wm.bus, wm)


def test_the_whole_payload_exactly(pair: tuple[WorkingMemory, LocationTrinket]) -> None:
    _, loc = pair
    loc.set_location(FULL)
    assert loc.generate_content({}) == (
        "=== Location Context ===\n"
        "Location: Brighton, England\n"
        "Sunrise: 7:41 AM / Sunset: 3:58 PM\n"
        "UV Index: 9 (Very High)\n"
        "Forecast (next 2 hours):\n"
        "- 10 AM: 8°C, Light drizzle, 60% chance of rain\n"
        "- 11 AM: 9°C, Overcast, None% chance of rain\n"
        "Recent weather (since last conversation):\n"
        "- Saturday: 11°C/4°C, Sunny, 0mm precip\n"
        "- Yesterday: Rain, 4mm precip\n"
        "- Last night: "
    )


def test_extreme_uv_and_partial_payloads(pair: tuple[WorkingMemory, LocationTrinket]) -> None:
    _, loc = pair
    loc.set_location({"sunrise": "6:02 AM", "uv_index": 11})
    assert loc.generate_content({}) == (
        "=== Location Context ===\n⚠️ UV INDEX: 11 (EXTREME) — Dangerous sun exposure levels"
    )
    loc.set_location({"location_name": "Quito", "sunset": "6:10 PM", "uv_index": 8})
    assert loc.generate_content({}) == "=== Location Context ===\nLocation: Quito\nUV Index: 8 (Very High)"


@pytest.mark.parametrize(
    "payload",
    [None, {}, {"sunset": "4 PM", "uv_index": 12, "recent_weather": [{"day_label": "Sunday"}]}, {"forecast": []}],
)
def test_no_section_without_name_forecast_or_sunrise(
    pair: tuple[WorkingMemory, LocationTrinket], payload: dict[str, Any] | None
) -> None:
    _, loc = pair
    loc.set_location(payload)
    assert loc.generate_content({}) == ""


def test_the_location_lives_exactly_24_hours_from_when_it_was_set(
    pair: tuple[WorkingMemory, LocationTrinket], clock: ManualClock
) -> None:
    wm, loc = pair
    loc.set_location({"location_name": "Oslo"})
    clock.advance(hours=23, minutes=59, seconds=59)
    assert loc.generate_content({}) == "=== Location Context ===\nLocation: Oslo"
    clock.advance(seconds=1)  # exactly 86,400 s: Valkey still has the key
    assert loc.generate_content({}) == "=== Location Context ===\nLocation: Oslo"
    clock.advance(microseconds=1)
    assert loc.generate_content({}) == ""
    wm.publish_trinket_update("LocationTrinket")
    assert loc.content == ""
    loc.set_location({"location_name": "Bergen"})  # a new POST: 24 hours from now
    clock.advance(hours=24)
    assert loc.generate_content({}) == "=== Location Context ===\nLocation: Bergen"


def test_turns_and_collapses_change_nothing(pair: tuple[WorkingMemory, LocationTrinket]) -> None:
    wm, loc = pair
    loc.set_location(FULL)
    before = loc.generate_content({})
    wm.bus.publish(TurnCompletedEvent.create(continuum_id="c1", turn_number=1, segment_turn_number=1))
    wm.bus.publish(SegmentCollapsedEvent.create(continuum_id="c1", segment_id="s", summary="x"))
    assert loc.generate_content({}) == before


def test_it_sits_in_the_cached_system_block_and_moves_it_when_the_forecast_changes() -> None:
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    s = Session(base_prompt="You help.", clock=clock, trinkets=[LocationTrinket])
    loc = s.trinket("LocationTrinket")
    assert isinstance(loc, LocationTrinket)
    loc.set_location({"location_name": "Oslo", "forecast": [{"hour": "9 AM", "temp": "-2°C", "condition": "Snow",
                                                              "precip_pct": 80}]})  # fmt: skip
    first = s.compose()
    assert first["cached_content"].endswith(
        "---\n\n=== Location Context ===\nLocation: Oslo\n"
        "Forecast (next 2 hours):\n- 9 AM: -2°C, Snow, 80% chance of rain"
    )
    clock.advance(hours=1)
    loc.set_location({"location_name": "Oslo", "forecast": [{"hour": "10 AM", "temp": "-1°C", "condition": "Snow",
                                                              "precip_pct": 70}]})  # fmt: skip
    assert s.compose()["cached_content"] != first["cached_content"]


def test_the_location_and_its_time_are_kept_by_the_store(tmp_path: Any) -> None:
    from wm_kernel.stores.embedded import SQLiteStore

    clock = ManualClock("2026-11-30T09:00:00+00:00")
    store = SQLiteStore(tmp_path / "wm.sqlite")
    wm = WorkingMemory(EventBus(), clock=clock, profile=Profile(), continuum_id="c1", store=store)
    LocationTrinket(wm.bus, wm).set_location({"location_name": "Oslo"})
    clock.advance(hours=23)
    wm2 = WorkingMemory(EventBus(), clock=clock, continuum_id="c2", store=store)  # a restart
    again = LocationTrinket(wm2.bus, wm2)
    assert again.generate_content({}) == "=== Location Context ===\nLocation: Oslo"
    clock.advance(hours=1, seconds=1)  # 24 hours from when it was set, not from the restart
    assert again.generate_content({}) == ""
    again.set_location(None)
    assert store.hgetall("locations:notebook") == {}


def test_unreadable_stored_data_is_a_clear_error() -> None:
    from wm_kernel.stores.embedded import MemoryStore

    store = MemoryStore()
    store.hset("locations:notebook", "state", {"payload": "Oslo"})
    wm = WorkingMemory(EventBus(), clock=ManualClock("2026-11-30T09:00:00+00:00"), store=store)
    with pytest.raises(ValueError, match="LocationTrinket: the location stored under 'locations:notebook'"):
        LocationTrinket(wm.bus, wm)
    assert "LocationTrinket" not in wm.trinkets
