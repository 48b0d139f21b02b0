"""The dashboard's overview, as HTML: when each item lives, how big each placement is, what changed.

What a prompt engineer watches in a session is guidance appearing and expiring as turns pass. The
overview puts that on one screen: a timeline with one bar per stateful-trinket item (live or
expired) from the turn it was added to the last turn it is shown, the turn on view marked; the size
of each placement; and the sections the newest compose added, removed or changed.

The functions here are pure (data in, escaped HTML out) so the dashboard can call them on every
settle and send the result only when it differs.

Public API
----------
``ItemSpan``
    One item's life: ``section``, ``trinket``, ``id``, ``label``, ``start`` (first turn it was
    seen), ``end`` (last turn it is, or will be, shown; None while it lives until a collapse).
``item_spans(items_at, trinkets) -> list[ItemSpan]``
    The spans of every item in a ``{turn: {section: describe_items()}}`` record.
``ItemLog``
    The same knowledge kept as changes, not copies: per item its text once, the turns it was seen
    and each change of its announced last turn. The dashboard keeps one for the time-travel view
    and the timeline, so its memory grows with the items fed, not with turns x live items.
``timeline_html(spans, marked_turn)``, ``sizes_html(composed)``, ``changes_html(diff)``
    The three parts of the overview (the timeline draws the last ``WINDOW`` turns and the items
    seen in them).
``changes_between(before, after, label)``
    ``changes_html`` of two composed prompts, without computing the unified diffs it never shows.
``cache_strip_html(rows, marked_turn, summary)``
    The cache strip: one cell per turn (hit, partial, write, miss), the reason on hover.

Examples
--------
>>> spans = item_spans({0: {"g": [{"id": "a", "label": "x", "turns_remaining": 2}]},
...                     1: {"g": [{"id": "a", "label": "x", "turns_remaining": 1}]}},
...                    {"g": "PeanutGalleryTrinket"})
>>> spans
[ItemSpan(section='g', trinket='PeanutGalleryTrinket', id='a', label='x', start=0, end=2)]
>>> spans[0].state(3), spans[0].state(2), spans[0].remaining(1)
('expired', 'live', 1)
>>> log = ItemLog()
>>> log.sight(0, {"g": [{"id": "a", "label": "x", "turns_remaining": 2}]})
>>> log.sight(1, {"g": [{"id": "a", "label": "x", "turns_remaining": 1}]})
>>> log.spans({"g": "PeanutGalleryTrinket"}) == spans, log.items_at(1, "g")
(True, [{'id': 'a', 'label': 'x', 'turns_remaining': 1}])
"""
from __future__ import annotations

import bisect
import functools
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.instruments.diff import PromptDiff, diff_prompts

_MUTED = "var(--jp-content-font-color2,#444)"
_TEXT = "var(--jp-content-font-color1,#000)"
_LIVE = "var(--jp-brand-color1,#1976d2)"
_EXPIRED = "var(--jp-layout-color4,#999)"
_MARK = "var(--jp-warn-color0,#c77c00)"
_GRID = "var(--jp-border-color2,#ddd)"
#: How many turns the timeline draws at most (the most recent ones): a bar per turn stays legible.
WINDOW = 40
_ROW, _LABEL_W, _HEAD = 18, 230, 18


