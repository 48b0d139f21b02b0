"""An imported log replayed into a live Session, for the tools that take a Session.

The Session holds that agent's request, not MIRA's: each distinct section of its prompt becomes a
:class:`~trinkets.stored_section.StoredSection` trinket (its system blocks as sections, in the
log's order, and the parts a reader placed, as MIRA's tap places prefix items and HUD parts); the
composer writes no scaffolding delimiter and no base prompt of its own, and no HUD the agent did
not send. A log whose prompt has a ``base_prompt`` section (MIRA's tap, an export of a Session
composed here) was composed by MIRA's composer: the session's composer writes that base prompt,
delimiter and all, as it was sent. Its tools stay tools and its messages stay the conversation:
the session's ``replayed`` (:class:`ReplayedLog`) keeps both by turn, so ``%request`` and the
dashboard's request tab build
each turn's request with the log's tools and messages, and ``cache_simulation`` plays the log's
own requests (its cache marks, tools and messages included) at the log's send times. Before each
turn the section texts of that request are written where the trinkets read them, the session's
ManualClock is set to the request's send time, and the turn is composed. The Session's History,
budgets and the dashboard's time slider then work on the imported turns. Section texts are the
log's, exactly; for the exact request text use ``ImportedSession.replay``.
"""

from __future__ import annotations

import functools
import json
import operator
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from trinkets.stored_section import stored_section_class
from wm_kernel.cachesim.engine import Block, Request
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import Simulation, simulate
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer.hud_frame import RULE
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.prompt import ComposedPrompt, SectionRecord
from wm_kernel.instruments.history_records import text_digest
from wm_kernel.interop.billing import request_body
from wm_kernel.interop.bodies import Section, kinds_of
from wm_kernel.interop.formats import LoggedRequest
from wm_kernel.session import Session
from wm_kernel.tokens import TokenCounter

_LAYER = {"tool": "tools", "system": "system", "message": "messages"}
_WHERE = operator.attrgetter("where")


class ImportedTurns(Protocol):
    """What a replay reads of an imported log (an ImportedSession is one): its requests (their send
    times), its turns, and the prompt of each turn. Named here so this module does not import
    the ImportedSession that calls it."""

    @property
    def requests(self) -> Sequence[LoggedRequest]: ...

    @property
    def turns(self) -> list[int]: ...

    def prompt_at(self, turn: int) -> ComposedPrompt: ...

    def cache_simulation(self, model: str | None = None) -> Simulation: ...

    def cache_model(self) -> str: ...

    def send_times(self) -> tuple[list[datetime], str]: ...

    def sections(self, turn: int) -> list[Section]: ...

    @property
    def counter(self) -> TokenCounter: ...


@dataclass
class ReplayedLog:
    """What a replayed Session keeps of its log beside its sections: by turn, the tools (schemas)
    and the conversation (``{"role", "content"}``, each message's pieces joined by a blank line),
    and the log, whose requests ``simulation`` plays."""

    log: ImportedTurns
    tools: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    messages: Mapping[int, list[dict[str, str]]] = field(default_factory=dict)
    #: the ``max_tokens`` each logged request asked for, where its body is logged
    max_tokens: dict[int, int] = field(default_factory=dict)
    #: the reply to each turn's request where the log keeps it (a transcript's assistant message)
    replies: dict[int, str] = field(default_factory=dict)

    def bill(self, model: str | None = None) -> Simulation:
        """The log's own cache simulation (``ImportedSession.cache_simulation``): the one bill every
        view of a replayed session shows."""
        return self.log.cache_simulation(model)

    def simulation(self, model: str | ModelProfile, *, counter: TokenCounter | None = None) -> Simulation:
        """The log's requests (tools, system sections, messages, its cache marks) played against
        ``model`` at the log's send times, counted with ``counter`` (default the log's)."""
        counter = counter if counter is not None else self.log.counter
        requests = []
        sent, _ = self.log.send_times()  # the log's, or assumed as every view of it assumes them
        for turn, logged in zip(self.log.turns, self.log.requests, strict=True):
            blocks = [
                Block(
                    f"{s.name}:{text_digest(s.text).hex()}",
                    counter.count(s.text),
                    breakpoint=s.cache,
                    layer=_LAYER[s.kind],
                    label=f"{s.name} ({s.trinket})" if s.trinket else s.name,
                )
                for s in self.log.sections(turn)
            ]
            requests.append(Request(sent[turn], blocks, params={"model": logged.model} if logged.model else None))
        sim = simulate(requests, model, counter=counter)
        sim.turns.insert(0, "turn", list(self.log.turns))
        return sim


