"""How MIRA's sections open: the kit's trinkets' markers, the scaffolding delimiter, the HUD's head.

A chat turn's system text is MIRA's base prompt, then its scaffolding delimiter (a blank line, a
rule of 60 "═", a note, a rule), then the system sections, each recognised by how the kit's trinket
opens it (:data:`MARKERS`: ``<user_model>`` is ``behavioral_directives`` of ``LoraTrinket``...).
The HUD message opens with a framed title and ``<NAME:hud>`` (:data:`HUD_HEAD`).
:mod:`wm_kernel.interop.mira.sections` cuts a turn by them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wm_kernel.core.composer.hud_frame import RULE

#: MIRA's scaffolding delimiter, after the base prompt: what marks a chat turn's system text.
SCAFFOLDING = re.compile(rf"\n\n{RULE}\n[^\n]*\n{RULE}")
#: The head of the HUD's frame: its title (group 1) and the name of its ``<NAME:hud>`` element (group 2).
HUD_HEAD = re.compile(rf"{RULE}\n([^\n]*)\n{RULE}\n<([A-Za-z_][\w.-]*):hud>\n")


@dataclass(frozen=True)
class Marker:
    """How a section the kit's trinkets write opens: its name in the layout, its trinket, the
    pattern at its start, the element that holds it (its end; None: it runs to the next
    separator), its cache policy, elements that may follow inside it after a blank line, and
    whether separators may occur inside it (``greedy``: only a separator followed by another
    section's opening ends it)."""

    name: str
    trinket: str
    opener: re.Pattern[str]
    tag: str | None
    cache_policy: bool
    follows: tuple[str, ...] = ()
    greedy: bool = False


def _marker(
    name: str,
    trinket: str,
    tag: str | None,
    cache_policy: bool,
    *,
    opener: str | None = None,
    follows: tuple[str, ...] = (),
    greedy: bool = False,
) -> Marker:
    pattern = opener if opener is not None else rf"<{re.escape(tag or '')}[\s>]"
    return Marker(name, trinket, re.compile(pattern), tag, cache_policy, follows, greedy)


#: The sections of the kit's built-in trinkets, as each opens (kept equal to the trinkets' output by
#: tests/interop/test_mira_tap.py).
MARKERS: tuple[Marker, ...] = (
    _marker("behavioral_directives", "LoraTrinket", "user_model", True, follows=("behavioral_checkin",)),
    _marker("conversation_manifest", "ManifestTrinket", "conversation_manifest", False),
    _marker("datetime_section", "TimeManager", "current_datetime", False),
    _marker("active_reminders", "ReminderManager", "active_reminders", False),
    _marker("relevant_memories", "ProactiveMemoryTrinket", "surfaced_memories", False),
    _marker("peanutgallery_guidance", "PeanutGalleryTrinket", "mira:peanutgallery", False),
    _marker(
        "context_search_results",
        "GetContextTrinket",
        None,
        False,
        opener=re.escape("=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ==="),
        greedy=True,
    ),
    _marker("domaindoc", "DomaindocTrinket", None, True, opener=re.escape(f"{RULE}\nDOMAIN KNOWLEDGE")),
    # MIRA HEAD's five newer trinkets (trinkets.MIRA_HEAD_NAMES)
    _marker("location_context", "LocationTrinket", None, True, opener=re.escape("=== Location Context ===")),
    _marker("async_activity", "AsyncActivityTrinket", "async_activity", False),
    _marker("inbox_status", "EmailTrinket", "inbox_status", False),
    _marker("forage_results", "ForageTrinket", "forage_results", False),
    _marker("whilethecatsaway_results", "WhileTheCatsAwayTrinket", "whilethecatsaway_results", False),
)


def marker_at(text: str, pos: int) -> Marker | None:
    """The marker whose opening is at ``text[pos:]``, or None."""
    for marker in MARKERS:
        if marker.opener.match(text, pos):
            return marker
    return None


__all__ = ["HUD_HEAD", "MARKERS", "SCAFFOLDING", "Marker", "marker_at"]
