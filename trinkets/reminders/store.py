"""Where a user's reminders are kept: one hash of the session's state store, read through a cache.

The hash is ``reminders:{user_id}`` (:func:`wm_kernel.stores.keys.reminders`), one field per
reminder id, and the id counter is in ``reminders:{user_id}:meta``. :class:`ReminderStore` reads
them, keeps the open reminders parsed in memory between composes and hands out new ids. Used by
:class:`~trinkets.reminders.ReminderManager`, which writes the records.
"""

from __future__ import annotations

from collections.abc import Hashable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wm_kernel.stores import keys
from wm_kernel.utils.checks import check_str

if TYPE_CHECKING:
    from trinkets.base import TrinketHost


class ReminderStore:
    """The reminders of ``host``'s user in ``host``'s store: every record (:meth:`all`), one record
    (:meth:`get`), the open ones parsed (:meth:`open_rows`) and the next free id (:meth:`next_id`).
    The host's store and user are read on every call, as the trinket read them."""

    __slots__ = ("host", "_open", "_open_version")

    def __init__(self, host: TrinketHost) -> None:
        self.host = host
        self._open: list[dict[str, Any]] | None = None  # see open_rows
        self._open_version: Hashable | None = None

    @property
    def key(self) -> str:
        """The store hash of this user's reminders."""
        return keys.reminders(self.host.user_id)

    def all(self) -> dict[str, dict[str, Any]]:
        """Every stored reminder, id -> record."""
        return self.host.store.hgetall(self.key)

    def get(self, id: str) -> dict[str, Any]:  # noqa: A002
        """The stored record of reminder ``id``; ValueError naming the known ids if there is none."""
        check_str(id, "reminder id")
        record: dict[str, Any] | None = self.host.store.hget(self.key, id)
        if record is None:
            known = ", ".join(sorted(self.all())) or "none"
            raise ValueError(f"unknown reminder id {id!r} (known: {known})")
        return record

    def open_rows(self) -> list[dict[str, Any]]:
        """The open reminders, parsed, by due time then id: the hot set a compose reads. Kept in
        memory while the store's version of the key stays where this store last saw it (the trinket's
        writes update the set in place); read again when anyone else wrote the key, and on every
        call from a store that cannot tell (a Valkey server: the original re-reads too). Completed
        reminders never enter it, so a compose costs what can show, not every reminder stored."""
        version = self.host.store.version(self.key)
        rows = self._open
        if rows is None or version is None or version != self._open_version:
            rows = [_parsed(record) for record in self.all().values() if not record.get("completed_at")]
            rows.sort(key=lambda r: (r["due"], r["id"]))
            self._open, self._open_version = rows, version
        return rows

    def written(
        self,
        id: str,
        record: dict[str, Any] | None,  # noqa: A002
        before: Hashable | None,
    ) -> None:
        """The trinket wrote reminder ``id`` (``record``: as stored now, None once deleted); the
        key's version was ``before`` just before the write. If nobody else had written since the
        set was read, it is updated in place; otherwise it is read again when next needed."""
        rows = self._open
        if rows is not None and before is not None and before == self._open_version:
            rows[:] = [row for row in rows if row["id"] != id]
            if record is not None and not record.get("completed_at"):
                rows.append(_parsed(record))
                rows.sort(key=lambda r: (r["due"], r["id"]))
            self._open_version = self.host.store.version(self.key)
        else:
            self._open = None

    def next_id(self) -> str:
        """A new ``rem_N`` id, never handed out before for this user."""
        # the store's atomic hincrby hands out each number once, also to two processes sharing the
        # store ("next_number" holds the next number to use; a missing field means 1); each
        # candidate is looked up alone, so adding a reminder costs the same with 10 or 10,000
        store, meta = self.host.store, keys.reminders_meta(self.host.user_id)
        if store.hget(meta, "next_number") is None:
            # no counter (reminders written by another program, or a lost meta hash): start past the
            # highest stored rem_<n>, found in one read of the field names, instead of probing
            # every id from 1 (20,000 stored: 40,000 round trips to a server)
            top = max(
                (
                    int(f[4:])
                    for f in store.fields(self.key)
                    if f.startswith("rem_") and f[4:].isdigit() and len(f) < 24
                ),
                default=0,
            )
            if top:
                store.hincrby(meta, "next_number", top + 1)
        while True:
            number = store.hincrby(meta, "next_number") - 1
            if number >= 1 and store.hget(self.key, f"rem_{number}") is None:
                return f"rem_{number}"  # (a caller may have chosen rem_<n> with id=)


def _parsed(record: dict[str, Any]) -> dict[str, Any]:
    """A stored reminder as the renderers read it (``due`` parsed)."""
    return {
        "id": record["id"],
        "title": record["title"],
        "details": record.get("details", ""),
        "category": record["category"],
        "due": datetime.fromisoformat(record["due"]),
    }
