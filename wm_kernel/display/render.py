"""Rich views of a composed prompt: text for terminals, HTML for notebooks.

Sections are grouped the way the model receives them (system cached, system not cached, conversation
prefix, post-history, notification centre); each is titled with its name, its trinket and its size,
and marked when its text changed since the previous compose. Sections that were left out are listed
with the reason (a failing trinket's error included), so a missing section is never silent.

Everything that came from users or models is escaped with ``html.escape`` before it lands in HTML.
The HTML carries no generated ids, so a notebook's outputs are the same on every run (nbval compares
them). Very large sections are shown as a preview with their full size.

This module imports neither IPython nor ipywidgets: ``ComposedPrompt._repr_mimebundle_`` uses it.

Examples
--------
>>> from wm_kernel.core.prompt import ComposedPrompt, SectionRecord
>>> p = ComposedPrompt("Hi <Ada>", sections=[SectionRecord("base_prompt", "system", "Hi <Ada>", True, None)])
>>> print(render_text(p))
ComposedPrompt · turn - · 1 section · 8 chars
=== system · cached ===
--- base_prompt · 8 chars ---
Hi <Ada>
>>> "Hi &lt;Ada&gt;" in render_html(p)
True
"""

from __future__ import annotations

import html
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from typing import Any

from traitlets import Enum, HasTraits, Int

from trinkets.stored_section import stored_class_name
from wm_kernel.core.prompt import COMPOSER, ComposedPrompt, OmittedSection, SectionRecord
from wm_kernel.utils import style, views
from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.views import MimeBundle, PrettyPrinter

#: Views a composed prompt can be shown in: both text and HTML ("html", the notebook picks HTML),
#: text only ("text"), or the exact text the model receives ("raw").
VIEWS = ("html", "text", "raw")

#: (key, title) of each group, in the order the model receives them.
GROUPS: tuple[tuple[str, str], ...] = (
    ("system:cached", "system · cached"),
    ("system:uncached", "system · not cached"),
    ("conversation_prefix", "conversation prefix"),
    ("post_history", "post-history"),
    ("notification", "notification centre"),
)

_ERROR_COLOR = style.ERROR
_MARK_COLOR = style.WARN
_MUTED_COLOR = style.MUTED
# a long section scrolls inside its own box rather than pushing the rest of the notebook down
_SECTION_PRE_STYLE = (
    style.PROMPT_PRE + "max-height:24em;overflow:auto;margin:2px 0 6px 14px;"
    f"padding:2px 0 2px 8px;border-left:2px solid {style.BORDER}"
)


class RenderOptions(HasTraits):
    """How composed prompts are shown in this process (the magics link their config traits here)."""

    view = Enum(VIEWS, default_value="html", help="Default view of a ComposedPrompt: 'html' (rich), 'text' or 'raw'.")
    large_section = Int(200_000, min=1, help="Sections longer than this many characters are shown as a preview.")
    preview_chars = Int(2_000, min=1, help="How many characters a large section's preview shows.")

    def reset(self) -> None:
        """Back to the defaults."""
        for name in ("view", "large_section", "preview_chars"):
            self.set_trait(name, self.trait_defaults(name))


#: The options every view reads (one per process, like IPython's display formatters).
options = RenderOptions()


def chars(n: int) -> str:
    """``"1 char"``, ``"12,345 chars"``: the size of a section, as every view writes it."""
    return f"{n:,} char" + ("" if n == 1 else "s")


def group_of(placement: str, cached: bool) -> str:
    """The key in :data:`GROUPS` of a section at ``placement``: system sections split by whether
    they are cached, because that split is what decides prompt-cache hits."""
    if placement == "system":
        return "system:cached" if cached else "system:uncached"
    return placement


def _group_key(record: SectionRecord) -> str:
    return group_of(record.placement, record.cached)


def _previous_contents(composed: ComposedPrompt) -> dict[str, str] | None:
    previous = getattr(composed, "previous", None)
    if previous is None:
        return None
    return {r.name: r.content for r in previous.sections}


def section_marks(record: SectionRecord, before: dict[str, str] | None) -> list[str]:
    """Short marks for a section's title: 'new' or 'changed' against the previous compose, and
    'not in layout' for a section the layout does not list."""
    marks = []
    if before is not None:
        if record.name not in before:
            marks.append("new")
        elif before[record.name] != record.content:
            marks.append("changed")
    if record.straggler:
        marks.append("not in layout")
    return marks


