"""An imported log replayed into a live Session, for the tools that take a Session.

Each distinct section becomes a :class:`~trinkets.stored_section.StoredSection` trinket; before
each turn the section texts of that request are written where those trinkets read them, the
session's ManualClock is set to the request's send time, and the turn is composed. The Session's
History, bus log (so ``cache_simulation`` sees the log's send times), budgets and the dashboard's
time slider then work on the imported turns. Section texts are the log's, exactly; the joined
prompt is the composer's (its separators and base prompt), so for the exact request use
``ImportedSession.replay``.
"""
from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, Protocol

from trinkets.stored_section import stored_section_class
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import RULE, Layout
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.interop.formats import LoggedRequest
from wm_kernel.session import Session


class ImportedTurns(Protocol):
    """What a replay reads of an imported log (an ImportedSession is one): its requests (their send
    times), its turns, and the prompt of each turn. Named here so this module does not import
    the ImportedSession that calls it."""

    @property
    def requests(self) -> Sequence[LoggedRequest]: ...

    @property
    def turns(self) -> list[int]: ...

    def prompt_at(self, turn: int) -> ComposedPrompt: ...


# the log each replayed Session came from: the stability checker checks a log request against
# request, since the agent that composed it is not here to recompose
_origins: weakref.WeakKeyDictionary[Session, ImportedTurns] = weakref.WeakKeyDictionary()


def imported_of(session: Session) -> ImportedTurns | None:
    """The imported log ``session`` replays (made by :func:`replay_session`), or None."""
    return _origins.get(session)


def replay_session(imported: ImportedTurns, *, base_prompt: str = "", **options: Any) -> Session:
    """A Session whose turns 0..n-1 are the imported requests (see the module docstring).
    ``options`` go to ``Session`` (``token_budget``, ``store``...); ``clock``, ``layout`` and
    ``trinkets`` are set here."""
    for fixed in ("clock", "layout", "trinkets"):
        if fixed in options:
            raise TypeError(f"replay_session sets {fixed} itself")
    times = [r.sent_at for r in imported.requests]
    if any(t is None for t in times):
        raise ValueError("the log has no send time for every request; a replayed session needs them")
    placements: dict[str, list[str]] = {"system": ["base_prompt"], "conversation_prefix": []}
    policies: dict[str, bool] = {}
    for turn in imported.turns:
        prompt = imported.prompt_at(turn)
        for record in prompt.sections:
            if record.name == "base_prompt":
                continue   # a MIRA turn's own base prompt: the session's composer writes it
            if record.name not in policies:
                placements.setdefault(record.placement, []).append(record.name)
            policies[record.name] = record.cache_policy
    clock = ManualClock(times[0])  # type: ignore[arg-type]
    session = Session(base_prompt, clock=clock, layout=Layout(placements, name="imported"), trinkets=[],
                      **options)
    for name in policies:
        session.add_trinket(stored_section_class(name))
    key = session.working_memory.store_key
    store = session.store
    for turn in imported.turns:
        clock.set(times[turn])  # type: ignore[arg-type]
        present = {r.name: r for r in imported.prompt_at(turn).sections}
        base = present.get("base_prompt")
        if base is not None:
            # the base prompt as MIRA filled it, without the scaffolding delimiter the composer adds
            cut = base.content.rfind(f"\n\n{RULE}\n")
            session.base_prompt = base.content[:cut] if cut >= 0 else base.content
        for name in policies:
            found = present.get(name)
            if found is None:
                store.hdel(key, name)
            else:
                store.hset(key, name, {"content": found.content, "cache_policy": found.cache_policy,
                                       "updated_at": clock.now().isoformat()})
        if turn == 0:
            session.compose()
        else:
            session.advance_turn()
    _origins[session] = imported
    return session
