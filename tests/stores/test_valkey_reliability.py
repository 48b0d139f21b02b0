"""ValkeyStore when things go wrong, on a real server (the ``valkey_server`` fixture; skipped
without one): two writing processes, secrets in error messages, refused commands, many sections."""

from __future__ import annotations

import json
import multiprocessing
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

valkey = pytest.importorskip("valkey", reason="the valkey client is not installed (pip install 'wm-kernel[valkey]')")

from trinkets.peanutgallery_trinket import PeanutGalleryTrinket  # noqa: E402
from trinkets.reminders import ReminderManager  # noqa: E402
from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.core.composer import StragglerSectionWarning  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.stores.valkey import ValkeyStore  # noqa: E402

START = "2026-11-30T09:00:00+00:00"


@pytest.fixture
def client(valkey_server: Any) -> Iterator[Any]:
    """A plain client on a server emptied per test."""
    c = valkey.Valkey.from_url(valkey_server.url, decode_responses=True)
    c.flushdb()
    yield c
    c.flushdb()
    c.close()


def feeding_session(store: ValkeyStore, continuum_id: str = "c1") -> Session:
    return Session(
        base_prompt="Hi.",
        clock=ManualClock(START),
        store=store,
        user_id="ada",
        continuum_id=continuum_id,
        trinkets=[PeanutGalleryTrinket, ReminderManager],
    )


# -- item 1: ids and counters are atomic on the server, against another process


def _count_in_another_process(url: str, count: int, start: Any) -> list[int]:
    store = ValkeyStore(url)
    start.wait()
    handed = [store.hincrby("counters:ada", "added") for _ in range(count)]
    with store.transaction():  # inside a transaction too
        handed += [store.hincrby("counters:ada", "added") for _ in range(count)]
    store.close()
    return handed


def _feed_in_another_process(url: str, tag: str, count: int, start: Any) -> list[str]:
    store = ValkeyStore(url)
    s = feeding_session(store, continuum_id=f"notebook-{tag}")
    shared = feeding_session(store)  # both processes feed this conversation
    start.wait()
    acknowledged = []
    for i in range(count):
        acknowledged.append(shared.trinket("PeanutGalleryTrinket").add_guidance("concern", f"{tag} {i}", ttl=100))
        acknowledged.append(s.trinket("ReminderManager").add_reminder(f"{tag} {i}", "2026-12-01T09:00:00+00:00"))
    store.close()
    return acknowledged


def test_two_processes_counting_on_one_server_get_every_number_once(valkey_server, client) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(2)
        with context.Pool(2) as pool:
            runs = [pool.apply_async(_count_in_another_process, (valkey_server.url, 150, start)) for _ in range(2)]
            handed = [n for run in runs for n in run.get(timeout=120)]
    assert sorted(handed) == list(range(1, 601))
    assert client.hget("counters:ada", "added") == "600"


def test_two_processes_feeding_one_user_on_one_server_keep_every_acknowledged_item(valkey_server, client) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(2)
        with context.Pool(2) as pool:
            runs = [
                pool.apply_async(_feed_in_another_process, (valkey_server.url, tag, 50, start)) for tag in ("A", "B")
            ]
            acknowledged = [item for run in runs for item in run.get(timeout=120)]
    s = feeding_session(ValkeyStore(valkey_server.url))
    guidance = s.trinket("PeanutGalleryTrinket").entries
    reminders = s.trinket("ReminderManager").reminders()
    assert len(guidance) == 100 and len(reminders) == 100
    assert set(guidance) | {r["id"] for r in reminders} == set(acknowledged)
    assert {e.text for e in guidance.values()} == {f"{t} {i}" for t in "AB" for i in range(50)}
    assert {r["title"] for r in reminders} == {f"{t} {i}" for t in "AB" for i in range(50)}
    assert sorted(int(r["id"].removeprefix("rem_")) for r in reminders) == list(range(1, 101))


def test_a_counter_holding_no_integer_is_a_value_error_and_stays(valkey_server, client) -> None:
    client.hset("counters:ada", "added", '"seven"')
    store = ValkeyStore(valkey_server.url)
    with pytest.raises(
        ValueError,
        match=r"^field 'added' of 'counters:ada' holds no integer; "
        r"cannot add to it$",
    ):
        store.hincrby("counters:ada", "added")
    assert client.hget("counters:ada", "added") == '"seven"'


def test_a_read_only_store_counts_in_the_process_and_writes_nothing(valkey_server, client) -> None:
    client.hset("counters:ada", "added", "5")
    store = ValkeyStore(valkey_server.url, read_only=True)
    assert store.hincrby("counters:ada", "added") == 6
    assert store.hincrby("counters:ada", "added", 2) == 8
    assert client.hget("counters:ada", "added") == "5"


# -- item 3: the password never shows

SECRET = "s3cret-Pa55"


