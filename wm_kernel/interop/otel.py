"""Section-level OpenTelemetry traces of a session (reading them back is :mod:`wm_kernel.interop.otlp`'s).

:func:`export_trace` emits, through ``opentelemetry-sdk`` (the ``otel`` extra), one trace per
session: a root ``invoke_agent`` span, one ``chat {model}`` span per turn following the GenAI
semantic conventions (``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` with cached tokens included,
``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
``gen_ai.usage.cache_creation.input_tokens``), and under it one child span per section
(``section {name}``) with ``wm.section.*`` attributes: name, kind, trinket, placement, tokens,
cached, digest, the text, and the simulated cache read and write tokens of that section. Child
spans rather than events, because the SDK keeps 128 events per span by default and a long
conversation has more sections.

Usage: the log's where it has any (``wm.usage.source`` = ``log``), else the cache simulator's
(``simulated``). The logged usage object itself rides along in the provider's shape
(``wm.usage``, JSON, and ``wm.usage.format``).

Reading OTLP JSON back (:func:`wm_kernel.interop.read_otlp`) is :mod:`wm_kernel.interop.otlp`'s.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from wm_kernel.dialects.usage import Usage
from wm_kernel.instruments.history_records import text_digest
from wm_kernel.interop.billing import gen_ai_counts
from wm_kernel.interop.bodies import Section
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.session import Session
from wm_kernel.utils.redact import scrub, scrub_name

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

#: The instrumentation scope of the spans: this package's dotted name, ``wm_kernel.interop``.
SCOPE = __name__.rpartition(".")[0]
_RANK = {"tool": 0, "system": 1, "message": 2}
_NS = 1_000_000_000


class TraceExportError(RuntimeError):
    """The exporter did not take the trace: the message says how many spans of which turns were
    lost, and the exporter's own reason where it gave one."""


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@dataclass(frozen=True)
class _Turn:
    turn: int
    sent_at: datetime
    model: str
    provider: str
    dialect: str
    sections: Sequence[Section]
    usage: Mapping[str, Any] | None
    usage_format: str | None
    billed: Usage | None = None
    response_id: str | None = None
    response_model: str | None = None
    finish_reason: str | None = None
    conversation: str | None = None


def _conversation_id(request: Any) -> str | None:
    """The conversation id of a logged request: the one the log names, else a transcript's
    file stem (Claude Code names its file after the session id)."""
    found = getattr(request, "conversation_id", None)
    if isinstance(found, str) and found:
        return found
    if request.dialect == "claude-code":
        return Path(request.path).stem
    return None


def _turns_of(
    session: ImportedSession | Session, times: Sequence[datetime] | None = None, gap: timedelta | float | None = None
) -> tuple[list[_Turn], list[tuple[bool, list[int]]], Any, str]:
    """The turns to export, each section's cached flag and token count, the simulation, and the
    line saying the send times were assumed ("" when they were the log's)."""
    if isinstance(session, ImportedSession):
        return _imported_turns(session, times, gap)
    if times is not None or gap is not None:
        raise ValueError("times= and gap= apply to an imported log; a Session has its own send times")
    if not isinstance(session, Session):
        raise TypeError(f"can export a Session or an ImportedSession, got {type(session).__name__}")
    return _session_turns(session)


def _imported_turns(
    session: ImportedSession, times: Sequence[datetime] | None, gap: timedelta | float | None
) -> tuple[list[_Turn], list[tuple[bool, list[int]]], Any, str]:
    """An imported log's turns: its requests as logged, with their billed usage."""
    when, assumed = session.send_times(times=times, gap=gap)
    sim = session.cache_simulation(times=times, gap=gap)
    turns = []
    flags = []
    billed = session.billed_usage()
    for turn, request in enumerate(session.requests):
        prompt = session.prompt_at(turn)
        cached = {r.name for r in prompt.sections if r.cached}
        sections = list(request.sections)
        turns.append(
            _Turn(
                turn,
                when[turn],
                request.model or "unknown",
                request.provider,
                request.dialect,
                sections,
                request.usage,
                request.usage_format,
                billed[turn],
                request.response_id,
                request.response_model,
                request.finish_reason,
                _conversation_id(request),
            )
        )
        flags.append((False, [1 if s.name in cached else 0 for s in sections]))
    return turns, flags, sim, assumed


