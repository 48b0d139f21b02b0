"""Where a conversation is, kept in its store so that a restarted Session resumes it.

A Session keeps its conversation's current segment (its number and start) and its turn counters
in one store hash, ``session:{user_id}:{continuum_id}`` (built by :mod:`wm_kernel.stores.keys`),
each record stamped with :data:`SEGMENT_VERSION`. :class:`StoredPosition` writes them and reads
them back, checked: a record that cannot be read is a ValueError saying how to start afresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wm_kernel.core.clock import parse_instant
from wm_kernel.stores.embedded import StateStore
from wm_kernel.utils.checks import check_int

__all__ = ["SEGMENT_VERSION", "Segment", "StoredPosition"]

#: Version of the record a Session keeps of its conversation's current segment.
SEGMENT_VERSION = 1


@dataclass(frozen=True)
class Segment:
    """A conversation segment: its number (1 for the first) and when it started."""

    number: int
    started_at: datetime


class StoredPosition:
    """The record of one conversation's segment and turn counters, under ``key`` of ``store``."""

    def __init__(self, store: StateStore, key: str) -> None:
        self.store = store
        self.key = key

    def read(self) -> tuple[Segment | None, tuple[int, int] | None]:
        """The stored segment and (turn, segment_turn), each None where nothing is stored (a new
        conversation); a ValueError if either cannot be read."""
        stored = self.store.hgetall(self.key)
        segment, position = stored.get("segment"), stored.get("position")
        found: Segment | None = None
        turns: tuple[int, int] | None = None
        try:
            if segment is not None:
                segment = _versioned(segment, {"number", "started_at"})
                started_at = parse_instant(segment["started_at"], what="started_at")
                found = Segment(check_int(segment["number"], "number", minimum=1), started_at)
            if position is not None:
                position = _versioned(position, {"turn", "segment_turn"})
                turns = (
                    check_int(position["turn"], "turn", minimum=0),
                    check_int(position["segment_turn"], "segment_turn", minimum=0),
                )
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"the segment stored under {self.key!r} cannot be read ({exc}); delete it "
                f"with store.delete({self.key!r}) to start the segment now"
            ) from None
        return found, turns

    def write_segment(self, number: int, started_at: datetime) -> None:
        """Store the current segment: its number and when it started."""
        self.store.hset(
            self.key, "segment", {"v": SEGMENT_VERSION, "number": number, "started_at": started_at.isoformat()}
        )

    def write_turns(self, turn: int, segment_turn: int) -> None:
        """Store the turn counters: turns in the conversation and in its current segment."""
        self.store.hset(self.key, "position", {"v": SEGMENT_VERSION, "turn": turn, "segment_turn": segment_turn})


def _versioned(record: Any, fields: set[str]) -> dict[str, Any]:
    """A stored session record with exactly ``fields`` (and ``"v"``; records of earlier versions
    have none); ValueError naming what is wrong."""
    if not isinstance(record, dict) or set(record) - {"v"} != fields:
        raise ValueError(f"expected {sorted(fields | {'v'})}")
    if record.get("v", SEGMENT_VERSION) != SEGMENT_VERSION:
        raise ValueError(f"version {record['v']!r}, this Session reads version {SEGMENT_VERSION}")
    return record
