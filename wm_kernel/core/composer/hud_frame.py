"""The notification centre's frame: the rules, the title and the ``<ns:hud>`` tags around its parts.

A :class:`HudFrame` is built once per (namespace, title) and builds the notification placement
from the sections held there: each part, unable to close the frame's tag, followed by a blank line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from wm_kernel.core.composer.placement_build import PlacementBuild
from wm_kernel.core.prompt import BlameData, SectionRecord
from wm_kernel.utils.markup import neutralize_closing_tag

__all__ = ["RULE", "HudFrame", "hud_blame"]

#: The line drawn above and below a frame's title (the HUD's, and the scaffolding delimiter's).
RULE = "═" * 60


class HudFrame:
    """The frame of the notification centre in ``namespace`` under ``title``: its head (rules,
    title, opening tag), its tail (closing tag, rule) and how a part is shown inside it."""

    __slots__ = ("namespace", "title", "head", "tail", "shown_in")

    def __init__(self, namespace: str, title: str) -> None:
        tag = f"{namespace}:hud"
        self.namespace = namespace
        self.title = title
        self.head = f"{RULE}\n{title}\n{RULE}\n<{tag}>\n"
        self.tail = f"</{tag}>\n{RULE}"
        self.shown_in = _shown_in(tag)

    def build(
        self,
        records: tuple[SectionRecord, ...],
        items: list[str],
        entries: dict[str, tuple[str, bool, str | None]],
    ) -> PlacementBuild:
        """The notification placement of ``items`` (at least one): each part followed by a blank
        line, inside the frame."""
        head, tail = self.head, self.tail
        shown = list(map(self.shown_in, items))
        text = "".join([head, "\n\n".join(shown), "\n\n", tail])
        return PlacementBuild(records, text, functools.partial(hud_blame, head, shown, tail), entries)


def hud_blame(head: str, parts: list[str], tail: str) -> BlameData:
    """The frame's head, each part, the blank line after a part (the composer's, merged with the
    frame's tail after the last part)."""
    pieces: list[tuple[int, int]] = [(len(head), -1)]
    for index, part in enumerate(parts):
        pieces += [(len(part), index), (2, -1)]
    pieces[-1] = (2 + len(tail), -1)
    return {"notification_center": tuple(pieces)}


@functools.lru_cache(maxsize=16)
def _shown_in(tag: str) -> Callable[[str], str]:
    """How a notification-centre part is shown in the frame of ``tag``: unable to close it (cached:
    most parts are shown unchanged turn after turn, and a cache of one str argument is keyed on
    the str itself)."""
    return functools.lru_cache(maxsize=512)(functools.partial(neutralize_closing_tag, tag=tag))
