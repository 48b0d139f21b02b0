"""Export: Messages API and Chat Completions request bodies, exact shapes, alternation, bad input."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest

from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.dialects.anthropic import to_anthropic
from wm_kernel.dialects.openai_chat import to_openai

PROMPT = ComposedPrompt("You help Ada.", "<manifest/>", ["<prefix/>"], ["<doc/>"], "<hud/>")
CHAT = [
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "Plan my day."},
]


def roles(messages):
    return [m["role"] for m in messages]


def alternates(messages):
    return all(a["role"] != b["role"] for a, b in pairwise(messages))


def test_anthropic_body_in_full():
    body = PROMPT.to_anthropic(history=CHAT, model="claude-x", max_tokens=500, temperature=0.2)
    assert body == {
        "model": "claude-x",
        "max_tokens": 500,
        "system": [
            {"type": "text", "text": "You help Ada.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "<manifest/>"},
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<prefix/>"}, {"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": "Hello!"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Plan my day."},
                    {"type": "text", "text": "<doc/>"},
                    {"type": "text", "text": "<hud/>"},
                ],
            },
        ],
        "temperature": 0.2,
    }
    assert json.loads(json.dumps(body)) == body


def test_openai_body_in_full():
    body = PROMPT.to_openai(history=CHAT, model="gpt-x", max_tokens=500)
    assert body == {
        "model": "gpt-x",
        "messages": [
            {"role": "system", "content": "You help Ada.\n\n<manifest/>"},
            {"role": "user", "content": "<prefix/>\n\nHi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Plan my day.\n\n<doc/>\n\n<hud/>"},
        ],
        "max_completion_tokens": 500,
    }


@pytest.mark.parametrize("history", [[], CHAT[:1], CHAT[:2], CHAT, [CHAT[1]], [CHAT[1], CHAT[2]]])
def test_roles_alternate_whatever_the_history(history):
    for body in (to_anthropic(PROMPT, history), to_openai(PROMPT, history)):
        messages = [m for m in body["messages"] if m["role"] != "system"]
        assert alternates(messages)
        assert messages[-1]["role"] == "user"
        text = json.dumps(messages)
        assert text.index("<prefix/>") < text.index("<doc/>") < text.index("<hud/>")


def test_history_ending_with_the_assistant_or_empty_gets_a_final_user_message():
    body = to_anthropic(PROMPT, CHAT[:2], model="m")
    assert body["messages"][1:] == [
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": [{"type": "text", "text": "<doc/>"}, {"type": "text", "text": "<hud/>"}]},
    ]
    assert to_anthropic(PROMPT, [], model="m")["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<prefix/>"},
                {"type": "text", "text": "<doc/>"},
                {"type": "text", "text": "<hud/>"},
            ],
        }
    ]


def test_empty_parts_are_left_out():
    bare = ComposedPrompt("", "", [], [], "")
    assert to_anthropic(bare, CHAT[:1], model="m", max_tokens=10) == {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    assert to_openai(bare, CHAT[:1], model="m") == {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
    uncached_only = ComposedPrompt("", "note", [], [], "")
    assert to_anthropic(uncached_only, model="m")["system"] == [{"type": "text", "text": "note"}]
    assert to_anthropic(PROMPT, model="m", cache=False)["system"][0] == {"type": "text", "text": "You help Ada."}


def test_a_plain_five_key_dict_exports_too():
    assert to_openai(PROMPT.as_dict(), CHAT, model="m") == to_openai(PROMPT, CHAT, model="m")


@pytest.mark.parametrize(
    "history, error, message",
    [
        (
            [{"role": "system", "content": "x"}],
            ValueError,
            "history[0].role must be 'user' or 'assistant', got 'system'",
        ),
        ([{"role": "user", "content": ["x"]}], TypeError, "history[0].content must be a str, got list"),
        (
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            ValueError,
            "history[1] is a second 'user' message in a row; the Messages API needs user and assistant "
            "messages to alternate",
        ),
        (
            [{"role": "user", "content": "a", "name": "x"}],
            ValueError,
            "history[0] has unknown keys ['name']; expected role and content",
        ),
        (["hi"], TypeError, "history[0] must be a dict with role and content, got str"),
        ("hi", TypeError, "history must be a list of {'role', 'content'} messages"),
    ],
)
def test_bad_history_is_a_clear_error(history, error, message):
    with pytest.raises(error) as caught:
        to_anthropic(PROMPT, history)
    assert str(caught.value) == message


def test_other_bad_input():
    with pytest.raises(ValueError, match="^system, messages is built from the composed prompt"):
        to_anthropic(PROMPT, system="x", messages=[])
    with pytest.raises(ValueError, match="^max_tokens must be a positive int, got 0$"):
        to_anthropic(PROMPT, max_tokens=0)
    with pytest.raises(ValueError, match="^composed prompt is missing keys: notification_center$"):
        to_openai(
            {"cached_content": "", "non_cached_content": "", "conversation_prefix_items": [], "post_history_items": []}
        )
    # consecutive user messages are fine for Chat Completions
    assert roles(to_openai(PROMPT, [CHAT[0], CHAT[2]], model="m")["messages"]) == ["system", "user", "user"]
