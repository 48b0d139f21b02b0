"""Small readers of composed prompts and the bus log, shared by the trinket tests."""

from __future__ import annotations

from wm_kernel.core.bus import EventBus
from wm_kernel.core.events import UpdateTrinketEvent
from wm_kernel.session import Session


def last_section(session: Session, name: str) -> str | None:
    """The section ``name`` as it went into the session's last composed prompt (None when absent)."""
    assert session.composed is not None
    found = [r.content for r in session.composed.sections if r.name == name]
    return found[0] if found else None


def lifecycle_refreshes(bus: EventBus) -> list[UpdateTrinketEvent]:
    """The refreshes stateful trinkets asked for after expiring items, in the bus log."""
    return [
        r.event
        for r in bus.log
        if isinstance(r.event, UpdateTrinketEvent) and r.event.context.get("action") == "lifecycle_refresh"
    ]
