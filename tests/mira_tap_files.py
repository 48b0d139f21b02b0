"""Writing MIRA's traffic tap the way MIRA's utils/llm_tap.py does, from bodies written by hand after
reference mira_wire.md: shared by the tap's import tests and the MIRA stability tests."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wm_kernel import Layout, ManualClock, Profile, Session
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.interop import import_log
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC).timestamp()
CHAT = "claude-sonnet-4-6"
TOOLS = [
    {"name": "reminder_tool", "description": "Reminders.", "input_schema": {"type": "object", "properties": {}}},
    {"name": "web_tool", "description": "Search the web.", "input_schema": {"type": "object", "properties": {}}},
]


def mira_body(
    prompt: ComposedPrompt,
    history: Sequence[tuple[str, str]],
    user: str,
    *,
    tools: Sequence[dict[str, Any]] = (),
    model: str = CHAT,
) -> dict[str, Any]:
    """The body MIRA's orchestrator posts for ``prompt`` (mira_wire.md), written out by hand."""
    system = "\n\n".join(part for part in (prompt["cached_content"], prompt["non_cached_content"]) if part)
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": [{"type": "text", "text": item}]}
        for item in prompt["conversation_prefix_items"]
    ]
    last_assistant = max((i for i, (role, _) in enumerate(history) if role == "assistant"), default=None)
    for index, (role, text) in enumerate(history):
        if role == "user":
            messages.append({"role": "user", "content": text})
        else:
            block: dict[str, Any] = {"type": "text", "text": text}
            if index == last_assistant:
                block["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
            messages.append({"role": "assistant", "content": [block]})
    for index, item in enumerate(prompt["post_history_items"]):
        call = f"toolu_dd_{index:04d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": call, "name": "domaindoc_tool", "input": {"operation": "overview"}}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call,
                        "content": item,
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            }
        )
    messages.append({"role": "assistant", "content": prompt["notification_center"]})
    messages.append({"role": "user", "content": user})
    body: dict[str, Any] = {
        "max_tokens": 31999,
        "messages": messages,
        "model": model,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        "temperature": 1.0,
    }
    if tools:
        body["tools"] = [dict(t) for t in tools]
        body["tools"][-1]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    body["stream"] = True
    return body


def message(model: str, inputs: tuple[int, int, int], output: int = 40, text: str = "Sure.") -> dict[str, Any]:
    """An Anthropic SDK message as ``model_dump()`` gives it."""
    plain, read, written = inputs
    return {
        "id": "msg_01",
        "content": [{"citations": None, "text": text, "type": "text"}],
        "model": model,
        "role": "assistant",
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "type": "message",
        "usage": {
            "cache_creation": {"ephemeral_1h_input_tokens": written, "ephemeral_5m_input_tokens": 0},
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "input_tokens": plain,
            "output_tokens": output,
            "server_tool_use": None,
            "service_tier": "standard",
        },
    }


class Tap:
    """Appends records the way MIRA's utils/llm_tap.py does: one json.dumps(record, default=str,
    ensure_ascii=False) and a "\\n" per record, to llm_requests.jsonl and llm_responses.jsonl."""

    def __init__(self, folder: Path) -> None:
        self.requests = folder / "llm_requests.jsonl"
        self.responses = folder / "llm_responses.jsonl"

    def _write(self, path: Path, record: dict[str, Any]) -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, default=str, ensure_ascii=False))
            handle.write("\n")

    def request(
        self,
        at: float,
        body: dict[str, Any],
        provider: str = "anthropic",
        endpoint: str = "https://api.anthropic.com/v1/messages?beta=true",
    ) -> None:
        self._write(
            self.requests,
            {"ts": at, "provider": provider, "endpoint": endpoint, "model": body.get("model", "unknown"), "body": body},
        )

    def response(
        self, at: float, model: str, data: dict[str, Any], provider: str = "anthropic", endpoint: str | None = None
    ) -> None:
        self._write(
            self.responses, {"ts": at, "provider": provider, "model": model, "endpoint": endpoint, "response": data}
        )


def background_body(model: str = "claude-haiku-4-5", text: str = "Summarise this.") -> dict[str, Any]:
    return {
        "max_tokens": 8192,
        "messages": [{"role": "user", "content": text}],
        "model": model,
        "system": "You write short summaries of conversations.",
        "temperature": 1.0,
    }


def session(base_prompt: str = "You help {first_name}.\n\nBe brief.") -> Session:
    """A session with every built-in trinket holding something, on MIRA's own layout."""
    s = Session(
        base_prompt=base_prompt,
        profile=Profile(first_name="Ada", timezone="Europe/London"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        layout=Layout.original(),
    )
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.\u2028Breathe.", ttl=3)
    s.trinket("LoraTrinket").set_user_model(
        '<mira:observation section="pace" confidence="0.9">Reads on a phone.</mira:observation>'
    )
    s.trinket("ReminderManager").add_reminder("Pay rent", "2026-11-30T08:00:00+00:00")
    s.trinket("ProactiveMemoryTrinket").surface(
        [{"id": "3f2a9c1b-0000", "text": "Ada drinks tea", "created_at": "2026-11-01T00:00:00+00:00"}]
    )
    docs = s.trinket("DomaindocTrinket")
    docs.create_document("garden", "Garden")
    docs.add_section("garden", "soil", "Soil", "Clay.\n\n---\n\nAnd sand.")
    s.trinket("GetContextTrinket").add_success(
        "t1", "budget", "We chose plan B.", [{"point": "B is cheaper", "source": "chat"}]
    )
    s.trinket("GetContextTrinket").add_success("t2", "garden", "Beds face south.")
    return s


def compose(s: Session) -> ComposedPrompt:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GetContextTrinket straggles into MIRA's system prompt
        prompt: ComposedPrompt = s.compose()
    return prompt


def load(path: Path) -> ImportedSession:
    return import_log(path, counter=TokenCounter(EstimateTokenizer()))


def three_turns(folder: Path) -> tuple[Tap, list[ComposedPrompt]]:
    """Three chat turns a minute apart; a segment collapses before the third (the manifest, inside
    MIRA's 1-hour system block, changes); each answered with usage."""
    s = session("You help {first_name}.\n\n" + "Answer plainly, in short sentences. " * 400)
    tap = Tap(folder)
    history: list[tuple[str, str]] = []
    prompts = []
    billed = [(12, 0, 4500), (12, 4500, 30), (12, 0, 4600)]
    for turn, user in enumerate(["Hi", "And rent?", "New topic"]):
        if turn == 2:
            s.collapse_segment(summary="Greetings and rent")
        prompt = compose(s)
        prompts.append(prompt)
        tap.request(T0 + 60 * turn, mira_body(prompt, history, user, tools=TOOLS))
        tap.response(T0 + 60 * turn + 4, CHAT, message(CHAT, billed[turn]))
        history += [("user", user), ("assistant", f"Reply {turn}.")]
        s.clock.advance(minutes=1)
        s.advance_turn()
    return tap, prompts
