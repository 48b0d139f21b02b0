"""The records a :class:`~wm_kernel.instruments.history.History` stores, and where.

What a history writes is a file format of its own: the store keys (:data:`SCHEMA`, version
:data:`SCHEMA_VERSION`; every record stamped with :data:`RECORD_VERSION`), the distinct section
:class:`Entry` (interned by the text's digest, content-addressed so every history of a user agrees
on its id; a text read back is checked against its digest), the per-turn
:class:`Compose` that references entries, and the error raised when another writer already holds a
turn. The History (recording), its reading and writing of a store
(:mod:`wm_kernel.instruments.history.store`), its frame (:mod:`wm_kernel.instruments.history.frame`)
and the exchange log (:mod:`wm_kernel.instruments.exchange_log`) build on it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from wm_kernel.core.prompt import OmittedSection, SectionRecord
from wm_kernel.stores import keys

#: Version of every record a history writes (the ``"v"`` field).
RECORD_VERSION = 1
#: Version of the key layout: 2 since issue 34 (texts and entries per user, in
#: ``history-texts:{user_id}`` and ``history-entries:{user_id}``; version 1 kept them in the hashes
#: ``history:texts`` and ``history:entries`` every user shared, which are still read).
SCHEMA_VERSION = 2
#: Where a history keeps what it records: store key -> (field, value) of each record (ids encoded
#: by :mod:`wm_kernel.stores.keys`).
SCHEMA = {
    "history-texts:{user_id}": ("text digest (hex)", '{"v": 1, "text": str}'),
    "history-entries:{user_id}": (
        "entry id (hex)",
        '{"v": 1, "name": str, "placement": str, "trinket": str '
        '| null, "cache_policy": bool, "straggler": bool, '
        '"digest": text digest (hex)}',
    ),
    "history:{user_id}:{continuum_id}": (
        "turn (decimal)",
        '{"v": 1, "segment": int, "segment_turn": '
        'int, "entries": [entry id, ...], '
        '"hud_frame": [namespace, title] | null, '
        '"at": ISO 8601 compose time (if known), '
        '"budget": {"priorities": {section: int}, '
        '"dropped": [[name, trinket, tokens, '
        "priority], ...]} (only under a budget)}",
    ),
    "history-exchanges:{user_id}:{continuum_id}": (
        "turn (decimal)",
        '{"v": 1, "turn": int, "provider": str, '
        '"model": str, "user": str, "reply": str, '
        '"usage": object | null, ...} '
        "(wm_kernel.instruments.exchange)",
    ),
}
#: The shared hashes of schema version 1 (read when a user's own hashes lack a record).
TEXTS_KEY = keys.HISTORY_TEXTS
ENTRIES_KEY = keys.HISTORY_ENTRIES


def texts_key(user_id: str) -> str:
    """The store hash of one user's history texts, by digest."""
    return keys.history_texts(user_id)


def entries_key(user_id: str) -> str:
    """The store hash of one user's history entries, by id."""
    return keys.history_entries(user_id)


#: What a compose under a token budget adds to its turn: section -> priority, and what it dropped.
Budget = tuple[Mapping[str, int], tuple[OmittedSection, ...]]


def composes_key(user_id: str, continuum_id: str) -> str:
    """The store hash holding one conversation's recorded turns (built by the key module, so ids
    holding ``:`` never share one: see :mod:`wm_kernel.stores.keys`)."""
    return keys.history(user_id, continuum_id)


def exchanges_key(user_id: str, continuum_id: str) -> str:
    """The store hash holding one conversation's exchanges with a model, by turn."""
    return keys.history_exchanges(user_id, continuum_id)


class HistoryConflictError(RuntimeError):
    """Another History (another Session, perhaps in another process) has recorded this turn of the
    same conversation in the same file. Its row is kept; nothing is recorded."""


def conflict_message(user_id: str, continuum_id: str, turn: int) -> str:
    """The :class:`HistoryConflictError` text for ``turn`` of one conversation."""
    return (
        f"turn {turn} of conversation {continuum_id!r} (user {user_id!r}) was "
        f"recorded by another Session writing the same conversation in this store; its "
        f"record is kept and this compose is not recorded (give each writer its own "
        f"continuum_id)"
    )


def text_digest(text: str) -> bytes:
    """The 16-byte blake2b digest a history interns ``text`` by."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Entry:
    """One distinct section as recorded: shared by every turn in which it appears unchanged."""

    __slots__ = ("name", "placement", "trinket", "cache_policy", "straggler", "text", "digest", "id")

    def __init__(
        self,
        name: str,
        placement: str,
        trinket: str | None,
        cache_policy: bool,
        straggler: bool,
        text: str,
        digest: bytes,
    ) -> None:
        self.name = name
        self.placement = placement
        self.trinket = trinket
        self.cache_policy = cache_policy
        self.straggler = straggler
        self.text = text
        self.digest = digest
        # content-addressed: the same section recorded by any history gets the same id
        self.id = hashlib.blake2b(
            json.dumps([name, placement, trinket, cache_policy, straggler, digest.hex()]).encode(
                "utf-8", "surrogatepass"
            ),
            digest_size=8,
        ).hexdigest()

    def to_json(self) -> dict[str, Any]:
        """The record stored under ``history:entries`` (see :data:`SCHEMA`)."""
        return {
            "v": RECORD_VERSION,
            "name": self.name,
            "placement": self.placement,
            "trinket": self.trinket,
            "cache_policy": self.cache_policy,
            "straggler": self.straggler,
            "digest": self.digest.hex(),
        }

    @property
    def key(self) -> tuple[str, str, str | None, bool, bool, bytes]:
        """What makes two entries the same: every field but the text itself (its digest stands in)."""
        return (self.name, self.placement, self.trinket, self.cache_policy, self.straggler, self.digest)

    @property
    def cached(self) -> bool:
        """In the cached part of the system prompt (as ``SectionRecord.cached``)."""
        return self.placement == "system" and self.cache_policy

    def matches(self, record: SectionRecord) -> bool:
        """Same section as ``record`` (identity first, so an unchanged text is never rescanned)."""
        text = record.content
        return (
            (self.text is text or self.text == text)
            and self.placement == record.placement
            and self.cache_policy == record.cache_policy
            and self.trinket == record.trinket
            and self.straggler == record.straggler
        )

    def to_record(self) -> SectionRecord:
        """The SectionRecord this entry was recorded from."""
        return SectionRecord(self.name, self.placement, self.text, self.cache_policy, self.trinket, self.straggler)

    def __repr__(self) -> str:
        return f"<Entry {self.name} {self.placement} chars={len(self.text)} {self.digest.hex()[:8]}>"


class Compose:
    """One recorded turn: segment numbers, the entries in output order, the HUD frame if not default."""

    __slots__ = ("turn", "segment", "segment_turn", "entries", "hud_frame", "at")

    def __init__(
        self,
        turn: int,
        segment: int,
        segment_turn: int,
        entries: tuple[Entry, ...],
        hud_frame: tuple[str, str] | None = None,
        at: datetime | None = None,
    ) -> None:
        self.turn = turn
        self.segment = segment
        self.segment_turn = segment_turn
        self.entries = entries
        self.hud_frame = hud_frame
        self.at = at  # when it was composed (the request's send time), if known


def versioned(value: Any) -> dict[str, Any]:
    """``value`` if it is a record of this version, else a ValueError saying what was found."""
    if not isinstance(value, dict) or value.get("v") != RECORD_VERSION:
        raise ValueError(f"expected a record of version {RECORD_VERSION}, found {value!r:.60}")
    return value
