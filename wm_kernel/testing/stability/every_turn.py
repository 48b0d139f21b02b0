"""An edit that fires every turn, named by the stability checker (issue 47 item 2).

A perturbation check asks whether a cached byte moves when it must not; a section that moves on
every turn *by design* (a clock, a counter, a "last checked" line) placed in the cached prefix is
a different fault: every turn it rewrites the cached prefix from itself on and saves nothing, so it
never pays back (break-even infinite, ``wm_kernel.cachesim.planner.edit_economics``).
:func:`every_turn_sections` finds such sections in a replay (the baseline of a check, or an
imported log's requests): a cached section whose text is new at each turn after the first, over
at least three turns. The report lists them below the checks; they do not change its verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

from wm_kernel.testing.replay import Compose, SectionText
from wm_kernel.testing.report import EveryTurnSection

__all__ = ["every_turn_sections"]


def _cached(section: SectionText) -> bool:
    return section.cached and section.placement in ("system", "tools")


def every_turn_sections(composes: Sequence[Compose]) -> list[EveryTurnSection]:
    """The cached sections new at every turn of ``composes`` (each turn's last compose, at least
    three turns), in the order of the last turn's cached prefix, each with its place in it."""
    last: dict[int, Compose] = {}
    for compose in composes:
        last[compose.turn] = compose
    turns = [last[turn] for turn in sorted(last)]
    if len(turns) < 3:
        return []
    changed: dict[str, int] = {}
    for before, after in zip(turns, turns[1:], strict=False):
        old = {s.name: s.content for s in before.sections if _cached(s)}
        for section in after.sections:
            if _cached(section) and section.name in old and old[section.name] != section.content:
                changed[section.name] = changed.get(section.name, 0) + 1
    every = {name for name, count in changed.items() if count == len(turns) - 1}
    if not every:
        return []
    prefix = [s for s in turns[-1].sections if _cached(s)]
    total = sum(len(s.content) for s in prefix)
    found, offset = [], 0
    for section in prefix:
        if section.name in every:
            found.append(
                EveryTurnSection(
                    section.name,
                    section.trinket,
                    section.placement,
                    changed[section.name],
                    len(turns) - 1,
                    offset,
                    total,
                )
            )
        offset += len(section.content)
    return found
