"""Pictures of a token budget: stacked bars of tokens by section, and tokens by section over turns.

``budget_bars(composed, counter=None) -> BudgetBars``
    One stacked bar per placement (system, conversation prefix, post-history, notification) of the
    tokens of each section, then a ``total`` bar of the whole prompt with the budget line. Sections
    the budget dropped are drawn grey (hatched) after the kept ones. Hovering a segment shows
    section, trinket, tokens and priority (an SVG ``<title>``). ``BudgetBars.svg`` is a plain SVG
    string (no scripts, every text escaped, the same for the same prompt): a dashboard embeds it in
    an ``ipywidgets.HTML`` (``HTML(value=budget_bars(p).svg)``) and replaces the value after each compose.
``plot_tokens(session, ax=None)``
    matplotlib: tokens by section over turns (stacked areas from ``session.history``), the budget
    as a dashed line; returns the Axes.

Token counts come from the prompt's BudgetReport when a budget counted them (each section with
the joiner that attaches it, and the HUD frame as a segment of its own, so the ``total`` bar is the
report's total), else from ``counter`` (each section's text alone, as the history counts it;
default: the offline tokenizer, or an estimate). The legend names the counter ("≈" and the band
for an estimate) and what the total includes.

Examples
--------
>>> from wm_kernel.core.composer import SystemPromptComposer
>>> from wm_kernel.tokens import EstimateTokenizer, TokenCounter
>>> c = SystemPromptComposer(); c.set_base_prompt("You help."); c.add_section("datetime_section", "<t/>")
>>> bars = budget_bars(c.compose(), counter=TokenCounter(EstimateTokenizer()))
>>> for row in bars.rows: print(row.placement, [(s.name, s.tokens) for s in row.segments])
system [('base_prompt', 86)]
notification [('datetime_section', 2)]
total [('base_prompt', 86), ('datetime_section', 2)]
>>> bars.svg.startswith("<svg")
True
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trinkets.base import NEVER_DROP
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.core.prompt_dict import PLACEMENTS
from wm_kernel.tokens import TokenCounter
from wm_kernel.utils import style
from wm_kernel.utils.htmltext import no_math

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from wm_kernel.session import Session

_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
_DROPPED = "#b0b0b0"
_TITLES = {
    "system": "system",
    "conversation_prefix": "conversation prefix",
    "post_history": "post-history",
    "notification": "notification",
    "total": "total",
}


@dataclass(frozen=True)
class Segment:
    """One section in a bar."""

    name: str
    trinket: str | None
    tokens: int
    priority: int | None
    dropped: bool


@dataclass(frozen=True)
class BarRow:
    placement: str
    segments: tuple[Segment, ...]

    @property
    def kept_tokens(self) -> int:
        return sum(s.tokens for s in self.segments if not s.dropped)


class BudgetBars:
    """The rows of the picture and its SVG (``svg``, ``_repr_html_``)."""

    def __init__(
        self, rows: tuple[BarRow, ...], budget: int | None, tokenizer: str, includes: str = "section texts"
    ) -> None:
        self.rows = rows
        self.budget = budget
        self.tokenizer = tokenizer
        #: what the token counts include (the budget's counts carry joiners and the HUD frame)
        self.includes = includes

    @property
    def total(self) -> int:
        """The tokens of the ``total`` bar (what is kept)."""
        return self.rows[-1].kept_tokens

    @property
    def svg(self) -> str:
        return _svg(self)

    def _repr_html_(self) -> str:
        return no_math(self.svg)

    def legend_html(self) -> str:
        """The key to the colours: a swatch and the name of each section, in the bars' order, then
        the hatched grey of a section dropped over budget and the budget line (where drawn)."""
        names = _names(self)
        dropped = any(s.dropped for row in self.rows for s in row.segments)
        swatch = "display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle;"
        items = [
            f'<span style="{swatch}background:{_colour(name, names)}"></span>{html.escape(name)}'
            for name in names
            if any(s.name == name and not s.dropped for row in self.rows for s in row.segments)
        ]
        if dropped:
            items.append(
                f'<span style="{swatch}background:repeating-linear-gradient(45deg,#d0d0d0 0 3px,#a0a0a0 3px 5px)">'
                "</span>dropped over budget"
            )
        if self.budget is not None:
            items.append(
                f'<span style="{swatch}height:0;border-top:2px dashed {style.ERROR}"></span>budget {self.budget:,}'
            )
        cells = "".join(f'<li style="margin:0 12px 2px 0">{item}</li>' for item in items)
        return (
            f'<ul class="wm-legend" aria-label="colours of the bars" style="list-style:none;padding:0;margin:4px 0;'
            f'display:flex;flex-wrap:wrap;font-size:12px">{cells}</ul>'
        )

    def __repr__(self) -> str:
        rows = "; ".join(f"{row.placement} {row.kept_tokens}" for row in self.rows)
        return f"<BudgetBars budget={self.budget} tokens: {rows}>"


def budget_bars(composed: ComposedPrompt, *, counter: TokenCounter | None = None) -> BudgetBars:
    """The stacked bars of ``composed`` (see the module docstring)."""
    if not isinstance(composed, ComposedPrompt):
        raise TypeError(f"expected a ComposedPrompt, got {type(composed).__name__}")
    report = composed.budget
    counted = report.tokens if report is not None else {}
    priorities = report.priorities if report is not None else {}
    if counter is None and not counted:
        counter = TokenCounter()
    trimmed = {t.name: t.tokens for t in report.trimmed} if report is not None else {}
    by_placement: dict[str, list[Segment]] = {p: [] for p in PLACEMENTS}
    for record in composed.sections:
        tokens = trimmed.get(record.name, counted.get(record.name))
        if tokens is None:
            tokens = (counter or TokenCounter()).count(record.content)
        by_placement[record.placement].append(
            Segment(record.name, record.trinket, tokens, priorities.get(record.name), False)
        )
    for gone in report.dropped if report is not None else ():
        placement = report.placements.get(gone.name, "system") if report is not None else "system"
        by_placement[placement].append(Segment(gone.name, gone.trinket, gone.tokens or 0, gone.priority, True))
    rows = [BarRow(p, tuple(segs)) for p, segs in by_placement.items() if segs]
    kept = tuple(s for row in rows for s in row.segments if not s.dropped)
    frame: tuple[Segment, ...] = ()
    if counted and report is not None and report.total is not None:
        # the budget's total also counts the notification centre's frame: drawn, so both agree
        rest = report.total - sum(s.tokens for s in kept)
        if rest > 0:
            frame = (Segment("HUD frame", None, rest, NEVER_DROP, False),)
    total = kept + frame + tuple(s for row in rows for s in row.segments if s.dropped)
    rows.append(BarRow("total", total))
    tokenizer = (
        report.tokenizer if report is not None and report.tokenizer else (counter.label if counter is not None else "")
    )
    includes = "sections with their joiners, and the HUD frame" if counted else "section texts"
    return BudgetBars(tuple(rows), report.budget if report is not None else None, tokenizer, includes)


# the page's text colour (SVG text is black unless told, unreadable on the dark theme's page)
_TEXT = "var(--jp-content-font-color1, #212121)"


def _colour(name: str, names: list[str]) -> str:
    return _PALETTE[names.index(name) % len(_PALETTE)]


def _names(bars: BudgetBars) -> list[str]:
    """Every section of the bars, in the order the colours are given out."""
    names: list[str] = []
    for row in bars.rows:
        for seg in row.segments:
            if seg.name not in names:
                names.append(seg.name)
    return names


def _svg(bars: BudgetBars, width: int = 640, row_height: int = 22, label_width: int = 130) -> str:
    names = _names(bars)
    widest = max([sum(s.tokens for s in row.segments) for row in bars.rows] + [bars.budget or 0, 1])
    plot = width - label_width - 10
    scale = plot / widest
    height = (len(bars.rows) + 1) * (row_height + 6) + 10
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        '<defs><pattern id="wm-dropped" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#d0d0d0"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#a0a0a0" stroke-width="2"/></pattern></defs>',
    ]
    for index, row in enumerate(bars.rows):
        y = 6 + index * (row_height + 6)
        label = f"{_TITLES[row.placement]} · {row.kept_tokens}"
        out.append(f'<text x="4" y="{y + row_height * 0.7:.1f}" style="fill:{_TEXT}">{html.escape(label)}</text>')
        x = float(label_width)
        for seg in row.segments:
            w = seg.tokens * scale
            fill = "url(#wm-dropped)" if seg.dropped else _colour(seg.name, names)
            never = seg.priority is None or seg.priority >= NEVER_DROP
            tip = (
                f"{seg.name} · {seg.trinket or 'base prompt'} · {seg.tokens} tokens · priority "
                + ("never dropped" if never else str(seg.priority))
                + (" · dropped: over budget" if seg.dropped else "")
            )
            out.append(
                f'<rect x="{x:.1f}" y="{y}" width="{max(w, 0.5):.1f}" height="{row_height}" '
                f'fill="{fill}" stroke="white" stroke-width="0.5">'
                f"<title>{html.escape(tip)}</title></rect>"
            )
            x += w
    if bars.budget is not None:
        bx = label_width + bars.budget * scale
        out.append(
            f'<line x1="{bx:.1f}" y1="2" x2="{bx:.1f}" y2="{height - row_height - 8}" '
            f'stroke="#c62828" stroke-width="1.5" stroke-dasharray="4 3"/>'
        )
        out.append(
            f'<text x="{min(bx + 3, width - 90):.1f}" y="{height - row_height}" '
            f'style="fill:{style.ERROR}">'
            f"budget {bars.budget}</text>"
        )
    legend_y = height - 6
    out.append(
        f'<text x="4" y="{legend_y}" style="fill:{style.MUTED}">tokens ({html.escape(bars.tokenizer)}) of '
        f"{html.escape(bars.includes)}; grey: dropped over budget</text>"
    )
    out.append("</svg>")
    return "".join(out)


def plot_tokens(session: Session, *, ax: Axes | None = None) -> Axes:
    """Tokens by section over turns, stacked, from ``session.history`` (kept sections only), with
    the session's token budget as a dashed line. Returns the matplotlib Axes."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    frame = session.history
    if frame.empty:
        raise ValueError("nothing recorded yet: compose first")
    kept = frame[~frame["dropped"]]
    table = kept.pivot_table(index="turn", columns="section", values="tokens", aggfunc="sum", fill_value=0)
    order = list(dict.fromkeys(kept["section"]))
    table = table[order]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    ax.stackplot(
        table.index,
        *[table[c] for c in order],
        labels=order,
        colors=[_PALETTE[i % len(_PALETTE)] for i in range(len(order))],
        alpha=0.85,
    )
    budget = session.working_memory.token_budget
    if budget is not None:
        ax.axhline(budget, color="#c62828", linestyle="--", linewidth=1.2, label=f"budget {budget}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("turn")
    ax.set_ylabel(f"tokens ({session.recorder.counter.label})")
    ax.set_title("tokens by section")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return ax
