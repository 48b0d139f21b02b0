"""Reading OTLP JSON traces back into logged requests (what ``import_log`` does with a trace file).

read_otlp reads OTLP/HTTP JSON (one document, or one per line as the collector's file exporter
writes, split on "\\n" only): spans exported here give back every section, bytes included, so an
export imported again replays the same prompts byte for byte; GenAI spans of other instrumentations
are cut from their ``gen_ai.system_instructions``, ``gen_ai.tool.definitions`` and
``gen_ai.input.messages`` (JSON, as the conventions write them), OpenInference spans from their
``llm.input_messages.<i>.message.*``; a span that carries no content (content capture is opt-in)
imports with its usage and one empty section.

Usage, in every convention read (docs/interop.md has the table); in all of them the input count
includes the cached and written tokens:

==========================  ==========================================  ===============================
convention                  cache read                                   cache write
==========================  ==========================================  ===============================
GenAI registry, OpenLLMetry ``gen_ai.usage.cache_read.input_tokens``     ``gen_ai.usage.cache_creation.input_tokens``
``anthropic`` SDK tracing   ``gen_ai.usage.cache_read.input_tokens``     ``gen_ai.usage.cache_write.input_tokens``
older OpenLLMetry           ``gen_ai.usage.cache_read_input_tokens``     ``gen_ai.usage.cache_creation_input_tokens``
OpenInference               ``llm.token_count.prompt_details.cache_read`` ``llm.token_count.prompt_details.cache_write``
==========================  ==========================================  ===============================

(input: ``gen_ai.usage.input_tokens``, the deprecated ``gen_ai.usage.prompt_tokens``, or
``llm.token_count.prompt``; output: ``gen_ai.usage.output_tokens``, ``gen_ai.usage.completion_tokens``
or ``llm.token_count.completion``.)

Reading is linear in the file: each span's line is found by one forward search from the previous
span's, and a span that cannot be read is one :class:`ImportIssue`, the others import.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from wm_kernel.dialects.elements import tool_section
from wm_kernel.interop.bodies import Section
from wm_kernel.interop.formats import ImportIssue, LogFormat, LoggedRequest, epoch_time, otlp_attributes
from wm_kernel.interop.split import Splitter
from wm_kernel.utils.safe_files import BadJSONError, parse_json

_NS = 1_000_000_000
#: What can go wrong inside one malformed span (reported, never raised for the whole file).
_SPAN_ERRORS = (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError)
_INPUT = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
_READ = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_read",
)
_WRITE = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_write.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "llm.token_count.prompt_details.cache_write",
)
_OUTPUT = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion")
_OPERATIONS = ("chat", "generate_content", "text_completion")


class _Lines:
    """The 1-based line of an offset, counted on from the last offset asked (spans are asked for in
    text order, so the whole file is counted once)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.line = 1

    def of(self, offset: int) -> int:
        if offset < self.offset:
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


def _documents(text: str, path: str, issues: list[ImportIssue]) -> list[tuple[int, Any]]:
    """(offset, parsed) of each OTLP document: the whole text, else one per line."""
    try:
        return [(0, parse_json(text))]
    except BadJSONError:
        pass
    documents = []
    offset = 0
    for number, row in enumerate(text.split("\n"), start=1):
        if row.strip():
            try:
                documents.append((offset, parse_json(row)))
            except BadJSONError as exc:
                issues.append(ImportIssue(path, number, str(exc)))
        offset += len(row) + 1
    return documents


