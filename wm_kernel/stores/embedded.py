"""State stores: where trinket content (and trinket data such as reminders) is kept.

The layout follows the original's Valkey hashes: a *key* (``trinkets:{user_id}``) holds *fields*
(section names) whose values are JSON objects (``{"content", "cache_policy", "updated_at"}``). Two
stores ship: :class:`MemoryStore` (the default, nothing to set up) and :class:`SQLiteStore` (one file,
survives a restart). Values must be JSON-compatible, and their text valid Unicode: a string holding
a lone surrogate is refused with a ValueError by every store (SQLite and Valkey could not keep it),
so what was stored before is never touched by it. Every key is built by :mod:`wm_kernel.stores.keys`.
What each store guarantees under crashes, Ctrl-C and a second writer is in docs/reliability.md.

Examples
--------
>>> store = MemoryStore()
>>> store.hset("trinkets:ada", "datetime_section", {"content": "x", "cache_policy": False})
>>> store.hget("trinkets:ada", "datetime_section")["content"]
'x'
>>> store.hgetall("trinkets:bob")
{}
>>> store.hincrby("counters:ada", "added")
1
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from wm_kernel.utils.checks import check_int, check_str, check_timeout, check_unicode


def _copy_json(value: Any) -> Any:
    """A deep copy of a JSON-shaped value (dicts and lists; everything else is immutable here).

    Only dicts and lists are copied; ``copy.deepcopy``'s general machinery (memo, reducers) is what
    trinkets that read their state from the store on every compose would otherwise pay for.
    """
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value


_MISSING = object()  # MemoryStore's undo log: "the field did not exist"


def _checked_copy(value: Any, field: str) -> Any:
    """A copy of the value of ``field`` about to be stored, refusing what no store can keep (see
    the module doc): text with a lone surrogate, and keys that are not strings (JSON objects have
    string keys). ASCII text (most of it) is passed without a scan or a call."""
    if isinstance(value, str):
        return value if value.isascii() else check_unicode(value, f"value of {field!r}")
    if isinstance(value, dict):
        copy = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"value of {field!r}: object keys must be str, got {type(key).__name__}")
            if not key.isascii():
                check_unicode(key, f"value of {field!r}")
            kind = type(item)
            # flat values inline (most records are a few strings and numbers), the rest recursively
            if kind is str:
                copy[key] = item if item.isascii() else check_unicode(item, f"value of {field!r}")
            elif kind is bool or kind is int or kind is float or item is None:
                copy[key] = item
            else:
                copy[key] = _checked_copy(item, field)
        return copy
    if isinstance(value, (list, tuple)):
        return [_checked_copy(item, field) for item in value]
    return value


def _check_name(key: str, field: str | None = None) -> None:
    if not isinstance(key, str):
        raise TypeError(f"a store key must be a str, got {type(key).__name__}")
    if field is not None and not isinstance(field, str):
        raise TypeError(f"a store field must be a str, got {type(field).__name__}")


class StateStore(ABC):
    """A hash store: key -> {field -> JSON value}. All methods are thread-safe.

    The contract every store keeps (MemoryStore, SQLiteStore and any other, such as a Valkey store):

    - keys and fields are str (TypeError otherwise); values are JSON-compatible, and a value with a
      lone surrogate in any string is a ValueError that stores nothing;
    - each single write is atomic; ``transaction()`` makes the writes inside it atomic together;
    - ``hincrby(key, field, amount)`` adds to an integer field atomically, also against other
      processes sharing the store (Valkey: HINCRBY; the default implementation reads and writes in
      one ``transaction()``, which is enough for stores whose transactions exclude other writers),
      and returns the new value; a missing field counts as 0. Stateful trinkets hand out item ids
      and order numbers with it, so two processes feeding one conversation never reuse an id.
    """

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

    def hincrby(self, key: str, field: str, amount: int = 1) -> int:
        """Add ``amount`` to the integer in a field (0 if missing) atomically; the new value.

        A field holding anything but an int is a ValueError and stays as it is."""
        _check_name(key, field)
        check_int(amount, "amount", minimum=-(2**63))
        with self.transaction():
            current = self.hget(key, field)
            if current is None:
                current = 0
            if isinstance(current, bool) or not isinstance(current, int):
                raise ValueError(
                    f"field {field!r} of {key!r} holds {type(current).__name__}, not an int; cannot add to it"
                )
            self.hset(key, field, current + amount)
        return int(current + amount)

    def fields(self, key: str) -> list[str]:
        """The names of a key's fields, sorted, without reading their values (so a value that
        cannot be read does not hide the others)."""
        return sorted(self.hgetall(key))

    def version(self, key: str) -> Hashable | None:
        """A value that changes whenever ``key`` may have changed, whoever changed it (this
        process or another sharing the store); None when this store cannot tell cheaply.

        Trinkets that keep what they read from the store in memory (reminders, the manifest)
        compare it before each compose and read again when it moved; with None they read every
        time, as the original does. The default is None."""
        _check_name(key)
        return None

    def close(self) -> None:  # noqa: B027 - a no-op by default: only stores holding resources override it
        """Release resources (a no-op for the memory store)."""


class MemoryStore(StateStore):
    """An in-process store. Writes keep copies and reads return copies, so a caller that changes a
    value it wrote or read never changes stored state (as with SQLite, which stores JSON text)."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()
        # one undo log per open transaction: (key, field) -> the value before its first change
        # (_MISSING if there was none); per field, so a write costs the same in a key of any size
        self._journal: list[dict[tuple[str, str], Any]] = []
        self._changes: dict[str, int] = {}  # key -> writes to it, for version()

    def version(self, key: str) -> int:
        """How many writes ``key`` has seen (rolled-back ones too): only this process writes here."""
        _check_name(key)
        return self._changes.get(key, 0)

    def _remember(self, key: str, field: str) -> None:
        self._changes[key] = self._changes.get(key, 0) + 1
        if self._journal and (key, field) not in self._journal[-1]:
            self._journal[-1][(key, field)] = self._data.get(key, {}).get(field, _MISSING)

    def hget(self, key: str, field: str) -> Any | None:
        _check_name(key, field)
        value = self._data.get(key, {}).get(field)
        return _copy_json(value)

    def hset(self, key: str, field: str, value: Any) -> None:
        # ASCII str names (every key the kit builds) need no other check
        if not (type(key) is str and type(field) is str and key.isascii() and field.isascii()):
            _check_name(key, field)
            check_unicode(key, "store key")
            check_unicode(field, "store field")
        stored = _checked_copy(value, field)
        with self._lock:
            self._remember(key, field)
            bucket = self._data.get(key)
            if bucket is None:
                bucket = self._data[key] = {}
            bucket[field] = stored

    def hdel(self, key: str, field: str) -> bool:
        _check_name(key, field)
        with self._lock:
            bucket = self._data.get(key)
            if not bucket or field not in bucket:
                return False
            self._remember(key, field)
            del bucket[field]
            if not bucket:
                del self._data[key]
            return True

    def hgetall(self, key: str) -> dict[str, Any]:
        _check_name(key)
        with self._lock:
            return {field: _copy_json(value) for field, value in self._data.get(key, {}).items()}

    def delete(self, key: str) -> None:
        _check_name(key)
        with self._lock:
            if key in self._data:
                for field in self._data[key]:
                    self._remember(key, field)
                del self._data[key]

    def keys(self, prefix: str = "") -> list[str]:
        check_str(prefix, "prefix", empty_ok=True)
        with self._lock:
            return sorted(k for k in self._data if k.startswith(prefix))

    @contextmanager
    def transaction(self) -> Iterator[MemoryStore]:
        with self._lock:
            self._journal.append({})
            try:
                yield self
            except BaseException:
                undo = self._journal.pop()
                for (key, field), old in undo.items():
                    self._changes[key] = self._changes.get(key, 0) + 1
                    bucket = self._data.setdefault(key, {})
                    if old is _MISSING:
                        bucket.pop(field, None)
                    else:
                        bucket[field] = old
                    if not bucket:
                        del self._data[key]
                raise
            else:
                done = self._journal.pop()
                if self._journal:  # nested: the outer transaction must be able to undo these too
                    for name, old in done.items():
                        self._journal[-1].setdefault(name, old)

    def __repr__(self) -> str:
        return f"MemoryStore(keys={len(self._data)})"


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold back Ctrl-C (SIGINT) for the few statements that open or end a transaction, and raise
    it right after: a KeyboardInterrupt between BEGIN and the ``try`` that ends it would otherwise
    leave the connection inside a transaction, and every other process locked out.

    Only the main thread receives signals (and may set handlers); elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:  # a handler not set from Python: leave it alone
        yield
        return
    caught: list[tuple[int, FrameType | None]] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append((signum, frame))

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and callable(previous):
        previous(*caught[0])  # the default handler raises KeyboardInterrupt here
    elif caught and previous == signal.SIG_DFL:
        raise KeyboardInterrupt


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS hashes (key TEXT NOT NULL, field TEXT NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (key, field)) WITHOUT ROWID"
)


