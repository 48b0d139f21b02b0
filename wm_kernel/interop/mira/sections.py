"""A MIRA chat turn's body cut into MIRA's sections, recovered from its own markers.

``tool:NAME`` per tool; the system block: ``base_prompt`` (the base prompt and the scaffolding
delimiter), then the system sections, each recognised by how the kit's trinket opens it
(:data:`~wm_kernel.interop.mira.markers.MARKERS`: ``<user_model>`` is ``behavioral_directives`` of
``LoraTrinket``...), cut at the composer's separators (``"\\n\\n---\\n\\n"`` inside the cached and
the non-cached text, the one ``"\\n\\n"`` between them: what comes after it was composed as
non-cached); leading assistant messages as ``conversation_prefix`` items; the history (``msg[i]
role``, as other Anthropic logs); each ``toolu_dd_`` tool_use/tool_result pair as a post-history
item (its section named by its marker, ``domaindoc``); the HUD message cut at its frame and parts
(``<mira:hud>``). The composer's separators and frames are ``(composer)`` sections; a section no
marker names is labelled by the splitter (``system <tool_availability>``, ``hud <...>``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from wm_kernel.core.composer.hud_frame import RULE
from wm_kernel.core.composer.placement_build import SECTION_SEPARATOR
from wm_kernel.dialects.anthropic import tool_element
from wm_kernel.dialects.elements import ttl_of
from wm_kernel.interop.bodies import Cutter, Section, anthropic_message
from wm_kernel.interop.jsonspan import Node, string_offsets
from wm_kernel.interop.mira.markers import HUD_HEAD, SCAFFOLDING, Marker, marker_at
from wm_kernel.interop.split import Splitter, closing_end

#: The owner of the composer's separators and frames, and of the wire's synthetic tool calls.
COMPOSER = "(composer)"
WIRE = "(wire)"
#: The id prefix and tool name of the synthetic calls that carry post-history items.
DD_PREFIX = "toolu_dd_"
DD_TOOL = "domaindoc_tool"
#: A MIRA history message starts with the time it was written (continuum.py): ``[9:05am] ``.
_STAMP = re.compile(r"\[\d{1,2}:\d\d[ap]m\] ")


@dataclass
class _Piece:
    """A stretch of a decoded string (its end), what it is, who wrote it, where it goes."""

    name: str
    end: int
    text: str
    trinket: str | None
    where: str | None
    cache: str | None = None


def _emit(cut: Cutter, node: Node, kind: str, element: str, pieces: Sequence[_Piece]) -> None:
    """Sections for the pieces of the string ``node`` (decoded offsets mapped to the raw token):
    the bytes before the first piece go with it, the closing quote with the last."""
    cut.framing(node.start)
    offsets = string_offsets(cut.text[node.start : node.end])
    for index, piece in enumerate(pieces):
        stop = node.end if index == len(pieces) - 1 else node.start + offsets[piece.end]
        name = piece.name
        cut.seen[name] = cut.seen.get(name, 0) + 1
        if cut.seen[name] > 1:
            name = f"{name} #{cut.seen[name]}"
        cut.sections.append(
            Section(
                name, kind, cut.text[cut.cursor : stop], piece.text, piece.trinket, piece.cache, element, piece.where
            )
        )
        cut.cursor = stop


def _region_end(text: str, start: int, marker: Marker) -> int | None:
    """Where the element holding a marked section ends (with the elements that may follow it)."""
    if marker.tag is None:
        return None
    end = closing_end(text, marker.tag, start + 1)
    if end is None:
        return None
    for tag in marker.follows:
        if re.match(rf"\n\n<{re.escape(tag)}[\s>]", text[end : end + len(tag) + 4]):
            after = closing_end(text, tag, end + 3)
            if after is not None:
                end = after
    return end


_OPEN_TAG = re.compile(r"<([A-Za-z_][\w.:-]*)(?:\s[^<>]*)?>")


def _whole_element(text: str, pos: int, stop: int, separators: tuple[str, ...]) -> bool:
    """True when an XML element opens at ``pos`` and closes right before a separator or ``stop``:
    a whole section no marker names (``<tool_availability>...</tool_availability>``)."""
    match = _OPEN_TAG.match(text, pos)
    if match is None:
        return False
    end = closing_end(text, match.group(1), match.end())
    return end is not None and (end >= stop or any(text.startswith(s, end) for s in separators))


def _next_start(
    text: str, pos: int, stop: int, any_separator: bool, separators: tuple[str, ...], blank_line: bool
) -> int:
    """The first separator at or after ``pos`` that ends a section: one followed by a section's
    marked opening; (``any_separator``) any ``"\n\n---\n\n"`` of the system text; (``blank_line``)
    a blank line followed by a whole XML element."""
    at = pos
    while True:
        found = text.find("\n\n", at, stop)
        if found < 0:
            return stop
        for separator in separators:
            if text.startswith(separator, found):
                after = found + len(separator)
                if marker_at(text, after) is not None or (any_separator and separator == SECTION_SEPARATOR):
                    return found
                if blank_line and separator == "\n\n" and _whole_element(text, after, stop, separators):
                    return found
        at = found + 1


def _unknown(
    text: str, start: int, end: int, prefix: str, where: str, splitter: Splitter, counts: Counter[str]
) -> list[_Piece]:
    """A stretch no marker names, labelled by the splitter's pieces."""
    pieces = []
    for piece in splitter.split(text[start:end]):
        if piece.label:
            name = f"{prefix} {piece.label}"
        else:
            counts[prefix] += 1
            name = f"{prefix}[{counts[prefix] - 1}]"
        pieces.append(_Piece(name, start + piece.end, piece.text, None, where))
    return pieces


