"""The whole request on the wire: every byte of a provider request body, and who owns it.

A model receives more than the system prompt: tool schemas, the conversation so far, the
conversation-prefix and post-history items, the HUD, and the provider's JSON framing around all of
it. :func:`wire_request` builds the body of a wire dialect (``provider=``: ``anthropic`` and
``openai`` as :func:`~wm_kernel.dialects.anthropic.to_anthropic` / ``to_openai`` build it,
``mira`` as ``to_mira`` does; any wire of ``wm_kernel.dialects.registry`` with a body builder),
serialises it, and gives every character of the serialised body to exactly one :class:`Owner`:

* a **section** (``kind="section"``): the characters a trinket's section wrote, wherever the body
  carries them (a system block, a message's text block, the HUD);
* a **message** of the conversation (``kind="message"``, one owner per history message);
* a **tool** (``kind="tool"``: its whole schema object);
* **framing** (``kind="framing"``): the JSON syntax and the fields the provider reads (model,
  max_tokens, roles, types, cache marks), the composer's separators and HUD frame, and the blank
  lines that join injected parts to a message.

The owners' sizes add up to the body's size, in characters and in UTF-8 bytes (the body is
``json.dumps(body, ensure_ascii=False, separators=(",", ":"))``, which is what the SDKs send up to
whitespace). Tokens are counted on the text each owner contributes, unescaped, as the model reads
it; the provider's own per-message framing (which no provider documents exactly) is an estimate.

Examples
--------
>>> from wm_kernel.core.composer import SystemPromptComposer
>>> from wm_kernel.tokens import EstimateTokenizer, TokenCounter
>>> c = SystemPromptComposer(); c.set_base_prompt("You help.")
>>> c.add_section("datetime_section", "<t>now</t>")
>>> w = wire_request(c.compose(), [{"role": "user", "content": "Hi"}], provider="anthropic",
...                  model="m", counter=TokenCounter(EstimateTokenizer()))
>>> sum(o.chars for o in w.owners) == len(w.text), sum(o.bytes for o in w.owners) == len(w.text.encode())
(True, True)
>>> [o.label for o in w.owners]
['base_prompt', 'message 0 (user)', 'datetime_section', 'JSON and fields', 'separators and HUD frame']
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wm_kernel.core.prompt import COMPOSER, ComposedPrompt
from wm_kernel.dialects.base import Dialect, split_user
from wm_kernel.dialects.registry import body_wires, get_dialect
from wm_kernel.tokens.counting import Counts

#: OpenAI's cookbook counts 3 tokens of framing per chat message and 3 that prime the reply; the
#: Anthropic API publishes no figure, so the same estimate stands in for it (marked as an estimate).
MESSAGE_FRAMING_TOKENS = 3
REPLY_PRIMING_TOKENS = 3

JSON_FRAMING = "JSON and fields"
COMPOSER_FRAMING = "separators and HUD frame"
JOINER_FRAMING = "joins between parts"
PROVIDER_FRAMING = "provider framing (estimate)"


@dataclass(frozen=True, slots=True)
class Span:
    """Characters ``start:end`` of the serialised body and their owner's label."""

    start: int
    end: int
    owner: str


@dataclass(slots=True)
class Owner:
    """One owner of part of the request: its size in the body and the tokens of its text."""

    label: str
    kind: str  # section | message | tool | framing
    placement: str = ""  # system | conversation_prefix | post_history | notification | ...
    trinket: str | None = None
    chars: int = 0  # characters of the serialised body
    bytes: int = 0  # UTF-8 bytes of the serialised body
    text: list[str] = field(default_factory=list, repr=False)  # the text it contributes, unescaped
    tokens: int = 0


