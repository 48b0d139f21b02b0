"""Where a user's domain documents are kept: one hash of the session's state store.

The hash is ``domaindocs:{user_id}`` (:func:`wm_kernel.stores.keys.domaindocs`), one field per
document label, each a record (``title``, ``description``, ``enabled``, ``archived``,
``position`` and the flat list of ``sections`` records that :mod:`trinkets.domaindoc.tree`
arranges). :class:`DocumentStore` reads them in creation order and changes one inside a store
transaction, so a change that raises leaves the stored documents as they were. Used by
:class:`~trinkets.domaindoc.DomaindocTrinket`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wm_kernel.utils.checks import check_str

if TYPE_CHECKING:
    from wm_kernel.stores.embedded import StateStore


class DocumentStore:
    """One user's domain documents in ``store`` under ``key``: every record (:meth:`all`), one
    record as a copy (:meth:`load`), and the calls that create, change and delete one."""

    __slots__ = ("store", "key")

    def __init__(self, store: StateStore, key: str) -> None:
        self.store = store
        self.key = key

    def all(self) -> list[dict[str, Any]]:
        """Every stored record with its ``label``, in creation order; a record that is not a
        mapping comes as ``{"label", "malformed": True}``."""
        docs = []
        for label, record in self.store.hgetall(self.key).items():
            docs.append({**record, "label": label} if isinstance(record, dict) else {"label": label, "malformed": True})

        # creation order; SQLite returns fields sorted by label, so order needs its own number
        def key(doc: dict[str, Any]) -> tuple[int, str]:
            position = doc.get("position")
            if isinstance(position, int) and not isinstance(position, bool):
                return (position, doc["label"])
            return (0, doc["label"])

        return sorted(docs, key=key)

    def load(self, label: object) -> dict[str, Any]:
        """A copy of the record of ``label``, with its ``label`` and (at least empty) ``sections``;
        ValueError for an unknown or malformed document."""
        label = check_str(label, "document label")
        record = self.store.hget(self.key, label)
        if record is None:
            known = ", ".join(repr(d["label"]) for d in self.all())
            raise ValueError(f"unknown document {label!r} (documents: {known or 'none'})")
        if not isinstance(record, dict) or not isinstance(record.get("sections", []), list):
            raise ValueError(f"document {label!r} is malformed in the store")
        record.setdefault("sections", [])
        record["label"] = label
        return record

    def change(self, label: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Apply ``change`` to the record of ``label`` and store it, in one transaction."""
        # the record is a copy: a change that raises leaves the store as it was
        with self.store.transaction():
            record = self.load(label)
            change(record)
            del record["label"]  # the field name holds it
            self.store.hset(self.key, label, record)

    def create(self, label: str, title: str, description: str, enabled: bool, shared_by: str | None = None) -> None:
        """Store a new document under ``label``: no sections, not archived, after every existing
        one (its ``position``); ValueError when ``label`` exists. A document another user shares
        records who shares it (``shared_by``; a personal one has no such field)."""
        with self.store.transaction():
            existing = self.all()
            if any(d["label"] == label for d in existing):
                raise ValueError(f"document {label!r} already exists")
            positions = [d.get("position") for d in existing]
            position = max([p for p in positions if isinstance(p, int)], default=0) + 1
            record: dict[str, Any] = {
                "title": title,
                "description": description,
                "enabled": enabled,
                "archived": False,
                "position": position,
                "sections": [],
            }
            if shared_by is not None:
                record["shared_by"] = shared_by
            self.store.hset(self.key, label, record)

    def delete(self, label: str) -> None:
        """Remove the document ``label``; ValueError for an unknown one."""
        with self.store.transaction():
            self.load(label)
            self.store.hdel(self.key, label)
