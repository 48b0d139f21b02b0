"""Cutting one logged request into sections whose raw slices join back to its exact bytes.

A request body is located (``jsonspan.locate``) and its wire says what each element is
(``Dialect.body_elements``: which value is a tool schema, a system block, a message, and which of
their pieces the model reads); walked in the order its text is written, every element becomes one
or more sections; the JSON around them (keys, parameters, punctuation) becomes
``framing`` sections, which carry bytes but no prompt text. Strings the model reads (system text,
message text) are cut further by a :class:`~wm_kernel.interop.split.Splitter`; a cut in the decoded
text is a cut of the raw token at the same character (``jsonspan.string_offsets``).

Each :class:`Section` keeps both: ``raw`` (its slice of the log, so ``"".join(s.raw ...)`` is the
record) and ``text`` (what the model reads: the decoded string; a tool schema or a tool call as its
JSON; an image as a placeholder, never its data).
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wm_kernel.dialects.anthropic import message_element
from wm_kernel.dialects.elements import BodyElement, Path
from wm_kernel.dialects.registry import get_dialect
from wm_kernel.interop.jsonspan import Node, locate, string_offsets
from wm_kernel.interop.split import Splitter

#: Section kinds, in the order a provider reads them (framing carries bytes only).
KINDS = ("tool", "system", "message", "framing")
#: Where each kind goes in a ComposedPrompt and the History frame.
PLACEMENT = {"tool": "system", "system": "system", "message": "conversation_prefix"}


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a logged request (see the module docstring).

    ``name`` is unique within its request and stable across the requests of one conversation (an
    element's position and kind, plus the label of its piece: ``system[0] <rules>``,
    ``msg[3] user``); ``trinket`` says who wrote it (``tools``, ``system``, or the message role);
    ``cache`` is the cache_control TTL marked on its element (on the element's last section);
    ``element`` names the tool, block or message it is a piece of; ``where`` the placement a
    reader that knows the agent's layout recovered (MIRA's tap: ``notification`` for a HUD part),
    None to place it by its kind."""

    name: str
    kind: str
    raw: str
    text: str
    trinket: str | None = None
    cache: str | None = None
    element: str = ""
    where: str | None = None

    @property
    def placement(self) -> str | None:
        """Its placement in a ComposedPrompt (None for framing)."""
        return self.where or PLACEMENT.get(self.kind)


@dataclass(frozen=True, slots=True)
class Part:
    """What to make of one node inside an element: ``split`` a string node, show its ``json``, or
    show ``shown`` (a placeholder) in its place; ``label`` prefixes its pieces' labels."""

    node: Node
    mode: str
    label: str = ""
    shown: str = ""


class Cutter:
    """Walks one record's text left to right, emitting sections that cover it exactly."""

    def __init__(self, text: str, splitter: Splitter) -> None:
        self.text = text
        self.splitter = splitter
        self.cursor = 0
        self.sections: list[Section] = []
        self.seen: dict[str, int] = {}  # a repeated name (two tools called alike) gets "#2"

    def framing(self, upto: int) -> None:
        """The bytes from the cursor to ``upto`` as one framing section (none if empty)."""
        if upto > self.cursor:
            chunk = self.text[self.cursor : upto]
            self.sections.append(Section("(framing)", "framing", chunk, chunk))
            self.cursor = upto

    def group(
        self, node: Node, name: str, kind: str, trinket: str | None, parts: Sequence[Part], cache: str | None = None
    ) -> None:
        """The element ``node`` as sections: one per piece of each part (in text order); the bytes
        between parts go with the next piece, the element's tail with the last. No parts: the
        element's JSON as one section."""
        self.framing(node.start)
        emitted: list[tuple[str, int, str]] = []  # (label, raw end, text)
        for part in sorted(parts, key=lambda p: p.node.start):
            prefix = f"{part.label} " if part.label else ""
            token = self.text[part.node.start : part.node.end]
            if part.mode == "split" and part.node.kind == "string":
                offsets = string_offsets(token)
                value = json.loads(token)
                pieces = self.splitter.split(value)
                for index, piece in enumerate(pieces):
                    last = index == len(pieces) - 1
                    end = part.node.end if last else part.node.start + offsets[piece.end]
                    emitted.append(((prefix + piece.label).strip(), end, piece.text))
            else:
                shown = part.shown if part.mode == "placeholder" else token
                emitted.append((part.label, part.node.end, shown))
        if not emitted:
            emitted.append(("", node.end, self.text[node.start : node.end]))
        seen = self.seen
        for index, (label, end, shown) in enumerate(emitted):
            stop = node.end if index == len(emitted) - 1 else end
            full = f"{name} {label}" if label else name
            seen[full] = seen.get(full, 0) + 1
            if seen[full] > 1:
                full = f"{full} #{seen[full]}"
            mark = cache if index == len(emitted) - 1 else None
            self.sections.append(Section(full, kind, self.text[self.cursor : stop], shown, trinket, mark, name))
            self.cursor = stop

    def element(self, node: Node, element: BodyElement) -> None:
        """A wire's element (``wm_kernel.dialects.elements``) at ``node``, its parts found below it."""
        parts = [Part(resolve(node, p.path), p.mode, p.label, p.shown) for p in element.parts]
        self.group(node, element.name, element.kind, element.trinket, parts, element.cache)

    def finish(self) -> list[Section]:
        """The sections, the record's tail included."""
        self.framing(len(self.text))
        return self.sections


