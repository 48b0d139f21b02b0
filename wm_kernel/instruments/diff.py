"""What changed between two composed prompts, section by section, as text and as escaped HTML.

Public API
----------
``diff_prompts(old, new, *, old_label="old", new_label="new", context=3) -> PromptDiff``
    ``old`` and ``new`` are ComposedPrompts or plain five-key dicts. When both carry section records
    (prompts from a compose or ``History.prompt_at``) the diff is per section (``base_prompt``,
    ``datetime_section``, ...); otherwise it is per key of the original contract
    (``cached_content``, ``post_history_items[0]``, ``notification_center``, ...).
``PromptDiff``
    ``sections`` (tuple of ``SectionDiff`` in prompt order: the new prompt's order, removed sections
    where they were), ``changed_sections`` (names that are added, removed or changed),
    ``counts()``, ``bool(diff)`` (anything changed), ``str(diff)`` (summary line then unified diffs),
    ``_repr_html_()`` (every prompt text escaped with ``html.escape``).
``SectionDiff``
    ``name``, ``status`` ("added", "removed", "changed", "unchanged"), ``old_placement``,
    ``new_placement``, ``old_text``, ``new_text``, ``lines`` (the unified diff lines).

A section whose text is the same but whose placement moved is "changed" (its header says
``moved system -> notification``): the model receives it elsewhere.

Examples
--------
>>> d = diff_prompts({"cached_content": "a\\nb", "notification_center": "x"},
...                  {"cached_content": "a\\nc", "notification_center": "x"})
>>> d.changed_sections
['cached_content']
>>> print(d)
old -> new: 1 changed, 0 added, 0 removed, 1 unchanged
~ cached_content
--- old/cached_content
+++ new/cached_content
@@ -1,2 +1,2 @@
 a
-b
+c
= notification_center
"""

from __future__ import annotations

import difflib
import html
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wm_kernel.core.prompt import BlameSpan, ComposedPrompt
from wm_kernel.core.prompt_dict import COMPOSED_KEYS
from wm_kernel.utils import style
from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.sequences import shared_start
from wm_kernel.utils.views import PrettyPrinter

STATUSES = ("added", "removed", "changed", "unchanged")
_MARK = {"added": "+", "removed": "-", "changed": "~", "unchanged": "="}


@dataclass(frozen=True)
class SectionDiff:
    """One section (or five-key field) compared between two prompts."""

    name: str
    status: str
    old_placement: str | None
    new_placement: str | None
    old_text: str
    new_text: str
    lines: tuple[str, ...]

    @property
    def moved(self) -> bool:
        """In both prompts, at different placements."""
        return (
            self.old_placement is not None
            and self.new_placement is not None
            and self.old_placement != self.new_placement
        )

    def header(self) -> str:
        """``~ name (placement)`` with the move, if any."""
        if self.moved:
            where = f" (moved {self.old_placement} -> {self.new_placement})"
        else:
            placement = self.new_placement or self.old_placement
            where = f" ({placement})" if placement else ""
        return f"{_MARK[self.status]} {self.name}{where}"


@dataclass(frozen=True)
class FirstChange:
    """The first character where two prompts differ, and who wrote it on each side.

    ``key`` is a prompt key (``cached_content``, ``post_history_items[0]``...) in the order the model
    reads them; ``offset`` is the length of the common start of that key's two texts. ``new`` and
    ``old`` are the blame spans holding that character (None where the text ends there, or where a
    prompt has no blame map)."""

    key: str
    offset: int
    new: BlameSpan | None
    old: BlameSpan | None

    @property
    def section(self) -> str | None:
        """The section that owns the first differing character (the new prompt's, else the old's)."""
        span = self.new or self.old
        return span.section if span is not None else None

    def __str__(self) -> str:
        """``first change: cached_content at character 80, in tool:track_parcel (tools)``: one place
        where both prompts have the same owner there; the two owners, old then new, where they
        differ (``... 80: datetime_section (TimeManager) before, (end of text) now``)."""

        def who(span: BlameSpan | None) -> str:
            if span is None:
                return "(end of text)"
            return span.section + (f" ({span.trinket})" if span.trinket else "")

        where = f"first change: {self.key} at character {self.offset}"
        old, new = who(self.old), who(self.new)
        if old == new:
            return f"{where}, in {new}"
        return f"{where}: {old} before, {new} now"


def _span(prompt: Mapping[str, Any], key: str, text: str, offset: int) -> BlameSpan | None:
    if not isinstance(prompt, ComposedPrompt) or prompt._blame is None or offset >= len(text):
        return None
    return prompt.blame_at(key, offset)


