"""PLACEHOLDER: to be replaced by the real ReminderManager (trinkets issue)."""
from __future__ import annotations

from trinkets.base import EventAwareTrinket


class ReminderManager(EventAwareTrinket):
    variable_name = "active_reminders"

    def generate_content(self, context):
        return ""