def _tools(sections: Sequence[Section]) -> list[dict[str, Any]]:
    """The tool schemas of a request: each tool element's text, read as the JSON it is."""
    by_element: dict[str, list[str]] = {}
    for s in sections:
        if s.kind == "tool":
            by_element.setdefault(s.element or s.name, []).append(s.text)
    tools = []
    for element, texts in by_element.items():
        text = "".join(texts)
        try:
            schema = json.loads(text)
        except json.JSONDecodeError:
            schema = None
        if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
            schema = {"name": element, "description": text, "input_schema": {"type": "object"}}
        schema.setdefault("description", "")
        if "input_schema" not in schema and "parameters" not in schema:
            schema["input_schema"] = {"type": "object"}
        tools.append(schema)
    return tools


def _is_message(section: Section) -> bool:
    """A piece of the conversation (a message no reader placed elsewhere, as MIRA's prefix items are)."""
    return section.kind == "message" and section.where is None


class _Conversations(Mapping[int, list[dict[str, str]]]):
    """Each turn's conversation, joined when asked (the last few kept): a conversation repeats
    every message before it, so keeping them all would cost requests x conversation."""

    def __init__(self, log: ImportedTurns) -> None:
        self._log = log
        self._turns = frozenset(log.turns)
        self._joined = functools.lru_cache(maxsize=8)(self._join)

    def _join(self, turn: int) -> list[dict[str, str]]:
        return _messages(self._log.sections(turn))

    def __getitem__(self, turn: int) -> list[dict[str, str]]:
        if turn not in self._turns:
            raise KeyError(turn)
        return self._joined(turn)

    def __contains__(self, turn: object) -> bool:
        return turn in self._turns

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._turns))

    def __len__(self) -> int:
        return len(self._turns)


def _messages(sections: Sequence[Section]) -> list[dict[str, str]]:
    """The conversation of a request: one message per message element, its pieces' texts joined."""
    messages: list[dict[str, Any]] = []
    previous: str | None = None
    for s in sections:
        if not _is_message(s):
            continue
        if s.element != previous or not messages:
            role = s.trinket if s.trinket in ("user", "assistant") else "user"
            messages.append({"role": role, "content": []})
        messages[-1]["content"].append(s.text)
        previous = s.element
    return [{"role": m["role"], "content": "\n\n".join(m["content"])} for m in messages]


# the log each replayed Session came from: the stability checker checks a log request against
# request, since the agent that composed it is not here to recompose
_origins: weakref.WeakKeyDictionary[Session, ImportedTurns] = weakref.WeakKeyDictionary()


def imported_of(session: Session) -> ImportedTurns | None:
    """The imported log ``session`` replays (made by :func:`replay_session`), or None."""
    return _origins.get(session)


def _own_records(
    imported: ImportedTurns, turn: int, sections: Sequence[Section], kinds: frozenset[str]
) -> dict[str, SectionRecord]:
    """The records of ``turn``'s prompt that are sections of the replayed prompt, by name: not its
    tools and not its conversation, which the replay keeps apart; a part a reader placed (MIRA's
    prefix items, HUD parts) is one. A request of messages no reader placed has none, and its
    prompt is not built for it."""
    if kinds <= {"message"} and not any(map(_WHERE, sections)):
        return {}
    apart = {s.name for s in sections if s.kind == "tool" or _is_message(s)}
    return {r.name: r for r in imported.prompt_at(turn).sections if r.name not in apart}