def read_otlp(text: str, path: str, splitter: Splitter) -> tuple[list[LoggedRequest], list[ImportIssue]]:
    """The GenAI requests of an OTLP/HTTP JSON file (module docstring) and the issues of spans or
    lines that could not be read."""
    issues: list[ImportIssue] = []
    lines = _Lines(text)
    spans: list[tuple[int, Any]] = []
    for offset, document in _documents(text, path, issues):
        if not isinstance(document, Mapping) or not isinstance(document.get("resourceSpans"), list):
            issues.append(
                ImportIssue(path, lines.of(offset), "unknown format: an OTLP document has a 'resourceSpans' list")
            )
            continue
        cursor = text.find('"resourceSpans"', offset)
        for resource in document["resourceSpans"]:
            for scope in resource.get("scopeSpans", []) if isinstance(resource, Mapping) else []:
                for span in scope.get("spans", []) if isinstance(scope, Mapping) else []:
                    sid = span.get("spanId") if isinstance(span, Mapping) else None
                    at = text.find(f'"{sid}"', cursor) if isinstance(sid, str) and sid else -1
                    if at >= 0:
                        cursor = at  # spans are written in order: the next is searched from here
                    spans.append((lines.of(max(at, cursor, offset)), span))
    children: dict[str, list[Mapping[str, Any]]] = {}
    for _, span in spans:
        parent = span.get("parentSpanId") if isinstance(span, Mapping) else None
        if isinstance(parent, str) and parent:
            children.setdefault(parent, []).append(span)
    requests = []
    for line, span in spans:
        try:
            if not isinstance(span, Mapping):
                raise TypeError(f"a span must be an object, got {type(span).__name__}")
            attributes = otlp_attributes(span.get("attributes"))
            if (
                attributes.get("gen_ai.operation.name") not in _OPERATIONS
                and attributes.get("openinference.span.kind") != "LLM"
            ):
                continue
            requests.append(
                _request(span, attributes, children.get(str(span.get("spanId")), []), path, line, splitter, issues)
            )
        except _SPAN_ERRORS as exc:
            name = span.get("name") if isinstance(span, Mapping) else None
            why = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            issues.append(ImportIssue(path, line, f"span {name!r}: {why}; the span is skipped"))
    if not requests:
        first = issues[0] if issues else ImportIssue(path, 1, "no GenAI spans in the file")
        raise ValueError(f"{first} (nothing imported)")
    return requests, issues


def _first(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attributes[k] for k in keys if k in attributes), None)


def _count(attributes: Mapping[str, Any], keys: tuple[str, ...], what: str) -> int:
    value = _first(attributes, keys)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value != int(value):
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


def span_usage(
    attributes: Mapping[str, Any], path: str = "", line: int = 0, issues: list[ImportIssue] | None = None
) -> dict[str, int] | None:
    """A span's usage in the ``gen_ai`` shape (``input_tokens`` with cached and written ones
    included), from whichever convention it is written in (module docstring); None without any."""
    if _first(attributes, _INPUT) is None:
        return None
    total = _count(attributes, _INPUT, "the input token count")
    read = _count(attributes, _READ, "the cache read count")
    written = _count(attributes, _WRITE, "the cache write count")
    if read + written > total:
        # an instrumentation that writes Anthropic's own input_tokens (cached ones not included)
        if issues is not None:
            issues.append(
                ImportIssue(
                    path,
                    line,
                    f"input tokens ({total}) fewer than cached ({read}) and "
                    f"written ({written}) ones, which they include: read "
                    "as not including them",
                )
            )
        total += read + written
    return {
        "input_tokens": total,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "output_tokens": _count(attributes, _OUTPUT, "the output token count"),
    }


def _section_text(attributes: Mapping[str, Any], value: Any) -> str:
    """A section's text as exported: JSON-escaped where it held a lone surrogate
    (``wm.section.text.encoding`` = ``json``, see ``wm_kernel.interop.otel``)."""
    if attributes.get("wm.section.text.encoding") == "json":
        decoded = json.loads(value)
        if not isinstance(decoded, str):
            raise ValueError("wm.section.text.encoding json: the text is not a JSON string")
        return decoded
    if not isinstance(value, str):
        raise ValueError(f"wm.section.text must be a string, got {type(value).__name__}")
    return value


