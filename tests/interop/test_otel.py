"""Section-level traces through opentelemetry-sdk: in memory, to a real OTLP/HTTP receiver, and back."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from wm_kernel.core.clock import ManualClock  # noqa: E402
from wm_kernel.interop import export_trace, import_log  # noqa: E402
from wm_kernel.interop.otel import TraceExportError, otlp_json, otlp_json_of  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.tokens import EstimateTokenizer, TokenCounter  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"
#: the 1x1 PNG of the support log's image block
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
#: every gen_ai.* attribute the export may carry: the names of the OpenTelemetry GenAI registry as
#: ../shared/reference/provider_formats.md section 4 lists them (the deprecated gen_ai.system and
#: gen_ai.usage.prompt_tokens / completion_tokens are not among them)
GEN_AI_NAMES = {
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.response.id",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.conversation.id",
    "gen_ai.agent.name",
}


def support() -> Any:
    return import_log(DATA / "support_anthropic.jsonl", counter=TokenCounter(EstimateTokenizer()))


def exported(session: Any) -> list[Any]:
    exporter = InMemorySpanExporter()
    export_trace(session, exporter=exporter)
    return list(exporter.get_finished_spans())


def test_spans_follow_the_gen_ai_conventions_with_one_child_per_section() -> None:
    session = support()
    spans = exported(session)
    chats = [s for s in spans if s.name == "chat claude-sonnet-4-6"]
    root = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(chats) == 5 and len(root) == 1
    attributes = dict(chats[1].attributes or {})
    assert {k: v for k, v in attributes.items() if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-6",
        "gen_ai.usage.input_tokens": 2224,
        "gen_ai.usage.cache_read.input_tokens": 2040,
        "gen_ai.usage.cache_creation.input_tokens": 180,
        "gen_ai.usage.output_tokens": 61,
        "gen_ai.response.model": "claude-sonnet-4-6",
        "gen_ai.response.id": "msg_01",
        "gen_ai.response.finish_reasons": ("end_turn",),
    }
    assert attributes["wm.usage.source"] == "log"
    assert attributes["wm.sim.divergent_label"] == "system[1] <customer_context> (system)"
    assert chats[1].kind.name == "CLIENT" and chats[1].parent.span_id == root[0].context.span_id
    assert chats[1].start_time == 1796029240 * 10**9  # 2026-11-30T09:00:40Z, the log's send time
    children = [s for s in spans if s.parent is not None and s.parent.span_id == chats[1].context.span_id]
    assert len(children) == len(session.request(1).sections)
    tone = next(dict(c.attributes or {}) for c in children if c.name == "section system[0] ## Tone")
    assert {k: v for k, v in tone.items() if k not in ("wm.section.text", "wm.section.raw")} == {
        "wm.section.index": 4,
        "wm.section.name": "system[0] ## Tone",
        "wm.section.kind": "system",
        "wm.section.placement": "system",
        "wm.section.trinket": "system",
        "wm.section.element": "system[0]",
        "wm.section.tokens": 16,
        "wm.section.cached": True,
        "wm.section.digest": "b6cdc77a26437df40ed56ec96d0f9fbe",
        "wm.section.cache": "1h",
        "wm.section.sim.read_tokens": 16,
        "wm.section.sim.write_tokens": 0,
    }
    assert tone["wm.section.text"].startswith("## Tone\nWarm, plain words")


def test_export_import_replay_is_byte_for_byte(tmp_path: Path) -> None:
    session = support()
    path = tmp_path / "trace.json"
    path.write_text(otlp_json(exported(session)), encoding="utf-8")
    back = import_log(path, counter=TokenCounter(EstimateTokenizer()))
    assert back.errors == ()
    # byte for byte but for the image's data, exported as a placeholder with its size and digest
    placeholder = "[image: 70 bytes, sha256 " + hashlib.sha256(base64.b64decode(PIXEL)).hexdigest() + "]"
    assert [back.replay(t) for t in back.turns] == [
        session.replay(t).replace(PIXEL, placeholder) for t in session.turns
    ]
    assert [r.sent_at for r in back.requests] == [r.sent_at for r in session.requests]
    kept = back.history["section"] != "msg[0] user [1] image"
    assert (
        back.history[kept]
        .reset_index(drop=True)
        .equals(session.history[session.history["section"] != "msg[0] user [1] image"].reset_index(drop=True))
    )
    assert back.usage.equals(session.usage)


def test_a_composed_session_exports_and_comes_back_with_the_same_prompts(tmp_path: Path) -> None:
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
    from trinkets.time_manager import TimeManager

    clock = ManualClock("2026-11-30T09:00:00+00:00")
    live = Session("You help {first_name}.", clock=clock, trinkets=[TimeManager, PeanutGalleryTrinket])
    live.compose()
    live.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow <down>.", ttl=1)
    clock.advance(minutes=3)
    live.advance_turn()
    clock.advance(minutes=7)
    live.advance_turn()
    spans = exported(live)
    chat = [dict(s.attributes or {}) for s in spans if s.name.startswith("chat ")]
    assert [a["wm.usage.source"] for a in chat] == ["simulated"] * 3
    assert [a["gen_ai.usage.input_tokens"] for a in chat] == live.cache_simulation().turns["prompt_tokens"].tolist()
    path = tmp_path / "trace.json"
    path.write_text(otlp_json(spans), encoding="utf-8")
    back = import_log(path)
    for turn in (0, 1, 2):
        prompt = live.prompt_at(turn)
        keys = prompt.blame_keys()
        texts = [prompt[k] if "[" not in k else prompt[k.split("[")[0]][int(k[:-1].split("[")[1])] for k in keys]
        assert back.replay(turn) == "".join(texts)
        by_key: dict[str, str] = {}
        for section in back.request(turn).sections:
            by_key[section.element] = by_key.get(section.element, "") + section.raw
        assert by_key == dict(zip(keys, texts, strict=True))


class _Receiver(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest] = []
    status = 200

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.status != 200:
            answer = b"payload too large" if self.status == 413 else b"collector broke"
            self.send_response(self.status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        if self.path != "/v1/traces" or self.headers["Content-Type"] != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.received.append(request)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve(status: int) -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    received: list[ExportTraceServiceRequest] = []
    handler = type("Receiver", (_Receiver,), {"received": received, "status": status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    yield from _serve(200)


@pytest.fixture(params=[413, 500])
def refusing(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    for endpoint, _ in _serve(request.param):
        yield endpoint, request.param


def test_a_real_otlp_http_receiver_gets_every_section(receiver: tuple[str, list[Any]], tmp_path: Path) -> None:
    endpoint, received = receiver
    session = support()
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=10)
    assert export_trace(session, exporter=exporter) == 5
    exporter.shutdown()
    spans = [
        span
        for request in received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert len(spans) == 1 + 5 + sum(len(r.sections) for r in session.requests)
    services = {
        kv.value.string_value
        for request in received
        for resource in request.resource_spans
        for kv in resource.resource.attributes
        if kv.key == "service.name"
    }
    assert services == {"wm-kernel"}
    # what the collector received, written as OTLP JSON, imports back to the same requests
    path = tmp_path / "received.jsonl"
    path.write_text("\n".join(otlp_json_of(request) for request in received) + "\n", encoding="utf-8")
    back = import_log(path)
    placeholder = "[image: 70 bytes, sha256 " + hashlib.sha256(base64.b64decode(PIXEL)).hexdigest() + "]"
    assert [back.replay(t) for t in back.turns] == [
        session.replay(t).replace(PIXEL, placeholder) for t in session.turns
    ]


def test_a_collector_that_refuses_the_trace_is_an_error_saying_what_was_lost(refusing: tuple[str, int]) -> None:
    endpoint, status = refusing
    session = support()
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=2)
    spans = 1 + 5 + sum(len(r.sections) for r in session.requests)
    with pytest.raises(
        TraceExportError,
        match=rf"^the trace was not exported: {spans} spans of 5 turns "
        rf"\(turns 0-4\) lost: .*{status}",
    ):
        export_trace(session, exporter=exporter)
    exporter.shutdown()


def test_no_collector_listening_is_an_error_saying_what_was_lost() -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=1)
    with pytest.raises(TraceExportError, match=r"^the trace was not exported: \d+ spans of 5 turns"):
        export_trace(support(), exporter=exporter)
    exporter.shutdown()


def test_headers_secrets_and_image_data_are_never_exported(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "A1b2" * 12
    line = json.loads((DATA / "support_anthropic.jsonl").read_text(encoding="utf-8").splitlines()[0])
    line["headers"] = {"x-api-key": key, "anthropic-version": "2023-06-01", "user-agent": "proxy/1"}
    line["request"]["metadata"] = {"user_id": "u1", "api_key": key}
    log_path = tmp_path / "proxy.jsonl"
    log_path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    spans = exported(import_log(log_path, counter=TokenCounter(EstimateTokenizer())))
    text = otlp_json(spans)
    assert key not in text and "sk-ant-" not in text and "anthropic-version" not in text
    assert PIXEL not in text
    sections = [dict(s.attributes or {}) for s in spans if s.name.startswith("section ")]
    texts = "".join(a["wm.section.text"] + a.get("wm.section.raw", "") for a in sections)
    assert '"headers": {"[not exported]": "headers"}' in texts and '"api_key": "[redacted]"' in texts
    redacted = {a["wm.section.name"]: a["wm.section.redacted"] for a in sections if "wm.section.redacted" in a}
    assert "image" in next(v for k, v in redacted.items() if "image" in k)
    assert any("headers" in v for v in redacted.values()) and any("secret" in v for v in redacted.values())
    image = next(a for a in sections if a["wm.section.name"] == "msg[0] user [1] image")
    digest = hashlib.sha256(base64.b64decode(PIXEL)).hexdigest()
    assert f'"data": "[image: 70 bytes, sha256 {digest}]"' in image["wm.section.raw"]


def test_a_section_holding_a_lone_surrogate_reads_back(tmp_path: Path) -> None:
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": "Broken \ud800 text",
        "messages": [{"role": "user", "content": "hi \udc41 there"}],
    }
    path = tmp_path / "bodies.jsonl"
    path.write_text(json.dumps(body) + "\n", encoding="utf-8")  # escaped in the file, as json writes it
    log = import_log(path, gap=30, counter=TokenCounter(EstimateTokenizer()))
    spans = exported(log)
    trace = tmp_path / "trace.json"
    trace.write_text(otlp_json(spans), encoding="utf-8")
    back = import_log(trace, counter=TokenCounter(EstimateTokenizer()))
    assert back.replay(0) == log.replay(0)
    assert "\ud800" in "".join(s.text for s in back.request(0).sections)
    marked = [dict(s.attributes or {}) for s in spans if s.name.startswith("section ")]
    assert {a.get("wm.section.text.encoding") for a in marked} == {None, "json"}


def test_a_log_without_send_times_exports_at_the_gap_given_and_says_so(tmp_path: Path) -> None:
    body = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "bodies.jsonl"
    path.write_text((json.dumps(body) + "\n") * 3, encoding="utf-8")
    log = import_log(path, counter=TokenCounter(EstimateTokenizer()))
    assumed = InMemorySpanExporter()
    assert export_trace(log, exporter=assumed) == 3  # at the default spacing, said
    root = next(dict(s.attributes or {}) for s in assumed.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert root["wm.times.assumed"] == (
        "send times assumed: the log has none; requests in file order 30 s apart, the default "
        "(pass gap= or times= to set them)"
    )
    exporter = InMemorySpanExporter()
    assert export_trace(log, exporter=exporter, gap=timedelta(seconds=90)) == 3
    spans = list(exporter.get_finished_spans())
    root = next(dict(s.attributes or {}) for s in spans if s.name.startswith("invoke_agent"))
    assert root["wm.times.assumed"] == (
        "send times assumed: the log has none; requests in file order 90 s apart (gap=)"
    )
    chats = sorted(s.start_time for s in spans if s.name.startswith("chat "))
    assert [b - a for a, b in zip(chats, chats[1:], strict=False)] == [90 * 10**9] * 2


def test_every_gen_ai_attribute_is_a_registry_name_and_the_agent_span_names_provider_and_conversation() -> None:
    log = import_log(DATA / "claude_code_session.jsonl", counter=TokenCounter(EstimateTokenizer()))
    spans = exported(log)
    names = {k for s in spans for k in (s.attributes or {}) if k.startswith("gen_ai.")}
    assert names <= GEN_AI_NAMES
    root = next(dict(s.attributes or {}) for s in spans if s.name.startswith("invoke_agent"))
    session_id = json.loads((DATA / "claude_code_session.jsonl").read_text(encoding="utf-8").splitlines()[1])[
        "sessionId"
    ]
    assert root["gen_ai.provider.name"] == "anthropic" and root["gen_ai.conversation.id"] == session_id
    chat = next(dict(s.attributes or {}) for s in spans if s.name.startswith("chat "))
    assert chat["gen_ai.conversation.id"] == session_id
    assert chat["gen_ai.response.id"].startswith("msg_") and chat["gen_ai.response.model"].startswith("claude-")
    assert {
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.output_tokens",
    } <= set(chat)


def test_export_needs_one_destination() -> None:
    with pytest.raises(ValueError, match=r"^give exactly one of exporter= or tracer_provider=$"):
        export_trace(support())
    with pytest.raises(TypeError, match="can export a Session or an ImportedSession, got str"):
        export_trace("x", exporter=InMemorySpanExporter())  # type: ignore[arg-type]


def test_the_otlp_round_trip_of_a_composed_session_reaches_to_session_and_the_dashboard(tmp_path: Path) -> None:
    """A session composed here (its base prompt a section named base_prompt, with MIRA's delimiter
    in it, as it was sent) exported and imported again replays into a live Session and a dashboard:
    the same sections, the same texts, the base prompt once."""
    pytest.importorskip("ipywidgets")
    from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
    from wm_kernel.jupyter.dashboard.widget import Dashboard

    clock = ManualClock("2026-11-30T09:00:00+00:00")
    live = Session("You help {first_name}.", clock=clock, trinkets=[PeanutGalleryTrinket])
    live.compose()
    live.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=1)
    clock.advance(minutes=3)
    live.advance_turn()
    path = tmp_path / "trace.json"
    path.write_text(otlp_json(exported(live)), encoding="utf-8")
    back = import_log(path)
    replayed = back.to_session()
    assert replayed.turn == 1
    for turn in (0, 1):
        shown = [(r.name, r.content) for r in replayed.prompt_at(turn).sections]
        sent = [(s.name, s.text) for s in back.sections(turn) if s.kind == "system"]
        assert shown == sent
    # the base prompt is the one that was sent, delimiter and all, once; the composer adds none
    base = replayed.prompt_at(0).section("base_prompt").content
    assert base == live.prompt_at(0).section("base_prompt").content and base.count("MIRA's scaffolding") == 1
    board = Dashboard(replayed, cache_model="claude-sonnet-4-6")
    board.turn = 0
    assert "viewing turn 0 (read-only)" in board.status
    board.close()


#: each secret planted in a proxy log, by the shape an attacker (or a careless proxy) writes it in
PLANTED = {
    "headers as an object": ("headers", {"x-api-key": "S01-headers-object", "anthropic-version": "2023-06-01"}),
    "headers as name/value pairs": ("request_headers", [{"name": "Authorization", "value": "S02-name-value-pair"}]),
    "headers nested": ("http", {"headers": {"auth": {"x-api-key": "S03-nested-headers"}}}),
    "headers as a string": ("response_headers", "Set-Cookie: S04-headers-string"),
    "a password that is a number": ("password", 9050501234567),
    "cookies as a list": ("cookies", ["session=S06-cookie-list", "csrf=S06b-cookie-list"]),
    "a secret object": ("client_secret", {"v": "S07-secret-object"}),
    "a camelCase key": ("apiKey", "S08-camel-api-key"),
    "a key after _": ("x_api_key", "S09-underscored-api-key"),
    "a token": ("refresh_token", "S10-refresh-token"),
    "a name/value pair outside headers": ("pairs", [{"value": "S11-value-before-name", "key": "X-Auth-Token"}]),
}
#: secrets that ride in text: message content, a URL, the system prompt
PLANTED_TEXT = {
    "lower-case bearer": "use bearer S12aLowerCaseBearerToken9 for the call",
    "Authorization: Basic": "Authorization: Basic UzEzOmJhc2ljLWNyZWRz",
    "credentials in a URL": "fetch https://ada:S14-url-password@api.example.com/v1",
    "a key after _ in text": "KEY_sk-proj-S15keyAfterUnderscore0000000",
    "an Anthropic key": "sk-ant-api03-S16anthropicKeyShape0000000",
    "a Google key": "AIzaS17googleKeyShape000000000000000000",
    "an assignment": "password = S18-assigned-password",
    "an escaped JSON body": json.dumps({"api_key": "S19-inside-a-json-string"}),
}
SYSTEM_SECRET = "sk-proj-S20systemPromptHeading00000000"


def test_every_planted_secret_variant_is_redacted_from_the_exported_bytes(tmp_path: Path) -> None:
    line = json.loads((DATA / "support_anthropic.jsonl").read_text(encoding="utf-8").splitlines()[0])
    for key, value in PLANTED.values():
        line[key] = value
    line["request"]["metadata"] = {"user_id": "u1", "credentials": {"user": "ada", "pass": "S21-metadata"}}
    line["request"]["messages"][0]["content"] = "\n".join(PLANTED_TEXT.values())
    line["request"]["system"][0]["text"] = f"# OPENAI_API_KEY={SYSTEM_SECRET}\nYou help.\n\n# Rules\nBe brief.\n"
    log_path = tmp_path / "proxy.jsonl"
    log_path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    log = import_log(log_path, counter=TokenCounter(EstimateTokenizer()))
    assert any(SYSTEM_SECRET in s.name for s in log.request(0).sections)  # a section named after that line
    spans = exported(log)
    text = otlp_json(spans)
    names = " ".join(s.name for s in spans)
    leaked = [m for m in re.findall(r"S\d\d[a-z]?[-A-Za-z0-9]*", text + names) if m[:3] != "S00"]
    assert leaked == []
    for secret in ("9050501234567", "UzEzOmJhc2ljLWNyZWRz", "anthropic-version", SYSTEM_SECRET, "sk-"):
        assert secret not in text and secret not in names
    assert "section system[0] # OPENAI_API_KEY=[redacted]" in names
    # what is not a secret stays: the prose, the URL's host, the user id, the token counts
    values = " ".join(str(v) for s in spans for v in (s.attributes or {}).values())
    assert "fetch https://ada:[redacted]@api.example.com/v1" in values and '"user_id": "u1"' in values
    assert '"max_tokens": 1024' in values and "You help." in values


def test_redaction_leaves_ordinary_text_and_json_as_they_are() -> None:
    from wm_kernel.utils.redact import scrub

    for text in (
        '{"model": "claude-sonnet-4-6", "max_tokens": 1024, "input_tokens": 5, "key": "Enter"}',
        "Token counting is basic arithmetic: count the tokens.\nhttps://example.com/a:b@c is fine",
        "The author wrote 'auth' as a word, and a task-skip flag.",
    ):
        assert scrub(text) == (text, [])
