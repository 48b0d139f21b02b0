"""WorkingMemory: the compose cycle, routing, isolation, registration, flush and the store views."""

from __future__ import annotations

import threading
import warnings

import pytest

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import StragglerSectionWarning
from wm_kernel.core.events import (
    ComposeSystemPromptEvent,
    SegmentCollapsedEvent,
    SystemPromptComposedEvent,
    TrinketContentEvent,
    TurnCompletedEvent,
    UpdateTrinketEvent,
)
from wm_kernel.core.failures import failure_kind
from wm_kernel.core.profile import Profile
from wm_kernel.core.working_memory import WorkingMemory
from wm_kernel.stores.embedded import MemoryStore

RULE = "═" * 60
DELIM = (
    f"\n\n{RULE}\nEverything after this delimiter is part of MIRA's scaffolding, injected to "
    f"provide additional context during the reply.\n{RULE}"
)
T0 = "2026-11-30T09:00:00+00:00"


class Directives(EventAwareTrinket):
    variable_name = "behavioral_directives"
    cache_policy = True

    def generate_content(self, context):
        return "<user_model>likes tea</user_model>"


class Clock(EventAwareTrinket):
    variable_name = "datetime_section"
    text = "<current_datetime>NOW</current_datetime>"

    def generate_content(self, context):
        return self.text


class Flaky(EventAwareTrinket):
    variable_name = "relevant_memories"
    fail_with: Exception | None = None
    text = "<surfaced_memories>m</surfaced_memories>"

    def generate_content(self, context):
        if self.fail_with is not None:
            raise self.fail_with
        return self.text


class Countdown(StatefulTrinket):
    """Items with a TTL in turns, as the guidance trinket has."""

    variable_name = "peanutgallery_guidance"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.items: dict[str, tuple[int, int]] = {}

    def add(self, name, ttl):
        self.items[name] = (self.current_turn, ttl)

    def generate_content(self, context):
        return "\n".join(f"{n}:{added + ttl - self.current_turn}" for n, (added, ttl) in self.items.items())

    def _expire_items(self):
        gone = [n for n, (added, ttl) in self.items.items() if self.current_turn > added + ttl]
        for n in gone:
            del self.items[n]
        return bool(gone)

    def _clear_all_state(self):
        self.items.clear()


@pytest.fixture
def parts():
    bus = EventBus()
    clock = ManualClock(T0)
    wm = WorkingMemory(bus, clock=clock, user_id="ada", profile=Profile(first_name="Ada"))
    return bus, wm, clock


def compose(bus, base="Hi {first_name}"):
    bus.publish(ComposeSystemPromptEvent.create(continuum_id="c1", user_id="ada", base_prompt=base))


def test_one_compose_cycle_publishes_events_in_the_reference_order(parts):
    bus, wm, _ = parts
    Directives(bus, wm)
    Clock(bus, wm)
    compose(bus)
    assert [(r.event_type, r.depth, r.event.key_values()) for r in bus.log] == [
        ("ComposeSystemPromptEvent", 0, {}),
        ("UpdateTrinketEvent", 1, {"target_trinket": "Directives"}),
        ("TrinketContentEvent", 2, {"trinket_name": "Directives", "variable_name": "behavioral_directives"}),
        ("UpdateTrinketEvent", 1, {"target_trinket": "Clock"}),
        ("TrinketContentEvent", 2, {"trinket_name": "Clock", "variable_name": "datetime_section"}),
        ("SystemPromptComposedEvent", 1, {}),
    ]
    assert all(r.event.user_id == "ada" for r in bus.log[1:])
    assert all(r.event.continuum_id == "c1" for r in bus.log)
    update = bus.log[1].event
    assert update.context == {}


def test_composed_prompt_is_the_originals_text(parts):
    bus, wm, _ = parts
    Directives(bus, wm)
    Clock(bus, wm)
    seen = []
    bus.subscribe(SystemPromptComposedEvent, seen.append)
    compose(bus)
    expected_hud = (
        f"{RULE}\nHUD - Runtime state, authoritative for current context\n{RULE}\n"
        "<mira:hud>\n<current_datetime>NOW</current_datetime>\n\n</mira:hud>\n" + RULE
    )
    assert dict(wm.composed) == {
        "cached_content": "Hi Ada" + DELIM + "\n\n---\n\n<user_model>likes tea</user_model>",
        "non_cached_content": "",
        "conversation_prefix_items": [],
        "post_history_items": [],
        "notification_center": expected_hud,
    }
    event = seen[0]
    assert event.cached_content == wm.composed["cached_content"]
    assert event.notification_center == expected_hud
    assert event.conversation_prefix_items == () and event.post_history_items == ()


