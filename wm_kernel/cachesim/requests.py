"""Requests from a Session's recorded turns, as a wire dialect sends them.

Each recorded turn becomes one request, laid out by its wire (``wire=``, a dialect of
``wm_kernel.dialects.registry``; by default the session's ``wire``, else the model's provider's):
the kit's wires (``to_anthropic`` / ``to_openai``) read tool definitions (a token count you give),
the cached system sections, the non-cached system sections, then the messages: conversation-prefix
sections, the conversation so far, post-history sections and the notification centre; MIRA's
(``to_mira``) puts the notification centre and then the user message after the post-history items,
and its own breakpoints and TTLs (``wm_kernel.dialects.mira``). Every section and every message is
a block; a section's key is its name and
the digest of its text, so an unchanged section is the same block turn after turn; its label names
the section and its trinket, so every miss says which section broke the cache.

Time: each turn is sent when its (last) compose ran, as the session's History recorded it (for
turns recorded by an earlier version, from the bus log: the ``ComposeSystemPromptEvent`` of the
compose, after the ``TurnCompletedEvent`` that opened the turn): a ManualClock advanced by 10
minutes between two turns lapses a 5-minute entry. Pass ``times`` to give them yourself.

Conversation: the one that happened. A turn whose exchange the session's History recorded (sent,
or answered from a recording) carries that user message, after the replies and messages of the
turns before it, exactly as ``send`` built the request. Only a turn with no recorded exchange gets
an assumed one: a user message of ``exchange[0]`` tokens, after an assistant reply of
``exchange[1]`` tokens to the previous turn; the simulation then says so
(``Simulation.assumed_exchange``, and its headline: "assuming a 500-token exchange per turn").
``history`` gives the messages yourself (``{"role", "content"}`` dicts; request N carries them up
to the (N+1)-th user message) and replaces both.

Breakpoints: ``"auto"`` puts them where the wire does (the kit's: one on the last cached system
section, as ``to_anthropic`` does; MIRA's: 1 hour on the tools, the system block and the last
assistant message, 5 minutes on each post-history item). A list replaces them, naming where they go:
section names, ``"system"`` (the last cached system section) or
``"last_user"`` (the latest user message), each optionally with a TTL as ``"name:1h"``.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from wm_kernel.cachesim.advice import Advice, advise
from wm_kernel.cachesim.engine import MAX_TOKENS, Block, Request
from wm_kernel.cachesim.models import get_model
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import Simulation, simulate
from wm_kernel.core.events import ComposeSystemPromptEvent, TurnCompletedEvent
from wm_kernel.dialects.base import Dialect, Piece, TurnPieces
from wm_kernel.dialects.registry import DEFAULT_WIRE, choose_wire, get_dialect
from wm_kernel.instruments.history_records import text_digest
from wm_kernel.instruments.wire import wire_request
from wm_kernel.tokens import TokenCounter

if TYPE_CHECKING:
    import pandas as pd

    from wm_kernel.core.bus import EventBus
    from wm_kernel.instruments.history import History


class RecordedSession(Protocol):
    """What the requests are built from (a Session is one): its bus, whose log holds the turns'
    events, its conversation id and turn, its recorded history (one row per turn and section) and
    the History that recorded it (``recorder``: the turns' send times, and its ``counter`` counts the
    tokens)."""

    @property
    def bus(self) -> EventBus: ...

    @property
    def continuum_id(self) -> str: ...

    @property
    def turn(self) -> int: ...

    @property
    def history(self) -> pd.DataFrame: ...

    @property
    def recorder(self) -> History: ...


#: The order of a section's piece in a request by its placement (an uncached system section: 1).
_PLACEMENT_ORDER = {"system": 0, "conversation_prefix": 2, "post_history": 3, "notification": 4}
#: The kind of a section's piece by its order.
_KINDS = {0: "system", 1: "system_uncached", 2: "prefix", 3: "post_history", 4: "notification"}
_SPECIAL = ("system", "last_user")
#: The breakpoint names that are not sections: the end of the system prompt, the last user message.
SPECIAL_BREAKPOINTS = _SPECIAL


def turn_times(session: RecordedSession) -> dict[int, datetime]:
    """When each turn's last compose ran: as its History recorded it, else (a turn recorded by an
    earlier version) from the session's bus log, which keeps the last 10,000 events only."""
    recorded = session.recorder.times()
    if all(turn in recorded for turn in session.recorder.turns):
        return recorded
    return {**_logged_times(session), **recorded}


