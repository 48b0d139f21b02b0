"""Advice: the alternatives that matter, each simulated next to the current layout.

:func:`advise` takes a :class:`~wm_kernel.cachesim.simulation.Simulation` and tries, on the same
requests at the same times:

* **breakpoints** (breakpoint providers): at most ``max_breakpoints`` of them, on the end of the
  stable system prompt, on the last block before the volatile tail (in a chat: the latest user
  message), both, or both with intermediate ones so no write falls out of the lookback window;
  each with 5-minute and 1-hour TTLs on the system breakpoint; the cheapest wins;
* **TTL**: every breakpoint at the other TTL, given the gaps between requests;
* **moving a volatile block** (one whose content changed in most requests, e.g. a clock section)
  out of the cached prefix, to the end of the request (in a Session: placement ``notification``);
* **an edit that fires every turn** (a block of the cached prefix new on every request): named in
  the notes with its price, since it never pays back (:func:`~wm_kernel.cachesim.planner.every_turn_edits`);
* **keep-alive**: pings (the prefix up to the last breakpoint, nothing after) every TTL minus 30
  seconds through the gaps that are longer than the TTL but short enough for pings to pay (see
  :func:`keepalive_breakeven`); ping costs are charged to the request that follows them.

Blocks are told apart by their ``label`` (a Session labels each section ``name (trinket)``);
unlabelled blocks are never moved. ``Advice.best`` combines the suggestions that pay, in that order:
move, breakpoints, keep-alive.
"""

from __future__ import annotations

import html
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.engine import Block, Request
from wm_kernel.cachesim.planner import every_turn_edits
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import Simulation, simulate
from wm_kernel.utils.htmltext import no_math

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PING_MARGIN = timedelta(seconds=30)


def keepalive_breakeven(profile: ModelProfile, ttl: str | None = None) -> int:
    """The longest gap, in TTL intervals, over which keep-alive pings cost less than a rewrite.

    Over a gap of ``n`` intervals, pinging costs ``n`` reads (``n - 1`` pings and the real request's
    read); letting the entry lapse costs one write. Pings win while ``n * read < write``.

    >>> from wm_kernel.cachesim.models import MODELS
    >>> keepalive_breakeven(MODELS["claude-sonnet-4-6"])
    12
    """
    write = profile.write_price(ttl or profile.default_ttl)
    if profile.read == 0:
        return 0 if write == 0 else 2**31
    return max(0, math.ceil(write / profile.read) - 1)


@dataclass(frozen=True)
class Suggestion:
    """One alternative: what to do, its simulated cost and its cost per original request."""

    kind: str
    text: str
    cost: float
    saving: float
    turn_costs: tuple[float, ...] = field(repr=False)
    requests: tuple[Request, ...] = field(repr=False, default=())


