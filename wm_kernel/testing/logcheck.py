"""The stability check of a log of requests someone else's agent composed.

The perturbation checks (:mod:`wm_kernel.testing.stability`) recompose a scenario under changes
that must not move a cached byte; an imported log cannot be recomposed, since its agent is not
here. What a log does show is each request next to the one before: :func:`check_log` walks the
logged requests in send order and, for every request whose cached prefix (the tools and system
sections up to the log's last cache mark; ``scope="system"`` or ``"all"`` widens it) is not the
previous request's byte for byte, names the first section whose bytes moved: the one from which the
provider's cache could serve nothing. Sections are compared in the order the provider reads them,
position by position, so a section that appears, disappears or changes place counts as moved too.

The result is a :class:`~wm_kernel.testing.report.StabilityReport` with one check,
``logged_prefix``: one :class:`~wm_kernel.testing.report.Finding` per section that moved first
somewhere (at the first request where it did, with how many of the request pairs it broke), and its
cost twice: an hour of ``turns_per_hour`` requests on ``model`` with the section new on every
request (as the perturbation checks price it), and, in the note, what it cost in this log: the
log's requests through the cache simulator as logged and with that section's bytes held still.

>>> from pathlib import Path
>>> from wm_kernel.interop import import_log
>>> log = import_log(Path("notebooks/logs/parcelly_support.jsonl"))
>>> report = check_log(log)
>>> report.passed, report.flagged()
(False, {'logged_prefix': ['system[1] <customer_context>', 'tool:track_parcel']})
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from wm_kernel.cachesim.simulation import simulate
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.testing import mira
from wm_kernel.testing.cost import instability_cost, mira_instability_cost
from wm_kernel.testing.replay import Compose, SectionText
from wm_kernel.testing.report import CheckResult, Finding, StabilityReport

CHECK = "logged_prefix"
DESCRIPTION = "the cached prefix's bytes are the same from one logged request to the next"
SCOPES = ("cached", "system", "all")


def log_composes(log: ImportedSession) -> list[Compose]:
    """Each logged request as a :class:`~wm_kernel.testing.replay.Compose` (its turn, send time,
    and sections in the order the provider reads them)."""
    out = []
    for turn in log.turns:
        prompt = log.prompt_at(turn)
        at = log.request(turn).sent_at or datetime(2026, 1, 1, tzinfo=UTC)
        out.append(
            Compose(
                turn,
                at,
                tuple(SectionText(r.name, r.placement, r.cached, r.trinket, r.content) for r in prompt.sections),
            )
        )
    return out


def _in_scope(section: SectionText, scope: str) -> bool:
    if scope == "all":
        return True
    # "tools" only on MIRA's wire (wm_kernel.testing.mira.log_composes); other logs place tools in system
    return section.placement in ("system", "tools") and (section.cached or scope == "system")


def first_moved(before: Compose, after: Compose, scope: str) -> tuple[SectionText, int, str | None, str | None] | None:
    """The first in-scope section of ``before`` whose bytes ``after`` does not repeat at the same
    place: (that section, the first differing character, its text before, its text after), or None
    when ``after`` starts with ``before``'s in-scope sections."""
    old = [s for s in before.sections if _in_scope(s, scope)]
    new = [s for s in after.sections if _in_scope(s, scope)]
    for index, section in enumerate(old):
        other = new[index] if index < len(new) else None
        if other is not None and (other.name, other.content) == (section.name, section.content):
            continue
        if other is None or other.name != section.name:
            # gone, or another section in its place: compare with the same name wherever it is
            other = next((s for s in new if s.name == section.name), None)
        text = other.content if other is not None else None
        return section, len(os.path.commonprefix([section.content, text or ""])), section.content, text
    return None


