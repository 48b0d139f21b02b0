"""The dashboard's overview, as HTML: when each item lives, how big each placement is, what changed.

What a prompt engineer watches in a session is guidance appearing and expiring as turns pass. The
overview puts that on one screen: a timeline with one bar per stateful-trinket item (live or
expired) from the turn it was added to the last turn it is shown, the turn on view marked; the size
of each placement; and the sections the newest compose added, removed or changed. The items over
time come from ``wm_kernel.instruments.items`` (``ItemLog``, ``ItemSpan``; imported here too).

The functions here are pure (data in, escaped HTML out) so the dashboard can call them on every
settle and send the result only when it differs.

Public API
----------
``timeline_html(spans, marked_turn)``, ``sizes_html(composed)``, ``changes_html(diff)``
    The three parts of the overview (the timeline draws the last ``WINDOW`` turns and the items
    seen in them).
``changes_between(before, after, label)``
    ``changes_html`` of two composed prompts, without computing the unified diffs it never shows.
``cache_strip_html(rows, marked_turn, summary)``
    The cache strip: one cell per turn (hit, partial, write, miss), the reason on hover.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Sequence
from typing import Any

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.instruments.diff import PromptDiff, diff_prompts
from wm_kernel.instruments.items import WINDOW, ItemSpan
from wm_kernel.utils import style

_MUTED = "var(--jp-content-font-color2,#444)"
_TEXT = "var(--jp-content-font-color1,#000)"
_LIVE = "var(--jp-brand-color1,#1976d2)"
_EXPIRED = "var(--jp-layout-color4,#999)"
_MARK = "var(--jp-warn-color0,#c77c00)"
_GRID = "var(--jp-border-color2,#ddd)"
_ROW, _LABEL_W, _HEAD = 18, 230, 18


def _row_text(span: ItemSpan) -> tuple[str, str, str]:
    """(label, bar attributes, hover text) of a span's timeline row, escaped: the parts that do
    not move with the window, escaped once rather than at every draw (kept in the span's
    instance dict, which a frozen dataclass allows)."""
    kept: tuple[str, str, str] | None = span.__dict__.get("_row_text")
    if kept is None:
        label = span.label if len(span.label) <= 34 else span.label[:33] + "…"
        shown = "until a collapse" if span.end is None else f"turns {span.start} to {span.end}"
        hover = f"{span.label}\n{span.trinket} · {span.section} · {shown}"
        attributes = (
            f'data-section="{html.escape(span.section, quote=True)}" data-item="{html.escape(span.id, quote=True)}"'
        )
        kept = span.__dict__["_row_text"] = (html.escape(label), attributes, html.escape(hover))
    return kept


def _draw(span: ItemSpan, key: tuple[int, int, str, int | None, int]) -> tuple[Any, str, str]:
    """(key, label, bar) of a span's timeline row for ``key`` = (height ``y``, column width
    ``col``, ``state``, ``remaining`` turns, ``reach``: the turn an endless bar runs to), kept as
    ``_last_drawn`` in the span's instance dict: the next draw mostly asks for the same row, and
    ``timeline_html`` compares its key before calling."""
    y, col, state, remaining, reach = key
    label, attributes, hover = _row_text(span)
    end = reach if span.end is None else span.end
    bar = ""
    if end >= span.start:
        bar = (
            f'<rect class="wm-bar" {attributes} data-state="{state}" '
            f'data-remaining="{"" if remaining is None else remaining}" '
            f'x="{span.start * col + 1}" y="{y + 3}" '
            f'width="{(end - span.start + 1) * col - 2}" height="{_ROW - 6}" rx="3" '
            f'style="fill:{_LIVE if state == "live" else _EXPIRED}"><title>{hover}</title>'
            "</rect>"
        )
    drawn = (key, f'<text x="4" y="{y + 13}" style="fill:{_TEXT}">{label}</text>', bar)
    span.__dict__["_last_drawn"] = drawn
    return drawn


def timeline_html(spans: Sequence[ItemSpan], marked_turn: int, *, live: bool = True, left_out: int = 0) -> str:
    """An SVG timeline: a row per item (label left, bar over its turns), ``marked_turn`` marked.

    It draws the last ``WINDOW`` turns; items that ended before them are left out and counted in
    the caption, with ``left_out`` more the caller already left out (``ItemLog.window``).

    Bars of items live at the marked turn are coloured, expired ones grey; hovering a bar shows the
    full label, the trinket and the turns. Each bar carries ``data-state`` and ``data-remaining``
    so tests can read what a user sees.

    Long because: one SVG picture: the window of turns and its sizes, the rows (with the per-row
    memo inlined for speed), then the SVG parts and caption, each a few f-string lines.
    """
    if not spans and not left_out:
        return (
            '<div class="wm-timeline" style="font-size:12px">'
            "<i>no items yet: guidance, search results and memories appear here with their "
            "lifetimes</i></div>"
        )
    last = marked_turn
    for span in spans:
        if span.start > last:
            last = span.start
        if span.end is not None and span.end > last:
            last = span.end
    low = max(0, last - WINDOW + 1)
    # an item that ended before the window would be a row without a bar: left out (and counted in
    # the caption), so the picture and its cost follow the window, not every item ever fed
    earlier = len(spans) + left_out
    spans = [s for s in spans if s.end is None or s.end >= low]
    earlier -= len(spans)
    turns = last - low + 1
    col = max(8, min(32, 640 // turns))
    width = _LABEL_W + turns * col + 8
    height = _HEAD + _ROW * len(spans) + 4
    # the bars and column lines sit at fixed places on a strip of all turns (turn t at t * col),
    # seen through a window onto turns low to last (a nested svg's viewBox, which also clips): so
    # a row drawn at one turn is the same text at the next and is kept, not drawn again. A bar
    # without an end runs past the window's right edge, to a mark that moves every WINDOW turns.
    reach = (last // WINDOW + 2) * WINDOW
    labels, bars = [], []
    y = _HEAD
    for span in spans:
        # span.state() and span.remaining() inline, and the row's memo read here: this loop runs
        # for every row of every draw, and a call costs more than what it computes
        start, end = span.start, span.end
        if marked_turn < start:
            state = "future"
        elif end is None or marked_turn <= end:
            state = "live"
        else:
            state = "expired"
        key = (y, col, state, None if end is None else max(end - marked_turn, 0), reach)
        drawn = span.__dict__.get("_last_drawn")
        if drawn is None or drawn[0] != key:
            drawn = _draw(span, key)
        labels.append(drawn[1])
        bars.append(drawn[2])
        y += _ROW
    mark = _LABEL_W + (marked_turn - low) * col + col / 2
    parts = [
        f'<svg class="wm-timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" style="font-size:11px;font-family:var(--jp-ui-font-family,sans-serif)">',
        _turn_numbers(low, last, col),
        *labels,
        f'<svg x="{_LABEL_W}" y="0" width="{turns * col}" height="{height}" '
        f'viewBox="{low * col} 0 {turns * col} {height}">',
        _columns(low // WINDOW * WINDOW, col),
        *bars,
        "</svg>",
        f'<line class="wm-now" x1="{mark}" y1="{_HEAD - 4}" x2="{mark}" y2="{height}" '
        f'style="stroke:{_MARK};stroke-width:2"><title>turn {marked_turn}'
        f"{'' if live else ' (read-only)'}</title></line>",
        "</svg>",
    ]
    window = f" (turns {low} to {last})" if low else ""
    if earlier:
        window += f"; {earlier} item{'s' if earlier > 1 else ''} that ended before turn {low} not drawn"
    caption = (
        f'<div style="font-size:12px;color:{_MUTED}">a bar per item, from the turn it was '
        f"added to the last turn it is shown{window}; the line marks turn {marked_turn}; "
        "hover a bar for its text and trinket</div>"
    )
    return caption + '<div style="overflow-x:auto">' + "".join(parts) + "</div>"


@functools.lru_cache(maxsize=64)
def _turn_numbers(low: int, last: int, col: int) -> str:
    """The timeline's turn numbers, over the window of turns ``low`` to ``last``."""
    step = 1 if last - low + 1 <= 20 else 5
    return "".join(
        f'<text x="{_LABEL_W + (turn - low) * col + col / 2}" y="12" '
        f'text-anchor="middle" style="fill:{_MUTED}">{turn}</text>'
        for turn in range(low, last + 1)
        if turn % step == 0
    )