def replay_session(imported: ImportedTurns, *, base_prompt: str = "", **options: Any) -> Session:
    """A Session whose turns 0..n-1 are the imported requests (see the module docstring).
    ``options`` go to ``Session`` (``token_budget``, ``store``...; ``token_counter`` defaults to
    the log's, ``model`` to the counter's); ``clock``, ``layout`` and ``trinkets`` are set here.
    ``base_prompt``, when given and the log has none, is written as it is (no delimiter after it)."""
    for fixed in ("clock", "layout", "trinkets"):
        if fixed in options:
            raise TypeError(f"replay_session sets {fixed} itself")
    times = [r.sent_at for r in imported.requests]
    if any(t is None for t in times):
        raise ValueError("the log has no send time for every request; a replayed session needs them")
    replayed, own = _read_turns(imported)
    layout, names, mira_base = _layout_of(own)
    counter = imported.counter
    options.setdefault("token_counter", counter)
    # the log's own model, so the wire view and the cost views name what the log ran
    options.setdefault("model", imported.cache_model() if counter.model is None else counter.model)
    clock = ManualClock(times[0])  # type: ignore[arg-type]
    session = Session(base_prompt, clock=clock, layout=layout, trinkets=[], **options)
    if not mira_base:  # that agent's prompt: no scaffolding delimiter, no base prompt of its own
        session.working_memory.composer.scaffolding_note = None
    session.replayed = replayed
    for name in names:
        session.add_trinket(stored_section_class(name))
    _compose_turns(session, clock, imported.turns, times, own, names)  # type: ignore[arg-type]
    _origins[session] = imported
    return session


def _read_turns(imported: ImportedTurns) -> tuple[ReplayedLog, dict[int, dict[str, SectionRecord]]]:
    """What the log holds by turn: the tools, reply and ``max_tokens`` a replayed session keeps
    beside its sections (:class:`ReplayedLog`), and the records of each turn's own sections
    (:func:`_own_records`)."""
    replayed = ReplayedLog(imported, messages=_Conversations(imported))
    own: dict[int, dict[str, SectionRecord]] = {}
    for turn in imported.turns:
        sections = imported.sections(turn)
        kinds = kinds_of(sections)
        replayed.tools[turn] = _tools(sections) if "tool" in kinds else []
        reply = "\n\n".join(m["content"] for m in _messages(imported.requests[turn].response))
        if reply:
            replayed.replies[turn] = reply
        body = request_body(imported.requests[turn])
        asked = body.get("max_tokens", body.get("max_output_tokens")) if body is not None else None
        if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
            replayed.max_tokens[turn] = asked
        own[turn] = _own_records(imported, turn, sections, kinds)
    return replayed, own


def _layout_of(own: Mapping[int, Mapping[str, SectionRecord]]) -> tuple[Layout, list[str], bool]:
    """The replayed session's layout (each section at the placement it first had, in the order the
    turns bring them), the sections' names in that order, and whether the log's prompt has a base
    prompt of its own (a MIRA turn's, which the session's composer then writes). The layout must
    be known before the session is built, so it is read from every turn first."""
    placements: dict[str, list[str]] = {"system": ["base_prompt"]}
    names: dict[str, None] = {}
    mira_base = False
    for records in own.values():
        for record in records.values():
            if record.name == "base_prompt":
                mira_base = True
                continue
            if record.name not in names:
                placements.setdefault(record.placement, []).append(record.name)
                names[record.name] = None
    return Layout(placements, name="imported"), list(names), mira_base


def _compose_turns(
    session: Session,
    clock: ManualClock,
    turns: Sequence[int],
    times: Sequence[datetime],
    own: Mapping[int, Mapping[str, SectionRecord]],
    names: Sequence[str],
) -> None:
    """Each turn composed at its send time: its base prompt (as MIRA filled it) set, each section
    of ``names`` written into the store where its trinket reads it (or removed, where the turn's
    prompt lacks it), then the first turn composed and every later one advanced to."""
    key = session.working_memory.store_key
    store = session.store
    for turn in turns:
        clock.set(times[turn])
        present = own[turn]
        base = present.get("base_prompt")
        if base is not None:
            # the base prompt as MIRA filled it, without the scaffolding delimiter the composer adds
            cut = base.content.rfind(f"\n\n{RULE}\n")
            session.base_prompt = base.content[:cut] if cut >= 0 else base.content
        for name in names:
            found = present.get(name)
            if found is None:
                store.hdel(key, name)
            else:
                store.hset(
                    key,
                    name,
                    {
                        "content": found.content,
                        "cache_policy": found.cache_policy,
                        "updated_at": clock.now().isoformat(),
                    },
                )
        if turn == 0:
            session.compose()
        else:
            session.advance_turn()
