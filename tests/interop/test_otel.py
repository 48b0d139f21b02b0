"""Section-level traces through opentelemetry-sdk: in memory, to a real OTLP/HTTP receiver, and back."""
from __future__ import annotations

import threading
from collections.abc import Iterator
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
from wm_kernel.interop.otel import otlp_json, otlp_json_of  # noqa: E402
from wm_kernel.session import Session  # noqa: E402
from wm_kernel.tokens import EstimateTokenizer, TokenCounter  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"


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
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-6", "gen_ai.usage.input_tokens": 2224,
        "gen_ai.usage.cache_read.input_tokens": 2040, "gen_ai.usage.cache_creation.input_tokens": 180,
        "gen_ai.usage.output_tokens": 61}
    assert attributes["wm.usage.source"] == "log"
    assert attributes["wm.sim.divergent_label"] == "system[1] <customer_context> (system)"
    assert chats[1].kind.name == "CLIENT" and chats[1].parent.span_id == root[0].context.span_id
    assert chats[1].start_time == 1796029240 * 10**9    # 2026-11-30T09:00:40Z, the log's send time
    children = [s for s in spans if s.parent is not None and s.parent.span_id == chats[1].context.span_id]
    assert len(children) == len(session.request(1).sections)
    tone = next(dict(c.attributes or {}) for c in children if c.name == "section system[0] ## Tone")
    assert {k: v for k, v in tone.items() if k not in ("wm.section.text", "wm.section.raw")} == {
        "wm.section.index": 4, "wm.section.name": "system[0] ## Tone", "wm.section.kind": "system",
        "wm.section.placement": "system", "wm.section.trinket": "system", "wm.section.element": "system[0]",
        "wm.section.tokens": 16, "wm.section.cached": True,
        "wm.section.digest": "b6cdc77a26437df40ed56ec96d0f9fbe", "wm.section.cache": "1h",
        "wm.section.sim.read_tokens": 16, "wm.section.sim.write_tokens": 0}
    assert tone["wm.section.text"].startswith("## Tone\nWarm, plain words")


def test_export_import_replay_is_byte_for_byte(tmp_path: Path) -> None:
    session = support()
    path = tmp_path / "trace.json"
    path.write_text(otlp_json(exported(session)), encoding="utf-8")
    back = import_log(path, counter=TokenCounter(EstimateTokenizer()))
    assert back.errors == ()
    assert [back.replay(t) for t in back.turns] == [session.replay(t) for t in session.turns]
    assert [r.sent_at for r in back.requests] == [r.sent_at for r in session.requests]
    assert back.history.equals(session.history)
    assert back.usage.equals(session.usage)
    assert back.cache_simulation().turns.equals(session.cache_simulation().turns)


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

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
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


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    received: list[ExportTraceServiceRequest] = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_real_otlp_http_receiver_gets_every_section(receiver: tuple[str, list[Any]], tmp_path: Path) -> None:
    endpoint, received = receiver
    session = support()
    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=10)
    assert export_trace(session, exporter=exporter) == 5
    exporter.shutdown()
    spans = [span for request in received for resource in request.resource_spans
             for scope in resource.scope_spans for span in scope.spans]
    assert len(spans) == 1 + 5 + sum(len(r.sections) for r in session.requests)
    services = {kv.value.string_value for request in received for resource in request.resource_spans
                for kv in resource.resource.attributes if kv.key == "service.name"}
    assert services == {"wm-kernel"}
    # what the collector received, written as OTLP JSON, imports back to the same requests
    path = tmp_path / "received.jsonl"
    path.write_text("\n".join(otlp_json_of(request) for request in received) + "\n", encoding="utf-8")
    back = import_log(path)
    assert [back.replay(t) for t in back.turns] == [session.replay(t) for t in session.turns]


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
    board.slider.value = 0
    assert "viewing turn 0 (read-only)" in board.status
    board.close()