def preview(text: str, limit: int | None = None) -> tuple[str, bool]:
    """The text to show for a section, and whether it was cut: the one truncation rule of every
    view. A text longer than ``limit`` shows its first ``limit`` characters; without ``limit``,
    one longer than ``options.large_section`` shows its first ``options.preview_chars``."""
    if limit is not None:
        return (text[:limit], True) if len(text) > limit else (text, False)
    if len(text) > options.large_section:
        return text[: options.preview_chars], True
    return text, False


def truncation_note(shown: int, total: int) -> str:
    """The line under a cut section: how much of it is shown."""
    return f"[preview: the first {shown:,} of {total:,} characters]"


def section_text_html(content: str, *, limit: int | None = None) -> str:
    """A section's text as HTML: escaped, in a scrolling ``<pre>``, cut by :func:`preview` with
    the truncation note. Every HTML view of a section (``render_html``, the dashboard) uses it."""
    shown, cut = preview(content, limit)
    body = html.escape(shown)
    if cut:
        body += f'\n<span style="color:{_MUTED_COLOR}">{html.escape(truncation_note(len(shown), len(content)))}</span>'
    return f'<pre style="{_SECTION_PRE_STYLE}">{body}</pre>'


class _Selection:
    """The sections and omissions a view shows, in output order."""

    def __init__(
        self,
        composed: ComposedPrompt,
        names: Iterable[str] | None = None,
        placement: str | None = None,
        placement_of: Callable[[str], str | None] | None = None,
    ) -> None:
        wanted = set(names) if names is not None else None
        self.filtered = wanted is not None or placement is not None
        self.records = [
            r
            for r in composed.sections
            if (wanted is None or r.name in wanted) and (placement is None or r.placement == placement)
        ]
        self.omitted: list[OmittedSection] = []
        for gone in composed.omitted:
            if wanted is not None and gone.name not in wanted:
                continue
            if placement is not None and (placement_of is None or placement_of(gone.name) != placement):
                continue
            self.omitted.append(gone)
        self.before = _previous_contents(composed)

    def groups(self) -> Iterator[tuple[str, list[SectionRecord]]]:
        for key, title in GROUPS:
            members = [r for r in self.records if _group_key(r) == key]
            if members:
                yield title, members

    def marked(self, mark: str) -> list[str]:
        """Sections that carry ``mark`` ('new' or 'changed')."""
        return [r.name for r in self.records if mark in section_marks(r, self.before)]

    def was_shown_before(self, name: str) -> bool:
        return self.before is not None and name in self.before


def _headline(composed: ComposedPrompt, selection: _Selection) -> str:
    count = len(selection.records)
    size = sum(r.chars for r in selection.records)
    turn = "-" if composed.turn is None else str(composed.turn)
    parts = [f"ComposedPrompt · turn {turn}", f"{count} section" + ("" if count == 1 else "s"), chars(size)]
    for mark in ("new", "changed"):
        names = selection.marked(mark)
        if names:
            parts.append(f"{mark}: " + ", ".join(names))
    gone = [o.name for o in selection.omitted if selection.was_shown_before(o.name)]
    if gone:
        parts.append("gone: " + ", ".join(gone))
    return " · ".join(parts)


def trinket_shown(section: str, trinket: str | None) -> str | None:
    """The trinket a view names beside ``section``: None for none, or for the class made to show a
    stored or imported section (``Stored_system_0___policies_`` beside ``system[0] <policies>``
    names the section twice, in a worse spelling)."""
    if not trinket or trinket == stored_class_name(section):
        return None
    return trinket


def _omitted_line(gone: OmittedSection, selection: _Selection) -> str:
    trinket = trinket_shown(gone.name, gone.trinket)
    who = f" ({trinket})" if trinket else ""
    line = f"{gone.name}{who}: {gone.reason}"
    if gone.error:
        line += f": {gone.error}"
    if gone.tokens is not None:
        line += f" ({gone.tokens} tokens, priority {gone.priority})"
    if selection.was_shown_before(gone.name):
        line += " (was in the previous prompt)"
    return line


def render_text(
    composed: ComposedPrompt,
    *,
    names: Iterable[str] | None = None,
    placement: str | None = None,
    placement_of: Callable[[str], str | None] | None = None,
) -> str:
    """The text view: a headline, then each placement group with its sections, then what was left
    out. ``names`` and ``placement`` narrow it to some sections (``placement_of`` places omitted
    sections for the placement filter)."""
    selection = _Selection(composed, names, placement, placement_of)
    lines = [_headline(composed, selection)]
    for title, members in selection.groups():
        lines.append(f"=== {title} ===")
        for record in members:
            trinket = trinket_shown(record.name, record.trinket)
            title_parts = [record.name] + ([trinket] if trinket else [])
            title_parts += [chars(record.chars)] + section_marks(record, selection.before)
            lines.append(f"--- {' · '.join(title_parts)} ---")
            shown, cut = preview(record.content)
            lines.append(shown)
            if cut:
                lines.append(truncation_note(len(shown), record.chars))
    if selection.omitted:
        lines.append("=== left out ===")
        lines.extend(f"- {_omitted_line(gone, selection)}" for gone in selection.omitted)
    if composed.budget is not None and composed.budget.budget is not None:
        lines.append(f"=== budget: {composed.budget.summary()} ===")
    if len(lines) == 1:
        lines.append("(no sections)")
    return "\n".join(lines)


