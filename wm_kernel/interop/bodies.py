"""Cutting one logged request into sections whose raw slices join back to its exact bytes.

A request body is located (``jsonspan.locate``) and walked in the order its text is written: every
element the model reads (a tool schema, a system block, a message or a message's content block)
becomes one or more sections; the JSON around them (keys, parameters, punctuation) becomes
``framing`` sections, which carry bytes but no prompt text. Strings the model reads (system text,
message text) are cut further by a :class:`~wm_kernel.interop.split.Splitter`; a cut in the decoded
text is a cut of the raw token at the same character (``jsonspan.string_offsets``).

Each :class:`Section` keeps both: ``raw`` (its slice of the log, so ``"".join(s.raw ...)`` is the
record) and ``text`` (what the model reads: the decoded string; a tool schema or a tool call as its
JSON; an image as a placeholder, never its data).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wm_kernel.dialects.registry import get_dialect
from wm_kernel.interop.jsonspan import Node, locate, string_offsets
from wm_kernel.interop.split import Splitter

#: Section kinds, in the order a provider reads them (framing carries bytes only).
KINDS = ("tool", "system", "message", "framing")
#: Where each kind goes in a ComposedPrompt and the History frame.
PLACEMENT = {"tool": "system", "system": "system", "message": "conversation_prefix"}


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a logged request (see the module docstring).

    ``name`` is unique within its request and stable across the requests of one conversation (an
    element's position and kind, plus the label of its piece: ``system[0] <rules>``,
    ``msg[3] user``); ``trinket`` says who wrote it (``tools``, ``system``, or the message role);
    ``cache`` is the cache_control TTL marked on its element (on the element's last section);
    ``element`` names the tool, block or message it is a piece of; ``where`` the placement a
    reader that knows the agent's layout recovered (MIRA's tap: ``notification`` for a HUD part),
    None to place it by its kind."""

    name: str
    kind: str
    raw: str
    text: str
    trinket: str | None = None
    cache: str | None = None
    element: str = ""
    where: str | None = None

    @property
    def placement(self) -> str | None:
        """Its placement in a ComposedPrompt (None for framing)."""
        return self.where or PLACEMENT.get(self.kind)


@dataclass(frozen=True, slots=True)
class Part:
    """What to make of one node inside an element: ``split`` a string node, show its ``json``, or
    show ``shown`` (a placeholder) in its place; ``label`` prefixes its pieces' labels."""

    node: Node
    mode: str
    label: str = ""
    shown: str = ""


class Cutter:
    """Walks one record's text left to right, emitting sections that cover it exactly."""

    def __init__(self, text: str, splitter: Splitter) -> None:
        self.text = text
        self.splitter = splitter
        self.cursor = 0
        self.sections: list[Section] = []
        self.seen: dict[str, int] = {}  # a repeated name (two tools called alike) gets "#2"

    def framing(self, upto: int) -> None:
        """The bytes from the cursor to ``upto`` as one framing section (none if empty)."""
        if upto > self.cursor:
            chunk = self.text[self.cursor : upto]
            self.sections.append(Section("(framing)", "framing", chunk, chunk))
            self.cursor = upto

    def group(
        self, node: Node, name: str, kind: str, trinket: str | None, parts: Sequence[Part], cache: str | None = None
    ) -> None:
        """The element ``node`` as sections: one per piece of each part (in text order); the bytes
        between parts go with the next piece, the element's tail with the last. No parts: the
        element's JSON as one section."""
        self.framing(node.start)
        emitted: list[tuple[str, int, str]] = []  # (label, raw end, text)
        for part in sorted(parts, key=lambda p: p.node.start):
            prefix = f"{part.label} " if part.label else ""
            token = self.text[part.node.start : part.node.end]
            if part.mode == "split" and part.node.kind == "string":
                offsets = string_offsets(token)
                value = json.loads(token)
                pieces = self.splitter.split(value)
                for index, piece in enumerate(pieces):
                    last = index == len(pieces) - 1
                    end = part.node.end if last else part.node.start + offsets[piece.end]
                    emitted.append(((prefix + piece.label).strip(), end, piece.text))
            else:
                shown = part.shown if part.mode == "placeholder" else token
                emitted.append((part.label, part.node.end, shown))
        if not emitted:
            emitted.append(("", node.end, self.text[node.start : node.end]))
        seen = self.seen
        for index, (label, end, shown) in enumerate(emitted):
            stop = node.end if index == len(emitted) - 1 else end
            full = f"{name} {label}" if label else name
            seen[full] = seen.get(full, 0) + 1
            if seen[full] > 1:
                full = f"{full} #{seen[full]}"
            mark = cache if index == len(emitted) - 1 else None
            self.sections.append(Section(full, kind, self.text[self.cursor : stop], shown, trinket, mark, name))
            self.cursor = stop

    def finish(self) -> list[Section]:
        """The sections, the record's tail included."""
        self.framing(len(self.text))
        return self.sections


