"""Deterministic sectioning of a prompt text: XML-tagged regions, markdown headings, your own rules.

No model decides where a section starts. A :class:`Splitter` cuts a text into pieces that cover it
exactly, in order (``"".join`` of the pieces is the text), by these rules:

1. XML-tagged regions at the top level (``<rules>...</rules>``, attributes allowed, the same tag
   nested inside counted) are one piece each, labelled ``<rules>``; whitespace after a region
   stays with it.
2. Between them, a markdown ATX heading (``# Title`` ... ``###### Title`` at a line start, outside
   ``````` fences) starts a piece labelled by the heading line (``## Tone``).
3. Your rules (:class:`SplitRule`, a regular expression in MULTILINE mode) add starts the same way:
   each match starts a piece, labelled by the rule's ``label`` (``{0}`` is the matched text,
   ``{name}`` a named group) or the first line of the match.

Text before the first start has the empty label (the part keeps its element's own name).

Examples
--------
>>> s = Splitter()
>>> [(p.label, p.text) for p in s.split("You are Kit.\\n<rules>\\nBe kind.\\n</rules>\\n# Tone\\nWarm.")]
[('', 'You are Kit.\\n'), ('<rules>', '<rules>\\nBe kind.\\n</rules>\\n'), ('# Tone', '# Tone\\nWarm.')]
>>> rule = SplitRule(r"^Step \\d+:", label="step")
>>> [p.label for p in Splitter([rule]).split("Intro\\nStep 1: a\\nStep 2: b")]
['', 'step', 'step']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_OPEN = re.compile(r"<([A-Za-z_][\w.:-]*)(?:\s[^<>]*)?>")
_HEADING = re.compile(r"^(#{1,6})[ \t]+\S[^\n]*", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)
_LABEL_CHARS = 60


@dataclass(frozen=True, slots=True)
class Piece:
    """``text[start:end]`` of the split text, and its label (empty for the text before any start)."""

    label: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class SplitRule:
    """A user's splitting rule: every match of ``pattern`` (MULTILINE) starts a new piece.

    ``label`` names the piece: a format string over the match (``{0}`` the matched text,
    ``{name}`` a named group); None labels it by the match's first line."""

    pattern: str
    label: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str) or not self.pattern:
            raise ValueError(f"a split rule needs a non-empty regular expression, got {self.pattern!r}")
        try:
            compiled = re.compile(self.pattern, re.MULTILINE)
        except re.error as exc:
            raise ValueError(f"split rule {self.pattern!r} is not a regular expression: {exc}") from None
        if compiled.match(""):
            raise ValueError(f"split rule {self.pattern!r} matches the empty string; it must match text")
        if self.label is not None and not isinstance(self.label, str):
            raise TypeError(f"a split rule's label must be a str, got {type(self.label).__name__}")

    def starts(self, text: str, lo: int, hi: int) -> Iterable[tuple[int, str]]:
        """(offset, label) of every match inside ``text[lo:hi]``."""
        for match in re.compile(self.pattern, re.MULTILINE).finditer(text, lo, hi):
            if match.end() == match.start():
                continue
            if self.label is None:
                label = _first_line(match.group(0))
            else:
                groups = {k: v or "" for k, v in match.groupdict().items()}
                label = self.label.format(match.group(0), **groups)
            yield match.start(), label


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= _LABEL_CHARS else line[: _LABEL_CHARS - 3] + "..."


