"""What the stability checker reports: a result per check, a finding per moved section, its cost.

``str(report)`` is the text a terminal (or a CI log) shows; a notebook shows the same as a table
(``_repr_html_``, every text escaped).
"""

from __future__ import annotations

import dataclasses
import html
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.style import PROMPT_PRE, scrolling, tint

if TYPE_CHECKING:
    from wm_kernel.testing.replay import SectionText

#: Row backgrounds by status: the theme's colours, translucent over the page, so the page's own
#: text colour reads on them in the light and the dark theme alike.
ROW_TINTS = {
    "pass": tint("--jp-success-color1", "#388e3c", 18),
    "fail": tint("--jp-error-color1", "#d32f2f", 18),
    "other": tint("--jp-layout-color3", "#bdbdbd", 30),
}

#: How many characters of context an excerpt shows before and after the first difference.
BEFORE, AFTER = 24, 36
STATUSES = ("pass", "fail", "not applicable", "timed out", "error")


def excerpt(text: str | None, offset: int) -> str:
    """The characters of ``text`` around ``offset``, as a Python string literal (newlines and other
    invisible characters shown escaped), with ``…`` where it was cut; ``(absent)`` for None.

    >>> excerpt("<now>09:00:17</now>", 12)
    "'<now>09:00:17</now>'"
    >>> excerpt("x" * 40 + "tail", 40)
    "…'xxxxxxxxxxxxxxxxxxxxxxxxtail'"
    """
    if text is None:
        return "(absent)"
    start = max(0, offset - BEFORE)
    end = min(len(text), offset + AFTER)
    return ("…" if start else "") + repr(text[start:end]) + ("…" if end < len(text) else "")


@dataclass(frozen=True)
class Cost:
    """``hours`` (one, or 24 for a day) of ``turns_per_hour`` requests on ``model``: input cost
    with the section's bytes fixed and with them new on every request, the hit rates of both, and
    the wire the requests were laid out on, as a description names it ("": the kit's own cost
    layout; ``"MIRA's wire"``: MIRA's four breakpoints, docs/mira-wire.md)."""

    model: str
    turns_per_hour: int
    stable_usd: float
    unstable_usd: float
    stable_hit_rate: float
    unstable_hit_rate: float
    prefix_tokens: int
    note: str = ""
    hours: int = 1
    wire: str = ""

    @property
    def extra_usd(self) -> float:
        """What the instability adds over the ``hours`` simulated (US dollars)."""
        return self.unstable_usd - self.stable_usd

    @property
    def per_day_usd(self) -> float:
        """What the instability adds in a day at this rate (US dollars)."""
        return self.extra_usd * 24 / self.hours

    def describe(self) -> str:
        period = "a day" if self.hours == 24 else "an hour" if self.hours == 1 else f"in {self.hours} hours"
        wire = f" on {self.wire}" if self.wire else ""
        text = (
            f"${self.extra_usd:.4f} {period} more ({self.turns_per_hour} turns an hour on "
            f"{self.model}{wire}: ${self.stable_usd:.4f} -> ${self.unstable_usd:.4f}, hit rate "
            f"{self.stable_hit_rate:.1%} -> {self.unstable_hit_rate:.1%})"
        )
        return f"{text}; {self.note}" if self.note else text


@dataclass(frozen=True)
class Finding:
    """A section whose text moved under a check: first at compose ``compose`` (session ``turn``),
    first differing character ``offset``, the two texts there (``expected`` under ``labels[0]``,
    ``actual`` under ``labels[1]``), in how many of the ``compared`` composes it moved, its cost."""

    check: str
    section: str
    trinket: str | None
    placement: str
    cached: bool
    turn: int
    compose: int
    offset: int
    expected: str
    actual: str
    labels: tuple[str, str]
    moved: int = 1
    compared: int = 1
    cost: Cost | None = None

    @classmethod
    def of_move(
        cls,
        check: str,
        where: SectionText,
        old: str | None,
        new: str | None,
        *,
        turn: int,
        compose: int,
        labels: tuple[str, str],
    ) -> Finding:
        """The finding of ``where``'s section, whose text went from ``old`` to ``new`` (None:
        absent) under ``check``: the first character the two differ at, and each text around it.

        >>> from wm_kernel.testing.replay import SectionText
        >>> where = SectionText("clock", "system", True, "TimeManager", "<t>09:00</t>")
        >>> f = Finding.of_move("clock", where, "<t>09:00</t>", "<t>09:05</t>", turn=1, compose=1,
        ...                     labels=("before", "after"))
        >>> f.offset, f.expected, f.actual
        (7, "'<t>09:00</t>'", "'<t>09:05</t>'")
        """
        offset = len(os.path.commonprefix([old or "", new or ""]))
        return cls(
            check=check,
            section=where.name,
            trinket=where.trinket,
            placement=where.placement,
            cached=where.cached,
            turn=turn,
            compose=compose,
            offset=offset,
            expected=excerpt(old, offset),
            actual=excerpt(new, offset),
            labels=labels,
        )

    def with_counts(self, moved: int, compared: int) -> Finding:
        return dataclasses.replace(self, moved=moved, compared=compared)

    def with_cost(self, cost: Cost) -> Finding:
        return dataclasses.replace(self, cost=cost)

    @property
    def where(self) -> str:
        owner = f" ({self.trinket})" if self.trinket else ""
        kind = "cached " if self.cached else ""
        return f"section {self.section!r}{owner}, {kind}{self.placement}"

    def lines(self) -> list[str]:
        width = max(len(self.labels[0]), len(self.labels[1]))
        out = [
            f"{self.check}: {self.where}: moved at turn {self.turn} (compose {self.compose}; "
            f"{self.moved} of {self.compared} composes), first difference at character {self.offset}",
            f"    {self.labels[0]:<{width}}  {self.expected}",
            f"    {self.labels[1]:<{width}}  {self.actual}",
        ]
        if self.cost is not None:
            out.append(f"    cost: {self.cost.describe()}")
        return out