@pytest.mark.parametrize(
    "url",
    [
        f"valky://:{SECRET}@127.0.0.1:1/0",  # a mistyped scheme
        f"redis:/:{SECRET}@127.0.0.1:1/0",  # a missing slash: the password is no password
        f"valkey:/:{SECRET}@127.0.0.1:1/0",
        f"127.0.0.1:1?password={SECRET}",  # no scheme at all
        f"valkey://127.0.0.1:1/0?password={SECRET}",  # the password as a query parameter
        f"valkey://ada:{SECRET}@127.0.0.1:1/0",
        f"valkey://ada:{SECRET}@127.0.0.1:port/0",  # a port that is not a number
        f"valkey://:{SECRET}@127.0.0.1:1/notadb",
        f"valkey://127.0.0.1:1/0?db=x&password={SECRET}",
    ],
)
def test_the_password_never_shows_in_an_error(url: str) -> None:
    with pytest.raises((ValueError, ConnectionError)) as info:
        ValkeyStore(url, timeout=0.5)
    message = str(info.value)
    assert SECRET not in message and "s3cret" not in message
    assert "\n" not in message


def test_the_password_in_a_query_parameter_shows_as_stars(valkey_server) -> None:
    store = ValkeyStore(f"{valkey_server.url}?password=&client_name=nb")
    assert store.url == f"{valkey_server.url}?password=***&client_name=nb"
    with pytest.raises(ValueError) as info:
        ValkeyStore(f"valky://127.0.0.1:1/0?password={SECRET}")
    assert str(info.value) == (
        "not a Valkey URL: 'valky://127.0.0.1:1/0?password=***' (expected "
        "valkey://host:port/db; schemes: valkey, valkeys, redis, rediss, unix)"
    )


@pytest.mark.parametrize(
    "line",
    [
        f"--store valky://:{SECRET}@127.0.0.1:1/0",
        f"--store valkey://127.0.0.1:1/0?password={SECRET} --read-only",
        f"--stor valkey://:{SECRET}@127.0.0.1:1/0",
        f"--store valkey://:{SECRET}@127.0.0.1:1/0 --read-only --bogus",
    ],
)
def test_the_password_never_shows_through_the_magic(ip: Any, line: str) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as info:
        ip.run_line_magic("wm_session", line)
    assert SECRET not in str(info.value)


# -- item 7: refusals and wrong types are one clear line


@pytest.fixture
def limited_url(valkey_server: Any, client: Any) -> Iterator[str]:
    """The URL of a user the server lets run everything but the hash reads."""
    client.execute_command("ACL", "SETUSER", "limited", "on", ">pw", "~*", "+@all", "-hgetall", "-hget")
    yield valkey_server.url.replace("valkey://", "valkey://limited:pw@")
    client.execute_command("ACL", "DELUSER", "limited")


def test_a_command_the_servers_acl_refuses_is_one_clear_line(limited_url, valkey_server) -> None:
    from wm_kernel.stores.valkey_errors import ValkeyPermissionError

    store = ValkeyStore(limited_url)
    with pytest.raises(ValkeyPermissionError) as info:
        store.hgetall("trinkets:ada")
    shown = valkey_server.url.replace("valkey://", "valkey://limited:***@")
    assert str(info.value) == (
        f"Valkey server {shown} refused to read 'trinkets:ada': "
        f"this user has no permissions to run the 'hgetall' "
        f"command"
    )
    assert isinstance(info.value, PermissionError)


def test_a_key_of_another_type_is_one_clear_line(valkey_server, client) -> None:
    client.set("trinkets:ada", "a string, not a hash")
    store = ValkeyStore(valkey_server.url)
    for read in (
        lambda: store.hgetall("trinkets:ada"),
        lambda: store.hget("trinkets:ada", "x"),
        lambda: store.hset("trinkets:ada", "x", 1),
    ):
        with pytest.raises(ValueError) as info:
            read()
        assert str(info.value).startswith(f"Valkey server {valkey_server.url}: cannot ")
        assert str(info.value).endswith(
            " 'trinkets:ada': it holds another type of value than this store keeps there (written by something else?)"
        )
    assert client.get("trinkets:ada") == "a string, not a hash"


def test_one_unreadable_section_of_a_deployment_hides_no_other(ip, valkey_server, client) -> None:
    import wm_kernel

    client.hset(
        "trinkets:ada",
        "datetime_section",
        json.dumps({"content": "<current_datetime>now</current_datetime>", "cache_policy": False, "updated_at": START}),
    )
    client.hset("trinkets:ada", "broken", "{not json")
    ip.run_line_magic("wm_session", f"--store {valkey_server.url} --user-id ada --read-only")
    p = wm_kernel.current_session().compose()
    assert p.section("datetime_section").content == "<current_datetime>now</current_datetime>"
    assert [(o.name, o.reason, o.error) for o in p.omitted] == [
        (
            "broken",
            "trinket failed",
            f"ValueError: {valkey_server.url}: field 'broken' of 'trinkets:ada' is not "
            f"JSON (written by something else?)",
        )
    ]