class Splitter:
    """Cuts texts into :class:`Piece` s by the rules of the module docstring.

    Parameters
    ----------
    rules:
        Your :class:`SplitRule` s (or plain regular expressions), applied between XML regions.
    xml, headings:
        Switch the built-in rules off (False) to split by your rules alone.
    """

    def __init__(self, rules: Sequence[SplitRule | str] = (), *, xml: bool = True, headings: bool = True) -> None:
        if isinstance(rules, (str, SplitRule)):
            rules = [rules]
        self.rules: tuple[SplitRule, ...] = tuple(r if isinstance(r, SplitRule) else SplitRule(r) for r in rules)
        self.xml = bool(xml)
        self.headings = bool(headings)

    def __repr__(self) -> str:
        return f"Splitter(rules={[r.pattern for r in self.rules]!r}, xml={self.xml}, headings={self.headings})"

    def split(self, text: str) -> list[Piece]:
        """The pieces of ``text``, in order; ``"".join(p.text for p in pieces) == text``. An empty
        text is one empty piece."""
        if not isinstance(text, str):
            raise TypeError(f"can only split a str, got {type(text).__name__}")
        starts: dict[int, str] = {0: ""}
        pos = 0
        regions = _xml_regions(text) if self.xml else []
        gaps: list[tuple[int, int]] = []
        for begin, finish, tag in regions:
            gaps.append((pos, begin))
            starts[begin] = f"<{tag}>"
            # whitespace after a region belongs to it, so the next piece starts at its own text
            pos = finish + len(text[finish:]) - len(text[finish:].lstrip())
            starts.setdefault(pos, "")
        gaps.append((pos, len(text)))
        for lo, hi in gaps:
            for offset, label in self._starts(text, lo, hi):
                starts[offset] = label
        bounds = sorted(o for o in starts if o < len(text)) or [0]
        pieces = []
        for index, start in enumerate(bounds):
            end = bounds[index + 1] if index + 1 < len(bounds) else len(text)
            pieces.append(Piece(starts[start], start, end, text[start:end]))
        return _merge_blank(pieces)

    def _starts(self, text: str, lo: int, hi: int) -> Iterable[tuple[int, str]]:
        fenced = _fenced(text, lo, hi)
        if self.headings:
            for match in _HEADING.finditer(text, lo, hi):
                if not any(a <= match.start() < b for a, b in fenced):
                    yield match.start(), _first_line(match.group(0))
        for rule in self.rules:
            yield from rule.starts(text, lo, hi)


def _merge_blank(pieces: list[Piece]) -> list[Piece]:
    """A piece of whitespace only joins the piece before it (or after it, if first)."""
    out: list[Piece] = []
    for piece in pieces:
        if out and not piece.text.strip():
            last = out[-1]
            out[-1] = Piece(last.label, last.start, piece.end, last.text + piece.text)
        elif out and not out[-1].text.strip() and not out[-1].label:
            first = out.pop()
            out.append(Piece(piece.label, first.start, piece.end, first.text + piece.text))
        else:
            out.append(piece)
    return out


def _fenced(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    spans = []
    opened: int | None = None
    for match in _FENCE.finditer(text, lo, hi):
        if opened is None:
            opened = match.start()
        else:
            spans.append((opened, match.end()))
            opened = None
    if opened is not None:
        spans.append((opened, hi))
    return spans


def _xml_regions(text: str) -> list[tuple[int, int, str]]:
    """(start, end, tag) of each top-level ``<tag ...>...</tag>`` region, in order."""
    regions: list[tuple[int, int, str]] = []
    pos = 0
    while True:
        match = _OPEN.search(text, pos)
        if match is None:
            return regions
        tag = match.group(1)
        end = closing_end(text, tag, match.end())
        if end is None:
            pos = match.end()  # an unclosed tag is plain text
            continue
        regions.append((match.start(), end, tag))
        pos = end


def closing_end(text: str, tag: str, pos: int) -> int | None:
    """The end of the ``</tag>`` closing the one opened before ``pos`` (same-name nesting counted),
    or None when it is never closed."""
    pattern = re.compile(rf"<(/?){re.escape(tag)}(?:\s[^<>]*)?>")
    depth = 1
    for match in pattern.finditer(text, pos):
        if match.group(0).endswith("/>"):
            continue
        depth += -1 if match.group(1) else 1
        if depth == 0:
            return match.end()
    return None