def test_a_later_subscriber_sees_nested_events_first(parts):
    bus, wm, _ = parts
    Clock(bus, wm)
    order = []
    for name in ("ComposeSystemPromptEvent", "UpdateTrinketEvent", "TrinketContentEvent", "SystemPromptComposedEvent"):
        bus.subscribe(name, lambda e, n=name: order.append(n))
    compose(bus)
    # depth-first: WorkingMemory (subscribed first) handles each event, publishing the nested
    # ones, before the later subscriber gets the outer event
    assert order == [
        "TrinketContentEvent",
        "UpdateTrinketEvent",
        "SystemPromptComposedEvent",
        "ComposeSystemPromptEvent",
    ]


def test_placeholders_are_filled_once_and_never_expanded_again(parts):
    bus, wm, clock = parts
    wm.profile = Profile(
        first_name="{model_id}",
        user_context="I am {first_name} {user_context}",
        model_id="m-1",
        model_name="Model One",
        account_created="2026-08-30T09:00:00+00:00",
    )
    compose(
        bus,
        "Hello {first_name}.{user_context} Known for {relative time since account creation}."
        " Running {model_id} ({model_name}). {unknown}",
    )
    assert wm.composed["cached_content"].split("\n\n" + RULE)[0] == (
        "Hello {model_id}.\nI am {first_name} {user_context} Known for about three months "
        "(08-30-2026). Running m-1 "
        "(Model One). {unknown}"
    )


@pytest.mark.parametrize("name, shown", [(" Ada ", "Ada"), ("   ", "friend"), ("", "friend"), (None, "friend")])
def test_first_name_is_stripped_and_blank_means_friend(parts, name, shown):
    bus, wm, _ = parts
    wm.profile = Profile(first_name=name)
    compose(bus, "Hello {first_name}!")
    assert wm.composed["cached_content"] == f"Hello {shown}!" + DELIM


@pytest.mark.parametrize(
    "created, wording",
    [
        ("2026-11-30T08:59:00+00:00", "a short time (11-30-2026)"),
        ("2026-11-29T09:00:00+00:00", "about a day (11-29-2026)"),
        ("2026-11-24T09:00:00+00:00", "about six days (11-24-2026)"),
        ("2026-11-16T09:00:00+00:00", "about two weeks (11-16-2026)"),  # 14 days: 2.0 weeks
        ("2026-11-14T09:00:00+00:00", "two and change weeks (11-14-2026)"),  # 16 days: 2.29
        ("2026-11-13T09:00:00+00:00", "two and a half weeks (11-13-2026)"),  # 17 days: 2.43
        ("2026-11-01T09:00:00+00:00", "about four weeks (11-01-2026)"),  # 29 days: 4.14
        ("2026-09-16T09:00:00+00:00", "two and a half months (09-16-2026)"),  # 75 days: 2.46
        ("2026-01-04T09:00:00+00:00", "about eleven months (01-04-2026)"),  # 330 days: 10.84
        ("2025-11-30T09:00:00+00:00", "about a year (11-30-2025)"),
        ("2013-11-30T09:00:00+00:00", "about 13 years (11-30-2013)"),
        ("2026-12-01T09:00:00+00:00", "a short time (12-01-2026)"),  # in the future: no age
        # the date is the creation instant's own, in its own offset (as the original)
        ("2026-11-29T23:30:00-05:00", "a short time (11-29-2026)"),
    ],
)
def test_account_age_in_the_originals_words(parts, created, wording):
    bus, wm, _ = parts
    wm.profile = Profile(account_created=created)
    compose(bus, "Together for {relative time since account creation}.")
    assert wm.composed["cached_content"] == f"Together for {wording}." + DELIM


def test_placeholder_defaults(parts):
    bus, wm, _ = parts
    wm.profile = Profile()
    compose(bus, "{first_name}|{user_context}|{relative time since account creation}|{model_id}|")
    assert wm.composed["cached_content"].startswith("friend||some time||\n\n")


