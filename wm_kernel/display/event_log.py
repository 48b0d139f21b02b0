"""The bus event log as views: the ``%wm_events`` table and the dashboard's log rows.

Every row comes from :meth:`EventRecord.as_row <wm_kernel.core.bus.EventRecord.as_row>` (number,
depth, event type, time, what the event carries, failures), so the views agree on what a row says.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from wm_kernel.core.bus import EventRecord
from wm_kernel.display.tables import Table
from wm_kernel.utils import style

__all__ = ["TABLE_COLUMNS", "events_table", "event_row_html"]

#: The columns of :func:`events_table`, indexed by ``seq``. Event ids (which carry a random
#: per-process prefix) and the ids every row shares are left out.
TABLE_COLUMNS = ["seq", "depth", "event", "occurred_at", "detail", "failures"]


def events_table(records: Iterable[EventRecord]) -> Table:
    """The records as a pandas DataFrame, one row per event in publish order, indexed by the bus
    sequence number, shown readably (a :class:`~wm_kernel.display.tables.Table`)."""
    import pandas as pd

    rows = []
    for record in records:
        row = record.as_row()
        row["occurred_at"] = row["occurred_at"].isoformat()
        rows.append({name: row[name] for name in TABLE_COLUMNS})
    return Table(pd.DataFrame(rows, columns=TABLE_COLUMNS).set_index("seq"))


def event_row_html(record: EventRecord) -> str:
    """One row of the dashboard's event log table: number, event (indented by its depth), detail,
    failures."""
    row: dict[str, Any] = record.as_row()
    return (
        f"<tr><td>{row['seq']}</td>"
        f'<td style="padding-left:{4 + 12 * row["depth"]}px">{html.escape(row["event"])}'
        f"</td><td>{html.escape(row['detail'])}</td>"
        f'<td style="color:{style.ERROR}">{html.escape(row["failures"])}</td></tr>'
    )
