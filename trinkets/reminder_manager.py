"""ReminderManager: the reminders that are overdue or due later today (section ``active_reminders``).

Reminders live in the WorkingMemory's state store, in the hash ``reminders:{user_id}`` (field = the
reminder id, value = a JSON object), so a Session on a :class:`~wm_kernel.store.SQLiteStore` file
keeps them across a restart. Feed them with :meth:`ReminderManager.add_reminder`,
:meth:`~ReminderManager.complete` and :meth:`~ReminderManager.delete`; list them with
:meth:`~ReminderManager.reminders`. A change shows from the next compose.

Which reminders show is computed at every compose from the clock, in the profile's time zone:

- *overdue*: due at or before now (a reminder due exactly now is overdue: its moment has come);
- *today*: due after now and before the next local midnight (one due exactly at midnight is
  tomorrow's);
- later ones, and completed ones, are left out. Nothing due: no section.

The markup follows the original: ``<active_reminders>``, an instruction line, then
``<user_reminders>`` and ``<internal_reminders>`` (only the non-empty ones), each holding
``<overdue>`` and ``<today>`` groups (only the non-empty ones). User reminders carry the original's
urgent marking and instructions; internal ones (notes the assistant left for itself) carry none.
Within a group reminders come by due time, then id. Each reminder is
``<reminder id=".." title=".." due="in 2 hours" time="..">`` with an optional ``<details>`` line,
then ``</reminder>`` (on the same line when there are no details); ``time``
is the local clock time and zone abbreviation, prefixed by the date when it is not today. The
wording of the fixed lines (this project's own) is in the module constants:

- :data:`INSTRUCTION` (after ``<active_reminders>``): "Reminders due now or later today, in the
  user's time zone. User reminders are the user's own; internal reminders are notes you left for
  yourself: act on them without presenting them to the user as reminders."
- :data:`OVERDUE_WARNING` (user overdue): "WARNING: these reminders are past due and the user has
  not been told yet."
- :data:`OVERDUE_ACTION` (user overdue): "ACTION: notify the user of each overdue reminder
  immediately, at the start of your next reply, before anything else."
- :data:`TODAY_GUIDANCE` (user today): "Remind the user of these during the conversation, at a
  natural moment, before they are due."

Titles, details and ids are escaped (:mod:`wm_kernel.markup`), so none can close a tag.

Examples
--------
>>> from wm_kernel.clock import ManualClock
>>> from wm_kernel.profile import Profile
>>> from wm_kernel.session import Session
>>> s = Session(profile=Profile(timezone="America/New_York"), trinkets=[ReminderManager],
...             clock=ManualClock("2026-11-30T14:00:00+00:00"))           # 9:00 AM in New York
>>> reminders = s.trinket("ReminderManager")
>>> reminders.add_reminder("Call the bank", "2026-11-30T13:30:00+00:00", details="Ask about fees")
'rem_1'
>>> reminders.add_reminder("Dentist", "2026-11-30T20:00:00+00:00")
'rem_2'
>>> reminders.add_reminder("Renew passport", "2026-12-20T15:00:00+00:00")   # later: not shown
'rem_3'
>>> _ = s.compose()
>>> print(reminders.content)
<active_reminders>
  Reminders due now or later today, in the user's time zone. User reminders are the user's own; internal reminders are notes you left for yourself: act on them without presenting them to the user as reminders.
  <user_reminders>
    <overdue urgent="true">
      WARNING: these reminders are past due and the user has not been told yet.
      ACTION: notify the user of each overdue reminder immediately, at the start of your next reply, before anything else.
      <reminder id="rem_1" title="Call the bank" due="30 minutes ago" time="8:30 AM EST">
        <details>Ask about fees</details>
      </reminder>
    </overdue>
    <today>
      Remind the user of these during the conversation, at a natural moment, before they are due.
      <reminder id="rem_2" title="Dentist" due="in 6 hours" time="3:00 PM EST"></reminder>
    </today>
  </user_reminders>
</active_reminders>
>>> reminders.complete("rem_1"); [r["status"] for r in reminders.reminders()]
['completed', 'today', 'later']
"""
from __future__ import annotations

from datetime import datetime, time, timedelta, timezone, tzinfo
from typing import Any