def _sections_of(
    text: str, start: int, stop: int, separators: tuple[str, ...], prefix: str, where: str, splitter: Splitter
) -> list[_Piece]:
    """Cut ``text[start:stop]`` into sections and the separators between them (``separators``: the
    system's two, or the HUD's blank line)."""
    pieces: list[_Piece] = []
    counts: Counter[str] = Counter()
    pos = start
    # the system text has one blank line between sections, where the cached part ends; the HUD
    # has one after every part
    blank_lines = separators == ("\n\n",) or not any(p.text == "\n\n" for p in pieces)
    while pos < stop:
        marker = marker_at(text, pos)
        end = _region_end(text, pos, marker) if marker is not None else None
        if end is None or not (end >= stop or any(text.startswith(s, end) for s in separators)):
            greedy = marker is not None and marker.greedy
            end = _next_start(
                text, end if end is not None else pos + 1, stop, not greedy, separators, blank_lines and not greedy
            )
        if marker is not None:
            pieces.append(_Piece(marker.name, end, text[pos:end], marker.trinket, where))
        else:
            pieces += _unknown(text, pos, end, prefix, where, splitter, counts)
        if end >= stop:
            break
        separator = next(s for s in separators if text.startswith(s, end))
        pieces.append(_Piece(COMPOSER, end + len(separator), separator, COMPOSER, where))
        pos = end + len(separator)
        if separators != ("\n\n",) and separator == "\n\n":
            blank_lines = False
    return pieces


def _named(pieces: list[_Piece], where: str) -> list[_Piece]:
    """The composer's pieces named by what they come before (stable from request to request, as
    the cache simulation's block keys must be): ``(composer) before datetime_section``."""
    out = []
    for index, piece in enumerate(pieces):
        if piece.trinket == COMPOSER and not piece.name.startswith(f"{COMPOSER} "):
            following = next((p.name for p in pieces[index + 1 :] if p.trinket != COMPOSER), None)
            piece = replace(piece, name=f"{COMPOSER} {where} " + (f"before {following}" if following else "end"))
        out.append(piece)
    return out


def system_pieces(text: str, splitter: Splitter) -> list[_Piece]:
    """The system text cut into ``base_prompt``, its sections and the composer's separators."""
    match = SCAFFOLDING.search(text)
    if match is None:
        raise ValueError("the system text has no MIRA scaffolding delimiter")
    pieces = [_Piece("base_prompt", match.end(), text[: match.end()], None, "system")]
    pos = match.end()
    if pos >= len(text):
        return pieces
    separator = SECTION_SEPARATOR if text.startswith(SECTION_SEPARATOR, pos) else "\n\n"
    if not text.startswith(separator, pos):
        pieces.append(_Piece("system (after the delimiter)", len(text), text[pos:], None, "system"))
        return pieces
    pieces.append(_Piece(COMPOSER, pos + len(separator), separator, COMPOSER, "system"))
    pieces += _sections_of(
        text, pos + len(separator), len(text), (SECTION_SEPARATOR, "\n\n"), "system", "system", splitter
    )
    return _named(pieces, "system")


