"""ValkeyStore on a real server (started by the ``valkey_server`` fixture; skipped without one):
the original's keys, read-only mode, all-or-nothing writes, outages and restarts, and the magic."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

valkey = pytest.importorskip("valkey", reason="the valkey client is not installed (pip install 'wm-kernel[valkey]')")

from trinkets.reminders import ReminderManager  # noqa: E402
from trinkets.stored_section import mirror_stored_sections  # noqa: E402
from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.core.profile import Profile  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.stores.valkey import ValkeyStore  # noqa: E402
from wm_kernel.stores.valkey_errors import ValkeyUnavailableError  # noqa: E402

START = "2026-11-30T09:00:00+00:00"
DATETIME = {
    "content": "<current_datetime>TODAY IS MONDAY</current_datetime>",
    "cache_policy": False,
    "updated_at": "2026-11-30T08:59:00+00:00",
}


@pytest.fixture
def client(valkey_server: Any) -> Iterator[Any]:
    """A plain client, as the original uses it (decoded strings), on a server emptied per test."""
    c = valkey.Valkey.from_url(valkey_server.url, decode_responses=True)
    c.flushdb()
    yield c
    c.flushdb()
    c.close()


def writes_so_far(c: Any) -> int:
    """The server's own count of changes to its data since start (every write command adds)."""
    return int(c.info("persistence")["rdb_changes_since_last_save"])


def write_commands_run(c: Any) -> set[str]:
    """Names of the commands the server has run that carry the 'write' flag."""
    ran = {name.removeprefix("cmdstat_") for name in c.info("commandstats")}
    flags = c.execute_command("COMMAND", "INFO", *sorted(ran))
    return {row[0] for row in flags if row and "write" in row[2]}


def original_session(store: ValkeyStore, user_id: str = "ada", **kwargs: Any) -> Session:
    return Session(
        base_prompt="You help {first_name}.",
        store=store,
        user_id=user_id,
        profile=Profile(first_name="Ada", timezone="Europe/London"),
        clock=ManualClock(START),
        **kwargs,
    )


# -- the original's layout
def test_a_session_writes_sections_the_original_can_read(valkey_server, client):
    store = ValkeyStore(valkey_server.url)
    s = original_session(store)
    s.compose()
    raw = client.hget("trinkets:ada", "datetime_section")
    assert json.loads(raw) == {
        "content": "<current_datetime>TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:00 AM GMT.</current_datetime>",
        "cache_policy": False,
        "updated_at": "2026-11-30T09:00:00+00:00",
    }
    assert client.type("trinkets:ada") == "hash"


def test_sections_the_original_wrote_show_in_the_session(valkey_server, client):
    client.hset("trinkets:ada", "datetime_section", json.dumps(DATETIME))
    client.hset(
        "trinkets:ada",
        "domaindoc",
        json.dumps(
            {
                "content": "<domain_knowledge>garden</domain_knowledge>",
                "cache_policy": True,
                "updated_at": "2026-11-30T08:00:00+00:00",
            }
        ),
    )
    s = original_session(ValkeyStore(valkey_server.url, read_only=True), trinkets=[])
    assert s.working_memory.get_trinket_state("datetime_section") == {
        "section_name": "datetime_section",
        "content": DATETIME["content"],
        "cache_policy": False,
        "last_updated": "2026-11-30T08:59:00+00:00",
    }
    assert mirror_stored_sections(s) == ["datetime_section", "domaindoc"]
    p = s.compose()
    assert p.section("datetime_section").content == DATETIME["content"]
    assert p.section("domaindoc").cache_policy is True
    assert p["post_history_items"] == ["<domain_knowledge>garden</domain_knowledge>"]

    # the deployment changes a section and drops another: the next compose follows
    client.hset(
        "trinkets:ada",
        "datetime_section",
        json.dumps({**DATETIME, "content": "<current_datetime>LATER</current_datetime>"}),
    )
    client.hdel("trinkets:ada", "domaindoc")
    p = s.compose()
    assert p.section("datetime_section").content == "<current_datetime>LATER</current_datetime>"
    assert "domaindoc" not in p.section_names()


