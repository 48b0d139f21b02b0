"""One conversation's :class:`~wm_kernel.instruments.history.History` as a persistent store holds it.

A :class:`StoredHistory` writes each recorded compose in one store transaction (its new texts, its
new entries and the turn's record, in the hashes of
:data:`~wm_kernel.instruments.history_records.SCHEMA`), never over a record another writer holds
(a :class:`~wm_kernel.instruments.history_records.HistoryConflictError`), and reads a history back:
every text checked against its digest, the shared hashes of schema version 1 read where a user's
own lack a record, and a damaged record a ValueError naming the conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from wm_kernel.core.prompt import OmittedSection
from wm_kernel.instruments.history_records import (
    ENTRIES_KEY,
    RECORD_VERSION,
    TEXTS_KEY,
    Budget,
    Compose,
    Entry,
    HistoryConflictError,
    composes_key,
    conflict_message,
    entries_key,
    text_digest,
    texts_key,
    versioned,
)
from wm_kernel.stores.embedded import StateStore

__all__ = ["StoredHistory"]


def _record_json(compose: Compose, budget: Budget | None) -> dict[str, Any]:
    """The record of one turn stored under ``history:{user_id}:{continuum_id}`` (see ``SCHEMA``)."""
    frame = compose.hud_frame
    record = {
        "v": RECORD_VERSION,
        "segment": compose.segment,
        "segment_turn": compose.segment_turn,
        "entries": [e.id for e in compose.entries],
        "hud_frame": None if frame is None else list(frame),
    }
    if compose.at is not None:
        record["at"] = compose.at.isoformat()
    if budget is not None:
        record["budget"] = {
            "priorities": dict(budget[0]),
            "dropped": [[d.name, d.trinket, d.tokens, d.priority] for d in budget[1]],
        }
    return record


class StoredHistory:
    """The records of conversation ``continuum_id`` of ``user_id`` in ``store`` (not a MemoryStore:
    a History keeps everything in memory itself)."""

    def __init__(self, store: StateStore, user_id: str, continuum_id: str) -> None:
        self.store = store
        self.user_id = user_id
        self.continuum_id = continuum_id

    def write(
        self,
        compose: Compose,
        budget: Budget | None,
        fresh: list[Entry],
        fresh_texts: dict[bytes, str],
        *,
        held: Callable[[int], tuple[Compose, Budget | None] | None],
    ) -> None:
        """Store ``compose`` (with its ``budget``) as its turn's record, with the entries and texts
        it is the first to use, in one transaction. ``held(turn)`` is the record (and budget) the
        History holds for the turn, if any, asked inside the transaction: a stored record that is
        not that one is another writer's, and a HistoryConflictError (nothing is written)."""
        store = self.store
        with store.transaction():
            texts_hash, entries_hash = texts_key(self.user_id), entries_key(self.user_id)
            for digest, text in fresh_texts.items():
                store.hset(texts_hash, digest.hex(), {"v": RECORD_VERSION, "text": text})
            for entry in fresh:
                store.hset(entries_hash, entry.id, entry.to_json())
            key = composes_key(self.user_id, self.continuum_id)
            # compare and set, inside the transaction: never replace what another writer recorded
            stored = store.hget(key, str(compose.turn))
            mine = held(compose.turn)
            if stored is not None and (mine is None or stored != _record_json(*mine)):
                raise HistoryConflictError(conflict_message(self.user_id, self.continuum_id, compose.turn))
            store.hset(key, str(compose.turn), _record_json(compose, budget))

    def load(self, texts: dict[bytes, str], entries: dict[str, Entry]) -> tuple[dict[int, Compose], dict[int, Budget]]:
        """Every stored turn's record and budget, in turn order. The texts and entries they use are
        taken from ``texts`` (by digest) and ``entries`` (by id) where there, else read and added."""
        store = self.store
        key = composes_key(self.user_id, self.continuum_id)
        stored = store.hgetall(key)
        composes: dict[int, Compose] = {}
        budgets: dict[int, Budget] = {}
        try:
            rows = sorted((int(turn), versioned(value)) for turn, value in stored.items())
            previous: tuple[Entry, ...] = ()
            for turn, row in rows:
                used = tuple(self._entry(entry_id, texts, entries) for entry_id in row["entries"])
                if used == previous:
                    used = previous  # an unchanged prompt shares the tuple, as when recorded
                frame, at = row["hud_frame"], row.get("at")
                composes[turn] = Compose(
                    turn,
                    row["segment"],
                    row["segment_turn"],
                    used,
                    None if frame is None else (frame[0], frame[1]),
                    None if at is None else datetime.fromisoformat(at),
                )
                budget = row.get("budget")
                if budget is not None:
                    budgets[turn] = (
                        dict(budget["priorities"]),
                        tuple(
                            OmittedSection(name, trinket, "over budget", tokens=tokens, priority=priority)
                            for name, trinket, tokens, priority in budget["dropped"]
                        ),
                    )
                previous = used
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            where = getattr(store, "path", None) or f"the store's key {key!r}"
            raise ValueError(
                f"the history of conversation {self.continuum_id!r} (user "
                f"{self.user_id!r}) in {str(where)!r} is damaged and cannot be read "
                f"({type(exc).__name__}: {exc})"
            ) from None
        return composes, budgets

    def _entry(self, entry_id: str, texts: dict[bytes, str], entries: dict[str, Entry]) -> Entry:
        """The entry ``entry_id``, from ``entries`` or read (and added to it, its text to ``texts``)."""
        found = entries.get(entry_id)
        if found is not None:
            return found
        store = self.store
        raw = store.hget(entries_key(self.user_id), entry_id)
        if raw is None:  # a history of schema version 1: the entries every user shared
            raw = store.hget(ENTRIES_KEY, entry_id)
        raw = versioned(raw)
        digest = bytes.fromhex(raw["digest"])
        text = texts.get(digest)
        if text is None:
            text = self._text(raw["digest"], digest)
            texts[digest] = text
        entry = Entry(
            raw["name"],
            raw["placement"],
            raw["trinket"],
            bool(raw["cache_policy"]),
            bool(raw["straggler"]),
            text,
            digest,
        )
        if entry.id != entry_id:
            raise ValueError(f"entry {entry_id} does not match its content")
        entries[entry_id] = entry
        return entry

    def _text(self, hex_digest: str, digest: bytes) -> str:
        """The stored text of ``digest``; a ValueError if it is not the text recorded under it."""
        stored = self.store.hget(texts_key(self.user_id), hex_digest)
        if stored is None:
            stored = self.store.hget(TEXTS_KEY, hex_digest)
        text = versioned(stored)["text"]
        # whoever can write the store could rewrite a text: never show one that is not the
        # text recorded under this digest
        if not isinstance(text, str) or text_digest(text) != digest:
            raise ValueError(
                f"the stored text {hex_digest[:12]}... does not match its "
                f"digest (rewritten in the store?); it is not shown"
            )
        return text
