"""PLACEHOLDER: to be replaced by the real ManifestTrinket (trinkets issue)."""
from __future__ import annotations

from trinkets.base import EventAwareTrinket


class ManifestTrinket(EventAwareTrinket):
    variable_name = "conversation_manifest"

    def generate_content(self, context):
        return ""