def test_a_raising_trinket_is_isolated_and_visible(parts):
    bus, wm, _ = parts
    Directives(bus, wm)
    flaky = Flaky(bus, wm)
    Clock(bus, wm)
    compose(bus)
    assert wm.get_trinket_state("relevant_memories")["content"] == flaky.text
    flaky.fail_with = KeyError("memory-7")
    compose(bus)
    composed = wm.composed
    # the others went on, and no stale copy of the failed trinket's content is anywhere
    assert "likes tea" in composed["cached_content"]
    assert "NOW" in composed["notification_center"]
    assert "<surfaced_memories>" not in composed["notification_center"]
    assert wm.get_trinket_state("relevant_memories") is None
    assert flaky.content == ""
    assert flaky.error == "KeyError: 'memory-7'"
    omitted = {o.name: (o.reason, o.error) for o in composed.omitted}
    assert omitted == {"relevant_memories": ("trinket failed", "KeyError: 'memory-7'")}
    failed = [r for r in bus.log if r.failures]
    assert [(r.event_type, r.event.target_trinket, r.failures[0].subscriber, r.failures[0].error) for r in failed] == [
        ("UpdateTrinketEvent", "Flaky", "Flaky", "KeyError: 'memory-7'")
    ]
    with pytest.raises(ValueError, match="not in this prompt: trinket failed"):
        composed.section("relevant_memories")
    flaky.fail_with = None
    compose(bus)
    assert flaky.error == ""
    assert "<surfaced_memories>" in wm.composed["notification_center"]


def test_failure_kinds_by_type_name():
    class ValkeyConnectionError(Exception):
        pass

    assert failure_kind(ValkeyConnectionError()) == "infrastructure"
    assert failure_kind(TimeoutError()) == "infrastructure"
    assert failure_kind(ValueError()) == "logic"


def test_non_string_content_is_a_failure(parts):
    bus, wm, _ = parts

    class Wrong(EventAwareTrinket):
        variable_name = "inbox_status"

        def generate_content(self, context):
            return 42

    wrong = Wrong(bus, wm)
    compose(bus)
    assert wrong.error == "TypeError: Wrong.generate_content() returned int, expected str"


def test_empty_content_removes_the_store_entry(parts):
    bus, wm, _ = parts
    clock_trinket = Clock(bus, wm)
    compose(bus)
    assert wm.get_trinket_state("datetime_section") == {
        "section_name": "datetime_section",
        "content": "<current_datetime>NOW</current_datetime>",
        "cache_policy": False,
        "last_updated": T0,
    }
    clock_trinket.text = "  \n"
    compose(bus)
    assert wm.get_trinket_state("datetime_section") is None
    assert wm.composed["notification_center"] == ""
    assert [(o.name, o.reason) for o in wm.composed.omitted] == [("datetime_section", "no content")]


def test_disabled_trinket_contributes_nothing_and_its_entry_goes(parts):
    bus, wm, _ = parts
    directives = Directives(bus, wm)
    compose(bus)
    assert wm.get_trinket_state("behavioral_directives") is not None
    directives.enabled = False
    assert wm.get_trinket_state("behavioral_directives") is None
    compose(bus)
    assert "likes tea" not in wm.composed["cached_content"]
    assert [(o.name, o.reason) for o in wm.composed.omitted] == [("behavioral_directives", "trinket disabled")]
    directives.set_enabled(True)
    compose(bus)
    assert "likes tea" in wm.composed["cached_content"]


def test_all_trinket_states(parts):
    bus, wm, clock = parts
    Directives(bus, wm)
    Clock(bus, wm)
    compose(bus)
    clock.advance(minutes=5)
    states = wm.get_all_trinket_states()
    assert states["meta"] == {"trinket_count": 2, "loaded_at": "2026-11-30T09:05:00+00:00"}
    assert sorted(s["section_name"] for s in states["trinkets"]) == ["behavioral_directives", "datetime_section"]


def test_last_updated_moves_only_when_content_changes(parts):
    bus, wm, clock = parts
    trinket = Clock(bus, wm)
    compose(bus)
    assert trinket.last_updated.isoformat() == T0
    changes = []
    trinket.observe(changes.append, names=["content", "last_updated"])
    clock.advance(minutes=1)
    compose(bus)
    assert changes == []
    trinket.text = "<current_datetime>LATER</current_datetime>"
    compose(bus)
    assert [c["name"] for c in changes] == ["content", "last_updated"]
    assert trinket.last_updated.isoformat() == "2026-11-30T09:01:00+00:00"