def test_the_original_manifest_cache_shows_as_the_manifest(valkey_server, client):
    from trinkets.manifest_trinket import ManifestTrinket

    segments = [
        {
            "id": "1",
            "display_title": "Planning the garden",
            "status": "collapsed",
            "start_time": "2026-11-30T07:00:00+00:00",
            "end_time": "2026-11-30T08:00:00+00:00",
            "created_at": "2026-11-30T07:00:00+00:00",
        },
        {
            "id": "2",
            "display_title": "[Segment in progress]",
            "status": "active",
            "start_time": "2026-11-30T08:30:00+00:00",
            "end_time": None,
            "created_at": None,
        },
    ]
    client.setex("manifest_segments:ada", 300, json.dumps(segments))
    store = ValkeyStore(valkey_server.url, read_only=True)
    assert store.hgetall("manifest:ada") == {
        "active": {"title": "[Segment in progress]", "start": "2026-11-30T08:30:00+00:00"},
        "segments": [
            {"title": "Planning the garden", "start": "2026-11-30T07:00:00+00:00", "end": "2026-11-30T08:00:00+00:00"}
        ],
    }
    assert store.keys("manifest") == ["manifest:ada"]
    s = original_session(store, trinkets=[ManifestTrinket])
    # the deployment's collapsed segment, then this session's own active one (kept locally)
    assert [(row["title"], row["status"]) for row in s.trinket("ManifestTrinket").segments()] == [
        ("Planning the garden", "collapsed"),
        ("Current conversation", "active"),
    ]
    assert json.loads(client.get("manifest_segments:ada")) == segments


def test_segments_the_deployment_writes_later_show_at_the_next_compose(valkey_server, client):
    from trinkets.manifest_trinket import ManifestTrinket

    s = original_session(ValkeyStore(valkey_server.url, read_only=True), trinkets=[ManifestTrinket])
    s.compose()
    assert "Lunch plans" not in s.composed.section("conversation_manifest").content
    # the deployment collapses a segment: its manifest cache is written again
    client.setex(
        "manifest_segments:ada",
        300,
        json.dumps(
            [
                {
                    "id": "1",
                    "display_title": "Lunch plans",
                    "status": "collapsed",
                    "start_time": "2026-11-30T07:00:00+00:00",
                    "end_time": "2026-11-30T08:00:00+00:00",
                    "created_at": "2026-11-30T07:00:00+00:00",
                }
            ]
        ),
    )
    s.compose()
    assert "Lunch plans" in s.composed.section("conversation_manifest").content


# -- read-only
def test_read_only_never_writes_to_the_server(valkey_server, client):
    client.hset("trinkets:ada", "datetime_section", json.dumps(DATETIME))
    client.config_resetstat()
    before = writes_so_far(client)
    store = ValkeyStore(valkey_server.url, read_only=True)
    s = original_session(store)  # every built-in trinket, feeding all it can
    mirror_stored_sections(s)
    s.trinket("ReminderManager").add_reminder("Call the bank", "2026-11-30T10:00:00+00:00")
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=1)
    with store.transaction():
        store.hset("notes:ada", "a", 1)
        store.delete("trinkets:ada")
    s.compose()
    s.advance_turn()
    s.advance_turn()
    s.collapse_segment(summary="Planning chat")
    s.compose()
    assert writes_so_far(client) == before
    assert write_commands_run(client) == set()
    assert '<reminder id="rem_1" title="Call the bank"' in s.composed["notification_center"]
    assert json.loads(client.hget("trinkets:ada", "datetime_section")) == DATETIME
    assert client.keys("*") == ["trinkets:ada"]


def test_read_only_keeps_local_changes_until_the_server_writes_later(valkey_server, client):
    client.hset("k", "f", json.dumps("server 1"))
    store = ValkeyStore(valkey_server.url, read_only=True)
    store.hset("k", "f", "mine")
    store.hset("k", "g", "only mine")
    assert store.hgetall("k") == {"f": "mine", "g": "only mine"}
    assert store.local_changes() == {"k": {"f": "mine", "g": "only mine"}}
    client.hset("k", "f", json.dumps("server 2"))  # a later write on the server wins
    assert store.hget("k", "f") == "server 2"
    assert store.local_changes() == {"k": {"g": "only mine"}}
    assert store.hdel("k", "f") is True
    assert store.hget("k", "f") is None
    assert json.loads(client.hget("k", "f")) == "server 2"
    assert store.keys() == ["k"]