def _html_section(record: SectionRecord, selection: _Selection) -> str:
    title = [f"<code>{html.escape(record.name)}</code>"]
    trinket = trinket_shown(record.name, record.trinket)
    if trinket:
        title.append(html.escape(trinket))
    title.append(chars(record.chars))
    for mark in section_marks(record, selection.before):
        title.append(f'<span style="color:{_MARK_COLOR};font-weight:bold">{mark}</span>')
    return (
        f'<details open style="margin:2px 0 2px 10px">'
        f"<summary>{' · '.join(title)}</summary>"
        f"{section_text_html(record.content)}</details>"
    )


def _html_omitted(gone: OmittedSection, selection: _Selection) -> str:
    return f"<li>{omitted_html(gone, was_shown=selection.was_shown_before(gone.name))}</li>"


def omitted_html(gone: OmittedSection, *, was_shown: bool = False) -> str:
    """One left-out section as HTML: name, trinket, reason, the error in the error colour, its
    tokens and priority when a budget dropped it (``was_shown``: it was in the previous prompt)."""
    parts = [f"<code>{html.escape(gone.name)}</code>"]
    trinket = trinket_shown(gone.name, gone.trinket)
    if trinket:
        parts.append(html.escape(trinket))
    parts.append(html.escape(gone.reason))
    text = " · ".join(parts)
    if gone.error:
        text += f': <span style="color:{_ERROR_COLOR}">{html.escape(gone.error)}</span>'
    if gone.tokens is not None:
        text += f" ({gone.tokens} tokens, priority {gone.priority})"
    if was_shown:
        text += f' <span style="color:{_MARK_COLOR}">(was in the previous prompt)</span>'
    return text


def render_html(
    composed: ComposedPrompt,
    *,
    names: Iterable[str] | None = None,
    placement: str | None = None,
    placement_of: Callable[[str], str | None] | None = None,
) -> str:
    """The HTML view (same content and filters as :func:`render_text`), every text escaped."""
    selection = _Selection(composed, names, placement, placement_of)
    out = [
        '<div class="wm-composed-prompt">',
        f'<div style="font-weight:bold">{html.escape(_headline(composed, selection))}</div>',
    ]
    for title, members in selection.groups():
        out.append(f'<div style="margin-top:6px;font-weight:bold">{html.escape(title)}</div>')
        out.extend(_html_section(record, selection) for record in members)
    if selection.omitted:
        out.append('<div style="margin-top:6px;font-weight:bold">left out</div>')
        out.append(
            '<ul style="margin:2px 0">'
            + "".join(_html_omitted(gone, selection) for gone in selection.omitted)
            + "</ul>"
        )
    if composed.budget is not None and composed.budget.budget is not None:
        out.append(f'<div style="margin-top:6px"><b>budget</b>: {html.escape(composed.budget.summary())}</div>')
    if not selection.records and not selection.omitted:
        out.append("<div><i>(no sections)</i></div>")
    out.append("</div>")
    return "\n".join(out)


def raw_parts(composed: ComposedPrompt, placement: str | None = None) -> list[tuple[str, str]]:
    """(label, exact text) of each non-empty part of the prompt, in the order the model gets them
    (only those of one placement when ``placement`` is given)."""
    parts = _raw_parts(composed)
    if placement is not None:
        prefix = {
            "system": "system",
            "conversation_prefix": "conversation prefix",
            "post_history": "post-history",
            "notification": "notification",
        }[placement]
        parts = [(label, text) for label, text in parts if label.startswith(prefix)]
    return parts


def _raw_parts(composed: ComposedPrompt) -> list[tuple[str, str]]:
    parts = []
    if composed["cached_content"]:
        parts.append(("system · cached", composed["cached_content"]))
    if composed["non_cached_content"]:
        parts.append(("system · not cached", composed["non_cached_content"]))
    for i, item in enumerate(composed["conversation_prefix_items"], 1):
        parts.append((f"conversation prefix {i}", item))
    for i, item in enumerate(composed["post_history_items"], 1):
        parts.append((f"post-history {i}", item))
    if composed["notification_center"]:
        parts.append(("notification centre", composed["notification_center"]))
    return parts


