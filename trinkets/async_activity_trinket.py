"""AsyncActivityTrinket: MIRA's sidebar agents' open items, in the notification centre (MIRA HEAD).

MIRA's sidebar agents write one row per thread to the SQLite table ``sidebar_activity``; the
trinket reads the table at every compose. Here :meth:`AsyncActivityTrinket.set_activity` takes the
whole table after each change (rows in id order, each a dict of its columns ``id,
interface_name, thread_id, agent_id, summary, status, escalation_reason, run_count, created_at,
updated_at``; times as SQLite's ``datetime('now')`` writes them, ``YYYY-MM-DD HH:MM:SS`` UTC).

Shown: rows whose status is neither ``dismissed`` nor ``resolved``, newest ``updated_at`` first (as
text; equal ones by ascending id, as SQLite returns them), grouped by ``interface_name`` in order
of first appearance. The section ``async_activity``::

    <async_activity>
    [email]
      ESCALATION: Refund request from Ada Reason: over the limit [5m ago]
      Newsletter filed [2h ago]
    [calendar]
      RULE CONFLICT: Two rules claim the 9am slot [just now]
    </async_activity>

Ages are the WorkingMemory clock's at compose time: under 60 s (or in the future) ``just now``,
then whole minutes ``Nm ago``, hours ``Nh ago``, days ``Nd ago``; an unreadable time ``recently``.
Interface names, summaries and reasons go through :func:`html.escape` (quotes too), as in MIRA, so
the section is byte for byte MIRA's. A collapse or a turn changes nothing.

Persistence: the table lives in the WorkingMemory's store too (hash ``sidebar_activity:{user_id}``,
field ``rows``; :func:`wm_kernel.stores.keys.sidebar_activity`), so a Session on an SQLite file shows
it after a restart. Stored data this trinket cannot read is a ValueError naming the key when it is
constructed.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(trinkets=[AsyncActivityTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> s.trinket("AsyncActivityTrinket").set_activity([{"id": 1, "interface_name": "email",
...     "summary": "Filed 3 receipts", "status": "handled", "escalation_reason": None,
...     "updated_at": "2026-11-30 07:30:00"}])
>>> print(s.trinket("AsyncActivityTrinket").generate_content({}))
<async_activity>
[email]
  Filed 3 receipts [1h ago]
</async_activity>
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from traitlets import List

from trinkets.base import EventAwareTrinket, TrinketHost, arg, command, feed
from wm_kernel.stores import keys

if TYPE_CHECKING:
    from wm_kernel.core.bus import EventBus

#: Statuses the sidebar no longer shows.
HIDDEN_STATUSES = frozenset({"dismissed", "resolved"})
_PREFIX = {"escalated": "ESCALATION: ", "conflict": "RULE CONFLICT: "}


def age(updated_at: object, now: datetime) -> str:
    """How long ago ``updated_at`` (SQLite's UTC text) was, as MIRA's sidebar writes it.

    >>> age("2026-11-30 08:59:01", datetime(2026, 11, 30, 9, tzinfo=UTC))
    'just now'
    >>> age("2026-11-28 09:00:00", datetime(2026, 11, 30, 9, tzinfo=UTC))
    '2d ago'
    """
    try:
        updated = datetime.fromisoformat(str(updated_at))
        if updated.tzinfo is None:
            updated = updated.replace(tzinfo=UTC)
        seconds = (now - updated).total_seconds()
    except (ValueError, TypeError, OverflowError):
        return "recently"
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds / 60)}m ago"
    if seconds < 86400:
        return f"{int(seconds / 3600)}h ago"
    return f"{int(seconds / 86400)}d ago"


def _row(item: object, where: str) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be a mapping of the sidebar_activity columns; got {type(item).__name__}")
    for column in ("interface_name", "summary", "status", "updated_at"):
        if column not in item:
            raise ValueError(f"{where} has no {column!r} column")
    return dict(item)


def _rows(rows: object) -> list[dict[str, Any]]:
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise TypeError(f"rows must be a list of mappings, got {type(rows).__name__}")
    return [_row(r, f"rows[{i}]") for i, r in enumerate(rows)]


class AsyncActivityTrinket(EventAwareTrinket):
    """The sidebar's open items, published as ``async_activity`` (not cached).

    See the module docstring for the rows, the order and the text.
    """

    variable_name = "async_activity"
    cache_policy = False
    default_priority = 50
    reuse_content = True
    time_dependent = True  # ages come from the clock

    rows: List[dict[str, Any]] = List(
        read_only=True,
        help="The sidebar_activity table as last set, in id order: dicts of its columns "
        "(replaced, never mutated, on every change).",
    )

    def __init__(self, event_bus: EventBus, working_memory: TrinketHost, **kwargs: Any) -> None:
        # read and check before registering: unreadable data must leave the WorkingMemory as it was
        key = keys.sidebar_activity(working_memory.user_id)
        stored = working_memory.store.hget(key, "rows")
        try:
            rows = None if stored is None else _rows(stored)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"AsyncActivityTrinket: the rows stored under {key!r} cannot be read ({exc}); "
                f"delete it with store.delete({key!r}) to start empty"
            ) from None
        super().__init__(event_bus, working_memory, **kwargs)
        if rows:
            self.set_trait("rows", rows)

    @property
    def store_key(self) -> str:
        """The store hash holding the table (``sidebar_activity:{user_id}``)."""
        return keys.sidebar_activity(self.working_memory.user_id)

    @feed
    def set_activity(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Replace the table (every row, in id order) after a change."""
        table = _rows(rows)
        store = self.working_memory.store
        if table:  # stored first: a failed write changes nothing
            store.hset(self.store_key, "rows", table)
        else:
            store.hdel(self.store_key, "rows")
        self.set_trait("rows", table)

    @command(
        "add",
        arg("interface", help="The sidebar interface (e.g. email)."),
        arg("summary", words=True, help="What the agent did."),
        arg("--status", default="handled", help="handled, escalated, failed, conflict, dismissed, resolved..."),
        arg("--reason", help="An escalation's reason."),
        help="Add a sidebar row updated now: INTERFACE SUMMARY [--status S] [--reason R].",
    )
    def _add_command(self, interface: str, summary: str, status: str, reason: str | None) -> None:
        now = self.working_memory.clock.now().astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        number = max((int(r.get("id", 0) or 0) for r in self.rows), default=0) + 1
        row = {
            "id": number,
            "interface_name": interface,
            "thread_id": f"thread-{number}",
            "agent_id": interface,
            "summary": summary,
            "status": status,
            "escalation_reason": reason,
            "run_count": 1,
            "created_at": now,
            "updated_at": now,
        }
        self.set_activity([*self.rows, row])

    @command("status", arg("id", type=int), arg("status"), help="Set row ID's status (e.g. dismissed).")
    def _status_command(self, id: int, status: str) -> None:
        if not any(r.get("id") == id for r in self.rows):
            raise ValueError(f"no sidebar row with id {id}")
        now = self.working_memory.clock.now().astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        self.set_activity([{**r, "status": status, "updated_at": now} if r.get("id") == id else r for r in self.rows])

    def shown(self) -> list[dict[str, Any]]:
        """The rows the sidebar shows, in MIRA's order (newest update first, ties by id)."""
        visible = [r for r in self.rows if r.get("status") not in HIDDEN_STATUSES]
        visible.sort(key=lambda r: r.get("id") or 0)
        visible.sort(key=lambda r: str(r["updated_at"]), reverse=True)  # stable: ties keep the id order
        return visible

    def describe_items(self) -> list[dict[str, Any]]:
        return [
            {"id": str(r.get("id")), "label": f"[{r['interface_name']}] {r['status']}: {r['summary']}",
             "turns_remaining": None}
            for r in self.shown()
        ]  # fmt: skip

    def generate_content(self, context: dict[str, Any]) -> str:
        rows = self.shown()
        if not rows:
            return ""
        now = self.working_memory.clock.now()
        groups: dict[Any, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(row["interface_name"], []).append(row)
        lines = ["<async_activity>"]
        for interface, items in groups.items():
            lines.append(f"[{html.escape(interface)}]")
            for row in items:
                status = row["status"]
                reason = row.get("escalation_reason")
                because = f" Reason: {html.escape(reason)}" if status == "escalated" and reason else ""
                lines.append(
                    f"  {_PREFIX.get(status, '')}{html.escape(row['summary'])}{because} [{age(row['updated_at'], now)}]"
                )
        lines.append("</async_activity>")
        return "\n".join(lines)
