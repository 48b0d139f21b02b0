"""PLACEHOLDER: to be replaced by the real ProactiveMemoryTrinket (trinkets issue)."""
from __future__ import annotations

from trinkets.base import EventAwareTrinket


class ProactiveMemoryTrinket(EventAwareTrinket):
    variable_name = "relevant_memories"

    def generate_content(self, context):
        return ""
