"""Token budgets: when a prompt would be too long, drop the lowest-priority sections (then items).

A WorkingMemory with ``token_budget = N`` fits every compose into N tokens, counted with its
:class:`~wm_kernel.tokens.TokenCounter`. Each section has a priority (its trinket's ``priority``
trait; the base prompt and any section at :data:`~wm_kernel.core.trinket_shape.NEVER_DROP` are never dropped).
Sections are ranked by priority, ties broken by prompt order (the earlier section ranks higher, so
the start of the prompt, which caches, is the last to go). The fit keeps the sections ranked at or
above the **lowest cutoff that fits**, found by a binary search over the ranks with each section
counted once (a section whose text did not change is never tokenized again). The highest-ranked
section the cut would drop, if its trinket ranks items (``ranked_items()``), keeps as many of its
best items as still fit instead of going whole. Dropped sections are listed in the prompt's
``omitted`` with reason ``"over budget"``, the tokens they would have cost and their priority.

Cost model. A section costs its text's tokens plus the joiner that attaches it (the system
separator ``"\\n\\n---\\n\\n"``, the blank line after a HUD part); the notification centre's frame
costs its tokens once while any notification section is kept. That is the composed prompt's size up
to the BPE merges across joins (a few tokens); ``BudgetReport.total`` is the estimate.

Cache-stable cuts (``budget_step = S``, Prompt Poet's rule). The *overflow* is how far the whole
prompt is over the budget; its *band* is ``ceil(overflow / S)``. A new cut frees at least
``band * S`` tokens (up to S more than needed), and it moves only when the overflow crosses a
multiple of S: while the overflow stays in the band the cut was made in, the cut is kept as long as
it still fits. One band of hysteresis below keeps an overflow that hovers around a multiple of S
from flipping the cut back and forth: the cut is also kept in the band just below, and sections
come back once the overflow falls two bands (or the whole prompt fits). Small changes in section
sizes then leave the kept set, and so the cached prefix, byte-stable from turn to turn.

If the never-dropped sections alone exceed the budget, :class:`BudgetError` (a ValueError) names
the sizes and nothing is composed.

Estimated counts (a counter that is not the model's own, e.g. Claude's ≈ o200k × 1.25 −10%/+20%)
are fitted on their upper bound: the prompt is cut so that its count's interval stays within the
budget (``counter.upper(total) <= budget``), and the report says so. Exact counts fit as counted.

Public API
----------
``TokenBudget``            the per-WorkingMemory fitter (``WorkingMemory.budget``): counter and cut
``BudgetReport``           what a compose kept and dropped (``ComposedPrompt.budget``)
``TrimmedSection``         a section that lost items to the budget
``BudgetError``            the never-dropped sections alone are over the budget
``lowest_cut(tokens, priorities, budget, fixed=0)``   the pure fit, for tests and notebooks
``step_band(overflow, step)``                         the band of an overflow

Examples
--------
>>> sorted(lowest_cut([40, 30, 20, 10], [1, 3, 2, 3], budget=45))
[1, 3]
>>> step_band(0, 50), step_band(1, 50), step_band(50, 50), step_band(51, 50)
(0, 1, 1, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from traitlets import TraitType

from wm_kernel.core.composer import DEFAULT_HUD_TITLE, DEFAULT_NAMESPACE, SystemPromptComposer
from wm_kernel.core.composer.hud_frame import RULE
from wm_kernel.core.composer.placement_build import SECTION_SEPARATOR
from wm_kernel.core.prompt import BudgetReport, OmittedSection, TrimmedSection
from wm_kernel.core.trinket_shape import DEFAULT_PRIORITY, NEVER_DROP, Trinket
from wm_kernel.tokens import TokenCounter

#: The ``reason`` of an OmittedSection that a token budget dropped.
OVER_BUDGET = "over budget"
#: What joins a HUD part to the next (counted with the part).
_HUD_JOINER = "\n\n"


class BudgetError(ValueError):
    """The sections a budget may not drop (the base prompt, NEVER_DROP) are over the budget."""


class TokenLimit(TraitType[int | None, int | None]):
    """A trait holding a positive int or None; anything else is one TypeError or ValueError and
    the old value stays."""

    info_text = "a positive int or None"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(None, allow_none=True, **kwargs)

    def validate(self, obj: Any, value: Any) -> int | None:
        return check_limit(value, f"{type(obj).__name__}.{self.name}")


def check_limit(value: object, what: str) -> int | None:
    """``value`` if it is None or a positive int; else a one-line TypeError or ValueError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be a positive int or None, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{what} must be a positive int or None, got {value}")
    return value