class TestRegistration:
    def test_same_name_twice_is_an_error_unless_replaced(self, parts):
        bus, wm, _ = parts
        first = Directives(bus, wm)
        with pytest.raises(ValueError, match="same name is already registered .Directives.; pass replace=True"):
            Directives(bus, wm)
        assert wm.get_trinket("Directives") is first
        second = Directives(bus, wm, replace=True)
        assert wm.get_trinket("Directives") is second
        assert wm.trinket_names == ["Directives"]

    def test_same_section_from_two_trinkets_is_an_error(self, parts):
        bus, wm, _ = parts
        Clock(bus, wm)

        class OtherClock(EventAwareTrinket):
            variable_name = "datetime_section"

            def generate_content(self, context):
                return "other"

        with pytest.raises(ValueError, match="same section 'datetime_section' is already registered"):
            OtherClock(bus, wm)
        OtherClock(bus, wm, replace=True)
        assert wm.trinket_names == ["OtherClock"]

    def test_missing_variable_name_or_method(self, parts):
        bus, wm, _ = parts

        class NoName(EventAwareTrinket):
            def generate_content(self, context):
                return ""

        with pytest.raises(TypeError, match="NoName must set the class attribute variable_name"):
            NoName(bus, wm)

        class NoExpiry(StatefulTrinket):
            variable_name = "x"

            def generate_content(self, context):
                return ""

            def _clear_all_state(self):
                pass

        with pytest.raises(TypeError, match="abstract method _expire_items"):
            NoExpiry(bus, wm)
        assert wm.trinket_names == []

    def test_unknown_trinket(self, parts):
        bus, wm, _ = parts
        Clock(bus, wm)
        with pytest.raises(ValueError, match=r"unknown trinket 'Nope' \(known: Clock\)"):
            wm.get_trinket("Nope")
        with pytest.raises(ValueError, match="unknown trinket"):
            wm.publish_trinket_update("Nope")
        assert wm.get_trinket("datetime_section").name == "Clock"  # by section too

    def test_replaced_stateful_trinket_stops_listening(self, parts):
        bus, wm, _ = parts
        old = Countdown(bus, wm)
        Countdown(bus, wm, replace=True)
        bus.publish(TurnCompletedEvent.create(continuum_id="c1", turn_number=1, segment_turn_number=1))
        assert old.current_turn == 0


class TestStateful:
    def test_ttl_edges_and_lifecycle_refresh(self, parts):
        bus, wm, _ = parts
        countdown = Countdown(bus, wm)
        countdown.add("tip", ttl=2)
        compose(bus)

        def turn(n):
            bus.publish(TurnCompletedEvent.create(continuum_id="c1", turn_number=n, segment_turn_number=n))

        turn(1)
        turn(2)
        compose(bus)
        assert "tip:0" in wm.composed["notification_center"]  # last turn shown: added 0 + ttl 2
        bus.clear_log()
        turn(3)
        assert countdown.current_turn == 3 and countdown.items == {}
        # expiry asked for a refresh: the update, then no content (empty) -> entry removed
        assert [(r.event_type, dict(getattr(r.event, "context", {}))) for r in bus.log] == [
            ("TurnCompletedEvent", {}),
            ("UpdateTrinketEvent", {"action": "lifecycle_refresh"}),
        ]
        assert wm.get_trinket_state("peanutgallery_guidance") is None
        compose(bus)
        assert wm.composed["notification_center"] == ""

    def test_no_refresh_when_nothing_expired(self, parts):
        bus, wm, _ = parts
        countdown = Countdown(bus, wm)
        countdown.add("tip", ttl=5)
        bus.publish(TurnCompletedEvent.create(continuum_id="c1", turn_number=1, segment_turn_number=1))
        assert [r.event_type for r in bus.log] == ["TurnCompletedEvent"]

    def test_collapse_flushes_every_stateful_trinket(self, parts):
        bus, wm, _ = parts
        countdown = Countdown(bus, wm)
        directives = Directives(bus, wm)
        countdown.add("tip", ttl=9)
        bus.publish(TurnCompletedEvent.create(continuum_id="c1", turn_number=4, segment_turn_number=4))
        compose(bus)
        assert wm.get_trinket_state("peanutgallery_guidance") is not None
        bus.publish(SegmentCollapsedEvent.create(continuum_id="c1", segment_id="s1", summary="done"))
        assert countdown.items == {} and countdown.current_turn == 0 and countdown.content == ""
        assert wm.get_trinket_state("peanutgallery_guidance") is None
        assert wm.get_trinket_state("behavioral_directives") is not None  # stateless: untouched
        assert directives.content


