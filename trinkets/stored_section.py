"""StoredSection: a section shown as another process stored it, such as a running deployment.

The original system writes each trinket's last content to the hash ``trinkets:{user_id}`` (field =
section name, value ``{"content", "cache_policy", "updated_at"}``). Pointed at that data (for
instance a read-only :class:`~wm_kernel.stores.valkey.ValkeyStore` on the deployment's server), a
StoredSection re-reads its field at every compose, so the composed prompt follows what the other
process writes: a changed section shows its new text, a removed one drops out.

:func:`mirror_stored_sections` registers one StoredSection per stored section that no registered
trinket publishes; call it again to pick up sections that appeared since.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(base_prompt="Hi.", trinkets=[], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> s.store.hset("trinkets:notebook", "datetime_section", {
...     "content": "<current_datetime>elsewhere</current_datetime>", "cache_policy": False,
...     "updated_at": "2026-11-30T08:59:00+00:00"})
>>> mirror_stored_sections(s)
['datetime_section']
>>> s.compose().section("datetime_section").content
'<current_datetime>elsewhere</current_datetime>'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from trinkets.base import EventAwareTrinket, TrinketHost


class _TrinketRegistry(TrinketHost, Protocol):
    @property
    def trinkets(self) -> Mapping[str, EventAwareTrinket]: ...


class SessionWithTrinkets(Protocol):
    """What :func:`mirror_stored_sections` needs of a Session: its WorkingMemory, a way to add
    a trinket class and a way to add many at once."""

    @property
    def working_memory(self) -> _TrinketRegistry: ...

    def add_trinket(self, factory: type[EventAwareTrinket], *, replace: bool = False) -> EventAwareTrinket: ...

    def registering(self) -> AbstractContextManager[None]: ...


class StoredSection(EventAwareTrinket):
    """Publishes the stored content of its section (``variable_name``) as it is now in the store.

    Subclass per section (or use :func:`stored_section_class`); the stored ``cache_policy`` is used.
    """

    def generate_content(self, context: dict[str, Any]) -> str:
        wm = self.working_memory
        record = wm.store.hget(wm.store_key, self.variable_name)
        if record is None:
            return ""
        if not isinstance(record, dict) or not isinstance(record.get("content"), str):
            raise ValueError(
                f"the stored {self.variable_name!r} of {wm.store_key!r} is not a "
                f"section record {{content, cache_policy, updated_at}}"
            )
        # one class per section, so the class attribute is this section's alone
        type(self).cache_policy = bool(record.get("cache_policy", False))
        return str(record["content"])


def stored_section_class(section: str) -> type[StoredSection]:
    """A StoredSection subclass for ``section``, named ``Stored_<section>`` (trinkets are addressed
    by class name, so each mirrored section needs a class of its own)."""
    if not isinstance(section, str) or not section.strip():
        raise ValueError(f"section must be a non-empty string, got {section!r}")
    return type(stored_class_name(section), (StoredSection,), {"variable_name": section, "__module__": __name__})


def stored_class_name(section: str) -> str:
    """The name of :func:`stored_section_class`'s class for ``section``: a view that names the
    section need not name this trinket too (it says nothing the section's name does not).

    >>> stored_class_name("system[0] <policies>")
    'Stored_system_0___policies_'
    """
    return "Stored_" + re.sub(r"\W", "_", section)


def mirror_stored_sections(session: SessionWithTrinkets) -> list[str]:
    """Register a StoredSection for every section stored under the session's ``trinkets:{user_id}``
    that none of its trinkets publishes; return the sections added, sorted."""
    wm = session.working_memory
    published = {t.variable_name for t in wm.trinkets.values()}
    # field names only: one field another program wrote badly must not hide the others (its
    # StoredSection shows the error when it composes, and is left out of the prompt)
    added = [section for section in wm.store.fields(wm.store_key) if section not in published]
    # the names lists (the WorkingMemory's and the session's, which the feed log hears) are set
    # once: linear in the sections, not quadratic
    with session.registering():
        for section in added:
            session.add_trinket(stored_section_class(section))
    return added
