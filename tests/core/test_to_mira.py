"""to_mira: the body MIRA's orchestrator posts (shared/reference/mira_wire.md), field for field."""

from __future__ import annotations

import copy
import json
import warnings
from typing import Any

import pytest

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.dialects.mira import MiraWireWarning, model_generation, to_mira

H1 = {"type": "ephemeral", "ttl": "1h"}
M5 = {"type": "ephemeral"}
HUD = "═══\nHUD - Runtime state\n<mira:hud>\nnow\n</mira:hud>\n═══"


def prompt(
    cached: str = "You are MIRA.",
    non_cached: str = "",
    prefix: list[str] | None = None,
    post: list[str] | None = None,
    hud: str = HUD,
) -> ComposedPrompt:
    return ComposedPrompt(cached, non_cached, prefix or [], post or [], hud)


def test_the_smallest_body_in_the_sdks_key_order() -> None:
    body = to_mira(prompt())
    assert body == {
        "max_tokens": 31999,
        "messages": [{"role": "assistant", "content": HUD}],
        "model": "claude-sonnet-4-6",
        "system": [{"type": "text", "text": "You are MIRA.", "cache_control": H1}],
        "temperature": 1.0,
        "stream": True,
    }
    assert list(body) == ["max_tokens", "messages", "model", "system", "temperature", "stream"]
    # what goes on the wire, byte for byte (json.dumps keeps the order)
    assert json.dumps(body, ensure_ascii=False, separators=(",", ":")) == (
        '{"max_tokens":31999,"messages":[{"role":"assistant","content":"═══\\nHUD - Runtime state\\n<mira:hud>'
        '\\nnow\\n</mira:hud>\\n═══"}],"model":"claude-sonnet-4-6","system":[{"type":"text","text":"You are '
        'MIRA.","cache_control":{"type":"ephemeral","ttl":"1h"}}],"temperature":1.0,"stream":true}'
    )


def test_every_part_in_its_place() -> None:
    tools = [
        {"name": "search", "description": "Find.", "input_schema": {"type": "object", "properties": {}}},
        {"name": "remember", "description": "Keep.", "input_schema": {"type": "object"}},
    ]
    given = copy.deepcopy(tools)
    history = [
        {"role": "user", "content": "[9:00am] Hi"},
        {"role": "assistant", "content": "[9:00am] Hello."},
        {"role": "user", "content": "[9:01am] And?"},
        {"role": "assistant", "content": "[9:01am] Yes."},
    ]
    body = to_mira(
        prompt(
            "Base.\n\nTools.",
            "<manifest>today</manifest>",
            prefix=["<summary>s1</summary>"],
            post=["<domaindoc>d</domaindoc>"],
        ),
        history,
        user="[9:02am] Now?",
        tools=tools,
        model="claude-opus-4-8",
    )
    assert body == {
        "max_tokens": 31999,
        "messages": [
            {"role": "assistant", "content": [{"type": "text", "text": "<summary>s1</summary>"}]},
            {"role": "user", "content": "[9:00am] Hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "[9:00am] Hello."}]},
            {"role": "user", "content": "[9:01am] And?"},
            {"role": "assistant", "content": [{"type": "text", "text": "[9:01am] Yes.", "cache_control": H1}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_dd_0000",
                        "name": "domaindoc_tool",
                        "input": {"operation": "overview"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_dd_0000",
                        "content": "<domaindoc>d</domaindoc>",
                        "cache_control": M5,
                    }
                ],
            },
            {"role": "assistant", "content": HUD},
            {"role": "user", "content": "[9:02am] Now?"},
        ],
        "model": "claude-opus-4-8",
        "system": [{"type": "text", "text": "Base.\n\nTools.\n\n<manifest>today</manifest>", "cache_control": H1}],
        "temperature": 1.0,
        "tools": [
            {"name": "search", "description": "Find.", "input_schema": {"type": "object", "properties": {}}},
            {"name": "remember", "description": "Keep.", "input_schema": {"type": "object"}, "cache_control": H1},
        ],
        "stream": True,
    }
    assert tools == given  # the caller's dicts are not changed
    assert list(body) == ["max_tokens", "messages", "model", "system", "temperature", "tools", "stream"]


def test_no_merging_of_messages_of_one_role_and_a_long_history() -> None:
    history = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    history += [{"role": r, "content": f"{r} {i}"} for i in range(30) for r in ("assistant", "user")]
    body = to_mira(prompt(prefix=["p1", "p2"]), history, user="last")
    messages = body["messages"]
    assert [m["role"] for m in messages[:4]] == ["assistant", "assistant", "user", "user"]
    assert messages[2:4] == [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert len(messages) == 2 + 62 + 1 + 1
    marked = [
        i
        for i, m in enumerate(messages)
        if isinstance(m["content"], list) and any("cache_control" in b for b in m["content"])
    ]
    assert marked == [62]  # only the last assistant message of the history: "assistant 29"
    assert messages[62] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "assistant 29", "cache_control": H1}],
    }
    assert messages[63:] == [
        {"role": "user", "content": "user 29"},
        {"role": "assistant", "content": HUD},
        {"role": "user", "content": "last"},
    ]


