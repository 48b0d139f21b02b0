"""What the composer built for each placement at its last compose, kept to be reused.

A :class:`PlacementBuild` holds one placement's records, text and (worked out when first asked for)
blame map; :class:`JoinedBuilds` joins the four into one prompt's records and blame. The functions
here join the system parts and map who wrote each stretch of a placement's text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from wm_kernel.core.prompt import BlameData, SectionRecord

__all__ = [
    "SECTION_SEPARATOR",
    "PlacementBuild",
    "JoinedBuilds",
    "join_system",
    "system_blame",
    "items_blame",
    "normalize_part",
]

SECTION_SEPARATOR = "\n\n---\n\n"


class PlacementBuild:
    """What compose built for one placement: its records, its text (a string, a pair of strings
    for ``system``, a tuple of items) and its blame map, counting its records from 0 (worked out
    when first asked for: most prompts are never blamed); and what it was built from, the names
    it routes and their entries then."""

    __slots__ = ("records", "text", "names", "entries", "_blame", "_make_blame")

    def __init__(
        self,
        records: tuple[SectionRecord, ...],
        text: Any,
        make_blame: Callable[[], BlameData],
        entries: dict[str, tuple[str, bool, str | None]],
    ) -> None:
        self.records = records
        self.text = text
        self.names: tuple[str, ...] = ()
        # name -> the entry each record was built from (content, cache_policy, trinket)
        self.entries = entries
        self._blame: BlameData | None = None
        self._make_blame: Callable[[], BlameData] | None = make_blame

    @property
    def blame(self) -> BlameData:
        if self._make_blame is not None:  # two threads asking at once both compute the same map
            self._blame, self._make_blame = self._make_blame(), None
        assert self._blame is not None
        return self._blame


class JoinedBuilds:
    """The four placements' builds as one prompt's: all records in output order, and (when first
    asked for) one blame map, where each placement's record numbers are shifted by the records
    of the placements before it. Shared, read only, by every prompt composed from these builds."""

    __slots__ = ("placements", "records", "_blame")

    def __init__(self, placements: tuple[PlacementBuild, ...]) -> None:
        self.placements = placements
        system, prefix, post, hud = placements
        self.records = system.records + prefix.records + post.records + hud.records
        self._blame: BlameData | None = None

    def blame(self) -> BlameData:
        if self._blame is None:
            blame: BlameData = {}
            first = 0
            for placement in self.placements:
                for key, pieces in placement.blame.items():
                    blame[key] = (
                        pieces
                        if not first
                        else tuple((length, owner + first if owner >= 0 else owner) for length, owner in pieces)
                    )
                first += len(placement.records)
            self._blame = blame
        return self._blame


def join_system(parts: list[tuple[str, int]]) -> str:
    """Join normalized system parts with the separator and strip the result, as the original does."""
    if not parts:
        return ""
    return SECTION_SEPARATOR.join([text for text, _ in parts]).strip()


def system_blame(cached: list[tuple[str, int]], uncached: list[tuple[str, int]]) -> BlameData:
    """Each system part's stretch of its key (the strip of the joined text can only trim the first
    part's start and the last part's end: every part holds a non-space character)."""
    blame: BlameData = {}
    for key, parts in (("cached_content", cached), ("non_cached_content", uncached)):
        if not parts:
            continue
        pieces: list[tuple[int, int]] = []
        for index, (text, owner) in enumerate(parts):
            if index:
                pieces.append((len(SECTION_SEPARATOR), -1))
            pieces.append((len(text), owner))
        lead = len(parts[0][0]) - len(parts[0][0].lstrip())
        trail = len(parts[-1][0]) - len(parts[-1][0].rstrip())
        pieces[0] = (pieces[0][0] - lead, pieces[0][1])
        pieces[-1] = (pieces[-1][0] - trail, pieces[-1][1])
        blame[key] = tuple(pieces)
    return blame


def items_blame(key: str, items: list[str]) -> BlameData:
    """An item is its section's text, whole."""
    return {f"{key}[{index}]": ((len(item), index),) for index, item in enumerate(items)}


_NEWLINE_RUNS = re.compile(r"\n{3,}")


@functools.lru_cache(maxsize=512)
def normalize_part(text: str) -> str:
    """Collapse runs of 3+ newlines inside one part and drop its edge newlines.

    Joining parts with "\\n\\n---\\n\\n" and then collapsing newline runs over the whole text (the
    original) gives the same result as joining parts normalized this way, because a part's edge
    newlines always meet the separator's own two. Normalizing per part lets unchanged parts (a
    12 KB base prompt) come from the cache instead of being rescanned on every compose.
    """
    return _NEWLINE_RUNS.sub("\n\n", text).strip("\n") if "\n\n\n" in text else text.strip("\n")
