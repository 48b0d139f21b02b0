"""How much two sequences share at their start, found at the speed of a slice comparison.

A conversation's requests repeat the one before and add to it: the cache simulator and the reading
of agents' logs cost what each request adds, not what it repeats, by taking the shared start's
work from the request before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["shared_start"]

_PLAIN = (list, tuple)  # (a subclass or another Sequence may compare otherwise than its slice)


def shared_start(items: Sequence[Any], before: Sequence[Any]) -> int:
    """How many items ``items`` starts with that ``before`` starts with too (equal items).

    Compared as slices, so the items a conversation repeats, the same objects, compare without a
    call; a binary search finds where the two part.

    >>> shared_start("abcd", "abxd"), shared_start([1, 2], [1, 2, 3]), shared_start([], [1])
    (2, 2, 0)
    """
    n = min(len(items), len(before))
    # a whole list or tuple is its own first n items: one copy fewer (the shorter is usually whole)
    if (items if len(items) == n and type(items) in _PLAIN else items[:n]) == (
        before if len(before) == n and type(before) in _PLAIN else before[:n]
    ):
        return n
    low, high = 0, n  # items[:low] is shared, items[:high] is not
    while high - low > 1:
        middle = (low + high) // 2
        if items[low:middle] == before[low:middle]:
            low = middle
        else:
            high = middle
    return low