def _request(
    span: Mapping[str, Any],
    attributes: Mapping[str, Any],
    children: list[Mapping[str, Any]],
    path: str,
    line: int,
    splitter: Splitter,
    issues: list[ImportIssue],
) -> LoggedRequest:
    """The :class:`LoggedRequest` of one span: its sections (ours, gen_ai's or OpenInference's),
    usage, model, provider and ids.

    Long because: one field of LoggedRequest after another from a span's attributes, each with the
    several attribute names the conventions (wm, gen_ai, OpenInference) give it.
    """
    seconds, rest = divmod(int(span["startTimeUnixNano"]), _NS)
    sent_at = epoch_time(seconds, "startTimeUnixNano (in seconds)") + timedelta(microseconds=rest // 1000)
    ours = [(otlp_attributes(c.get("attributes")), c) for c in children if isinstance(c, Mapping)]
    ours = [(a, c) for a, c in ours if "wm.section.name" in a]
    ours.sort(key=lambda pair: int(pair[0].get("wm.section.index", 0)))
    if ours:
        sections = [
            Section(
                a["wm.section.name"],
                a["wm.section.kind"],
                _section_text(a, a.get("wm.section.raw", a["wm.section.text"])),
                _section_text(a, a["wm.section.text"]),
                a.get("wm.section.trinket") or None,
                a.get("wm.section.cache"),
                a.get("wm.section.element", ""),
            )
            for a, _ in ours
        ]
    else:
        sections = (
            _from_gen_ai(attributes, splitter)
            or _from_openinference(attributes, splitter)
            or [Section("(no content in the span)", "message", "", "", None, None, "(no content in the span)")]
        )
    usage: Mapping[str, Any] | None = None
    shape: str | None = None
    if "wm.usage" in attributes:
        usage, shape = json.loads(attributes["wm.usage"]), attributes.get("wm.usage.format")
        if not isinstance(usage, Mapping):
            raise ValueError("wm.usage must be a JSON object")
    else:
        usage = span_usage(attributes, path, line, issues)
        shape = "gen_ai" if usage is not None else None
    model = _first(attributes, ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name"))
    provider = _first(attributes, ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"))
    rid = _first(attributes, ("anthropic.request.id", "openai.request.id", "gen_ai.request.id"))
    conversation = _first(attributes, ("gen_ai.conversation.id", "session.id"))
    reasons = attributes.get("gen_ai.response.finish_reasons")
    finish = reasons[0] if isinstance(reasons, list) and reasons else attributes.get("anthropic.message.stop_reason")

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) and value else None

    return LoggedRequest(
        tuple(sections),
        "".join(s.raw for s in sections),
        path,
        (line,),
        str(attributes.get("wm.format", "otlp")),
        str(provider or "unknown"),
        model if isinstance(model, str) else None,
        sent_at,
        usage,
        shape,
        rid if isinstance(rid, str) else None,
        conversation=text(conversation),
        response_id=text(attributes.get("gen_ai.response.id")),
        response_model=text(attributes.get("gen_ai.response.model")),
        finish_reason=text(finish),
        conversation_id=text(conversation),
    )


def _from_openinference(attributes: Mapping[str, Any], splitter: Splitter) -> list[Section]:
    """Sections of an OpenInference LLM span: its tools (``llm.tools.<i>.tool.json_schema``) and
    input messages (``llm.input_messages.<i>.message.role`` / ``.content`` / ``.contents``)."""
    sections: list[Section] = []
    tools: dict[int, Any] = {}
    messages: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith("llm.tools.") and key.endswith(".tool.json_schema"):
            tools[int(key.split(".")[2])] = value
        elif key.startswith("llm.input_messages."):
            number, _, rest = key[len("llm.input_messages.") :].partition(".")
            messages.setdefault(int(number), {})[rest] = value
    for position in sorted(tools):
        schema = tools[position]
        shown = schema if isinstance(schema, str) else json.dumps(schema, ensure_ascii=False)
        try:
            name = json.loads(shown).get("name", position)
        except (json.JSONDecodeError, AttributeError):
            name = position
        sections.append(Section(tool_section(name), "tool", shown, shown, "tools", None, tool_section(name)))
    for index in sorted(messages):
        fields = messages[index]
        role = str(fields.get("message.role", "?"))
        kind = "system" if role in ("system", "developer") else "message"
        parts: list[Any] = []
        if isinstance(fields.get("message.content"), str):
            parts.append({"type": "text", "content": fields["message.content"]})
        texts = sorted(
            (k, v)
            for k, v in fields.items()
            if k.startswith("message.contents.") and k.endswith(".message_content.text")
        )
        parts += [{"type": "text", "content": v} for _, v in texts if isinstance(v, str)]
        sections += _parts(f"msg[{index}] {role}", kind, role, parts, splitter)
    return sections


def _json_attribute(attributes: Mapping[str, Any], key: str) -> list[Any]:
    value = attributes.get(key)
    if value is None:
        return []
    parsed = json.loads(value) if isinstance(value, str) else value
    if not isinstance(parsed, list):
        raise ValueError(f"{key} must be a JSON list")
    return parsed


def _from_gen_ai(attributes: Mapping[str, Any], splitter: Splitter) -> list[Section]:
    """Sections of a span from another instrumentation: its system instructions, tool definitions
    and input messages (each text part split; other parts shown as their JSON)."""
    sections: list[Section] = []
    for index, tool in enumerate(_json_attribute(attributes, "gen_ai.tool.definitions")):
        shown = json.dumps(tool, ensure_ascii=False)
        name = tool_section(tool.get("name", index))
        sections.append(Section(name, "tool", shown, shown, "tools", None, name))
    for index, part in enumerate(_json_attribute(attributes, "gen_ai.system_instructions")):
        sections += _parts(f"system[{index}]", "system", "system", [part], splitter)
    for index, message in enumerate(_json_attribute(attributes, "gen_ai.input.messages")):
        role = str(message.get("role", "?"))
        sections += _parts(f"msg[{index}] {role}", "message", role, message.get("parts", []), splitter)
    return sections


def _parts(element: str, kind: str, trinket: str, parts: list[Any], splitter: Splitter) -> list[Section]:
    out = _unique_parts(element, kind, trinket, parts, splitter)
    seen: dict[str, int] = {}
    for index, section in enumerate(out):
        seen[section.name] = seen.get(section.name, 0) + 1
        if seen[section.name] > 1:
            out[index] = Section(
                f"{section.name} #{seen[section.name]}",
                section.kind,
                section.raw,
                section.text,
                section.trinket,
                None,
                element,
            )
    return out


def _unique_parts(element: str, kind: str, trinket: str, parts: list[Any], splitter: Splitter) -> list[Section]:
    out = []
    for index, part in enumerate(parts):
        prefix = f" [{index}]" if len(parts) > 1 else ""
        if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("content"), str):
            for piece in splitter.split(part["content"]):
                name = f"{element}{prefix} {piece.label}".rstrip()
                out.append(Section(name, kind, piece.text, piece.text, trinket, None, element))
        else:
            shown = json.dumps(part, ensure_ascii=False)
            out.append(Section(f"{element}{prefix}", kind, shown, shown, trinket, None, element))
    return out


__all__ = ["read_otlp", "span_usage", "LOG_FORMAT"]


def _sniff(text: str) -> bool:
    return text.lstrip().startswith("{") and '"resourceSpans"' in text[:2000]


#: the log format ``wm_kernel.interop.readers`` lists under ``otlp``
LOG_FORMAT = LogFormat(
    "otlp",
    read_file=lambda path, text, splitter: read_otlp(text, path, splitter),
    sniff=_sniff,
    detect=lambda value: isinstance(value, Mapping) and "resourceSpans" in value,
    priority=0,
    title="OTLP/HTTP JSON traces",
)
