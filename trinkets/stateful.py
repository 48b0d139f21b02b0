"""The stateful trinket: :class:`StatefulTrinket`, whose items live for a number of turns and may be
stored. Import it from :mod:`trinkets.base`, the contract's front door."""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from traitlets import Int

from trinkets.event_aware import LIFECYCLE_REFRESH, EventAwareTrinket, TrinketHost
from wm_kernel.core.events import TurnCompletedEvent
from wm_kernel.stores import keys
from wm_kernel.utils.frozenmap import FrozenMap

if TYPE_CHECKING:
    from wm_kernel.core.bus import EventBus
    from wm_kernel.stores.embedded import StateStore

logger = logging.getLogger("wm_kernel.trinkets")
__all__ = ["StatefulTrinket", "STATE_VERSION"]

#: Version of every record a stateful trinket stores: the whole-state envelope
#: (``{"version", "state"}``) and each per-item record (``{"v", "seq", "item"}``).
STATE_VERSION = 1
#: Errors that mean "the stored data is not what this trinket wrote" (infrastructure errors, such as
#: sqlite3.OperationalError, are none of these and propagate as they are).
_UNREADABLE = (ValueError, TypeError, KeyError, AttributeError)
# fields of a per-item state hash: one record per item, bare-int counters (the store's hincrby
# needs plain integers) and the counter that orders the items
_ITEM, _COUNT, _ORDER = "item:", "count:", "order"
_DUMP = object()  # _save_state's default: write what _dump_state() returns


class _StateChange:
    """The writes of one change of a stateful trinket's items, made in one store transaction (see
    :meth:`StatefulTrinket._changing_state`). Without a store key it only hands out numbers."""

    def __init__(self, trinket: StatefulTrinket, store: StateStore | None) -> None:
        self._trinket = trinket
        self._store = store
        self._key = trinket.state_key or ""
        self.seqs: dict[str, int | None] = {}  # item id -> new order number (None: dropped)

    def allocate(self, counter: str, current: int) -> int:
        """The next number of ``counter`` (one of ``state_counters``): ``current + 1`` in memory,
        the store's atomic increment otherwise, so two processes never get the same number."""
        if self._store is None:
            return current + 1
        number = self._store.hincrby(self._key, _COUNT + counter)
        if number <= current:  # the stored counter is behind what this process has seen
            number = current + 1
            self._store.hset(self._key, _COUNT + counter, number)
        return number

    def put(self, item_id: str, record: dict[str, Any], *, keep_place: bool = True) -> None:
        """Store one item's record (as ``_parse_state`` reads it in the items list), keeping its
        place in the order if it was stored before (unless ``keep_place`` is False: it goes last)."""
        if self._store is None:
            return
        seq = self._trinket._item_seqs.get(item_id) if keep_place else None
        if seq is None:
            seq = self._store.hincrby(self._key, _ORDER)
        self._store.hset(self._key, _ITEM + item_id, {"v": STATE_VERSION, "seq": seq, "item": record})
        self.seqs[item_id] = seq

    def drop(self, item_id: str) -> None:
        """Remove one item's record."""
        if self._store is None:
            return
        self._store.hdel(self._key, _ITEM + item_id)
        self.seqs[item_id] = None

    def clear(self) -> None:
        """Remove every item's record, also those another process stored; counters stay, so ids
        are never handed out twice."""
        if self._store is None:
            return
        for field in self._store.hgetall(self._key):
            if field.startswith(_ITEM) or field == "state":
                self._store.hdel(self._key, field)
                if field.startswith(_ITEM):
                    self.seqs[field[len(_ITEM) :]] = None
        for item_id in self._trinket._item_seqs:
            self.seqs[item_id] = None


