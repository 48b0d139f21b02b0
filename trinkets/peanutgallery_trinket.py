"""PLACEHOLDER: to be replaced by the real PeanutGalleryTrinket (trinkets issue)."""
from __future__ import annotations

from trinkets.base import EventAwareTrinket


class PeanutGalleryTrinket(EventAwareTrinket):
    variable_name = "peanutgallery_guidance"

    def generate_content(self, context):
        return ""