def _logged_times(session: RecordedSession) -> dict[int, datetime]:
    composes: list[tuple[int | None, datetime]] = []
    first_turn: int | None = None
    current: int | None = None
    for record in session.bus.log:
        event = record.event
        if event.continuum_id != session.continuum_id:
            continue
        if isinstance(event, TurnCompletedEvent):
            current = event.turn_number
            if first_turn is None:
                first_turn = current - 1
        elif isinstance(event, ComposeSystemPromptEvent):
            composes.append((current, event.occurred_at))
    start = first_turn if first_turn is not None else session.turn
    return {start if turn is None else turn: at for turn, at in composes}


def _label(section: str, trinket: Any) -> str:
    return f"{section} ({trinket})" if isinstance(trinket, str) and trinket else section


class _Sent(Protocol):
    """What a recorded exchange gives a request: the user's message and the model's reply."""

    @property
    def user(self) -> str: ...

    @property
    def reply(self) -> str: ...


def recorded_exchanges(session: object) -> dict[int, _Sent]:
    """turn -> the exchange the session's History recorded at it (sent or replayed); empty for a
    history that records none."""
    exchanges = getattr(getattr(session, "recorder", None), "exchanges", None)
    if not callable(exchanges):
        return {}
    return {int(e.turn): e for e in exchanges()}


def _conversation(
    exchanges: Mapping[int, _Sent], turns: Sequence[int], exchange: tuple[int, int], count: Any
) -> tuple[list[Piece], list[int], list[int]]:
    """The messages of the whole conversation and, for each turn, where its own end (its user
    message included): the recorded exchanges where there are some, an assumed exchange of
    ``exchange`` tokens where none was recorded; and the turns that were assumed. One list for
    all turns: a copy per turn would cost the square of the turns."""
    user, reply = exchange
    out: list[int] = []
    assumed: list[int] = []
    so_far: list[Piece] = []
    for position, turn in enumerate(turns):
        if position:
            before = exchanges.get(turns[position - 1])
            label = f"assistant reply {position}"
            if before is None:
                so_far.append(Piece(f"assistant-{position}", reply, label, "message", "assistant"))
            else:
                so_far.append(
                    Piece(
                        f"assistant-{position}:{text_digest(before.reply).hex()}",
                        count(before.reply),
                        label,
                        "message",
                        "assistant",
                    )
                )
        sent = exchanges.get(turn)
        label = f"user message {position + 1}"
        if sent is None:
            assumed.append(turn)
            so_far.append(Piece(f"user-{position}", user, label, "message", "user"))
        else:
            so_far.append(
                Piece(f"user-{position}:{text_digest(sent.user).hex()}", count(sent.user), label, "message", "user")
            )
        out.append(len(so_far))
    return so_far, out, assumed


def _messages(history: Sequence[Mapping[str, Any]], turns: int, count: Any) -> tuple[list[Piece], list[int]]:
    """The messages of ``history`` and, for each turn, where its own end (its user message)."""
    out: list[int] = []
    if isinstance(history, (str, bytes, Mapping)):
        raise TypeError("history must be a list of {'role', 'content'} messages")
    blocks: list[Piece] = []
    users = 0
    for index, message in enumerate(history):
        if (
            not isinstance(message, Mapping)
            or message.get("role") not in ("user", "assistant")
            or not isinstance(message.get("content"), str)
        ):
            raise ValueError(f"history[{index}] must be a dict with role 'user' or 'assistant' and a str content")
        role = message["role"]
        users += role == "user"
        blocks.append(
            Piece(
                f"{role}-{index}:{message['content']}",
                count(message["content"]),
                f"{role} message {index + 1}",
                "message",
                role,
            )
        )
        if role == "user":
            out.append(len(blocks))
    if users < turns:
        raise ValueError(
            f"history has {users} user messages; the session recorded {turns} turns, one user message each is needed"
        )
    return blocks, out[:turns]