def join_raw(parts: Sequence[tuple[str, str]]) -> str:
    """One part: its exact text. Several: each exact text under a ``### label`` line."""
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0][1]
    return "\n\n".join(f"### {label}\n{text}" for label, text in parts)


def _filter_bundle(bundle: MimeBundle, include: Container[str] | None, exclude: Container[str] | None) -> MimeBundle:
    if include:
        bundle = {k: v for k, v in bundle.items() if k in include}
    if exclude:
        bundle = {k: v for k, v in bundle.items() if k not in exclude}
    return bundle


def composed_mimebundle(
    composed: ComposedPrompt,
    include: Container[str] | None = None,
    exclude: Container[str] | None = None,
    *,
    view: str | None = None,
    names: Iterable[str] | None = None,
    placement: str | None = None,
    placement_of: Callable[[str], str | None] | None = None,
) -> MimeBundle:
    """The mime bundle IPython shows for a ComposedPrompt: text/plain and, in the 'html' view,
    text/html. ``view`` defaults to ``options.view``."""
    view = view or options.view
    if view == "raw":
        if names is not None:
            selection = _Selection(composed, names, placement, placement_of)
            parts = [(r.name, r.content) for r in selection.records]
        else:
            parts = raw_parts(composed, placement)
        return _filter_bundle(PromptText(join_raw(parts))._repr_mimebundle_(), include, exclude)
    bundle: MimeBundle = {
        "text/plain": render_text(composed, names=names, placement=placement, placement_of=placement_of)
    }
    if view == "html":
        bundle["text/html"] = no_math(
            render_html(composed, names=names, placement=placement, placement_of=placement_of)
        )
    return _filter_bundle(bundle, include, exclude)


class PromptView:
    """A view of part of a composed prompt (some sections, or one placement), as ``%compose
    --section``/``--placement`` return it. ``composed`` is the whole prompt."""

    def __init__(
        self,
        composed: ComposedPrompt,
        *,
        names: Iterable[str] | None = None,
        placement: str | None = None,
        placement_of: Callable[[str], str | None] | None = None,
        view: str | None = None,
    ) -> None:
        self.composed = composed
        self.names = tuple(names) if names is not None else None
        self.placement = placement
        self.placement_of = placement_of
        self.view = view

    @property
    def sections(self) -> list[SectionRecord]:
        """The records this view shows."""
        return _Selection(self.composed, self.names, self.placement, self.placement_of).records

    @property
    def text(self) -> str:
        """The exact text of the shown sections (several: each under a ``### name`` line)."""
        return join_raw([(r.name, r.content) for r in self.sections]) if self.sections else ""

    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None
    ) -> MimeBundle:
        return composed_mimebundle(
            self.composed,
            include,
            exclude,
            view=self.view,
            names=self.names,
            placement=self.placement,
            placement_of=self.placement_of,
        )

    def __repr__(self) -> str:
        return render_text(self.composed, names=self.names, placement=self.placement, placement_of=self.placement_of)


class PromptText(str):
    """A string that shows as itself: plain text in a terminal, a ``<pre>`` block in a notebook.
    ``%compose --raw`` and ``--json`` return one, so ``t = %compose --raw`` is the exact text.
    Very large texts show a preview (the string itself stays whole)."""

    def _shown(self) -> tuple[str, str]:
        shown, cut = preview(str(self))
        note = truncation_note(len(shown), len(self)) if cut else ""
        return shown, note

    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None
    ) -> MimeBundle:
        shown, note = self._shown()
        plain = shown + (f"\n{note}" if note else "")
        body = html.escape(shown) + (f"\n<i>{html.escape(note)}</i>" if note else "")
        # margin:0: JupyterLab gives a rendered <pre> a 2em margin, which indents the text against
        # the cell's code and every other output
        bundle = {"text/plain": plain, "text/html": no_math(f'<pre style="{style.PROMPT_PRE}margin:0">{body}</pre>')}
        return _filter_bundle(bundle, include, exclude)

    def _repr_pretty_(self, printer: PrettyPrinter, cycle: bool) -> None:
        shown, note = self._shown()
        printer.text(shown + (f"\n{note}" if note else ""))