def _create_whole(file: Path, durability: str) -> None:
    """Create a new store file whole: built under a temporary name beside it, then linked into
    place (which fails if another process got there first, and then its file is used). Another
    process opening the path at the same moment therefore finds no file, or a whole database;
    never the empty file that ``sqlite3.connect`` leaves until its first write, which it would
    take for an empty file of its own."""
    temporary = file.with_name(f".{file.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        conn = sqlite3.connect(temporary, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={durability.upper()}")
            conn.execute(_SCHEMA)
        finally:
            conn.close()
        try:
            os.link(temporary, file)
        except FileExistsError:
            pass  # another process created it first: use theirs
    except (OSError, sqlite3.Error):
        pass  # no hard links here (or no room): sqlite3.connect creates it, as it always did
    finally:
        for leftover in (
            temporary,
            temporary.with_name(temporary.name + "-wal"),
            temporary.with_name(temporary.name + "-shm"),
        ):
            leftover.unlink(missing_ok=True)


class StoreBusyError(sqlite3.OperationalError):
    """Another connection (another process) kept the SQLite file locked for longer than the store's
    ``timeout``; nothing was written. A ``sqlite3.OperationalError``, as before, with a clearer
    message."""


class StoreFullError(sqlite3.OperationalError):
    """The disk under the SQLite file (or the file's size limit) is full: the transaction was rolled
    back, nothing was written. A ``sqlite3.OperationalError``, as before, with one line saying so."""