def _session_turns(session: Session) -> tuple[list[_Turn], list[tuple[bool, list[int]]], Any, str]:
    """A kit Session's recorded turns: each prompt's blame spans as sections (no usage)."""
    from wm_kernel.cachesim.requests import turn_times

    sim = session.cache_simulation()
    sent = turn_times(session)
    turns, flags = [], []
    for turn in sorted(int(t) for t in session.history["turn"].unique()):
        prompt = session.prompt_at(turn)
        sections = []
        for span in prompt.blame():
            text = (
                prompt[span.key]
                if "[" not in span.key
                else prompt[span.key.split("[")[0]][int(span.key.split("[")[1].rstrip("]"))]
            )
            piece = text[span.start : span.end]
            kind = (
                "framing"
                if span.trinket is None and span.section == "(composer)"
                else ("system" if span.key in ("cached_content", "non_cached_content") else "message")
            )
            sections.append(Section(span.section, kind, piece, piece, span.trinket, None, span.key))
        cached = {r.name for r in prompt.sections if r.cached}
        turns.append(
            _Turn(
                turn,
                sent[turn],
                sim.profile.name,
                sim.profile.provider,
                "wm-kernel",
                sections,
                None,
                None,
                conversation=str(session.continuum_id),
            )
        )
        flags.append((True, [1 if s.name in cached else 0 for s in sections]))
    return turns, flags, sim, ""


def _collector() -> Any:
    """A span processor that keeps every finished span, to export them in one call at the end
    (so a failed export is seen, and reported, rather than logged span by span)."""
    from opentelemetry.sdk.trace import SpanProcessor

    class Collect(SpanProcessor):
        def __init__(self) -> None:
            self.spans: list[Any] = []

        def on_end(self, span: Any) -> None:
            self.spans.append(span)

    return Collect()


class _Reasons(logging.Handler):
    """The warnings an exporter logs while it fails (a collector's status and answer)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a bad log record must not hide the failure itself
            self.messages.append(str(record.msg))


def _deliver(exporter: Any, spans: list[Any], turns: int) -> None:
    """Export ``spans`` in one call; TraceExportError saying what was lost unless it succeeded."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    handler = _Reasons()
    root = logging.getLogger("opentelemetry")
    root.addHandler(handler)
    try:
        try:
            result = exporter.export(tuple(spans))
        except Exception as exc:  # noqa: BLE001 - any exporter's failure is reported the same way
            raise TraceExportError(
                f"the trace was not exported: {len(spans)} spans of {turns} turns lost ({type(exc).__name__}: {exc})"
            ) from exc
    finally:
        root.removeHandler(handler)
    if result is not SpanExportResult.SUCCESS:
        why = "; ".join(dict.fromkeys(m for m in handler.messages if m)) or "the exporter answered failure"
        raise TraceExportError(
            f"the trace was not exported: {len(spans)} spans of {turns} turns (turns 0-{turns - 1}) lost: {why}"
        )