class TurnReport:
    """What ``%turn`` did: the turns completed and the items that expired on the way."""

    def __init__(self, first: int, last: int, expired: Sequence[dict[str, Any]]) -> None:
        self.first = first
        self.last = last
        self.expired = list(expired)

    def _headline(self) -> str:
        turns = f"turn {self.last}" if self.first == self.last else f"turns {self.first}-{self.last}"
        count = len(self.expired)
        if not count:
            return f"Completed {turns}; nothing expired."
        return f"Completed {turns}; {count} item{'' if count == 1 else 's'} expired:"

    def _lines(self) -> list[str]:
        return [f"turn {e['turn']}: {e['trinket']} {e.get('label') or e.get('id')}" for e in self.expired]

    def __repr__(self) -> str:
        return "\n".join([self._headline(), *(f"  {line}" for line in self._lines())])

    def _repr_pretty_(self, printer: PrettyPrinter, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in self._lines())
        return no_math(f"<div>{html.escape(self._headline())}</div>" + (f"<ul>{items}</ul>" if items else ""))


# -- the blame view: each key's text, coloured by the section that wrote it
#: Section colours of the blame view (translucent, so they read in light and dark themes).
BLAME_COLOURS = (
    "rgba(31,119,180,0.25)",
    "rgba(255,127,14,0.25)",
    "rgba(44,160,44,0.25)",
    "rgba(214,39,40,0.25)",
    "rgba(148,103,189,0.25)",
    "rgba(140,86,75,0.25)",
    "rgba(227,119,194,0.25)",
    "rgba(188,189,34,0.25)",
    "rgba(23,190,207,0.25)",
)


def blame_colours(composed: ComposedPrompt) -> dict[str, str]:
    """Section -> colour, in prompt order (the palette repeats after nine sections)."""
    return {r.name: BLAME_COLOURS[i % len(BLAME_COLOURS)] for i, r in enumerate(composed.sections)}


def render_blame_text(composed: ComposedPrompt) -> str:
    """Each key's spans as ``[start:end] section (trinket) · N chars`` lines."""
    lines = [f"blame · {len(composed.sections)} sections"]
    for key in composed.blame_keys():
        lines.append(f"=== {key} ===")
        for span in composed.blame(key):
            trinket = trinket_shown(span.section, span.trinket)
            who = span.section + (f" ({trinket})" if trinket else "")
            lines.append(f"[{span.start}:{span.end}] {who} · {chars(len(span))}")
    return "\n".join(lines)


def render_blame_html(composed: ComposedPrompt) -> str:
    """Each key's exact text, every stretch coloured by the section that wrote it (the composer's
    separators and frames uncoloured), with a legend; every text escaped."""
    colours = blame_colours(composed)
    legend = []
    for record in composed.sections:
        trinket = trinket_shown(record.name, record.trinket)
        who = html.escape(record.name) + (f" · {html.escape(trinket)}" if trinket else "")
        legend.append(f'<span style="background:{colours[record.name]};padding:0 4px;margin-right:6px">{who}</span>')
    legend.append(f'<span style="color:{_MUTED_COLOR}">{html.escape(COMPOSER)}: uncoloured</span>')
    out = ['<div class="wm-blame">', f"<div>{''.join(legend)}</div>"]
    for key in composed.blame_keys():
        text = _key_text(composed, key)
        body = []
        for span in composed.blame(key):
            chunk = html.escape(text[span.start : span.end])
            if span.section == COMPOSER:
                body.append(f'<span style="color:{_MUTED_COLOR}">{chunk}</span>')
            else:
                body.append(
                    f'<span style="background:{colours[span.section]}" '
                    f'title="{html.escape(span.section)}">{chunk}</span>'
                )
        out.append(
            f'<div style="margin-top:6px;font-weight:bold">{html.escape(key)}</div>'
            f'<pre style="{style.PROMPT_PRE}">{"".join(body)}</pre>'
        )
    out.append("</div>")
    return "\n".join(out)


def _key_text(composed: ComposedPrompt, key: str) -> str:
    if "[" in key:
        name, index = key[:-1].split("[")
        return str(composed[name][int(index)])
    return str(composed[key])


class BlameView:
    """``%compose --blame``: the prompt coloured by section, with a legend."""

    def __init__(self, composed: ComposedPrompt) -> None:
        self.composed = composed

    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None
    ) -> MimeBundle:
        return _filter_bundle(
            {"text/plain": render_blame_text(self.composed), "text/html": no_math(render_blame_html(self.composed))},
            include,
            exclude,
        )

    def __repr__(self) -> str:
        return render_blame_text(self.composed)


def register_views() -> None:
    """Make these the views a ComposedPrompt and a trinket's text show with (see
    wm_kernel/utils/views.py): the package's display loader calls it on the first display."""
    views.register(composed_prompt=composed_mimebundle, text=PromptText)