@functools.lru_cache(maxsize=16)
def _columns(first: int, col: int) -> str:
    """A line at the left edge of each turn's column on the strip of all turns, from ``first``
    over two windows (a window starting at or after ``first``, before ``first + WINDOW``, is
    inside): the same for every draw until the window crosses the next multiple of WINDOW."""
    return "".join(
        f'<line x1="{turn * col}" y1="{_HEAD - 2}" x2="{turn * col}" y2="100%" '
        f'style="stroke:{_GRID};stroke-width:0.5"/>'
        for turn in range(first, first + 2 * WINDOW)
    )


# the cells and the legend's coloured squares (text: readable in both themes, see style)
_CACHE_COLOURS = {"hit": style.SUCCESS, "partial": style.WARN, "write": style.INFO, "miss": style.ERROR}


def cache_strip_html(rows: Sequence[tuple[int, str, str, str]], marked_turn: int, summary: str) -> str:
    """A strip with one cell per turn, from ``(turn, status, miss_reason, first divergent
    section)`` rows of a cache simulation: hit, partial, write or miss by colour, each cell's
    ``<title>`` saying the status and why; the cell of ``marked_turn`` outlined. ``summary`` is the
    line above it (the model, costs). Each cell carries ``data-turn`` and ``data-status``."""
    cells = []
    for turn, status, reason, label in rows:
        why = "" if reason in ("none", "") else f": {reason}" + (f" at {label}" if label else "")
        mark = f";outline:2px solid {_MARK}" if turn == marked_turn else ""
        cells.append(
            f'<span class="wm-cache-cell" data-turn="{turn}" data-status="{status}" '
            f'title="{html.escape(f"turn {turn}: {status}{why}", quote=True)}" '
            f'style="display:inline-block;width:10px;height:16px;margin:1px;'
            f'background:{_CACHE_COLOURS.get(status, _EXPIRED)}{mark}"></span>'
        )
    legend = " · ".join(f'<span style="color:{colour}">■</span> {status}' for status, colour in _CACHE_COLOURS.items())
    return (
        f'<div class="wm-cache-strip"><div style="font-size:12px">{html.escape(summary)}</div>'
        f'<div style="display:flex;flex-wrap:wrap;max-width:720px">{"".join(cells)}</div>'
        f'<div style="font-size:11px;color:{_MUTED}">{legend}; hover a cell for the reason</div>'
        "</div>"
    )