class StatefulTrinket(EventAwareTrinket):
    """A trinket whose items live for a number of turns within a conversation segment.

    On TurnCompletedEvent it sets ``current_turn`` to the event's ``segment_turn_number``, expires
    items, and, if anything expired, asks for a refresh (an UpdateTrinketEvent with context
    ``{"action": "lifecycle_refresh"}``). On SegmentCollapsedEvent WorkingMemory flushes it: items
    cleared, ``current_turn`` back to 0, stored items removed.

    Persistence. A subclass that sets ``state_prefix`` keeps its items in the WorkingMemory's store,
    in the hash :attr:`state_key` (``{state_prefix}:{user_id}:{continuum_id}``, built by
    :mod:`wm_kernel.stores.keys`, fixed when the trinket is constructed), so a Session on a SQLite file
    finds them again after a restart. Stored data is read back through ``_parse_state(data)`` (check
    it and return what ``_restore_state`` takes; ValueError for anything else) and
    ``_restore_state(parsed)``. Stored data that cannot be read (corrupt, or not written by this
    kind of trinket) is a ValueError naming the key, raised before the trinket registers, so a
    failed construction changes nothing. There are two ways to write:

    - **Per item** (the built-in trinkets): set ``state_items`` (the name of the item list in the
      ``data`` that ``_parse_state`` gets), ``state_item_id`` (the key of an item's id in its
      record) and ``state_counters`` (integer counters such as "added_count", also in ``data``).
      Each item is one versioned record, field ``item:{id}`` = ``{"v": 1, "seq": n, "item":
      record}``; ``seq`` keeps the order. A change writes only the items it touches, inside
      ``with self._changing_state() as change:`` (``change.allocate``, ``put``, ``drop``,
      ``clear``), *before* the change is made in memory: adding an item costs the same with 10 or
      10,000 stored, a change whose writes fail changes nothing (in memory or on disk), and two
      processes feeding one conversation each keep every item they acknowledged (ids and order
      numbers come from the store's atomic ``hincrby``).
    - **Whole state** (simple trinkets): implement ``_dump_state()`` (the items as a
      JSON-compatible dict, or None when there is nothing to keep) and call ``_save_state()``
      whenever the items change; field ``state`` holds ``{"version": 1, "state": data}``, rewritten
      each time. A per-item trinket reads this form too (data of an earlier version) and rewrites
      it as per-item records when constructed.
    """

    #: Store-key prefix of the items (see the class docstring); None keeps them in memory only.
    state_prefix: ClassVar[str | None] = None
    #: Per-item persistence: the name of the item list in the data ``_parse_state`` gets (None:
    #: whole-state persistence), the id key of an item record, and the integer counters kept.
    state_items: ClassVar[str | None] = None
    state_item_id: ClassVar[str] = "id"
    state_counters: ClassVar[tuple[str, ...]] = ()

    current_turn = Int(0, help="The turn within the current segment (0 before the first exchange).")

    def __init__(self, event_bus: EventBus, working_memory: TrinketHost, **kwargs: Any) -> None:
        key = None
        if self.state_prefix is not None:
            key = keys.trinket_state(self.state_prefix, working_memory.user_id, working_memory.continuum_id)
        self._item_seqs: dict[str, int] = {}
        self._legacy = False
        #: True after a segment collapse failed to flush this trinket; the flush is retried before
        #: its next update or feed call (see WorkingMemory's collapse handling).
        self.flush_pending = False
        # read and check before registering: unreadable data must leave the WorkingMemory as it was
        parsed = self._read_state(working_memory.store, key) if key is not None else None
        self._state_key = key
        self._restoring = True
        self._detached = False
        super().__init__(event_bus, working_memory, **kwargs)
        try:
            if parsed is not None:
                self._restore_state(parsed)
        finally:
            self._restoring = False
        if self._legacy and self.state_items is not None:
            self._save_state()  # an earlier version's whole-state record becomes per-item records
        event_bus.subscribe(TurnCompletedEvent, self.handle_turn_completed)

    @abstractmethod
    def _expire_items(self) -> bool:
        """Drop items whose time is over at ``current_turn``; True exactly when something was removed."""

    @abstractmethod
    def _clear_all_state(self) -> None:
        """Forget every item (segment collapse)."""

    # -- persistence (see the class docstring)
    @property
    def state_key(self) -> str | None:
        """The store hash holding the items (``{state_prefix}:{user_id}:{continuum_id}``), or None
        when they are kept in memory only."""
        return self._state_key

    def _dump_state(self) -> dict[str, Any] | None:
        """The items as a JSON-compatible dict, or None when there is nothing to keep (in the
        shape ``_parse_state`` reads)."""
        return None

    def _parse_state(self, data: dict[str, Any]) -> Any:
        """Check stored ``data`` (what ``_dump_state`` returned) and return what ``_restore_state``
        takes; ValueError if it is not usable. Runs before registration: touch no trait here."""
        return data

    def _restore_state(self, parsed: Any) -> None:
        """Take the items ``_parse_state`` returned (construction only; nothing is saved meanwhile)."""

    def _read_state(self, store: StateStore, key: str) -> Any:
        try:
            fields = store.hgetall(key)
            if not fields:
                return None
            if self.state_items is None or set(fields) == {"state"}:
                self._legacy = "state" in fields
                return self._read_whole(fields.get("state"))
            return self._parse_state(self._read_items(fields))
        except _UNREADABLE as exc:
            raise ValueError(
                f"{self.name}: the state stored under {key!r} cannot be read "
                f"({type(exc).__name__}: {exc}); delete it with "
                f"store.delete({key!r}) to start empty"
            ) from None

    def _read_whole(self, raw: Any) -> Any:
        if raw is None:
            return None
        if not isinstance(raw, dict) or set(raw) != {"version", "state"}:
            raise ValueError(
                'expected {"version", "state"}, found '
                + (f"keys {sorted(raw)}" if isinstance(raw, dict) else type(raw).__name__)
            )
        if raw["version"] != STATE_VERSION:
            raise ValueError(f"version {raw['version']!r}, this trinket reads version {STATE_VERSION}")
        if not isinstance(raw["state"], dict):
            raise ValueError(f"state is a {type(raw['state']).__name__}, expected a dict")
        return self._parse_state(raw["state"])

    def _read_items(self, fields: dict[str, Any]) -> dict[str, Any]:
        """The data ``_parse_state`` reads, from per-item records (see the class docstring)."""
        assert self.state_items is not None
        counters = {name: 0 for name in self.state_counters}
        found: list[tuple[int, str, Any]] = []
        for field, value in fields.items():
            if field.startswith(_ITEM):
                if not isinstance(value, dict) or set(value) != {"v", "seq", "item"}:
                    raise ValueError(f'field {field!r}: expected {{"v", "seq", "item"}}')
                if value["v"] != STATE_VERSION:
                    raise ValueError(
                        f"field {field!r}: version {value['v']!r}, this trinket reads version {STATE_VERSION}"
                    )
                seq = value["seq"]
                if isinstance(seq, bool) or not isinstance(seq, int):
                    raise ValueError(f"field {field!r}: seq must be an int, got {seq!r}")
                found.append((seq, field[len(_ITEM) :], value["item"]))
            elif (field.startswith(_COUNT) and field[len(_COUNT) :] in counters) or field == _ORDER:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"field {field!r} must be a non-negative int, got {value!r}")
                if field != _ORDER:
                    counters[field[len(_COUNT) :]] = value
            else:
                raise ValueError(f"unexpected field {field!r}")
        found.sort(key=lambda item: item[0])
        self._item_seqs = {item_id: seq for seq, item_id, _ in found}
        return {**counters, self.state_items: [record for _, _, record in found]}

    def _drop_items(self, ids: list[str]) -> bool:
        """Remove the items ``ids`` from the trait ``state_items`` names (a
        :class:`~wm_kernel.utils.frozenmap.FrozenMap` id -> item): from the store first, in one
        transaction, then in memory. True when there was anything to remove."""
        if not ids:
            return False
        with self._changing_state() as change:
            for item_id in ids:
                change.drop(item_id)
        assert self.state_items is not None
        items: FrozenMap[str, Any] = getattr(self, self.state_items)
        if len(ids) == 1:
            items = items.remove(ids[0])
        else:
            gone = set(ids)
            items = FrozenMap((key, item) for key, item in items.items() if key not in gone)
        self.set_trait(self.state_items, items)
        return True

    def _clear_items(self) -> None:
        """Remove every item of the ``state_items`` FrozenMap, stored and in memory."""
        with self._changing_state() as change:
            change.clear()
        assert self.state_items is not None
        self.set_trait(self.state_items, FrozenMap())

    @contextmanager
    def _changing_state(self) -> Iterator[_StateChange]:
        """The store transaction of one change of the items (per-item persistence): write with the
        object it yields, then change the items in memory once the block has returned. If a write
        fails the transaction rolls back and the exception propagates, so the change never
        happened. Without a store key (or while restoring, or once detached) nothing is written."""
        key = self._state_key
        if key is None or self._restoring or self._detached:
            yield _StateChange(self, None)
            return
        store = self.working_memory.store
        change = _StateChange(self, store)
        with store.transaction():
            yield change
        self._inputs_changed()
        for item_id, seq in change.seqs.items():
            if seq is None:
                self._item_seqs.pop(item_id, None)
            else:
                self._item_seqs[item_id] = seq

    def _save_state(self, data: dict[str, Any] | None | object = _DUMP) -> None:
        """Write all the items (``data``, by default ``_dump_state()``; None: there are none): the
        whole-state record, or
        for per-item trinkets every item's record, replacing what was stored. Costs as much as
        there are items: per-item trinkets call it only when every item is replaced."""
        self._inputs_changed()  # the items changed, whatever the caller (a feed, a turn, a report)
        key = self._state_key
        if key is None or self._restoring or self._detached:
            return
        if data is _DUMP:
            data = self._dump_state()
        assert data is None or isinstance(data, dict)
        store = self.working_memory.store
        if self.state_items is None:
            if data is None:
                store.hdel(key, "state")
            else:
                store.hset(key, "state", {"version": STATE_VERSION, "state": data})
            return
        with self._changing_state() as change:
            change.clear()
            if data is not None:
                for counter in self.state_counters:
                    store.hset(
                        key, _COUNT + counter, max(int(data[counter]), int(store.hget(key, _COUNT + counter) or 0))
                    )
                for record in data[self.state_items]:
                    change.put(str(record[self.state_item_id]), record, keep_place=False)

    # -- the lifecycle
    def resume_at(self, segment_turn: int) -> None:
        # TTLs of items loaded from the store (a resumed session) count from the segment's turn
        self.current_turn = segment_turn

    def end_segment(self) -> None:
        # all or nothing for this trinket: a failed flush (a locked store) is retried before its
        # next update or feed, so its old items never show in the new segment
        self._inputs_changed()
        try:
            self.flush()
        except Exception:
            self.flush_pending = True
            raise
        wm = self.working_memory
        self._set_content("", wm.clock.now())
        wm.composer.remove_section(self.variable_name)
        try:
            wm.discard_section(self)
        except Exception as exc:  # its items are gone; only the stored section text is stale
            logger.error("could not remove the stored section of %s: %s: %s", self.name, type(exc).__name__, exc)

    def finish_pending_flush(self) -> None:
        if self.flush_pending:
            self.flush()

    def run_update(self, continuum_id: str, user_id: str, context: Mapping[str, Any]) -> None:
        self.finish_pending_flush()  # a collapse could not: old items must not return
        super().run_update(continuum_id, user_id, context)

    def handle_turn_completed(self, event: TurnCompletedEvent) -> None:
        wm = self.working_memory
        with wm.lock:
            self.current_turn = event.segment_turn_number
            if self._expire_items():
                self._inputs_changed()
                # what wm.publish_trinket_update(name, context) publishes, delivered directly
                # where nobody else listens: this trinket is registered, the context the kernel's
                wm.refresh_trinket(self, LIFECYCLE_REFRESH, continuum_id=event.continuum_id)

    def flush(self) -> None:
        """Clear all state and reset the turn (WorkingMemory calls this on segment collapse)."""
        with self.lock:
            self._clear_all_state()
            self._inputs_changed()
            self.current_turn = 0
            self.flush_pending = False

    def detach(self) -> None:
        # a detached trinket (replaced or unregistered) no longer writes: its successor owns the key
        self._detached = True
        self.event_bus.unsubscribe(TurnCompletedEvent, self.handle_turn_completed)