def tool_section(name: object) -> str:
    """The name of a logged tool's section (``tool:NAME``): a section name, not a storage key; the
    same in every format, so one tool is one section across logs and views."""
    return f"tool:{name}"


def ttl_of(block: Any) -> str | None:
    """The TTL of a block's ``cache_control`` mark (``5m`` when it names none), None unmarked."""
    if isinstance(block, Mapping):
        mark = block.get("cache_control")
        if isinstance(mark, Mapping):
            ttl = mark.get("ttl")
            return ttl if isinstance(ttl, str) else "5m"
    return None


def placeholder(kind: str, block: Mapping[str, Any]) -> str:
    """What an image (or another binary block) shows instead of its data."""
    source = block.get("source") or block.get("image_url") or {}
    media = ""
    size = 0
    if isinstance(source, Mapping):
        media = str(source.get("media_type") or "")
        data = source.get("data") or source.get("url") or ""
        size = len(data) if isinstance(data, str) else 0
    elif isinstance(source, str):
        size = len(source)
    what = f" {media}" if media else ""
    return f"[{kind}{what}, {size} chars]"


_KIND = operator.attrgetter("kind")
_BINARY = {"image", "document", "image_url", "input_image", "input_file", "file", "input_audio"}


def content_parts(content: Any, node: Node, first: int = 0) -> list[Part]:
    """The parts of a message's ``content``: a string is split; each block of a list is split on its
    text, shown as a placeholder when binary, else shown as its JSON (tool calls and results).
    ``first`` is the index of the first block (a message written over several records, as a Claude
    Code transcript writes one streamed message, numbers its blocks on)."""
    if isinstance(content, str):
        return [Part(node, "split", f"[{first}] text" if first else "")]
    parts = []
    if isinstance(content, list):
        for index, block in enumerate(content):
            child = node.items[index]
            kind = block.get("type", "?") if isinstance(block, Mapping) else "?"
            label = f"[{first + index}] {kind}"
            if isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(Part(child["text"], "split", label))
            elif kind in _BINARY and isinstance(block, Mapping):
                parts.append(Part(child, "placeholder", label, placeholder(str(kind), block)))
            else:
                parts.append(Part(child, "json", label))
    return parts


def message_parts(message: Mapping[str, Any], node: Node, first: int = 0) -> list[Part]:
    """A chat message's parts: its content, then any other payload it carries (``tool_calls``,
    ``function_call``) as JSON."""
    parts = []
    if "content" in message and message["content"] is not None:
        parts += content_parts(message["content"], node["content"], first)
    for key in ("tool_calls", "function_call", "refusal"):
        if message.get(key) is not None:
            parts.append(Part(node[key], "json", key))
    return parts


def cut_anthropic(
    text: str, node: Node, body: Mapping[str, Any], splitter: Splitter, cutter: Cutter | None = None
) -> Cutter:
    """An Anthropic Messages request body: tools, system (string or blocks), messages."""
    cut = cutter or Cutter(text, splitter)
    for key, child in sorted(node.keys.items(), key=lambda kv: kv[1].start):
        value = body[key]
        if key == "tools" and isinstance(value, list):
            for index, tool in enumerate(value):
                name = tool.get("name", index) if isinstance(tool, Mapping) else index
                cut.group(child.items[index], tool_section(name), "tool", "tools", [], ttl_of(tool))
        elif key == "system" and isinstance(value, str):
            cut.group(child, "system", "system", "system", [Part(child, "split")])
        elif key == "system" and isinstance(value, list):
            for index, block in enumerate(value):
                parts = content_parts([block], Node("array", 0, 0, items=[child.items[index]]))
                parts = [Part(p.node, p.mode, "", p.shown) for p in parts]
                cut.group(child.items[index], f"system[{index}]", "system", "system", parts, ttl_of(block))
        elif key == "messages" and isinstance(value, list):
            for index, message in enumerate(value):
                anthropic_message(cut, child.items[index], message, f"msg[{index}]")
    return cut


