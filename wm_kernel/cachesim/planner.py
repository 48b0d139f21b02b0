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
from dataclasses import dataclass

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


__all__ = ["EditEconomics", "edit_economics"]
