"""Reading OTLP JSON traces back into logged requests (what ``import_log`` does with a trace file).

read_otlp reads OTLP/HTTP JSON (one document, or one per line as the collector's file
exporter writes): spans exported here give back every section, bytes included, so an export
imported again replays the same prompts byte for byte; GenAI spans of other instrumentations are
cut from their ``gen_ai.system_instructions``, ``gen_ai.tool.definitions`` and
``gen_ai.input.messages`` (JSON, as the conventions write them).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from wm_kernel.dialects.registry import LogFormat, register_log_format
from wm_kernel.interop.bodies import Section
from wm_kernel.interop.formats import ImportIssue, LoggedRequest, otlp_attributes, span_line
from wm_kernel.interop.split import Splitter

_NS = 1_000_000_000


def read_otlp(text: str, path: str, splitter: Splitter) -> tuple[list[LoggedRequest], list[ImportIssue]]:
    """The GenAI requests of an OTLP/HTTP JSON file (module docstring) and the issues of spans or
    lines that could not be read."""
    issues: list[ImportIssue] = []
    documents: list[tuple[int, Any]] = []
    try:
        documents.append((0, json.loads(text)))
    except json.JSONDecodeError:
        offset = 0
        for number, row in enumerate(text.splitlines(keepends=True), start=1):
            if row.strip():
                try:
                    documents.append((offset, json.loads(row)))
                except json.JSONDecodeError as exc:
                    issues.append(ImportIssue(path, number, f"malformed JSON: {exc.msg} at column {exc.colno}"))
            offset += len(row)
    spans: list[tuple[int, Mapping[str, Any]]] = []
    for offset, document in documents:
        if not isinstance(document, Mapping) or not isinstance(document.get("resourceSpans"), list):
            issues.append(ImportIssue(path, span_line(text, offset), "unknown format: an OTLP document "
                                                                     "has a 'resourceSpans' list"))
            continue
        located = text.find('"resourceSpans"', offset)
        for resource in document["resourceSpans"]:
            for scope in resource.get("scopeSpans", []) if isinstance(resource, Mapping) else []:
                for span in scope.get("spans", []) if isinstance(scope, Mapping) else []:
                    at = text.find(f'"{span.get("spanId", "")}"', located) if isinstance(span, Mapping) else -1
                    spans.append((span_line(text, max(at, offset)), span))
    children: dict[str, list[Mapping[str, Any]]] = {}
    for _, span in spans:
        parent = span.get("parentSpanId")
        if isinstance(parent, str) and parent:
            children.setdefault(parent, []).append(span)
    requests = []
    for line, span in spans:
        attributes = otlp_attributes(span.get("attributes"))
        if attributes.get("gen_ai.operation.name") not in ("chat", "generate_content", "text_completion"):
            continue
        try:
            requests.append(_request(span, attributes, children.get(str(span.get("spanId")), []),
                                     path, line, splitter))
        except (ValueError, KeyError, TypeError) as exc:
            issues.append(ImportIssue(path, line, f"span {span.get('name')!r}: {exc}"))
    if not requests:
        first = issues[0] if issues else ImportIssue(path, 1, "no GenAI spans in the file")
        raise ValueError(f"{first} (nothing imported)")
    return requests, issues


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


def _request(span: Mapping[str, Any], attributes: Mapping[str, Any], children: list[Mapping[str, Any]],
             path: str, line: int, splitter: Splitter) -> LoggedRequest:
    seconds, rest = divmod(int(span["startTimeUnixNano"]), _NS)
    sent_at = datetime.fromtimestamp(seconds, tz=UTC) + timedelta(microseconds=rest // 1000)
    ours = [(otlp_attributes(c.get("attributes")), c) for c in children]
    ours = [(a, c) for a, c in ours if "wm.section.name" in a]
    ours.sort(key=lambda pair: int(pair[0].get("wm.section.index", 0)))
    if ours:
        sections = [Section(a["wm.section.name"], a["wm.section.kind"],
                            _section_text(a, a.get("wm.section.raw", a["wm.section.text"])),
                            _section_text(a, a["wm.section.text"]), a.get("wm.section.trinket") or None,
                            a.get("wm.section.cache"), a.get("wm.section.element", "")) for a, _ in ours]
        if not sections:
            raise ValueError("no sections")
    else:
        sections = _from_gen_ai(attributes, splitter)
    usage: Mapping[str, Any] | None = None
    shape: str | None = None
    if "wm.usage" in attributes:
        usage, shape = json.loads(attributes["wm.usage"]), attributes.get("wm.usage.format")
    elif "gen_ai.usage.input_tokens" in attributes:
        usage = {"input_tokens": attributes["gen_ai.usage.input_tokens"],
                 "cache_read_input_tokens": attributes.get("gen_ai.usage.cache_read.input_tokens", 0),
                 "cache_creation_input_tokens": attributes.get("gen_ai.usage.cache_creation.input_tokens", 0),
                 "output_tokens": attributes.get("gen_ai.usage.output_tokens", 0)}
        shape = "gen_ai"
    model = attributes.get("gen_ai.request.model")
    return LoggedRequest(tuple(sections), "".join(s.raw for s in sections), path, (line,),
                         str(attributes.get("wm.format", "otlp")),
                         str(attributes.get("gen_ai.provider.name") or attributes.get("gen_ai.system") or "unknown"),
                         model if isinstance(model, str) else None, sent_at, usage, shape)


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
        sections.append(Section(f"tool:{tool.get('name', index)}", "tool", shown, shown, "tools", None,
                                f"tool:{tool.get('name', index)}"))
    for index, part in enumerate(_json_attribute(attributes, "gen_ai.system_instructions")):
        sections += _parts(f"system[{index}]", "system", "system", [part], splitter)
    for index, message in enumerate(_json_attribute(attributes, "gen_ai.input.messages")):
        role = str(message.get("role", "?"))
        sections += _parts(f"msg[{index}] {role}", "message", role, message.get("parts", []), splitter)
    if not sections:
        raise ValueError("neither wm.section spans nor gen_ai.input.messages / gen_ai.system_instructions")
    return sections


def _parts(element: str, kind: str, trinket: str, parts: list[Any], splitter: Splitter) -> list[Section]:
    out = _unique_parts(element, kind, trinket, parts, splitter)
    seen: dict[str, int] = {}
    for index, section in enumerate(out):
        seen[section.name] = seen.get(section.name, 0) + 1
        if seen[section.name] > 1:
            out[index] = Section(f"{section.name} #{seen[section.name]}", section.kind, section.raw,
                                 section.text, section.trinket, None, element)
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


__all__ = ["read_otlp"]


def _sniff(text: str) -> bool:
    return text.lstrip().startswith("{") and '"resourceSpans"' in text[:2000]


register_log_format(LogFormat(
    "otlp", read_file=lambda path, text, splitter: read_otlp(text, path, splitter), sniff=_sniff,
    detect=lambda value: isinstance(value, Mapping) and "resourceSpans" in value, priority=0,
    title="OTLP/HTTP JSON traces"), replace=True)
