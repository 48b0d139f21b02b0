"""ValkeyStore: the state store on a running Valkey (or Redis 7) server, in the original's layout.

The original system keeps each trinket's last content in the hash ``trinkets:{user_id}`` (field =
section name, value = the JSON text ``{"content", "cache_policy", "updated_at"}``). This store keeps
every hash of the :class:`~wm_kernel.stores.embedded.StateStore` contract as a server hash of the same name, each
field's value as JSON text, so a Session pointed at a deployment's server sees that user's sections
and the original's readers see what a Session writes. The original also caches a user's conversation
segments in the string key ``manifest_segments:{user_id}``; this store shows it as the hash
``manifest:{user_id}`` that :class:`~trinkets.manifest_trinket.ManifestTrinket` reads, when that hash
does not exist on the server. MIRA keeps a user's location as the string ``location:{user_id}``
(the JSON object, ``EX 86400``): this store reads and writes the LocationTrinket's hash
``locations:{user_id}`` there, never as a hash, the time it was set read from the key's expiry
(docs/valkey.md has the whole mapping).

Writes are all-or-nothing: one command, or one MULTI/EXEC for the writes of a
:meth:`ValkeyStore.transaction`. A server that cannot be reached, times out or restarts mid-call is a
:class:`ValkeyUnavailableError` naming the server and the operation; nothing of the failed write is
applied, and the next call reconnects, so a session keeps working once the server is back.

``read_only=True`` never sends a command that writes. The session's own changes (its composed
sections, a reminder fed in the notebook) stay in this process, layered over the server's data:
:meth:`ValkeyStore.local_changes` lists them, and a field the server changes afterwards shows the
server's new value (the later write wins), so the view follows the deployment live.

Requires the ``valkey`` client package (``pip install 'wm-kernel[valkey]'``).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from wm_kernel.stores import keys
from wm_kernel.stores.embedded import StateStore
from wm_kernel.stores.original_layout import (
    LOCATION_FIELD,
    LOCATION_SECONDS,
    location_fields,
    location_value,
    manifest_fields,
)
from wm_kernel.stores.server_url import check_url
from wm_kernel.stores.valkey_errors import (
    ErrorKinds,
    ValkeyReplyError,
    ValkeyUnavailableError,
    never_sent,
    one_line,
    scrub,
    server_error,
)
from wm_kernel.utils.checks import check_int, check_timeout

T = TypeVar("T")


#: The original's manifest cache (a string key holding a JSON list of segments) and the hash this
#: project's ManifestTrinket reads instead.
ORIGINAL_MANIFEST_PREFIX = keys.ORIGINAL_MANIFEST_PREFIX
MANIFEST_PREFIX = keys.MANIFEST_PREFIX
#: MIRA's location string and the hash this project's LocationTrinket keeps it as.
ORIGINAL_LOCATION_PREFIX = keys.ORIGINAL_LOCATION_PREFIX
LOCATION_PREFIX = keys.LOCATION_PREFIX

_GLOB_SPECIALS = "\\*?[]"


#: How long a write's marker (its write id) stays on the server beyond twice the store's timeout:
#: only as long as a dropped write can take to be resolved.
WRITE_MARKER_SECONDS = 30


def _glob_escape(text: str) -> str:
    return "".join("\\" + ch if ch in _GLOB_SPECIALS else ch for ch in text)


class _Local:
    """Changes not (yet) on the server, per key: field -> (server text when first changed here,
    text now or None for deleted), and whether the whole key was deleted first."""

    def __init__(self) -> None:
        self.fields: dict[str, dict[str, tuple[str | None, str | None]]] = {}
        self.cleared: set[str] = set()

    def copy(self) -> _Local:
        other = _Local()
        other.fields = {key: dict(fields) for key, fields in self.fields.items()}
        other.cleared = set(self.cleared)
        return other

    def __bool__(self) -> bool:
        return bool(self.fields or self.cleared)


class ValkeyStore(StateStore):
    """A state store on a Valkey or Redis server, in the original's record layout.

    Long because: each method of the StateStore interface (hget, hset, hdel, hincrby, keys,
    transaction...) is written twice over, for the server and for the changes kept in this process
    (read-only mode and open transactions), with the server's errors turned into
    ValkeyUnavailableError at every call.

    Parameters
    ----------
    url:
        ``valkey://[[user]:password@]host:port/db`` (``redis://`` works too; ``valkeys://`` and
        ``rediss://`` use TLS; ``unix:///path/to/socket?db=0``).
    read_only:
        Never write to the server; the session's own changes stay in this process (see the module
        docstring).
    prefix:
        Prepended to every key on the server, to keep experiments apart on a shared server. The
        default (no prefix) uses the original's key names.
    timeout:
        Seconds to wait for the connection and for each reply before giving up.

    Raises
    ------
    ValueError
        For a URL this store cannot use.
    ValkeyUnavailableError
        When the server does not answer a PING at construction.
    """

    def __init__(self, url: str, *, read_only: bool = False, prefix: str = "", timeout: float = 5.0) -> None:
        if not isinstance(url, str) or not url.strip():
            raise ValueError(f"the Valkey URL must be a non-empty string, got {url!r}")
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        check_timeout(timeout)  # 1e308 would overflow the socket's time_t at the first command
        shown_url, secrets = check_url(url)
        try:
            import valkey
            from valkey.backoff import NoBackoff
            from valkey.retry import Retry
        except ImportError:
            raise ImportError("ValkeyStore needs the valkey client: pip install 'wm-kernel[valkey]'") from None
        self.url = shown_url
        self.read_only = read_only
        self.prefix = prefix
        self._secrets = secrets
        self._errors: tuple[type[BaseException], ...] = (
            valkey.exceptions.ConnectionError,
            valkey.exceptions.TimeoutError,
            OSError,
        )
        self._refused: type[BaseException] = valkey.exceptions.NoPermissionError
        self._replies: type[BaseException] = valkey.exceptions.ResponseError
        self._kinds = ErrorKinds(self._errors, self._refused)
        try:
            # one transparent retry: the first command after a server restart meets a dead pooled
            # connection, and every command sent here is safe to repeat (absolute values; a
            # repeated HINCRBY skips a number, never hands one out twice)
            self._client = valkey.Valkey.from_url(
                url,
                decode_responses=True,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 1),
                retry_on_error=[valkey.exceptions.ConnectionError, valkey.exceptions.TimeoutError],
            )
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not a usable Valkey URL {self.url!r}: {scrub(one_line(exc), secrets)}") from None
        # writes go through a client of their own that never repeats a command by itself: a
        # write whose connection drops is resolved by its write id (see _write)
        self._writer = valkey.Valkey.from_url(
            url,
            decode_responses=True,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        self._timeout = float(timeout)
        self._lock = threading.RLock()
        self._local = _Local()
        self._depth = 0
        self._call("connect", "ping", lambda c: c.ping())

    def _write(self, what: str, key: str, commands: Callable[[Any], None]) -> list[Any]:
        """Run ``commands(pipe)`` in one MULTI/EXEC with a write id (a marker string set in the
        same transaction, kept :data:`WRITE_MARKER_SECONDS` plus twice the timeout), and return the replies of
        ``commands``. If the connection drops after the write was sent, the write is resolved
        once the server answers again: the marker is there (it landed: done) or not (it did not:
        sent once more, same id). If the server does not answer again within the timeout, the
        ValkeyUnavailableError says the write may have landed. A write never lands twice."""
        write_id = uuid.uuid4().hex
        marker = self._server_key(keys.write_marker(key.split(", ")[0], write_id))

        def send(client: Any) -> list[Any]:
            pipe = client.pipeline(transaction=True)
            commands(pipe)
            pipe.set(marker, "1", ex=WRITE_MARKER_SECONDS + int(2 * self._timeout))
            return list(pipe.execute())[:-1]

        try:
            return send(self._writer)
        except self._errors as exc:
            if never_sent(exc):
                raise self._unavailable(what, key, exc) from None
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                if self._writer.exists(marker):
                    return []  # it landed before the connection dropped
                return send(self._writer)
            except self._errors as exc:
                if time.monotonic() >= deadline:
                    raise self._unavailable(what, key, exc, maybe_landed=True) from None
                time.sleep(0.05)

    def _unavailable(
        self, what: str, key: str, exc: BaseException, *, maybe_landed: bool = False
    ) -> ValkeyUnavailableError:
        landed = (
            ("; the write was sent before the connection failed and may have landed: read it back before repeating it")
            if maybe_landed
            else ""
        )
        error = ValkeyUnavailableError(
            scrub(f"Valkey server {self.url} unavailable ({what} {key!r}): {one_line(exc)}{landed}", self._secrets)
        )
        error.may_have_landed = maybe_landed
        return error

    # -- talking to the server
    def _call(self, what: str, key: str, command: Callable[[Any], T]) -> T:
        """``command(client)``; whatever goes wrong is one line naming the server, the operation
        and the key, never the password: ValkeyUnavailableError (no answer),
        ValkeyPermissionError (an ACL refused it), ValkeyReplyError (any other error reply)."""
        try:
            return command(self._client)
        except ValkeyUnavailableError:
            raise  # already one line (a write resolved by its write id)
        except (*self._errors, self._refused, self._replies) as exc:
            raise server_error(exc, self._kinds, f"Valkey server {self.url}", what, key, self._secrets) from None

    def _server_key(self, key: str) -> str:
        return self.prefix + key

    def _server_hash(self, key: str) -> dict[str, str]:
        """The server's fields of ``key`` as JSON text (the original's manifest cache, translated,
        when ``key`` is a manifest hash the server does not have)."""
        if key.startswith(LOCATION_PREFIX):
            return self._original_location(key)
        raw: dict[str, str] = self._call("read", key, lambda c: c.hgetall(self._server_key(key)))
        if not raw and key.startswith(MANIFEST_PREFIX):
            return self._original_manifest(key)
        return raw

    def _server_field(self, key: str, field: str) -> str | None:
        """The server's JSON text of one field (one HGET: the cost does not grow with the key)."""
        if key.startswith(LOCATION_PREFIX):
            return self._original_location(key).get(field)
        text: str | None = self._call("read", key, lambda c: c.hget(self._server_key(key), field))
        if text is None and key.startswith(MANIFEST_PREFIX):
            return self._server_hash(key).get(field)
        return text

    def _original_manifest(self, manifest_key: str) -> dict[str, str]:
        source = keys.original_manifest_segments(manifest_key)
        text = self._call("read", source, lambda c: c.get(self._server_key(source)))
        return {} if text is None else manifest_fields(text, f"{self.url}: the original's {source!r}")

    def _original_location(self, location_key: str) -> dict[str, str]:
        source = keys.original_location(location_key)
        server_key = self._server_key(source)

        def read(c: Any) -> list[Any]:
            pipe = c.pipeline(transaction=True)  # the value and its expiry as one moment saw them
            pipe.get(server_key)
            pipe.expiretime(server_key)
            return list(pipe.execute())

        text, expires_at = self._call("read", source, read)
        return location_fields(text, int(expires_at), f"{self.url}: MIRA's {source!r}")

    def _location_commands(self, pipe: Any, key: str, text: str | None) -> None:
        """Queue MIRA's write of the location hash ``key``'s state (``text``; None: deleted)."""
        source = self._server_key(keys.original_location(key))
        if text is None:
            pipe.delete(source)
        else:
            pipe.set(source, location_value(LOCATION_FIELD, text, key), ex=LOCATION_SECONDS)

    def _decode(self, key: str, field: str, text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            raise ValueError(
                f"{self.url}: field {field!r} of {key!r} is not JSON (written by something else?)"
            ) from None

    # -- the view: server data with this process's changes on top
    def _view(self, key: str) -> dict[str, str]:
        local = self._local
        server = {} if key in local.cleared else self._server_hash(key)
        changes = local.fields.get(key)
        if not changes:
            return server
        if self.read_only:
            # a field the server changed since this process changed it: the server's write is later
            stale = [f for f, (base, _) in changes.items() if server.get(f) != base]
            for f in stale:
                del changes[f]
            if not changes:
                del local.fields[key]
        merged = dict(server)
        for f, (_, text) in changes.items():
            if text is None:
                merged.pop(f, None)
            else:
                merged[f] = text
        return merged

    def _field_view(self, key: str, field: str) -> str | None:
        """What :meth:`_view` gives for one field, reading only that field from the server."""
        local = self._local
        server = None if key in local.cleared else self._server_field(key, field)
        changes = local.fields.get(key)
        if not changes or field not in changes:
            return server
        base, text = changes[field]
        if self.read_only and server != base:  # the server's write is later
            del changes[field]
            if not changes:
                del local.fields[key]
            return server
        return text

    def _change(self, key: str, field: str, text: str | None) -> None:
        changes = self._local.fields.setdefault(key, {})
        if field not in changes:
            base = None if key in self._local.cleared else self._server_field(key, field)
            changes[field] = (base, text)
        else:
            changes[field] = (changes[field][0], text)

    def _staging(self) -> bool:
        """Whether writes go to the local layer (read-only, or inside a transaction)."""
        return self.read_only or self._depth > 0

    # -- the StateStore contract
    def hget(self, key: str, field: str) -> Any | None:
        with self._lock:
            if self._local:
                text = self._field_view(key, field)
            else:
                text = self._server_field(key, field)
        return None if text is None else self._decode(key, field, text)

    def hgetall(self, key: str) -> dict[str, Any]:
        with self._lock:
            view = self._view(key)
        return {field: self._decode(key, field, view[field]) for field in sorted(view)}

    def fields(self, key: str) -> list[str]:
        with self._lock:
            return sorted(self._view(key))  # the JSON texts, not decoded

    def hset(self, key: str, field: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False)  # a TypeError here has changed nothing
        if key.startswith(LOCATION_PREFIX):
            location_value(field, text, key)  # a ValueError here has changed nothing either
        with self._lock:
            if self._staging():
                self._change(key, field, text)
            elif key.startswith(LOCATION_PREFIX):
                source = keys.original_location(key)
                self._call(
                    "write",
                    source,
                    lambda c: self._write("write", source, lambda p: self._location_commands(p, key, text)),
                )
            else:
                self._call(
                    "write",
                    key,
                    lambda c: self._write("write", key, lambda pipe: pipe.hset(self._server_key(key), field, text)),
                )

    def hdel(self, key: str, field: str) -> bool:
        with self._lock:
            if not self._staging() and key.startswith(LOCATION_PREFIX):
                if field != LOCATION_FIELD:
                    return False
                source = keys.original_location(key)
                replies = self._call(
                    "write",
                    source,
                    lambda c: self._write("write", source, lambda p: self._location_commands(p, key, None)),
                )
                return bool(replies[0]) if replies else True
            if not self._staging():
                replies = self._call(
                    "write",
                    key,
                    lambda c: self._write("write", key, lambda pipe: pipe.hdel(self._server_key(key), field)),
                )
                # no replies: it landed before a dropped connection, its count unknown
                return bool(replies[0]) if replies else True
            if self._field_view(key, field) is None:
                return False
            self._change(key, field, None)
            return True

    def delete(self, key: str) -> None:
        with self._lock:
            if not self._staging():
                target = keys.original_location(key) if key.startswith(LOCATION_PREFIX) else key
                self._call(
                    "write",
                    target,
                    lambda c: self._write("write", target, lambda pipe: pipe.delete(self._server_key(target))),
                )
            elif self.read_only:
                # field by field: a field the server writes afterwards shows again (it is newer)
                for field in self._view(key):
                    self._change(key, field, None)
            else:
                self._local.fields.pop(key, None)
                self._local.cleared.add(key)

    def hincrby(self, key: str, field: str, amount: int = 1) -> int:
        """Add ``amount`` to the integer in a field atomically on the server (HINCRBY), also inside
        a transaction, so two processes never get the same number: a number handed out inside a
        block that then fails stays used (skipped, never handed out again). A field this process
        changed in the open transaction, and any field of a read-only store, is counted here."""
        if not isinstance(key, str) or not isinstance(field, str):
            raise TypeError("a store key and field must be str")
        check_int(amount, "amount", minimum=-(2**63))
        if amount >= 2**63:
            raise ValueError(f"amount must be below 2**63, got {amount}")
        with self._lock:
            staged = self._local.fields.get(key, {})
            if self.read_only or field in staged or key in self._local.cleared:
                return super().hincrby(key, field, amount)
            try:
                return int(self._call("write", key, lambda c: c.hincrby(self._server_key(key), field, amount)))
            except ValkeyReplyError as exc:
                if "not an integer" in exc.reply:
                    raise ValueError(f"field {field!r} of {key!r} holds no integer; cannot add to it") from None
                if "overflow" in exc.reply:
                    raise ValueError(
                        f"field {field!r} of {key!r}: adding {amount} would pass the "
                        f"server's 64-bit limit; nothing added"
                    ) from None
                raise

    def keys(self, prefix: str = "") -> list[str]:
        with self._lock:
            pattern = _glob_escape(self.prefix + prefix) + "*"
            found = self._call("list", prefix, lambda c: list(c.scan_iter(match=pattern, count=500)))
            if not ORIGINAL_LOCATION_PREFIX.startswith(prefix) and (
                LOCATION_PREFIX.startswith(prefix) or prefix.startswith(LOCATION_PREFIX)
            ):
                # MIRA's location strings (which the scan above missed), listed as the location
                # hashes they are read as
                rest = prefix[len(LOCATION_PREFIX) :] if prefix.startswith(LOCATION_PREFIX) else ""
                more = _glob_escape(self.prefix + ORIGINAL_LOCATION_PREFIX + rest) + "*"
                found += self._call("list", prefix, lambda c: list(c.scan_iter(match=more, count=500)))
            names = {name[len(self.prefix) :] for name in found}
            # only hashes are this store's records; the original's manifest cache shows as its hash
            candidates = sorted(names | set(self._local.fields) | self._local.cleared)
            types = self._call("list", prefix, lambda c: self._types(c, candidates))
            result = set()
            for name, kind in zip(candidates, types, strict=True):
                if not name.startswith(prefix) and not name.startswith(ORIGINAL_LOCATION_PREFIX):
                    continue
                if name.startswith(ORIGINAL_MANIFEST_PREFIX) and kind == "string":
                    alias = keys.manifest_from_original(name)
                    if alias.startswith(prefix) and self._view(alias):
                        result.add(alias)
                elif name.startswith(ORIGINAL_LOCATION_PREFIX) and kind == "string":
                    alias = keys.location_from_original(name)
                    if alias.startswith(prefix) and self._view(alias):
                        result.add(alias)
                elif name.startswith(prefix) and (kind == "hash" or name in self._local.fields) and self._view(name):
                    result.add(name)
            return sorted(result)

    def _types(self, client: Any, names: list[str]) -> list[str]:
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.type(self._server_key(name))
        return list(pipe.execute())

    @contextmanager
    def transaction(self) -> Iterator[ValkeyStore]:
        """Writes inside commit together (one MULTI/EXEC), or not at all if the block raises or the
        server fails; reads inside see the block's own writes."""
        with self._lock:
            saved = self._local.copy()  # a failed inner block undoes only its own writes
            self._depth += 1
            try:
                yield self
            except BaseException:
                self._depth -= 1
                self._local = saved
                raise
            self._depth -= 1
            if self._depth == 0 and not self.read_only:
                pending, self._local = self._local, _Local()
                self._commit(pending)

    def _commit(self, pending: _Local) -> None:
        if not pending:
            return

        def run(pipe: Any) -> None:
            for key in sorted(pending.cleared):
                target = keys.original_location(key) if key.startswith(LOCATION_PREFIX) else key
                pipe.delete(self._server_key(target))
            for key, changes in pending.fields.items():
                if key.startswith(LOCATION_PREFIX):
                    if LOCATION_FIELD in changes:
                        self._location_commands(pipe, key, changes[LOCATION_FIELD][1])
                    continue
                sets = {f: text for f, (_, text) in changes.items() if text is not None}
                dels = [f for f, (_, text) in changes.items() if text is None]
                if sets:
                    pipe.hset(self._server_key(key), mapping=sets)
                if dels:
                    pipe.hdel(self._server_key(key), *dels)

        named = ", ".join(sorted({*pending.cleared, *pending.fields}))
        self._call("commit", named, lambda c: self._write("commit", named, run))

    # -- for users
    def local_changes(self) -> dict[str, dict[str, Any]]:
        """What this process changed that the server does not have (read-only mode): key ->
        {field -> value, or None where this process deleted it}."""
        with self._lock:
            for key in list(self._local.fields):
                self._view(key)  # drops changes the server has overtaken since
            return {
                key: {f: None if text is None else json.loads(text) for f, (_, text) in sorted(changes.items())}
                for key, changes in sorted(self._local.fields.items())
            }

    def ping(self) -> bool:
        """True if the server answers now (ValkeyUnavailableError otherwise)."""
        return bool(self._call("ping", "", lambda c: c.ping()))

    def close(self) -> None:
        with self._lock:
            self._client.close()  # type: ignore[no-untyped-call]
            self._writer.close()  # type: ignore[no-untyped-call]

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        prefix = f", prefix={self.prefix!r}" if self.prefix else ""
        return f"ValkeyStore({self.url!r}{mode}{prefix})"
