"""The text of the ``context_search_results`` section, in its two styles, from the shown results.

:func:`render` writes the header and one block per result, in the ``"original"`` or the
``"revised"`` style; :class:`~trinkets.getcontext.GetContextTrinket` calls it (its module
docstring shows both styles' wording and how values are escaped).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from trinkets.getcontext.results import SearchResult
from wm_kernel.utils.markup import escape_text

# every character str.splitlines() treats as a line break, and \r\n as one break
_LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
HEADER = "=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ==="
RESULT_SEPARATOR = "\n\n---\n\n"


def _show(value: object) -> str:
    """A value as the revised style writes it: markup characters escaped, continuation lines
    indented (see :mod:`trinkets.getcontext`)."""
    # line breaks are normalised before escaping, so none of them reaches the text as a reference
    return escape_text(_LINE_BREAK.sub("\n", str(value))).replace("\n", "\n  ")


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def render_original(r: SearchResult, remaining: int | None) -> str:
    """One result's block in the original style (``remaining``: its turns left, None if it never expires)."""
    d = r.data
    if r.status == "success":
        s = d["summary"]
        parts = [f"📎 Context Search: {escape_text(s['query'])}"]
        if s["summary"]:
            parts.append(escape_text(s["summary"]))
        if s["key_findings"]:
            parts.append(
                "\n"
                + "\n".join(
                    f"• {escape_text(f['point'])}"
                    + (f" (source: {escape_text(f['source'])})" if f.get("source") else "")
                    for f in s["key_findings"]
                )
            )
        if s["limitations"]:
            parts.append(f"\nNote: {escape_text(s['limitations'])}")
        return "\n\n".join(parts)
    if r.status == "pending":
        sources = ", ".join(escape_text(x) for x in d["search_scope"]) or "all sources"
        return (
            f"🔍 Searching for context: '{escape_text(d['query'])}'\n\n"
            f"Mode: {escape_text(d['search_mode'])} | Sources: {sources}\n\n"
            "Results will appear here when the search completes..."
        )
    assert remaining is not None
    fades = f"(This message will disappear in {remaining} turn{'' if remaining == 1 else 's'})"
    if r.status == "timeout":
        return (
            f"⚠️ Context search timed out: '{escape_text(d['query'])}'\n\n"
            f"The search exceeded 5 minutes (stopped at iteration {d['iteration']} with "
            f"{d['findings_count']} findings). Try rephrasing your query or tell the user the "
            f"search was inconclusive.\n\n{fades}"
        )
    return (
        f"⚠️ Context search failed: '{escape_text(d['query'])}'\n\n"
        f"Error: {escape_text(d['error'])} ({escape_text(d['error_type'])})\n\n"
        f"Try rephrasing the query or tell the user you encountered an error.\n\n{fades}"
    )


def render_revised(r: SearchResult, remaining: int | None) -> str:
    """One result's block in the revised style (``remaining``: its turns left, None if it never expires)."""
    d = r.data
    if r.status == "success":
        s = d["summary"]
        lines = [f"📎 Context Search: {_show(s['query'])}"]
        if s["summary"].strip():
            lines.append(_show(s["summary"]))
        for f in s["key_findings"]:
            source = f" (source: {_show(f['source'])})" if f.get("source") else ""
            lines.append(f"• {_show(f['point'])}{source}")
        if s["limitations"]:
            lines.append(f"Note: {_show(s['limitations'])}")
        return "\n".join(lines)
    if r.status == "pending":
        sources = ", ".join(_show(x) for x in d["search_scope"]) or "all sources"
        return "\n".join(
            [
                f"🔍 Searching for context: '{_show(d['query'])}'",
                f"Mode: {_show(d['search_mode'])}",
                f"Sources: {sources}",
                "Results will appear here when the search completes.",
            ]
        )
    assert remaining is not None
    fades = (
        f"(This message will disappear in {_plural(remaining, 'turn')})"
        if remaining > 0
        else "(This message will disappear after this turn)"
    )
    if r.status == "timeout":
        return "\n".join(
            [
                f"⚠️ Context search timed out: '{_show(d['query'])}'",
                f"Stopped at iteration {d['iteration']} with {_plural(d['findings_count'], 'finding')}.",
                "Try rephrasing the query, or tell the user the search was inconclusive.",
                fades,
            ]
        )
    return "\n".join(
        [
            f"⚠️ Context search failed: '{_show(d['query'])}'",
            f"Error ({_show(d['error_type'])}): {_show(d['error'])}",
            "Try rephrasing the query, or tell the user the search ran into an error.",
            fades,
        ]
    )


def render(shown: Iterable[tuple[SearchResult, int | None]], style: str) -> str:
    """The section: :data:`HEADER` and the blocks of ``shown`` (each result with its turns left) in
    ``style``, separated by :data:`RESULT_SEPARATOR`; '' when nothing is shown."""
    block = render_revised if style == "revised" else render_original
    blocks = [block(r, remaining) for r, remaining in shown]
    if not blocks:
        return ""
    return f"{HEADER}\n\n" + RESULT_SEPARATOR.join(blocks)
