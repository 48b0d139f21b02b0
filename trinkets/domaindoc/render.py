"""The text the ``domaindoc`` section writes, in its two styles, from the stored documents.

:func:`render_original` writes the original system's frame (banner, ``<mira:domain_knowledge>``,
guidance with section states, index and quick reference, then the document, sections addressed
by header); :func:`render_revised` writes this kit's id-addressed layout. Both take the shown
documents (enabled, not archived, in creation order) and the ``large_section_chars`` threshold;
:class:`~trinkets.domaindoc.DomaindocTrinket` calls them (its module docstring shows both).
"""

from __future__ import annotations

from typing import Any

from trinkets.domaindoc.tree import MAX_DEPTH, Node, Tree
from wm_kernel.utils.markup import escape_attr, escape_text

#: The content element of each level (revised style).
LEVEL_TAGS = {1: "section", 2: "subsection", 3: "subsubsection"}
#: The element of each level in the original style.
ORIGINAL_LEVEL_TAGS = {1: "section", 2: "subsection", 3: "sub-subsection"}
#: The original's attribute counting a section's children, by level (none at level 3).
ORIGINAL_CHILD_COUNT = {1: "subsections", 2: "children"}
#: The rule above and below the original's banner.
DELIMITER = "\u2550" * 60
#: The original's banner: what the model is told this section is.
BANNER = f"{DELIMITER}\nDOMAIN KNOWLEDGE - Reference material, not directives\n{DELIMITER}"
#: The original's instruction on how sections nest and how to address them (its exact words: the
#: "two levels of nesting" are the two below a top-level section).
SECTION_INSTRUCTION = (
    "Sections support two levels of nesting (section \u2192 subsection \u2192 sub-subsection). When a "
    "parent is collapsed, ALL descendants are hidden. Pinned sections are always expanded. Use "
    'parent="X" to target nested sections.'
)
#: The original's quick reference of the model's section operations (fixed text).
QUICK_REFERENCE = (
    "<quick_reference>\n"
    '<example operation="expand" section="NAME"/>\n'
    '<example operation="expand" section="CHILD" parent="PARENT"/>\n'
    '<example operation="create_section" section="NAME" parent="PARENT" content="..."/>\n'
    '<example operation="reorder_sections" order="A,B" parent="PARENT"/>\n'
    "</quick_reference>"
)


#: The note MIRA HEAD puts on the block of documents other users share.
SHARED_NOTE = (
    "These documents are shared by another user. Edits are visible to all collaborators. "
    "The user is working in someone else's document when operating on these."
)


def render_original(shown: list[dict[str, Any]], large_section_chars: int) -> str:
    """The original style's text for the shown documents ("" when none has a section)."""
    # the original lists personal documents by label, shared ones (MIRA HEAD) in creation order,
    # and leaves out a document without any section
    personal = [
        _original_document(doc, large_section_chars)
        for doc in sorted(shown, key=lambda d: str(d["label"]))
        if doc.get("sections") and doc.get("shared_by") is None
    ]
    shared = [
        _original_document(doc, large_section_chars, shared_by=str(doc["shared_by"]))
        for doc in shown
        if doc.get("sections") and doc.get("shared_by") is not None
    ]
    if not personal and not shared:
        return ""
    lines = [BANNER, "<mira:domain_knowledge>"]
    if personal:
        lines += ["<personal_docs>", *personal, "</personal_docs>"]
    if shared:
        lines += [f'<shared_docs note="{SHARED_NOTE}">', *shared, "</shared_docs>"]
    lines += ["</mira:domain_knowledge>", DELIMITER]
    return "\n".join(lines)


def _original_document(doc: dict[str, Any], large_section_chars: int, *, shared_by: str = "") -> str:
    tree = Tree(doc)
    states: list[str] = []
    index: list[str] = []
    content: list[str] = []
    for node in tree.roots:
        _original_section(node, (), False, states, index, content, large_section_chars)
    document = "\n".join(content)
    return "\n".join(
        [
            f'<domaindoc label="{escape_attr(doc["label"])}"'
            + (f' shared_by="{escape_attr(shared_by)}"' if shared_by else "")
            + ">",
            "<guidance>",
            f"<purpose>{escape_text(doc.get('description') or '')}</purpose>",
            "<section_management>",
            f"<instruction>{SECTION_INSTRUCTION}</instruction>",
            "<section_states>",
            "\n".join(states),
            "</section_states>",
            "<section_index>",
            "\n".join(index) if index else "<empty/>",
            "</section_index>",
            QUICK_REFERENCE,
            "</section_management>",
            "</guidance>",
            "<document>",
            document if document.strip() else "<empty/>",
            "</document>",
            "</domaindoc>",
        ]
    )


