"""PLACEHOLDER: to be replaced by the real LoraTrinket (trinkets issue)."""
from __future__ import annotations

from trinkets.base import EventAwareTrinket


class LoraTrinket(EventAwareTrinket):
    variable_name = "behavioral_directives"

    def generate_content(self, context):
        return ""
