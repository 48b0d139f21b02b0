"""The messages of a Claude Code transcript as the requests share them: each line cut into sections
once (:class:`Line`), lines joined into messages (:class:`Message`), and each request's view of
the conversation before it as a chain of those messages up to a line (:class:`Chain`), read as a
sequence of sections (:class:`ChainSections`) or of line numbers (:class:`ChainLines`) without
copying the conversation. ``wm_kernel.interop.claude_code``'s reader builds them.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, overload

from wm_kernel.interop.bodies import PromptSequence, Section


class Line:
    """One message line: its number, text, sections (cut once) and time."""

    __slots__ = ("number", "text", "sections", "at", "blocks")

    def __init__(self, number: int, text: str, sections: tuple[Section, ...], at: datetime | None, blocks: int) -> None:
        self.number, self.text, self.sections, self.at, self.blocks = number, text, sections, at, blocks


class Message:
    """One message the model reads: the lines written for it, its place in the chain."""

    __slots__ = (
        "role",
        "depth",
        "parent",
        "lines",
        "blocks",
        "results",
        "owner",
        "conversation",
        "marks",
        "summary",
        "usage",
        "model",
        "request_id",
        "chain",
        "sidechain",
        "full",
        "message_id",
        "stop_reason",
        "session_id",
        "boundary",
    )

    def __init__(
        self,
        role: str,
        depth: int,
        parent: Message | None,
        owner: object,
        conversation: str,
        marks: tuple[str, ...],
        sidechain: bool,
    ) -> None:
        self.role, self.depth, self.parent, self.owner = role, depth, parent, owner
        self.lines: list[Line] = []
        self.blocks = 0
        self.results: Message | None = None  # the user message holding this one's tool results
        self.conversation, self.marks, self.sidechain = conversation, marks, sidechain
        self.summary = False  # the chain starts at a compaction summary
        self.usage: Mapping[str, Any] | None = None
        self.model: str | None = None
        self.request_id: str | None = None
        self.chain: Chain | None = None  # what its request sends (assistant messages)
        self.full: Chain | None = None  # the chain up to this message, all its lines
        self.message_id: str | None = None
        self.stop_reason: str | None = None
        self.session_id: str | None = None
        self.boundary: Mapping[str, Any] | None = None  # the compact_boundary a summary follows

    def add(self, line: Line) -> None:
        self.lines.append(line)
        self.blocks += line.blocks


class Chain:
    """The messages a request sends, as a persistent list: its last message (and how many of its
    lines), then the chain before it, shared with every other request that sent the same start.
    So a request costs its own link, not a copy of the conversation."""

    __slots__ = (
        "node",
        "count",
        "parent",
        "own",
        "prompt",
        "kinds",
        "sections",
        "lines",
        "_root",
        "owner",
        "depth",
        "before",
        "marked",
    )

    def __init__(self, node: Message, count: int, parent: Chain | None) -> None:
        self.node, self.count, self.parent = node, count, parent
        own = node.lines[:count]
        self.own: tuple[Section, ...] = tuple(itertools.chain.from_iterable(map(_SECTIONS, own)))
        # (a transcript read for its usage alone has no sections: nothing more to look at)
        self.prompt: tuple[Section, ...] = tuple(s for s in self.own if s.kind != "framing") if self.own else ()
        before = parent.kinds if parent is not None else frozenset()
        kinds = {s.kind for s in self.prompt}
        #: the kinds of the chain's sections, framing left out (the parent's set where it adds none)
        self.kinds: frozenset[str] = before if kinds <= before else before | kinds
        self.sections: int = len(self.own) + (parent.sections if parent else 0)
        self.lines: int = len(own) + (parent.lines if parent else 0)
        # (the first link's is None, not itself: a chain is then no cycle, freed as soon as dropped)
        self._root: Chain | None = parent.root if parent is not None else None
        #: how many links come before this one
        self.depth: int = parent.depth + 1 if parent is not None else 0
        #: how many prompt sections the links before this one hold
        self.before: int = parent.before + len(parent.prompt) if parent is not None else 0
        #: whether a section of the chain carries a cache mark (a transcript's never do)
        self.marked: bool = (parent is not None and parent.marked) or (
            bool(self.prompt) and any(s.cache for s in self.prompt)
        )
        #: the file every message of the chain is in, None where they are in several
        self.owner: object | None = node.owner if parent is None or parent.owner is node.owner else None

    @property
    def root(self) -> Chain:
        """The first link of the chain."""
        return self._root if self._root is not None else self

    def links(self) -> list[Chain]:
        out: list[Chain] = []
        link: Chain | None = self
        while link is not None:
            out.append(link)
            link = link.parent
        out.reverse()
        return out

    def prompt_sections(self) -> list[Section]:
        """The prompt sections of the links from the root to this one. The walk stops where it
        meets the links asked for last (a conversation's next request asks for them plus its
        own): each request walks what it adds, and the rest is a slice of the last answer."""
        global _last_prompt
        links, flat = _last_prompt
        added: list[Chain] = []
        link: Chain | None = self
        while link is not None and not (link.depth < len(links) and links[link.depth] is link):
            added.append(link)
            link = link.parent
        added.reverse()
        if link is None:
            links, flat = added, list(itertools.chain.from_iterable(map(_PROMPT, added)))
        else:  # the links they share stay where they are; what follows is cut off and replaced
            # (a request's last link is its message so far: the next request's is a new one)
            del links[link.depth + 1 :]
            del flat[link.before + len(link.prompt) :]
            links.extend(added)
            flat.extend(itertools.chain.from_iterable(map(_PROMPT, added)))
        _last_prompt = (links, flat)
        return flat[:]  # (a copy: the next walk changes this list in place)


#: the links and prompt sections :meth:`Chain.prompt_sections` gave last (where the next walk stops)
_last_prompt: tuple[list[Chain], list[Section]] = ([], [])


_PROMPT, _OWN = operator.attrgetter("prompt"), operator.attrgetter("own")
_SECTIONS = operator.attrgetter("sections")


class ChainSections(PromptSequence):
    """A request's sections, read from its chain when asked (never copied per request)."""

    __slots__ = ("_chain",)

    def __init__(self, chain: Chain) -> None:
        self._chain = chain

    def __iter__(self) -> Iterator[Section]:
        return itertools.chain.from_iterable(map(_OWN, self._chain.links()))

    def kinds(self) -> frozenset[str]:
        return self._chain.kinds

    def prompt_order(self) -> list[Section]:
        if len(self._chain.kinds) > 1:  # tools or system among the messages: sorted by kind
            return super().prompt_order()
        return self._chain.prompt_sections()

    def cache_marked(self) -> bool:
        return self._chain.marked

    def __len__(self) -> int:
        return self._chain.sections

    @overload
    def __getitem__(self, index: int) -> Section: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Section, ...]: ...

    def __getitem__(self, index: int | slice) -> Section | tuple[Section, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("section index out of range")
        root = self._chain.root
        if index < len(root.own):  # in the first message: no walk along the chain
            return root.own[index]
        return next(itertools.islice(iter(self), index, None))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ChainSections({len(self)} sections)"


class ChainLines(Sequence[int]):
    """The line numbers of a request's messages in its own file, read from its chain when asked."""

    __slots__ = ("_chain", "_owner")

    def __init__(self, chain: Chain, owner: object) -> None:
        self._chain, self._owner = chain, owner

    def __iter__(self) -> Iterator[int]:
        for link in self._chain.links():
            if link.node.owner is self._owner:
                for line in link.node.lines[: link.count]:
                    yield line.number

    def __len__(self) -> int:
        chain = self._chain
        if chain.owner is not None:  # one file: counted as the chain was built
            return chain.lines if chain.owner is self._owner else 0
        return sum(1 for _ in self)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[int, ...]: ...

    def __getitem__(self, index: int | slice) -> int | tuple[int, ...]:
        root = self._chain.root
        if index == 0 and self._chain.owner is self._owner and root.count:  # the first, without a walk
            return root.node.lines[0].number
        return tuple(self)[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


__all__ = ["Line", "Message", "Chain", "ChainSections", "ChainLines"]
