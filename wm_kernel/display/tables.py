"""Readable tables: what ``%trinkets`` and ``%wm_events`` return.

A :class:`Table` is a pandas DataFrame (filter it, index it, export it: every operation works and
returns a plain DataFrame) that shows itself as people read a table rather than as pandas prints
one: text left-aligned and numbers right-aligned, times as ``2026-11-30 09:00:00 UTC`` instead of
ISO strings that wrap, an empty cell where pandas would print ``<NA>`` or ``None``, and long text
(an event's detail, a failure) wrapped in full instead of cut with ``...``.

>>> t = Table({"event": ["ComposeStartedEvent"], "turn": [pd.NA],
...            "at": ["2026-11-30T09:00:00.250000+00:00"]}, index=pd.Index([3], name="seq"))
>>> t
seq  event                turn  at
  3  ComposeStartedEvent        2026-11-30 09:00:00 UTC
"""

from __future__ import annotations

import html
import numbers
import re
from datetime import datetime
from typing import Any

import pandas as pd

from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.style import scrolling

# an ISO 8601 timestamp as ``datetime.isoformat()`` writes it
_ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d)?$")

_CELL = "padding:2px 8px;vertical-align:top;border-bottom:1px solid var(--jp-border-color2,#ddd)"


def cell_text(value: Any) -> str:
    """How one value reads in a table: empty for a missing value, a short time for an ISO
    timestamp (seconds, and ``UTC`` or the offset), ``str`` otherwise."""
    if value is None or (not isinstance(value, (list, tuple, dict)) and pd.isna(value)):
        return ""
    if isinstance(value, str) and _ISO_TIME.match(value):
        moment = datetime.fromisoformat(value)
        offset = moment.utcoffset()
        zone = "" if offset is None else " UTC" if not offset else f" {value[-6:]}"
        return moment.strftime("%Y-%m-%d %H:%M:%S") + zone
    return str(value)


def _is_number(value: Any) -> bool:
    # numbers.Real covers numpy's scalars too (a nullable Int64 column yields numpy.int64)
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _column_is_numeric(values: list[Any]) -> bool:
    present = [v for v in values if cell_text(v) != ""]
    return bool(present) and all(_is_number(v) for v in present)


class Table(pd.DataFrame):
    """A DataFrame displayed readably in notebooks (HTML) and terminals (text); see the module."""

    @property
    def _constructor(self) -> Any:  # operations on a Table give plain DataFrames
        return pd.DataFrame

    def _columns(self) -> list[tuple[str, list[Any], bool]]:
        """(header, values, numeric) for the index and then every column."""
        index_name = self.index.name if self.index.name is not None else ""
        columns = [(str(index_name), list(self.index), _column_is_numeric(list(self.index)))]
        for name in self.columns:
            values = list(self[name])
            columns.append((str(name), values, _column_is_numeric(values)))
        return columns

    def _repr_html_(self) -> str:
        columns = self._columns()
        head = "".join(
            f'<th style="{_CELL};text-align:{"right" if numeric else "left"}">{html.escape(name)}</th>'
            for name, _, numeric in columns
        )
        rows = []
        for row in range(len(self.index)):
            cells = []
            for _, values, numeric in columns:
                text = cell_text(values[row])
                if numeric:
                    style = "text-align:right;white-space:nowrap"
                elif isinstance(values[row], str) and _ISO_TIME.match(values[row]):
                    style = "text-align:left;white-space:nowrap"
                else:  # long text wraps in full, at word breaks (a name is never split)
                    style = "text-align:left;white-space:pre-wrap;overflow-wrap:break-word"
                cells.append(f'<td style="{_CELL};{style}">{html.escape(text)}</td>')
            rows.append("<tr>" + "".join(cells) + "</tr>")
        return no_math(
            scrolling(
                '<table class="wm-table" style="border-collapse:collapse;font-size:12px">'
                f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            )
        )

    def __repr__(self) -> str:
        columns = self._columns()
        texts = [[name, *(cell_text(v) for v in values)] for name, values, _ in columns]
        widths = [max(len(line) for t in column for line in t.splitlines() or [""]) for column in texts]
        lines = []
        for row in range(len(self.index) + 1):
            parts = []
            for (_, _, numeric), column, width in zip(columns, texts, widths, strict=True):
                text = " ".join(column[row].splitlines())
                parts.append(text.rjust(width) if numeric else text.ljust(width))
            lines.append("  ".join(parts).rstrip())
        return "\n".join(lines)