def _parse_breakpoints(breakpoints: str | Sequence[str]) -> list[tuple[str, str]] | None:
    """None for ``"auto"`` (the wire's own), else (name, ttl) pairs."""
    if breakpoints == "auto":
        return None
    if isinstance(breakpoints, str) or not isinstance(breakpoints, Sequence):
        raise TypeError(f"breakpoints must be 'auto' or a list of section names, got {breakpoints!r}")
    parsed = []
    for item in breakpoints:
        if not isinstance(item, str) or not item.strip():
            raise TypeError(f"a breakpoint is a section name (optionally 'name:ttl'), got {item!r}")
        name, _, ttl = item.partition(":")
        parsed.append((name, ttl or "5m"))
    return parsed


#: per History, the counters of the models it was simulated against (a counter remembers what it
#: counted, so a dashboard that simulates every turn counts each section once per model)
_MODEL_COUNTERS: weakref.WeakKeyDictionary[Any, dict[str, TokenCounter]] = weakref.WeakKeyDictionary()


def _own_counter(session: object) -> TokenCounter | None:
    """The counter the session's history counts with, if it has one."""
    own = getattr(getattr(session, "recorder", None), "counter", None)
    return own if isinstance(own, TokenCounter) else None


def model_counter(session: RecordedSession, model: str | ModelProfile) -> TokenCounter:
    """The counter of ``model`` for ``session``'s texts: the one its history counts with when that
    counts for ``model``, else ``counter_for(model)`` (kept per history, so each text is counted
    once per model). A profile no counter is registered for counts with the history's counter."""
    from wm_kernel.cachesim.models import get_model
    from wm_kernel.tokens import counter_for

    name = model.name if isinstance(model, ModelProfile) else get_model(model).name
    recorder = getattr(session, "recorder", None)
    own = _own_counter(session)
    if own is not None and own.model == name:
        return own
    try:
        known = _MODEL_COUNTERS.setdefault(recorder, {}) if recorder is not None else {}
    except TypeError:  # a recorder that cannot be weakly referenced
        known = {}
    found = known.get(name)
    if found is None:
        try:
            found = counter_for(name)
        except ValueError:
            return own if own is not None else TokenCounter()
        known[name] = found
    return found


def view_counter(session: RecordedSession, model: str | ModelProfile, *, named: bool) -> TokenCounter:
    """The counter a view of ``session`` about ``model`` counts with: ``model``'s own when the
    user named it (``named``) or the session counts for a model, else (a session with no model,
    viewed on the default) the session's."""
    own = _own_counter(session)
    if named or own is None or own.model is not None:
        return model_counter(session, model)
    return own


def _counter_of(
    session: RecordedSession, counter: TokenCounter | None, model: str | ModelProfile | None = None
) -> TokenCounter:
    """The counter given, else the one the session's history counts with; when that counts for
    another model than ``model``, ``model``'s own (every view counts with the counter of the
    model it is about; a session with no model keeps its counter, and the views say so)."""
    if counter is not None:
        return counter
    own = _own_counter(session)
    if own is None:
        return TokenCounter()
    if model is not None and own.model is not None:
        return model_counter(session, model)
    return own