@dataclass
class WireRequest:
    """A request body, serialised, with every character owned (see the module docstring)."""

    provider: str
    body: dict[str, Any]
    text: str
    spans: list[Span]
    owners: list[Owner]
    framing_estimate: int  # tokens of the provider's own per-message framing (an estimate)

    @property
    def tokens(self) -> int:
        """Tokens of every owner's text plus the provider's framing estimate."""
        return sum(o.tokens for o in self.owners) + self.framing_estimate

    def uncounted(self) -> dict[str, int]:
        """The tokens no section, message or tool owns, by owner label, in the order
        :meth:`frame` lists them: the composer's separators and HUD frame, the joins between
        parts, the provider framing (estimate); only those with tokens (the JSON syntax counts
        none). What a count of the sections' and messages' own texts, the cache simulator's,
        leaves out of :attr:`tokens`.

        >>> from wm_kernel.core.composer import SystemPromptComposer
        >>> from wm_kernel.tokens import EstimateTokenizer, TokenCounter
        >>> c = SystemPromptComposer(); c.set_base_prompt("You help."); c.add_section("datetime_section", "<t>now</t>")
        >>> counter = TokenCounter(EstimateTokenizer())
        >>> w = wire_request(c.compose(), [{"role": "user", "content": "Hi"}], counter=counter)
        >>> left = w.uncounted(); left
        {'separators and HUD frame': 66, 'provider framing (estimate)': 9}
        >>> sum(o.tokens for o in w.owners if o.kind != "framing") + sum(left.values()) == w.tokens
        True
        """
        left = {o.label: o.tokens for o in self.owners if o.kind == "framing" and o.tokens}
        if self.framing_estimate:
            left[PROVIDER_FRAMING] = self.framing_estimate
        return left

    def frame(self) -> Any:
        """One row per owner: label, kind, placement, trinket, chars, bytes, tokens, share of tokens."""
        import pandas as pd

        rows = [
            {
                "owner": o.label,
                "kind": o.kind,
                "placement": o.placement,
                "trinket": o.trinket,
                "chars": o.chars,
                "bytes": o.bytes,
                "tokens": o.tokens,
            }
            for o in self.owners
        ]
        rows.append(
            {
                "owner": PROVIDER_FRAMING,
                "kind": "framing",
                "placement": "",
                "trinket": None,
                "chars": 0,
                "bytes": 0,
                "tokens": self.framing_estimate,
            }
        )
        frame = pd.DataFrame(rows, columns=["owner", "kind", "placement", "trinket", "chars", "bytes", "tokens"])
        total = max(self.tokens, 1)
        frame["share"] = frame["tokens"] / total
        return frame

    def owner_at(self, offset: int) -> str:
        """The label of the owner of character ``offset`` of :attr:`text`."""
        if not 0 <= offset < len(self.text):
            raise ValueError(f"offset {offset} is outside the body (0..{len(self.text) - 1})")
        lo, hi = 0, len(self.spans)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.spans[mid].start <= offset:
                lo = mid
            else:
                hi = mid
        return self.spans[lo].owner


# -- tools -------------------------------------------------------------------------------------

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


def tool_schema(tool: Mapping[str, Any] | Callable[..., Any]) -> dict[str, Any]:
    """A tool as ``{"name", "description", "input_schema"}``: a dict with those keys (``parameters``
    is accepted for ``input_schema``) is checked and kept; a Python callable is described from its
    signature (annotations of str, int, float, bool, list, dict; parameters without a default are
    required) and the first paragraph of its docstring."""
    if isinstance(tool, Mapping):
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tool schema needs a non-empty 'name', got {tool!r:.80}")
        schema = tool.get("input_schema", tool.get("parameters"))
        if not isinstance(schema, Mapping):
            raise ValueError(f"tool {name!r} needs an 'input_schema' (or 'parameters') object")
        description = tool.get("description", "")
        if not isinstance(description, str):
            raise TypeError(f"tool {name!r}: description must be a str")
        return {"name": name, "description": description, "input_schema": dict(schema)}
    if not callable(tool):
        raise TypeError(f"a tool is a JSON schema dict or a Python callable, got {type(tool).__name__}")
    name = getattr(tool, "__name__", "")
    if not name or name == "<lambda>":
        raise ValueError("a callable tool needs a name (a def, not a lambda)")
    hints = typing.get_type_hints(tool)
    properties: dict[str, Any] = {}
    required = []
    for parameter in inspect.signature(tool).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        hint = hints.get(parameter.name)
        base = typing.get_origin(hint) or hint
        kind = _JSON_TYPES.get(base) if isinstance(base, type) else None
        properties[parameter.name] = {"type": kind} if kind else {}
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    doc = inspect.getdoc(tool) or ""
    return {
        "name": name,
        "description": doc.split("\n\n")[0].strip(),
        "input_schema": {"type": "object", "properties": properties, "required": required},
    }


# -- ownership -----------------------------------------------------------------------------------


