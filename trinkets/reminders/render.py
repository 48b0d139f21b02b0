"""The text of the ``active_reminders`` section, in its two styles, from the reminders to show.

:func:`render_original` writes the original system's markup, :func:`render_revised` this
project's; both take the shown reminders grouped by (category, "overdue" or "today"), each group by
due time then id, and escape every value. :class:`~trinkets.reminders.ReminderManager` calls
them (its module docstring shows both).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from trinkets.reminders.days import wall_clock
from wm_kernel.utils.markup import XML_ILLEGAL, escape_text
from wm_kernel.utils.timefmt import relative_time

#: The original's line after ``<active_reminders>`` (an ``<instruction>`` element).
ORIGINAL_INSTRUCTION = (
    "Reminders require immediate action. When one is due or overdue, notify The "
    "User even if mid-conversation. They cannot see reminders unless you voice "
    "them. Non-negotiable."
)


@dataclass(frozen=True)
class Wording:
    """What sets one category's block apart in the original style ('' = that element is left out)."""

    #: Attributes of the ``<overdue>`` tag (with their leading space).
    overdue_attributes: str
    #: The ``<warning>`` opening an ``<overdue>`` group.
    warning: str
    #: The ``<action>`` closing an ``<overdue>`` group.
    action: str
    #: The ``<guidance>`` closing a ``<today>`` group.
    guidance: str


#: The original's wording per category.
ORIGINAL_WORDING = {
    "user": Wording(
        overdue_attributes=' urgent="true"',
        warning="⚠️ OVERDUE - REQUIRE IMMEDIATE ATTENTION",
        action="YOU MUST notify the user about these overdue reminders IMMEDIATELY.",
        guidance="Please remind the user about these during the continuum when appropriate.",
    ),
    "internal": Wording(overdue_attributes="", warning="⚠️ OVERDUE INTERNAL REMINDERS", action="", guidance=""),
}

#: The revised style's line after ``<active_reminders>``.
REVISED_INSTRUCTION = (
    "Reminders due now or later today, in the user's time zone. User reminders "
    "are the user's own; internal reminders are notes you left for yourself: act "
    "on them without presenting them to the user as reminders."
)
#: The revised style's first line of a user ``<overdue urgent="true">`` group.
REVISED_OVERDUE_WARNING = "WARNING: these reminders are past due and the user has not been told yet."
#: The revised style's second line of a user ``<overdue urgent="true">`` group.
REVISED_OVERDUE_ACTION = (
    "ACTION: notify the user of each overdue reminder immediately, at the "
    "start of your next reply, before anything else."
)
#: The revised style's line of a user ``<today>`` group.
REVISED_TODAY_GUIDANCE = "Remind the user of these during the conversation, at a natural moment, before they are due."

