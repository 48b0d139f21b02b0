"""A logged request's sections as a ComposedPrompt, so diff, first_change and blame work on it.

:func:`composed` builds the prompt of one request: tools and system sections in ``cached_content``
(the sections :func:`cached_names` finds in the cached prefix: up to the last cache mark, or every
tool and system section for OpenAI's automatic prefix caching) or ``non_cached_content``, one
``conversation_prefix_items`` entry per message. Elements are joined with a blank line the blame map
gives to ``(composer)``; a blame map covers every character.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterator, Sequence
from typing import Any, overload

from wm_kernel.core.prompt import BlameData, ComposedPrompt, SectionRecord
from wm_kernel.dialects.elements import marked_prefix
from wm_kernel.dialects.registry import get_dialect, known_name
from wm_kernel.interop.bodies import PromptSequence, Section
from wm_kernel.interop.formats import LoggedRequest
from wm_kernel.utils.sequences import shared_start

#: Blank line between two elements of one prompt key (owned by "(composer)" in the blame map).
ELEMENT_SEPARATOR = "\n\n"


def cached_names(request: LoggedRequest) -> set[str]:
    """The sections in the cached prefix, as the request's wire caches (``Dialect.cached_blocks``):
    up to the last cache mark (Anthropic, and a provider no wire names), every tool and system
    section under automatic prefix caching (OpenAI)."""
    sections = request.sections
    blocks = sections if isinstance(sections, PromptSequence) else _Listed(sections)
    if known_name(request.provider):
        return set(map(_NAME, get_dialect(request.provider).cached_blocks(blocks)))
    return set(map(_NAME, marked_prefix(blocks)))


_NAME = operator.attrgetter("name")


class _Listed(PromptSequence):
    """A request's sections as a :class:`PromptSequence` (its order and marks asked of them)."""

    __slots__ = ("_sections",)

    def __init__(self, sections: Sequence[Section]) -> None:
        self._sections = sections

    def __len__(self) -> int:
        return len(self._sections)

    def __iter__(self) -> Iterator[Section]:
        return iter(self._sections)

    @overload
    def __getitem__(self, index: int) -> Section: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Section]: ...

    def __getitem__(self, index: int | slice) -> Section | Sequence[Section]:
        return self._sections[index]


class _Build:
    """Where building one request's prompt got to, so that the next request, which repeats it and
    adds to it (a transcript's requests share their lines' sections), carries on from here
    instead of starting again: a session's prompts then cost what each request adds."""

    def __init__(self, cached: set[str]) -> None:
        self.sections: list[Section] = []
        self.cached = cached
        self.records: list[SectionRecord] = []
        self.keys: dict[str, list[tuple[str, int]]] = {"cached_content": [], "non_cached_content": []}
        self.items: list[list[tuple[str, int]]] = []
        self.members: list[list[int]] = []
        self.previous: str | None = None
        self.texts: list[str] = []  # the text and blame of each item but the last (which may grow)
        self.blames: dict[str, tuple[tuple[int, int], ...]] = {}  # by item key, in order

    def resumes(self, sections: list[Section], cached: set[str]) -> bool:
        """Whether ``sections`` starts with this build's (the same objects) under the same cache
        marks, so the build can carry on with them. (A prompt copies what it holds of a build,
        so the build carries on in place.)"""
        done = len(self.sections)
        return cached == self.cached and len(sections) >= done and shared_start(sections[:done], self.sections) == done

    def add(self, sections: list[Section], memo: dict[Any, Any]) -> None:
        """Carry on with ``sections`` (which start with this build's)."""
        cached = self.cached
        for index in range(len(self.sections), len(sections)):
            s = sections[index]
            rkey = (id(s), s.name in cached)
            record = memo.get(rkey)
            if record is None:
                record = memo[rkey] = SectionRecord(
                    s.name, s.placement or "system", s.text, s.name in cached, s.trinket
                )
            self.records.append(record)
            if s.kind == "message":
                if s.element != self.previous:
                    self.items.append([])
                    self.members.append([])
                target = self.items[-1]
                self.members[-1].append(id(s))
            else:
                target = self.keys["cached_content" if s.name in cached else "non_cached_content"]
                if target and s.element != self.previous:
                    target.append((ELEMENT_SEPARATOR, -1))
            target.append((s.text, index))
            self.previous = s.element
        self.sections = sections
        # every item but the last is complete: its text and blame are kept
        names = _item_names(len(self.items))
        for i in range(max(len(self.texts) - 1, 0), len(self.items)):
            text, blame = _item(self.items[i], self.members[i], memo)
            if i < len(self.texts):
                self.texts[i] = text
            else:
                self.texts.append(text)
            self.blames[names[i]] = blame

    def prompt(self, turn: int) -> ComposedPrompt:
        blame: BlameData = self.blames.copy()  # (copied whole, then the two keys: no insert per item)
        texts: dict[str, str] = {}
        for key, parts in self.keys.items():
            texts[key] = "".join(text for text, _ in parts)
            blame[key] = tuple((len(text), owner) for text, owner in parts if text)
        return ComposedPrompt(
            texts["cached_content"],
            texts["non_cached_content"],
            self.texts,
            sections=self.records,
            turn=turn,
            blame=blame,
        )


def _item(parts: list[tuple[str, int]], members: list[int], memo: dict[Any, Any]) -> tuple[str, Any]:
    """The text and blame of one conversation item, kept once in ``memo``."""
    ident = ("item", parts[0][1], *members)
    found = memo.get(ident)
    if found is None:
        found = memo[ident] = (
            "".join(text for text, _ in parts),
            tuple((len(text), owner) for text, owner in parts if text),
        )
    return found


#: the blame keys of conversation items, made once
_ITEM_KEYS: list[str] = []


_NAMING = threading.Lock()  # two threads extending the list at once would make a name twice


def _item_names(count: int) -> list[str]:
    """The first ``count`` item keys (the list itself: it only grows)."""
    with _NAMING:
        _ITEM_KEYS.extend(f"conversation_prefix_items[{i}]" for i in range(len(_ITEM_KEYS), count))
    return _ITEM_KEYS


#: where the memo keeps the last build of each conversation (by its first section: a transcript's
#: subagents and the main conversation take turns)
_LAST = "last builds"


def composed(
    sections: list[Section], cached: set[str], turn: int, shared: dict[Any, Any] | None = None
) -> ComposedPrompt:
    """The ComposedPrompt of one request's sections. ``shared`` (one per session) keeps each
    section's record and each message's text and blame once, for every request that holds the same
    section objects (a transcript's requests share their lines' sections), and the last build:
    a request that starts with the one built before carries on from it. The prompts of a session
    then cost its messages once, not once per request."""
    memo: dict[Any, Any] = {} if shared is None else shared
    builds: dict[int, _Build] = memo.setdefault(_LAST, {})
    root = id(sections[0]) if sections else 0
    last = builds.get(root)
    build = last if last is not None and last.resumes(sections, cached) else _Build(cached)
    build.add(sections, memo)
    builds[root] = build
    return build.prompt(turn)


__all__ = ["ELEMENT_SEPARATOR", "cached_names", "composed"]