@dataclass
class _Part:
    """A text the body carries, with its owners by character: ``[(length, label)]``."""

    text: str
    pieces: list[tuple[int, str]]


def _escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


class _Builder:
    def __init__(self, composed: Mapping[str, Any], history: Sequence[Mapping[str, Any]], dialect: Dialect) -> None:
        self.owners: dict[str, Owner] = {}
        self.chunks: list[tuple[str, str]] = []  # (serialised text, owner label)
        self.raw: list[tuple[str, str]] = []  # (unescaped text, owner label)
        self.queue: list[_Part] = self._parts(composed, history, dialect)

    def owner(self, label: str, kind: str, placement: str = "", trinket: str | None = None) -> str:
        if label not in self.owners:
            self.owners[label] = Owner(label, kind, placement, trinket)
        return label

    def _key_part(self, composed: Mapping[str, Any], key: str, text: str) -> _Part:
        placement = {
            "cached_content": "system",
            "non_cached_content": "system",
            "notification_center": "notification",
        }.get(key.split("[")[0], key.split("_items")[0])
        if not (isinstance(composed, ComposedPrompt) and composed.sections):
            label = self.owner(key, "section", placement)
            return _Part(text, [(len(text), label)])
        pieces = []
        for span in composed.blame(key):
            if span.section == COMPOSER:
                label = self.owner(COMPOSER_FRAMING, "framing")
            else:
                record = composed.section(span.section)
                label = self.owner(span.section, "section", record.placement, span.trinket)
            pieces.append((len(span), label))
        return _Part(text, pieces)

    def _parts(
        self, composed: Mapping[str, Any], history: Sequence[Mapping[str, Any]], dialect: Dialect
    ) -> list[_Part]:
        """The parts the body carries, in the order its text does (the wire's ``wire_parts``)."""
        parts = []
        for ref in dialect.wire_parts(composed, history):
            if ref.key.startswith("history["):
                i = int(ref.key[len("history[") : -1])
                message = history[i]
                label = self.owner(f"message {i} ({message['role']})", "message", "conversation")
                parts.append(_Part(message["content"], [(len(message["content"]), label)]))
                continue
            name, _, index = ref.key.partition("[")
            text = composed[name][int(index[:-1])] if index else composed[name]
            parts.append(self._key_part(composed, ref.key, text))
        return parts

    def emit(self, text: str, label: str, raw: str | None = None) -> None:
        self.chunks.append((text, label))
        if raw:
            self.raw.append((raw, label))

    def emit_part(self, part: _Part) -> None:
        start = 0
        for length, label in part.pieces:
            piece = part.text[start : start + length]
            self.emit(_escaped(piece), label, piece)
            start += length

    def string(self, value: str) -> None:
        """A text value of the body: the parts it carries in order, joined by blank lines."""
        self.emit('"', JSON_FRAMING)
        if not value and self.queue and not self.queue[0].text:
            self.queue.pop(0)  # an empty history message or item
        rest = value
        first = True
        while rest:
            if not first:
                if not rest.startswith("\n\n"):
                    break
                self.emit(_escaped("\n\n"), self.owner(JOINER_FRAMING, "framing"), "\n\n")
                rest = rest[2:]
            part = self.queue[0] if self.queue else None
            if part is None or not rest.startswith(part.text):
                break
            self.queue.pop(0)
            self.emit_part(part)
            rest = rest[len(part.text) :]
            first = False
        if rest:  # a string the composed prompt and history do not explain: the request's own field
            self.emit(_escaped(rest), JSON_FRAMING)
        self.emit('"', JSON_FRAMING)

    def value(self, value: Any, path: tuple[str | int, ...]) -> None:
        if path[:1] == ("tools",) and len(path) == 2:
            schema = value.get("function", value)
            label = self.owner(f"tool {schema['name']}", "tool", "tools")
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            self.emit(text, label, json.dumps(value, ensure_ascii=False))
            return
        if isinstance(value, dict):
            self.emit("{", JSON_FRAMING)
            for index, (key, item) in enumerate(value.items()):
                self.emit(("," if index else "") + json.dumps(key, ensure_ascii=False) + ":", JSON_FRAMING)
                self.value(item, (*path, key))
            self.emit("}", JSON_FRAMING)
        elif isinstance(value, list):
            self.emit("[", JSON_FRAMING)
            for index, item in enumerate(value):
                if index:
                    self.emit(",", JSON_FRAMING)
                self.value(item, (*path, index))
            self.emit("]", JSON_FRAMING)
        elif isinstance(value, str) and path and path[-1] in ("text", "content"):
            self.string(value)
        else:
            self.emit(json.dumps(value, ensure_ascii=False), JSON_FRAMING)


