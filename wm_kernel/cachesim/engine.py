"""The simulator: requests in, per-request cache usage and cost out, by each provider's rules.

A request is a list of :class:`Block`\\ s in the order the provider reads them (tools, then system,
then messages). Two blocks are the same content when their keys are equal; a cache entry is keyed
by the whole prefix up to its block (and by the request parameters that invalidate that part), so a
change in block 3 makes every entry from block 3 on a different entry, as at the providers.

Rules (cache_rules.md; the choices where it is silent are marked *assumed*)
-----------------------------------------------------------------------------
* ``breakpoints`` (Anthropic): a request may carry at most ``max_breakpoints`` breakpoints, longer
  TTLs first. For each breakpoint the simulator looks back ``lookback`` blocks (the breakpoint's own
  first) for a live entry; the longest match over all breakpoints is read (A tokens). Every
  breakpoint after the match writes an entry with its TTL; billing is A read, B-A one-hour write
  (B: the last 1h breakpoint after A), C-B five-minute write (C: the last breakpoint), the rest
  plain input. A breakpoint whose prefix is under ``min_tokens`` neither reads nor writes. An entry
  is live while ``at < expires``; a hit refreshes the matched entry and the entries at this request's
  breakpoints inside the matched prefix (*assumed*: the rules say "refreshed on every hit").
* ``explicit_breakpoints`` (OpenAI 5.6+): as above with no lookback limit and one TTL; a request
  without breakpoints gets the implicit one on its last block (*assumed*: "near the latest user
  message", and callers put that message last or mark it ``"auto"``).
* ``automatic`` (OpenAI before 5.6, Gemini implicit): a request of at least ``min_tokens`` stores
  every prefix of itself; the next one reads the longest live common prefix, rounded down to
  ``min_tokens + step * k``. Writes cost nothing extra. Breakpoint markers other than ``"explicit"``
  are ignored, so one request list runs on every provider. Gemini's explicit cached content: the
  prefix up to the last ``"explicit"`` block is created once (input price, plus storage for the
  whole TTL, charged to the request that created it), read by every request while it lives, and not
  refreshed by reads.
* Parameters: ``tools``, ``model`` and any parameter the simulator does not know invalidate
  everything; ``web_search`` and ``citations`` system and messages; ``tool_choice``, ``thinking``
  and ``images`` messages only; ``prompt_cache_key`` and ``prompt_cache_retention`` nothing
  (``prompt_cache_retention="24h"`` selects OpenAI's long retention).
* Requests are sent one after another: an entry a request wrote is usable by the next one even at
  the same instant (*assumed*; concurrent fan-out is not modelled).

Miss reasons (one per request, the first that applies)
------------------------------------------------------
``no_breakpoint`` (a breakpoint mode, none marked), ``below_minimum``, ``none`` (everything up to
the last breakpoint, or the whole prompt, was read), ``first_request`` (nothing was ever written
before), ``ttl_expired`` / ``lookback_exceeded`` (a longer entry existed but had expired / lay
beyond every breakpoint's lookback), ``params_changed`` / ``content_changed`` (the first block that
differs from the previous request lies inside what that request cached; ``first_divergent_block``
is its index). A request that only grew past what the previous one cached is ``none``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta
from itertools import accumulate, count, pairwise
from types import MappingProxyType
from typing import Any, NamedTuple

from wm_kernel.cachesim.models import get_model
from wm_kernel.cachesim.profile import Cost, ModelProfile
from wm_kernel.utils.sequences import shared_start

#: The most tokens a block, or a whole request, may hold: the simulation's tables count in int64.
MAX_TOKENS = 2**63 - 1

LAYERS = ("tools", "system", "messages")
_RANK = {layer: rank for rank, layer in enumerate(LAYERS)}
_LAYER_OF, _TOKENS = operator.attrgetter("layer"), operator.attrgetter("tokens")
MISS_REASONS = (
    "none",
    "first_request",
    "ttl_expired",
    "content_changed",
    "params_changed",
    "below_minimum",
    "lookback_exceeded",
    "no_breakpoint",
)
#: Generic markers every model accepts besides its own TTL names.
MARKERS = ("5m", "1h", "auto", "explicit")
#: Which layers a parameter invalidates from (the layer and every later one).
PARAM_SCOPES: Mapping[str, str] = MappingProxyType(
    {
        "tools": "tools",
        "model": "tools",
        "web_search": "system",
        "citations": "system",
        "tool_choice": "messages",
        "thinking": "messages",
        "images": "messages",
    }
)
#: Parameters that route or retain but never invalidate.
NEUTRAL_PARAMS = frozenset({"prompt_cache_key", "prompt_cache_retention"})


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a request.

    Parameters
    ----------
    key:
        Identity of the content (callers use a digest of the text): equal keys, same content.
    tokens:
        Its size in tokens (a non-negative int).
    breakpoint:
        None, a TTL name (``"5m"``, ``"1h"``, or one of the model's own) or a marker (``"auto"``,
        ``"explicit"``): a cache breakpoint on this block.
    layer:
        ``"tools"``, ``"system"`` or ``"messages"``: which parameters invalidate it.
    label:
        What the block is, for reports (a section and its trinket, a message).
    """

    key: str
    tokens: int
    _: KW_ONLY
    breakpoint: str | None = None
    layer: str = "messages"
    label: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.key, str):
            raise TypeError(f"block key must be a str, got {type(self.key).__name__}")
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int):
            raise TypeError(f"block tokens must be an int, got {type(self.tokens).__name__}")
        if self.tokens < 0:
            raise ValueError(f"block tokens must not be negative, got {self.tokens}")
        if self.tokens > MAX_TOKENS:
            raise ValueError(f"block tokens must be at most {MAX_TOKENS:,} (2**63 - 1), got {self.tokens}")
        if self.breakpoint is not None and not isinstance(self.breakpoint, str):
            raise TypeError(f"breakpoint must be None or a TTL name, got {self.breakpoint!r}")
        if self.layer not in LAYERS:
            raise ValueError(f"layer must be one of {', '.join(LAYERS)}, got {self.layer!r}")