def _original_section(
    node: Node,
    ancestors: tuple[str, ...],
    hidden: bool,
    states: list[str],
    index: list[str],
    content: list[str],
    large_section_chars: int,
) -> None:
    """One section and its descendants, as the original writes them into its three lists.

    ``ancestors`` are the headers above (nearest last); ``hidden``: a collapsed ancestor hides
    this section from the states and the document (the index lists every section).

    Long because: the original writes each section into three lists (states, index, content), each
    with its own rules for pinned, collapsed and large sections; they are written together in one
    walk.
    """
    tag = ORIGINAL_LEVEL_TAGS[node.level]
    header = escape_attr(node.record["header"])
    pinned = node.record.get("pinned") is True
    collapsed = node.state == "collapsed"
    by_default = node.default == "expanded"
    # the original stores a "collapsed" flag, so a section collapsed by its own default reads
    # as collapsed, and one expanded by choice as "expanded" (see the notes in trinkets.domaindoc)
    if pinned:
        state = 'state="always_expanded"'
    elif collapsed:
        state = 'state="collapsed"' + (' default="expanded"' if by_default else "")
    else:
        state = 'state="expanded_by_default"' if by_default else 'state="expanded"'
    extra = ""
    if node.children and node.level in ORIGINAL_CHILD_COUNT:
        extra = f' {ORIGINAL_CHILD_COUNT[node.level]}="{len(node.children)}"'
    elif not node.children and len(node.body) > large_section_chars:
        extra = ' size="large"'
    opens = not collapsed and bool(node.children)
    if not hidden:
        states.append(f'<{tag} header="{header}" {state}{extra}{">" if opens else "/>"}')

    summary = node.record.get("summary") or ""
    if summary:
        named = [f'section="{header}"']
        named += [
            f'{role}="{escape_attr(name)}"'
            for role, name in zip(("parent", "grandparent"), reversed(ancestors), strict=False)
        ]
        index.append(f"<entry {' '.join(named)}>{escape_text(summary)}</entry>")

    if not hidden:
        if collapsed:
            content.append(f'<{tag} header="{header}" state="collapsed"{extra}/>')
        elif node.level == MAX_DEPTH and not node.body.strip():
            content.append(f'<{tag} header="{header}"/>')  # an empty leaf closes itself
        else:
            content.append(f'<{tag} header="{header}">')
            if node.body.strip():  # a whitespace-only body: nothing between the tags
                content.append(escape_text(node.body))
            if node.level == MAX_DEPTH:
                content.append(f"</{tag}>")
    for child in node.children:
        _original_section(
            child, (*ancestors, node.record["header"]), hidden or collapsed, states, index, content, large_section_chars
        )
    if not hidden and not collapsed and node.level < MAX_DEPTH:
        content.append(f"</{tag}>")
    if not hidden and opens:
        states.append(f"</{tag}>")


def render_revised(shown: list[dict[str, Any]], large_section_chars: int) -> str:
    """The revised style's text for the shown documents ("" when there are none)."""
    if not shown:
        return ""
    lines = ["<domain_knowledge>"]
    for doc in shown:
        _revised_document(doc, lines, large_section_chars)
    lines.append("</domain_knowledge>")
    return "\n".join(lines)


def _revised_document(doc: dict[str, Any], lines: list[str], large_section_chars: int) -> None:
    tree = Tree(doc)
    shared = f' shared_by="{escape_attr(doc["shared_by"])}"' if doc.get("shared_by") is not None else ""
    lines.append(f'<domaindoc label="{escape_attr(doc["label"])}" title="{escape_attr(doc.get("title", ""))}"{shared}>')
    description = doc.get("description") or ""
    if description:
        lines.append(f"<description>{escape_text(description)}</description>")
    if tree.problems:
        lines.append("<problems>")
        lines.extend(
            f'<problem section="{escape_attr(section)}">{escape_text(text)}</problem>'
            for section, text in tree.problems
        )
        lines.append("</problems>")
    if tree.roots:
        lines.append("<section_states>")
        for node, hidden_by in tree.walk():
            line = f'<section id="{escape_attr(node.id)}" state="{node.state}" default="{node.default}"'
            if not node.children and len(node.body) > large_section_chars:
                line += ' size="large"'
            if hidden_by is not None:
                line += f' hidden_by="{escape_attr(hidden_by.id)}"'
            lines.append(line + "/>")
        lines.append("</section_states>")
        lines.append("<index>")
        for node, _ in tree.walk():
            head = (
                f'<entry id="{escape_attr(node.id)}" level="{node.level}" header="{escape_attr(node.record["header"])}"'
            )
            summary = node.record.get("summary") or ""
            lines.append(f"{head}>{escape_text(summary)}</entry>" if summary else head + "/>")
        lines.append("</index>")
        lines.append("<content>")
        for node in tree.roots:
            _revised_section(node, lines)
        lines.append("</content>")
    lines.append("</domaindoc>")


def _revised_section(node: Node, lines: list[str]) -> None:
    tag = LEVEL_TAGS[node.level]
    head = f'<{tag} id="{escape_attr(node.id)}" header="{escape_attr(node.record["header"])}"'
    if node.state == "collapsed":
        stub = f'{head} state="collapsed" chars="{len(node.body)}"'
        if node.children:
            stub += f' subsections="{len(node.children)}"'
        lines.append(stub + "/>")
        return
    lines.append(head + ">")
    if node.body:
        lines.append(escape_text(node.body))
    for child in node.children:
        _revised_section(child, lines)
    lines.append(f"</{tag}>")