#: The categories, in the order their blocks are rendered.
CATEGORIES = ("user", "internal")

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# Attribute values: markup characters, the double quote that delimits them, and the whitespace an
# XML parser would normalise (so values read back byte for byte). Not the apostrophe: inside double
# quotes it is harmless, and titles such as "Mom's birthday" stay as the original writes them.
# Characters XML cannot carry at all become U+FFFD, as in every other trinket.
_ATTRIBUTE_TABLE = str.maketrans(
    {**XML_ILLEGAL, "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
)


def _attribute(value: object) -> str:
    return str(value).translate(_ATTRIBUTE_TABLE)


# -- the original style


def render_original(groups: dict[tuple[str, str], list[dict[str, Any]]], now: datetime, zone: tzinfo) -> str:
    """The section in the original style: ``groups`` maps (category, "overdue" or "today") to its
    reminders, ``now`` and ``zone`` give their relative times and local clock."""
    lines = ["<active_reminders>", f"<instruction>{ORIGINAL_INSTRUCTION}</instruction>"]
    for category in CATEGORIES:
        overdue, today = groups.get((category, "overdue")), groups.get((category, "today"))
        if not overdue and not today:
            continue
        wording = ORIGINAL_WORDING[category]
        lines.append(f"<{category}_reminders>")
        if overdue:
            lines += [f"<overdue{wording.overdue_attributes}>", f"<warning>{wording.warning}</warning>"]
            lines += [_original_reminder(row, relative_time(row["due"], now)) for row in overdue]
            if wording.action:
                lines.append(f"<action>{wording.action}</action>")
            lines.append("</overdue>")
        if today:
            lines.append("<today>")
            for row in today:
                wall = wall_clock(row["due"], zone)
                if row["due"] > now:
                    lines.append(
                        _original_reminder(row, relative_time(row["due"], now), f"{wall.hour:02d}:{wall.minute:02d}")
                    )
                else:  # due earlier today: the local date and time instead of a relative time
                    lines.append(
                        _original_reminder(
                            row,
                            f"{wall.year:04d}-{wall.month:02d}-{wall.day:02d} "
                            f"{wall.hour:02d}:{wall.minute:02d}:{wall.second:02d}",
                        )
                    )
            if wording.guidance:
                lines.append(f"<guidance>{wording.guidance}</guidance>")
            lines.append("</today>")
        lines.append(f"</{category}_reminders>")
    lines.append("</active_reminders>")
    return "\n".join(lines)


def _original_reminder(row: dict[str, Any], due: str, time: str | None = None) -> str:
    attributes = f'id="{_attribute(row["id"])}" title="{_attribute(row["title"])}" due="{_attribute(due)}"'
    if time is not None:
        attributes += f' time="{_attribute(time)}"'
    if not row["details"]:
        return f"<reminder {attributes}/>"
    return f"<reminder {attributes}>\n<details>{escape_text(row['details'])}</details>\n</reminder>"


# -- the revised style


def render_revised(groups: dict[tuple[str, str], list[dict[str, Any]]], now: datetime, zone: tzinfo) -> str:
    """The section in the revised style (``groups``, ``now`` and ``zone`` as for :func:`render_original`)."""
    lines = ["<active_reminders>", f"  {REVISED_INSTRUCTION}"]
    for category in CATEGORIES:
        overdue, today = groups.get((category, "overdue")), groups.get((category, "today"))
        if not overdue and not today:
            continue
        user = category == "user"
        lines.append(f"  <{category}_reminders>")
        if overdue:
            lines.append('    <overdue urgent="true">' if user else "    <overdue>")
            if user:
                lines += [f"      {REVISED_OVERDUE_WARNING}", f"      {REVISED_OVERDUE_ACTION}"]
            lines += [line for row in overdue for line in _revised_reminder(row, now, zone)]
            lines.append("    </overdue>")
        if today:
            lines.append("    <today>")
            if user:
                lines.append(f"      {REVISED_TODAY_GUIDANCE}")
            lines += [line for row in today for line in _revised_reminder(row, now, zone)]
            lines.append("    </today>")
        lines.append(f"  </{category}_reminders>")
    lines.append("</active_reminders>")
    return "\n".join(lines)


def _clock_label(due: datetime, now: datetime, zone: tzinfo) -> str:
    """'3:00 PM EST' today; 'Nov 28, 8:30 AM EST' on another date (with the year if not this one)."""
    moment, today = wall_clock(due, zone), wall_clock(now, zone)
    hour12 = moment.hour % 12 or 12
    clock = f"{hour12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'} {moment.zone}"
    if moment.date == today.date:
        return clock
    label = f"{_MONTHS[moment.month - 1]} {moment.day}"
    if moment.year != today.year:
        label += f" {moment.year}"
    return f"{label}, {clock}"


def _revised_reminder(row: dict[str, Any], now: datetime, zone: tzinfo) -> list[str]:
    due = row["due"]
    opening = (
        f'      <reminder id="{_attribute(row["id"])}" title="{_attribute(row["title"])}" '
        f'due="{_attribute(relative_time(due, now))}" '
        f'time="{_attribute(_clock_label(due, now, zone))}">'
    )
    if not row["details"]:
        return [opening + "</reminder>"]
    return [opening, f"        <details>{escape_text(row['details'])}</details>", "      </reminder>"]
