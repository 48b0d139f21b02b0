"""The comparison of two replays: which sections in scope moved between them, where first, how often.

What every check of the stability checker (:mod:`wm_kernel.testing.stability`) reports: one
:class:`~wm_kernel.testing.report.Finding` per moved section.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from wm_kernel.testing.replay import Compose
from wm_kernel.testing.report import Finding

__all__ = ["compare_replays", "in_scope"]


def in_scope(placement: str, cached: bool, scope: str) -> bool:
    """Whether a section of ``placement`` (cached or not) counts in ``scope`` (see ``SCOPES``)."""
    if scope == "cached":
        return cached and placement in ("system", "tools")
    if scope == "system":
        return placement in ("system", "tools")
    return True


def compare_replays(
    check: str,
    base: Sequence[Compose],
    other: Sequence[Compose],
    scope: str,
    labels: tuple[str, str],
    masked: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[list[Finding], str]:
    """The sections in ``scope`` whose text differs between two replays, compose by compose: one
    :class:`Finding` per section, at the first compose where it moved, with the number of composes
    where it did. Sections in ``masked`` are left out. Also a note when the replays composed a
    different number of times (the common ones are compared)."""
    n = min(len(base), len(other))
    note = (
        ""
        if len(base) == len(other)
        else (f"the replays composed {len(base)} and {len(other)} times; the first {n} were compared")
    )
    first: dict[str, Finding] = {}
    moved: Counter[str] = Counter()
    for index in range(n):
        a, b = base[index], other[index]
        names = list(
            dict.fromkeys(
                [s.name for s in a.sections if in_scope(s.placement, s.cached, scope)]
                + [s.name for s in b.sections if in_scope(s.placement, s.cached, scope)]
            )
        )
        for name in names:
            if name in masked:
                continue
            sa, sb = a.section(name), b.section(name)
            ta = sa.content if sa is not None and in_scope(sa.placement, sa.cached, scope) else None
            tb = sb.content if sb is not None and in_scope(sb.placement, sb.cached, scope) else None
            if ta == tb:
                continue
            moved[name] += 1
            if name not in first:
                where = sa if sa is not None else sb
                assert where is not None
                first[name] = Finding.of_move(check, where, ta, tb, turn=a.turn, compose=index, labels=labels)
    findings = [f.with_counts(moved[f.section], n) for f in first.values()]
    return findings, note