def check_log(
    log: ImportedSession,
    *,
    model: str | None = None,
    turns_per_hour: int = 30,
    scope: str = "cached",
    max_turns: int | None = None,
    preset: str | None = None,
) -> StabilityReport:
    """Check that ``log``'s cached prefix stays byte-stable across its requests (module docstring).

    ``model`` prices the cost (default: the log's own, as ``log.cache_model()``); ``scope``: which
    sections count (``cached``, ``system`` or ``all``); ``max_turns``: check requests up to that
    turn only. A MIRA tap (``preset="mira"``, implied by its turns) is checked on MIRA's wire
    (:mod:`wm_kernel.testing.mira`): the tools and every system section are the cached prefix,
    the tools' order is checked too (``logged_tool_order``), and costs are a day's on that wire."""
    if not isinstance(log, ImportedSession):
        raise TypeError(f"check_log needs an imported log (wm_kernel.interop.import_log), got {type(log).__name__}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if isinstance(turns_per_hour, bool) or not isinstance(turns_per_hour, int) or turns_per_hour < 1:
        raise ValueError(f"turns_per_hour must be a positive int, got {turns_per_hour!r}")
    chosen = model or log.cache_model()
    on_mira = mira.is_tap(log)
    if preset is not None and (preset not in mira.PRESETS or not on_mira):
        raise ValueError(
            f"preset {preset!r} needs a MIRA tap (import_log('llm_requests.jsonl')), "
            f"this log's turns are {', '.join(sorted({r.dialect for r in log.requests}))}"
        )
    composes = mira.log_composes(log) if on_mira else log_composes(log)
    if max_turns is not None:
        composes = composes[: max_turns + 1]
    results = _not_applicable(composes, scope)
    if results is None:
        pairs = len(composes) - 1
        moves = _moves(composes, scope)
        findings = [
            _priced(log, composes, moves, finding, chosen, turns_per_hour, on_mira).with_counts(
                moves.count[finding.section], pairs
            )
            for finding in moves.first.values()
        ]
        status = "fail" if findings else "pass"
        detail = f"{pairs} request pairs compared" + ("" if log.requests[0].sent_at else "; the log has no send times")
        results = [CheckResult(CHECK, DESCRIPTION, status, detail, findings, composes=len(composes))]
        if on_mira:
            results.append(mira.log_tool_order(composes, chosen, turns_per_hour))
    return StabilityReport(results, model=chosen, turns_per_hour=turns_per_hour, scope=scope, composes=len(composes))


def _not_applicable(composes: list[Compose], scope: str) -> list[CheckResult] | None:
    """The one "not applicable" result when the log has nothing to compare in ``scope``, else None."""
    if len(composes) < 2:
        return [CheckResult(CHECK, DESCRIPTION, "not applicable", "the log has one request: nothing to compare")]
    if not any(_in_scope(section, scope) for compose in composes for section in compose.sections):
        why = (
            "no section of the log is in a cached prefix: its requests carry no cache mark (a Claude Code "
            "transcript holds neither cache_control marks nor the system prompt and tools), so no cached "
            "byte can move; scope='all' compares every section anyway"
            if scope == "cached"
            else f"no section of the log is in scope {scope!r}"
        )
        return [CheckResult(CHECK, DESCRIPTION, "not applicable", why, composes=len(composes))]
    return None


@dataclasses.dataclass(frozen=True)
class _Change:
    """A section's bytes before and after its first move (None: the section was absent)."""

    old: str | None
    new: str | None


@dataclasses.dataclass
class _Moves:
    """Per section that moved: its first move as a finding, its bytes then, and how often it moved."""

    first: dict[str, Finding] = dataclasses.field(default_factory=dict)
    first_change: dict[str, _Change] = dataclasses.field(default_factory=dict)
    count: Counter[str] = dataclasses.field(default_factory=Counter)


def _moves(composes: list[Compose], scope: str) -> _Moves:
    """Compare each request with the one before it, section by section in ``scope``."""
    moves = _Moves()
    for before, after in zip(composes, composes[1:], strict=False):
        found = first_moved(before, after, scope)
        if found is None:
            continue
        section, _, old, new = found  # (Finding.of_move finds the same offset)
        moves.count[section.name] += 1
        moves.first_change.setdefault(section.name, _Change(old, new))
        if section.name not in moves.first:
            labels = (f"turn {before.turn}", f"turn {after.turn}")
            moves.first[section.name] = Finding.of_move(
                CHECK, section, old, new, turn=after.turn, compose=after.turn, labels=labels
            )
    return moves


def _priced(
    log: ImportedSession,
    composes: list[Compose],
    moves: _Moves,
    finding: Finding,
    model: str,
    turns_per_hour: int,
    on_mira: bool,
) -> Finding:
    """``finding`` with its cost: a day's at ``turns_per_hour``, and this log's as logged and held still."""
    cost = (
        mira_instability_cost(composes, finding, model, turns_per_hour)
        if on_mira
        else instability_cost(composes, finding, model, turns_per_hour)
    )
    as_logged, held = _log_cost(log, finding.section, model, len(composes))
    note = f"in this log's {len(composes)} requests ${as_logged:.4f} as logged, ${held:.4f} with it held still"
    change = moves.first_change[finding.section]
    if on_mira and mira.follows_clock(change.old, change.new):
        note = f"the bytes that changed read as a time or a date (it may follow the clock); {note}"
    cost = dataclasses.replace(cost, note=f"{cost.note}; {note}" if cost.note else note)
    return finding.with_cost(cost)


def _log_cost(log: ImportedSession, section: str, model: str, count: int) -> tuple[float, float]:
    """The simulated input cost of the log's first ``count`` requests as logged, and with
    ``section``'s bytes held still (its blocks keep one key)."""
    if any(r.sent_at is None for r in log.requests):
        when = [datetime(2026, 1, 1, tzinfo=UTC)] * len(log.requests)
        requests = log.cache_requests(times=when)[:count]
    else:
        requests = log.cache_requests()[:count]
    held = [
        dataclasses.replace(
            r,
            blocks=[
                dataclasses.replace(b, key=f"{section}:held") if b.key.startswith(f"{section}:") else b
                for b in r.blocks
            ],
        )
        for r in requests
    ]
    return simulate(requests, model).total_cost, simulate(held, model).total_cost


def check_imported(
    subject: ImportedSession,
    *,
    perturbing: bool,
    model: str,
    turns_per_hour: int,
    scope: str | None,
    max_turns: int | None,
    preset: str | None,
    tools: Sequence[Mapping[str, Any]] | None,
) -> StabilityReport:
    """The check of an imported log: another agent's log cannot be recomposed under
    perturbations, so its requests are checked against each other
    (:func:`wm_kernel.testing.logcheck.check_log`). ``perturbing``: the call chose factories or
    checks, which is a ValueError here, as ``tools`` is."""
    from wm_kernel.cachesim.models import get_model

    if perturbing:
        raise ValueError(
            "factories, skip and only choose perturbation checks of a scenario; an imported "
            "log is checked request against request (check 'logged_prefix')"
        )
    if tools is not None:
        raise ValueError(
            "tools= is for a session's tool_set_order check; an imported log's tools are the ones it logged"
        )
    get_model(model)
    return check_log(
        subject,
        model=model,
        turns_per_hour=turns_per_hour,
        scope=scope or "cached",
        max_turns=max_turns,
        preset=preset,
    )


__all__ = ["check_log", "check_imported", "log_composes", "first_moved", "CHECK", "SCOPES"]