def _first_item(old: Mapping[str, Any], new: Mapping[str, Any], key: str) -> tuple[int, Any, Any] | None:
    """The first item of list key ``key`` whose text differs (a missing item reads as ""), with the
    two texts; None when none does. The items two prompts of a conversation share are mostly the
    same objects: one list comparison finds where they part, and no item is copied or named."""
    a, b = old.get(key, []), new.get(key, [])
    if not isinstance(a, list) or not isinstance(b, list):  # (a plain dict's items may be any iterable)
        a, b = list(a), list(b)
    shared = shared_start(b, a)
    if shared < min(len(a), len(b)):
        return shared, a[shared], b[shared]
    longer, a_side = (b, False) if len(b) > len(a) else (a, True)
    for index in range(shared, len(longer)):  # what only one of them holds, against ""
        if longer[index] != "":
            return (index, longer[index], "") if a_side else (index, "", longer[index])
    return None


def first_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> FirstChange | None:
    """Where ``new`` first differs from ``old`` (keys in reading order), blamed on its section
    through each prompt's blame map; None when the prompts are equal."""
    found: tuple[str, Any, Any] | None = None
    for key in ("cached_content", "non_cached_content"):
        a, b = old.get(key, ""), new.get(key, "")
        if a != b:
            found = key, a, b
            break
    else:
        for key in ("conversation_prefix_items", "post_history_items"):
            item = _first_item(old, new, key)
            if item is not None:
                found = f"{key}[{item[0]}]", item[1], item[2]
                break
        else:
            a, b = old.get("notification_center", ""), new.get("notification_center", "")
            if a == b:
                return None
            found = "notification_center", a, b
    key, a, b = found
    offset = len(os.path.commonprefix([a, b]))
    return FirstChange(key, offset, _span(new, key, b, offset), _span(old, key, a, offset))


class PromptDiff:
    """Per-section differences between two prompts (see the module docstring).

    ``first_change`` is the first differing character and the section that owns it (None when
    nothing changed)."""

    def __init__(
        self, sections: tuple[SectionDiff, ...], old_label: str, new_label: str, first_change: FirstChange | None = None
    ) -> None:
        self.sections = sections
        self.old_label = old_label
        self.new_label = new_label
        self.first_change = first_change

    @property
    def changed_sections(self) -> list[str]:
        """Names of the sections that were added, removed or changed, in prompt order."""
        return [s.name for s in self.sections if s.status != "unchanged"]

    def counts(self) -> dict[str, int]:
        """How many sections have each status."""
        return {status: sum(1 for s in self.sections if s.status == status) for status in STATUSES}

    def section(self, name: str) -> SectionDiff:
        """The diff of one section; ValueError naming the sections if there is none."""
        for s in self.sections:
            if s.name == name:
                return s
        raise ValueError(
            f"no section {name!r} in this diff (sections: {', '.join(s.name for s in self.sections) or 'none'})"
        )

    def __bool__(self) -> bool:
        return any(s.status != "unchanged" for s in self.sections)

    def summary(self) -> str:
        """One line: the labels and how many sections have each status."""
        c = self.counts()
        return (
            f"{self.old_label} -> {self.new_label}: {c['changed']} changed, {c['added']} added, "
            f"{c['removed']} removed, {c['unchanged']} unchanged"
        )

    def __str__(self) -> str:
        out = [self.summary()]
        for s in self.sections:
            out.append(s.header())
            out.extend(s.lines)
        return "\n".join(out)

    def __repr__(self) -> str:
        return f"<PromptDiff {self.summary()}>"

    def _repr_pretty_(self, printer: PrettyPrinter, cycle: bool) -> None:
        # IPython in a terminal: show the whole diff, not the one-line repr
        printer.text(str(self))

    def _repr_html_(self) -> str:
        # theme variables with light fallbacks, and translucent line tints, so the view reads in
        # JupyterLab's light and dark themes alike
        parts = [f'<div class="wm-diff"><p><b>{html.escape(self.summary())}</b></p>']
        for s in self.sections:
            header = html.escape(s.header())
            frame = f"border-left:3px solid {_STATUS_COLOURS[s.status]};padding:2px 6px;margin:2px 0"
            if s.status == "unchanged":
                parts.append(f'<div class="wm-diff-section wm-diff-unchanged" style="{frame}">{header}</div>')
                continue
            body = []
            for line in s.lines:
                tint = ""
                if line.startswith("+") and not line.startswith("+++"):
                    tint = f' style="background:{_ADDED_TINT}"'
                elif line.startswith("-") and not line.startswith("---"):
                    tint = f' style="background:{_REMOVED_TINT}"'
                elif line.startswith("@@"):
                    tint = f' style="color:{_HUNK_COLOUR}"'
                body.append(f"<span{tint}>{html.escape(line)}</span>")
            parts.append(
                f'<details open class="wm-diff-section wm-diff-{s.status}" style="{frame}">'
                f'<summary>{header}</summary><pre style="{style.DIFF_PRE}">' + "\n".join(body) + "</pre></details>"
            )
        parts.append("</div>")
        return no_math("".join(parts))