# -- all or nothing
def test_a_transaction_reaches_other_clients_whole_or_not_at_all(valkey_server, client):
    store = ValkeyStore(valkey_server.url)
    store.hset("reminders:ada", "rem_1", {"title": "old"})
    with store.transaction():
        store.hset("reminders:ada", "rem_2", {"title": "new"})
        store.hdel("reminders:ada", "rem_1")
        store.hset("reminders:ada:meta", "next", 3)
        # not yet visible to anyone else, but to the block itself
        assert client.hgetall("reminders:ada") == {"rem_1": json.dumps({"title": "old"})}
        assert store.hgetall("reminders:ada") == {"rem_2": {"title": "new"}}
    assert client.hgetall("reminders:ada") == {"rem_2": json.dumps({"title": "new"})}
    assert client.hget("reminders:ada:meta", "next") == "3"

    client.config_resetstat()
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.hset("reminders:ada", "rem_3", {"title": "never"})
            store.delete("reminders:ada:meta")
            raise RuntimeError("crash mid-way")
    assert client.hgetall("reminders:ada") == {"rem_2": json.dumps({"title": "new"})}
    assert client.hget("reminders:ada:meta", "next") == "3"
    assert write_commands_run(client) == set()
    stats = client.info("commandstats")
    assert "cmdstat_multi" not in stats


def test_the_writes_of_a_transaction_go_in_one_multi_exec(valkey_server, client):
    store = ValkeyStore(valkey_server.url)
    client.config_resetstat()
    with store.transaction():
        store.hset("a", "x", 1)
        store.hset("b", "y", 2)
        store.delete("c")
    stats = client.info("commandstats")
    assert stats["cmdstat_multi"]["calls"] == 1
    assert stats["cmdstat_exec"]["calls"] == 1


# -- outages
def test_an_unreachable_server_is_one_clear_line(fresh_valkey_server):
    url = fresh_valkey_server.url
    fresh_valkey_server.stop()
    with pytest.raises(ValkeyUnavailableError) as info:
        ValkeyStore(url, timeout=1)
    message = str(info.value)
    assert message.startswith(f"Valkey server {url} unavailable (connect 'ping'): ")
    assert "\n" not in message


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="not a Valkey URL: 'http://x:1/0'"):
        ValkeyStore("http://x:1/0")
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        ValkeyStore("valkey://127.0.0.1:1/0", timeout=0)


def test_a_restart_mid_session_fails_loudly_then_the_session_works_again(fresh_valkey_server):
    store = ValkeyStore(fresh_valkey_server.url, timeout=2)
    s = original_session(store, trinkets=[ReminderManager])
    reminders = s.trinket("ReminderManager")
    reminders.add_reminder("Call the bank", "2026-11-30T10:00:00+00:00")
    fresh_valkey_server.stop()

    # a feed while the server is down is an error the caller sees, naming the server
    with pytest.raises(ValkeyUnavailableError, match=f"Valkey server {fresh_valkey_server.url} unavailable"):
        reminders.add_reminder("Dentist", "2026-11-30T11:00:00+00:00")
    # a compose shows the failure on the trinket rather than a stale section, and the History
    # (which records every compose in the same store) fails loudly too: that turn is not recorded
    with pytest.raises(ValkeyUnavailableError, match="unavailable"):
        s.compose()
    assert reminders.error.startswith("ValkeyUnavailableError: Valkey server")
    assert "active_reminders" not in s.composed.section_names()

    fresh_valkey_server.start()  # empty: nothing was persisted
    reminders.add_reminder("Dentist", "2026-11-30T11:00:00+00:00")
    s.compose()
    assert reminders.error == ""
    assert [r["title"] for r in reminders.reminders()] == ["Dentist"]
    assert 'title="Dentist"' in s.composed["notification_center"]


