"""The table view of a :class:`~wm_kernel.instruments.history.History`: one row per (turn, section).

:func:`history_frame` lays the recorded composes out as a pandas DataFrame with the columns of
:data:`FRAME_COLUMNS` (the History's module docstring says what each holds): a turn's sections in
output order, then the sections a token budget dropped, each row with the reply and usage of the
turn's exchange with a model, if it had one. ``History.frame()`` keeps the last one it built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from wm_kernel.core.prompt import OmittedSection
from wm_kernel.instruments.exchange import Exchange
from wm_kernel.instruments.history_records import Budget, Compose, Entry
from wm_kernel.tokens import TokenCounter

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FRAME_COLUMNS", "history_frame"]

FRAME_COLUMNS = [
    "turn",
    "segment",
    "placement",
    "section",
    "trinket",
    "chars",
    "tokens",
    "changed",
    "cached",
    "digest",
    "priority",
    "dropped",
    "reply",
    "usage",
]

#: The type of these columns, whatever pandas infers from the rows (an empty frame, a turn with no
#: priorities).
_TYPES = {
    "turn": "int64",
    "segment": "int64",
    "chars": "int64",
    "tokens": "int64",
    "changed": "bool",
    "cached": "bool",
    "priority": "Int64",
    "dropped": "bool",
}


def history_frame(
    composes: Iterable[Compose],
    budgets: Mapping[int, Budget],
    exchanges: Mapping[int, Exchange],
    counter: TokenCounter,
) -> pd.DataFrame:
    """The DataFrame of ``composes`` (in turn order), with each turn's budget (``budgets``) and
    exchange (``exchanges``) by turn; ``counter`` counts the ``tokens`` column, each distinct
    text once, and its label is the frame's ``attrs["tokens"]``."""
    import pandas as pd

    count = counter.count
    counted: dict[bytes, int] = {}  # digest -> tokens: each distinct text is counted once
    rows: list[tuple[Any, ...]] = []
    previous: dict[str, bytes] = {}
    previous_entries: tuple[Entry, ...] | None = None
    for record in composes:
        priorities, dropped = budgets.get(record.turn, ({}, ()))
        # the same tuple of entries as the turn before: nothing in it changed
        unchanged = record.entries is previous_entries
        rows += _section_rows(record, None if unchanged else previous, priorities, counted, count)
        rows += _dropped_rows(record, dropped)
        previous, previous_entries = {e.name: e.digest for e in record.entries}, record.entries
    df = pd.DataFrame.from_records(_with_exchanges(rows, exchanges), columns=FRAME_COLUMNS)
    df = df.astype(_TYPES)
    df.attrs["tokens"] = counter.label  # what counted the tokens column ("≈" and the band: an estimate)
    return df


def _section_rows(
    record: Compose,
    previous: dict[str, bytes] | None,
    priorities: Mapping[str, int],
    counted: dict[bytes, int],
    count: Callable[[str], int],
) -> list[tuple[Any, ...]]:
    """The rows of ``record``'s sections; a section is changed when its digest differs from the
    one of that name in ``previous`` (the turn before's, None if that turn had the same entries).
    A text not in ``counted`` yet is counted with ``count`` and kept there."""
    rows = []
    for entry in record.entries:
        digest = entry.digest
        n = counted.get(digest)
        if n is None:
            n = counted[digest] = count(entry.text)
        changed = previous is not None and previous.get(entry.name) != digest
        rows.append(
            (
                record.turn,
                record.segment,
                entry.placement,
                entry.name,
                entry.trinket,
                len(entry.text),
                n,
                changed,
                entry.cached,
                digest.hex(),
                priorities.get(entry.name),
                False,
            )
        )
    return rows


def _dropped_rows(record: Compose, dropped: Iterable[OmittedSection]) -> list[tuple[Any, ...]]:
    """A row per section a budget dropped from ``record``: what it would have cost, not in the prompt."""
    return [
        (
            record.turn,
            record.segment,
            None,
            gone.name,
            gone.trinket,
            0,
            gone.tokens or 0,
            False,
            False,
            "",
            gone.priority,
            True,
        )
        for gone in dropped
    ]


def _with_exchanges(rows: list[tuple[Any, ...]], exchanges: Mapping[int, Exchange]) -> list[tuple[Any, ...]]:
    """``rows`` with the reply and usage of their turn's exchange (None, None where there is none)."""
    if not exchanges:
        return [row + (None, None) for row in rows]
    return [
        row
        + (
            (e.reply, dict(e.usage) if e.usage is not None else None)
            if (e := exchanges.get(row[0])) is not None
            else (None, None)
        )
        for row in rows
    ]
