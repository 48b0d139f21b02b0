"""ReminderManager: the reminders that are overdue or due today (section ``active_reminders``).

Reminders live in the WorkingMemory's state store, in the hash ``reminders:{user_id}`` (field = the
reminder id, value = a JSON object), so a Session on a :class:`~wm_kernel.stores.embedded.SQLiteStore` file
keeps them across a restart. Feed them with :meth:`ReminderManager.add_reminder`,
:meth:`~ReminderManager.complete` and :meth:`~ReminderManager.delete`; list them with
:meth:`~ReminderManager.reminders`. A change shows from the next compose. Completed reminders and
those due after today never show; nothing to show: no section.

Two styles (the ``style`` trait; docs/deviations.md lists both):

``"original"`` (the default) writes the original system's text, byte for byte:

- *overdue*: due before the start of the user's local date (local midnight, in the profile's zone);
  *today*: due from that midnight to the next, the user's calendar day however long it is (the
  original counts 24 hours, so it drops the last hour of a 25-hour day and takes in the first hour
  of tomorrow on a 23-hour one: a deviation, listed in docs/deviations.md). A reminder due earlier
  today, even one already past, stays under ``<today>``.
- markup: ``<active_reminders>``, the :data:`~trinkets.reminders.render.ORIGINAL_INSTRUCTION`
  element, then ``<user_reminders>`` and ``<internal_reminders>`` (only the non-empty ones), each
  with ``<overdue>`` then ``<today>`` (only the non-empty ones), nothing indented. A user ``<overdue
  urgent="true">`` opens with a ``<warning>`` and closes with an ``<action>`` after its reminders;
  an internal ``<overdue>`` has its own ``<warning>`` and no action; a user ``<today>`` ends with a
  ``<guidance>`` element, an internal one has none (the wording:
  :data:`~trinkets.reminders.render.ORIGINAL_WORDING`).
- each reminder is self-closing, ``<reminder id=".." title=".." due=".."/>``, or, with details,
  ``<reminder ..>``, ``<details>..</details>``, ``</reminder>`` on three lines. ``due`` is the
  relative time ("1 day ago", "in 6 hours") for overdue and still-coming reminders, and the local
  date and time ("2026-11-30 07:00:00") for one due earlier today; ``time`` (local, 24-hour
  "15:00") only on still-coming reminders of today.

``"revised"`` is this project's own wording, and its own day:

- *overdue*: due at or before now (a reminder due exactly now is overdue: its moment has come);
  *today*: due after now and before the next local midnight, the user's calendar day however long
  it is (23, 24 or 25 hours).
- markup indented by two spaces per level, an instruction line
  (:data:`~trinkets.reminders.render.REVISED_INSTRUCTION`) that tells the model how user and
  internal reminders differ, the user group's lines before their reminders
  (:data:`~trinkets.reminders.render.REVISED_OVERDUE_WARNING`,
  :data:`~trinkets.reminders.render.REVISED_OVERDUE_ACTION`,
  :data:`~trinkets.reminders.render.REVISED_TODAY_GUIDANCE`), and every reminder as ``<reminder
  id=".." title=".." due="in 2 hours" time="3:00 PM EST">`` with a ``time`` in the user's words
  (prefixed by the date when not today) and an optional ``<details>`` line before ``</reminder>``.

In both styles a group lists its reminders by due time, then id; ids, titles, details and times are
escaped (the original writes them raw, so a title could close a tag or add an attribute; for text
without markup characters the output is the same), so an XML parser reads every value back
unchanged. Both work to the last day datetime can hold (9999-12-31), in every zone.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.core.profile import Profile
>>> from wm_kernel.session import Session
>>> s = Session(profile=Profile(timezone="America/New_York"), trinkets=[ReminderManager],
...             clock=ManualClock("2026-11-30T14:00:00+00:00"))           # 9:00 AM in New York
>>> reminders = s.trinket("ReminderManager")
>>> reminders.add_reminder("Pay rent", "2026-11-29T14:00:00+00:00")
'rem_1'
>>> reminders.add_reminder("Call the bank", "2026-11-30T13:30:00+00:00", details="Ask about fees")
'rem_2'
>>> reminders.add_reminder("Dentist", "2026-11-30T20:00:00+00:00")
'rem_3'
>>> reminders.add_reminder("Renew passport", "2026-12-20T15:00:00+00:00")   # later: not shown
'rem_4'
>>> _ = s.compose()
>>> print(reminders.content)
<active_reminders>
<instruction>Reminders require immediate action. When one is due or overdue, notify The User even if mid-conversation. They cannot see reminders unless you voice them. Non-negotiable.</instruction>
<user_reminders>
<overdue urgent="true">
<warning>⚠️ OVERDUE - REQUIRE IMMEDIATE ATTENTION</warning>
<reminder id="rem_1" title="Pay rent" due="1 day ago"/>
<action>YOU MUST notify the user about these overdue reminders IMMEDIATELY.</action>
</overdue>
<today>
<reminder id="rem_2" title="Call the bank" due="2026-11-30 08:30:00">
<details>Ask about fees</details>
</reminder>
<reminder id="rem_3" title="Dentist" due="in 6 hours" time="15:00"/>
<guidance>Please remind the user about these during the continuum when appropriate.</guidance>
</today>
</user_reminders>
</active_reminders>
>>> reminders.style = "revised"
>>> _ = s.compose()
>>> print(reminders.content)
<active_reminders>
  Reminders due now or later today, in the user's time zone. User reminders are the user's own; internal reminders are notes you left for yourself: act on them without presenting them to the user as reminders.
  <user_reminders>
    <overdue urgent="true">
      WARNING: these reminders are past due and the user has not been told yet.
      ACTION: notify the user of each overdue reminder immediately, at the start of your next reply, before anything else.
      <reminder id="rem_1" title="Pay rent" due="1 day ago" time="Nov 29, 9:00 AM EST"></reminder>
      <reminder id="rem_2" title="Call the bank" due="30 minutes ago" time="8:30 AM EST">
        <details>Ask about fees</details>
      </reminder>
    </overdue>
    <today>
      Remind the user of these during the conversation, at a natural moment, before they are due.
      <reminder id="rem_3" title="Dentist" due="in 6 hours" time="3:00 PM EST"></reminder>
    </today>
  </user_reminders>
</active_reminders>
>>> reminders.complete("rem_1"); [r["status"] for r in reminders.reminders()]
['completed', 'overdue', 'today', 'later']
"""  # noqa: E501 - the examples show the section as the model receives it, line for line