def hud_pieces(text: str, splitter: Splitter) -> list[_Piece] | None:
    """The HUD string cut into its frame (the composer's), its parts and the blank lines after
    them; None if it is not a HUD."""
    head = HUD_HEAD.match(text)
    if head is None:
        return None
    tail = f"</{head.group(2)}:hud>\n{RULE}"
    if not text.endswith("\n\n" + tail):
        return None
    stop = len(text) - len(tail) - 2
    pieces = [_Piece(f"{COMPOSER} hud frame", head.end(), text[: head.end()], COMPOSER, "notification")]
    if stop > head.end():
        pieces += _sections_of(text, head.end(), stop, ("\n\n",), "hud", "notification", splitter)
    pieces.append(_Piece(f"{COMPOSER} hud frame end", len(text), text[stop:], COMPOSER, "notification"))
    return _named(pieces, "hud")


def _text_block(message: Any) -> str | None:
    content = message.get("content") if isinstance(message, Mapping) else None
    if (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], Mapping)
        and content[0].get("type") == "text"
        and isinstance(content[0].get("text"), str)
    ):
        return str(content[0]["text"])
    return None


def _dd_call(message: Any) -> str | None:
    content = message.get("content") if isinstance(message, Mapping) else None
    if (
        message.get("role") == "assistant"
        and isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], Mapping)
        and content[0].get("type") == "tool_use"
        and str(content[0].get("id", "")).startswith(DD_PREFIX)
    ):
        return str(content[0]["id"])
    return None


def _dd_result(message: Any, call_id: str) -> bool:
    content = message.get("content") if isinstance(message, Mapping) else None
    return (
        isinstance(message, Mapping)
        and message.get("role") == "user"
        and isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], Mapping)
        and content[0].get("type") == "tool_result"
        and content[0].get("tool_use_id") == call_id
    )


def _item(text: str, where: str, index: int, cache: str | None) -> _Piece:
    marker = marker_at(text, 0)
    if marker is not None:
        return _Piece(marker.name, len(text), text, marker.trinket, where, cache)
    return _Piece(f"{where}[{index}]", len(text), text, None, where, cache)


def cut_mira(cut: Cutter, node: Node, body: Mapping[str, Any]) -> None:
    """A MIRA chat body as sections (the module docstring), into ``cut``."""
    for key, child in sorted(node.keys.items(), key=lambda kv: kv[1].start):
        value = body[key]
        if key == "tools" and isinstance(value, list):  # as any Messages body's
            for index, tool in enumerate(value):
                cut.element(child.items[index], tool_element(tool, index))
        elif key == "system" and isinstance(value, list):
            block = child.items[0]
            text_node = block["text"]
            pieces = system_pieces(str(value[0]["text"]), cut.splitter)
            pieces[-1] = replace(pieces[-1], cache=ttl_of(value[0]))
            _emit(cut, text_node, "system", "system[0]", pieces)
        elif key == "messages" and isinstance(value, list):
            _messages(cut, child, value)


def _messages(cut: Cutter, node: Node, messages: list[Any]) -> None:
    first_user = next(
        (i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "user"), len(messages)
    )
    index = 0
    prefix = 0
    post = 0
    while index < len(messages):
        message = messages[index]
        child = node.items[index]
        text = _text_block(message)
        call = _dd_call(message) if isinstance(message, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if index < first_user and text is not None and message.get("role") == "assistant" and not _STAMP.match(text):
            mark = ttl_of(content[0]) if isinstance(content, list) else None
            _emit(
                cut,
                child["content"].items[0]["text"],
                "message",
                f"msg[{index}]",
                [_item(text, "conversation_prefix", prefix, mark)],
            )
            prefix += 1
        elif (
            call is not None
            and index + 1 < len(messages)
            and _dd_result(messages[index + 1], call)
            and isinstance(messages[index + 1]["content"][0].get("content"), str)
        ):
            cut.group(child, f"post_history[{post}] {DD_TOOL}", "message", WIRE, [])
            index += 1
            result = messages[index]["content"][0]
            _emit(
                cut,
                node.items[index]["content"].items[0]["content"],
                "message",
                f"msg[{index}]",
                [_item(str(result["content"]), "post_history", post, ttl_of(result))],
            )
            post += 1
        elif (
            isinstance(message, Mapping)
            and message.get("role") == "assistant"
            and isinstance(content, str)
            and (hud := hud_pieces(content, cut.splitter)) is not None
        ):
            _emit(cut, child["content"], "message", f"msg[{index}]", hud)
        else:
            anthropic_message(cut, child, message, f"msg[{index}]")
        index += 1


__all__ = ["COMPOSER", "DD_PREFIX", "DD_TOOL", "WIRE", "cut_mira", "hud_pieces", "system_pieces"]
