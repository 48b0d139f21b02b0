"""The part of an agent's requests its log does not hold, and the agent's own caching, both read
off the billed usage.

A Claude Code transcript holds neither the system prompt nor the tools, and no cache marks, yet
the agent caches every request. :func:`infer` fits, per conversation, the size of what is missing
(:class:`Inferred`); :func:`rewrites` finds the requests where the provider read only that
missing part although the rest was live (the agent changed text its log does not hold); and
:func:`cache_requests` builds the requests the cache simulator plays: the missing part as blocks
of its own, cut where the usage shows the agent's breakpoints, the conversation counted with the
fitted factor, and breakpoints where the agent puts them.
"""

from __future__ import annotations

import dataclasses
import operator
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from wm_kernel.cachesim.engine import Block, Request
from wm_kernel.instruments.history_records import text_digest
from wm_kernel.interop.bodies import Section, first_message, kinds_of
from wm_kernel.interop.formats import LoggedRequest
from wm_kernel.tokens import TokenCounter
from wm_kernel.utils.sequences import shared_start

if TYPE_CHECKING:
    from wm_kernel.dialects.usage import Usage

_LAYER = {"tool": "tools", "system": "system", "message": "messages"}
_KEY = operator.attrgetter("key")
#: A read level within this fraction of another is the same breakpoint.
LEVEL_TOLERANCE = 0.01
#: A read this much below what the previous request left cached is a fall, not a count difference.
FALL = 0.05
#: The breakpoints one request may carry (Anthropic's limit).
MAX_BREAKPOINTS = 4


@dataclass(frozen=True)
class Inferred:
    """The part of one conversation's requests its log does not hold (a Claude Code transcript
    has no system prompt and no tools), inferred from the billed usage: ``tokens`` is the billed
    input (plain + cache read + cache write) minus the counted conversation, fitted over the
    conversation's ``requests`` as ``billed = tokens + factor x counted``; ``factor`` is the log's
    tokenizer against this counter (1.0 when too few requests to fit it); ``ttl`` the cache
    lifetime the usage shows the agent writing (``1h`` when it bills 1-hour writes)."""

    conversation: str
    tokens: int
    factor: float
    requests: int
    ttl: str
    #: per chain of the conversation (a compaction starts a new one), the tokens the agent added
    #: to its start beyond ``tokens`` (context it injects that the log does not hold either)
    added: tuple[int, ...] = ()
    #: what the conversation's first request read from a cache written before the log (its billed
    #: cache read): modelled as cached just before it
    before: int = 0
    #: where the provider's reads stopped when the agent changed what follows (:func:`rewrites`):
    #: the agent's own breakpoints inside the part the log does not hold, in tokens from the start
    levels: tuple[int, ...] = ()
    #: the log holds none of the requests' text (stored responses): the whole request is inferred
    whole: bool = False

    @property
    def label(self) -> str:
        what = "the request" if self.whole else "system prompt and tools"
        return f"{what}, not in the log: about {self.tokens:,} tokens, from the usage"

    def start(self, chain: int) -> int:
        """The tokens the log does not hold at the start of a request of ``chain``."""
        return self.tokens + (self.added[chain] if chain < len(self.added) else 0)


class AgentLog(Protocol):
    """What the inference reads of an imported log (``ImportedSession``)."""

    requests: tuple[LoggedRequest, ...]
    counter: TokenCounter

    def sections(self, turn: int) -> list[Section]: ...

    def billed_usage(self) -> list[Usage | None]: ...


def conversation_of(request: LoggedRequest) -> str:
    """Which conversation ``request`` belongs to (its own cache): the reader's conversation id
    where it gives one, else its file."""
    found = getattr(request, "conversation", None)
    return found if isinstance(found, str) and found else request.path


def chains(requests: Sequence[LoggedRequest]) -> list[int]:
    """Per request, the number of its chain within its conversation: a request whose first
    message differs from the conversation's previous request's (a compaction, a new chain)
    starts the next one."""
    out = []
    last: dict[str, tuple[str | None, int]] = {}
    for request in requests:
        key = conversation_of(request)
        found = first_message(request.sections)
        first = found.text if found is not None else None
        before = last.get(key)
        chain = 0 if before is None else before[1] + (first != before[0])
        last[key] = (first, chain)
        out.append(chain)
    return out


