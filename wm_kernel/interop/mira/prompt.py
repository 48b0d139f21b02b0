"""The :class:`~wm_kernel.core.prompt.ComposedPrompt` of a MIRA chat turn, joined back from its sections.

:func:`mira_prompt` puts the sections :mod:`wm_kernel.interop.mira.sections` cut back where MIRA's
composer had them, blame included.
"""

from __future__ import annotations

from collections.abc import Sequence

from wm_kernel.core.prompt import BlameData, ComposedPrompt, SectionRecord
from wm_kernel.interop.bodies import Section, prompt_order
from wm_kernel.interop.mira.markers import HUD_HEAD, MARKERS
from wm_kernel.interop.mira.sections import COMPOSER


def mira_prompt(sections: Sequence[Section], turn: int | None = None) -> ComposedPrompt:
    """The :class:`ComposedPrompt` MIRA's composer returned for a chat turn, from its sections:
    the system sections before the composer's ``"\\n\\n"`` are ``cached_content``, after it
    ``non_cached_content``; the prefix, post-history and HUD as the composer's other keys; every
    character owned by a section or by ``(composer)``."""
    records: list[SectionRecord] = []
    system: dict[str, list[tuple[str, int]]] = {"cached_content": [], "non_cached_content": []}
    items: dict[str, list[tuple[str, int]]] = {"conversation_prefix": [], "post_history": []}
    hud: list[tuple[str, int]] = []
    frame: tuple[str, str] | None = None
    cached = True
    for section in prompt_order(sections):
        where = section.where
        if where is None:
            continue
        if section.trinket == COMPOSER:
            if where == "system":
                if section.text == "\n\n":
                    cached = False
                    continue
                system["cached_content" if cached else "non_cached_content"].append((section.text, -1))
            elif where == "notification":
                hud.append((section.text, -1))
                head = HUD_HEAD.match(section.text)
                if head is not None:
                    frame = (head.group(2), head.group(1))
            continue
        marker = next((m for m in MARKERS if m.name == section.name), None)
        if where == "system":
            policy = cached
        else:
            policy = marker.cache_policy if marker is not None else False
        index = len(records)
        records.append(SectionRecord(section.name, where, section.text, policy, section.trinket))
        if where == "system":
            system["cached_content" if cached else "non_cached_content"].append((section.text, index))
        elif where == "notification":
            hud.append((section.text, index))
        else:
            items[where].append((section.text, index))
    blame: BlameData = {}
    texts: dict[str, str] = {}
    for key, parts in [*system.items(), ("notification_center", hud)]:
        texts[key] = "".join(text for text, _ in parts)
        if parts:
            blame[key] = tuple((len(text), owner) for text, owner in parts if text)
    for where, parts in items.items():
        for number, (text, owner) in enumerate(parts):
            blame[f"{where}_items[{number}]"] = ((len(text), owner),) if text else ()
    return ComposedPrompt(
        texts["cached_content"],
        texts["non_cached_content"],
        [t for t, _ in items["conversation_prefix"]],
        [t for t, _ in items["post_history"]],
        texts["notification_center"],
        sections=records,
        turn=turn,
        blame=blame,
        hud_frame=frame,
    )


__all__ = ["mira_prompt"]