def sizes_html(composed: ComposedPrompt | None) -> str:
    """A table: each placement's sections and characters in ``composed``."""
    if composed is None:
        return "<i>nothing composed yet</i>"
    rows: dict[str, tuple[int, int]] = {}
    for record in composed.sections:
        where = record.placement
        if where == "system":
            where = "system cached" if record.cached else "system uncached"
        count, chars = rows.get(where, (0, 0))
        rows[where] = (count + 1, chars + len(record.content))
    body = "".join(
        f'<tr><td style="text-align:left">{html.escape(where)}</td>'
        f'<td style="text-align:right">{count}</td>'
        f'<td style="text-align:right">{chars:,}</td></tr>'
        for where, (count, chars) in rows.items()
    )
    return style.scrolling(
        '<table class="wm-sizes" style="font-size:12px"><tr><th style="text-align:left">'
        f"placement</th><th>sections</th><th>chars</th></tr>{body}</table>"
    )


def changes_html(diff: PromptDiff | None, label: str) -> str:
    """The sections ``diff`` says were added, removed or changed (``label`` names the two
    prompts compared), or a line saying nothing changed."""
    if diff is None:
        return f'<div style="font-size:12px"><i>{html.escape(label)}</i></div>'
    return _changes_list(
        [(s.name, s.status, len(s.old_text), len(s.new_text)) for s in diff.sections if s.status != "unchanged"], label
    )


def changes_between(before: ComposedPrompt, after: ComposedPrompt, label: str) -> str:
    """What ``changes_html(diff_prompts(before, after), label)`` gives, without the unified
    diffs the overview does not show: when both prompts carry section records only their texts
    and placements are compared (the dashboard asks once per compose)."""
    if not (before.sections and after.sections):
        return changes_html(diff_prompts(before, after), label)
    old = {record.name: record for record in before.sections}
    new = {record.name: record for record in after.sections}
    # diff_prompts' order: the new prompt's, each removed section after its old predecessor
    order = [record.name for record in after.sections]
    names = [record.name for record in before.sections]
    for index, name in enumerate(names):
        if name in new:
            continue
        anchor = next((names[j] for j in range(index - 1, -1, -1) if names[j] in order), None)
        order.insert(order.index(anchor) + 1 if anchor is not None else 0, name)
    rows = []
    for name in order:
        was, now = old.get(name), new.get(name)
        if was is None:
            status = "added"
        elif now is None:
            status = "removed"
        elif was.content != now.content or was.placement != now.placement:
            status = "changed"
        else:
            continue
        rows.append(
            (name, status, len(was.content) if was is not None else 0, len(now.content) if now is not None else 0)
        )
    return _changes_list(rows, label)


def _changes_list(changed: Sequence[tuple[str, str, int, int]], label: str) -> str:
    """(name, status, old chars, new chars) of each changed section, as a list under ``label``."""
    head = f'<div style="font-size:12px;color:{_MUTED}">{html.escape(label)}</div>'
    if not changed:
        return head + '<div style="font-size:12px"><i>no section changed</i></div>'
    rows = "".join(
        f"<li><code>{html.escape(name)}</code> {status} ({old:,} → {new:,} chars)</li>"
        for name, status, old, new in changed
    )
    return head + f'<ul class="wm-changes" style="font-size:12px;margin:2px 0">{rows}</ul>'


__all__ = ["timeline_html", "sizes_html", "changes_html", "changes_between", "cache_strip_html"]
