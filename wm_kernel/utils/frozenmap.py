"""FrozenMap: an immutable mapping in insertion order whose changes do not copy it.

A trait that must be *replaced* on every change, so observers hear of it and keep the old value
intact (a dashboard's time travel, a ``change["old"]``), cannot simply be a dict: each change would
copy every entry, and feeding n items would cost O(n²). A :class:`FrozenMap` shares what did not
change with the map it came from. It keeps the entries of its last rebuild in one dict that is
never mutated again, plus a small overlay of the changes since (replaced and new entries, and the
removed keys). A change copies only the overlay; when the overlay grows past about √n entries
the map is rebuilt into one dict. So a change costs O(√n) copies amortised: a few dozen entries
at thousands of items, where a dict copy costs thousands.

Examples
--------
>>> a = FrozenMap({"x": 1})
>>> b = a.set("y", 2).set("x", 3)
>>> a, b
(FrozenMap({'x': 1}), FrozenMap({'x': 3, 'y': 2}))
>>> b.remove("x") == {"y": 2}
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")

#: Overlays up to this size never trigger a rebuild (small maps are rebuilt rarely, not per change).
_MIN_OVERLAY = 16


class FrozenMap(Mapping[K, V]):
    """An immutable mapping in insertion order (as a dict: a replaced key keeps its place, a
    removed and re-added key goes last). :meth:`set` and :meth:`remove` return a new map.

    Equality is a dict's (with any mapping, order ignored); like a dict it is not hashable.
    """

    __slots__ = ("_base", "_recent", "_gone", "_len")

    _base: dict[K, V]  # the entries of the last rebuild; never mutated after it
    _recent: dict[K, V]  # replaced or new entries since; never mutated after construction
    _gone: frozenset[K]  # keys of _base removed since (never also in _recent)
    _len: int

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._base = dict(items)
        self._recent = {}
        self._gone = frozenset()
        self._len = len(self._base)

    @classmethod
    def _derived(cls, base: dict[K, V], recent: dict[K, V], gone: frozenset[K], size: int) -> FrozenMap[K, V]:
        new: FrozenMap[K, V] = cls.__new__(cls)
        new._base, new._recent, new._gone, new._len = base, recent, gone, size
        if len(recent) + len(gone) > max(_MIN_OVERLAY, math.isqrt(len(base))):
            new._base, new._recent, new._gone = dict(new.items()), {}, frozenset()
        return new

    # -- changing (a new map each time)
    def set(self, key: K, value: V) -> FrozenMap[K, V]:
        """This map with ``key`` set to ``value``."""
        if key in self._gone:  # a re-added key goes last, which the overlay cannot say: rebuild
            return FrozenMap({**dict(self.items()), key: value})
        size = self._len if key in self else self._len + 1
        return self._derived(self._base, {**self._recent, key: value}, self._gone, size)

    def remove(self, key: K) -> FrozenMap[K, V]:
        """This map without ``key``; KeyError if it has no such key."""
        if key not in self:
            raise KeyError(key)
        recent = {k: v for k, v in self._recent.items() if k != key}
        gone = self._gone | {key} if key in self._base else self._gone
        return self._derived(self._base, recent, gone, self._len - 1)

    # -- reading
    def __getitem__(self, key: K) -> V:
        recent = self._recent
        if key in recent:
            return recent[key]
        if key in self._gone:
            raise KeyError(key)
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        return key in self._recent or (key in self._base and key not in self._gone)

    def __iter__(self) -> Iterator[K]:
        base, gone = self._base, self._gone
        if gone:
            yield from (key for key in base if key not in gone)
        else:
            yield from base
        yield from (key for key in self._recent if key not in base)

    def __len__(self) -> int:
        return self._len

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Mapping):
            return NotImplemented
        if len(self) != len(other):
            return False
        if isinstance(other, FrozenMap) and other._base is self._base and other._gone == self._gone:
            # the same rebuild: only the overlays' keys can differ
            keys = self._recent.keys() | other._recent.keys()
            return all(key in self and key in other and self[key] == other[key] for key in keys)
        return all(key in other and other[key] == value for key, value in self.items())

    __hash__ = None  # type: ignore[assignment]  # equal to dicts, which are not hashable

    def __repr__(self) -> str:
        return f"FrozenMap({dict(self.items())!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (dict(self.items()),))
