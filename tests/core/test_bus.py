"""EventBus: order, nesting, isolation, the bounded log."""

from __future__ import annotations

import tracemalloc

import pytest

from wm_kernel.core.bus import EventBus
from wm_kernel.core.events import SegmentCollapsedEvent, TurnCompletedEvent, UpdateTrinketEvent


def turn(n=1):
    return TurnCompletedEvent.create(continuum_id="c", turn_number=n, segment_turn_number=n)


def test_subscribers_run_in_subscription_order_by_class_or_name():
    bus = EventBus()
    calls = []
    bus.subscribe(TurnCompletedEvent, lambda e: calls.append("a"))
    bus.subscribe("TurnCompletedEvent", lambda e: calls.append("b"))
    bus.subscribe(UpdateTrinketEvent, lambda e: calls.append("other"))
    bus.publish(turn())
    assert calls == ["a", "b"]


def test_a_misspelt_event_name_is_an_error_not_a_silent_subscription():
    bus = EventBus()
    with pytest.raises(
        ValueError,
        match="^unknown event type 'TurnCompleted' \\(known: "
        "ComposeSystemPromptEvent, .*TrinketFedEvent; or pass an "
        "Event subclass\\)$",
    ):
        bus.subscribe("TurnCompleted", print)
    with pytest.raises(ValueError, match="unknown event type ''"):
        bus.subscribe("", print)
    with pytest.raises(TypeError, match="expected an Event subclass or its name, got 42"):
        bus.subscribe(42, print)  # type: ignore[call-overload]
    assert bus.subscribers(TurnCompletedEvent) == ()


def test_a_raising_subscriber_does_not_stop_the_others_and_is_recorded(caplog):
    bus = EventBus()
    calls = []

    def boom(event):
        raise RuntimeError("subscriber exploded")

    bus.subscribe(TurnCompletedEvent, boom)
    bus.subscribe(TurnCompletedEvent, lambda e: calls.append(e.turn_number))
    record = bus.publish(turn(7))
    assert calls == [7]
    assert [(f.subscriber, f.error) for f in record.failures] == [
        (
            "test_a_raising_subscriber_does_not_stop_the_others_and_is_recorded.<locals>.boom",
            "RuntimeError: subscriber exploded",
        )
    ]
    assert "subscriber exploded" in caplog.text
    assert bus.failure_count == 1
    assert bus.log_rows()[0]["failures"].endswith("RuntimeError: subscriber exploded")


def test_nested_publishes_are_depth_first_and_logged_in_causal_order():
    bus = EventBus()
    seen = []

    def on_turn(event):
        seen.append(("turn", event.turn_number))
        if event.turn_number == 1:
            bus.publish(UpdateTrinketEvent.create(continuum_id="c", target_trinket="X"))
        seen.append(("turn-done", event.turn_number))

    bus.subscribe(TurnCompletedEvent, on_turn)
    bus.subscribe(UpdateTrinketEvent, lambda e: seen.append(("update", e.target_trinket)))
    bus.publish(turn(1))
    assert seen == [("turn", 1), ("update", "X"), ("turn-done", 1)]
    assert [(r.event_type, r.depth) for r in bus.log] == [("TurnCompletedEvent", 0), ("UpdateTrinketEvent", 1)]


def test_unsubscribe():
    bus = EventBus()
    calls = []
    cb = calls.append
    bus.subscribe(TurnCompletedEvent, cb)
    assert bus.unsubscribe(TurnCompletedEvent, cb) is True
    assert bus.unsubscribe(TurnCompletedEvent, cb) is False
    bus.publish(turn())
    assert calls == []


def test_subscribing_during_a_publish_takes_effect_next_time():
    bus = EventBus()
    calls = []

    def first(event):
        calls.append("first")
        bus.subscribe(TurnCompletedEvent, lambda e: calls.append("late"))

    bus.subscribe(TurnCompletedEvent, first)
    bus.publish(turn())
    assert calls == ["first"]


def test_bad_input():
    bus = EventBus()
    with pytest.raises(TypeError, match="publish\\(\\) takes an Event, got dict"):
        bus.publish({"turn": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callback must be callable"):
        bus.subscribe(TurnCompletedEvent, "nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Event subclass or its name"):
        bus.subscribe(int, print)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        EventBus(log_size=-1)


@pytest.mark.slow
def test_log_is_bounded_and_memory_stays_flat_over_100k_events():
    bus = EventBus(log_size=1000)
    bus.subscribe(TurnCompletedEvent, lambda e: None)
    for n in range(5_000):  # warm up to the bound
        bus.publish(turn(n))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for n in range(100_000):
        bus.publish(turn(n))
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(bus.log) == 1000
    assert bus.log[-1].event.turn_number == 99_999
    assert bus.log[-1].seq == 105_000
    assert grown < 2_000_000  # bytes; an unbounded log would hold 100k records (tens of MB)


def test_log_can_be_disabled():
    bus = EventBus(log_size=0)
    bus.publish(turn())
    assert bus.log == ()
    assert bus.tail(3) == ()


def test_tail_is_the_most_recent_events_oldest_first():
    bus = EventBus(log_size=5)
    for n in range(8):
        bus.publish(turn(n))
    assert [r.seq for r in bus.tail(3)] == [6, 7, 8]
    assert [r.seq for r in bus.tail(12)] == [4, 5, 6, 7, 8]  # no more than the log holds
    assert bus.tail(0) == ()


def test_log_rows_say_what_each_event_carries():
    # SegmentCollapsedEvent.summary is the reference's text field; the log once called a method of
    # that name and raised "'str' object is not callable" after any collapse.
    bus = EventBus()
    bus.publish(SegmentCollapsedEvent.create(continuum_id="c", segment_id="seg-1", summary="Planning chat"))
    bus.publish(
        UpdateTrinketEvent.create(continuum_id="c", target_trinket="Tips", context={"action": "lifecycle_refresh"})
    )
    assert [(r["event"], r["detail"]) for r in bus.log_rows()] == [
        ("SegmentCollapsedEvent", "segment_id=seg-1, summary=Planning chat"),
        ("UpdateTrinketEvent", "target_trinket=Tips, context={'action': 'lifecycle_refresh'}"),
    ]