def test_store_entries_are_per_user(parts):
    bus, wm, _ = parts
    store = MemoryStore()
    bus_b = EventBus()
    wm_a = WorkingMemory(bus, store=store, user_id="a")
    wm_b = WorkingMemory(bus_b, store=store, user_id="b")
    Directives(bus, wm_a)
    compose(bus)
    assert wm_a.get_trinket_state("behavioral_directives") is not None
    assert wm_b.get_trinket_state("behavioral_directives") is None
    assert wm_b.get_all_trinket_states()["trinkets"] == []


def test_update_for_unknown_target_is_ignored(parts):
    bus, wm, _ = parts
    bus.publish(UpdateTrinketEvent.create(continuum_id="c", target_trinket="Ghost"))
    assert bus.failure_count == 0


def test_content_event_from_outside_lands_in_the_prompt(parts):
    bus, wm, _ = parts
    bus.publish(
        TrinketContentEvent.create(
            continuum_id="c", variable_name="inbox_status", content="3 unread", trinket_name="", cache_policy=False
        )
    )
    assert "3 unread" in wm.composer.compose()["notification_center"]


def test_compose_and_a_background_update_never_interleave(parts):
    """A background thread changes a trinket's two halves under the trinket lock; every composed
    prompt must show both halves from the same write."""
    bus, wm, _ = parts

    class Pair(EventAwareTrinket):
        variable_name = "async_activity"
        a = b = 0

        def generate_content(self, context):
            first = self.a
            threading.Event().wait(0.0001)  # widen the window a torn read would need
            return f"{first}/{self.b}"

    pair = Pair(bus, wm)
    stop = threading.Event()

    def writer():
        n = 0
        while not stop.is_set():
            n += 1
            with pair.lock:
                pair.a = n
                threading.Event().wait(0.0001)
                pair.b = n

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(200):
            compose(bus)
            text = wm.composed.section("async_activity").content
            left, right = text.split("/")
            assert left == right
    finally:
        stop.set()
        thread.join()


class Unlisted(EventAwareTrinket):
    variable_name = "not_in_any_layout"

    def generate_content(self, context):
        return "stray"


def test_compose_raises_when_its_cycle_fails_instead_of_returning_the_previous_prompt():
    # the bus isolates subscribers; compose() once returned the last prompt as if it were new
    bus = EventBus()
    wm = WorkingMemory(bus, clock=ManualClock(T0))
    first = wm.compose("Hi.")
    Unlisted(bus, wm)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StragglerSectionWarning)
        with pytest.raises(
            StragglerSectionWarning,
            match="^section 'not_in_any_layout' is not in layout 'default'; appended to the system prompt$",
        ):
            wm.compose("Hi.")
    assert wm.composed is first
    assert wm.compose("Hi.").system_prompt == "Hi." + DELIM + "\n\nstray"  # warned once only


def test_unregistering_detaches_a_trinket_and_drops_its_section(parts):
    bus, wm, _ = parts
    Directives(bus, wm)
    Clock(bus, wm)
    compose(bus)
    wm.unregister_trinket("datetime_section")  # by section name, as get_trinket takes
    compose(bus)
    assert wm.trinket_names == ["Directives"]
    assert wm.composed.section_names() == ["base_prompt", "behavioral_directives"]
    assert wm.get_trinket_state("datetime_section") is None
    with pytest.raises(ValueError, match=r"^unknown trinket 'Clock' \(known: Directives\)$"):
        wm.unregister_trinket("Clock")


def test_composed_notifies_on_every_compose_even_an_equal_one(parts):
    bus, wm, _ = parts
    Directives(bus, wm)
    seen = []
    wm.observe(lambda change: seen.append((change["old"], change["new"])), "composed")
    compose(bus)
    compose(bus)
    assert len(seen) == 2 and seen[1][0] == seen[1][1] and seen[1][0] is not seen[1][1]
    with wm.hold_trait_notifications():  # a held notification is delivered once released
        compose(bus)
        assert len(seen) == 2
    assert len(seen) == 3