def test_several_post_history_items_each_a_tool_call_with_five_minutes() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # system + 3 marks: four, the API's limit, no warning
        body = to_mira(prompt(post=["one", "", "three"]))
    assert body["messages"] == [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_dd_0000",
                    "name": "domaindoc_tool",
                    "input": {"operation": "overview"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_dd_0000", "content": "one", "cache_control": M5}],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_dd_0001",
                    "name": "domaindoc_tool",
                    "input": {"operation": "overview"},
                }
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_dd_0001", "content": "", "cache_control": M5}],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_dd_0002",
                    "name": "domaindoc_tool",
                    "input": {"operation": "overview"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_dd_0002", "content": "three", "cache_control": M5}
            ],
        },
        {"role": "assistant", "content": HUD},
    ]


def test_more_than_four_breakpoints_are_sent_as_mira_sends_them_with_a_warning() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    with pytest.warns(
        MiraWireWarning,
        match=r"^MIRA's layout puts 5 cache breakpoints in this request \(2 "
        r"post-history items, one 5-minute breakpoint each\); the Messages "
        r"API accepts at most 4 and refuses it$",
    ):
        body = to_mira(prompt(post=["a", "b"]), history, tools=[{"name": "t", "input_schema": {}}])
    marks = [
        b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"] if "cache_control" in b
    ]
    assert len(marks) + len(body["system"]) + 1 == 5