def anthropic_message(cut: Cutter, node: Node, message: Any, name: str, first: int = 0) -> None:
    """One Anthropic message: its blocks (numbered from ``first``); a cache mark on its last marked
    block."""
    if not isinstance(message, Mapping):
        cut.group(node, name, "message", None, [])
        return
    role = str(message.get("role", "?"))
    content = message.get("content")
    mark = None
    if isinstance(content, list):
        marks = [ttl_of(block) for block in content]
        mark = next((m for m in reversed(marks) if m), None)
    # a mid-conversation system message stays where it is sent: among the messages
    cut.group(node, f"{name} {role}", "message", role, message_parts(message, node, first), mark)


def cut_openai_chat(text: str, node: Node, body: Mapping[str, Any], splitter: Splitter) -> Cutter:
    """An OpenAI Chat Completions body: tools, then messages (system and developer ones are the
    system prompt)."""
    cut = Cutter(text, splitter)
    for key, child in sorted(node.keys.items(), key=lambda kv: kv[1].start):
        value = body[key]
        if key == "tools" and isinstance(value, list):
            for index, tool in enumerate(value):
                function = tool.get("function") if isinstance(tool, Mapping) else None
                name = function.get("name", index) if isinstance(function, Mapping) else index
                cut.group(child.items[index], tool_section(name), "tool", "tools", [])
        elif key == "messages" and isinstance(value, list):
            _openai_items(cut, child, value, "msg")
    return cut


def _openai_items(cut: Cutter, node: Node, items: list[Any], prefix: str) -> None:
    """Messages or input items; the system and developer messages that open them are the system
    prompt, later ones stay among the messages."""
    leading = True
    for index, message in enumerate(items):
        leading = leading and isinstance(message, Mapping) and message.get("role") in ("system", "developer")
        openai_item(cut, node.items[index], message, f"{prefix}[{index}]", leading)


def openai_item(cut: Cutter, node: Node, message: Any, name: str, system: bool) -> None:
    """One OpenAI message or input item (a function call, its output...) as sections named
    ``{name} {role or type}``: the system prompt's when ``system``, else a message."""
    if not isinstance(message, Mapping):
        cut.group(node, name, "message", None, [])
        return
    role = str(message.get("role") or message.get("type") or "?")
    parts = message_parts(message, node)
    if "output" in message and isinstance(message["output"], str):  # function_call_output
        parts.append(Part(node["output"], "split", "output"))
    cut.group(node, f"{name} {role}", "system" if system else "message", role, parts)


def cut_openai_responses(text: str, node: Node, body: Mapping[str, Any], splitter: Splitter) -> Cutter:
    """An OpenAI Responses body: tools, instructions, input (a string or items)."""
    cut = Cutter(text, splitter)
    for key, child in sorted(node.keys.items(), key=lambda kv: kv[1].start):
        value = body[key]
        if key == "tools" and isinstance(value, list):
            for index, tool in enumerate(value):
                name = tool.get("name", tool.get("type", index)) if isinstance(tool, Mapping) else index
                cut.group(child.items[index], tool_section(name), "tool", "tools", [])
        elif key == "instructions" and isinstance(value, str):
            cut.group(child, "instructions", "system", "system", [Part(child, "split")])
        elif key == "input" and isinstance(value, str):
            cut.group(child, "input user", "message", "user", [Part(child, "split")])
        elif key == "input" and isinstance(value, list):
            _openai_items(cut, child, value, "input")
    return cut


def cut_gemini(text: str, node: Node, body: Mapping[str, Any], splitter: Splitter) -> Cutter:
    """A Gemini ``generateContent`` body: tools, the system instruction, the cached content it
    names (the cache's text is not in the body: the section is its name), then ``contents``."""
    cut = Cutter(text, splitter)
    for key, child in sorted(node.keys.items(), key=lambda kv: kv[1].start):
        value = body[key]
        if key == "tools" and isinstance(value, list):
            for index, tool in enumerate(value):
                declared = (
                    tool.get("functionDeclarations") or tool.get("function_declarations")
                    if isinstance(tool, Mapping)
                    else None
                )
                names = (
                    [d.get("name") for d in declared if isinstance(d, Mapping)] if isinstance(declared, list) else []
                )
                name = ",".join(str(n) for n in names if n) or index
                cut.group(child.items[index], tool_section(name), "tool", "tools", [])
        elif key in ("systemInstruction", "system_instruction") and isinstance(value, Mapping):
            cut.group(child, "system", "system", "system", _gemini_parts(value, child))
        elif key in ("cachedContent", "cached_content") and isinstance(value, str):
            cut.group(child, "cachedContent", "system", "system", [])
        elif key == "contents" and isinstance(value, list):
            for index, content in enumerate(value):
                item = child.items[index]
                if not isinstance(content, Mapping):
                    cut.group(item, f"msg[{index}]", "message", None, [])
                    continue
                role = str(content.get("role") or "user")
                cut.group(item, f"msg[{index}] {role}", "message", role, _gemini_parts(content, item))
    return cut