def test_a_cycle_delivered_directly_logs_every_event_as_if_built():
    """With WorkingMemory the only subscriber of updates and contents, a cycle builds no event
    per trinket; the log builds them when read, with their order, depths, fields and ids."""
    bus = EventBus()
    clock = ManualClock(T0)
    wm = WorkingMemory(bus, clock=clock)
    Directives(bus, wm)
    flaky = Flaky(bus, wm)
    flaky.fail_with = ValueError("no memories")
    bus.publish(ComposeSystemPromptEvent.create(continuum_id="c1", base_prompt="Hi", clock=clock))
    rows = [(r.event_type, r.depth, r.event.detail(), [f.error for f in r.failures]) for r in bus.log]
    assert rows == [
        ("ComposeSystemPromptEvent", 0, "base_prompt=2 chars", []),
        ("UpdateTrinketEvent", 1, "target_trinket=Directives", []),
        (
            "TrinketContentEvent",
            2,
            "trinket_name=Directives, variable_name=behavioral_directives, content=34 chars, cached",
            [],
        ),
        ("UpdateTrinketEvent", 1, "target_trinket=Flaky", ["ValueError: no memories"]),
        ("SystemPromptComposedEvent", 1, "cached_content=" + f"{len(wm.composed['cached_content']):,} chars", []),
    ]
    events = [r.event for r in bus.log]
    assert all(r.event is e for r, e in zip(bus.log, events, strict=True))  # built once
    assert len({e.event_id for e in events}) == len(events)
    assert {(e.continuum_id, e.user_id, e.occurred_at.isoformat()) for e in events[1:]} == {("c1", "notebook", T0)}
    assert events[1].context == {} and events[2].content == "<user_model>likes tea</user_model>"


def test_another_subscriber_of_updates_gets_them_as_before():
    bus = EventBus()
    wm = WorkingMemory(bus, clock=ManualClock(T0))
    Directives(bus, wm)
    seen = []
    bus.subscribe(UpdateTrinketEvent, lambda e: seen.append(("update", e.target_trinket)))
    bus.subscribe(TrinketContentEvent, lambda e: seen.append(("content", e.trinket_name)))
    prompt = wm.compose("Hi")
    # subscription order: WorkingMemory hears the update first, and its content is published then
    assert seen == [("content", "Directives"), ("update", "Directives")]
    assert "likes tea" in prompt["cached_content"]


class RefusingStore(MemoryStore):
    """Refuses writes of one section while ``refuse`` is set (a locked database, say)."""

    refuse = False

    def hset(self, key, field, value):
        if self.refuse and field == "peanutgallery_guidance":
            raise OSError("disk full")
        super().hset(key, field, value)


def counting_down(store=None):
    """A WorkingMemory with a Countdown holding an item that expires at turn 2 and one that stays,
    composed once."""
    bus, clock = EventBus(), ManualClock(T0)
    wm = WorkingMemory(bus, clock=clock, store=store)
    countdown = Countdown(bus, wm)
    countdown.add("soon", 1)
    countdown.add("later", 5)
    wm.compose("Hi")
    return bus, clock, wm, countdown


def turn(bus, clock, n):
    bus.publish(TurnCompletedEvent.create(continuum_id="c1", clock=clock, turn_number=n, segment_turn_number=n))


def test_a_turn_refresh_delivered_directly_logs_its_events_as_if_built():
    """An item expires at turn 2: the trinket's refresh is logged as the update and content events
    it stands for, nested in the turn, with the lifecycle's context; nobody else listened."""
    bus, clock, wm, countdown = counting_down()
    bus.clear_log()
    clock.advance(minutes=1)
    turn(bus, clock, 1)
    assert [r.event_type for r in bus.log] == ["TurnCompletedEvent"]  # nothing expired yet
    turn(bus, clock, 2)
    rows = [(r.event_type, r.depth, r.event.detail(), r.failures) for r in bus.log][1:]
    assert rows == [
        ("TurnCompletedEvent", 0, "turn_number=2, segment_turn_number=2", []),
        ("UpdateTrinketEvent", 1, "target_trinket=Countdown, context={'action': 'lifecycle_refresh'}", []),
        (
            "TrinketContentEvent",
            2,
            "trinket_name=Countdown, variable_name=peanutgallery_guidance, content=7 chars",
            [],
        ),
    ]
    update, content = (r.event for r in bus.log[2:])
    assert update.context == {"action": "lifecycle_refresh"} and type(update.context) is dict
    assert (update.continuum_id, content.user_id, content.occurred_at) == ("c1", "notebook", clock.now())
    assert content.content == countdown.content == "later:3"
    assert wm.get_trinket_state("peanutgallery_guidance")["content"] == "later:3"
    assert countdown.last_updated == clock.now()