def test_an_empty_prefix_item_stays_an_empty_text_block_with_a_warning() -> None:
    with pytest.warns(MiraWireWarning, match=r"^messages\[1\] is an empty text block"):
        body = to_mira(prompt(prefix=["first", ""]))
    assert body["messages"][:2] == [
        {"role": "assistant", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
    ]


def test_an_empty_part_is_left_out_of_the_system_block() -> None:
    assert to_mira(prompt("Only cached.", ""))["system"][0]["text"] == "Only cached."
    assert to_mira(prompt("A", "B"))["system"][0]["text"] == "A\n\nB"


def test_an_empty_cached_part_sends_the_non_cached_part_alone() -> None:
    # MIRA's orchestrator sends it: only an empty message is refused, and this system message is not
    body = to_mira(prompt("", "Only the manifest."), user="Hi")
    assert body == {
        "max_tokens": 31999,
        "messages": [{"role": "assistant", "content": HUD}, {"role": "user", "content": "Hi"}],
        "model": "claude-sonnet-4-6",
        "system": [{"type": "text", "text": "Only the manifest.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "temperature": 1.0,
        "stream": True,
    }
    with_effort = to_mira(prompt("", "N"), effort="low", model="claude-sonnet-4-5")
    assert with_effort["system"][0]["text"] == "N" and with_effort["max_tokens"] == 31999 + 1024


def test_what_mira_sends_although_the_api_may_not() -> None:
    # blocks are never empty lists, so MIRA's check passes them: an empty assistant turn of the
    # history, an empty prefix item and an empty post-history item are all sent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MiraWireWarning)
        body = to_mira(
            prompt("C", "", prefix=[""], post=[""]),
            [{"role": "user", "content": "u"}, {"role": "assistant", "content": ""}],
            user="now",
        )
    assert [m["role"] for m in body["messages"]] == [
        "assistant",
        "user",
        "assistant",
        "assistant",
        "user",
        "assistant",
        "user",
    ]


@pytest.mark.parametrize(
    "model, effort, expected",
    [
        # before 4.6: thinking enabled with the effort's budget, added to max_tokens
        (
            "claude-sonnet-4-5",
            "high",
            {"max_tokens": 31999 + 8192, "thinking": {"type": "enabled", "budget_tokens": 8192}},
        ),
        (
            "claude-sonnet-4-5",
            "max",
            {"max_tokens": 31999 + 31999, "thinking": {"type": "enabled", "budget_tokens": 31999}},
        ),
        # 4.6 and later: adaptive thinking and output_config, max_tokens as it was
        (
            "claude-sonnet-4-6",
            "low",
            {
                "max_tokens": 31999,
                "output_config": {"effort": "low"},
                "thinking": {"type": "adaptive", "display": "summarized"},
            },
        ),
        (
            "claude-opus-4-8",
            "medium",
            {
                "max_tokens": 31999,
                "output_config": {"effort": "medium"},
                "thinking": {"type": "adaptive", "display": "summarized"},
            },
        ),
        # haiku: clamped to 8192 first; 4.5 is before 4.6, so the budget is added
        ("claude-haiku-4-5", None, {"max_tokens": 8192, "temperature": 1.0}),
        (
            "claude-haiku-4-5",
            "low",
            {"max_tokens": 8192 + 1024, "thinking": {"type": "enabled", "budget_tokens": 1024}},
        ),
        (
            "claude-haiku-4-5-20251001",
            "medium",
            {"max_tokens": 8192 + 2048, "thinking": {"type": "enabled", "budget_tokens": 2048}},
        ),
    ],
)
def test_effort_by_model_generation(model: str, effort: str | None, expected: dict[str, Any]) -> None:
    body = to_mira(prompt(), model=model, effort=effort)
    fields = {k: v for k, v in body.items() if k not in ("messages", "model", "system", "stream")}
    assert fields == expected
    order = ["max_tokens", "messages", "model", "output_config", "system", "temperature", "thinking", "stream"]
    assert list(body) == [k for k in order if k in body]


def test_model_generation() -> None:
    assert model_generation("claude-sonnet-4-6") == (4, 6)
    assert model_generation("claude-haiku-4-5-20251001") == (4, 5)
    assert model_generation("claude-sonnet-4-20250514") == (4, 0)
    assert model_generation("claude-opus-5") == (5, 0)
    assert model_generation("my-model") == (0, 0)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"composed": prompt(hud="")}, ValueError, "MIRA refuses to send: the notification centre (HUD) is empty"),
        ({"composed": prompt(hud=" \n\t")}, ValueError, "MIRA refuses to send: the notification centre (HUD) is empty"),
        (
            {"composed": prompt(cached="", non_cached="")},
            ValueError,
            "MIRA refuses to send: the system message is empty (the cached and non-cached content are both empty)",
        ),
        (
            {"composed": prompt(cached="", non_cached=" \n")},
            ValueError,
            "MIRA refuses to send: the system message is empty (the cached and non-cached content are both empty)",
        ),
        ({"user": ""}, ValueError, "MIRA refuses to send: the current user message is empty"),
        ({"user": " \t\n"}, ValueError, "MIRA refuses to send: the current user message is empty"),
        (
            {
                "history": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "yo"},
                    {"role": "user", "content": "  "},
                ]
            },
            ValueError,
            "MIRA refuses to send: history[2], a user message, is empty",
        ),
        ({"effort": "extreme"}, ValueError, "effort must be one of low, medium, high, max or None, got 'extreme'"),
        ({"max_tokens": 0}, ValueError, "max_tokens must be a positive int, got 0"),
        ({"tools": [{"description": "x"}]}, ValueError, "tools[0] needs a non-empty 'name'"),
        ({"tools": {"name": "t"}}, TypeError, "tools must be a list of tool definitions (dicts)"),
        ({"user": 3}, TypeError, "user must be a str or None, got int"),
        (
            {"history": [{"role": "system", "content": "x"}]},
            ValueError,
            "history[0].role must be 'user' or 'assistant', got 'system'",
        ),
    ],
)
def test_what_mira_refuses_is_one_clear_error(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    composed = kwargs.pop("composed", prompt())
    with pytest.raises(error) as raised:
        to_mira(composed, **kwargs)
    assert str(raised.value) == message


def test_the_method_is_the_function() -> None:
    p = prompt("C", "N", prefix=["x"], post=["d"])
    history = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
    assert p.to_mira(history, user="now", effort="high") == to_mira(p, history, user="now", effort="high")
    assert p.to_mira() == to_mira(dict(p))  # a plain five-key dict builds the same body