@dataclass(frozen=True, slots=True)
class Request:
    """One request: when it was sent, its blocks in order, the parameters that invalidate caches."""

    at: datetime
    blocks: Sequence[Block]
    _: KW_ONLY
    params: Mapping[str, Any] | None = None
    #: (this request's number, the number of the request checked before it, how many blocks they
    #: share): the simulation takes that count instead of comparing the two again
    _checked: tuple[int, int, int] = field(default=(0, 0, 0), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        global _last_checked
        if not isinstance(self.at, datetime):
            raise TypeError(f"request time must be a datetime, got {type(self.at).__name__}")
        if isinstance(self.blocks, (str, bytes)):
            raise TypeError("blocks must be a sequence of Block")
        blocks = tuple(self.blocks)
        # the start this request shares with the last one checked (a conversation's requests repeat
        # the one before: the same Block objects, compared without a call) was checked with it
        last_blocks, last_sums, last_serial = _last_checked
        shared = shared_start(blocks, last_blocks) if last_blocks else 0
        added = blocks[shared:]
        if not set(map(type, added)) <= {Block}:  # a subclass or a stranger: look at each
            for index, block in enumerate(added, start=shared):
                if not isinstance(block, Block):
                    raise TypeError(f"blocks[{index}] is a {type(block).__name__}, not a Block")
        order = list(map(_RANK.__getitem__, map(_LAYER_OF, blocks[max(shared - 1, 0) :])))
        if not all(map(operator.le, order, order[1:])):
            index = max(shared - 1, 0) + next(i for i in range(1, len(order)) if order[i] < order[i - 1])
            raise ValueError(
                f"blocks[{index}] is in layer {blocks[index].layer!r} after a "
                f"{blocks[index - 1].layer!r} block; the order is tools, system, messages"
            )
        sums = last_sums[:shared]
        sums += accumulate(map(_TOKENS, added), initial=sums[-1] if shared else 0)
        del sums[shared]  # accumulate's first value: the shared start's count again
        total = sums[-1] if sums else 0
        if total > MAX_TOKENS:
            raise ValueError(f"the request holds {total} tokens, more than the simulator counts (2**63 - 1)")
        if self.params is not None and not isinstance(self.params, Mapping):
            raise TypeError(f"params must be a mapping, got {type(self.params).__name__}")
        object.__setattr__(self, "blocks", blocks)
        object.__setattr__(self, "params", MappingProxyType(dict(self.params or {})))
        serial = next(_SERIALS)
        object.__setattr__(self, "_checked", (serial, last_serial, shared))
        _last_checked = (blocks, sums, serial)

    @property
    def tokens(self) -> int:
        """All the request's input tokens."""
        return sum(map(_TOKENS, self.blocks))


#: The blocks of the last request checked, the token count of each of their prefixes (``sums[i]``:
#: blocks 0 to i) and its number: the next request checks only what it does not share with them.
_last_checked: tuple[tuple[Block, ...], list[int], int] = ((), [], 0)
_SERIALS = count(1)  # each request's number (never reused, unlike an id)


class Outcome(NamedTuple):
    """What one request did (one row of ``Simulation.turns``)."""

    at: datetime
    prompt_tokens: int
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int
    hit_tokens: int
    storage_usd: float
    cost_usd: float
    cost_without_cache_usd: float
    first_divergent_block: int | None
    divergent_label: str
    miss_reason: str


class _Entry:
    __slots__ = ("expires", "ttl")

    def __init__(self, expires: datetime, ttl: timedelta) -> None:
        self.expires = expires
        self.ttl = ttl


def _expiry(at: datetime, ttl: timedelta) -> datetime:
    """``at + ttl``, or the last moment a datetime holds where that passes the year 9999 (no
    request can come later, so the entry is live for every one that can)."""
    try:
        return at + ttl
    except OverflowError:
        return datetime.max.replace(tzinfo=at.tzinfo)


class _Prepared(NamedTuple):
    request: Request
    hashes: list[int]
    cumulative: list[int]
    breakpoints: list[tuple[int, timedelta, bool]]  # (block index, ttl, is a one-hour write)
    sigs: tuple[int, int, int]
    explicit: int  # index of the last "explicit" block (Gemini cached content), -1 if none
    marks: list[tuple[int, str]]  # the blocks' own breakpoints (block index, its breakpoint)
    shared: int  # how many blocks it shares with the request before (same parameters), 0 if none


def _layer_sigs(params: Mapping[str, Any]) -> tuple[int, int, int]:
    """A hash per layer of the parameters that invalidate it (cumulative: tools < system < messages)."""
    scoped: list[list[tuple[str, str]]] = [[], [], []]
    for name in sorted(params):
        if name in NEUTRAL_PARAMS:
            continue
        scoped[LAYERS.index(PARAM_SCOPES.get(name, "tools"))].append((name, repr(params[name])))
    tools = hash(tuple(scoped[0]))
    system = hash((tools, tuple(scoped[1])))
    return tools, system, hash((system, tuple(scoped[2])))


def _prepare(index: int, request: Request, profile: ModelProfile, before: _Prepared | None = None) -> _Prepared:
    """Validate one request against the model and compute its prefix hashes and sums. The blocks
    it shares with ``before`` (the previous request, same parameters) take that one's hashes and
    sums: a conversation costs what each request adds, not what it repeats."""
    sigs = _layer_sigs(request.params or {})
    shared = 0
    if before is not None and before.sigs == sigs:
        _, after, counted = request._checked
        # checked right after ``before`` was (a log's requests are): what the two share is known
        if after and after == before.request._checked[0]:
            shared = counted
        else:
            shared = shared_start(request.blocks, before.request.blocks)
    hashes, cumulative = before.hashes[:shared] if before else [], before.cumulative[:shared] if before else []
    marks: list[tuple[int, str]] = [(p, mark) for p, mark in before.marks if p < shared] if before else []
    h, layer, total = (
        (hashes[-1], _RANK[request.blocks[shared - 1].layer], cumulative[-1]) if shared else (sigs[0], 0, 0)
    )
    known = set(MARKERS) | set(profile.ttls)
    for position in range(shared, len(request.blocks)):
        block = request.blocks[position]
        target = _RANK[block.layer]
        while layer < target:  # entering a later layer mixes in the parameters that invalidate it
            layer += 1
            h = hash((h, sigs[layer]))
        h = hash((h, block.key))
        total += block.tokens
        hashes.append(h)
        cumulative.append(total)
        if block.breakpoint is not None:
            if block.breakpoint not in known:
                raise ValueError(
                    f"requests[{index}].blocks[{position}]: unknown cache TTL "
                    f"{block.breakpoint!r} for {profile.name}; use one of "
                    f"{', '.join(sorted(known))}"
                )
            marks.append((position, block.breakpoint))
    marked = list(marks)
    explicit = max((p for p, mark in marks if mark == "explicit"), default=-1)
    if profile.mode == "automatic":
        if explicit >= 0 and profile.storage is None:
            raise ValueError(
                f"requests[{index}].blocks[{explicit}]: {profile.name} has no explicit cache; its caching is automatic"
            )
        return _Prepared(request, hashes, cumulative, [], sigs, explicit, marked, shared)
    if len(marks) > profile.max_breakpoints:
        raise ValueError(
            f"requests[{index}] has {len(marks)} cache breakpoints; {profile.name} allows "
            f"at most {profile.max_breakpoints}"
        )
    if not marks and profile.mode == "explicit_breakpoints" and request.blocks:
        marks = [(len(request.blocks) - 1, "auto")]
    breakpoints = []
    for position, mark in marks:
        name = (
            mark if mark in profile.ttls else ("1h" if mark == "1h" and "1h" in profile.ttls else profile.default_ttl)
        )
        breakpoints.append((position, profile.ttls[name], name == "1h"))
    for (p0, ttl0, _), (p1, ttl1, _) in pairwise(breakpoints):
        if ttl1 > ttl0:
            raise ValueError(
                f"requests[{index}]: the breakpoint on block {p1} has a longer TTL than the "
                f"one on block {p0}; longer TTLs must come first"
            )
    return _Prepared(request, hashes, cumulative, breakpoints, sigs, explicit, marked, shared)


def _prepared(requests: Iterable[Request], profile: ModelProfile) -> Iterator[_Prepared]:
    """Each request validated and prepared, in order; only the one before is kept."""
    if isinstance(requests, (str, bytes, Mapping)) or not isinstance(requests, Iterable):
        raise TypeError(f"requests must be an iterable of Request, got {type(requests).__name__}")
    before: _Prepared | None = None
    for index, request in enumerate(requests):
        if not isinstance(request, Request):
            raise TypeError(f"requests[{index}] is a {type(request).__name__}, not a Request")
        if before is not None:
            try:
                backwards = request.at < before.request.at
            except TypeError:
                raise ValueError("requests mix naive and timezone-aware times") from None
            if backwards:
                raise ValueError(
                    f"requests must be in time order: requests[{index}] at "
                    f"{request.at.isoformat()} is before requests[{index - 1}] at "
                    f"{before.request.at.isoformat()}"
                )
        before = _prepare(index, request, profile, before)
        yield before


class _Run:
    """The cache state of one provider account while requests go by."""

    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile
        self.entries: dict[int, _Entry] = {}  # prefix hash -> entry (expired ones kept: "why")
        self.explicit: dict[int, _Entry] = {}  # Gemini explicit cached content
        self.previous: _Prepared | None = None
        self.previous_target = -1

    # -- one request
    def step(self, p: _Prepared) -> Outcome:
        profile = self.profile
        if profile.mode == "automatic":
            if p.explicit >= 0:
                outcome, target = self._explicit(p)
            else:
                outcome, target = self._automatic(p)
        else:
            outcome, target = self._breakpoints(p)
        self.previous, self.previous_target = p, target
        return outcome

    def _breakpoints(self, p: _Prepared) -> tuple[Outcome, int]:
        profile, at, cum, hashes = self.profile, p.request.at, p.cumulative, p.hashes
        entries = self.entries
        had_entries = bool(entries)
        eligible = [bp for bp in p.breakpoints if cum[bp[0]] >= profile.min_tokens]
        best = -1
        lookback = profile.lookback
        for position, _, _ in eligible:
            stop = best if lookback is None else max(best, position - lookback)
            for j in range(position, stop, -1):
                entry = entries.get(hashes[j])
                if entry is not None and at < entry.expires:
                    best = j
                    break
        target = eligible[-1][0] if eligible else -1
        if not p.breakpoints:
            reason = "no_breakpoint"
        elif not eligible:
            reason = "below_minimum"
        else:  # before this request's own writes, which would look like the entries it missed
            reason = self._reason(p, best, target, had_entries)
        if best >= 0:
            entries[hashes[best]].expires = _expiry(at, entries[hashes[best]].ttl)
            for position, _, _ in eligible:
                entry = entries.get(hashes[position]) if position < best else None
                if entry is not None and at < entry.expires:
                    entry.expires = _expiry(at, entry.ttl)
        a = cum[best] if best >= 0 else 0
        b = c = a
        for position, ttl, one_hour in eligible:
            if position > best:
                entries[hashes[position]] = _Entry(_expiry(at, ttl), ttl)
                c = cum[position]
                if one_hour:
                    b = c
        total = cum[-1] if cum else 0
        cost = _usd(profile.bill(total - c, a, {"1h": b - a, profile.default_ttl: c - b}))
        return self._outcome(p, total - c, a, c - a, c - b, b - a, 0.0, cost, reason, best), target

    def _automatic(self, p: _Prepared) -> tuple[Outcome, int]:
        profile, at, cum, hashes = self.profile, p.request.at, p.cumulative, p.hashes
        entries = self.entries
        had_entries = bool(entries)
        total = cum[-1] if cum else 0
        if total < profile.min_tokens:
            cost = _usd(profile.bill(total))
            return self._outcome(p, total, 0, 0, 0, 0, 0.0, cost, "below_minimum", -1), -1
        best = -1
        for j in range(len(hashes) - 1, -1, -1):
            entry = entries.get(hashes[j])
            if entry is not None and at < entry.expires:
                best = j
                break
        matched = cum[best] if best >= 0 else 0
        read = 0
        if matched >= profile.min_tokens:
            step = profile.step
            read = matched if step is None else profile.min_tokens + (matched - profile.min_tokens) // step * step
        retention = (p.request.params or {}).get("prompt_cache_retention")
        ttl = (
            profile.ttls[retention]
            if isinstance(retention, str) and retention in profile.ttls
            else profile.ttls[profile.default_ttl]
        )
        target = len(hashes) - 1
        reason = self._reason(p, best, target, had_entries)
        for h in hashes:  # the whole prompt is cached for the next request, every prefix of it
            entry = entries.get(h)
            if entry is None:
                entries[h] = _Entry(_expiry(at, ttl), ttl)
            else:
                entry.expires, entry.ttl = _expiry(at, ttl), ttl
        cost = _usd(profile.bill(total - read, read))
        return self._outcome(p, total - read, read, 0, 0, 0, 0.0, cost, reason, best), target

    def _explicit(self, p: _Prepared) -> tuple[Outcome, int]:
        profile, at, cum = self.profile, p.request.at, p.cumulative
        total, size, key = cum[-1], cum[p.explicit], p.hashes[p.explicit]
        if size < profile.min_tokens:
            return self._outcome(p, total, 0, 0, 0, 0, 0.0, _usd(profile.bill(total)), "below_minimum", -1), -1
        entry = self.explicit.get(key)
        created = storage = 0.0
        if entry is not None and at < entry.expires:
            reason = "none"
        else:
            reason = "first_request" if entry is None else "ttl_expired"
            ttl = profile.ttls.get("explicit", profile.ttls[profile.default_ttl])
            self.explicit[key] = _Entry(_expiry(at, ttl), ttl)  # explicit content is not refreshed by reads
            created = size
            storage = size * (profile.storage or 0.0) * (ttl / timedelta(hours=1)) / 1e6
        # explicit content is created at the input price (its writes key), then read by this request
        cost = _usd(profile.bill(total - size, size, {"explicit": int(created)})) + storage
        return self._outcome(p, total - size, size, int(created), 0, 0, storage, cost, reason, p.explicit), p.explicit

    # -- why
    def _reason(self, p: _Prepared, best: int, target: int, had_entries: bool) -> str:
        if best >= target:
            return "none"
        if not had_entries:
            return "first_request"
        for j in range(target, best, -1):
            entry = self.entries.get(p.hashes[j])
            if entry is not None:
                # written for this request's prefix, yet not read: gone, or out of every lookback
                return "ttl_expired" if p.request.at >= entry.expires else "lookback_exceeded"
        divergent = self._divergence(p)
        if divergent is None or divergent > self.previous_target:
            return "none"  # the request grew past everything the previous one had cached
        return "params_changed" if self._params_changed(p, divergent) else "content_changed"

    def _divergence(self, p: _Prepared) -> int | None:
        """Index of the first block that differs from the previous request (None if none does)."""
        before = self.previous
        if before is None:
            return None
        # the blocks shared with it have its prefix hashes (taken from it): only the rest is compared
        start = p.shared
        shared = start + shared_start(p.hashes[start:], before.hashes[start:])
        return shared if shared < min(len(p.hashes), len(before.hashes)) else None

    def _params_changed(self, p: _Prepared, divergent: int) -> bool:
        before = self.previous
        assert before is not None
        layer = LAYERS.index(p.request.blocks[divergent].layer)
        return p.sigs[layer] != before.sigs[layer]

    def _outcome(
        self,
        p: _Prepared,
        plain: int,
        read: int,
        created: int,
        w5m: int,
        w1h: int,
        storage: float,
        cost: float,
        reason: str,
        best: int,
    ) -> Outcome:
        total = p.cumulative[-1] if p.cumulative else 0
        divergent = None
        label = ""
        if reason in ("content_changed", "params_changed"):
            divergent = self._divergence(p)
            if divergent is not None:
                label = p.request.blocks[divergent].label
        return Outcome(
            p.request.at,
            total,
            plain,
            read,
            created,
            w5m,
            w1h,
            read,
            storage,
            cost,
            _usd(self.profile.bill(total)),
            divergent,
            label,
            reason,
        )


@dataclass
class SimulationData:
    """What ``simulate`` hands to ``Simulation``: the profile, the requests and their outcomes."""

    profile: ModelProfile
    requests: list[Request] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)


def run(requests: Iterable[Request], model: str | ModelProfile) -> SimulationData:
    """Play the requests in order, each validated before it is played; an invalid one is an error
    and nothing is returned (the run changes nothing outside it)."""
    profile = get_model(model)
    state = _Run(profile)
    data = SimulationData(profile)
    for p in _prepared(requests, profile):
        data.requests.append(p.request)
        data.outcomes.append(state.step(p))
    return data


def _usd(cost: Cost) -> float:
    """A simulated request's prompt-side dollars; NaN (missing, never 0) for an unpriced model, so a
    sum over a log with one unpriced request is missing too and a view says which."""
    prompt = cost.prompt_usd
    return math.nan if prompt is None else prompt