class Advice:
    """Suggestions sorted by cost, the current cost, and ``best`` (the combination that pays)."""

    def __init__(self, current: Simulation, suggestions: list[Suggestion], best: Suggestion, notes: list[str]) -> None:
        self.current = current
        self.suggestions = sorted(suggestions, key=lambda s: s.cost)
        self.best = best
        self.notes = notes

    @property
    def current_cost(self) -> float:
        return self.current.total_cost

    def frame(self) -> Any:
        """DataFrame of the suggestions: kind, suggestion, cost_usd, saving."""
        import pandas as pd

        rows = [("current", "the layout as simulated", self.current_cost, 0.0)]
        rows += [(s.kind, s.text, s.cost, s.saving) for s in self.suggestions]
        rows.append(("advised", self.best.text, self.best.cost, self.best.saving))
        return pd.DataFrame.from_records(rows, columns=["kind", "suggestion", "cost_usd", "saving"])

    def _lines(self) -> list[str]:
        n = len(self.current.requests)
        lines = [f"{self.current.title}, {n} requests: current input cost ${self.current_cost:.6f}"]
        lines += [f"- {s.text}" for s in self.suggestions]
        lines.append(f"advised: {self.best.text}: ${self.best.cost:.6f} ({signed_percent(-self.best.saving)})")
        lines += self.notes
        return lines

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def __repr__(self) -> str:
        return f"<Advice {len(self.suggestions)} suggestions; advised ${self.best.cost:.6f}>"

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(line[2:])}</li>" for line in self._lines()[1 : -1 - len(self.notes)])
        lines = self._lines()
        notes = "".join(f"<div>{html.escape(n)}</div>" for n in self.notes)
        return no_math(
            f'<div class="wm-cache-advice"><div>{html.escape(lines[0])}</div><ul>{items}</ul>'
            f"<div><b>{html.escape(lines[-1 - len(self.notes)])}</b></div>{notes}</div>"
        )

    def plot(self, ax: Axes | None = None) -> Axes:
        """Cumulative input cost per request, current vs advised (matplotlib)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7, 3.5))
        xs = range(1, len(self.current.requests) + 1)
        ax.plot(xs, _cumulative(list(self.current.turns["cost_usd"])), label="current")
        ax.plot(xs, _cumulative(list(self.best.turn_costs)), label="advised")
        ax.set_xlabel("request")
        ax.set_ylabel("cumulative input cost (US$)")
        ax.set_title(f"{self.current.profile.name}: current vs advised")
        ax.legend()
        return ax


def _cumulative(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for v in values:
        total += v
        out.append(total)
    return out


# -- request rewriting


def volatile_labels(requests: Sequence[Request]) -> dict[str, float]:
    """Label -> share of its appearances (after the first) in which its content changed; only the
    labels that changed in more than half."""
    seen: dict[str, str] = {}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for request in requests:
        for block in request.blocks:
            if not block.label:
                continue
            before = seen.get(block.label)
            if before is not None:
                counts[block.label][1] += 1
                counts[block.label][0] += before != block.key
            seen[block.label] = block.key
    return {label: changed / total for label, (changed, total) in counts.items() if total and changed / total > 0.5}


def _strip(block: Block, breakpoint: str | None = None) -> Block:
    return Block(block.key, block.tokens, breakpoint=breakpoint, layer=block.layer, label=block.label)


def _place(requests: Sequence[Request], choose: Callable[[Request], dict[int, str]]) -> list[Request]:
    out = []
    for r in requests:
        marks = choose(r)
        out.append(Request(r.at, [_strip(b, marks.get(i)) for i, b in enumerate(r.blocks)], params=r.params))
    return out


def _stable_ends(request: Request, volatile: dict[str, float]) -> tuple[int, int]:
    """(end of the stable tools+system prefix, end of the stable prefix overall), -1 when empty."""
    system_end = overall_end = -1
    for i, b in enumerate(request.blocks):
        if b.label in volatile:
            break
        overall_end = i
        if b.layer != "messages":
            system_end = i
    return system_end, overall_end


def _layouts(
    profile: ModelProfile, volatile: dict[str, float]
) -> list[tuple[str, Callable[[Request], dict[int, str]]]]:
    short = profile.default_ttl
    long_ttls = [t for t in ("1h",) if t in profile.ttls]
    lookback = profile.lookback or 0
    out: list[tuple[str, Callable[[Request], dict[int, str]]]] = []
    for system_ttl in [short, *long_ttls]:

        def system_only(r: Request, ttl: str = system_ttl) -> dict[int, str]:
            end = _stable_ends(r, volatile)[0]
            return {end: ttl} if end >= 0 else {}

        def both(r: Request, ttl: str = system_ttl) -> dict[int, str]:
            s, o = _stable_ends(r, volatile)
            marks = {o: short} if o >= 0 else {}
            if s >= 0:
                marks[s] = ttl
            return marks

        def with_steps(r: Request, ttl: str = system_ttl) -> dict[int, str]:
            marks = both(r, ttl)
            s, o = _stable_ends(r, volatile)
            if lookback and o - s > lookback:  # intermediate breakpoints, at most the model's limit
                free = profile.max_breakpoints - len(marks)
                step = lookback - 1
                for k in range(1, free + 1):
                    position = o - k * step
                    if position <= s:
                        break
                    marks[position] = short
            return marks

        where = f"system {system_ttl}"
        out.append((f"one on the end of the stable system prompt ({where})", system_only))
        out.append(
            (
                f"on the end of the stable system prompt ({where}) and on the last block before "
                f"the volatile tail ({short})",
                both,
            )
        )
        if lookback:
            out.append((f"as above plus intermediate ones every {lookback - 1} blocks ({where})", with_steps))
    out.append(
        (
            f"one on the last block before the volatile tail ({short})",
            lambda r: {o: short} if (o := _stable_ends(r, volatile)[1]) >= 0 else {},
        )
    )
    return out


def _move_to_end(requests: Sequence[Request], label: str) -> list[Request]:
    out = []
    for r in requests:
        kept: list[Block] = []
        moved: list[Block] = []
        for b in r.blocks:
            if b.label == label:
                moved.append(_strip(b))
                if b.breakpoint and kept:  # its breakpoint stays where it was, on the block before
                    kept[-1] = _strip(kept[-1], kept[-1].breakpoint or b.breakpoint)
            else:
                kept.append(b)
        moved = [Block(b.key, b.tokens, layer="messages", label=b.label) for b in moved]
        out.append(Request(r.at, kept + moved, params=r.params))
    return out


def _with_pings(requests: Sequence[Request], profile: ModelProfile) -> tuple[list[Request], list[int], int]:
    """Requests with keep-alive pings inserted; for each request its original index (pings take the
    next real request's); and the number of gaps bridged."""
    out: list[Request] = []
    owner: list[int] = []
    bridged = 0
    for index, r in enumerate(requests):
        if index:
            previous = requests[index - 1]
            marks = [(i, b) for i, b in enumerate(previous.blocks) if b.breakpoint]
            if marks:
                ttl = min(profile.ttls.get(b.breakpoint or "", profile.ttls[profile.default_ttl]) for _, b in marks)
                gap = r.at - previous.at
                limit = keepalive_breakeven(profile) * ttl
                if ttl <= gap <= limit:
                    bridged += 1
                    every = ttl - PING_MARGIN
                    ping = Request(previous.at, previous.blocks[: marks[-1][0] + 1], params=previous.params)
                    when = previous.at + every
                    while when < r.at:
                        out.append(Request(when, ping.blocks, params=ping.params))
                        owner.append(index)
                        when += every
        out.append(r)
        owner.append(index)
    return out, owner, bridged


def _suggest(
    kind: str,
    text: str,
    requests: Sequence[Request],
    profile: ModelProfile,
    base: float,
    owner: Sequence[int] | None = None,
    n: int = 0,
) -> Suggestion:
    sim = simulate(requests, profile)
    costs = list(sim.turns["cost_usd"])
    if owner is not None:
        folded = [0.0] * n
        for index, cost in zip(owner, costs, strict=True):
            folded[index] += cost
        costs = folded
    cost = sum(costs)
    saving = 1 - cost / base if base else 0.0
    return Suggestion(
        kind,
        f"{text}: ${cost:.6f} ({signed_percent(-saving)} input cost over {len(costs)} requests)",
        cost,
        saving,
        tuple(costs),
        tuple(requests),
    )


def signed_percent(fraction: float) -> str:
    """``fraction`` as a signed percentage to one decimal; a change that rounds to nothing is
    "+0.0%" (never "-0.0%")."""
    shown = round(fraction, 3)
    return f"{shown if shown else 0.0:+.1%}"


def advise(simulation: Simulation) -> Advice:
    """Try the alternatives (see the module docstring) and return them with their costs."""
    profile = simulation.profile
    requests = simulation.requests
    base = simulation.total_cost
    current = Suggestion(
        "current", "the layout as simulated", base, 0.0, tuple(simulation.turns["cost_usd"]), tuple(requests)
    )
    moves = _move_suggestions(requests, profile, base)
    suggestions: list[Suggestion] = list(moves)
    notes: list[str] = []
    start = min(moves, key=lambda s: s.cost) if moves else current
    best = start if start.cost < current.cost else current
    if profile.mode != "automatic" and requests:
        notes += _gap_notes(requests, profile)
        notes += [f"an edit that fires every turn: {edit}" for edit in every_turn_edits(requests, profile)]
        layouts, chosen = _breakpoint_suggestions(requests, profile, base, start, current)
        suggestions += layouts
        if chosen.cost < best.cost:
            best = chosen
        suggestions += _ttl_suggestions(requests, profile, base)
        best = _keepalive(suggestions, current, best, profile, base, len(requests))
    if best is current:
        best = Suggestion(
            "advised",
            "keep the current layout (no alternative is cheaper)",
            base,
            0.0,
            current.turn_costs,
            current.requests,
        )
    elif best.kind != "advised":
        best = Suggestion("advised", best.text.split(":")[0], best.cost, best.saving, best.turn_costs, best.requests)
    return Advice(simulation, suggestions, best, notes)


def _move_suggestions(requests: list[Request], profile: ModelProfile, base: float) -> list[Suggestion]:
    """Each volatile block of the cached prefix moved to the end, most volatile first."""
    moves = []
    for label, share in sorted(volatile_labels(requests).items(), key=lambda kv: -kv[1]):
        if not any(b.label == label and b.layer != "messages" for r in requests for b in r.blocks):
            continue
        moved = _move_to_end(requests, label)
        moves.append(
            _suggest(
                "move_volatile",
                f"move `{label}` (changed in {share:.0%} of requests) out of "
                f"the cached system prompt to the end (placement notification)",
                moved,
                profile,
                base,
            )
        )
    return moves


def _gap_notes(requests: list[Request], profile: ModelProfile) -> list[str]:
    """How the pauses between requests compare with the default TTL."""
    gaps = [(b.at - a.at) for a, b in pairwise(requests)]
    if not gaps:
        return []
    short = profile.ttls[profile.default_ttl]
    over = sum(g >= short for g in gaps)
    median = statistics.median(g.total_seconds() for g in gaps) / 60
    return [
        f"gaps between requests: median {median:.1f} min, {over} of {len(gaps)} at least "
        f"{short.total_seconds() / 60:g} min"
    ]


def _breakpoint_suggestions(
    requests: list[Request], profile: ModelProfile, base: float, start: Suggestion, current: Suggestion
) -> tuple[list[Suggestion], Suggestion]:
    """The cheapest breakpoint layout on the current blocks (to show) and the cheapest of those and
    the layouts on top of the best move (to choose from)."""
    moved_label = start.text.split("`")[1] if start is not current else ""
    candidates = []
    for source, prefix in ((requests, ""), (list(start.requests), f"move `{moved_label}`; then ")):
        if source is requests or start is not current:
            for text, choose in _layouts(profile, volatile_labels(source)):
                candidates.append(
                    _suggest("breakpoints", f"{prefix}breakpoints {text}", _place(source, choose), profile, base)
                )
    chosen = min(candidates, key=lambda s: s.cost)
    shown = min((c for c in candidates if not c.text.startswith("move")), key=lambda s: s.cost)
    return [shown], chosen


def _ttl_suggestions(requests: list[Request], profile: ModelProfile, base: float) -> list[Suggestion]:
    """The other TTL on every current breakpoint."""
    suggestions = []
    for ttl in [t for t in ("5m", "1h") if t in profile.ttls]:
        if any(b.breakpoint and b.breakpoint != ttl for r in requests for b in r.blocks):

            def retimed(r: Request, ttl: str = ttl) -> dict[int, str]:
                return {i: ttl for i, b in enumerate(r.blocks) if b.breakpoint}

            relabelled = _place(requests, retimed)
            suggestions.append(_suggest("ttl", f"every breakpoint at {ttl}", relabelled, profile, base))
    return suggestions


def _keepalive(
    suggestions: list[Suggestion], current: Suggestion, best: Suggestion, profile: ModelProfile, base: float, n: int
) -> Suggestion:
    """Keep-alive pings on the current layout (appended to ``suggestions``) and on top of the best so
    far; returns the best, which the pings may improve."""
    every = profile.ttls[profile.default_ttl] - PING_MARGIN
    for layout, prefix in ((current, ""), (best, "with the above, ")):
        if layout is best and best is current:
            continue
        pinged, owner, bridged = _with_pings(list(layout.requests), profile)
        if not bridged:
            continue
        keep = _suggest(
            "keepalive",
            f"{prefix}keep-alive: {len(pinged) - n} pings every {_minutes(every)} through the {bridged} gaps that pay",
            pinged,
            profile,
            base,
            owner,
            n,
        )
        if layout is current:
            suggestions.append(keep)
        elif keep.cost < best.cost:
            best = Suggestion(
                "advised",
                f"{best.text.split(':')[0]}; {keep.text.split(':')[0]}",
                keep.cost,
                keep.saving,
                keep.turn_costs,
                keep.requests,
            )
    return best


def _minutes(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds % 60 else f"{seconds // 60}m"