def test_a_failed_commit_leaves_the_server_unchanged_and_the_store_usable(fresh_valkey_server):
    store = ValkeyStore(fresh_valkey_server.url, timeout=2)
    store.hset("k", "keep", 1)
    with pytest.raises(ValkeyUnavailableError, match="commit"):
        with store.transaction():
            store.hset("k", "keep", 2)
            store.hset("k", "new", 3)
            fresh_valkey_server.stop()
    fresh_valkey_server.start()
    assert store.hgetall("k") == {}  # the restarted server is empty; nothing half-applied
    store.hset("k", "after", 1)
    with store.transaction():
        store.hset("k", "more", 2)
    assert store.hgetall("k") == {"after": 1, "more": 2}


def test_keys_treat_glob_characters_literally(valkey_server, client):
    store = ValkeyStore(valkey_server.url, prefix="p[1]*:")
    store.hset("a*b", "f", 1)
    store.hset("a?b", "f", 1)
    store.hset("axb", "f", 1)
    client.set("a*string", "not a hash")
    assert store.keys("a*") == ["a*b"]
    assert store.keys("a?") == ["a?b"]
    assert store.keys() == ["a*b", "a?b", "axb"]
    # each write's short-lived write id (":wm-write:") aside
    assert sorted(k for k in client.keys("*") if ":wm-write:" not in k) == [
        "a*string",
        "p[1]*:a*b",
        "p[1]*:a?b",
        "p[1]*:axb",
    ]


def test_a_field_that_is_not_json_names_the_key(valkey_server, client):
    client.hset("trinkets:bob", "broken", "{not json")
    store = ValkeyStore(valkey_server.url)
    with pytest.raises(ValueError, match="field 'broken' of 'trinkets:bob' is not JSON"):
        store.hget("trinkets:bob", "broken")


# -- MIRA's location: the string location:{user_id}, EX 86400
OSLO = {"location_name": "Oslo", "sunrise": "8:58 AM", "sunset": "3:15 PM",
        "forecast": [{"hour": "10 AM", "temp": "-2°C", "condition": "Snow", "precip_pct": None}]}  # fmt: skip
OSLO_TEXT = (
    "=== Location Context ===\nLocation: Oslo\nSunrise: 8:58 AM / Sunset: 3:15 PM\n"
    "Forecast (next 2 hours):\n- 10 AM: -2°C, Snow, None% chance of rain"
)


def location_session(store: ValkeyStore, clock: ManualClock) -> Session:
    from trinkets import LocationTrinket

    return Session(store=store, user_id="ada", clock=clock, trinkets=[LocationTrinket])


def test_set_location_writes_miras_string_with_its_24_hour_expiry(valkey_server, client):
    s = location_session(ValkeyStore(valkey_server.url), ManualClock(START))
    s.trinket("LocationTrinket").set_location(OSLO)
    assert client.type("location:ada") == "string"
    assert json.loads(client.get("location:ada")) == OSLO  # the payload itself, as POST /location stores it
    assert 86390 < client.ttl("location:ada") <= 86400
    assert not client.exists("locations:ada")  # no hash of the kit's own beside it
    assert s.compose()["cached_content"].endswith(OSLO_TEXT)
    s.trinket("LocationTrinket").set_location(None)
    assert not client.exists("location:ada")