def _gemini_parts(content: Mapping[str, Any], node: Node) -> list[Part]:
    """A Gemini content's ``parts``: text split, anything else (calls, results, data) as JSON."""
    parts = content.get("parts")
    if not isinstance(parts, list):
        return []
    out = []
    for index, part in enumerate(parts):
        child = node["parts"].items[index]
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            out.append(Part(child["text"], "split", f"[{index}] text"))
        else:
            out.append(Part(child, "json", f"[{index}]"))
    return out


def cut_body(
    text: str, body: Mapping[str, Any], dialect: str, splitter: Splitter, node: Node | None = None
) -> list[Section]:
    """The sections of one request body written as ``text`` (a body alone: the sections join to
    ``text``; inside a larger record, pass the body's ``node`` and the record's text, and the
    caller finishes the cut)."""
    located = node if node is not None else locate(text)
    # by the JSON shape of the wire's body (``Dialect.body_shape``), not by the wire's name
    cutters = {
        "messages": cut_anthropic,
        "chat": cut_openai_chat,
        "responses": cut_openai_responses,
        "contents": cut_gemini,
    }
    shape = get_dialect(dialect).body_shape
    if shape not in cutters:
        raise ValueError(f"no cutter for {dialect} request bodies (shape {shape!r})")
    sections = cutters[shape](text, located, body, splitter).finish()
    automatic = ttl_of(body) if shape == "messages" else None
    if automatic is not None:
        sections = _mark_last_cacheable(sections, automatic)
    return sections


def _mark_last_cacheable(sections: list[Section], ttl: str) -> list[Section]:
    """A request-level ``cache_control`` (Anthropic's automatic caching) caches up to the last
    cacheable block, as a breakpoint there would: its mark goes on that block's last section."""
    for kind in ("message", "system", "tool"):  # the prompt's order: the last block is the last message's
        found = [index for index, section in enumerate(sections) if section.kind == kind]
        if found:
            last = sections[found[-1]]
            if last.cache is None:
                sections[found[-1]] = dataclasses.replace(last, cache=ttl)
            break
    return sections


def first_message(sections: Sequence[Section]) -> Section | None:
    """The first section of kind message, None if there is none. The first few are looked at by
    index (on a transcript's chain of messages that reads its first message, no walk)."""
    for index in range(min(len(sections), 8)):
        if sections[index].kind == "message":
            return sections[index]
    return next((s for s in sections if s.kind == "message"), None)


class PromptSequence(Sequence[Section]):
    """Sections that know their kinds and their prompt order without a look at each (a
    transcript's chain of messages keeps them as it is built); :func:`prompt_order` and
    :func:`kinds_of` ask it."""

    __slots__ = ()

    def kinds(self) -> frozenset[str]:
        """The kinds of its sections, framing left out."""
        return frozenset(map(_KIND, self)) - {"framing"}

    def prompt_order(self) -> list[Section]:
        """What :func:`prompt_order` gives for it."""
        return _by_kind(list(self))

    def cache_marked(self) -> bool:
        """Whether any of its sections carries a cache mark."""
        return any(s.cache for s in self)


def kinds_of(sections: Sequence[Section]) -> frozenset[str]:
    """The kinds of ``sections``, framing left out."""
    if isinstance(sections, PromptSequence):
        return sections.kinds()
    return frozenset(map(_KIND, sections)) - {"framing"}


def prompt_order(sections: Sequence[Section]) -> list[Section]:
    """The prompt sections (no framing) in the order a provider reads them: tools, system,
    messages (text order within each kind)."""
    if isinstance(sections, PromptSequence):
        return sections.prompt_order()
    return _by_kind(list(sections))


def _by_kind(items: list[Section]) -> list[Section]:
    kinds = list(map(_KIND, items))
    present = set(kinds)
    out: list[Section] = []
    for kind in KINDS[:3]:  # a pass per kind there is (not framing), each keeping its own in text order
        if kind in present:
            out.extend(itertools.compress(items, map(kind.__eq__, kinds)) if len(present) > 1 else items)
    return out
