"""State stores: the original's record layout, persistence across a process, transactions, users."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from wm_kernel.stores.embedded import MemoryStore, SQLiteStore


# the real server starts a process: its case is slow (pytest -m "not slow" starts none)
@pytest.fixture(params=["memory", "sqlite", pytest.param("valkey", marks=pytest.mark.slow)])
def store(request, tmp_path):
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "sqlite":
        s = SQLiteStore(tmp_path / "state.sqlite3")
        yield s
        s.close()
    else:
        # a real server; each test gets keys of its own under a prefix, so tests never meet
        from wm_kernel.stores.valkey import ValkeyStore

        server = request.getfixturevalue("valkey_server")
        s = ValkeyStore(server.url, prefix=f"test:{request.node.name}:")
        yield s
        for key in s.keys():
            s.delete(key)
        s.close()


def test_hash_operations(store):
    store.hset("trinkets:ada", "a", {"content": "x", "cache_policy": True, "updated_at": "t"})
    store.hset("trinkets:ada", "b", {"content": "y", "cache_policy": False, "updated_at": "t"})
    assert store.hget("trinkets:ada", "a") == {"content": "x", "cache_policy": True, "updated_at": "t"}
    assert sorted(store.hgetall("trinkets:ada")) == ["a", "b"]
    assert store.hdel("trinkets:ada", "a") is True
    assert store.hdel("trinkets:ada", "a") is False
    assert store.hget("trinkets:ada", "a") is None
    assert store.keys("trinkets:") == ["trinkets:ada"]
    store.delete("trinkets:ada")
    assert store.hgetall("trinkets:ada") == {}


def test_users_never_see_each_other(store):
    store.hset("trinkets:ada", "s", {"content": "ada's"})
    store.hset("trinkets:bob", "s", {"content": "bob's"})
    assert store.hget("trinkets:ada", "s") == {"content": "ada's"}
    assert store.hgetall("trinkets:bob") == {"s": {"content": "bob's"}}
    assert store.keys("trinkets:a") == ["trinkets:ada"]


def test_reads_are_copies(store):
    store.hset("k", "f", {"list": [1]})
    got = store.hget("k", "f")
    got["list"].append(2)
    assert store.hget("k", "f") == {"list": [1]}


def test_writes_are_copies(store):
    value = {"list": [1]}
    store.hset("k", "f", value)
    value["list"].append(2)
    value["extra"] = True
    assert store.hget("k", "f") == {"list": [1]}
    assert store.hgetall("k") == {"f": {"list": [1]}}


def test_a_failed_transaction_changes_nothing(store):
    store.hset("k", "keep", 1)
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.hset("k", "keep", 2)
            store.hset("k", "new", 3)
            store.hdel("k", "keep")
            raise RuntimeError("crash mid-way")
    assert store.hgetall("k") == {"keep": 1}
    with store.transaction():
        with store.transaction():
            store.hset("k", "inner", 1)
        store.hset("k", "outer", 1)
    assert sorted(store.hgetall("k")) == ["inner", "keep", "outer"]


def test_keys_prefix_is_literal(store):
    store.hset("a_b", "f", 1)
    store.hset("axb", "f", 1)
    assert store.keys("a_") == ["a_b"]


@pytest.mark.slow
def test_sqlite_survives_a_new_process_and_keeps_the_original_layout(tmp_path):
    path = tmp_path / "state.sqlite3"
    writer = textwrap.dedent(f"""
        from wm_kernel.stores.embedded import SQLiteStore
        s = SQLiteStore({str(path)!r})
        s.hset("trinkets:ada", "datetime_section",
               {{"content": "<t>now</t>", "cache_policy": False, "updated_at": "2026-11-30T09:00:00+00:00"}})
        with s.transaction():
            s.hset("trinkets:ada", "domaindoc", {{"content": "doc", "cache_policy": True, "updated_at": "x"}})
        import os; os._exit(0)   # no close(), no clean shutdown: committed data must still be there
    """)
    subprocess.run([sys.executable, "-c", writer], check=True)
    store = SQLiteStore(path)
    assert store.hget("trinkets:ada", "datetime_section") == {
        "content": "<t>now</t>",
        "cache_policy": False,
        "updated_at": "2026-11-30T09:00:00+00:00",
    }
    raw = store.connection.execute(
        "SELECT value FROM hashes WHERE key='trinkets:ada' AND field='domaindoc'"
    ).fetchone()[0]
    assert json.loads(raw) == {"content": "doc", "cache_policy": True, "updated_at": "x"}


def test_sqlite_bad_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "not-a-db.sqlite3"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ValueError, match="cannot open state store"):
        SQLiteStore(bad)
    with pytest.raises(ValueError, match="durability"):
        SQLiteStore(tmp_path / "x.db", durability="sometimes")