def session_requests(
    session: RecordedSession,
    *,
    breakpoints: str | Sequence[str] = "auto",
    history: Sequence[Mapping[str, Any]] | None = None,
    exchange: tuple[int, int] = (100, 400),
    tools_tokens: int = 0,
    times: Mapping[int, datetime] | Sequence[datetime] | None = None,
    counter: TokenCounter | None = None,
    wire: str | Dialect | None = None,
    assumed_turns: list[int] | None = None,
) -> tuple[list[int], list[Request]]:
    """The recorded turns and one Request per turn, laid out by ``wire`` (default: the session's
    ``wire``, else the kit's; see the module docstring); ``assumed_turns``, when given, is filled
    with the turns that carry an assumed exchange (none was recorded)."""
    dialect = get_dialect(wire if wire is not None else getattr(session, "wire", None) or DEFAULT_WIRE)
    _check_sizes(tools_tokens, exchange)
    wanted = _parse_breakpoints(breakpoints)
    frame = _sent_sections(session)
    turns = sorted(int(t) for t in frame["turn"].unique())
    counter = _counter_of(session, counter)
    recount = counter is not _own_counter(session)
    texts = session.recorder.texts() if recount and hasattr(session.recorder, "texts") else None
    _check_breakpoint_names(wanted, set(frame["section"]))
    when = _send_times(session, turns, times)
    if history is None:
        messages, ends, assumed = _conversation(recorded_exchanges(session), turns, exchange, counter.count)
    else:
        (messages, ends), assumed = _messages(history, len(turns), counter.count), []
    if assumed_turns is not None:
        assumed_turns[:] = assumed
    by_turn = _sections_by_turn(frame, turns, texts, counter)
    tools = [Piece("tools", tools_tokens, "tool definitions", "tools")] if tools_tokens else []
    requests = []
    plain: list[Block] = []  # the block of each message laid out plain, built once for every turn
    for position, turn in enumerate(turns):
        sections = sorted(by_turn[turn], key=lambda s: s[4])  # stable: output order within a placement
        pieces = [Piece(s[2], s[3], s[1], _KINDS[s[4]], name=s[0]) for s in sections]
        end = ends[position]
        # what the wire lays out: the messages from the last assistant reply on (before it, a
        # plain_history wire lays every message out plain: those blocks are reused, so each turn
        # costs what it adds, not the whole conversation again)
        cut = _last_reply(messages, end - 1) if dialect.plain_history else 0
        while len(plain) < cut:
            piece = messages[len(plain)]
            plain.append(Block(piece.key, piece.tokens, layer="messages", label=piece.label))
        laid_out = TurnPieces(
            tools=tools,
            system=[p for p in pieces if p.kind.startswith("system")],
            prefix=[p for p in pieces if p.kind == "prefix"],
            conversation=messages[cut : end - 1] if end else [],
            user=messages[end - 1] if end else None,
            post_history=[p for p in pieces if p.kind == "post_history"],
            notification=[p for p in pieces if p.kind == "notification"],
        )
        requests.append(Request(when[position], _blocks(dialect, laid_out, wanted, plain[:cut])))
    return turns, requests


def _last_reply(messages: Sequence[Piece], end: int) -> int:
    """The index of the last assistant reply among ``messages[:end]`` (0 if there is none): the
    conversation's last reply closes it (a scan back of a message or two)."""
    for index in range(end - 1, 0, -1):
        if messages[index].role == "assistant":
            return index
    return 0


def _check_sizes(tools_tokens: int, exchange: tuple[int, int]) -> None:
    """A ValueError unless ``tools_tokens`` is a token count and ``exchange`` a pair of them."""
    if isinstance(tools_tokens, bool) or not isinstance(tools_tokens, int) or tools_tokens < 0:
        raise ValueError(f"tools_tokens must be a non-negative int, got {tools_tokens!r}")
    if tools_tokens > MAX_TOKENS:
        raise ValueError(f"tools_tokens must be at most 2**63 - 1, got {tools_tokens}")
    if not (
        isinstance(exchange, tuple)
        and len(exchange) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in exchange)
    ):
        raise ValueError(f"exchange must be (user tokens, assistant tokens), got {exchange!r}")


def _sent_sections(session: RecordedSession) -> pd.DataFrame:
    """The session's history without the sections a token budget left out (never sent); a
    ValueError if nothing is recorded."""
    frame = session.history
    if "dropped" in frame.columns:  # what a token budget left out was never sent
        frame = frame[~frame["dropped"].astype(bool)]
    if frame.empty:
        raise ValueError("nothing recorded yet: compose first")
    return frame


def _check_breakpoint_names(wanted: list[tuple[str, str]] | None, known_sections: set[str]) -> None:
    """A ValueError for a breakpoint that names neither a recorded section nor a special place."""
    for name, _ in wanted or ():
        if name not in known_sections and name not in _SPECIAL:
            raise ValueError(
                f"unknown breakpoint {name!r}; use a recorded section ("
                f"{', '.join(sorted(known_sections))}) or one of {', '.join(_SPECIAL)}"
            )