def export_trace(
    session: ImportedSession | Session,
    *,
    exporter: SpanExporter | None = None,
    tracer_provider: TracerProvider | None = None,
    service_name: str = "wm-kernel",
    times: Sequence[datetime] | None = None,
    gap: timedelta | float | None = None,
) -> int:
    """Emit the session as spans (see the module docstring) to ``exporter`` (any SDK exporter:
    OTLP over HTTP, console, in-memory), or through your ``tracer_provider``; returns the number
    of turn spans. Composed sessions need their bus log (send times) and History; a log without
    send times needs ``gap=`` or ``times=`` (as ``cache_simulation``), and says they were assumed.
    With ``exporter=``, a failed export raises :class:`TraceExportError` (what was lost, and why).

    Long because: one export: the provider set up (the caller's or ours), the root span's
    attributes, a span per turn, then the delivery; each a few lines.
    """
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.trace import SpanKind
    except ImportError:
        raise ImportError("exporting traces needs opentelemetry-sdk: pip install 'wm-kernel[otel]'") from None
    if (exporter is None) == (tracer_provider is None):
        raise ValueError("give exactly one of exporter= or tracer_provider=")
    turns, flags, sim, assumed = _turns_of(session, times, gap)
    provider = tracer_provider
    collect: Any = None
    if provider is None:
        # ours for this call only: no exit hook that would shut the caller's exporter down later
        provider = TracerProvider(resource=Resource.create({"service.name": service_name}), shutdown_on_exit=False)
        collect = _collector()
        provider.add_span_processor(collect)
    tracer = provider.get_tracer(SCOPE)
    counter = getattr(session.recorder, "counter", None)
    count = counter.count if counter is not None else len
    rows = sim.turns.to_dict("records")
    name = getattr(session, "name", "") or getattr(session, "continuum_id", "")
    start = _ns(turns[0].sent_at)
    end = _ns(turns[-1].sent_at) + 1
    agent: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": name,
        "gen_ai.provider.name": turns[0].provider,
    }
    conversation = next((t.conversation for t in turns if t.conversation), None)
    if conversation:
        agent["gen_ai.conversation.id"] = conversation
    if assumed:
        agent["wm.times.assumed"] = assumed
    with tracer.start_as_current_span(
        scrub_name(f"invoke_agent {name}".strip()),
        kind=SpanKind.INTERNAL,
        start_time=start,
        end_on_exit=False,
        attributes=_scrubbed(agent),
    ) as root:
        for turn, (_, cached), row in zip(turns, flags, rows, strict=True):
            _export_turn(tracer, turn, cached, row, count, SpanKind)
        root.end(end_time=end)
    if collect is not None:
        assert exporter is not None
        _deliver(exporter, collect.spans, len(turns))
    else:
        provider.force_flush()
    return len(turns)


def _export_turn(tracer: Any, turn: _Turn, cached: list[int], row: Mapping[str, Any], count: Any, kinds: Any) -> None:
    at = _ns(turn.sent_at)
    cache = _SimulatedCache(int(row["cache_read_input_tokens"]), int(row["cache_creation_input_tokens"]))
    ranges = _section_ranges(turn, count)
    with tracer.start_as_current_span(
        scrub_name(f"chat {turn.model}"),
        kind=kinds.CLIENT,
        start_time=at,
        end_on_exit=False,
        attributes=_scrubbed(_turn_attributes(turn, row)),
    ) as span:
        for index, (section, is_cached) in enumerate(zip(turn.sections, cached, strict=True)):
            child = _section_attributes(index, section, bool(is_cached), ranges.get(index, _TokenRange(0, 0)), cache)
            name = scrub_name(f"section {section.name}")
            tracer.start_span(name, kind=kinds.INTERNAL, start_time=at, attributes=_scrubbed(child)).end(end_time=at)
        span.end(end_time=at + 1)


#: attributes scrubbed where they are made (their redaction is recorded in ``wm.section.redacted``)
_SCRUBBED_ALREADY = frozenset({"wm.section.text", "wm.section.raw", "wm.usage"})


def _scrubbed(attributes: dict[str, Any]) -> dict[str, Any]:
    """``attributes`` with every string (and every string of a list) scrubbed of secrets: names,
    ids and labels come from the log too (a section named after ``# OPENAI_API_KEY=...``)."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if key in _SCRUBBED_ALREADY:
            out[key] = value
        elif isinstance(value, str):
            out[key] = scrub_name(value)
        elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            out[key] = [scrub_name(v) for v in value]
        else:
            out[key] = value
    return out


class _TokenRange(NamedTuple):
    """Where a section's tokens lie in the request as the provider reads it: ``[lo, hi)``."""

    lo: int
    hi: int


class _SimulatedCache(NamedTuple):
    """The simulated cache of one request: the first ``read`` tokens read, the ``written`` after written."""

    read: int
    written: int


