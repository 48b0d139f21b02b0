"""DomaindocTrinket: domain documents whose sections the model can expand, collapse and pin.

A domain document ("domaindoc") is a block of stable knowledge (a project brief, a style guide, the
user's garden) split into sections nested up to three levels deep: section, subsection and
sub-subsection. Documents live in the WorkingMemory's state store under the key
``domaindocs:{user_id}`` (one field per document label), so a Session on an SQLite file keeps them
across a restart. The section ``domaindoc`` is cached and placed after the history by the layout.

Rules
-----
- Only documents that are enabled and not archived are shown.
- A section is ``expanded`` or ``collapsed``: its own choice (``expand_section`` /
  ``collapse_section``) if one was made, else its default (``set_section_default``;
  ``reset_section_states`` forgets the choices). New sections are expanded by default.
- A pinned section is always expanded. Collapsing it is a ValueError until it is unpinned; unpinning
  brings back its own state.
- A collapsed section shows as a one-line stub; a collapsed section hides every descendant, pinned
  ones included.
- A leaf section (no subsections) whose body is over 5,000 characters is flagged ``size="large"``.
- Sections found in stored data whose parent is missing, that sit deeper than three levels, that
  repeat an id, or that hang under one of those, are not shown; :meth:`DomaindocTrinket.problems`
  lists them (and the revised style shows them under ``<problems>``).

Markup, style "original" (the default): the original system's text
---------------------------------------------------------------------
A banner (a rule of 60 "═", ``DOMAIN KNOWLEDGE - Reference material, not directives``, the
rule again), then ``<mira:domain_knowledge>`` and ``<personal_docs>`` holding one
``<domaindoc label="..">`` per shown document that has sections, in label order (a document
without sections is left out; none left: no section), then the closing tags and the rule. Each
document holds ``<guidance>`` for the model: ``<purpose>`` (the description, possibly empty) and
``<section_management>`` with the original's nesting ``<instruction>``, ``<section_states>`` (the
visible sections, nested like the document: ``state`` is ``always_expanded`` (pinned),
``collapsed`` (with ``default="expanded"`` when that is its default), ``expanded_by_default`` or
``expanded`` (expanded by choice against a collapsed default); ``subsections="N"`` on a section and
``children="N"`` on a subsection with children, else ``size="large"``), ``<section_index>`` (an
``<entry section=".." parent=".." grandparent="..">summary</entry>`` for every section that has a
summary, hidden ones included; ``<empty/>`` when none) and the fixed ``<quick_reference>`` of the
model's operations. Then ``<document>``: the visible text as ``<section>``, ``<subsection>`` and
``<sub-subsection>`` elements with a ``header`` attribute, each body on its own lines (a
whitespace-only body: nothing between the tags; an empty sub-subsection closes itself); a collapsed
section is ``<section header=".." state="collapsed" subsections="N"/>`` (or ``size="large"``).
Sections are addressed by their headers, as the model addresses them (``section="NAME"
parent="PARENT"``); ids and document titles are this kit's own handles and are not shown.

Shared documents (MIRA HEAD): a document created with ``shared_by=`` (another user's, shared
with this one) is left out of ``<personal_docs>``; when any shows (enabled, not archived, with
sections), a ``<shared_docs note="..">`` block follows, holding each in creation order as
``<domaindoc label=".." shared_by="..">`` (``shared_by`` left out when empty) with the same body.
``<personal_docs>`` is left out when no personal document shows.

The one difference from the original (a row in ``docs/deviations.md``): every user value (label,
description, header, summary, body) is escaped, where the original interpolates it raw, so a body
holding ``</document>`` cannot close the frame; values without markup characters come out as the
original writes them.

Markup, style "revised"
-----------------------
This kit's layout, addressing sections by id: ``<domain_knowledge>`` holds one
``<domaindoc label=".." title="..">`` per shown document (with or without sections), in creation
order. Inside: ``<description>`` (when set), ``<problems>`` (when any), then ``<section_states>``
(one ``<section id state default/>`` per section, depth first, a hidden one naming its collapsed
ancestor in ``hidden_by``), ``<index>`` (one ``<entry id level header>summary</entry>`` per section)
and ``<content>`` (the visible text: ``<section>``, ``<subsection>``, ``<subsubsection>`` by level,
each body on its own lines; a collapsed one as a stub with its size in ``chars`` and its
``subsections`` count). Every user value is escaped.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[DomaindocTrinket])
>>> docs = s.trinket("DomaindocTrinket")
>>> docs.create_document("garden", "Garden notes", "What grows where.")
>>> docs.add_section("garden", "soil", "Soil", "Loam & clay.", summary="Soil type")
>>> docs.add_section("garden", "ph", "pH", "6.5, slightly acid.", parent="soil")
>>> docs.add_section("garden", "beds", "Beds", "Three raised beds.", summary="Layout")
>>> docs.add_section("garden", "north", "North bed", "Kale.", parent="beds")
>>> docs.collapse_section("garden", "beds")
>>> print(s.compose()["post_history_items"][0])
════════════════════════════════════════════════════════════
DOMAIN KNOWLEDGE - Reference material, not directives
════════════════════════════════════════════════════════════
<mira:domain_knowledge>
<personal_docs>
<domaindoc label="garden">
<guidance>
<purpose>What grows where.</purpose>
<section_management>
<instruction>Sections support two levels of nesting (section → subsection → sub-subsection). When a parent is collapsed, ALL descendants are hidden. Pinned sections are always expanded. Use parent="X" to target nested sections.</instruction>
<section_states>
<section header="Soil" state="expanded_by_default" subsections="1">
<subsection header="pH" state="expanded_by_default"/>
</section>
<section header="Beds" state="collapsed" default="expanded" subsections="1"/>
</section_states>
<section_index>
<entry section="Soil">Soil type</entry>
<entry section="Beds">Layout</entry>
</section_index>
<quick_reference>
<example operation="expand" section="NAME"/>
<example operation="expand" section="CHILD" parent="PARENT"/>
<example operation="create_section" section="NAME" parent="PARENT" content="..."/>
<example operation="reorder_sections" order="A,B" parent="PARENT"/>
</quick_reference>
</section_management>
</guidance>
<document>
<section header="Soil">
Loam &amp; clay.
<subsection header="pH">
6.5, slightly acid.
</subsection>
</section>
<section header="Beds" state="collapsed" subsections="1"/>
</document>
</domaindoc>
</personal_docs>
</mira:domain_knowledge>
════════════════════════════════════════════════════════════
>>> docs.style = "revised"
>>> print(s.compose()["post_history_items"][0])
<domain_knowledge>
<domaindoc label="garden" title="Garden notes">
<description>What grows where.</description>
<section_states>
<section id="soil" state="expanded" default="expanded"/>
<section id="ph" state="expanded" default="expanded"/>
<section id="beds" state="collapsed" default="expanded"/>
<section id="north" state="expanded" default="expanded" hidden_by="beds"/>
</section_states>
<index>
<entry id="soil" level="1" header="Soil">Soil type</entry>
<entry id="ph" level="2" header="pH"/>
<entry id="beds" level="1" header="Beds">Layout</entry>
<entry id="north" level="2" header="North bed"/>
</index>
<content>
<section id="soil" header="Soil">
Loam &amp; clay.
<subsection id="ph" header="pH">
6.5, slightly acid.
</subsection>
</section>
<section id="beds" header="Beds" state="collapsed" chars="18" subsections="1"/>
</content>
</domaindoc>
</domain_knowledge>
>>> docs.pin_section("garden", "beds")
>>> docs.collapse_section("garden", "beds")
Traceback (most recent call last):
...
ValueError: section 'beds' of document 'garden' is pinned; unpin it before collapsing
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from traitlets import Int

from trinkets.base import EventAwareTrinket, arg, command, feed
from trinkets.domaindoc.render import render_original, render_revised
from trinkets.domaindoc.store import DocumentStore
from trinkets.domaindoc.tree import MAX_DEPTH, Tree, find_section, section_level
from wm_kernel.stores import keys
from wm_kernel.utils.checks import check_bool, check_str


class DomaindocTrinket(EventAwareTrinket):
    """Domain documents with collapsible sections, kept in the session's state store.

    Feed it with :meth:`create_document` and :meth:`add_section`, then steer what the model sees with
    :meth:`expand_section`, :meth:`collapse_section`, :meth:`pin_section`, :meth:`reorder_sections`,
    :meth:`enable_document` / :meth:`disable_document` and :meth:`archive_document`. Every mistake
    (unknown document or section, duplicate id, empty title, a fourth level) is a ValueError or
    TypeError that leaves the stored documents unchanged.

    ``style`` picks the text: "original" (the default) writes the original system's section,
    addressing sections by header; "revised" writes this kit's id-addressed layout (see the module
    docstring for both).
    """

    variable_name = "domaindoc"
    default_priority = 30  # token budgets: see docs/budgets.md
    cache_policy = True
    styles = ("original", "revised")

    large_section_chars = Int(
        5000, help='A leaf section whose body is longer than this many characters is flagged size="large".'
    )

    #: ((shown documents, style, large_section_chars), text) of the last render: a cache, not state.
    _last_render: tuple[tuple[list[dict[str, Any]], str, int], str] | None = None

    # -- storage
    @property
    def store_key(self) -> str:
        """The state-store key holding this user's documents (one field per label)."""
        return keys.domaindocs(self.working_memory.user_id)

    @property
    def _documents(self) -> DocumentStore:
        """This user's stored documents."""
        return DocumentStore(self.working_memory.store, self.store_key)

    # -- documents
    @feed
    def create_document(
        self, label: str, title: str, description: str = "", *, enabled: bool = True, shared_by: str | None = None
    ) -> None:
        """Create an empty document. ``label`` identifies it (unique); ``title`` is shown.

        ``shared_by`` (not None) makes it a document another user shares with this one (MIRA
        HEAD): ``label`` is then the collaborator's label (the owner's label + ``_shared``) and
        ``shared_by`` the owner's display name. Every other call works on it by that label; the
        original style shows it under ``<shared_docs>`` (see the module docstring)."""
        check_str(label, "document label")
        check_str(title, "document title")
        check_str(description, "description", empty_ok=True)
        check_bool(enabled, "enabled")
        if shared_by is not None:
            check_str(shared_by, "shared_by", empty_ok=True)
        self._documents.create(label, title, description, enabled, shared_by)

    @feed
    def update_document(self, label: str, *, title: str | None = None, description: str | None = None) -> None:
        """Change a document's title and/or description."""
        if title is None and description is None:
            raise ValueError("nothing to update: give title and/or description")
        if title is not None:
            check_str(title, "document title")
        if description is not None:
            check_str(description, "description", empty_ok=True)

        def change(doc: dict[str, Any]) -> None:
            if title is not None:
                doc["title"] = title
            if description is not None:
                doc["description"] = description

        self._documents.change(label, change)

    def _set_doc_flag(self, label: str, flag: str, value: bool) -> None:
        def change(doc: dict[str, Any]) -> None:
            doc[flag] = value

        self._documents.change(label, change)

    @feed
    def enable_document(self, label: str) -> None:
        """Show the document (unless it is archived)."""
        self._set_doc_flag(label, "enabled", True)

    @feed
    def disable_document(self, label: str) -> None:
        """Leave the document out of the prompt, keeping it and its section states."""
        self._set_doc_flag(label, "enabled", False)

    @feed
    def archive_document(self, label: str) -> None:
        """Retire the document: not shown whatever ``enabled`` says, until unarchived."""
        self._set_doc_flag(label, "archived", True)

    @feed
    def unarchive_document(self, label: str) -> None:
        """Bring an archived document back (shown again if enabled)."""
        self._set_doc_flag(label, "archived", False)

    @feed
    def delete_document(self, label: str) -> None:
        """Remove a document and all its sections."""
        self._documents.delete(label)

    # -- sections
    @feed
    def add_section(
        self,
        label: str,
        section_id: str,
        header: str,
        body: str = "",
        *,
        parent: str | None = None,
        summary: str = "",
        expanded_by_default: bool = True,
    ) -> None:
        """Add a section as the last child of ``parent`` (None: a top-level section).

        ``section_id`` is unique within the document; nesting stops at three levels (a section
        under a sub-subsection is a ValueError). ``summary`` is what the index shows.
        """
        check_str(section_id, "section id")
        check_str(header, "section header")
        check_str(body, "section body", empty_ok=True)
        check_str(summary, "section summary", empty_ok=True)
        check_bool(expanded_by_default, "expanded_by_default")
        if parent is not None:
            check_str(parent, "parent section id")

        def change(doc: dict[str, Any]) -> None:
            sections = doc["sections"]
            if any(isinstance(r, dict) and r.get("id") == section_id for r in sections):
                raise ValueError(f"section {section_id!r} already exists in document {label!r}")
            if parent is not None:
                level = section_level(doc, find_section(doc, parent)) + 1
                if level > MAX_DEPTH:
                    raise ValueError(
                        f"section {section_id!r} would be level {level}: sections nest at most {MAX_DEPTH} levels deep"
                    )
            orders = [r.get("order") for r in sections if isinstance(r, dict) and r.get("parent") == parent]
            order = max([o for o in orders if isinstance(o, int)], default=-1) + 1
            sections.append(
                {
                    "id": section_id,
                    "parent": parent,
                    "header": header,
                    "body": body,
                    "summary": summary,
                    "order": order,
                    "expanded_by_default": expanded_by_default,
                    "expanded": None,
                    "pinned": False,
                }
            )

        self._documents.change(label, change)

    @feed
    def update_section(
        self,
        label: str,
        section_id: str,
        *,
        body: str | None = None,
        header: str | None = None,
        summary: str | None = None,
    ) -> None:
        """Replace a section's body, header and/or summary."""
        if body is None and header is None and summary is None:
            raise ValueError("nothing to update: give body, header and/or summary")
        if body is not None:
            check_str(body, "section body", empty_ok=True)
        if header is not None:
            check_str(header, "section header")
        if summary is not None:
            check_str(summary, "section summary", empty_ok=True)

        def change(doc: dict[str, Any]) -> None:
            record = find_section(doc, section_id)
            for key, value in (("body", body), ("header", header), ("summary", summary)):
                if value is not None:
                    record[key] = value

        self._documents.change(label, change)

    @feed
    def delete_section(self, label: str, section_id: str) -> None:
        """Remove a section together with its subsections."""

        def change(doc: dict[str, Any]) -> None:
            find_section(doc, section_id)
            # string ids only: a hand-edited child without one must not make every top-level
            # section (parent None) a descendant, nor an unhashable id break the lookup
            doomed: set[str] = {section_id}

            def is_doomed(record: object, key: str) -> bool:
                value = record.get(key) if isinstance(record, dict) else None
                return isinstance(value, str) and value in doomed

            grew = True
            while grew:  # descendants, whatever order they are stored in
                grew = False
                for r in doc["sections"]:
                    child = r.get("id") if is_doomed(r, "parent") else None
                    if isinstance(child, str) and child not in doomed:
                        doomed.add(child)
                        grew = True
            doc["sections"] = [r for r in doc["sections"] if not (is_doomed(r, "id") or is_doomed(r, "parent"))]

        self._documents.change(label, change)

    def _set_section(
        self, label: str, section_id: str, key: str, value: Any, check: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        def change(doc: dict[str, Any]) -> None:
            record = find_section(doc, section_id)
            if check is not None:
                check(record)
            record[key] = value

        self._documents.change(label, change)

    # the two arguments of expand, collapse, pin and unpin, completed from the stored documents
    _LABEL_AND_SECTION = (
        arg("label", help="The document label.", complete=lambda doc, typed: [d["label"] for d in doc.documents()]),
        arg(
            "section_id",
            help="The section id.",
            complete=lambda doc, typed: [
                r["id"] for r in doc.document(typed[0]).get("sections") or [] if isinstance(r, dict)
            ],
        ),
    )

    @command("expand", *_LABEL_AND_SECTION, help="Expand a section: LABEL SECTION_ID.")
    @feed
    def expand_section(self, label: str, section_id: str) -> None:
        """Show the section's text (its subsections follow their own states)."""
        self._set_section(label, section_id, "expanded", True)

    @command("collapse", *_LABEL_AND_SECTION, help="Collapse a section (and hide its subsections): LABEL SECTION_ID.")
    @feed
    def collapse_section(self, label: str, section_id: str) -> None:
        """Show the section as a stub and hide all its subsections. A pinned one: ValueError."""

        def not_pinned(record: dict[str, Any]) -> None:
            if record.get("pinned"):
                raise ValueError(f"section {section_id!r} of document {label!r} is pinned; unpin it before collapsing")

        self._set_section(label, section_id, "expanded", False, not_pinned)

    @command("pin", *_LABEL_AND_SECTION, help="Pin a section (always expanded): LABEL SECTION_ID.")
    @feed
    def pin_section(self, label: str, section_id: str) -> None:
        """Keep the section expanded whatever its state, until :meth:`unpin_section`."""
        self._set_section(label, section_id, "pinned", True)

    @command("unpin", *_LABEL_AND_SECTION, help="Unpin a section: LABEL SECTION_ID.")
    @feed
    def unpin_section(self, label: str, section_id: str) -> None:
        """Let the section follow its own state again."""
        self._set_section(label, section_id, "pinned", False)

    @feed
    def set_section_default(self, label: str, section_id: str, expanded: bool) -> None:
        """Whether the section is expanded when nobody chose (see :meth:`reset_section_states`)."""
        check_bool(expanded, "expanded")
        self._set_section(label, section_id, "expanded_by_default", expanded)

    @feed
    def reset_section_states(self, label: str) -> None:
        """Forget every expand/collapse choice in a document: each section takes its default."""

        def change(doc: dict[str, Any]) -> None:
            for record in doc["sections"]:
                if isinstance(record, dict):
                    record["expanded"] = None

        self._documents.change(label, change)

    @feed
    def reorder_sections(self, label: str, order: list[str], *, parent: str | None = None) -> None:
        """Put the children of ``parent`` (None: the top-level sections) in the given order.

        ``order`` must name each of those sections exactly once.
        """
        if isinstance(order, str) or not isinstance(order, (list, tuple)):
            raise TypeError(f"order must be a list of section ids, got {type(order).__name__}")
        if parent is not None:
            check_str(parent, "parent section id")

        def change(doc: dict[str, Any]) -> None:
            if parent is not None:
                find_section(doc, parent)
            siblings = {r.get("id"): r for r in doc["sections"] if isinstance(r, dict) and r.get("parent") == parent}
            if len(set(order)) != len(order) or set(order) != set(siblings):
                where = f"section {parent!r}" if parent is not None else "the top level"
                names = ", ".join(sorted(repr(k) for k in siblings))
                raise ValueError(f"order must name each section under {where} exactly once: {names}")
            for position, section_id in enumerate(order):
                siblings[section_id]["order"] = position

        self._documents.change(label, change)

    # -- reading
    def documents(self) -> list[dict[str, Any]]:
        """Each stored document as ``{label, title, enabled, archived, sections}`` (a count), plus
        ``shared_by`` for a document another user shares, in creation order."""
        return [
            {
                "label": d.get("label"),
                "title": d.get("title"),
                "enabled": d.get("enabled", True),
                "archived": d.get("archived", False),
                "sections": len(d.get("sections") or []),
                **({"shared_by": d["shared_by"]} if d.get("shared_by") is not None else {}),
            }
            for d in self._documents.all()
            if not d.get("malformed")
        ]

    @command("documents", help="The stored documents, as a DataFrame.")
    def _documents_command(self) -> Any:
        import pandas as pd

        return pd.DataFrame(
            self.documents(), columns=["label", "title", "enabled", "archived", "sections", "shared_by"]
        )

    def document(self, label: str) -> dict[str, Any]:
        """A copy of one stored document record (title, description, flags, section records)."""
        return self._documents.load(label)

    def problems(self) -> list[str]:
        """What cannot be shown, in every stored document (shown or not): orphaned, too deep,
        duplicate or malformed sections, and malformed document records."""
        found = []
        for doc in self._documents.all():
            if doc.get("malformed"):
                found.append(f"{doc['label']}: the document record is malformed; not shown")
                continue
            for section, problem in Tree(doc).problems:
                found.append(f"{doc['label']}: section {section!r}: {problem}")
        return found

    # -- rendering
    def generate_content(self, context: dict[str, Any]) -> str:
        shown = [
            d
            for d in self._documents.all()
            if not d.get("malformed") and d.get("enabled", True) is True and d.get("archived", False) is not True
        ]
        # The text depends on the stored documents, the style and large_section_chars alone, and
        # documents rarely change between composes: comparing them with the last ones rendered
        # costs far less than rendering again. The key holds the store's copies, so nothing can
        # alias it.
        key = (shown, self.style, self.large_section_chars)
        last = self._last_render
        if last is not None and last[0] == key:
            return last[1]
        if self.style == "revised":
            text = render_revised(shown, self.large_section_chars)
        else:
            text = render_original(shown, self.large_section_chars)
        self._last_render = (key, text)
        return text