def _send_times(
    session: RecordedSession, turns: list[int], times: Mapping[int, datetime] | Sequence[datetime] | None
) -> list[datetime]:
    """When each of ``turns`` was sent: from ``times`` (by turn, or one per turn in order) when
    given, else as the session recorded it (:func:`turn_times`)."""
    if times is None:
        logged = turn_times(session)
        missing = [t for t in turns if t not in logged]
        if missing:
            raise ValueError(
                f"no send time for turn {missing[0]} (recorded by an earlier version, "
                f"and gone from the bus log, which keeps the last events only); "
                f"pass times="
            )
        return [logged[t] for t in turns]
    if isinstance(times, Mapping):
        return [times[t] for t in turns]
    when = list(times)
    if len(when) != len(turns):
        raise ValueError(f"times has {len(when)} entries for {len(turns)} recorded turns")
    return when


def _sections_by_turn(
    frame: pd.DataFrame, turns: list[int], texts: Mapping[str, str] | None, counter: TokenCounter
) -> dict[int, list[tuple[str, str, str, int, int]]]:
    """Per turn, (name, label, key, tokens, order) of each section of ``frame``, in frame order; a
    text in ``texts`` (by digest) is counted again with ``counter`` (another model's than the
    history's)."""
    by_turn: dict[int, list[tuple[str, str, str, int, int]]] = {t: [] for t in turns}
    columns = ("turn", "placement", "section", "trinket", "digest", "tokens", "cached")
    for turn, placement, section, trinket, digest, tokens, cached in zip(
        *(frame[c].tolist() for c in columns), strict=True
    ):
        order = _PLACEMENT_ORDER[placement] + (0 if cached or placement != "system" else 1)
        if texts is not None and digest in texts:  # counted for another model than the history's
            tokens = counter.count(texts[digest])
        by_turn[int(turn)].append((section, _label(section, trinket), f"{section}:{digest}", int(tokens), order))
    return by_turn


def _blocks(
    dialect: Dialect, laid_out: TurnPieces, wanted: list[tuple[str, str]] | None, history: Sequence[Block] = ()
) -> list[Block]:
    """The blocks of one request: ``laid_out`` in the order and with the breakpoints of
    ``dialect``'s cache layout, or, when ``wanted`` names breakpoints, with those instead;
    ``history``, the blocks of the messages before ``laid_out.conversation`` (plain messages: no
    breakpoint either way), in front of its first."""
    slots = dialect.cache_layout(laid_out)
    marks = None if wanted is None else dict(reversed(wanted))  # the first naming wins
    cached = [i for i, slot in enumerate(slots) if slot.piece.kind == "system"]
    first = laid_out.conversation[0] if history else None
    blocks: list[Block] = []
    for index, slot in enumerate(slots):
        if slot.piece is first:
            blocks.extend(history)
        mark = slot.breakpoint
        if marks is not None:  # the marks given replace the wire's own
            mark = marks.get(slot.piece.name) if slot.piece.name else None
            if mark is None and cached and index == cached[-1]:
                mark = marks.get("system")
            if mark is None and slot.piece is laid_out.user:
                mark = marks.get("last_user")
        blocks.append(
            Block(slot.piece.key, slot.piece.tokens, breakpoint=mark, layer=slot.layer, label=slot.piece.label)
        )
    return blocks


