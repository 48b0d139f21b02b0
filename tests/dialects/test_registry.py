"""The wire registry: lookups by name, alias, model provider, SDK and usage keys; the import
layer's log formats, and one registered from above."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wm_kernel.dialects.base import Dialect
from wm_kernel.dialects.registry import (
    body_dialect,
    choose_wire,
    dialect_for_provider,
    dialect_for_sdk,
    dialect_names,
    get_dialect,
    register_dialect,
    sdk_clients,
    usage_dialect,
    usage_providers,
    wire_for_layout,
)
from wm_kernel.interop import import_log
from wm_kernel.interop.formats import LogFormat, LoggedRequest
from wm_kernel.interop.readers import (
    BodyReader,
    get_log_format,
    log_formats,
    register_log_format,
    unregister_log_format,
)
from wm_kernel.interop.split import Splitter

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"


def test_names_aliases_and_what_each_wire_is() -> None:
    assert dialect_names() == ("anthropic", "openai", "openai-responses", "gemini", "bedrock", "mira")
    assert get_dialect("openai.chat") is get_dialect("openai") is get_dialect("azure.ai.openai")
    assert get_dialect("google").name == get_dialect("gcp.vertex_ai").name == "gemini"
    assert usage_providers() == ("anthropic", "openai", "openai-responses", "gemini", "bedrock")
    assert [(d, get_dialect(d).provider, get_dialect(d).builds_body) for d in dialect_names()] == [
        ("anthropic", "anthropic", True),
        ("openai", "openai", True),
        ("openai-responses", "openai-responses", False),
        ("gemini", "gemini", False),
        ("bedrock", "bedrock", False),
        ("mira", "anthropic", True),
    ]
    with pytest.raises(
        ValueError,
        match=r"^unknown wire 'x'; wires: anthropic, openai, openai-responses, gemini, "
        r"bedrock, mira$",
    ):
        get_dialect("x")


def test_a_model_s_provider_resolves_to_its_wire() -> None:
    assert [dialect_for_provider(p).name for p in ("anthropic", "openai", "google")] == [
        "anthropic",
        "openai",
        "gemini",
    ]
    with pytest.raises(ValueError, match=r"^no wire is registered for 'mistral' models; wires: "):
        dialect_for_provider("mistral")
    # the wire a view assumes: the one asked for, else the session's when it serves the model, else the provider's
    assert choose_wire(None, None, "anthropic", "m").name == "anthropic"
    assert choose_wire(None, "mira", "anthropic", "m").name == "mira"
    assert choose_wire(None, "mira", "openai", "gpt").name == "openai"
    assert choose_wire("mira", None, "anthropic", "m").name == "mira"
    with pytest.raises(
        ValueError,
        match=r"^gemini-2.5-pro is a google model; the mira wire sends to anthropic "
        r"models$",
    ):
        choose_wire("mira", None, "google", "gemini-2.5-pro")
    assert wire_for_layout("original") == "mira" and wire_for_layout("default") is None


def test_sdks_usage_and_bodies_find_their_wire() -> None:
    assert dialect_for_sdk("anthropic").name == "anthropic" and dialect_for_sdk("openai").name == "openai"
    assert sdk_clients() == ("anthropic.Anthropic", "openai.OpenAI")
    with pytest.raises(
        TypeError,
        match=r"^client must be an anthropic.Anthropic or openai.OpenAI client, got a "
        r"httpx object$",
    ):
        dialect_for_sdk("httpx")
    named = {
        key: usage_dialect(usage).name
        for key, usage in {  # type: ignore[union-attr]
            "messages": {"input_tokens": 1, "output_tokens": 1},
            "chat": {"prompt_tokens": 1, "completion_tokens": 1},
            "responses": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
            "gemini": {"promptTokenCount": 1},
            "gemini sdk": {"prompt_token_count": 1},
        }.items()
    }
    assert named == {
        "messages": "anthropic",
        "chat": "openai",
        "responses": "openai-responses",
        "gemini": "gemini",
        "gemini sdk": "gemini",
    }
    assert usage_dialect({"tokens": 1}) is None
    bodies = [
        {"model": "claude-x", "messages": []},
        {"messages": [{"role": "system", "content": "s"}]},
        {"input": "hi"},
        {"messages": [], "max_tokens": 5},
        {"messages": []},
        {"nothing": 1},
    ]
    assert [None if (d := body_dialect(b)) is None else d.name for b in bodies] == [
        "anthropic",
        "openai",
        "openai-responses",
        "anthropic",
        "openai",
        None,
    ]


def test_a_dialect_is_registered_once() -> None:
    class Twice(Dialect):
        name = "anthropic"

    with pytest.raises(ValueError, match=r"^dialect 'anthropic' is already registered; pass replace=True$"):
        register_dialect(Twice())

    class Alias(Dialect):
        name = "other"
        aliases = ("google",)

    with pytest.raises(ValueError, match=r"^'google' already names the gemini dialect$"):
        register_dialect(Alias())
    with pytest.raises(TypeError, match="^expected a Dialect, got str$"):
        register_dialect("mira")  # type: ignore[arg-type]
    assert "other" not in dialect_names()


def test_imported_requests_name_their_provider() -> None:
    providers = {
        name: {r.provider for r in import_log(DATA / name).requests}
        for name in ("support_anthropic.jsonl", "support_openai_chat.jsonl", "support_openai_responses.jsonl")
    }
    assert providers == {
        "support_anthropic.jsonl": {"anthropic"},
        "support_openai_chat.jsonl": {"openai"},
        "support_openai_responses.jsonl": {"openai"},
    }


class TapReader:
    """A reader of a made-up tap: one {"tap": body} per line (what a higher layer plugs in)."""

    def __init__(self, path: str, splitter: Splitter) -> None:
        self.inner = BodyReader(path, splitter, "mira")

    def feed(self, line: int, text: str, value: Any) -> None:
        body = json.dumps(value["tap"])
        self.inner.feed(line, body, value["tap"])

    def finish(self) -> list[LoggedRequest]:
        return self.inner.finish()


def test_a_log_format_registered_from_above_is_detected_and_read(tmp_path: Path) -> None:
    assert {"anthropic", "openai.chat", "openai.responses", "claude-code", "otlp"} <= set(log_formats())
    with pytest.raises(ValueError, match="^log format 'x' needs a reader or a read_file$"):
        register_log_format(LogFormat("x"))
    with pytest.raises(ValueError, match=r"^log format 'otlp' is already registered; pass replace=True$"):
        register_log_format(LogFormat("otlp", TapReader))
    register_log_format(
        LogFormat(
            "test-tap", TapReader, detect=lambda v: isinstance(v, dict) and "tap" in v, priority=1, title="a test tap"
        ),
        replace=True,
    )
    try:
        path = tmp_path / "tap.jsonl"
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 5,
            "system": [{"type": "text", "text": "S"}],
            "messages": [{"role": "user", "content": "Hi"}],
        }
        path.write_text(json.dumps({"tap": body}) + "\n", encoding="utf-8")
        log = import_log(path)
        assert [(r.dialect, r.provider, r.model) for r in log.requests] == [("mira", "anthropic", "claude-sonnet-4-6")]
        assert [s.name for s in log.requests[0].sections if s.kind != "framing"] == ["system[0]", "msg[0] user"]
        assert get_log_format("test-tap").title == "a test tap"
    finally:
        unregister_log_format("test-tap")
    assert "test-tap" not in log_formats()
    with pytest.raises(ValueError, match=r"^unknown format 'test-tap'; formats: anthropic, "):
        unregister_log_format("test-tap")


def test_a_wire_reads_its_logged_bodies_elements() -> None:
    from wm_kernel.dialects.elements import BodyElement, BodyPart
    from wm_kernel.interop.bodies import cut_body

    body = {
        "model": "m",
        "tools": [{"name": "t", "input_schema": {}}],
        "system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"media_type": "image/png", "data": "abcd"}},
                    {"type": "text", "text": "Hi"},
                ],
            }
        ],
        "cache_control": {"type": "ephemeral"},  # automatic caching: a mark on the last block
    }
    assert get_dialect("anthropic").body_elements(body) == [
        BodyElement(("tools", 0), "tool:t", "tool", "tools"),
        BodyElement(("system", 0), "system[0]", "system", "system", (BodyPart(("text",), "split"),), "1h"),
        BodyElement(
            ("messages", 0),
            "msg[0] user",
            "message",
            "user",
            (
                BodyPart(("content", 0), "placeholder", "[0] image", "[image image/png, 4 chars]"),
                BodyPart(("content", 1, "text"), "split", "[1] text"),
            ),
            "5m",
        ),
    ]
    text = json.dumps(body)
    sections = cut_body(text, body, "mira", Splitter())  # MIRA's bodies are read as Anthropic's
    assert "".join(s.raw for s in sections) == text
    assert [(s.name, s.cache) for s in sections if s.kind != "framing"] == [
        ("tool:t", None),
        ("system[0]", "1h"),
        ("msg[0] user [0] image", None),
        ("msg[0] user [1] text", "5m"),
    ]
    assert get_dialect("mira").reads_bodies_like(get_dialect("anthropic"))
    assert not get_dialect("openai").reads_bodies_like(get_dialect("anthropic"))
    assert not get_dialect("bedrock").reads_bodies_like(get_dialect("bedrock"))
    with pytest.raises(ValueError, match=r"^the bedrock wire has no reader of logged bodies$"):
        cut_body("{}", {}, "bedrock", Splitter())


def test_a_wire_says_which_logged_sections_its_cache_serves() -> None:
    from wm_kernel.interop.bodies import Section

    class Blocks:
        def __init__(self, *sections: Section) -> None:
            self.sections = list(sections)

        def prompt_order(self) -> list[Section]:
            return self.sections

        def cache_marked(self) -> bool:
            return any(s.cache for s in self.sections)

    tool, message = Section("tool:t", "tool", "", ""), Section("msg[0] user", "message", "", "")
    marked = Blocks(tool, Section("system[0]", "system", "", "", cache="5m"), Section("system[1]", "system", "", ""))
    marked.sections.append(message)
    names = {wire: [s.name for s in get_dialect(wire).cached_blocks(marked)] for wire in ("anthropic", "openai")}
    # breakpoints: up to the last mark; automatic prefix caching: every tool and system section
    assert names == {"anthropic": ["tool:t", "system[0]"], "openai": ["tool:t", "system[0]", "system[1]"]}
    unmarked = Blocks(tool, Section("system[0]", "system", "", ""), message)
    assert list(get_dialect("anthropic").cached_blocks(unmarked)) == []
    assert [s.name for s in get_dialect("openai-responses").cached_blocks(unmarked)] == ["tool:t", "system[0]"]


def test_every_wire_is_asked_for_its_body_alike() -> None:
    from wm_kernel.core.prompt import ComposedPrompt

    p = ComposedPrompt("Base.", "Now.", ["Before."], ["After."], "HUD")
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    for wire, method in (("anthropic", p.to_anthropic), ("openai", p.to_openai), ("mira", p.to_mira)):
        assert get_dialect(wire).body(p, history, model="m") == method(history, model="m")
    # user= is the current message: the kit's wires end the conversation with it, MIRA's sends it after the HUD
    asked = [*history, {"role": "user", "content": "Now?"}]
    assert get_dialect("anthropic").body(p, history, user="Now?") == p.to_anthropic(asked)
    assert get_dialect("openai").body(p, history, user="Now?") == p.to_openai(asked)
    assert get_dialect("mira").body(p, history, user="Now?")["messages"][-2:] == [
        {"role": "assistant", "content": "HUD"},
        {"role": "user", "content": "Now?"},
    ]
    # model and max_tokens None are the wire's own; the body says what it reserves for the reply
    own = {
        w: get_dialect(w).reserve(get_dialect(w).body(p, history, max_tokens=None))
        for w in ("anthropic", "openai", "mira")
    }
    assert own == {"anthropic": 1024, "openai": None, "mira": 31999}
    assert get_dialect("openai").reserve(get_dialect("openai").body(p, history, max_tokens=300)) == 300
    assert get_dialect("openai").body(p, model=None)["model"] == "gpt-4o"
    with pytest.raises(ValueError, match=r"^the gemini wire has no request body builder$"):
        get_dialect("gemini").body(p)
    with pytest.raises(TypeError, match=r"^user must be a str or None, got int$"):
        get_dialect("anthropic").body(p, user=3)  # type: ignore[arg-type]
