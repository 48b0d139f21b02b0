"""Small trinkets the instrument tests (history, diff, cache) share."""

from __future__ import annotations

from trinkets.base import EventAwareTrinket


class Directives(EventAwareTrinket):
    """A cached system section whose text a test can change (``Directives.text = ...``)."""

    variable_name = "behavioral_directives"
    cache_policy = True
    text = "Be brief."

    def generate_content(self, context):
        return self.text


class Ticker(EventAwareTrinket):
    """A notification section that changes whenever the clock's minute does."""

    variable_name = "datetime_section"

    def generate_content(self, context):
        return f"<now>{self.working_memory.clock.now():%H:%M}</now>"


class Doc(EventAwareTrinket):
    """A cacheable section placed after the history: never part of the cached prefix."""

    variable_name = "domaindoc"
    cache_policy = True

    def generate_content(self, context):
        return "<doc>rules</doc>"