from trinkets.base import EventAwareTrinket, feed
from wm_kernel import keys
from wm_kernel.checks import check_str
from wm_kernel.clock import parse_instant
from wm_kernel.markup import escape_attr, escape_text
from wm_kernel.timefmt import format_clock_time, relative_time, zone_abbreviation

#: The line after ``<active_reminders>``.
INSTRUCTION = ("Reminders due now or later today, in the user's time zone. User reminders are the "
               "user's own; internal reminders are notes you left for yourself: act on them without "
               "presenting them to the user as reminders.")
#: The first line of a user ``<overdue urgent="true">`` group.
OVERDUE_WARNING = "WARNING: these reminders are past due and the user has not been told yet."
#: The second line of a user ``<overdue urgent="true">`` group.
OVERDUE_ACTION = ("ACTION: notify the user of each overdue reminder immediately, at the start of "
                  "your next reply, before anything else.")
#: The line of a user ``<today>`` group.
TODAY_GUIDANCE = ("Remind the user of these during the conversation, at a natural moment, before "
                  "they are due.")

#: The categories, in the order their blocks are rendered.
CATEGORIES = ("user", "internal")

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _local_midnight_after(now: datetime, zone: tzinfo) -> datetime:
    """The first instant of the user's next local date, in UTC."""
    tomorrow = now.astimezone(zone).date() + timedelta(days=1)
    return datetime.combine(tomorrow, time(0), tzinfo=zone).astimezone(timezone.utc)


