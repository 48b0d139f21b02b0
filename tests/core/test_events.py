"""Events: immutable, reference fields, create() fills id and time from the clock."""

from __future__ import annotations

import dataclasses

import pytest

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.events import (
    EVENT_TYPES,
    ComposeSystemPromptEvent,
    SegmentCollapsedEvent,
    SystemPromptComposedEvent,
    TrinketContentEvent,
    TrinketFedEvent,
    TurnCompletedEvent,
    UpdateTrinketEvent,
)

COMMON = ["continuum_id", "user_id", "event_id", "occurred_at"]


def field_names(cls):
    return [f.name for f in dataclasses.fields(cls)]


def test_fields_are_the_references():
    assert field_names(ComposeSystemPromptEvent) == COMMON + ["base_prompt"]
    assert field_names(UpdateTrinketEvent) == COMMON + ["target_trinket", "context"]
    assert field_names(TrinketContentEvent) == COMMON + ["variable_name", "content", "trinket_name", "cache_policy"]
    assert field_names(SystemPromptComposedEvent) == COMMON + [
        "cached_content",
        "non_cached_content",
        "conversation_prefix_items",
        "post_history_items",
        "notification_center",
    ]
    assert field_names(TurnCompletedEvent) == COMMON + ["turn_number", "segment_turn_number"]
    assert field_names(SegmentCollapsedEvent) == COMMON + ["segment_id", "summary", "tools_used"]
    # wm-kernel's one addition: a feed call is a happening observers subscribe to
    assert field_names(TrinketFedEvent) == COMMON + ["trinket_name", "method", "args", "kwargs"]
    assert sorted(EVENT_TYPES) == sorted(
        c.__name__
        for c in (
            ComposeSystemPromptEvent,
            UpdateTrinketEvent,
            TrinketContentEvent,
            SystemPromptComposedEvent,
            TurnCompletedEvent,
            SegmentCollapsedEvent,
            TrinketFedEvent,
        )
    )


def test_create_fills_id_time_and_user():
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    a = TurnCompletedEvent.create(continuum_id="c", user_id="ada", clock=clock, turn_number=1, segment_turn_number=1)
    clock.advance(seconds=1)
    b = TurnCompletedEvent.create(continuum_id="c", user_id="ada", clock=clock, turn_number=2, segment_turn_number=2)
    assert a.event_id != b.event_id
    assert a.occurred_at.isoformat() == "2026-11-30T09:00:00+00:00"
    assert b.occurred_at.isoformat() == "2026-11-30T09:00:01+00:00"
    assert a.user_id == "ada" and a.event_type == "TurnCompletedEvent"
    assert a.key_values() == {"turn_number": 1, "segment_turn_number": 1}


def test_events_are_immutable():
    e = ComposeSystemPromptEvent.create(continuum_id="c", base_prompt="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.base_prompt = "y"  # type: ignore[misc]


def test_to_dict():
    clock = ManualClock("2026-11-30T09:00:00+00:00")
    e = SegmentCollapsedEvent.create(continuum_id="c", clock=clock, segment_id="s", summary="sum", tools_used=("web",))
    d = e.to_dict()
    assert d["event_type"] == "SegmentCollapsedEvent" and d["tools_used"] == ("web",)
