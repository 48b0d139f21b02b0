"""The price of one context edit against the prompt-cache clock (docs/planner.md).

An edit (a tool-result clear, a segment collapse, a summary replacing part of the history) changes
the prompt from a token ``edit_point`` on: the next request can read only what comes before it and
writes the rest again. It pays back through every later request reading fewer tokens.
:func:`edit_economics` prices both sides with the model profile's one cost rule
(:meth:`~wm_kernel.cachesim.profile.ModelProfile.bill`) and says after how many turns the edit has
paid for itself: on a warm cache an edit costs a rewrite of everything after its edit point; at a
cold miss (the TTL ran out, or the model changed) the whole prefix is written either way, so an
edit that shrinks the prompt only saves.

Examples
--------
>>> e = edit_economics("claude-opus-4-6", context=150_000, edit_point=20_000, removed=50_000)
>>> round(e.one_time_usd, 6), round(e.saving_per_turn_usd, 6), round(e.break_even_turns, 1)
(0.435, 0.025, 17.4)
>>> edit_economics("claude-opus-4-6", context=150_000, edit_point=20_000, removed=50_000, warm=False).break_even_turns
0.0
>>> edit_economics("claude-haiku-4-5", context=9_000, edit_point=5_000, removed=300, added=300).break_even_turns
inf
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from wm_kernel.cachesim.engine import Request
from wm_kernel.cachesim.models import get_model
from wm_kernel.cachesim.profile import Cost, ModelProfile


@dataclass(frozen=True)
class EditEconomics:
    """What one context edit costs now and saves later (US$; see the module docstring).

    ``one_time_usd`` is the next request's price with the edit less its price without it
    (negative: the edit saves at once); ``saving_per_turn_usd`` what each later request saves on
    reads (negative when the edit adds more than it removes); ``break_even_turns`` the turns the
    edit needs to pay back: ``0.0`` when it costs nothing now, ``math.inf`` when it never pays back
    (it saves nothing per turn: an edit that fires every turn pays its rewrite every turn). Every
    dollar figure is NaN for a model without prices (``ModelProfile.priced`` False)."""

    model: str
    context: int
    edit_point: int
    removed: int
    added: int
    warm: bool
    ttl: str
    #: the next request's prompt price without the edit, and with it
    without_edit_usd: float
    with_edit_usd: float
    one_time_usd: float
    saving_per_turn_usd: float
    break_even_turns: float

    def __str__(self) -> str:
        when = "on a warm cache" if self.warm else "at a cold miss"
        turns = "never" if math.isinf(self.break_even_turns) else f"after {self.break_even_turns:.1f} turns"
        return (
            f"removing {self.removed:,} tokens at {self.edit_point:,} of {self.context:,} "
            f"(adding {self.added:,}) {when}, {self.ttl} TTL, {self.model}: "
            f"${self.one_time_usd:,.6f} now, ${self.saving_per_turn_usd:,.6f} saved a turn, pays back {turns}"
        )


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int (tokens), got {value!r}")
    return value


def _profile(model: object) -> ModelProfile:
    if not isinstance(model, (str, ModelProfile)):
        raise ValueError(f"model must be a model id or a ModelProfile, got {type(model).__name__}")
    try:
        return get_model(model)
    except ValueError as exc:
        raise ValueError(f"model: {exc}") from None


def _usd(cost: Cost) -> float:
    prompt = cost.prompt_usd
    return math.nan if prompt is None else prompt


def edit_economics(
    model: str | ModelProfile,
    *,
    context: int,
    edit_point: int,
    removed: int,
    added: int = 0,
    warm: bool = True,
    ttl: str = "5m",
) -> EditEconomics:
    """Price an edit of a cached prompt of ``context`` tokens: ``removed`` tokens taken out after
    the first ``edit_point`` tokens and ``added`` put in their place, the rewritten tokens cached
    at ``ttl`` (one of the model's TTL names). ``warm``: the prefix is live in the cache now;
    False: it expired (or the model changed), so the next request writes its whole prefix either
    way. The next request's own new tokens are the same with and without the edit and are left
    out. ValueError, naming the argument, for a count that is not a non-negative int, an edit
    that does not fit the context or changes nothing, an unknown TTL or model."""
    profile = _profile(model)
    c = _count(context, "context")
    e = _count(edit_point, "edit_point")
    x = _count(removed, "removed")
    s = _count(added, "added")
    if not isinstance(warm, bool):
        raise ValueError(f"warm must be True or False, got {warm!r}")
    if not isinstance(ttl, str) or ttl not in profile.ttls:
        raise ValueError(f"ttl must be one of {profile.name}'s TTLs ({', '.join(profile.ttls)}), got {ttl!r}")
    if e + x > c:
        raise ValueError(f"edit_point + removed ({e:,} + {x:,}) must not exceed context ({c:,})")
    if x == 0 and s == 0:
        raise ValueError("removed and added are both 0: no edit to price")
    if warm:
        without = _usd(profile.bill(read=c))
        with_edit = _usd(profile.bill(read=e, writes={ttl: c - e - x + s}))
    else:
        without = _usd(profile.bill(writes={ttl: c}))
        with_edit = _usd(profile.bill(writes={ttl: c - x + s}))
    one_time = with_edit - without
    saving = _usd(profile.bill(read=x)) - _usd(profile.bill(read=s))
    if math.isnan(one_time) or math.isnan(saving):
        turns = math.nan
    elif one_time <= 0:
        turns = 0.0
    elif saving <= 0:
        turns = math.inf
    else:
        turns = one_time / saving
    return EditEconomics(profile.name, c, e, x, s, warm, ttl, without, with_edit, one_time, saving, turns)


#: The labels of the conversation's own messages (``wm_kernel.cachesim.requests``): appended,
#: never edited in place.
MESSAGE_LABELS = ("user message", "assistant reply", "user", "assistant")


@dataclass(frozen=True)
class EveryTurnEdit:
    """A block of the cached prefix whose content changed on every request after the first: an
    edit that fires every turn. ``changed`` of ``compared`` requests changed it; in the last one
    it sat at ``edit_point`` tokens of a ``context``-token cached prefix, of which the first
    ``readable`` tokens (up to the last breakpoint before it: the longest entry a request can
    still read) are read and the rest written again; ``economics`` prices one such change (the
    same size in as out: it saves nothing a turn, so its break-even is infinite)."""

    label: str
    changed: int
    compared: int
    edit_point: int
    readable: int
    context: int
    economics: EditEconomics

    def __str__(self) -> str:
        rewritten = self.context - self.readable
        return (
            f"`{self.label}` changes on every request ({self.changed} of {self.compared}) at token "
            f"{self.edit_point:,} of the {self.context:,}-token cached prefix: each change rewrites "
            f"{rewritten:,} tokens (${self.economics.one_time_usd:,.6f} a request on {self.economics.model}) "
            "and saves nothing, so it never pays back (break-even infinite)"
        )


def every_turn_edits(requests: Sequence[Request], profile: ModelProfile) -> list[EveryTurnEdit]:
    """The labelled blocks of the cached prefix (up to the last breakpoint, when it reaches the
    model's minimum) that are not messages of the conversation and whose content changed on
    every one of at least two requests after the first: edits that fire every turn, each priced
    as a same-size change on a warm cache (:func:`edit_economics`, edited at the last breakpoint
    before the block: what precedes it was never written as an entry of its own), highest in the
    prefix first.

    >>> from datetime import datetime, timedelta, UTC
    >>> from wm_kernel.cachesim.engine import Block
    >>> t = datetime(2026, 11, 30, 9, tzinfo=UTC)
    >>> def sent(n): return Request(t + timedelta(minutes=n), [
    ...     Block("rules", 2_000, layer="system", label="rules", breakpoint="5m"),
    ...     Block(f"now {n}", 40, layer="system", label="time (TimeManager)"),
    ...     Block("docs", 6_000, layer="system", label="docs", breakpoint="5m")])
    >>> [str(e) for e in every_turn_edits([sent(0), sent(1), sent(2)], get_model("claude-sonnet-4-6"))]
    ['`time (TimeManager)` changes on every request (2 of 2) at token 2,000 of the 8,040-token cached \
prefix: each change rewrites 6,040 tokens ($0.020838 a request on claude-sonnet-4-6) and saves \
nothing, so it never pays back (break-even infinite)']
    """
    if len(requests) < 3:
        return []
    changed: dict[str, int] = {}
    before: dict[str, str] = {}
    for index, request in enumerate(requests):
        for block in request.blocks:
            if not block.label or block.label.startswith(MESSAGE_LABELS) and block.layer == "messages":
                continue
            if index and before.get(block.label, block.key) != block.key:
                changed[block.label] = changed.get(block.label, 0) + 1
            before[block.label] = block.key
    every = {label for label, count in changed.items() if count == len(requests) - 1}
    if not every:
        return []
    last = requests[-1]
    total, cached, ttl = 0, 0, profile.default_ttl
    for block in last.blocks:
        total += block.tokens
        if block.breakpoint is not None:
            cached, ttl = total, block.breakpoint if block.breakpoint in profile.ttls else profile.default_ttl
    if cached < profile.min_tokens:
        return []
    found, position, readable = [], 0, 0
    for block in last.blocks:
        if block.label in every and position < cached and block.tokens:
            # read up to the last breakpoint before the block (the longest entry written), the rest
            # written again: the closed form with the edit at that breakpoint
            economics = edit_economics(
                profile, context=cached, edit_point=readable, removed=block.tokens, added=block.tokens, ttl=ttl
            )
            count = changed[block.label]
            found.append(EveryTurnEdit(block.label, count, len(requests) - 1, position, readable, cached, economics))
        position += block.tokens
        if block.breakpoint is not None and position <= cached:
            readable = position
    return found


__all__ = ["EditEconomics", "edit_economics", "EveryTurnEdit", "every_turn_edits", "MESSAGE_LABELS"]
