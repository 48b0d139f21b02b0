"""The section tree of a domain document: stored section records checked and arranged for rendering.

A stored document holds its sections as a flat list of records (``id``, ``header``, ``body``,
``summary``, ``parent``, ``order`` and the state flags); :class:`Tree` nests them (at most
:data:`MAX_DEPTH` levels), orders siblings and lists what cannot be placed. Used by
:mod:`trinkets.domaindoc` and :mod:`trinkets.domaindoc.render`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wm_kernel.utils.checks import check_str

#: Deepest nesting: section (1), subsection (2), sub-subsection (3).
MAX_DEPTH = 3


def is_section_record(record: object) -> bool:
    if not isinstance(record, dict):
        return False
    return (
        isinstance(record.get("id"), str)
        and bool(record["id"])
        and isinstance(record.get("header"), str)
        and isinstance(record.get("body", ""), str)
        and isinstance(record.get("summary", ""), str)
        and (record.get("parent") is None or isinstance(record.get("parent"), str))
    )


class Node:
    """A section as rendered: its stored record, level and children (in sibling order)."""

    __slots__ = ("record", "level", "children")

    def __init__(self, record: dict[str, Any], level: int) -> None:
        self.record = record
        self.level = level
        self.children: list[Node] = []

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def body(self) -> str:
        return str(self.record.get("body", ""))

    @property
    def default(self) -> str:
        return "expanded" if self.record.get("expanded_by_default", True) else "collapsed"

    @property
    def state(self) -> str:
        if self.record.get("pinned"):
            return "pinned"
        chosen = self.record.get("expanded")
        if isinstance(chosen, bool):
            return "expanded" if chosen else "collapsed"
        return self.default


class Tree:
    """A stored document checked and arranged for rendering, with what could not be placed."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.roots: list[Node] = []
        self.problems: list[tuple[str, str]] = []  # (section id, what is wrong)
        raw = doc.get("sections", [])
        records = raw if isinstance(raw, list) else []
        if not isinstance(raw, list):
            self.problems.append(("*", "the sections are not a list; none shown"))
        by_id: dict[str, tuple[int, dict[str, Any]]] = {}
        for index, record in enumerate(records):
            if not is_section_record(record):
                self.problems.append((f"#{index + 1}", "malformed section record; not shown"))
            elif record["id"] in by_id:
                self.problems.append((record["id"], "duplicate section id; this copy is not shown"))
            else:
                by_id[record["id"]] = (index, record)
        children: dict[str | None, list[tuple[int, dict[str, Any]]]] = {}
        for index, record in by_id.values():
            children.setdefault(record.get("parent"), []).append((index, record))

        def sibling_key(item: tuple[int, dict[str, Any]]) -> tuple[int, int]:
            order = item[1].get("order")
            return (order if isinstance(order, int) and not isinstance(order, bool) else 0, item[0])

        placed: set[str] = set()
        too_deep: set[str] = set()

        def place(items: list[tuple[int, dict[str, Any]]], level: int, out: list[Node]) -> None:
            for _, record in sorted(items, key=sibling_key):
                if level > MAX_DEPTH:
                    too_deep.add(record["id"])
                    self.problems.append((record["id"], f"too deep (level {level}; at most {MAX_DEPTH}); not shown"))
                    continue
                node = Node(record, level)
                placed.add(node.id)
                out.append(node)
                place(children.get(node.id, []), level + 1, node.children)

        place(children.get(None, []), 1, self.roots)
        for section, (_, record) in by_id.items():
            if section in placed or section in too_deep:
                continue
            parent = record["parent"]
            if parent not in by_id:
                self.problems.append((section, f"orphaned: parent {parent!r} does not exist; not shown"))
            else:
                self.problems.append((section, f"under section {parent!r}, which is not shown; not shown"))

    def walk(self) -> Iterator[tuple[Node, Node | None]]:
        """Every placed section depth first, with its outermost collapsed ancestor (or None)."""

        def visit(nodes: list[Node], hidden_by: Node | None) -> Iterator[tuple[Node, Node | None]]:
            for node in nodes:
                yield node, hidden_by
                inner = hidden_by
                if inner is None and node.state == "collapsed":
                    inner = node
                yield from visit(node.children, inner)

        return visit(self.roots, None)


def find_section(doc: dict[str, Any], section_id: object) -> dict[str, Any]:
    """The record of section ``section_id`` in a stored document; ValueError when it has none."""
    check_str(section_id, "section id")
    for record in doc["sections"]:
        if isinstance(record, dict) and record.get("id") == section_id:
            return record
    raise ValueError(f"unknown section {section_id!r} in document {doc.get('label')!r}")


def section_level(doc: dict[str, Any], record: dict[str, Any]) -> int:
    """1 for a top-level section; ValueError when its parent chain is broken or loops."""
    by_id = {r.get("id"): r for r in doc["sections"] if isinstance(r, dict)}
    level, seen, current = 1, {record.get("id")}, record
    while current.get("parent") is not None:
        parent = by_id.get(current["parent"])
        if parent is None or parent.get("id") in seen:
            raise ValueError(f"section {record.get('id')!r} is not attached to the document (see problems())")
        seen.add(parent.get("id"))
        current = parent
        level += 1
    return level
