"""Sample trinkets for the stability checker: each unstable in one way, and its fix.

Module-level classes, so the checker's fresh processes can import them (``tests.stability_samples``).
Every section is one the default layout places in the cached system prompt.
"""

from __future__ import annotations

import uuid

from trinkets.base import EventAwareTrinket, feed

TAGS = ("search", "calendar", "email", "weather", "maps", "notes", "files", "translate")


class SetTags(EventAwareTrinket):
    """Lists its tools from a set: hash order, which differs between processes."""

    variable_name = "tool_availability"
    cache_policy = True

    def generate_content(self, context):
        tags = set(TAGS)
        return "<tools>" + ", ".join(tags) + "</tools>"


class SortedTags(SetTags):
    """The fix: the same set, sorted."""

    def generate_content(self, context):
        return "<tools>" + ", ".join(sorted(set(TAGS))) + "</tools>"


class Seconds(EventAwareTrinket):
    """Prints the time to the second in a cached section."""

    variable_name = "location_context"
    cache_policy = True

    def generate_content(self, context):
        return f"<local_time>{self.working_memory.clock.now():%Y-%m-%d %H:%M:%S}</local_time>"


class DateOnly(Seconds):
    """The fix: the cached section says the date; the minute belongs to the notification centre."""

    def generate_content(self, context):
        return f"<local_date>{self.working_memory.clock.now():%Y-%m-%d}</local_date>"


class FreshId(EventAwareTrinket):
    """Puts a new id in every compose."""

    variable_name = "behavioral_directives"
    cache_policy = True

    def generate_content(self, context):
        return f'<request id="{uuid.uuid4().hex[:12]}">Be brief.</request>'


class SegmentId(FreshId):
    """The fix: an id made once, kept for the conversation."""

    def __init__(self, *args, **kwargs):
        self.request_id = uuid.UUID(int=7).hex[:12]
        super().__init__(*args, **kwargs)

    def generate_content(self, context):
        return f'<request id="{self.request_id}">Be brief.</request>'


class LocalClock(EventAwareTrinket):
    """Converts to the machine's time zone (TZ), not the user's."""

    variable_name = "location_context"
    cache_policy = True

    def generate_content(self, context):
        return f"<server_date>{self.working_memory.clock.now().astimezone():%Y-%m-%d %H:00 %z}</server_date>"


class Facts(EventAwareTrinket):
    """Shows a dict it is fed in the order it arrives."""

    variable_name = "location_context"
    cache_policy = True

    def __init__(self, *args, **kwargs):
        self.facts: dict[str, str] = {}
        super().__init__(*args, **kwargs)

    @feed
    def set_facts(self, facts):
        self.facts = dict(facts)

    def generate_content(self, context):
        return "<facts>" + "; ".join(f"{k}={v}" for k, v in self.facts.items()) + "</facts>"


class SortedFacts(Facts):
    """The fix: keys sorted."""

    def generate_content(self, context):
        return "<facts>" + "; ".join(f"{k}={v}" for k, v in sorted(self.facts.items())) + "</facts>"


class Hangs(EventAwareTrinket):
    """Hangs from the second compose on (a trinket waiting on something that never answers)."""

    variable_name = "behavioral_directives"
    cache_policy = True
    composes = 0

    def generate_content(self, context):
        import time

        Hangs.composes += 1
        if Hangs.composes > 1:
            time.sleep(3600)
        return "<directives>Be brief.</directives>"