def _disk_full(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_FULL ("database or disk is full") or the I/O error a write that found no space gives."""
    text = str(exc)
    return "disk is full" in text or "disk I/O error" in text


class SQLiteStore(StateStore):
    """A store in one SQLite file: survives a process restart; each write (or transaction) is one
    SQLite transaction, so a crash never leaves half of it.

    Every transaction ends, committed or rolled back, whatever interrupts it (an exception, a
    KeyboardInterrupt from Ctrl-C included); see docs/reliability.md. Several processes may share
    the file: a writer waits up to ``timeout`` seconds for another's transaction to end, then gets
    ``sqlite3.OperationalError: database is locked`` with nothing written.

    Parameters
    ----------
    path:
        The database file (created with its parent folder if missing), or ":memory:". A str or an
        ``os.PathLike``; anything else is a TypeError, "" a ValueError. A file that is not an SQLite
        database (or is damaged) is a ValueError; an empty file is used, with a warning.
    durability:
        "normal" (default: WAL with synchronous=NORMAL; committed data survives a process crash) or
        "full" (synchronous=FULL; also survives a power cut, slower).
    timeout:
        Seconds to wait for another process's write to finish (default 5).
    """

    def __init__(self, path: str | os.PathLike[str], *, durability: str = "normal", timeout: float = 5.0) -> None:
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        check_str(path, "path (use ':memory:' for a database that is not kept)")
        check_str(durability, "durability")
        if durability not in ("normal", "full"):
            raise ValueError(f"durability must be 'normal' or 'full', got {durability!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout must be a number of seconds, got {type(timeout).__name__}")
        if not timeout >= 0:
            raise ValueError(f"timeout must be at least 0 seconds, got {timeout}")
        if timeout > 0:
            check_timeout(timeout)  # infinite or 1e308: one line, not a wait that overflows
        self.path = path
        self.timeout = timeout
        if self.path != ":memory:":
            file = Path(self.path).expanduser()
            if file.is_file() and file.stat().st_size == 0:
                warnings.warn(f"state store {self.path!r} was an empty file; starting a new store in it", stacklevel=2)
            file.parent.mkdir(parents=True, exist_ok=True)
            if not file.exists():
                _create_whole(file, durability)
        self._lock = threading.RLock()
        self._depth = 0
        self._changes: dict[str, int] = {}  # key -> this connection's writes to it, for version()
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=timeout)
        except sqlite3.Error as exc:
            raise ValueError(f"cannot open state store {self.path!r}: {exc}") from None
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={durability.upper()}")
            self._conn.execute(_SCHEMA)
            # damage that leaves the header readable shows when the table is read, not before
            self._conn.execute("SELECT count(*) FROM hashes").fetchone()
        except sqlite3.OperationalError:
            self._conn.close()
            raise  # "database is locked" and the like: the file is fine, retrying may work
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ValueError(
                f"cannot open state store {self.path!r}: {exc} (not an SQLite database, or damaged)"
            ) from None

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for components that keep their own tables in the same file."""
        return self._conn

    def _heal(self) -> None:
        # a transaction can only be open here if an interrupt struck outside the deferred windows
        # (e.g. inside contextlib's machinery): end it before anything else runs on the connection
        if self._depth == 0 and self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _end(self, commit: bool) -> None:
        try:
            if commit:
                self._conn.execute("COMMIT")
        finally:
            if self._conn.in_transaction:  # not committing, or COMMIT itself failed
                self._conn.execute("ROLLBACK")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self.transaction():
            yield self._conn

    @contextmanager
    def transaction(self) -> Iterator[SQLiteStore]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            committed = False
            try:
                try:
                    with _interrupts_deferred():
                        self._heal()
                        self._begin()
                        self._depth = 1
                    yield self
                    committed = True
                finally:
                    with _interrupts_deferred():
                        self._depth = 0
                        self._end(committed)
            except sqlite3.OperationalError as exc:
                if isinstance(exc, StoreBusyError) or not _disk_full(exc):
                    raise
                raise StoreFullError(
                    f"state store {self.path!r} cannot grow: the disk (or the file's size limit) is full "
                    f"({exc}); nothing was written, the store is as it was"
                ) from None

    def _begin(self) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            raise StoreBusyError(
                f"state store {self.path!r} is busy: another process kept it locked for more than "
                f"{self.timeout:g} s ({exc}); nothing was written, try again"
            ) from None

    def version(self, key: str) -> tuple[int, int]:
        """(SQLite's data_version, this connection's writes to ``key``): the first moves when
        another connection (another process) commits anything to the file, the second when this
        one writes ``key``."""
        _check_name(key)
        with self._lock:
            self._heal()
            (data_version,) = self._conn.execute("PRAGMA data_version").fetchone()
            return int(data_version), self._changes.get(key, 0)

    def _changed(self, key: str) -> None:
        self._changes[key] = self._changes.get(key, 0) + 1

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            self._heal()
            return self._conn.execute(sql, args).fetchall()

    def hget(self, key: str, field: str) -> Any | None:
        _check_name(key, field)
        rows = self._read("SELECT value FROM hashes WHERE key=? AND field=?", (key, field))
        return None if not rows else json.loads(rows[0][0])

    def hset(self, key: str, field: str, value: Any) -> None:
        _check_name(key, field)
        check_unicode(key, "store key")
        check_unicode(field, "store field")
        text = json.dumps(_checked_copy(value, field), ensure_ascii=False)
        with self._write() as conn:
            self._changed(key)
            conn.execute(
                "INSERT INTO hashes (key, field, value) VALUES (?, ?, ?) "
                "ON CONFLICT (key, field) DO UPDATE SET value=excluded.value",
                (key, field, text),
            )

    def hdel(self, key: str, field: str) -> bool:
        _check_name(key, field)
        with self._write() as conn:
            self._changed(key)
            cur = conn.execute("DELETE FROM hashes WHERE key=? AND field=?", (key, field))
            return cur.rowcount > 0

    def hgetall(self, key: str) -> dict[str, Any]:
        _check_name(key)
        # a WITHOUT ROWID table has no insertion order; fields come sorted, a stable order
        rows = self._read("SELECT field, value FROM hashes WHERE key=? ORDER BY field", (key,))
        return {field: json.loads(value) for field, value in rows}

    def delete(self, key: str) -> None:
        _check_name(key)
        with self._write() as conn:
            self._changed(key)
            conn.execute("DELETE FROM hashes WHERE key=?", (key,))

    def keys(self, prefix: str = "") -> list[str]:
        check_str(prefix, "prefix", empty_ok=True)
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._read("SELECT DISTINCT key FROM hashes WHERE key LIKE ? ESCAPE '\\' ORDER BY key", (escaped + "%",))
        return [r[0] for r in rows]

    def close(self) -> None:
        with self._lock:
            self._heal()
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
