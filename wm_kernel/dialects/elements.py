"""A logged request body read back in its wire's vocabulary: which element of the JSON is a tool,
a system block or a message, and which pieces of it the model reads.

A wire dialect lists a body's elements (``Dialect.body_elements``): each a :class:`BodyElement`
at a path into the body (``("messages", 3)``), with its section name, its kind (``tool``,
``system``, ``message``), who wrote it, its cache mark, and its :class:`BodyPart` s (a string cut by
the splitter, a value shown as its JSON, a placeholder for an image's data), each at a path inside
the element. The import layer (``wm_kernel.interop.bodies``) turns them into sections that cover
the logged bytes exactly; it knows bytes, the dialect knows its body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: A path into a JSON value: object keys and array indexes.
Path = tuple[str | int, ...]

#: Content blocks that carry data the model reads as an attachment, shown as a placeholder.
BINARY_BLOCKS = frozenset({"image", "document", "image_url", "input_image", "input_file", "file", "input_audio"})


@dataclass(frozen=True, slots=True)
class BodyPart:
    """What to make of one value inside an element: ``split`` a string (the splitter cuts it),
    show its ``json``, or show ``shown`` (a ``placeholder``) in its place; ``label`` prefixes its
    pieces' labels. ``path`` leads from the element to the value."""

    path: Path
    mode: str
    label: str = ""
    shown: str = ""


@dataclass(frozen=True, slots=True)
class BodyElement:
    """One element of a body (see the module docstring): no parts, its JSON is one section."""

    path: Path
    name: str
    kind: str
    trinket: str | None
    parts: tuple[BodyPart, ...] = ()
    cache: str | None = None


class LoggedBlock(Protocol):
    """One section of a logged request as a wire's cache rule reads it."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def cache(self) -> str | None: ...


class LoggedBlocks(Protocol):
    """A logged request's sections as a wire's cache rule reads them (``Dialect.cached_blocks``)."""

    def prompt_order(self) -> Sequence[LoggedBlock]:
        """The sections the model reads (no framing), in the order the provider reads them."""
        ...

    def cache_marked(self) -> bool:
        """Whether any section carries a cache mark."""
        ...


def marked_prefix(blocks: LoggedBlocks) -> Sequence[LoggedBlock]:
    """The blocks up to the last one carrying a cache mark, in the provider's order (none marked:
    none): what a cache with breakpoints serves."""
    if not blocks.cache_marked():  # known without ordering (a transcript has no marks)
        return ()
    ordered = blocks.prompt_order()
    marks = [bool(block.cache) for block in ordered]
    if True not in marks:
        return ()
    return ordered[: len(marks) - marks[::-1].index(True)]


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


def block_part(block: Any, at: Path, label: str) -> BodyPart:
    """One content block at ``at``: its text split, a placeholder when binary, else its JSON (tool
    calls and results)."""
    kind = block.get("type", "?") if isinstance(block, Mapping) else "?"
    if isinstance(block, Mapping) and isinstance(block.get("text"), str):
        return BodyPart((*at, "text"), "split", label)
    if kind in BINARY_BLOCKS and isinstance(block, Mapping):
        return BodyPart(at, "placeholder", label, placeholder(str(kind), block))
    return BodyPart(at, "json", label)


def content_parts(content: Any, at: Path, first: int = 0) -> list[BodyPart]:
    """The parts of a message's ``content`` at ``at``: a string is split; each block of a list as
    :func:`block_part` reads it. ``first`` is the index of the first block (a message written over
    several records, as a Claude Code transcript writes one streamed message, numbers its blocks
    on)."""
    if isinstance(content, str):
        return [BodyPart(at, "split", f"[{first}] text" if first else "")]
    if not isinstance(content, list):
        return []
    parts = []
    for index, block in enumerate(content):
        kind = block.get("type", "?") if isinstance(block, Mapping) else "?"
        parts.append(block_part(block, (*at, index), f"[{first + index}] {kind}"))
    return parts


def message_parts(message: Mapping[str, Any], first: int = 0) -> list[BodyPart]:
    """A chat message's parts: its content, then any other payload it carries (``tool_calls``,
    ``function_call``, ``refusal``) as JSON."""
    parts = []
    if "content" in message and message["content"] is not None:
        parts += content_parts(message["content"], ("content",), first)
    for key in ("tool_calls", "function_call", "refusal"):
        if message.get(key) is not None:
            parts.append(BodyPart((key,), "json", key))
    return parts


def mark_last_cacheable(elements: list[BodyElement], ttl: str) -> list[BodyElement]:
    """A request-level cache mark (Anthropic's automatic caching) caches up to the last cacheable
    block, as a breakpoint there would: the mark goes on that block (the last message, else the
    last system block, else the last tool), unless it carries its own."""
    for kind in ("message", "system", "tool"):
        found = [index for index, element in enumerate(elements) if element.kind == kind]
        if found:
            last = elements[found[-1]]
            if last.cache is None:
                elements[found[-1]] = BodyElement(last.path, last.name, last.kind, last.trinket, last.parts, ttl)
            break
    return elements


__all__ = [
    "Path",
    "BINARY_BLOCKS",
    "BodyPart",
    "BodyElement",
    "LoggedBlock",
    "LoggedBlocks",
    "marked_prefix",
    "tool_section",
    "ttl_of",
    "placeholder",
    "block_part",
    "content_parts",
    "message_parts",
    "mark_last_cacheable",
]