def test_a_store_failure_in_a_turn_refresh_is_shown_on_its_content_event():
    store = RefusingStore()
    bus, clock, wm, countdown = counting_down(store)
    bus.clear_log()
    store.refuse = True
    turn(bus, clock, 2)
    failures = [(r.event_type, [f.error for f in r.failures]) for r in bus.log]
    assert failures == [
        ("TurnCompletedEvent", []),
        ("UpdateTrinketEvent", []),
        ("TrinketContentEvent", ["OSError: disk full"]),
    ]
    assert countdown.error == "storing its section failed: OSError: disk full"
    assert countdown.content == "" and "later" not in wm.compose("Hi").to_json()
    store.refuse = False
    assert "later:3" in wm.compose("Hi").to_json() and countdown.error == ""


def test_a_turn_refresh_is_published_when_someone_else_listens_to_updates():
    bus, clock, wm, countdown = counting_down()
    heard = []
    bus.subscribe(UpdateTrinketEvent, lambda e: heard.append(("update", e.target_trinket, dict(e.context))))
    bus.subscribe(TrinketContentEvent, lambda e: heard.append(("content", e.content)))
    turn(bus, clock, 2)
    assert heard == [("content", "later:3"), ("update", "Countdown", {"action": "lifecycle_refresh"})]
    assert wm.get_trinket_state("peanutgallery_guidance")["content"] == "later:3"


def test_a_turn_refresh_and_a_cycle_write_to_the_store_set_last():
    bus, clock, wm, countdown = counting_down()
    other = MemoryStore()
    wm.store = other
    turn(bus, clock, 2)
    assert other.hget("trinkets:notebook", "peanutgallery_guidance")["content"] == "later:3"
    Directives(bus, wm)
    wm.compose("Hi")
    assert other.hget("trinkets:notebook", "behavioral_directives")["content"] == "<user_model>likes tea</user_model>"


class Reading(EventAwareTrinket):
    """Reads its update: it is handed the event, the one the log holds."""

    variable_name = "relevant_memories"
    heard: list[UpdateTrinketEvent]

    def handle_update_trinket(self, event):
        self.heard.append(event)
        super().handle_update_trinket(event)

    def generate_content(self, context):
        return f"<memories>{context.get('memory', 'none')}</memories>"


def test_a_trinket_handling_its_update_gets_the_event_the_log_holds():
    bus = EventBus()
    wm = WorkingMemory(bus, clock=ManualClock(T0))
    reading = Reading(bus, wm)
    reading.heard = []
    wm.publish_trinket_update("Reading", {"memory": "tea"})
    (update,) = reading.heard
    assert update is bus.log[0].event and update.context == {"memory": "tea"}
    assert [r.event_type for r in bus.log] == ["UpdateTrinketEvent", "TrinketContentEvent"]
    assert wm.compose("Hi")["notification_center"].count("<memories>none</memories>") == 1
    assert reading.heard[1] is bus.log[3].event  # the cycle's update, built for it alone


def test_a_cycle_builds_no_event_when_nobody_but_working_memory_listens():
    bus = EventBus()
    wm = WorkingMemory(bus, clock=ManualClock(T0))
    Directives(bus, wm)
    Clock(bus, wm)
    wm.compose("Hi")
    rows = list(bus._log)
    built = [row for row in rows if len(row) == 6 or row[0] in bus._built]
    assert len(rows) == 6 and len(built) == 1  # the compose request, published built
    assert [r.event_type for r in bus.log][1:] == [
        "UpdateTrinketEvent",
        "TrinketContentEvent",
        "UpdateTrinketEvent",
        "TrinketContentEvent",
        "SystemPromptComposedEvent",
    ]
