"""EventBus: order, nesting, isolation, the bounded log."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime

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


# -- publishing by fields: the event is built only when someone needs it
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_a_fields_subscriber_gets_the_fields_and_no_event_is_built_until_the_log_is_read():
    bus = EventBus()
    seen = []
    bus.subscribe(TurnCompletedEvent, lambda *fields: seen.append(fields), fields=True)
    assert bus.publish(TurnCompletedEvent, "c1", "ada", T0, 3, 1) is None
    assert seen == [("c1", "ada", T0, 3, 1)]
    (record,) = bus.log
    assert record._event is None  # not built by the publish
    event = record.event
    assert (type(event), event.continuum_id, event.user_id, event.occurred_at) == (TurnCompletedEvent, "c1", "ada", T0)
    assert (event.turn_number, event.segment_turn_number) == (3, 1)
    assert bus.log[0].event is event  # built once, the same for every reader
    assert record.as_row()["detail"] == "turn_number=3, segment_turn_number=1"


def test_an_event_subscriber_gets_the_event_built_once_and_the_log_holds_that_one():
    bus = EventBus()
    events, fields_seen = [], []
    bus.subscribe(TurnCompletedEvent, lambda *fields: fields_seen.append(fields), fields=True)
    bus.subscribe(TurnCompletedEvent, events.append)
    bus.subscribe(TurnCompletedEvent, events.append)
    bus.publish(TurnCompletedEvent, "c1", "ada", T0, 3, 1)
    assert fields_seen == [("c1", "ada", T0, 3, 1)]
    assert len(events) == 2 and events[0] is events[1] is bus.log[0].event


def test_an_event_published_built_reaches_a_fields_subscriber_by_its_fields():
    bus = EventBus()
    seen = []
    bus.subscribe(UpdateTrinketEvent, lambda *fields: seen.append(fields), fields=True)
    event = UpdateTrinketEvent.create(continuum_id="c1", target_trinket="Tips", context={"k": 1})
    record = bus.publish(event)
    assert seen == [("c1", "", event.occurred_at, "Tips", {"k": 1})]
    assert record.event is event and bus.log[0] is record


def test_published_by_fields_or_built_the_log_keeps_order_depth_and_ids():
    bus = EventBus()

    def on_turn(continuum_id, user_id, at, turn_number, segment_turn_number):
        bus.publish(UpdateTrinketEvent, continuum_id, user_id, at, "Tips", {})

    bus.subscribe(TurnCompletedEvent, on_turn, fields=True)
    bus.subscribe(UpdateTrinketEvent, lambda *fields: None, fields=True)
    bus.publish(turn(1))
    bus.publish(TurnCompletedEvent, "c", "", T0, 2, 2)
    rows = [(r.seq, r.depth, r.event_type) for r in bus.log]
    assert rows == [
        (1, 0, "TurnCompletedEvent"),
        (2, 1, "UpdateTrinketEvent"),
        (3, 0, "TurnCompletedEvent"),
        (4, 1, "UpdateTrinketEvent"),
    ]
    ids = [r.event.event_id for r in bus.log]
    assert len(set(ids)) == 4
    assert sorted(ids, key=lambda i: int(i.rsplit("-", 1)[1], 16)) == ids  # ids taken in publish order


def test_a_raising_fields_subscriber_is_isolated_and_recorded_on_its_event(caplog):
    bus = EventBus()
    calls = []

    def boom(*fields):
        raise RuntimeError("fields exploded")

    bus.subscribe(TurnCompletedEvent, boom, fields=True)
    bus.publish(TurnCompletedEvent, "c", "", T0, 1, 1)  # the only subscriber
    bus.subscribe(TurnCompletedEvent, lambda e: calls.append(e.turn_number))
    bus.publish(TurnCompletedEvent, "c", "", T0, 2, 2)  # and one after it
    assert calls == [2]
    assert [[f.error for f in r.failures] for r in bus.log] == [
        ["RuntimeError: fields exploded"],
        ["RuntimeError: fields exploded"],
    ]
    assert bus.failure_count == 2 and "fields exploded" in caplog.text


def test_current_event_is_the_event_being_delivered_built_on_demand():
    bus = EventBus()
    got = []

    def on_turn(*fields):
        got.append(bus.current_event())

    bus.subscribe(TurnCompletedEvent, on_turn, fields=True)
    assert bus.current_event() is None
    bus.publish(TurnCompletedEvent, "c", "", T0, 5, 1)
    assert got[0].turn_number == 5 and got[0] is bus.log[0].event
    assert bus.current_event() is None


def test_report_failure_lands_on_the_event_being_delivered():
    bus = EventBus()
    bus.subscribe(TurnCompletedEvent, lambda *f: bus.report_failure("Tips", ValueError("bad")), fields=True)
    bus.publish(TurnCompletedEvent, "c", "", T0, 1, 1)
    bus.report_failure("nobody", ValueError("outside"))  # no event: counted only
    assert [(f.subscriber, f.error) for f in bus.log[0].failures] == [("Tips", "ValueError: bad")]
    assert bus.failure_count == 2


def test_publishing_by_fields_needs_an_event_class():
    bus = EventBus()
    with pytest.raises(TypeError, match="^publish\\(\\) takes an Event class and its fields, got <class 'int'>$"):
        bus.publish(int, "c", "", T0)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="fields must be True or False, got 1"):
        bus.subscribe(TurnCompletedEvent, print, fields=1)  # type: ignore[call-overload]
    assert bus.log == ()


def test_unsubscribing_a_fields_subscriber_stops_it():
    bus = EventBus()
    seen = []
    handler = seen.append
    bus.subscribe(TurnCompletedEvent, handler, fields=True)
    assert bus.subscribers(TurnCompletedEvent) == (handler,)
    assert bus.unsubscribe(TurnCompletedEvent, handler)
    bus.publish(TurnCompletedEvent, "c", "", T0, 1, 1)
    assert seen == [] and bus.subscribers(TurnCompletedEvent) == ()


def test_records_built_for_rows_the_log_dropped_are_forgotten():
    bus = EventBus(log_size=10)
    bus.subscribe(TurnCompletedEvent, lambda *f: None, fields=True)
    for n in range(500):
        bus.publish(TurnCompletedEvent, "c", "", T0, n, n)
        assert len(bus.log) <= 10  # reading it builds the record of every row it holds
    assert len(bus._built) <= 2 * 10 + 64 + 10
    assert [r.event.turn_number for r in bus.log] == list(range(490, 500))
