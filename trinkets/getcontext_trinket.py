"""PLACEHOLDER: to be replaced by the real GetContextTrinket (trinkets issue)."""
from __future__ import annotations

from trinkets.base import EventAwareTrinket


class GetContextTrinket(EventAwareTrinket):
    variable_name = "context_search_results"

    def generate_content(self, context):
        return ""
