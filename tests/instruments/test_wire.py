"""The wire view: every byte of a request body owned once, tools, the window, %request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import SystemPromptComposer
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.profile import Profile
from wm_kernel.instruments.wire import COMPOSER_FRAMING, JSON_FRAMING, tool_schema, wire_request
from wm_kernel.session import Session
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

COUNTER = TokenCounter(EstimateTokenizer())
PLACEMENTS = ("system", "conversation_prefix", "post_history", "notification")
text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=40)


def check_owned(wire: Any) -> None:
    """Every character owned once; owners add up to the body; the body is the builder's."""
    assert json.loads(wire.text) == wire.body
    assert sum(o.chars for o in wire.owners) == len(wire.text)
    assert sum(o.bytes for o in wire.owners) == len(wire.text.encode("utf-8"))
    assert wire.spans[0].start == 0 and wire.spans[-1].end == len(wire.text)
    for a, b in zip(wire.spans, wire.spans[1:], strict=False):
        assert a.end == b.start and a.owner != b.owner


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=text,
    sections=st.lists(st.tuples(st.sampled_from(PLACEMENTS), text, st.booleans()), max_size=6),
    history=st.lists(text, max_size=4),
    provider=st.sampled_from(["anthropic", "openai"]),
    tools=st.integers(0, 2),
)
def test_every_character_of_a_random_request_has_exactly_one_owner(
    base: str, sections: Any, history: list[str], provider: str, tools: int
) -> None:
    layout = Layout(
        {
            p: ["base_prompt"] * (p == "system") + [f"s{i}" for i, (q, _, _) in enumerate(sections) if q == p]
            for p in PLACEMENTS
        }
    )
    composer = SystemPromptComposer(layout=layout)
    composer.set_base_prompt(base)
    for i, (_, content, cached) in enumerate(sections):
        composer.add_section(f"s{i}", content, cache_policy=cached)
    composed = composer.compose()
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(history)]
    schemas = [{"name": f"t{i}", "description": "d", "input_schema": {"type": "object"}} for i in range(tools)]
    wire = wire_request(composed, messages, provider=provider, model="m", tools=schemas, counter=COUNTER)
    check_owned(wire)
    # each section carries, in the body, exactly the characters the blame map gives it
    carried: dict[str, str] = {}
    for span in composed.blame():
        key, _, index = span.key.partition("[")
        whole = composed[key][int(index[:-1])] if index else composed[key]
        carried[span.section] = carried.get(span.section, "") + whole[span.start : span.end]
    for owner in wire.owners:
        if owner.kind == "section":
            assert "".join(owner.text) == carried.pop(owner.label)
    assert set(carried) <= {"(composer)"}


def session() -> Session:
    s = Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
    )
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", 'Say "é" & <b>.', ttl=3)
    s.compose()
    return s


def lookup(city: str, days: int = 1) -> dict:  # type: ignore[type-arg]
    """Weather for a city.

    More detail that is not the description."""
    return {}


def test_the_owners_of_a_session_request_by_name() -> None:
    wire = wire_request(
        session().composed,
        [{"role": "user", "content": "Hi"}],
        provider="anthropic",
        model="m",
        tools=[lookup],
        counter=COUNTER,
    )
    check_owned(wire)
    labels = [o.label for o in wire.owners]
    assert labels == [
        "tool lookup",
        "base_prompt",
        "conversation_manifest",
        "message 0 (user)",
        "datetime_section",
        "peanutgallery_guidance",
        JSON_FRAMING,
        COMPOSER_FRAMING,
    ]
    guidance = next(o for o in wire.owners if o.label == "peanutgallery_guidance")
    assert guidance.placement == "notification" and guidance.trinket == "PeanutGalleryTrinket"
    assert 'Say "é" &amp; &lt;b&gt;.' in "".join(guidance.text)
    # the escaped form in the body costs more bytes than characters (é is two bytes)
    assert guidance.bytes > guidance.chars
    assert wire.owner_at(wire.text.index("Weather for a city.")) == "tool lookup"
    assert wire.owner_at(0) == JSON_FRAMING


