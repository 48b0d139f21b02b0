"""State stores: where trinket content (and trinket data such as reminders) is kept.

The layout follows the original's Valkey hashes: a *key* (``trinkets:{user_id}``) holds *fields*
(section names) whose values are JSON objects (``{"content", "cache_policy", "updated_at"}``). Two
stores ship: :class:`MemoryStore` (the default, nothing to set up) and :class:`SQLiteStore` (one file,
survives a restart). Values must be JSON-compatible.

Examples
--------
>>> store = MemoryStore()
>>> store.hset("trinkets:ada", "datetime_section", {"content": "x", "cache_policy": False})
>>> store.hget("trinkets:ada", "datetime_section")["content"]
'x'
>>> store.hgetall("trinkets:bob")
{}
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Iterator


def _copy_json(value: Any) -> Any:
    """A deep copy of a JSON-shaped value (dicts and lists; everything else is immutable here).

    Several times faster than ``copy.deepcopy``, which trinkets that read their state from the store
    on every compose would otherwise pay for.
    """
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value


class StateStore(ABC):
    """A hash store: key -> {field -> JSON value}. All methods are thread-safe."""

    @abstractmethod
    def hget(self, key: str, field: str) -> Any | None:
        """The value of one field, or None."""

    @abstractmethod
    def hset(self, key: str, field: str, value: Any) -> None:
        """Set one field (committed at once, or at the end of the enclosing transaction)."""

    @abstractmethod
    def hdel(self, key: str, field: str) -> bool:
        """Remove one field; True if it existed."""

    @abstractmethod
    def hgetall(self, key: str) -> dict[str, Any]:
        """Every field of a key (empty dict if none)."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove a key and all its fields."""

    @abstractmethod
    def keys(self, prefix: str = "") -> list[str]:
        """Keys starting with ``prefix``, sorted."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[StateStore]:
        """Context manager: the writes inside commit together, or not at all if it raises."""

    def close(self) -> None:
        """Release resources (a no-op for the memory store)."""


class MemoryStore(StateStore):
    """An in-process store. Writes keep copies and reads return copies, so a caller that changes a
    value it wrote or read never changes stored state (as with SQLite, which stores JSON text)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()
        self._journal: list[dict[str, dict[str, Any] | None]] = []

    def _remember(self, key: str) -> None:
        # inside a transaction, keep the key's state before its first change so a failure can undo it
        if self._journal and key not in self._journal[-1]:
            old = self._data.get(key)
            self._journal[-1][key] = None if old is None else dict(old)

    def hget(self, key: str, field: str) -> Any | None:
        value = self._data.get(key, {}).get(field)
        return _copy_json(value)

    def hset(self, key: str, field: str, value: Any) -> None:
        with self._lock:
            self._remember(key)
            bucket = self._data.get(key)
            if bucket is None:
                bucket = self._data[key] = {}
            bucket[field] = _copy_json(value)

    def hdel(self, key: str, field: str) -> bool:
        with self._lock:
            bucket = self._data.get(key)
            if not bucket or field not in bucket:
                return False
            self._remember(key)
            del bucket[field]
            if not bucket:
                del self._data[key]
            return True

    def hgetall(self, key: str) -> dict[str, Any]:
        with self._lock:
            return {field: _copy_json(value) for field, value in self._data.get(key, {}).items()}

    def delete(self, key: str) -> None:
        with self._lock:
            if key in self._data:
                self._remember(key)
                del self._data[key]

    def keys(self, prefix: str = "") -> list[str]:
        with self._lock:
            return sorted(k for k in self._data if k.startswith(prefix))

    @contextmanager
    def transaction(self) -> Iterator["MemoryStore"]:
        with self._lock:
            self._journal.append({})
            try:
                yield self
            except BaseException:
                undo = self._journal.pop()
                for key, old in undo.items():
                    if old is None:
                        self._data.pop(key, None)
                    else:
                        self._data[key] = old
                raise
            else:
                done = self._journal.pop()
                if self._journal:  # nested: the outer transaction must be able to undo these too
                    for key, old in done.items():
                        self._journal[-1].setdefault(key, old)

    def __repr__(self) -> str:
        return f"MemoryStore(keys={len(self._data)})"


class SQLiteStore(StateStore):
    """A store in one SQLite file: survives a process restart; each write (or transaction) is one
    SQLite transaction, so a crash never leaves half of it.

    Parameters
    ----------
    path:
        The database file (created with its parent folder if missing), or ":memory:".
    durability:
        "normal" (default: WAL with synchronous=NORMAL; committed data survives a process crash) or
        "full" (synchronous=FULL; also survives a power cut, slower).
    """

    def __init__(self, path: "str | os.PathLike[str]", *, durability: str = "normal") -> None:
        if durability not in ("normal", "full"):
            raise ValueError(f"durability must be 'normal' or 'full', got {durability!r}")
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS hashes (key TEXT NOT NULL, field TEXT NOT NULL, "
                "value TEXT NOT NULL, PRIMARY KEY (key, field)) WITHOUT ROWID")
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"cannot open state store {self.path!r}: {exc}") from None

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for components that keep their own tables in the same file."""
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._depth:
                yield self._conn
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator["SQLiteStore"]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._depth = 0
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._depth = 0
                self._conn.execute("COMMIT")

    def hget(self, key: str, field: str) -> Any | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM hashes WHERE key=? AND field=?",
                                     (key, field)).fetchone()
        return None if row is None else json.loads(row[0])

    def hset(self, key: str, field: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False)
        with self._write() as conn:
            conn.execute("INSERT INTO hashes (key, field, value) VALUES (?, ?, ?) "
                         "ON CONFLICT (key, field) DO UPDATE SET value=excluded.value",
                         (key, field, text))

    def hdel(self, key: str, field: str) -> bool:
        with self._write() as conn:
            cur = conn.execute("DELETE FROM hashes WHERE key=? AND field=?", (key, field))
            return cur.rowcount > 0

    def hgetall(self, key: str) -> dict[str, Any]:
        # a WITHOUT ROWID table has no insertion order; fields come sorted, a stable order
        with self._lock:
            rows = self._conn.execute("SELECT field, value FROM hashes WHERE key=? ORDER BY field",
                                      (key,)).fetchall()
        return {field: json.loads(value) for field, value in rows}

    def delete(self, key: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM hashes WHERE key=?", (key,))

    def keys(self, prefix: str = "") -> list[str]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT key FROM hashes WHERE key LIKE ? ESCAPE '\\' ORDER BY key",
                (escaped + "%",)).fetchall()
        return [r[0] for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
