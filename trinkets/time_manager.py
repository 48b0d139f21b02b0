"""PLACEHOLDER: to be replaced by the real TimeManager (trinkets issue)."""
from __future__ import annotations

from trinkets.base import EventAwareTrinket


class TimeManager(EventAwareTrinket):
    variable_name = "datetime_section"

    def generate_content(self, context):
        return ""