def _turn_attributes(turn: _Turn, row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``chat`` span's attributes: GenAI conventions (the log's usage, else the simulated) and ``wm.*``."""
    logged = gen_ai_counts(turn.billed) if turn.billed is not None else {}
    usage = logged or {
        "input_tokens": int(row["prompt_tokens"]),
        "cache_read_input_tokens": int(row["cache_read_input_tokens"]),
        "cache_creation_input_tokens": int(row["cache_creation_input_tokens"]),
    }
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": turn.provider,
        "gen_ai.request.model": turn.model,
        "gen_ai.usage.input_tokens": usage["input_tokens"],
        "gen_ai.usage.cache_read.input_tokens": usage["cache_read_input_tokens"],
        "gen_ai.usage.cache_creation.input_tokens": usage["cache_creation_input_tokens"],
        "wm.turn": turn.turn,
        "wm.format": turn.dialect,
        "wm.usage.source": "log" if logged else "simulated",
        "wm.sim.cache_read_input_tokens": int(row["cache_read_input_tokens"]),
        "wm.sim.cache_creation_input_tokens": int(row["cache_creation_input_tokens"]),
        "wm.sim.status": str(row["status"]),
        "wm.sim.miss_reason": str(row["miss_reason"]),
    }
    if "output_tokens" in usage:
        attributes["gen_ai.usage.output_tokens"] = usage["output_tokens"]
    if turn.conversation:
        attributes["gen_ai.conversation.id"] = turn.conversation
    if turn.response_model:
        attributes["gen_ai.response.model"] = turn.response_model
    if turn.response_id:
        attributes["gen_ai.response.id"] = turn.response_id
    if turn.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [turn.finish_reason]
    if turn.usage:
        attributes["wm.usage"] = scrub(json.dumps(turn.usage, sort_keys=True))[0]
        attributes["wm.usage.format"] = str(turn.usage_format)
    label = row.get("divergent_label")
    if isinstance(label, str) and label:
        attributes["wm.sim.divergent_label"] = label
    return attributes


def _section_ranges(turn: _Turn, count: Any) -> dict[int, _TokenRange]:
    """Each non-framing section's token range, in the provider's order (tools, system, messages): the
    simulated read covers the first ones, the write those after."""
    ranges: dict[int, _TokenRange] = {}
    position = 0
    for index in sorted(
        (i for i, s in enumerate(turn.sections) if s.kind != "framing"), key=lambda i: _RANK[turn.sections[i].kind]
    ):
        tokens = count(turn.sections[index].text)
        ranges[index] = _TokenRange(position, position + tokens)
        position += tokens
    return ranges


def _section_attributes(
    index: int, section: Section, is_cached: bool, where: _TokenRange, cache: _SimulatedCache
) -> dict[str, Any]:
    """A ``section`` span's attributes: what it is, its tokens and their simulated fate, its text scrubbed."""
    lo, hi = where
    child: dict[str, Any] = {
        "wm.section.index": index,
        "wm.section.name": section.name,
        "wm.section.kind": section.kind,
        "wm.section.placement": section.placement or "",
        "wm.section.trinket": section.trinket or "",
        "wm.section.element": section.element,
        "wm.section.tokens": hi - lo,
        "wm.section.cached": is_cached,
        "wm.section.digest": text_digest(section.text).hex(),
        "wm.section.sim.read_tokens": max(0, min(hi, cache.read) - lo),
        "wm.section.sim.write_tokens": max(0, min(hi, cache.read + cache.written) - max(lo, cache.read)),
    }
    text, taken = scrub(section.text)
    raw, taken_raw = scrub(section.raw) if section.raw != section.text else (text, [])
    escaped = _has_lone_surrogate(text) or _has_lone_surrogate(raw)
    child["wm.section.text"] = json.dumps(text) if escaped else text
    if raw != text:
        child["wm.section.raw"] = json.dumps(raw) if escaped else raw
    if escaped:
        child["wm.section.text.encoding"] = "json"
    removed = list(dict.fromkeys(taken + taken_raw))
    if removed:
        child["wm.section.redacted"] = removed
    if section.cache:
        child["wm.section.cache"] = section.cache
    return child


def _ns(when: datetime) -> int:
    return int(when.timestamp()) * _NS + when.microsecond * 1000


def otlp_json(spans: Sequence[Any]) -> str:
    """Finished SDK spans (``InMemorySpanExporter.get_finished_spans()``) as an OTLP/HTTP JSON
    document: what a collector's file exporter would write, and what :func:`read_otlp` reads."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return otlp_json_of(encode_spans(spans))


def otlp_json_of(request: Any) -> str:
    """An ``ExportTraceServiceRequest`` (protobuf, as OTLP/HTTP carries it) as OTLP JSON: ids in
    hex, enums as integers, as the OTLP specification writes them (protobuf's own JSON mapping
    writes ids in base64)."""
    import base64

    from google.protobuf.json_format import MessageToDict

    document = MessageToDict(request, use_integers_for_enums=True)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document, ensure_ascii=False)


__all__ = ["export_trace", "otlp_json", "otlp_json_of", "SCOPE"]
