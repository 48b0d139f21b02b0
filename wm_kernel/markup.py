"""Escaping for the XML-like markup trinkets emit.

The original interpolates user and model text into markup unescaped, so a guidance text or a reminder
title can close a tag or add an attribute. Every built-in trinket escapes through these two functions,
chosen by where the value lands: element text or attribute value. An XML parser reading the result
gets back the exact original string.

Examples
--------
>>> escape_text('</guidance><x>')
'&lt;/guidance&gt;&lt;x&gt;'
>>> escape_attr('a" onload="x')
'a&quot; onload=&quot;x'
>>> import xml.etree.ElementTree as ET
>>> hostile = 'tab\\there & "quotes"\\r\\nnew line'
>>> ET.fromstring(f'<r a="{escape_attr(hostile)}">{escape_text(hostile)}</r>').get("a") == hostile
True
"""
from __future__ import annotations

# A bare carriage return in element text would come back from a parser as "\n" (line-end
# normalisation), so it is written as a character reference.
_TEXT_TABLE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
# Attribute values also escape quotes, and whitespace characters an XML parser would normalise to
# spaces (so a round trip returns the value byte for byte).
_ATTR_TABLE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;",
                             "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def escape_text(value: object) -> str:
    """Escape a value for use as element text."""
    return str(value).translate(_TEXT_TABLE)


def escape_attr(value: object) -> str:
    """Escape a value for use inside a double- or single-quoted attribute."""
    return str(value).translate(_ATTR_TABLE)


def neutralize_closing_tag(text: str, tag: str) -> str:
    """Make ``</tag`` in ``text`` inert (``&lt;/tag``) so the text cannot close an enclosing frame."""
    closing = "</" + tag
    if closing not in text:
        return text
    return text.replace(closing, "&lt;/" + tag)