@dataclass(frozen=True)
class ItemSpan:
    """One item of a stateful trinket, from the turn it was first seen to the last turn it is
    shown (``end``), or ``end=None`` for an item that lives until the segment collapses."""

    section: str
    trinket: str
    id: str
    label: str
    start: int
    end: int | None

    def state(self, turn: int) -> str:
        """``"live"``, ``"expired"`` or ``"future"`` as seen at ``turn``."""
        if turn < self.start:
            return "future"
        return "live" if self.end is None or turn <= self.end else "expired"

    def remaining(self, turn: int) -> int | None:
        """Turns it is still shown after ``turn`` (None: until a collapse)."""
        return None if self.end is None else max(self.end - turn, 0)

    @functools.cached_property
    def _row_text(self) -> tuple[str, str, str]:
        """(label, bar attributes, hover text) of its timeline row, escaped: the parts that do
        not move with the window, escaped once rather than at every draw (a cached_property
        writes the instance dict, which a frozen dataclass allows)."""
        label = self.label if len(self.label) <= 34 else self.label[:33] + "…"
        shown = "until a collapse" if self.end is None else f"turns {self.start} to {self.end}"
        hover = f"{self.label}\n{self.trinket} · {self.section} · {shown}"
        attributes = (f'data-section="{html.escape(self.section, quote=True)}" '
                      f'data-item="{html.escape(self.id, quote=True)}"')
        return html.escape(label), attributes, html.escape(hover)

    def _draw(self, key: tuple[int, int, str, int | None, int]) -> tuple[Any, str, str]:
        """(key, label, bar) of its timeline row for ``key`` = (height ``y``, column width
        ``col``, ``state``, ``remaining`` turns, ``reach``: the turn an endless bar runs to),
        kept as ``_last_drawn`` in the instance dict (as ``_row_text``): the next draw mostly
        asks for the same row, and ``timeline_html`` compares its key before calling."""
        y, col, state, remaining, reach = key
        label, attributes, hover = self._row_text
        end = reach if self.end is None else self.end
        bar = ""
        if end >= self.start:
            bar = (f'<rect class="wm-bar" {attributes} data-state="{state}" '
                   f'data-remaining="{"" if remaining is None else remaining}" '
                   f'x="{self.start * col + 1}" y="{y + 3}" '
                   f'width="{(end - self.start + 1) * col - 2}" height="{_ROW - 6}" rx="3" '
                   f'style="fill:{_LIVE if state == "live" else _EXPIRED}"><title>{hover}</title>'
                   "</rect>")
        drawn = (key, f'<text x="4" y="{y + 13}" style="fill:{_TEXT}">{label}</text>', bar)
        self.__dict__["_last_drawn"] = drawn
        return drawn


def item_spans(items_at: Mapping[int, Mapping[str, Sequence[Mapping[str, Any]]]],
               trinkets: Mapping[str, str]) -> list[ItemSpan]:
    """Every item seen in ``items_at`` (turn -> section -> ``describe_items()``), in the order
    they appeared. ``trinkets`` maps a section to its trinket's name.

    An item still present at its last sighting shows until ``turns_remaining`` more turns have
    passed; one that vanished earlier than announced (a collapse, a removal) ends where it was last
    seen."""
    first: dict[tuple[str, str], int] = {}
    last: dict[tuple[str, str], tuple[int, Mapping[str, Any]]] = {}
    turns = sorted(items_at)
    for turn in turns:
        for section, items in items_at[turn].items():
            for item in items:
                key = (section, str(item.get("id")))
                first.setdefault(key, turn)
                last[key] = (turn, item)
    latest = turns[-1] if turns else 0
    spans = []
    for key, start in first.items():
        seen, item = last[key]
        remaining = item.get("turns_remaining")
        if seen < latest:
            # gone by the latest record: either it expired as announced or it was cut short
            later = [t for t in turns if t > seen]
            announced = None if remaining is None else seen + int(remaining)
            end: int | None = seen if announced is None else min(announced, later[0] - 1)
        else:
            end = None if remaining is None else seen + int(remaining)
        label = str(item.get("label") or item.get("id"))
        spans.append(ItemSpan(key[0], trinkets.get(key[0], ""), key[1], label, start, end))
    return spans


@dataclass
class _ItemTrace:
    """What an :class:`ItemLog` knows of one item: each field changes rarely, so it stays small
    however many turns the item lives."""

    label: str
    seen: list[list[int]]                   # [first, last] turns of each stretch it was seen in
    ends: list[tuple[int, int | None]]      # (from turn, announced last turn): one per change
    gone: int | None = None                 # the first sighting after the last stretch without it
    extra: dict[str, Any] = field(default_factory=dict)  # other keys of describe_items(), if any