def test_sections_the_server_refuses_or_holds_as_another_type_are_a_usage_error(
    ip, valkey_server, client, limited_url
) -> None:
    from IPython.core.error import UsageError

    client.set("trinkets:bob", "a string")
    with pytest.raises(
        UsageError,
        match=r"^Valkey server .*: cannot read 'trinkets:bob': it "
        r"holds another type",
    ):
        ip.run_line_magic("wm_session", f"--store {valkey_server.url} --user-id bob --read-only")
    with pytest.raises(
        UsageError,
        match=r"^Valkey server valkey://limited:\*\*\*@.* refused to "
        r"read 'session:ada:",
    ):
        ip.run_line_magic("wm_session", f"--store {limited_url} --user-id ada --read-only")


# -- item 14: a read-only compose reads each section alone, however many are stored


def _compose_reads(url: str, client: Any, user: str, n: int) -> int:
    """Fields the server sent back for one compose of a read-only session mirroring n sections."""
    from trinkets.stored_section import mirror_stored_sections

    client.hset(
        f"trinkets:{user}",
        mapping={
            f"s{i:03d}": json.dumps({"content": f"<s>{i}</s>", "cache_policy": False, "updated_at": START})
            for i in range(n)
        },
    )
    s = Session(
        base_prompt="Hi.",
        store=ValkeyStore(url, read_only=True),
        user_id=user,
        trinkets=[],
        clock=ManualClock(START),
        instruments=(),
    )
    mirror_stored_sections(s)
    with warnings.catch_warnings():  # the sections are not in the layout: appended, as expected
        warnings.simplefilter("ignore", StragglerSectionWarning)
        s.compose()
        client.config_resetstat()
        s.compose()
    stats = client.info("commandstats")
    whole = stats.get("cmdstat_hgetall", {}).get("calls", 0)
    single = stats.get("cmdstat_hget", {}).get("calls", 0)
    return int(whole * n + single)  # an HGETALL sends every field


def test_a_read_only_compose_reads_a_number_of_fields_linear_in_the_sections(valkey_server, client) -> None:
    small = _compose_reads(valkey_server.url, client, "small", 20)
    large = _compose_reads(valkey_server.url, client, "large", 80)
    assert large <= 4 * small + 8  # was 16 times as many: every section's read sent them all


# -- issue 34 item 7: a write is stored once, or its error says it may have landed
@pytest.fixture
def persistent_server(tmp_path: Any) -> Iterator[Any]:
    from valkey_server import MISSING_REASON, LocalServer, server_binary

    binary = server_binary()
    if binary is None:
        pytest.skip(MISSING_REASON)
    server = LocalServer(binary, tmp_path, persistent=True)
    server.start()
    yield server
    server.stop()


@pytest.mark.slow
def test_writes_under_kill_9_and_restart_land_once_or_say_they_may_have(persistent_server: Any) -> None:
    import threading
    import time

    from wm_kernel.stores import keys
    from wm_kernel.stores.valkey_errors import ValkeyUnavailableError

    store = ValkeyStore(persistent_server.url, timeout=1.0)
    s = Session(
        base_prompt="Hi.",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        store=store,
        user_id="ada",
        continuum_id="c1",
        trinkets=[ReminderManager],
    )
    reminders = s.trinket("ReminderManager")
    stop = threading.Event()
    outcomes: list[str] = []

    def stored_titles() -> list[str]:
        return [r["title"] for r in store.hgetall(keys.reminders("ada")).values()]

    def writing() -> None:
        number = 0
        while not stop.is_set():
            title = f"r{number}"
            while True:  # what a careful caller does: repeat a failed call, unless it may have landed
                try:
                    reminders.add_reminder(title, "2026-12-01T10:00:00+00:00")
                    outcomes.append("ok")
                    break
                except ValkeyUnavailableError as exc:
                    maybe = getattr(exc, "may_have_landed", False)
                    outcomes.append("may" if maybe else "failed")
                    if maybe:
                        while True:
                            try:
                                landed = title in stored_titles()
                                break
                            except ValkeyUnavailableError:
                                time.sleep(0.05)
                        if landed:
                            break
                    time.sleep(0.02)
            number += 1

    thread = threading.Thread(target=writing, daemon=True)
    thread.start()
    for trial in range(12):
        time.sleep(0.05 + 0.013 * trial)
        persistent_server.kill()
        time.sleep(0.02 * (trial % 3))
        persistent_server.start()
    time.sleep(0.2)
    stop.set()
    thread.join(timeout=60)
    assert not thread.is_alive()
    titles = stored_titles()
    assert len(titles) > 20
    twice = sorted({t for t in titles if titles.count(t) > 1})
    assert twice == [], f"stored twice after a retry: {twice} ({outcomes.count('failed')} failed calls)"
