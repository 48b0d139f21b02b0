"""Escaping for the XML-like markup trinkets emit.

The original interpolates user and model text into markup unescaped, so a guidance text or a reminder
title can close a tag or add an attribute. Every built-in trinket escapes through these two functions,
chosen by where the value lands: element text or attribute value. An XML parser reading the result
gets back the exact original string, for any string XML can carry. Characters XML 1.0 cannot carry
at all, even as character references (NUL and the other C0 controls but tab, line feed and carriage
return; lone surrogates; U+FFFE and U+FFFF), are replaced by U+FFFD REPLACEMENT CHARACTER, so the
result always parses and shows where something was.

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
>>> escape_text("a\\x00b\\x1bc\\ufffe") == "a\\ufffdb\\ufffdc\\ufffd"
True
"""

from __future__ import annotations

#: Code points XML 1.0's Char production leaves out (a parser rejects them even as &#...;
#: references), each mapped to U+FFFD: a ``str.maketrans`` mapping for a trinket that builds its
#: own escaping table.
XML_ILLEGAL = {
    code: "\ufffd"
    for code in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0xD800, 0xE000), 0xFFFE, 0xFFFF)
}
_ILLEGAL = XML_ILLEGAL
# A bare carriage return in element text would come back from a parser as "\n" (line-end
# normalisation), so it is written as a character reference.
_TEXT_TABLE = str.maketrans({**_ILLEGAL, "&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
# Attribute values also escape quotes, and whitespace characters an XML parser would normalise to
# spaces (so a round trip returns the value byte for byte).
_ATTR_TABLE = str.maketrans(
    {
        **_ILLEGAL,
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "'": "&apos;",
        "\n": "&#10;",
        "\r": "&#13;",
        "\t": "&#9;",
    }
)


def escape_text(value: object) -> str:
    """Escape a value for use as element text (characters XML cannot carry become U+FFFD)."""
    return str(value).translate(_TEXT_TABLE)


def escape_attr(value: object) -> str:
    """Escape a value for use inside a double- or single-quoted attribute (characters XML cannot
    carry become U+FFFD)."""
    return str(value).translate(_ATTR_TABLE)


def neutralize_closing_tag(text: str, tag: str) -> str:
    """Make ``</tag`` in ``text`` inert (``&lt;/tag``) so the text cannot close an enclosing frame."""
    closing = "</" + tag
    if closing not in text:
        return text
    return text.replace(closing, "&lt;/" + tag)
