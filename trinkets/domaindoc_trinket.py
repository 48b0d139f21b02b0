"""PLACEHOLDER: to be replaced by the real DomaindocTrinket (trinkets issue)."""
from __future__ import annotations

from trinkets.base import EventAwareTrinket


class DomaindocTrinket(EventAwareTrinket):
    variable_name = "domaindoc"

    def generate_content(self, context):
        return ""