def step_band(overflow: int, step: int) -> int:
    """``ceil(overflow / step)`` for a positive overflow, else 0."""
    return -(-overflow // step) if overflow > 0 else 0


def _search(costs: Sequence[int], limit: int) -> int:
    """The smallest ``i`` with ``costs[i] <= limit`` (``costs`` never grows with ``i``)."""
    lo, hi = 0, len(costs) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if costs[mid] <= limit:
            hi = mid
        else:
            lo = mid + 1
    return lo


def lowest_cut(tokens: Sequence[int], priorities: Sequence[int], budget: int, *, fixed: int = 0) -> frozenset[int]:
    """Indices (in prompt order) of the sections a budget keeps, without items or frames.

    Keeps every section ranked at or above the lowest cutoff that fits ``fixed + kept tokens`` into
    ``budget``; rank is priority, then prompt order (earlier ranks higher). Sections at NEVER_DROP
    count into ``fixed``. BudgetError when even dropping everything else does not fit.
    """
    if len(tokens) != len(priorities):
        raise ValueError("tokens and priorities must have the same length")
    keep_always = [i for i, p in enumerate(priorities) if p >= NEVER_DROP]
    floor = fixed + sum(tokens[i] for i in keep_always)
    if floor > budget:
        raise BudgetError(f"the never-dropped sections need {floor} tokens, over the budget of {budget}")
    ranked = sorted((i for i, p in enumerate(priorities) if p < NEVER_DROP), key=lambda i: (priorities[i], -i))
    costs = [floor] * (len(ranked) + 1)
    for j in range(len(ranked) - 1, -1, -1):
        costs[j] = costs[j + 1] + tokens[ranked[j]]
    cut = _search(costs, budget)
    return frozenset(keep_always + ranked[cut:])


@dataclass(slots=True)
class _Candidate:
    name: str
    placement: str
    trinket: Trinket | None
    trinket_name: str | None
    priority: int
    position: int
    cost: int = 0


@dataclass(frozen=True, slots=True)
class _Trim:
    """A section kept in part: the candidate, how many of its best items are kept, the text that
    keeps them, and what that text costs (with its joiner, and the HUD frame when it brings it)."""

    candidate: _Candidate
    keep: int
    text: str
    cost: int


@dataclass(frozen=True, slots=True)
class _Held:
    """The cut a compose with ``budget_step`` made, kept so the next one can reuse it: the step band,
    the sections it dropped, and the trimmed section with the items it kept."""

    band: int
    dropped: frozenset[str]
    trimmed: tuple[str, int] | None


@dataclass(slots=True)
class _Ranking:
    """The sections a budget may drop, in dropping order, and what the prompt costs as they go:
    ``costs[i]`` is the prompt's tokens when ``ranked[i:]`` are kept (never grows with ``i``), and
    ``hud_kept[i]`` whether a notification section is then still there (the HUD frame with it)."""

    ranked: list[_Candidate]
    costs: list[int]
    hud_kept: list[bool]
    frame: int

    def total(self, cut: int, trim: _Trim | None) -> int:
        return self.costs[cut] + (trim.cost if trim is not None else 0)


class TokenBudget:
    """Fits a composer's sections into a budget; one per WorkingMemory (``wm.budget``).

    It keeps the token count of each section's last text (an unchanged section is looked up, never
    tokenized again) and, for ``budget_step``, the previous compose's cut.

    Parameters
    ----------
    counter:
        The TokenCounter to count with (default: one over ``default_tokenizer()``, made on first
        use). A Session shares its history's counter.
    """

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self._counter = counter
        # section -> (the text object last counted, its cost): identity hits skip even hashing
        self._costs: dict[str, tuple[str, int]] = {}
        # the last cut made with a step
        self._held: _Held | None = None
        # without a budget the report is priorities and placements only: the last one, and what
        # it was made from (layout, held sections in order, each trinket's section and priority)
        self._plain: tuple[tuple[Any, ...], BudgetReport] | None = None

    @property
    def counter(self) -> TokenCounter:
        """The TokenCounter budgets count with; assigning another forgets the cached counts."""
        if self._counter is None:
            self._counter = TokenCounter()
        return self._counter

    @counter.setter
    def counter(self, counter: TokenCounter) -> None:
        if not isinstance(counter, TokenCounter):
            raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        self._counter = counter
        self._costs.clear()

    def _cost(self, name: str, text: str, joiner: str) -> int:
        known = self._costs.get(name)
        if known is not None and known[0] is text:
            return known[1]
        count = self.counter.count
        cost = count(text) + (count(joiner) if joiner else 0)
        self._costs[name] = (text, cost)
        return cost

    def _joiner(self, placement: str, name: str) -> str:
        if placement == "system":
            return "" if name == "base_prompt" else SECTION_SEPARATOR
        return _HUD_JOINER if placement == "notification" else ""

    # -- the fit
    def apply(
        self,
        composer: SystemPromptComposer,
        trinkets: Iterable[Trinket],
        *,
        budget: int | None,
        step: int | None = None,
        revision: int | None = None,
    ) -> BudgetReport:
        """Drop and trim ``composer``'s held sections so the prompt fits ``budget`` and report it.

        Raises BudgetError, with the composer untouched, when the never-dropped sections alone are
        over the budget. Without a budget it only reports the priorities (the same report object
        while the layout, the held sections and the priorities stay the same; ``revision``, when
        given, changes whenever the trinkets or their priorities do, and spares reading them)."""
        trinkets = list(trinkets)
        if budget is None:
            return self._plain_report(composer, trinkets, revision)
        candidates = self._candidates(composer, trinkets)
        counter = self.counter
        estimate = not counter.exact
        limit = _estimate_limit(counter, budget) if estimate else budget
        ranking = self._rank(composer, candidates, budget, limit)
        full = ranking.costs[0]
        report = BudgetReport(
            budget=budget,
            step=step,
            priorities={c.name: c.priority for c in candidates},
            placements={c.name: c.placement for c in candidates},
            tokens={c.name: c.cost for c in candidates},
            total=full,
            full=full,
            tokenizer=counter.label,
            upper=counter.upper(full) if estimate else None,
        )
        if full <= limit:
            self._held = None
            return report
        # from here on the fit is on the count whose upper bound is the budget
        band = step_band(full - limit, step) if step is not None else 0
        cut, trim, held = self._choose(ranking, limit, step, band)
        dropped, trimmed = self._cut(composer, ranking.ranked, cut, trim)
        if step is not None and not held:
            self._held = _Held(
                band,
                frozenset(c.name for c in ranking.ranked[:cut]),
                (trim.candidate.name, trim.keep) if trim is not None else None,
            )
        kept_whole = [c.priority for c in ranking.ranked[cut:]]
        total = ranking.total(cut, trim)
        return replace(
            report,
            total=total,
            dropped=dropped,
            trimmed=trimmed,
            band=band,
            cutoff=min(kept_whole) if kept_whole else None,
            held=held,
            upper=counter.upper(total) if estimate else None,
        )

    def _plain_report(
        self, composer: SystemPromptComposer, trinkets: list[Trinket], revision: int | None = None
    ) -> BudgetReport:
        """The report without a budget: priorities and placements, reused while nothing changed."""
        self._held = None
        priorities = revision if revision is not None else tuple([(t.variable_name, t.priority) for t in trinkets])
        key = (composer.layout, tuple(composer.section_names), priorities)
        plain = self._plain
        if plain is not None and plain[0] == key:
            return plain[1]
        candidates = self._candidates(composer, trinkets)
        report = BudgetReport(
            priorities={c.name: c.priority for c in candidates}, placements={c.name: c.placement for c in candidates}
        )
        self._plain = (key, report)
        return report

    def _candidates(self, composer: SystemPromptComposer, trinkets: list[Trinket]) -> list[_Candidate]:
        """Every held section in output order, with its trinket and priority (the base prompt is
        never dropped; a section with no trinket has the default priority)."""
        by_section = {t.variable_name: t for t in trinkets}
        candidates = []
        for position, (name, placement) in enumerate(composer.output_order()):
            trinket = by_section.get(name)
            if name == "base_prompt":
                priority = NEVER_DROP
            else:
                priority = trinket.priority if trinket is not None else DEFAULT_PRIORITY
            trinket_name = trinket.name if trinket is not None else composer.get_entry(name)[2]
            candidates.append(_Candidate(name, placement, trinket, trinket_name, priority, position))
        return candidates

    def _rank(self, composer: SystemPromptComposer, candidates: list[_Candidate], budget: int, limit: int) -> _Ranking:
        """Count every candidate and rank the droppable ones; BudgetError when the never-dropped
        sections alone are over ``limit``."""
        counter = self.counter
        for c in candidates:
            c.cost = self._cost(c.name, composer.get_entry(c.name)[0], self._joiner(c.placement, c.name))
        frame = counter.count(_hud_frame(composer))
        fixed_list = [c for c in candidates if c.priority >= NEVER_DROP]
        fixed = sum(c.cost for c in fixed_list)
        fixed_hud = any(c.placement == "notification" for c in fixed_list)
        if fixed_hud:
            fixed += frame
        if fixed > limit:
            sizes = ", ".join(f"{c.name} {c.cost}" for c in fixed_list)
            bound = f" (up to {counter.upper(fixed)}, {counter.label})" if not counter.exact else ""
            raise BudgetError(
                f"the sections a budget never drops need {fixed} tokens{bound} ({sizes}"
                + (f", HUD frame {frame}" if fixed_hud else "")
                + f"), over the token budget of {budget}; nothing was composed"
            )
        ranked = sorted((c for c in candidates if c.priority < NEVER_DROP), key=lambda c: (c.priority, -c.position))
        costs = [fixed] * (len(ranked) + 1)
        hud_kept = [fixed_hud] * (len(ranked) + 1)
        for j in range(len(ranked) - 1, -1, -1):
            c = ranked[j]
            hud_kept[j] = hud_kept[j + 1] or c.placement == "notification"
            costs[j] = costs[j + 1] + c.cost + (frame if hud_kept[j] and not hud_kept[j + 1] else 0)
        return _Ranking(ranked, costs, hud_kept, frame)

    def _choose(self, ranking: _Ranking, budget: int, step: int | None, band: int) -> tuple[int, _Trim | None, bool]:
        """Where to cut (how many ranked sections go), the section trimmed at the cut, and whether
        that is the previous compose's cut held (``budget_step``)."""
        full = ranking.costs[0]
        if step is not None and self._held is not None and self._held.band - 1 <= band <= self._held.band:
            reused = self._reuse(ranking, budget)
            if reused is not None:
                return reused[0], reused[1], True
        target = budget
        if step is not None and full - band * step >= ranking.costs[-1]:
            # free whole steps; when even dropping everything frees less, fit the budget itself
            target = full - band * step
        cut = _search(ranking.costs, target)
        return cut, self._trim(ranking, cut, target), False

    @staticmethod
    def _cut(
        composer: SystemPromptComposer, ranked: list[_Candidate], cut: int, trim: _Trim | None
    ) -> tuple[tuple[OmittedSection, ...], tuple[TrimmedSection, ...]]:
        """Change the composer (only now): drop ``ranked[:cut]``, put the trimmed text in place."""
        dropped = []
        for c in ranked[:cut]:
            if trim is not None and c is trim.candidate:
                continue
            composer.remove_section(c.name)
            dropped.append(OmittedSection(c.name, c.trinket_name, OVER_BUDGET, tokens=c.cost, priority=c.priority))
        if trim is None:
            return tuple(dropped), ()
        c = trim.candidate
        composer.add_section(c.name, trim.text, composer.get_entry(c.name)[1], c.trinket_name)
        total_items = len(c.trinket.ranked_items()) if c.trinket is not None else trim.keep
        return tuple(dropped), (TrimmedSection(c.name, c.trinket_name, trim.keep, total_items, trim.cost, c.cost),)

    def _trim(self, ranking: _Ranking, cut: int, limit: int, keep: int | None = None) -> _Trim | None:
        """The highest-ranked dropped section with as many of its best items as fit in ``limit``
        (exactly ``keep`` items when given), or None."""
        ranked, costs, hud_kept, frame = ranking.ranked, ranking.costs, ranking.hud_kept, ranking.frame
        if cut == 0:
            return None
        c = ranked[cut - 1]
        if c.trinket is None:
            return None
        try:
            items = len(c.trinket.ranked_items())
        except Exception:  # a trinket that cannot rank now is kept or dropped whole
            return None
        if items < 2:
            return None
        joiner = self._joiner(c.placement, c.name)
        extra = frame if c.placement == "notification" and not hud_kept[cut] else 0
        room = limit - costs[cut] - extra
        found: _Trim | None = None

        def cost_of(k: int) -> tuple[str, int] | None:
            try:
                text = c.trinket.content_keeping(k)  # type: ignore[union-attr]
            except Exception:
                return None
            if not isinstance(text, str) or not text.strip():
                return None
            count = self.counter.count
            return text, count(text) + (count(joiner) if joiner else 0) + extra

        if keep is not None:
            got = cost_of(keep) if 1 <= keep < items else None
            if got is None or got[1] - extra > room:
                return None
            return _Trim(c, keep, got[0], got[1])
        lo, hi = 1, items - 1  # items kept; all of them is the whole section, which did not fit
        while lo <= hi:
            mid = (lo + hi) // 2
            got = cost_of(mid)
            if got is not None and got[1] - extra <= room:
                found = _Trim(c, mid, got[0], got[1])
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def _reuse(self, ranking: _Ranking, budget: int) -> tuple[int, _Trim | None] | None:
        """The previous cut, if it is still a cut of the current ranking and still fits."""
        assert self._held is not None
        ranked, dropped, trimmed = ranking.ranked, self._held.dropped, self._held.trimmed
        cut = len(dropped)
        if cut > len(ranked) or {c.name for c in ranked[:cut]} != dropped:
            return None
        trim = None
        if trimmed is not None:
            if cut == 0 or ranked[cut - 1].name != trimmed[0]:
                return None
            # the same number of items if it still has more; fewer if it has fewer now; else the
            # section goes whole (still the same cut, so the sections above it stay as they were)
            trinket = ranked[cut - 1].trinket
            items = len(trinket.ranked_items()) if trinket is not None else 0
            keep = min(trimmed[1], items - 1)
            if keep >= 1:
                trim = self._trim(ranking, cut, budget, keep=keep)
        if ranking.total(cut, trim) > budget:
            return None
        return cut, trim


def _estimate_limit(counter: TokenCounter, budget: int) -> int:
    """The largest count whose upper bound is within ``budget`` (estimates are cut on it)."""
    band = counter.band
    limit = int(budget / (1 + band.high)) if band is not None else budget
    while counter.upper(limit + 1) <= budget:
        limit += 1
    while limit > 0 and counter.upper(limit) > budget:
        limit -= 1
    return limit


def _hud_frame(composer: SystemPromptComposer) -> str:
    """The notification centre's text with no parts: what it costs beyond them."""
    tag = f"{composer.namespace}:hud"
    return f"{RULE}\n{composer.hud_title}\n{RULE}\n<{tag}>\n</{tag}>\n{RULE}"


def budgeted_tokens(composed: Any, counter: TokenCounter) -> int:
    """What a token budget counts of ``composed`` (a ComposedPrompt): each section with the
    joiner that attaches it, and the notification centre's frame when it holds a part, exactly as
    :meth:`TokenBudget.apply` sums them. The growth forecast compares this with the budget."""
    namespace, title = composed.hud_frame or (DEFAULT_NAMESPACE, DEFAULT_HUD_TITLE)
    count = counter.count
    total = 0
    hud = False
    for record in composed.sections:
        if record.placement == "system":
            joiner = "" if record.name == "base_prompt" else SECTION_SEPARATOR
        else:
            joiner = _HUD_JOINER if record.placement == "notification" else ""
        hud = hud or record.placement == "notification"
        total += count(record.content) + (count(joiner) if joiner else 0)
    if hud:
        tag = f"{namespace}:hud"
        total += count(f"{RULE}\n{title}\n{RULE}\n<{tag}>\n</{tag}>\n{RULE}")
    return total
