"""The ``moving_section`` check of the MIRA preset: the system section that the scenario's own
steps rewrite while MIRA's one-hour block is warm.

The perturbations ask whether a section moves when nothing should. A section can also move because
its data does, on a schedule of its own: MIRA HEAD's LocationTrinket sits in the cached system
block, and the front end POSTs a new forecast every hour. On MIRA's wire every system section is
under one 1-hour breakpoint that every request reads (and so keeps warm), so a compose whose system
text differs from the one before it, less than an hour later, rewrites the whole block and all that
follows it. The section that differs first, in the order the block is written, is the one that
moved it; a later one was in the part rewritten anyway.

A section that moved the warm block at two composes or more fails the check, priced on MIRA's wire
over a day as a rewrite at the interval it moved at in the scenario. A section that moved it once
(a reminder added, a segment collapsed) is what a conversation does: the detail names it.

>>> from datetime import UTC
>>> from wm_kernel.testing.replay import SectionText
>>> def at(minute, forecast):
...     sections = (SectionText("base_prompt", "system", True, None, "You help."),
...                 SectionText("location_context", "system", True, "LocationTrinket", forecast))
...     return Compose(minute // 20, datetime(2026, 11, 30, 9, tzinfo=UTC) + timedelta(minutes=minute), sections)
>>> composes = [at(m, f"Forecast {m // 60}") for m in range(0, 140, 20)]
>>> result = moving_section(composes, "system", set(), None, 30)
>>> result.status, result.detail
('fail', 'location_context (LocationTrinket) rewrote the warm block at 2 of 6 composes, every 1 h')
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from datetime import datetime, timedelta

from wm_kernel.testing import mira
from wm_kernel.testing.cost import mira_instability_cost
from wm_kernel.testing.replay import Compose, SectionText
from wm_kernel.testing.report import CheckResult, Finding
from wm_kernel.testing.stability.compare import in_scope

__all__ = ["CHECK", "WARM", "moving_section"]

#: The check's name (``skip=`` / ``only=``), one of the MIRA preset's.
CHECK = "moving_section"
#: How long MIRA's system block stays cached after a request reads it (its 1-hour breakpoint).
WARM = timedelta(hours=1)


def _first_move(
    before: Compose, after: Compose, scope: str, masked: set[str]
) -> tuple[SectionText, str | None, str | None] | None:
    """The section at which ``after``'s block first differs from ``before``'s (in scope, masked
    ones left out), with its two texts (None: absent); None when the block is the same."""
    old = [s for s in before.sections if in_scope(s.placement, s.cached, scope) and s.name not in masked]
    new = [s for s in after.sections if in_scope(s.placement, s.cached, scope) and s.name not in masked]
    for index in range(max(len(old), len(new))):
        a = old[index] if index < len(old) else None
        b = new[index] if index < len(new) else None
        if a is not None and b is not None and (a.name, a.content) == (b.name, b.content):
            continue
        if b is not None and (a is None or a.name == b.name or b.name not in {s.name for s in old}):
            text = before.section(b.name)
            return b, None if text is None or text not in old else text.content, b.content
        assert a is not None
        text = after.section(a.name)
        return a, a.content, None if text is None or text not in new else text.content
    return None


def _interval(delta: timedelta) -> str:
    seconds = round(delta.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def _owner(section: Finding) -> str:
    return f"{section.section} ({section.trinket})" if section.trinket else section.section


def _warm_moves(
    composes: Sequence[Compose], scope: str, masked: set[str]
) -> tuple[dict[str, Finding], dict[str, list[datetime]], int]:
    """Each section that moved the warm block, by name: its first move (a :class:`Finding`, the
    two texts from where they differ) and the times of every move; and how many composes came
    while the block was warm (within :data:`WARM` of the one before), the ones compared."""
    first: dict[str, Finding] = {}
    moves: dict[str, list[datetime]] = {}
    warm = 0
    for index in range(1, len(composes)):
        before, after = composes[index - 1], composes[index]
        if after.at - before.at > WARM:
            continue  # the block had expired: written afresh whatever moved
        warm += 1
        moved = _first_move(before, after, scope, masked)
        if moved is None:
            continue
        where, old, new = moved
        moves.setdefault(where.name, []).append(after.at)
        if where.name not in first:
            labels = (f"turn {before.turn} at {before.at:%H:%M}", f"turn {after.turn} at {after.at:%H:%M}")
            first[where.name] = Finding.of_move(CHECK, where, old, new, turn=after.turn, compose=index, labels=labels)
    return first, moves, warm


def moving_section(
    composes: Sequence[Compose],
    scope: str,
    masked: set[str],
    model: str | None,
    turns_per_hour: int,
    priced: Sequence[Compose] | None = None,
) -> CheckResult:
    """The ``moving_section`` check over a replay's ``composes`` (module docstring); each failing
    section priced on ``model`` over ``priced`` (default ``composes``; no price when ``model`` is
    None)."""
    description = mira.CHECKS[CHECK]
    if len(composes) < 2:
        return CheckResult(CHECK, description, "not applicable", "fewer than two composes")
    first, moves, warm = _warm_moves(composes, scope, masked)
    if not warm:
        return CheckResult(CHECK, description, "not applicable", "no compose came within an hour of the one before it")
    once = [f"{_owner(f)} at turn {f.turn}" for name, f in first.items() if len(moves[name]) == 1]
    once_note = f"moved it once: {', '.join(once)}" if once else ""
    findings = []
    for name, finding in first.items():
        times = moves[name]
        if len(times) < 2:
            continue
        every = timedelta(
            seconds=statistics.median((b - a).total_seconds() for a, b in zip(times, times[1:], strict=False))
        )
        finding = finding.with_counts(len(times), warm)
        if model is not None:
            requests = max(1, round(every / (timedelta(hours=1) / turns_per_hour)))
            cost = mira_instability_cost(priced or composes, finding, model, turns_per_hour, every=requests)
            note = f"priced as a rewrite every {_interval(every)}, as in the scenario"
            cost = dataclasses.replace(cost, note=f"{note}; {cost.note}" if cost.note else note)
            finding = finding.with_cost(cost)
        findings.append((finding, every))
    if not findings:
        detail = "; ".join(x for x in ("no section rewrote the warm block twice", once_note) if x)
        return CheckResult(CHECK, description, "pass", detail, composes=len(composes))
    detail = "; ".join(
        [
            *(
                f"{_owner(f)} rewrote the warm block at {f.moved} of {f.compared} composes, every {_interval(every)}"
                for f, every in findings
            ),
            *([once_note] if once_note else []),
        ]
    )
    return CheckResult(CHECK, description, "fail", detail, [f for f, _ in findings], composes=len(composes))