def resolve(node: Node, path: Path) -> Node:
    """The node at ``path`` (keys and indexes) below ``node``."""
    for step in path:
        node = node[step]
    return node


def anthropic_message(cut: Cutter, node: Node, message: Any, name: str, first: int = 0) -> None:
    """One Anthropic message at ``node`` (a transcript's, a MIRA turn's), as the Messages wire
    reads it (``wm_kernel.dialects.anthropic.message_element``): its blocks numbered from
    ``first``, a cache mark on its last marked block."""
    cut.element(node, message_element(message, (), name, first))


def cut_body(
    text: str, body: Mapping[str, Any], dialect: str, splitter: Splitter, node: Node | None = None
) -> list[Section]:
    """The sections of one request body written as ``text``, its elements as the wire ``dialect``
    reads them (``Dialect.body_elements``; ValueError for a wire that reads none). A body alone: the
    sections join to ``text``; inside a larger record, pass the body's ``node`` and the record's
    text."""
    located = node if node is not None else locate(text)
    cut = Cutter(text, splitter)
    placed = [(resolve(located, e.path), e) for e in get_dialect(dialect).body_elements(body)]
    for element_node, element in sorted(placed, key=lambda pair: pair[0].start):  # the text's order
        cut.element(element_node, element)
    return cut.finish()


_KIND = operator.attrgetter("kind")


def first_message(sections: Sequence[Section]) -> Section | None:
    """The first section of kind message, None if there is none. The first few are looked at by
    index (on a transcript's chain of messages that reads its first message, no walk)."""
    for index in range(min(len(sections), 8)):
        if sections[index].kind == "message":
            return sections[index]
    return next((s for s in sections if s.kind == "message"), None)


class PromptSequence(Sequence[Section]):
    """Sections that know their kinds and their prompt order without a look at each (a
    transcript's chain of messages keeps them as it is built); :func:`prompt_order` and
    :func:`kinds_of` ask it."""

    __slots__ = ()

    def kinds(self) -> frozenset[str]:
        """The kinds of its sections, framing left out."""
        return frozenset(map(_KIND, self)) - {"framing"}

    def prompt_order(self) -> list[Section]:
        """What :func:`prompt_order` gives for it."""
        return _by_kind(list(self))

    def cache_marked(self) -> bool:
        """Whether any of its sections carries a cache mark."""
        return any(s.cache for s in self)


def kinds_of(sections: Sequence[Section]) -> frozenset[str]:
    """The kinds of ``sections``, framing left out."""
    if isinstance(sections, PromptSequence):
        return sections.kinds()
    return frozenset(map(_KIND, sections)) - {"framing"}


def prompt_order(sections: Sequence[Section]) -> list[Section]:
    """The prompt sections (no framing) in the order a provider reads them: tools, system,
    messages (text order within each kind)."""
    if isinstance(sections, PromptSequence):
        return sections.prompt_order()
    return _by_kind(list(sections))


def _by_kind(items: list[Section]) -> list[Section]:
    kinds = list(map(_KIND, items))
    present = set(kinds)
    out: list[Section] = []
    for kind in KINDS[:3]:  # a pass per kind there is (not framing), each keeping its own in text order
        if kind in present:
            out.extend(itertools.compress(items, map(kind.__eq__, kinds)) if len(present) > 1 else items)
    return out