@dataclass(frozen=True)
class EveryTurnSection:
    """A cached section new at every turn of the replay (``changed`` of ``compared`` turns after
    the first): an edit that fires every turn (``wm_kernel.testing.stability.every_turn``). It
    starts ``offset`` characters into a cached prefix of ``prefix_chars``."""

    section: str
    trinket: str | None
    placement: str
    changed: int
    compared: int
    offset: int
    prefix_chars: int

    def line(self) -> str:
        owner = f" ({self.trinket})" if self.trinket else ""
        return (
            f"every turn: section {self.section!r}{owner}, cached {self.placement}: new at each of the "
            f"{self.compared} turns after the first, at character {self.offset:,} of the {self.prefix_chars:,}-"
            f"character cached prefix: each change writes the {self.prefix_chars - self.offset:,} characters "
            "from it on again and saves nothing, so it never pays back (break-even infinite)"
        )


@dataclass
class CheckResult:
    """One check: its status (one of :data:`STATUSES`), a note (why not applicable, an error, a
    replay stopped early), its findings, how many composes it compared, how long it took."""

    name: str
    description: str
    status: str
    detail: str = ""
    findings: list[Finding] = field(default_factory=list)
    composes: int = 0
    seconds: float = 0.0


class StabilityReport:
    """Every check's result; ``passed`` is True when at least one check compared the bytes and none
    failed, broke down or timed out (or when every check is not applicable: nothing could move). A
    report where nothing was compared (every check timed out, or none ran) is not passed: its
    verdict is "inconclusive"."""

    def __init__(
        self,
        results: list[CheckResult],
        *,
        model: str,
        turns_per_hour: int,
        scope: str,
        composes: int,
        baseline_seconds: float = 0.0,
        stopped: str | None = None,
    ) -> None:
        self.results = results
        self.model = model
        self.turns_per_hour = turns_per_hour
        self.scope = scope
        self.composes = composes
        self.baseline_seconds = baseline_seconds
        self.stopped = stopped
        #: cached sections new at every turn (edits that fire every turn); they leave the verdict be
        self.every_turn: list[EveryTurnSection] = []

    @property
    def passed(self) -> bool:
        if any(r.status in ("fail", "error", "timed out") for r in self.results):
            return False
        return any(r.status == "pass" for r in self.results) or self._all_not_applicable

    @property
    def _all_not_applicable(self) -> bool:
        return bool(self.results) and all(r.status == "not applicable" for r in self.results)

    @property
    def verdict(self) -> str:
        """``stable``, ``UNSTABLE`` (a check failed), ``not applicable`` (nothing could move) or
        ``inconclusive`` (a check timed out or broke down and none failed, or no check ran)."""
        if any(r.status == "fail" for r in self.results):
            return "UNSTABLE"
        if self.passed:
            return "not applicable" if self._all_not_applicable else "stable"
        return "inconclusive"

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    def result(self, name: str) -> CheckResult:
        for r in self.results:
            if r.name == name:
                return r
        raise ValueError(
            f"no check {name!r} in this report (checks: {', '.join(r.name for r in self.results) or 'none'})"
        )

    def flagged(self) -> dict[str, list[str]]:
        """Check name -> sections it flagged, for the checks that flagged any."""
        return {r.name: [f.section for f in r.findings] for r in self.results if r.findings}

    def headline(self) -> str:
        counts = {s: sum(r.status == s for r in self.results) for s in STATUSES}
        parts = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        return (
            f"cache stability: {self.verdict}: {len(self.results)} checks ({parts or 'none ran'}); "
            f"{self.composes} composes, {self.scope} sections"
        )

    def __str__(self) -> str:
        width = max((len(r.name) for r in self.results), default=0)
        lines = [self.headline()]
        if self.stopped:
            lines.append(f"the baseline replay {self.stopped}")
        for r in self.results:
            detail = f"  ({r.detail})" if r.detail else ""
            status = r.status.upper() if r.status == "fail" else r.status
            lines.append(f"  {r.name:<{width}}  {status:<16}{r.description}{detail}")
        for finding in self.findings:
            lines += finding.lines()
        lines += [edit.line() for edit in self.every_turn]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<StabilityReport {self.headline()}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's text view (a terminal, nbval's comparison) shows the whole report
        printer.text(str(self))

    def _repr_html_(self) -> str:
        rows = []
        for r in self.results:
            colour = ROW_TINTS.get(r.status, ROW_TINTS["other"])
            rows.append(
                f'<tr style="background:{colour}"><td>{html.escape(r.name)}</td>'
                f"<td>{html.escape(r.status)}</td><td>{html.escape(r.description)}</td>"
                f"<td>{html.escape(r.detail)}</td></tr>"
            )
        # a finding's long lines wrap at spaces (JupyterLab's own <pre> breaks them anywhere)
        findings = "".join(
            f'<pre style="{PROMPT_PRE}">{html.escape(chr(10).join(f.lines()))}</pre>' for f in self.findings
        )
        findings += "".join(f'<pre style="{PROMPT_PRE}">{html.escape(edit.line())}</pre>' for edit in self.every_turn)
        table = scrolling(
            "<table><thead><tr><th>check</th><th>status</th><th>perturbation</th><th>note</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
        return no_math(f'<div class="wm-stability"><div>{html.escape(self.headline())}</div>{table}{findings}</div>')