class ReminderManager(EventAwareTrinket):
    """Overdue and due-today reminders, user and internal, from the state store.

    Its data is not held on the object but in the store under :attr:`store_key`, one field per
    reminder: ``{"id", "title", "details", "category", "due", "created_at", "completed_at"}``
    (instants as ISO 8601 strings; ``completed_at`` None while open). Generated ids are ``rem_1``,
    ``rem_2``... from a counter kept in the store too (``{store_key}:meta``), so a deleted
    reminder's id is never handed out again.
    """

    variable_name = "active_reminders"
    cache_policy = False

    # -- where the data lives
    @property
    def store_key(self) -> str:
        """The store hash of this user's reminders."""
        return keys.reminders(self.working_memory.user_id)

    def _load(self) -> dict[str, dict[str, Any]]:
        return self.working_memory.store.hgetall(self.store_key)

    def _next_id(self) -> str:
        # called inside a store transaction: reading and bumping the counter is one atomic step;
        # each candidate is looked up alone, so adding a reminder costs the same with 10 or 10,000
        store, meta = self.working_memory.store, keys.reminders_meta(self.working_memory.user_id)
        number = int(store.hget(meta, "next_number") or 1)
        while store.hget(self.store_key, f"rem_{number}") is not None:  # a caller chose rem_<n>
            number += 1
        store.hset(meta, "next_number", number + 1)
        return f"rem_{number}"

    # -- feeding
    @feed
    def add_reminder(self, title: str, due: "datetime | str", details: str = "",
                     category: str = "user", id: str | None = None) -> str:  # noqa: A002
        """Add a reminder and return its id.

        Parameters
        ----------
        title:
            What to remind of (non-empty).
        due:
            When: an aware datetime or an ISO 8601 string with an offset (naive: ValueError).
        details:
            Optional longer text, shown as ``<details>``.
        category:
            "user" (the user's reminder: shown with urgent marking) or "internal" (the assistant's
            own note to self).
        id:
            The id to use (must be new); default the next ``rem_N``.
        """
        check_str(title, "title")
        check_str(details, "details", empty_ok=True)
        if category not in CATEGORIES:
            raise ValueError(f"category must be one of {', '.join(CATEGORIES)}; got {category!r}")
        due_at = parse_instant(due, what="due")
        if id is not None:
            check_str(id, "reminder id")
        store = self.working_memory.store
        with store.transaction():
            if id is None:
                id = self._next_id()
            elif store.hget(self.store_key, id) is not None:
                raise ValueError(f"a reminder with id {id!r} already exists")
            store.hset(self.store_key, id, {
                "id": id, "title": title, "details": details, "category": category,
                "due": due_at.isoformat(), "created_at": self.working_memory.clock.now().isoformat(),
                "completed_at": None})
        return id

    def _get(self, id: str) -> dict[str, Any]:  # noqa: A002
        check_str(id, "reminder id")
        record: dict[str, Any] | None = self.working_memory.store.hget(self.store_key, id)
        if record is None:
            known = ", ".join(sorted(self._load())) or "none"
            raise ValueError(f"unknown reminder id {id!r} (known: {known})")
        return record

    @feed
    def complete(self, id: str) -> None:  # noqa: A002
        """Mark a reminder done: it stays in the store (listed as completed) but no longer shows.
        Completing it twice is a ValueError."""
        record = self._get(id)
        if record.get("completed_at"):
            raise ValueError(f"reminder {id!r} is already completed")
        record["completed_at"] = self.working_memory.clock.now().isoformat()
        self.working_memory.store.hset(self.store_key, id, record)

    @feed
    def delete(self, id: str) -> None:  # noqa: A002
        """Remove a reminder altogether."""
        self._get(id)
        self.working_memory.store.hdel(self.store_key, id)

    # -- reading
    def reminders(self) -> list[dict[str, Any]]:
        """Every stored reminder, by due time then id, as dicts: id, title, details, category, due
        (aware datetime), completed (bool) and status ("overdue", "today", "later" or
        "completed", as of the clock now)."""
        now = self.working_memory.clock.now()
        day_end = _local_midnight_after(now, self.working_memory.profile.zone)
        rows = []
        for record in self._load().values():
            due = datetime.fromisoformat(record["due"])
            completed = bool(record.get("completed_at"))
            rows.append({"id": record["id"], "title": record["title"],
                         "details": record.get("details", ""), "category": record["category"],
                         "due": due, "completed": completed,
                         "status": "completed" if completed else _status(due, now, day_end)})
        rows.sort(key=lambda r: (r["due"], r["id"]))
        return rows

    # -- rendering
    def generate_content(self, context: dict[str, Any]) -> str:
        now = self.working_memory.clock.now()
        zone = self.working_memory.profile.zone
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in self.reminders():
            if row["status"] in ("overdue", "today"):
                groups.setdefault((row["category"], row["status"]), []).append(row)
        if not groups:
            return ""
        lines = ["<active_reminders>", f"  {INSTRUCTION}"]
        for category in CATEGORIES:
            overdue, today = groups.get((category, "overdue")), groups.get((category, "today"))
            if not overdue and not today:
                continue
            user = category == "user"
            lines.append(f"  <{category}_reminders>")
            if overdue:
                lines.append('    <overdue urgent="true">' if user else "    <overdue>")
                if user:
                    lines += [f"      {OVERDUE_WARNING}", f"      {OVERDUE_ACTION}"]
                lines += [line for row in overdue for line in _render(row, now, zone)]
                lines.append("    </overdue>")
            if today:
                lines.append("    <today>")
                if user:
                    lines.append(f"      {TODAY_GUIDANCE}")
                lines += [line for row in today for line in _render(row, now, zone)]
                lines.append("    </today>")
            lines.append(f"  </{category}_reminders>")
        lines.append("</active_reminders>")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ReminderManager section={self.variable_name!r} key={self.store_key!r}>"


def _status(due: datetime, now: datetime, day_end: datetime) -> str:
    if due <= now:
        return "overdue"
    return "today" if due < day_end else "later"


def _clock_label(due: datetime, now: datetime, zone: tzinfo) -> str:
    """'3:00 PM EST' today; 'Nov 28, 8:30 AM EST' on another date (with the year if not this one)."""
    moment, today = due.astimezone(zone), now.astimezone(zone).date()
    clock = f"{format_clock_time(moment)} {zone_abbreviation(moment)}"
    if moment.date() == today:
        return clock
    date = f"{_MONTHS[moment.month - 1]} {moment.day}"
    if moment.year != today.year:
        date += f" {moment.year}"
    return f"{date}, {clock}"


def _render(row: dict[str, Any], now: datetime, zone: tzinfo) -> list[str]:
    due = row["due"]
    opening = (f'      <reminder id="{escape_attr(row["id"])}" title="{escape_attr(row["title"])}" '
               f'due="{escape_attr(relative_time(due, now))}" '
               f'time="{escape_attr(_clock_label(due, now, zone))}">')
    if not row["details"]:
        return [opening + "</reminder>"]
    return [opening, f"        <details>{escape_text(row['details'])}</details>", "      </reminder>"]
