"""A logged request's sections as a ComposedPrompt, so diff, first_change and blame work on it.

:func:`composed` builds the prompt of one request: tools and system sections in ``cached_content``
(the sections :func:`cached_names` finds in the cached prefix: up to the last cache mark, or every
tool and system section for OpenAI's automatic prefix caching) or ``non_cached_content``, one
``conversation_prefix_items`` entry per message. Elements are joined with a blank line the blame map
gives to ``(composer)``; a blame map covers every character.
"""

from __future__ import annotations

from typing import Any

from wm_kernel.core.prompt import BlameData, ComposedPrompt, SectionRecord
from wm_kernel.dialects.registry import get_dialect, known_name
from wm_kernel.interop.bodies import Section, prompt_order
from wm_kernel.interop.formats import LoggedRequest

#: Blank line between two elements of one prompt key (owned by "(composer)" in the blame map).
ELEMENT_SEPARATOR = "\n\n"


def cached_names(request: LoggedRequest) -> set[str]:
    """The sections in the cached prefix: up to the last cache mark (Anthropic), every tool and
    system section under automatic prefix caching (OpenAI)."""
    ordered = prompt_order(request.sections)
    if known_name(request.provider) and get_dialect(request.provider).whole_prefix_cached:
        return {s.name for s in ordered if s.kind != "message"}
    marked = [i for i, s in enumerate(ordered) if s.cache]
    return {s.name for s in ordered[: marked[-1] + 1]} if marked else set()


def composed(
    sections: list[Section], cached: set[str], turn: int, shared: dict[Any, Any] | None = None
) -> ComposedPrompt:
    """The ComposedPrompt of one request's sections. ``shared`` (one per session) keeps each
    section's record and each message's text and blame once, for every request that holds the same
    section objects (a transcript's requests share their lines' sections): the prompts of a session
    then cost its messages once, not once per request."""
    memo: dict[Any, Any] = {} if shared is None else shared
    records = []
    for s in sections:
        rkey = (id(s), s.name in cached)
        record = memo.get(rkey)
        if record is None:
            record = memo[rkey] = SectionRecord(s.name, s.placement or "system", s.text, s.name in cached, s.trinket)
        records.append(record)
    keys: dict[str, list[tuple[str, int]]] = {"cached_content": [], "non_cached_content": []}
    items: list[list[tuple[str, int]]] = []
    members: list[list[int]] = []
    previous: str | None = None
    for index, section in enumerate(sections):
        if section.kind == "message":
            if section.element != previous:
                items.append([])
                members.append([])
            target = items[-1]
            members[-1].append(id(section))
        else:
            target = keys["cached_content" if section.name in cached else "non_cached_content"]
            if target and section.element != previous:
                target.append((ELEMENT_SEPARATOR, -1))
        target.append((section.text, index))
        previous = section.element
    blame: BlameData = {}
    texts: dict[str, str] = {}
    for key, parts in keys.items():
        texts[key] = "".join(text for text, _ in parts)
        blame[key] = tuple((len(text), owner) for text, owner in parts if text)
    prefix: list[str] = []
    for i, parts in enumerate(items):
        key = f"conversation_prefix_items[{i}]"
        ident = ("item", parts[0][1], *members[i])
        found = memo.get(ident)
        if found is None:
            found = memo[ident] = (
                "".join(text for text, _ in parts),
                tuple((len(text), owner) for text, owner in parts if text),
            )
        texts[key], blame[key] = found
        prefix.append(found[0])
    return ComposedPrompt(
        texts["cached_content"], texts["non_cached_content"], prefix, sections=records, turn=turn, blame=blame
    )


__all__ = ["ELEMENT_SEPARATOR", "cached_names", "composed"]
