"""What the notebook magics show of a Session: its trinkets and event log as tables, the diff of
its last compose, and the line ``%wm_session`` prints.

Plain functions of a session, no IPython in them: the core magics (:mod:`wm_kernel.jupyter.magics.working_memory`
and the magics it installs) parse what the user typed and call them, and a notebook or a test can call
them directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wm_kernel.display.event_log import events_table
from wm_kernel.display.tables import Table

if TYPE_CHECKING:
    from wm_kernel.session import Session


def session_line(session: Session, layout: str) -> str:
    """The one line ``%wm_session`` prints: who the new current session talks with, when, with
    which trinkets, and where its state lives."""
    from wm_kernel.core.clock import ManualClock

    profile = session.profile
    who = profile.first_name or (
        'nobody named (greets "friend")' if "{first_name}" in session.base_prompt else "nobody named"
    )
    clock = session.clock
    when = f"clock fixed at {clock.now().isoformat()}" if isinstance(clock, ManualClock) else "wall clock"
    count = len(session.trinkets)
    trinkets = f"{count} trinket{'s' if count != 1 else ''}"
    url = getattr(session.store, "url", None)
    where = (
        "state in memory"
        if url is None
        else f"state on {url}{' (read-only)' if getattr(session.store, 'read_only', False) else ''}"
    )
    return f"current session: {who}, time zone {profile.timezone}, {when}, {trinkets}, {layout} layout, {where}"


def trinkets_frame(session: Session) -> Table:
    """A pandas DataFrame describing every registered trinket of ``session``, one row each,
    indexed by the trinket's class name (a :class:`~wm_kernel.display.tables.Table`: shown readably).
    ``tokens`` counts the section as the last compose holds it (as the history counts it) with the
    session's counter, which the column names."""
    import pandas as pd

    layout = session.layout
    counter = session.token_counter
    composed = {r.name: r.content for r in session.composed.sections} if session.composed is not None else {}
    tokens_column = f"tokens ({counter.label})"
    rows = []
    for trinket in session.trinkets.values():
        # a trinket whose items live for turns declares the turn it is at as a trait
        stateful = trinket.has_trait("current_turn")
        placement = layout.placement_of(trinket.variable_name) or "system (not in layout)"
        rows.append(
            {
                "name": trinket.name,
                "section": trinket.variable_name,
                "placement": placement,
                "enabled": trinket.enabled,
                "stateful": stateful,
                "current turn": trinket.current_turn if stateful else None,  # type: ignore[attr-defined]
                "size": len(trinket.content),
                tokens_column: counter.count(composed.get(trinket.variable_name, trinket.content)),
                "last updated": trinket.last_updated.isoformat() if trinket.last_updated else "",
                "error": trinket.error,
            }
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "name",
            "section",
            "placement",
            "enabled",
            "stateful",
            "current turn",
            "size",
            tokens_column,
            "last updated",
            "error",
        ],
    )
    frame["current turn"] = frame["current turn"].astype("Int64")
    # indexed by class name (the name %trinket and session.trinket() take), not by 0..n-1
    return Table(frame.set_index("name"))


def events_frame(
    session: Session, last: int | None = None, event_type: str | None = None, failures_only: bool = False
) -> Table:
    """The bus event log as a table (:func:`wm_kernel.display.event_log.events_table`), only the
    events of ``event_type``, only failed ones, or only the ``last`` N when asked."""
    records = list(session.bus.log)
    if event_type:
        records = [r for r in records if r.event_type == event_type]
    if failures_only:
        records = [r for r in records if r.failures]
    if last is not None:
        records = records[-last:]
    return events_table(records)