def test_miras_location_shows_until_its_key_expires(valkey_server, client):
    from datetime import UTC, datetime

    # MIRA stored it 23 hours ago: one hour of its 24 left
    client.set("location:ada", json.dumps(OSLO), ex=3600)
    expires_at = client.expiretime("location:ada")
    store = ValkeyStore(valkey_server.url, read_only=True)
    set_at = datetime.fromtimestamp(expires_at - 86400, UTC)
    assert store.hgetall("locations:ada") == {"state": {"payload": OSLO, "set_at": set_at.isoformat()}}
    assert store.keys() == store.keys("location") == store.keys("locations") == ["locations:ada"]
    assert store.keys("locations:a") == ["locations:ada"]
    assert store.keys("locations:b") == []
    clock = ManualClock(datetime.fromtimestamp(expires_at - 3600, UTC))  # the server's now
    s = location_session(store, clock)
    loc = s.trinket("LocationTrinket")
    assert loc.generate_content({}) == OSLO_TEXT
    clock.advance(seconds=3600)  # the key's last second on the server: still there
    assert loc.generate_content({}) == OSLO_TEXT
    clock.advance(seconds=1)  # gone, as the key is
    assert loc.generate_content({}) == ""
    # and on the server: once the key has expired, a new session finds no location
    client.pexpire("location:ada", 1)
    for _ in range(200):  # the server expires it within a millisecond or so
        if not client.exists("location:ada"):
            break
        time.sleep(0.01)
    assert store.hgetall("locations:ada") == {}
    assert store.keys("location") == []
    fresh = location_session(ValkeyStore(valkey_server.url, read_only=True), ManualClock(START))
    assert fresh.trinket("LocationTrinket").payload is None


def test_a_location_key_without_an_expiry_shows_while_it_is_there(valkey_server, client):
    client.set("location:ada", json.dumps(OSLO))
    s = location_session(ValkeyStore(valkey_server.url, read_only=True), ManualClock(START))
    s.clock.advance(days=30)
    assert s.trinket("LocationTrinket").generate_content({}) == OSLO_TEXT


def test_read_only_keeps_a_new_location_in_the_process(valkey_server, client):
    client.set("location:ada", json.dumps(OSLO), ex=3600)
    client.config_resetstat()
    store = ValkeyStore(valkey_server.url, read_only=True)
    s = location_session(store, ManualClock(START))
    s.trinket("LocationTrinket").set_location({"location_name": "Bergen"})
    assert store.hget("locations:ada", "state") == {"payload": {"location_name": "Bergen"}, "set_at": START}
    assert json.loads(client.get("location:ada")) == OSLO
    assert write_commands_run(client) == set()


def test_a_transaction_writes_the_location_with_the_rest(valkey_server, client):
    store = ValkeyStore(valkey_server.url)
    with store.transaction():
        store.hset("locations:ada", "state", {"payload": OSLO, "set_at": START})
        store.hset("notes:ada", "a", 1)
        assert not client.exists("location:ada")
    assert json.loads(client.get("location:ada")) == OSLO
    assert 86390 < client.ttl("location:ada") <= 86400
    with store.transaction():
        store.delete("locations:ada")
    assert not client.exists("location:ada")


def test_what_miras_layout_cannot_hold_is_refused_and_nothing_written(valkey_server, client):
    store = ValkeyStore(valkey_server.url)
    with pytest.raises(ValueError, match="only its field 'state' can be written, not 'other'"):
        store.hset("locations:ada", "other", 1)
    with pytest.raises(ValueError, match="expected"):
        store.hset("locations:ada", "state", {"payload": "Oslo"})
    assert client.keys("*") == []
    client.set("location:ada", "[1, 2]")
    with pytest.raises(ValueError, match="MIRA's 'location:ada' cannot be read"):
        store.hget("locations:ada", "state")


# -- the magic
def test_wm_session_attaches_read_only_to_a_server(ip, valkey_server, client):
    from IPython.core.error import UsageError

    import wm_kernel

    client.hset("trinkets:ada", "datetime_section", json.dumps(DATETIME))
    ip.run_line_magic("wm_session", f"--store {valkey_server.url} --user-id ada --read-only --clock {START}")
    s = wm_kernel.current_session()
    assert isinstance(s.store, ValkeyStore) and s.store.read_only
    assert s.user_id == "ada"
    assert list(s.trinkets) == ["Stored_datetime_section"]
    assert s.compose().section("datetime_section").content == DATETIME["content"]
    with pytest.raises(UsageError, match="--read-only needs --store"):
        ip.run_line_magic("wm_session", "--read-only")
    with pytest.raises(UsageError, match="not a Valkey URL"):
        ip.run_line_magic("wm_session", "--store sqlite:///x.db")
    assert wm_kernel.current_session() is s