def _fit(points_of_chains: Sequence[Sequence[tuple[int, int]]]) -> tuple[list[float], float]:
    """``billed = intercept[chain] + factor x counted`` by least squares, one factor for every
    chain of a conversation and one intercept per chain (a factor within 0.5-2 and intercepts of at
    least 0; else factor 1 and each chain's median difference)."""
    num = den = 0.0
    means = []
    for points in points_of_chains:
        mx = statistics.fmean(float(x) for x, _ in points)
        my = statistics.fmean(float(y) for _, y in points)
        means.append((mx, my))
        num += sum((x - mx) * (y - my) for x, y in points)
        den += sum((x - mx) ** 2 for x, _ in points)
    if sum(len(c) for c in points_of_chains) >= 2 and den > 0:
        factor = num / den
        intercepts = [my - factor * mx for mx, my in means]
        if 0.5 <= factor <= 2.0 and min(intercepts) >= 0:
            return intercepts, factor
    return [max(0.0, statistics.median(y - x for x, y in points)) for points in points_of_chains], 1.0


def infer(log: AgentLog, chain_of: Sequence[int] | None = None) -> dict[str, Inferred]:
    """Per conversation whose requests hold no system prompt and no tools (or no tools, where the
    log says it does not hold them: ``LoggedRequest.unlogged``), what is missing
    (:class:`Inferred`, its ``levels`` not yet known: they need the send times, see
    :func:`with_levels`); empty when every request holds its system prompt or tools, or the log
    has no usage."""
    billed = log.billed_usage()
    groups: dict[str, list[int]] = {}
    for turn, request in enumerate(log.requests):
        kinds = kinds_of(request.sections)
        if "tool" not in kinds and ("system" not in kinds or "tools" in request.unlogged):
            groups.setdefault(conversation_of(request), []).append(turn)
    chain_of = chains(log.requests) if chain_of is None else chain_of
    out = {}
    for conversation, turns in groups.items():
        found = _infer_one(log, conversation, turns, billed, chain_of)
        if found is not None:
            out[conversation] = found
    return out


def _infer_one(
    log: AgentLog, conversation: str, turns: list[int], billed: Sequence[Usage | None], chain_of: Sequence[int]
) -> Inferred | None:
    points: dict[int, list[tuple[int, int]]] = {}
    whole = True  # no request of the conversation holds anything: the log has only the usage
    counted = _Counted(log.counter)
    for turn in turns:
        sections = log.sections(turn)
        whole = whole and not sections
        b = billed[turn]
        if b is not None and b.prompt_tokens:
            points.setdefault(chain_of[turn], []).append((counted.tokens(sections), b.prompt_tokens))
    if not points:
        return None
    order = sorted(points)
    intercepts, factor = _fit([points[c] for c in order])
    base = min(intercepts)
    added = {c: int(round(i - base)) for c, i in zip(order, intercepts, strict=True)}
    one_hour = any((b := billed[turn]) is not None and b.cache_write_1h_tokens for turn in turns)
    opening = billed[turns[0]]
    return Inferred(
        conversation,
        int(round(base)),
        round(factor, 4),
        sum(len(v) for v in points.values()),
        "1h" if one_hour else "5m",
        tuple(added.get(c, 0) for c in range(max(order) + 1)),
        opening.cache_read_tokens if opening is not None else 0,
        whole=whole,
    )


