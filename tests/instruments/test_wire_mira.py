"""The wire view on MIRA's wire: the body to_mira builds, every character owned once."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import SystemPromptComposer
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.dialects.mira import MiraWireWarning, to_mira
from wm_kernel.instruments.wire import COMPOSER_FRAMING, JOINER_FRAMING, JSON_FRAMING, wire_request
from wm_kernel.session import Session
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

COUNTER = TokenCounter(EstimateTokenizer())
PLACEMENTS = ("system", "conversation_prefix", "post_history", "notification")
text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=40)


def check_owned(wire: Any) -> None:
    """Every character owned exactly once: the spans tile the body, the owners add up to it."""
    assert json.loads(wire.text) == wire.body
    assert sum(o.chars for o in wire.owners) == len(wire.text)
    assert sum(o.bytes for o in wire.owners) == len(wire.text.encode("utf-8"))
    assert wire.spans[0].start == 0 and wire.spans[-1].end == len(wire.text)
    for a, b in zip(wire.spans, wire.spans[1:], strict=False):
        assert a.end == b.start and a.owner != b.owner


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=text,
    sections=st.lists(st.tuples(st.sampled_from(PLACEMENTS), text, st.booleans()), max_size=6),
    hud=text,
    history=st.lists(st.tuples(st.sampled_from(["user", "assistant"]), text), max_size=5),
    tools=st.integers(0, 2),
    user=st.one_of(st.none(), text),
)
def test_every_character_of_a_random_mira_request_has_exactly_one_owner(
    base: str, sections: Any, hud: str, history: list[tuple[str, str]], tools: int, user: str | None
) -> None:
    assume(hud.strip() and (user is None or user.strip()))
    assume(all(t.strip() for role, t in history if role == "user"))  # MIRA refuses an empty message
    sections = [*sections, ("notification", hud, False)]
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
    assume((composed["cached_content"] + composed["non_cached_content"]).strip())  # else MIRA refuses
    messages = [{"role": role, "content": t} for role, t in history]
    schemas = [{"name": f"t{i}", "description": "d", "input_schema": {"type": "object"}} for i in range(tools)]
    options: dict[str, Any] = {} if user is None else {"user": user}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MiraWireWarning)
        wire = wire_request(
            composed, messages, provider="mira", model="claude-sonnet-4-6", tools=schemas, counter=COUNTER, **options
        )
        sent = messages + ([] if user is None else [{"role": "user", "content": user}])
        conversation, last = (sent[:-1], sent[-1]["content"]) if sent and sent[-1]["role"] == "user" else (sent, None)
        assert wire.body == to_mira(composed, conversation, user=last, tools=schemas, model="claude-sonnet-4-6")
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
        elif owner.kind == "message":
            index = int(owner.label.split()[1])
            assert "".join(owner.text) == sent[index]["content"]
    assert set(carried) <= {"(composer)"} | {k for k, v in carried.items() if not v}


def test_a_hand_made_request_owner_by_owner() -> None:
    p = ComposedPrompt("Base.", "Manifest.", ["Summary."], ["Doc."], "HUD")
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Now"},
    ]
    wire = wire_request(
        p,
        history,
        provider="mira",
        model="claude-sonnet-4-6",
        counter=COUNTER,
        tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
    )
    check_owned(wire)
    assert wire.provider == "mira"
    assert wire.body == to_mira(
        p,
        history[:2],
        user="Now",
        model="claude-sonnet-4-6",
        tools=[{"name": "t", "description": "d", "input_schema": {"type": "object"}}],
    )
    owned = {o.label: "".join(o.text) for o in wire.owners}
    assert owned == {
        "tool t": '{"name": "t", "description": "d", "input_schema": {"type": "object"}, '
        '"cache_control": {"type": "ephemeral", "ttl": "1h"}}',
        "conversation_prefix_items[0]": "Summary.",
        "message 0 (user)": "Hi",
        "message 1 (assistant)": "Hello",
        "post_history_items[0]": "Doc.",
        "notification_center": "HUD",
        "message 2 (user)": "Now",
        "cached_content": "Base.",
        "non_cached_content": "Manifest.",
        JSON_FRAMING: "",
        JOINER_FRAMING: "\n\n",
    }
    # the body's order: the messages (prefix, history, post-history, HUD, the user's), then system
    offsets = {
        label: wire.text.index(json.dumps(t)[1:-1])
        for label, t in owned.items()
        if label not in ("tool t", JSON_FRAMING, JOINER_FRAMING)
    }
    assert sorted(offsets, key=offsets.get) == [  # type: ignore[arg-type]
        "conversation_prefix_items[0]",
        "message 0 (user)",
        "message 1 (assistant)",
        "post_history_items[0]",
        "notification_center",
        "message 2 (user)",
        "cached_content",
        "non_cached_content",
    ]
    assert wire.owner_at(wire.text.index("toolu_dd_0000")) == JSON_FRAMING
    # 9 messages on the wire (prefix, 2 of history, tool call and result, HUD, user) + system
    assert wire.framing_estimate == 3 * (7 + 1) + 3


def test_a_session_request_on_mira_s_wire_names_its_sections() -> None:
    s = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), layout=Layout.original())
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", 'Say "é".', ttl=3)
    wire = wire_request(s.compose(), [{"role": "user", "content": "Hi"}], provider="mira", counter=COUNTER)
    check_owned(wire)
    labels = [o.label for o in wire.owners]
    assert labels == [
        "datetime_section",
        "peanutgallery_guidance",
        "message 0 (user)",
        "base_prompt",
        "conversation_manifest",
        JSON_FRAMING,
        COMPOSER_FRAMING,
        JOINER_FRAMING,
    ]
    # the non-cached manifest is inside MIRA's one system block, after the cached text
    system = wire.body["system"]
    assert len(system) == 1 and system[0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert wire.owner_at(wire.text.index("<conversation_manifest>")) == "conversation_manifest"


def test_mira_refuses_an_empty_hud_in_the_wire_view_too() -> None:
    with pytest.raises(ValueError, match="^MIRA refuses to send: the notification centre \\(HUD\\) is empty$"):
        wire_request(ComposedPrompt("Base.", "", [], [], ""), provider="mira", counter=COUNTER)


def test_request_view_and_magic_on_mira_s_wire(ip: Any, session: Session) -> None:
    from IPython.core.error import UsageError

    from wm_kernel.display.wire_view import request_view

    original = Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), layout=Layout.original())
    original.compose()
    view = request_view(original, history=[{"role": "user", "content": "Hi"}])
    assert view.wire.provider == "mira"  # the original's layout: MIRA's wire by default
    assert view.reserved == 31_999  # MIRA's own max_tokens, not the model's output limit
    assert view.headline().startswith(
        f"turn 0, mira request for claude-sonnet-4-6: {view.wire.tokens:,} tokens "
        f"+ 31,999 reserved for the reply (the mira wire's max_tokens) = {view.used:,} "
        f"of 200,000 ("
    )
    assert request_view(original, wire="anthropic").wire.provider == "anthropic"
    ip.run_line_magic("compose", "")
    shown = ip.run_line_magic("request", "--wire mira --user Hello")
    assert shown.wire.provider == "mira" and shown.wire.body["messages"][-1] == {"role": "user", "content": "Hello"}
    assert ip.run_line_magic("request", "--user Hello").wire.provider == "anthropic"
    with pytest.raises(UsageError, match=r"^gpt-5.4 is a openai model; the mira wire sends to anthropic models$"):
        ip.run_line_magic("request", "--model gpt-5.4 --wire mira")
    with pytest.raises(UsageError, match=r"^unknown wire 'x'; wires: "):
        ip.run_line_magic("request", "--wire x")


def test_user_is_the_current_message_on_every_wire() -> None:
    p = ComposedPrompt("Base.", "", [], [], "HUD")
    mira = wire_request(p, provider="mira", user="Now", counter=COUNTER)
    assert mira.body["messages"][-1] == {"role": "user", "content": "Now"}
    assert mira.owner_at(mira.text.index('"Now"') + 1) == "message 0 (user)"
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    chat = wire_request(p, history, provider="openai", user="Now", counter=COUNTER)
    assert "user" not in chat.body
    assert chat.body["messages"][-1] == {"role": "user", "content": "Now\n\nHUD"}  # the HUD joins the current message
    assert chat.owner_at(chat.text.index("Now") + 1) == "message 2 (user)"
    check_owned(chat)