def simulate_session(
    session: RecordedSession,
    *,
    model: str | ModelProfile = "claude-sonnet-4-6",
    breakpoints: str | Sequence[str] = "auto",
    history: Sequence[Mapping[str, Any]] | None = None,
    exchange: tuple[int, int] = (100, 400),
    tools_tokens: int = 0,
    times: Mapping[int, datetime] | Sequence[datetime] | None = None,
    counter: TokenCounter | None = None,
    wire: str | None = None,
) -> Simulation:
    """Simulate the session's recorded turns against ``model`` on ``wire`` (default: the
    session's ``wire`` when it sends to that model's provider, else the provider's own; see the
    module docstring). The result's ``wire`` names it, and its ``turns`` gains a ``turn`` column
    (the session turn of each request); where a turn had no recorded exchange the result says
    which it assumed (``assumed_exchange``).
    """
    profile = get_model(model)
    dialect = choose_wire(wire, getattr(session, "wire", None), profile.provider, profile.name)
    counter = _counter_of(session, counter, profile)
    replayed = getattr(session, "replayed", None)
    if replayed is not None and history is None and breakpoints == "auto" and not tools_tokens and times is None:
        # a replayed log: the requests that agent sent (its tools, cache marks and messages)
        return replayed.simulation(profile, counter=counter)  # type: ignore[no-any-return]
    assumed: list[int] = []
    turns, requests = session_requests(
        session,
        breakpoints=breakpoints,
        history=history,
        exchange=exchange,
        tools_tokens=tools_tokens,
        times=times,
        counter=counter,
        wire=dialect,
        assumed_turns=assumed,
    )
    sim = simulate(requests, profile, counter=counter)
    sim.wire = dialect.name
    sim.turns.insert(0, "turn", turns)
    if assumed:
        sim.assume_exchange(exchange, assumed, of=len(turns))
    return sim


def say_uncounted(
    simulation: Simulation, session: RecordedSession, history: Sequence[Mapping[str, Any]] | None = None
) -> Simulation:
    """Add to ``simulation`` (of ``session``'s recorded turns, by :func:`simulate_session`) the
    line that names what its figures leave out of its last turn's request and ``%request``
    counts (:func:`uncounted_tokens`), and return it. ``session.cache_simulation()`` and
    ``%cache`` say it; ``compare`` and sweeps, which show no such line, skip the count."""
    turns = simulation.turns["turn"].tolist() if "turn" in simulation.turns.columns else []
    if not turns or not simulation.wire or simulation.counter is None:
        return simulation
    last = int(turns[-1])
    dialect = get_dialect(simulation.wire)
    left = _uncounted(session, last, dialect, simulation.profile, simulation.counter, history)
    if left:
        parts = ", ".join(f"{label} {n:,}" for label, n in left.items())
        simulation.left_out.append(
            f"not in these figures (they count each section's and message's own text): at turn {last}, "
            f"{sum(left.values()):,} tokens that %request {last} counts: {parts}"
        )
    return simulation


def uncounted_tokens(
    session: RecordedSession,
    turn: int,
    *,
    model: str | ModelProfile = "claude-sonnet-4-6",
    wire: str | None = None,
    counter: TokenCounter | None = None,
    history: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, int]:
    """The tokens the request of ``turn`` holds on the wire that a simulated request of it does
    not count (its blocks are each section's and each message's own text), by the labels
    ``%request`` gives them: ``{"separators and HUD frame": 114, "provider framing (estimate)":
    9}``. The request is ``%request TURN``'s: the conversation recorded before ``turn`` and the
    user message sent at it (``history`` when given). Empty on a wire that builds no body."""
    profile = get_model(model)
    dialect = choose_wire(wire, getattr(session, "wire", None), profile.provider, profile.name)
    return _uncounted(session, turn, dialect, profile, _counter_of(session, counter, profile), history)


def _uncounted(
    session: RecordedSession,
    turn: int,
    dialect: Dialect,
    profile: ModelProfile,
    counter: TokenCounter,
    history: Sequence[Mapping[str, Any]] | None,
) -> dict[str, int]:
    if not dialect.builds_body:
        return {}
    recorder = session.recorder
    messages = [dict(m) for m in history] if history is not None else recorder.conversation_at(turn)
    request = wire_request(
        recorder.prompt_at(turn), messages, provider=dialect.name, model=profile.name, counter=counter
    )
    return request.uncounted()


def session_advice(session: RecordedSession, model: str | ModelProfile = "claude-sonnet-4-6", **options: Any) -> Advice:
    """``advise(simulate_session(session, model=model, **options))``."""
    return advise(simulate_session(session, model=model, **options))