def wire_request(
    composed: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]] = (),
    *,
    provider: str = "anthropic",
    model: str | None = None,
    tools: Iterable[Mapping[str, Any] | Callable[..., Any]] = (),
    counter: Counts | None = None,
    **extra: Any,
) -> WireRequest:
    """The request ``composed`` makes on the wire ``provider`` (a wire dialect's name:
    ``anthropic``, ``openai``, ``mira``...) after ``history``, with ``tools``, every character
    owned (see the module docstring). ``extra`` goes to the wire's ``body`` (``max_tokens``,
    ``temperature``, MIRA's ``effort``...); ``user``, given, is the turn's user message, the last of
    the conversation, which every wire sends as its current user message.
    ``counter`` counts tokens (the offline default counter when None)."""
    dialect, history, body = _request_body(composed, history, provider, model, tools, extra)
    return _owned(composed, history, dialect, body, counter)


def _request_body(
    composed: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]],
    provider: str,
    model: str | None,
    tools: Iterable[Mapping[str, Any] | Callable[..., Any]],
    extra: dict[str, Any],
) -> tuple[Dialect, list[Mapping[str, Any]], dict[str, Any]]:
    """The body the wire ``provider`` builds, with its dialect and the whole conversation (``extra``'s
    ``user``, given, appended as its last message and taken out of ``extra``). Fails, before
    building, on a wire without a body builder and on two tools of one name."""
    dialect = get_dialect(provider)
    if not dialect.builds_body:
        wires = ", ".join(body_wires())
        raise ValueError(f"the {dialect.name} wire has no request body builder (wires with one: {wires})")
    history = list(history)
    if extra.get("user") is not None:
        history.append({"role": "user", "content": extra.pop("user")})
    schemas = [tool_schema(t) for t in tools]
    names = [t["name"] for t in schemas]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"two tools share the name {duplicates[0]!r}")
    before, user = split_user(history)
    return dialect, history, dialect.body(composed, before, user=user, tools=schemas, model=model, **extra)


def _owned(
    composed: Mapping[str, Any],
    history: Sequence[Mapping[str, Any]],
    dialect: Dialect,
    body: dict[str, Any],
    counter: Counts | None,
) -> WireRequest:
    """``body`` serialised with every character given to its owner: the spans of the text, each
    owner's characters, bytes and tokens (counted by ``counter``, the offline default when None),
    and the owners in the order the provider reads them (tools, then the body's order, framing
    last)."""
    builder = _Builder(composed, history, dialect)
    builder.owner(JSON_FRAMING, "framing")
    builder.value(body, ())
    if builder.queue:  # cannot happen while the body builders and the queue agree
        raise AssertionError(f"{len(builder.queue)} parts of the prompt were not found in the body")
    if counter is None:
        from wm_kernel.tokens import TokenCounter

        counter = TokenCounter()
    spans: list[Span] = []
    position = 0
    for text, label in builder.chunks:
        if not text:
            continue
        owner = builder.owners[label]
        owner.chars += len(text)
        owner.bytes += len(text.encode("utf-8"))
        if spans and spans[-1].owner == label:
            spans[-1] = Span(spans[-1].start, position + len(text), label)
        else:
            spans.append(Span(position, position + len(text), label))
        position += len(text)
    for raw, label in builder.raw:
        builder.owners[label].text.append(raw)
    for owner in builder.owners.values():
        if owner.label != JSON_FRAMING:
            owner.tokens = sum(counter.count(t) for t in owner.text)
    framing = MESSAGE_FRAMING_TOKENS * dialect.framed_messages(body) + REPLY_PRIMING_TOKENS
    text = "".join(chunk for chunk, _ in builder.chunks)
    first: dict[str, int] = {}
    for span in spans:
        first.setdefault(span.owner, span.start)
    rank = {"tool": 0, "section": 1, "message": 1, "framing": 2}
    owners = sorted((o for o in builder.owners.values() if o.chars), key=lambda o: (rank[o.kind], first[o.label]))
    return WireRequest(dialect.name, body, text, spans, owners, framing)
