"""Where each value of a JSON text lies: the character spans that let an import cut a request into
sections whose raw slices join back to the exact bytes of the log.

``json.loads`` gives values but no positions; :func:`locate` walks a text that ``json.loads``
accepted and returns a :class:`Node` per value (start and end offsets, children by key or index).
:func:`string_offsets` maps each character of a decoded JSON string back to the offset of its
escape in the raw token, so a cut made in the decoded text (a markdown heading, an XML region) is
a cut of the raw line too.

Examples
--------
>>> text = '{"a": [1, "x\\\\ny"], "b": null}'
>>> node = locate(text)
>>> text[node["a"].start:node["a"].end]
'[1, "x\\\\ny"]'
>>> token = text[node["a"][1].start:node["a"][1].end]
>>> string_offsets(token)
[1, 2, 4, 5]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_WS = re.compile(r"[ \t\n\r]*")
# a run of plain characters, then escapes each followed by a run: the regex engine keeps no state
# per character (an alternation repeated per character grew its stack, reallocated, with the string)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


@dataclass(slots=True)
class Node:
    """One JSON value: ``text[start:end]`` is its raw token; ``kind`` is object, array, string or
    scalar; an object's children are by key, an array's by index."""

    kind: str
    start: int
    end: int
    keys: dict[str, Node] = field(default_factory=dict)
    items: list[Node] = field(default_factory=list)

    def __getitem__(self, key: str | int) -> Node:
        if isinstance(key, int):
            return self.items[key]
        return self.keys[key]

    def get(self, key: str) -> Node | None:
        """The child under ``key`` of an object (None if absent)."""
        return self.keys.get(key)


def locate(text: str, start: int = 0) -> Node:
    """The Node tree of the JSON value at ``start`` of ``text`` (a text ``json.loads`` accepted:
    behaviour on invalid JSON is undefined). Duplicate keys keep the last, as ``json.loads`` does."""
    node, _ = _value(text, _skip(text, start))
    return node


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _value(text: str, pos: int) -> tuple[Node, int]:
    char = text[pos]
    if char == "{":
        node = Node("object", pos, pos)
        pos = _skip(text, pos + 1)
        if text[pos] == "}":
            node.end = pos + 1
            return node, node.end
        while True:
            key_match = _STRING.match(text, pos)
            assert key_match is not None
            key = _decode(key_match.group())
            pos = _skip(text, _skip(text, key_match.end()) + 1)  # past the colon
            child, pos = _value(text, pos)
            node.keys[key] = child
            pos = _skip(text, pos)
            if text[pos] == "}":
                node.end = pos + 1
                return node, node.end
            pos = _skip(text, pos + 1)  # past the comma
    if char == "[":
        node = Node("array", pos, pos)
        pos = _skip(text, pos + 1)
        if text[pos] == "]":
            node.end = pos + 1
            return node, node.end
        while True:
            child, pos = _value(text, pos)
            node.items.append(child)
            pos = _skip(text, pos)
            if text[pos] == "]":
                node.end = pos + 1
                return node, node.end
            pos = _skip(text, pos + 1)
    if char == '"':
        match = _STRING.match(text, pos)
        assert match is not None
        return Node("string", pos, match.end()), match.end()
    match = _SCALAR.match(text, pos)
    assert match is not None, f"not JSON at {pos}"
    return Node("scalar", pos, match.end()), match.end()


def _decode(token: str) -> str:
    import json

    value = json.loads(token)
    assert isinstance(value, str)
    return value


def string_offsets(token: str) -> list[int]:
    """For a raw JSON string token (quotes included), the offset in the token where each decoded
    character starts, plus one last entry: the offset of the closing quote. A surrogate pair
    written as two ``\\u`` escapes is one decoded character, as ``json.loads`` decodes it."""
    offsets: list[int] = []
    i, end = 1, len(token) - 1
    while i < end:
        offsets.append(i)
        if token[i] != "\\":
            i += 1
        elif token[i + 1] != "u":
            i += 2
        else:
            code = int(token[i + 2 : i + 6], 16)
            if (
                0xD800 <= code < 0xDC00
                and token.startswith("\\u", i + 6)
                and 0xDC00 <= int(token[i + 8 : i + 12], 16) < 0xE000
            ):
                i += 12
            else:
                i += 6
    offsets.append(end)
    return offsets