from __future__ import annotations

from collections.abc import Hashable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from trinkets.base import EventAwareTrinket, TrinketHost, arg, at, command, feed, instant_or_offset
from trinkets.reminders.days import day_window, due_status
from trinkets.reminders.render import CATEGORIES, render_original, render_revised
from trinkets.reminders.store import ReminderStore
from wm_kernel.core.clock import parse_instant
from wm_kernel.utils.checks import check_str

if TYPE_CHECKING:
    from wm_kernel.core.bus import EventBus


class ReminderManager(EventAwareTrinket):
    """Overdue and due-today reminders, user and internal, from the state store.

    Its data is not held on the object but in the store under :attr:`store_key`, one field per
    reminder: ``{"id", "title", "details", "category", "due", "created_at", "completed_at"}``
    (instants as ISO 8601 strings; ``completed_at`` None while open). Generated ids are ``rem_1``,
    ``rem_2``... from a counter kept in the store too (``{store_key}:meta``), so a deleted
    reminder's id is never handed out again.
    """

    variable_name = "active_reminders"
    default_priority = 80  # token budgets: see docs/budgets.md
    reuse_content = True  # its inputs: traits, feeds, own store writes, profile, clock
    time_dependent = True
    cache_policy = False
    styles = ("original", "revised")

    def __init__(self, event_bus: EventBus, working_memory: TrinketHost, **kwargs: Any) -> None:
        self._reminders = ReminderStore(working_memory)
        super().__init__(event_bus, working_memory, **kwargs)

    # -- where the data lives
    @property
    def store_key(self) -> str:
        """The store hash of this user's reminders."""
        return self._reminders.key

    def stored_inputs(self) -> tuple[str, ...]:
        return (self.store_key,)

    def _written(
        self,
        id: str,
        record: dict[str, Any] | None,  # noqa: A002
        before: Hashable | None,
    ) -> None:
        """Reminder ``id`` was written (see :meth:`ReminderStore.written`): the section's input changed."""
        self._reminders.written(id, record, before)
        self._inputs_changed()

    # -- feeding
    @feed
    def add_reminder(
        self, title: str, due: datetime | str, details: str = "", category: str = "user", id: str | None = None
    ) -> str:  # noqa: A002
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
            before = store.version(self.store_key)
            if id is None:
                id = self._reminders.next_id()
            elif store.hget(self.store_key, id) is not None:
                raise ValueError(f"a reminder with id {id!r} already exists")
            record = {
                "id": id,
                "title": title,
                "details": details,
                "category": category,
                "due": due_at.isoformat(),
                "created_at": self.working_memory.clock.now().isoformat(),
                "completed_at": None,
            }
            store.hset(self.store_key, id, record)
        self._written(id, record, before)
        return id

    @command(
        "add",
        arg("title", words=True, help="What to remind of."),
        arg("--due", type=instant_or_offset, required=True, help="ISO 8601 with offset, or +N[m|h|d|w]."),
        arg("--details", default="", help="Longer text."),
        arg(
            "--internal",
            dest="category",
            action="store_const",
            const="internal",
            default="user",
            help="The assistant's own reminder.",
        ),
        arg("--id", help="The id to use."),
        help="Add a reminder: TITLE --due ISO|+2h [--details D] [--internal] [--id ID].",
    )
    def _add_command(self, title: str, due: datetime | timedelta, **rest: Any) -> str:
        return self.add_reminder(title, at(self.working_memory.clock.now(), due, "--due"), **rest)

    @command("complete", arg("id", help="The item's id."), help="Mark a reminder done.")
    @feed
    def complete(self, id: str) -> None:  # noqa: A002
        """Mark a reminder done: it stays in the store (listed as completed) but no longer shows.
        Completing it twice is a ValueError."""
        record = self._reminders.get(id)
        if record.get("completed_at"):
            raise ValueError(f"reminder {id!r} is already completed")
        record["completed_at"] = self.working_memory.clock.now().isoformat()
        store = self.working_memory.store
        before = store.version(self.store_key)
        store.hset(self.store_key, id, record)
        self._written(id, record, before)

    @command("delete", arg("id", help="The item's id."), help="Remove a reminder.")
    @feed
    def delete(self, id: str) -> None:  # noqa: A002
        """Remove a reminder altogether."""
        self._reminders.get(id)
        store = self.working_memory.store
        before = store.version(self.store_key)
        store.hdel(self.store_key, id)
        self._written(id, None, before)

    # -- reading
    def reminders(self) -> list[dict[str, Any]]:
        """Every stored reminder, by due time then id, as dicts: id, title, details, category, due
        (aware datetime), completed (bool) and status ("overdue", "today", "later" or "completed",
        as of the clock now, by the current style's day: see the module docstring)."""
        now = self.working_memory.clock.now()
        window = day_window(now, self.working_memory.profile.zone)
        rows = []
        for record in self._reminders.all().values():
            due = datetime.fromisoformat(record["due"])
            completed = bool(record.get("completed_at"))
            rows.append(
                {
                    "id": record["id"],
                    "title": record["title"],
                    "details": record.get("details", ""),
                    "category": record["category"],
                    "due": due,
                    "completed": completed,
                    "status": "completed" if completed else due_status(due, now, window, self.style),
                }
            )
        rows.sort(key=lambda r: (r["due"], r["id"]))
        return rows

    # -- rendering
    def generate_content(self, context: dict[str, Any]) -> str:
        now = self.working_memory.clock.now()
        zone = self.working_memory.profile.zone
        window, style = day_window(now, zone), self.style
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in self._reminders.open_rows():
            status = due_status(row["due"], now, window, style)
            if status != "later":
                groups.setdefault((row["category"], status), []).append(row)
        if not groups:
            return ""
        if self.style == "revised":
            return render_revised(groups, now, zone)
        return render_original(groups, now, zone)

    def __repr__(self) -> str:
        return f"<ReminderManager section={self.variable_name!r} key={self.store_key!r}>"