def test_openai_joins_injected_parts_with_owned_blank_lines() -> None:
    wire = wire_request(
        session().composed, [{"role": "user", "content": "Hi"}], provider="openai", model="gpt-x", counter=COUNTER
    )
    check_owned(wire)
    joins = next(o for o in wire.owners if o.label == "joins between parts")
    assert joins.text == ["\n\n", "\n\n"]  # system: cached + non-cached; user: "Hi" + the HUD


def test_tool_schema_from_a_callable_and_bad_tools() -> None:
    assert tool_schema(lookup) == {
        "name": "lookup",
        "description": "Weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    }
    with pytest.raises(ValueError, match="needs a non-empty 'name'"):
        tool_schema({"description": "x"})
    with pytest.raises(ValueError, match="a def, not a lambda"):
        tool_schema(lambda x: x)
    with pytest.raises(TypeError, match="JSON schema dict or a Python callable"):
        tool_schema(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="two tools share the name 'lookup'"):
        wire_request(session().composed, provider="anthropic", tools=[lookup, lookup], counter=COUNTER)
    with pytest.raises(
        ValueError,
        match=r"^the gemini wire has no request body builder \(wires with one: "
        r"anthropic, openai, mira\)$",
    ):
        wire_request(session().composed, provider="gemini", counter=COUNTER)
    with pytest.raises(
        ValueError,
        match=r"^unknown wire 'mistral'; wires: anthropic, openai, openai-responses, gemini, bedrock, mira$",
    ):
        wire_request(session().composed, provider="mistral", counter=COUNTER)


def test_request_view_against_the_window() -> None:
    from wm_kernel.display.wire_view import request_view

    s = session()
    view = request_view(s, model="claude-sonnet-4-6", history=[{"role": "user", "content": "Hi"}])
    # nothing sent: the body send would post, with the wire's own max_tokens, which is the reserve
    assert view.window == 200_000 and view.reserved == 1024 == view.wire.body["max_tokens"]
    assert view.used == view.wire.tokens + 1024
    assert view.headline().startswith(
        f"turn 0, anthropic request for claude-sonnet-4-6: "
        f"{view.wire.tokens:,} tokens + 1,024 reserved for the reply (the "
        f"anthropic wire's max_tokens) = "
        f"{view.used:,} of 200,000 ("
    )
    # a body that names no max_tokens (OpenAI's, none sent) reserves the profile's max_output
    chat = request_view(s, model="gpt-5.4", history=[{"role": "user", "content": "Hi"}])
    assert "max_completion_tokens" not in chat.wire.body and chat.reserved == 128_000
    assert "+ 128,000 reserved for the reply (the profile's max_output: nothing sent) = " in chat.headline()
    frame = view.frame()
    assert frame["tokens"].sum() == view.used
    assert frame.iloc[-1]["owner"] == "reserved for the reply"
    html = view._repr_html_()
    assert "&lt;" not in view.headline() and "wm-wire-bar" in html and "$" not in html
    with pytest.raises(ValueError, match="turn 7 was not recorded"):
        request_view(s, 7)


def test_request_magic(ip: Any) -> None:
    from IPython.core.error import UsageError

    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00 --first-name Ada")
    ip.run_line_magic("compose", "")
    view = ip.run_line_magic("request", "--model gpt-5.4 --user Hello")
    assert view.wire.provider == "openai" and view.window == 400_000
    # the view about gpt-5.4 counts with gpt-5.4's counter, whatever the session counts with
    assert view.counter_name == "tiktoken o200k_base" and "counted with tiktoken o200k_base" in view.headline()
    from wm_kernel.tokens import counter_for

    assert view.wire.owners[0].tokens == counter_for("gpt-5.4").count(view.wire.owners[0].text[0])
    assert any(o.label == "message 0 (user)" for o in view.wire.owners)
    with pytest.raises(UsageError, match="is a google model"):
        ip.run_line_magic("request", "--model gemini-2.5-pro")
    with pytest.raises(UsageError, match="--tools: cannot read /nonexistent.json"):
        ip.run_line_magic("request", "--tools /nonexistent.json")
