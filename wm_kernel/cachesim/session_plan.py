"""A session's own context edits priced against its cache clock: now, or at the next cold miss.

``Session.plan()`` (docs/planner.md) takes the session's last simulated request and prices two
edits the kit makes: a **segment collapse** (the conversation dropped and the stateful trinkets'
sections cleared, a summary added) and a **tool-result clear** (the sections holding tool output
emptied). Each is priced with :func:`~wm_kernel.cachesim.planner.edit_economics` on the cached
prefix (the tokens up to the request's last breakpoint), now (warm while the session's clock is
before the entry's expiry) and at the next cold miss (the last request's send time plus the TTL
of its last breakpoint, if no request comes before). Removed tokens after the cached prefix are
plain input: removing them costs nothing now and saves their input price every turn.

The removed blocks need not be contiguous: everything after the first of them is written again
either way, so the closed form holds with ``edit_point`` the first removed token and ``removed``
their sum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.engine import Block, Request
from wm_kernel.cachesim.planner import MESSAGE_LABELS, edit_economics
from wm_kernel.cachesim.profile import ModelProfile

if TYPE_CHECKING:
    import pandas as pd

PLAN_COLUMNS = (
    "edit",
    "context",
    "edit_point",
    "removed",
    "added",
    "warm_now",
    "cold_at",
    "now_usd",
    "at_cold_miss_usd",
    "saving_per_turn_usd",
    "break_even_now",
    "recommended",
)


def _section(label: str) -> str:
    """The section a block label names (``name (Trinket)`` -> ``name``)."""
    return label.split(" (", 1)[0]


def is_message(block: Block) -> bool:
    """Whether ``block`` is a message of the conversation (not a section in the messages)."""
    return block.layer == "messages" and block.label.startswith(MESSAGE_LABELS)


@dataclass(frozen=True)
class _Edit:
    name: str
    removed_cached: int
    removed_tail: int
    edit_point: int | None  # the first removed token, None when nothing is removed


def _edit(name: str, request: Request, cached: int, chosen: Callable[[Block], bool]) -> _Edit:
    position, first, inside, tail = 0, None, 0, 0
    for block in request.blocks:
        if chosen(block):
            first = position if first is None else first
            if position < cached:
                inside += block.tokens
            else:
                tail += block.tokens
        position += block.tokens
    return _Edit(name, inside, tail, first)


def _cached_prefix(request: Request, profile: ModelProfile) -> tuple[int, str]:
    """Tokens up to the request's last breakpoint (0 below the model's minimum) and its TTL name."""
    total, cached, ttl = 0, 0, profile.default_ttl
    for block in request.blocks:
        total += block.tokens
        if block.breakpoint is not None:
            cached, ttl = total, block.breakpoint if block.breakpoint in profile.ttls else profile.default_ttl
    return (cached if cached >= profile.min_tokens else 0), ttl


def _usd(profile: ModelProfile, input: int) -> float:
    cost = profile.bill(input=input).prompt_usd
    return math.nan if cost is None else cost


def _row(edit: _Edit, profile: ModelProfile, cached: int, ttl: str, added: int, warm: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"edit": edit.name, "context": cached, "edit_point": edit.edit_point}
    if edit.edit_point is None:
        row.update(removed=0, added=0, now_usd=math.nan, at_cold_miss_usd=math.nan)
        row.update(saving_per_turn_usd=math.nan, break_even_now=math.nan, recommended="nothing to remove")
        return row
    row.update(removed=edit.removed_cached + edit.removed_tail, added=added)
    inside = edit.edit_point < cached
    tail_saving = _usd(profile, edit.removed_tail) - (0.0 if inside else _usd(profile, added))
    if inside and (edit.removed_cached or added):
        now, cold = (
            edit_economics(
                profile,
                context=cached,
                edit_point=edit.edit_point,
                removed=edit.removed_cached,
                added=added,
                warm=when,
                ttl=ttl,
            )
            for when in (warm, False)
        )
        one_now, one_cold, saving = now.one_time_usd, cold.one_time_usd, now.saving_per_turn_usd + tail_saving
    else:
        one_now, one_cold, saving = 0.0, 0.0, tail_saving
    if one_now <= 0:
        turns = 0.0
    elif saving <= 0:
        turns = math.inf
    else:
        turns = one_now / saving
    row.update(now_usd=one_now, at_cold_miss_usd=one_cold, saving_per_turn_usd=saving, break_even_now=turns)
    return row


#: An edit that pays back within this many turns is advised now rather than at the cold miss.
NOW_WITHIN_TURNS = 1.0


def _recommended(row: dict[str, Any], cold_at: datetime | None) -> str:
    if row["edit_point"] is None:
        return "nothing to remove"
    if row["saving_per_turn_usd"] <= 0 and row["now_usd"] > 0:
        return "never: it saves nothing a turn and rewrites the cache (break-even infinite)"
    if row["now_usd"] <= 0 or cold_at is None:
        return "now: it costs nothing now"
    if row["break_even_now"] <= NOW_WITHIN_TURNS:
        # the request after the next has paid for it: waiting for the cold miss gives up more
        # than the rewrite costs as soon as one more request comes before it
        return f"now: ${row['now_usd']:,.6f} now pays back within a turn ({row['break_even_now']:.1f})"
    when = cold_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f"at the next cold miss (after {when}, if no request comes before): ${row['now_usd']:,.6f} now "
        f"pays back only after {row['break_even_now']:.1f} turns"
    )


def plan_edits(
    request: Request,
    profile: ModelProfile,
    *,
    now: datetime,
    cleared: Collection[str],
    tool_sections: Collection[str],
    summary_tokens: int = 0,
) -> pd.DataFrame:
    """The plan of a segment collapse (the conversation and the ``cleared`` sections removed,
    ``summary_tokens`` added) and of a tool-result clear (the ``tool_sections`` emptied) after
    ``request`` (the last one sent), at ``now``; one row each (``PLAN_COLUMNS``)."""
    import pandas as pd

    if isinstance(summary_tokens, bool) or not isinstance(summary_tokens, int) or summary_tokens < 0:
        raise ValueError(f"summary_tokens must be a non-negative int, got {summary_tokens!r}")
    cached, ttl = _cached_prefix(request, profile)
    expires = request.at + profile.ttls[ttl]
    warm = cached > 0 and now < expires
    cold_at = expires if warm else None
    collapse = _edit("segment collapse", request, cached, lambda b: is_message(b) or _section(b.label) in set(cleared))
    clear = _edit("tool-result clear", request, cached, lambda b: _section(b.label) in set(tool_sections))
    rows = []
    for edit, added in ((collapse, summary_tokens), (clear, 0)):
        row = _row(edit, profile, cached, ttl, added, warm)
        row.update(warm_now=warm, cold_at=cold_at, recommended=_recommended(row, cold_at))
        rows.append(row)
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


__all__ = ["PLAN_COLUMNS", "plan_edits", "is_message", "NOW_WITHIN_TURNS"]
