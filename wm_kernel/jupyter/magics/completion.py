"""Tab completion of the magics' arguments: trinket names, their sub-commands and options, sections.

:mod:`wm_kernel.jupyter.magics.working_memory` hooks :func:`complete` on ``%trinket``, ``%compose``
and ``%%compose`` when the extension loads, and takes it off again when it unloads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from wm_kernel.core.prompt_dict import PLACEMENTS
from wm_kernel.display.session_views import known_sections
from wm_kernel.jupyter.magics.args import resolve_trinket

if TYPE_CHECKING:
    from wm_kernel.session import Session


def complete(shell: Any, event: Any) -> list[str]:
    """Tab completion for ``%trinket`` (names, sub-commands) and ``%compose`` (sections,
    placements). Never raises: a completer error would break typing."""
    try:
        return _completions(event.text_until_cursor if hasattr(event, "text_until_cursor") else event.line)
    except Exception:
        return []


def _completions(text: str) -> list[str]:
    from wm_kernel.session import current_session

    words = text.split()
    if text.endswith((" ", "\t")):
        words.append("")
    if not words:
        return []
    command = words[0].lstrip("%")
    session = current_session()
    if command == "trinket":
        if len(words) == 2:
            return list(session.trinkets)
        if len(words) == 3:
            try:
                trinket = resolve_trinket(session, words[1])
            except UsageError:
                return []
            return list(trinket.commands())
        return _argument_completions(session, words)
    if command == "compose" and len(words) >= 3:
        if words[-2] in ("--section", "-s"):
            return known_sections(session)
        if words[-2] in ("--placement", "-p"):
            return list(PLACEMENTS)
    return []


def _argument_completions(session: Session, words: list[str]) -> list[str]:
    try:
        trinket = resolve_trinket(session, words[1])
    except UsageError:
        return []
    command = trinket.commands().get(words[2])
    return command.completions(trinket, words[3:]) if command is not None else []