class _Counted:
    """The tokens of a conversation's requests one after the other: the start a request shares
    with the one before is not counted again."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.sections: Sequence[Section] = ()
        self.running: list[int] = []  # tokens of the last request's sections, running total

    def tokens(self, sections: Sequence[Section]) -> int:
        shared = shared_start(sections, self.sections)
        running = self.running
        del running[shared:]  # (in place: the sums of the start it shares stay where they are)
        total = running[-1] if running else 0
        for s in sections[shared:]:
            total += self.counter.count(s.text)
            running.append(total)
        self.sections = sections
        return total


def rewrites_of(
    found: Inferred,
    turns: Sequence[int],
    billed: Sequence[Usage | None],
    chain_of: Sequence[int],
    requests: Sequence[LoggedRequest],
    when: Sequence[datetime],
) -> dict[int, int]:
    """The requests of one conversation where the provider read only part of what the log does not
    hold although the conversation's previous request had left far more cached, live (a pause
    under the TTL), of the same model and chain: the agent changed text its log does not hold
    (an injected context, its system prompt), so everything after the read was written anew. Each
    with the tokens read (where the agent's breakpoint is). A fall inside the logged conversation is
    not one: the log shows that text unchanged (the provider's own miss)."""
    ttl = timedelta(hours=1) if found.ttl == "1h" else timedelta(minutes=5)
    out = {}
    previous: int | None = None
    for turn in turns:
        b = billed[turn]
        if b is None:
            continue
        if previous is not None and (p := billed[previous]) is not None:
            held = p.cache_read_tokens + p.cache_write_tokens
            read = b.cache_read_tokens
            if (
                chain_of[turn] == chain_of[previous]
                and requests[turn].model == requests[previous].model
                and when[turn] - when[previous] < ttl
                and read < held * (1 - FALL)
                and read <= found.start(chain_of[turn]) * (1 + LEVEL_TOLERANCE)
                and b.cache_write_tokens > 0
            ):
                out[turn] = read
        previous = turn
    return out


def _levels(found: Inferred, rewritten: dict[int, int]) -> tuple[int, ...]:
    """The distinct read levels of ``rewritten`` inside the inferred block (one per breakpoint)."""
    levels: list[int] = []
    for read in sorted(rewritten.values()):
        if 0 < read < found.tokens * (1 - LEVEL_TOLERANCE) and not (
            levels and read <= levels[-1] * (1 + LEVEL_TOLERANCE)
        ):
            levels.append(read)
    return tuple(levels)


def rewrites(
    log: AgentLog, when: Sequence[datetime], inferred: dict[str, Inferred], chain_of: Sequence[int] | None = None
) -> dict[int, int]:
    """Per request the agent rewrote after a point of the part its log does not hold, the tokens
    the provider read (see :func:`rewrites_of`); ``chain_of`` is :func:`chains` of its requests,
    where the caller has it."""
    billed = log.billed_usage()
    chain_of = chains(log.requests) if chain_of is None else chain_of
    groups: dict[str, list[int]] = {}
    for turn, request in enumerate(log.requests):
        groups.setdefault(conversation_of(request), []).append(turn)
    out: dict[int, int] = {}
    for conversation, found in inferred.items():
        out.update(rewrites_of(found, groups.get(conversation, []), billed, chain_of, log.requests, when))
    return out


def with_levels(
    inferred: dict[str, Inferred], rewritten: dict[int, int], requests: Sequence[LoggedRequest]
) -> dict[str, Inferred]:
    """``inferred`` with each conversation's ``levels``: the distinct reads of its rewrites."""
    out = {}
    for conversation, found in inferred.items():
        mine = {t: r for t, r in rewritten.items() if conversation_of(requests[t]) == conversation}
        out[conversation] = dataclasses.replace(found, levels=_levels(found, mine))
    return out


def cache_requests(
    log: AgentLog, when: Sequence[datetime], inferred: dict[str, Inferred] | None = None
) -> tuple[list[Request], dict[int, Request]]:
    """One cachesim Request per turn, and the warm-ups: per conversation whose first request read
    from a cache written before the log, a request of what it read, played just before it.

    Each request's sections are blocks (key: name and digest), the log's cache marks breakpoints.
    Where the log lacks the system prompt and tools (:func:`infer`), each request starts with
    blocks of their inferred size, its conversation counted with the fitted factor, and, as the
    log has no cache marks, the agent's own caching as its usage shows it: a breakpoint where the
    usage shows one inside the missing part (else after it), one where the conversation's
    previous request ended, and one on the last block, at the TTL the usage bills; from a request
    the agent rewrote (:func:`rewrites`), what follows its read is new content. ``inferred`` is
    :func:`infer` of the log, where the caller has it."""
    chain_of = chains(log.requests)
    builder = _Builder(log, infer(log, chain_of) if inferred is None else inferred, when, chain_of)
    return builder.requests(), builder.warmups


class _Builder:
    """The blocks of every request of a log, sharing one Block per section (and per generation:
    the count of rewrites of its conversation before it)."""

    def __init__(
        self, log: AgentLog, inferred: dict[str, Inferred], when: Sequence[datetime], chain_of: Sequence[int]
    ) -> None:
        self.log = log
        self.when = when
        self.chain_of = chain_of
        self.rewritten = rewrites(log, when, inferred, chain_of) if inferred else {}
        self.inferred = with_levels(inferred, self.rewritten, log.requests)
        self.warmups: dict[int, Request] = {}
        self._shared: dict[tuple[int, float, int], Block] = {}
        self._ends: dict[str, tuple[list[Block], int]] = {}  # per conversation, its last request's blocks
        self._rewrites: dict[str, list[int]] = {}  # per conversation, the read level of each rewrite so far
        self._marks: dict[tuple[int, str | None], tuple[Block, Block]] = {}  # (block, breakpoint) -> marked
        # per conversation, its last request's (factor, generation), sections, their blocks and
        # the positions of the blocks that carry a cache mark
        self._last: dict[str, tuple[tuple[float, int], Sequence[Section], list[Block], list[int]]] = {}

    def requests(self) -> list[Request]:
        out = []
        for turn, at in enumerate(self.when):
            request = self.log.requests[turn]
            params = {"model": request.model} if request.model else None
            found = self.inferred.get(conversation_of(request))
            if found is not None and turn in self.rewritten:
                self._rewrites.setdefault(found.conversation, []).append(self.rewritten[turn])
            done = self._rewrites.get(found.conversation, []) if found is not None else []
            blocks, marked = self._sections(turn, found.factor if found is not None else 1.0, len(done))
            if found is not None and not marked:
                blocks = self._agent_marks(turn, at, found, blocks, done, params)
            out.append(Request(at, blocks, params=params))
        return out

    def _sections(self, turn: int, factor: float, generation: int) -> tuple[list[Block], bool]:
        """The blocks of ``turn``'s sections, and whether any carries a cache mark; the start they
        share with the previous request of the conversation (at the same factor and generation) is
        that request's blocks (and its marks: only the blocks it adds are looked at)."""
        sections = self.log.sections(turn)
        conversation = conversation_of(self.log.requests[turn])
        last = self._last.get(conversation)
        shared = 0
        if last is not None and last[0] == (factor, generation):
            shared = shared_start(sections, last[1])
        blocks = last[2][:shared] if last is not None else []
        marks = [i for i in last[3] if i < shared] if last is not None else []
        for index in range(shared, len(sections)):
            block = self._block(sections[index], factor, generation)
            blocks.append(block)
            if block.breakpoint is not None:
                marks.append(index)
        self._last[conversation] = ((factor, generation), sections, blocks, marks)
        return blocks, bool(marks)

    def _block(self, s: Section, factor: float, generation: int) -> Block:
        """The one Block of section ``s`` at ``factor`` in ``generation``."""
        block = self._shared.get((id(s), factor, generation))
        if block is None:
            n = self.log.counter.count(s.text)
            block = self._shared[(id(s), factor, generation)] = Block(
                f"{s.name}:{text_digest(s.text).hex()}" + (f":rewrite{generation}" if generation else ""),
                n if factor == 1.0 else int(round(n * factor)),
                breakpoint=s.cache,
                layer=_LAYER[s.kind],
                label=f"{s.name} ({s.trinket})" if s.trinket else s.name,
            )
        return block

    def _agent_marks(
        self,
        turn: int,
        at: datetime,
        found: Inferred,
        blocks: list[Block],
        done: list[int],
        params: dict[str, str] | None,
    ) -> list[Block]:
        """``blocks`` after the inferred start, with the breakpoints the agent puts."""
        key = found.conversation
        marks = {len(blocks) - 1} if blocks else set()
        before = self._ends.get(key)
        if before is not None and before[1] >= 0 and _starts_with(blocks, before[0]):
            marks.add(before[1])
        self._ends[key] = (blocks, len(blocks) - 1)
        start = self._start(found, self.chain_of[turn], done)
        system_marks = [i for i, b in enumerate(start) if b.breakpoint]
        room = MAX_BREAKPOINTS - len(marks)
        marks = {m + len(start) for m in marks} | set(system_marks[-room:] if room > 0 else [])
        blocks = start + blocks
        if before is None and found.before:
            marks = self._warm_up(turn, at, found, blocks, marks, params)
        # a new list, whose logged blocks carry no breakpoint: only the marked ones and the start change
        for i in marks | {i for i, b in enumerate(start) if b.breakpoint}:
            blocks[i] = self._marked(blocks[i], found.ttl if i in marks else None)
        return blocks

    def _marked(self, block: Block, breakpoint: str | None) -> Block:
        """``block`` with ``breakpoint``, one Block per logged block and breakpoint however many
        requests mark it."""
        if block.breakpoint == breakpoint:
            return block
        found = self._marks.get((id(block), breakpoint))
        if found is None or found[0] is not block:
            made = Block(block.key, block.tokens, breakpoint=breakpoint, layer=block.layer, label=block.label)
            found = self._marks[(id(block), breakpoint)] = (block, made)
        return found[1]

    def _start(self, found: Inferred, chain: int, done: list[int]) -> list[Block]:
        """The blocks of what the log does not hold: the inferred system prompt and tools cut where
        the usage shows the agent's breakpoints (what an earlier session had cached, the levels its
        rewrites read up to), then the context the agent added to this chain; a piece after a
        rewrite's read is new content from that rewrite on."""
        split = found.before if 0 < found.before < found.tokens * (1 - LEVEL_TOLERANCE) else 0
        cuts = sorted({c for c in (split, *found.levels) if c})
        edges = [0, *cuts, found.tokens]
        # each block's key is its identity in the cache simulation (the same content in two requests
        # is one cached block), not a storage key
        out = []
        for n, (begin, end) in enumerate(zip(edges, edges[1:], strict=False)):
            generation = sum(level <= begin * (1 + LEVEL_TOLERANCE) for level in done)
            real = end in cuts or not found.levels  # the inferred end is a breakpoint only where none is known
            label = found.label + (" (cached before the log)" if end == split and n == 0 else "")
            out.append(
                Block(
                    f"inferred:{found.conversation}:{found.tokens}:{begin}-{end}"
                    + (f":rewrite{generation}" if generation else ""),
                    end - begin,
                    breakpoint=found.ttl if real else None,
                    layer="system",
                    label=label,
                )
            )
        added = found.added[chain] if chain < len(found.added) else 0
        if added:
            generation = len(done)
            out.append(
                Block(
                    f"inferred:{found.conversation}:chain{chain}:{added}"
                    + (f":rewrite{generation}" if generation else ""),
                    added,
                    layer="messages",
                    label=f"context the agent added, not in the log: about {added:,} tokens, from the usage",
                )
            )
        return out

    def _warm_up(
        self,
        turn: int,
        at: datetime,
        found: Inferred,
        blocks: list[Block],
        marks: set[int],
        params: dict[str, str] | None,
    ) -> set[int]:
        """A request of what the conversation's first request read from a cache written before the
        log, played just before it; ``marks`` with a breakpoint where that read ends."""
        total, reach = 0, -1
        for i, b in enumerate(blocks):
            total += b.tokens
            if total > found.before * (1 + LEVEL_TOLERANCE):
                break
            reach = i
        if reach < 0:
            return marks
        marks = marks | {reach}
        if len(marks) > MAX_BREAKPOINTS:  # keep the read's and the last ones
            marks = {reach} | set(sorted(marks - {reach})[-(MAX_BREAKPOINTS - 1) :])
        self.warmups[turn] = Request(
            at,
            [
                Block(b.key, b.tokens, breakpoint=found.ttl if i in marks else None, layer=b.layer, label=b.label)
                for i, b in enumerate(blocks[: reach + 1])
            ],
            params=params,
        )
        return marks


def _starts_with(blocks: list[Block], before: list[Block]) -> bool:
    """Whether ``blocks`` starts with the keys of ``before``: the Block objects a conversation's
    requests share are compared at the speed of a list comparison, the keys of the rest one by one."""
    if len(blocks) < len(before):
        return False
    shared = shared_start(blocks, before)
    return shared == len(before) or list(map(_KEY, blocks[shared : len(before)])) == list(map(_KEY, before[shared:]))