class ItemLog:
    """The items of the stateful trinkets over time, kept as changes rather than per-turn copies.

    :meth:`sight` is given what ``describe_items()`` says at a turn (any number of times per turn;
    what is seen at a turn is the union of those sightings). Per item the log keeps its label once,
    the stretches of turns it was seen in and each change of its announced last turn
    (``turn + turns_remaining``, which a countdown leaves unchanged). So an item alive for 1,000
    turns costs the same as one alive for one, and a turn in which nothing is fed or expires costs
    nothing: memory is bounded by the number of items ever fed, not by turns x items.

    Other keys of an item (besides ``id``, ``label``, ``turns_remaining``) are kept as first seen.
    """

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], _ItemTrace] = {}
        self._live: set[tuple[str, str]] = set()   # seen at the latest sighting turn
        self.latest: int | None = None
        #: The first turn sighted (None: none yet): earlier turns' items are unknown, not absent.
        self.first: int | None = None
        self._version = 0
        # the spans as last computed, per item, and the items changed since (recomputed on demand):
        # a turn costs what its changed items cost, not what every item ever fed would
        self._spans: dict[tuple[str, str], ItemSpan] = {}
        self._stale: set[tuple[str, str]] = set()
        self._names: dict[str, str] = {}
        # the items marked gone by the latest turn's first sighting and not yet settled: most are
        # seen again at once, which changes nothing, so only those still gone count as changed
        self._tentative: set[tuple[str, str]] = set()
        # for window(): the spans with an end, sorted by (end, first-seen rank), and those without
        # (in first-seen order), so a window costs what it draws, not every item ever fed
        self._rank: dict[tuple[str, str], int] = {}
        self._by_end: list[tuple[int, int, tuple[str, str]]] = []
        self._endless: dict[tuple[str, str], None] = {}

    def sight(self, turn: int, items: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Record the items of each section (section -> ``describe_items()``) as seen at ``turn``.

        Sightings must come in turn order (an earlier turn than the latest is ignored)."""
        if self.latest is not None and turn < self.latest:
            return
        if self.latest is not None and turn > self.latest:
            # tentatively gone as of this turn; seeing one again at this turn takes it back
            self._settle()
            for key in self._live:
                self._items[key].gone = turn
            self._tentative, self._live = self._live, set()
        self.latest = turn
        if self.first is None:
            self.first = turn
        for section, described in items.items():
            for item in described:
                key = (section, str(item.get("id")))
                remaining = item.get("turns_remaining")
                end = None if remaining is None else turn + int(remaining)
                trace = self._items.get(key)
                if trace is None:
                    extra = {k: v for k, v in item.items()
                             if k not in ("id", "label", "turns_remaining")}
                    trace = self._items[key] = _ItemTrace(str(item.get("label") or item.get("id")),
                                                          [[turn, turn]], [(turn, end)], extra=extra)
                    self._rank[key] = len(self._rank)
                    self._stale.add(key)
                    self._version += 1
                else:
                    # while an item is not gone its span does not read its last sighting, so
                    # only a gap, a return or a new announced end changes what spans() gives
                    if trace.gone is not None:
                        if trace.gone < turn:
                            trace.seen.append([turn, turn])   # back after it was gone
                        else:
                            trace.seen[-1][1] = turn
                        trace.gone = None
                        if key in self._tentative:
                            self._tentative.discard(key)      # gone and back: nothing changed
                        else:
                            self._stale.add(key)
                            self._version += 1
                    else:
                        trace.seen[-1][1] = turn
                    if trace.ends[-1][1] != end:
                        trace.ends.append((turn, end))
                        self._stale.add(key)
                        self._version += 1
                self._live.add(key)

    def items_at(self, turn: int, section: str) -> list[dict[str, Any]]:
        """The items of ``section`` seen at ``turn``, as ``describe_items()`` gave them (turns
        remaining counted from ``turn``), in the order they were first seen."""
        out = []
        for (owner, item_id), trace in self._items.items():
            if owner != section or not any(a <= turn <= b for a, b in trace.seen):
                continue
            end = None
            for start, announced in trace.ends:
                if start > turn:
                    break
                end = announced
            out.append({"id": item_id, "label": trace.label, **trace.extra,
                        "turns_remaining": None if end is None else end - turn})
        return out

    def spans(self, trinkets: Mapping[str, str]) -> list[ItemSpan]:
        """One :class:`ItemSpan` per item, as :func:`item_spans` computes it from per-turn copies
        (``trinkets`` maps a section to its trinket's name)."""
        self._refresh(trinkets)
        # in the order the items were first seen (the dict of traces keeps it)
        spans = self._spans
        return [spans[key] for key in self._items]

    def window(self, trinkets: Mapping[str, str], marked_turn: int) -> tuple[list[ItemSpan], int]:
        """The spans :func:`timeline_html` draws with ``marked_turn`` marked (those that end in its
        window of ``WINDOW`` turns or later, in first-seen order) and how many it leaves out,
        found without visiting the items that ended earlier."""
        self._refresh(trinkets)
        if not self._spans:
            return [], 0
        newest = self._spans[next(reversed(self._items))]   # the largest start: sightings come in order
        last = max(marked_turn, newest.start, self._by_end[-1][0] if self._by_end else 0)
        low = max(0, last - WINDOW + 1)
        keys = [key for _, _, key in self._by_end[bisect.bisect_left(self._by_end, (low,)):]]
        keys.extend(self._endless)
        keys.sort(key=self._rank.__getitem__)
        return [self._spans[key] for key in keys], len(self._spans) - len(keys)

    def _refresh(self, trinkets: Mapping[str, str]) -> None:
        """Compute the spans of the items changed since the last call."""
        self._settle()
        if trinkets != self._names:
            self._names = dict(trinkets)
            self._stale = set(self._items)
        for key in self._stale:
            section, item_id = key
            trace = self._items[key]
            seen, announced = trace.seen[-1][1], trace.ends[-1][1]
            if trace.gone is not None:
                end: int | None = seen if announced is None else min(announced, trace.gone - 1)
            else:
                end = announced
            span = ItemSpan(section, trinkets.get(section, ""), item_id, trace.label,
                            trace.seen[0][0], end)
            old = self._spans.get(key)
            if old == span:
                continue   # an equal span is kept, with its escaped text
            rank = self._rank[key]
            if old is not None and old.end is None:
                del self._endless[key]
            elif old is not None:
                del self._by_end[bisect.bisect_left(self._by_end, (old.end, rank))]
            if end is None:
                self._endless[key] = None
            else:
                bisect.insort(self._by_end, (end, rank, key))
            self._spans[key] = span
        self._stale = set()

    @property
    def version(self) -> int:
        """Counts the changes that alter :meth:`spans` (an item new, gone or back, a new
        announced end): equal versions, equal spans, so a caller may keep what it drew from them."""
        self._settle()
        return self._version

    def _settle(self) -> None:
        """The items marked gone at the latest turn and not seen again since are gone: changed."""
        gone = [key for key in self._tentative if self._items[key].gone is not None]
        self._stale.update(gone)
        self._version += bool(gone)
        self._tentative = set()

    def __len__(self) -> int:
        return len(self._items)


def timeline_html(spans: Sequence[ItemSpan], marked_turn: int, *, live: bool = True,
                  left_out: int = 0) -> str:
    """An SVG timeline: a row per item (label left, bar over its turns), ``marked_turn`` marked.

    It draws the last ``WINDOW`` turns; items that ended before them are left out and counted in
    the caption, with ``left_out`` more the caller already left out (``ItemLog.window``).

    Bars of items live at the marked turn are coloured, expired ones grey; hovering a bar shows the
    full label, the trinket and the turns. Each bar carries ``data-state`` and ``data-remaining``
    so tests can read what a user sees."""
    if not spans and not left_out:
        return ('<div class="wm-timeline" style="font-size:12px">'
                "<i>no items yet: guidance, search results and memories appear here with their "
                "lifetimes</i></div>")
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
            drawn = span._draw(key)
        labels.append(drawn[1])
        bars.append(drawn[2])
        y += _ROW
    mark = _LABEL_W + (marked_turn - low) * col + col / 2
    parts = [f'<svg class="wm-timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" style="font-size:11px;font-family:var(--jp-ui-font-family,sans-serif)">',
             _turn_numbers(low, last, col), *labels,
             f'<svg x="{_LABEL_W}" y="0" width="{turns * col}" height="{height}" '
             f'viewBox="{low * col} 0 {turns * col} {height}">',
             _columns(low // WINDOW * WINDOW, col), *bars, "</svg>",
             f'<line class="wm-now" x1="{mark}" y1="{_HEAD - 4}" x2="{mark}" y2="{height}" '
             f'style="stroke:{_MARK};stroke-width:2"><title>turn {marked_turn}'
             f'{"" if live else " (read-only)"}</title></line>', "</svg>"]
    window = f" (turns {low} to {last})" if low else ""
    if earlier:
        window += (f"; {earlier} item{'s' if earlier > 1 else ''} that ended before turn {low} "
                   "not drawn")
    caption = (f'<div style="font-size:12px;color:{_MUTED}">a bar per item, from the turn it was '
               f"added to the last turn it is shown{window}; the line marks turn {marked_turn}; "
               "hover a bar for its text and trinket</div>")
    return caption + '<div style="overflow-x:auto">' + "".join(parts) + "</div>"


@functools.lru_cache(maxsize=64)
def _turn_numbers(low: int, last: int, col: int) -> str:
    """The timeline's turn numbers, over the window of turns ``low`` to ``last``."""
    step = 1 if last - low + 1 <= 20 else 5
    return "".join(f'<text x="{_LABEL_W + (turn - low) * col + col / 2}" y="12" '
                   f'text-anchor="middle" style="fill:{_MUTED}">{turn}</text>'
                   for turn in range(low, last + 1) if turn % step == 0)


@functools.lru_cache(maxsize=16)
def _columns(first: int, col: int) -> str:
    """A line at the left edge of each turn's column on the strip of all turns, from ``first``
    over two windows (a window starting at or after ``first``, before ``first + WINDOW``, is
    inside): the same for every draw until the window crosses the next multiple of WINDOW."""
    return "".join(f'<line x1="{turn * col}" y1="{_HEAD - 2}" x2="{turn * col}" y2="100%" '
                   f'style="stroke:{_GRID};stroke-width:0.5"/>'
                   for turn in range(first, first + 2 * WINDOW))


_CACHE_COLOURS = {"hit": "var(--jp-success-color1,#2e7d32)", "partial": "var(--jp-warn-color2,#f0c36d)",
                  "write": "var(--jp-info-color1,#0277bd)", "miss": "var(--jp-error-color1,#c62828)"}


def cache_strip_html(rows: Sequence[tuple[int, str, str, str]], marked_turn: int,
                     summary: str) -> str:
    """A strip with one cell per turn, from ``(turn, status, miss_reason, first divergent
    section)`` rows of a cache simulation: hit, partial, write or miss by colour, each cell's
    ``<title>`` saying the status and why; the cell of ``marked_turn`` outlined. ``summary`` is the
    line above it (the model, costs). Each cell carries ``data-turn`` and ``data-status``."""
    cells = []
    for turn, status, reason, label in rows:
        why = "" if reason in ("none", "") else f": {reason}" + (f" at {label}" if label else "")
        mark = f";outline:2px solid {_MARK}" if turn == marked_turn else ""
        cells.append(f'<span class="wm-cache-cell" data-turn="{turn}" data-status="{status}" '
                     f'title="{html.escape(f"turn {turn}: {status}{why}", quote=True)}" '
                     f'style="display:inline-block;width:10px;height:16px;margin:1px;'
                     f'background:{_CACHE_COLOURS.get(status, _EXPIRED)}{mark}"></span>')
    legend = " · ".join(f'<span style="color:{colour}">■</span> {status}'
                        for status, colour in _CACHE_COLOURS.items())
    return (f'<div class="wm-cache-strip"><div style="font-size:12px">{html.escape(summary)}</div>'
            f'<div style="display:flex;flex-wrap:wrap;max-width:720px">{"".join(cells)}</div>'
            f'<div style="font-size:11px;color:{_MUTED}">{legend}; hover a cell for the reason</div>'
            "</div>")


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
    body = "".join(f'<tr><td style="text-align:left">{html.escape(where)}</td>'
                   f'<td style="text-align:right">{count}</td>'
                   f'<td style="text-align:right">{chars:,}</td></tr>'
                   for where, (count, chars) in rows.items())
    return ('<table class="wm-sizes" style="font-size:12px"><tr><th style="text-align:left">'
            f"placement</th><th>sections</th><th>chars</th></tr>{body}</table>")


def changes_html(diff: PromptDiff | None, label: str) -> str:
    """The sections ``diff`` says were added, removed or changed (``label`` names the two
    prompts compared), or a line saying nothing changed."""
    if diff is None:
        return f'<div style="font-size:12px"><i>{html.escape(label)}</i></div>'
    return _changes_list([(s.name, s.status, len(s.old_text), len(s.new_text))
                          for s in diff.sections if s.status != "unchanged"], label)


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
        rows.append((name, status, len(was.content) if was is not None else 0,
                     len(now.content) if now is not None else 0))
    return _changes_list(rows, label)


def _changes_list(changed: Sequence[tuple[str, str, int, int]], label: str) -> str:
    """(name, status, old chars, new chars) of each changed section, as a list under ``label``."""
    head = f'<div style="font-size:12px;color:{_MUTED}">{html.escape(label)}</div>'
    if not changed:
        return head + '<div style="font-size:12px"><i>no section changed</i></div>'
    rows = "".join(f'<li><code>{html.escape(name)}</code> {status} ({old:,} → {new:,} chars)</li>'
                   for name, status, old, new in changed)
    return head + f'<ul class="wm-changes" style="font-size:12px;margin:2px 0">{rows}</ul>'


__all__ = ["ItemLog", "ItemSpan", "item_spans", "timeline_html", "sizes_html", "changes_html",
           "changes_between", "cache_strip_html", "WINDOW"]