_STATUS_COLOURS = {"added": style.SUCCESS, "removed": style.ERROR, "changed": style.WARN, "unchanged": style.BORDER}
_ADDED_TINT = "rgba(46, 160, 67, 0.22)"
_REMOVED_TINT = "rgba(248, 81, 73, 0.22)"
_HUNK_COLOUR = style.INFO


def _sections(prompt: Mapping[str, Any]) -> list[tuple[str, str | None, str]] | None:
    """(name, placement, text) per section, or None when the prompt has no section records."""
    if isinstance(prompt, ComposedPrompt) and (prompt.sections or not any(prompt.values())):
        return [(r.name, r.placement, r.content) for r in prompt.sections]
    return None


def _fields(prompt: Mapping[str, Any], what: str) -> list[tuple[str, str | None, str]]:
    missing = [k for k in COMPOSED_KEYS if k not in prompt]
    unknown = [k for k in prompt if k not in COMPOSED_KEYS]
    if unknown:
        raise ValueError(f"{what} has unknown keys {unknown} (a prompt has: {', '.join(COMPOSED_KEYS)})")
    out: list[tuple[str, str | None, str]] = []
    for key in COMPOSED_KEYS:
        value = prompt.get(key, [] if key.endswith("_items") else "")
        if key.endswith("_items"):
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise TypeError(f"{what}[{key!r}] must be a list of strings")
            out.extend((f"{key}[{i}]", None, v) for i, v in enumerate(value))
        else:
            if not isinstance(value, str):
                raise TypeError(f"{what}[{key!r}] must be a str, got {type(value).__name__}")
            if value or key not in missing:
                out.append((key, None, value))
    return out


def _unified(old: str, new: str, old_name: str, new_name: str, context: int) -> tuple[str, ...]:
    return tuple(difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, n=context, lineterm=""))


def diff_prompts(
    old: Mapping[str, Any], new: Mapping[str, Any], *, old_label: str = "old", new_label: str = "new", context: int = 3
) -> PromptDiff:
    """Compare two prompts section by section (see the module docstring)."""
    for what, prompt in (("old", old), ("new", new)):
        if not isinstance(prompt, Mapping):
            raise TypeError(f"{what} must be a ComposedPrompt or a five-key dict, got {type(prompt).__name__}")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise ValueError(f"context must be a non-negative int, got {context!r}")
    old_sections, new_sections = _sections(old), _sections(new)
    if old_sections is None or new_sections is None:
        old_sections, new_sections = _fields(old, "old"), _fields(new, "new")
    before = {name: (placement, text) for name, placement, text in old_sections}
    after = {name: (placement, text) for name, placement, text in new_sections}
    # prompt order: the new prompt's, with each removed section placed after its old predecessor
    order: list[str] = [name for name, _, _ in new_sections]
    for index, (name, _, _) in enumerate(old_sections):
        if name in after:
            continue
        anchor = next((old_sections[j][0] for j in range(index - 1, -1, -1) if old_sections[j][0] in order), None)
        order.insert(order.index(anchor) + 1 if anchor is not None else 0, name)
    diffs = []
    for name in order:
        old_placement, old_text = before.get(name, (None, ""))
        new_placement, new_text = after.get(name, (None, ""))
        if name not in before:
            status = "added"
        elif name not in after:
            status = "removed"
        elif old_text != new_text or old_placement != new_placement:
            status = "changed"
        else:
            status = "unchanged"
        lines: tuple[str, ...] = ()
        if status != "unchanged":
            lines = _unified(
                old_text,
                new_text,
                f"{old_label}/{name}" if name in before else "/dev/null",
                f"{new_label}/{name}" if name in after else "/dev/null",
                context,
            )
        diffs.append(
            SectionDiff(
                name,
                status,
                old_placement if name in before else None,
                new_placement if name in after else None,
                old_text,
                new_text,
                lines,
            )
        )
    return PromptDiff(tuple(diffs), old_label, new_label, first_change(old, new))
