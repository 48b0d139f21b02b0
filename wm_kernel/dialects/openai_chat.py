"""The OpenAI Chat Completions wire (``ComposedPrompt.to_openai``).

Body: :func:`to_openai` (one system message, injected parts joined to the neighbouring user
message). Caching is automatic (the longest common prefix), so an imported
request's tools and system text are all its cached part. Usage: ``prompt_tokens`` *includes* the
cached (``prompt_tokens_details.cached_tokens``) and written (``cache_write_tokens``) tokens. Send:
``client.chat.completions.create`` of the ``openai`` SDK (streamed with ``include_usage``). Logs:
JSON Lines of Chat Completions bodies (format ``openai.chat``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from wm_kernel.dialects.base import (
    BodyRequest,
    CallResult,
    Dialect,
    PartRef,
    Slot,
    StoredResponse,
    TurnPieces,
    add_options,
    check_model,
    conversation,
    prompt_parts,
    with_user,
)
from wm_kernel.dialects.counts import DEFAULT_TTL, UsageCounts, usage_details, usage_int
from wm_kernel.dialects.elements import (
    BodyElement,
    BodyPart,
    LoggedBlock,
    LoggedBlocks,
    Path,
    message_parts,
    tool_section,
)
from wm_kernel.dialects.kit import kit_cache_layout, kit_wire_parts

DEFAULT_OPENAI_MODEL = "gpt-4o"


def to_openai(
    composed: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]] = (),
    *,
    model: str = DEFAULT_OPENAI_MODEL,
    max_tokens: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Chat Completions request body, as plain data (``ComposedPrompt.to_openai``): laid out as
    ``wm_kernel.dialects.anthropic.to_anthropic`` lays it, with one ``{"role": "system"}`` message
    (cached and non-cached content joined by a blank line) and injected parts joined to the
    neighbouring user message's text by blank lines (content stays a string). ``max_tokens``
    becomes ``max_completion_tokens`` (left out when None); ``extra`` keys are copied into the
    body (never ``system`` or ``messages``).

    >>> p = {"cached_content": "You help.", "non_cached_content": "Today's note.",
    ...      "conversation_prefix_items": [], "post_history_items": [], "notification_center": "HUD"}
    >>> to_openai(p, history=[{"role": "user", "content": "Hi"}], model="m")["messages"][1]
    {'role': 'user', 'content': 'Hi\\n\\nHUD'}
    """
    cached, non_cached, before, after = prompt_parts(composed)
    history_messages = conversation(history, alternate=False)
    check_model(model)
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError(f"max_tokens must be a positive int or None, got {max_tokens!r}")
    messages: list[dict[str, Any]] = list(history_messages)
    if before:
        if messages and messages[0]["role"] == "user":
            messages[0] = {"role": "user", "content": "\n\n".join(before + [messages[0]["content"]])}
        else:
            messages.insert(0, {"role": "user", "content": "\n\n".join(before)})
    if after:
        if messages and messages[-1]["role"] == "user":
            messages[-1] = {"role": "user", "content": "\n\n".join([messages[-1]["content"], *after])}
        else:
            messages.append({"role": "user", "content": "\n\n".join(after)})
    system = "\n\n".join(p for p in (cached, non_cached) if p)
    if system:
        messages.insert(0, {"role": "system", "content": system})
    body: dict[str, Any] = {"model": model, "messages": messages}
    if max_tokens is not None:
        body["max_completion_tokens"] = max_tokens
    return add_options(body, extra)


def chat_items(items: list[Any], at: Path, prefix: str) -> list[BodyElement]:
    """Chat messages (or Responses input items) at ``at``: the system and developer messages that
    open them are the system prompt, later ones stay among the messages."""
    elements = []
    leading = True
    for index, message in enumerate(items):
        leading = leading and isinstance(message, Mapping) and message.get("role") in ("system", "developer")
        elements.append(chat_item(message, (*at, index), f"{prefix}[{index}]", leading))
    return elements


def chat_item(message: Any, at: Path, name: str, system: bool) -> BodyElement:
    """One Chat message or Responses input item (a function call, its output...) at ``at``, named
    ``{name} {role or type}``: the system prompt's when ``system``, else a message."""
    if not isinstance(message, Mapping):
        return BodyElement(at, name, "message", None)
    role = str(message.get("role") or message.get("type") or "?")
    parts = message_parts(message)
    if "output" in message and isinstance(message["output"], str):  # function_call_output
        parts.append(BodyPart(("output",), "split", "output"))
    return BodyElement(at, f"{name} {role}", "system" if system else "message", role, tuple(parts))


def chat_elements(body: Mapping[str, Any]) -> list[BodyElement]:
    """A Chat Completions body's elements: tools (named by their function), then messages."""
    elements: list[BodyElement] = []
    for key, value in body.items():
        if key == "tools" and isinstance(value, list):
            for index, tool in enumerate(value):
                function = tool.get("function") if isinstance(tool, Mapping) else None
                name = function.get("name", index) if isinstance(function, Mapping) else index
                elements.append(BodyElement(("tools", index), tool_section(name), "tool", "tools"))
        elif key == "messages" and isinstance(value, list):
            elements += chat_items(value, ("messages",), "msg")
    return elements


def automatic_prefix(blocks: LoggedBlocks) -> list[LoggedBlock]:
    """Under automatic prefix caching (no breakpoints) every tool and system section of a logged
    request is its cached part."""
    return [block for block in blocks.prompt_order() if block.kind != "message"]


def read_openai_usage(usage: Mapping[str, Any], where: str, keys: tuple[str, str, str]) -> UsageCounts:
    """An OpenAI-shaped usage object's counts (``keys``: the prompt, details and output keys).

    The prompt count includes the tokens read from and written to the cache. They are named in the
    details (``cached_tokens``, gpt-5.6's ``cache_write_tokens``) or, as LiteLLM writes an
    Anthropic model's usage, beside the counts (``cache_read_input_tokens``,
    ``cache_creation_input_tokens``). OpenRouter's ``cost`` (the dollars it billed) is kept."""
    prompt_key, details_key, output_key = keys
    prompt = usage_int(usage, prompt_key, where)
    details = usage_details(usage, details_key, where)
    cached = usage_int(details, "cached_tokens", where) or usage_int(usage, "cache_read_input_tokens", where)
    written = usage_int(details, "cache_write_tokens", where) or usage_int(usage, "cache_creation_input_tokens", where)
    if cached + written > prompt:
        raise ValueError(
            f"{where}: cached ({cached}) and written ({written}) tokens exceed {prompt_key} "
            f"({prompt}), which includes them"
        )
    cost = usage.get("cost")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost >= 0):
        raise ValueError(f"{where}: cost must be a non-negative number, got {cost!r}")
    return UsageCounts(
        prompt - cached - written,
        cached,
        {DEFAULT_TTL: written},
        usage_int(usage, output_key, where),
        billed_usd=None if cost is None else float(cost),
    )


class OpenAIChatDialect(Dialect):
    """The OpenAI Chat Completions wire (see the module docstring)."""

    name = "openai"
    rank = 20
    aliases = ("openai.chat", "azure.ai.openai")
    provider = "openai"
    serves = ("openai",)
    default_for = ("openai",)
    sdk = "openai"
    client = "openai.OpenAI"
    title = "an OpenAI Chat Completions"
    default_model = "gpt-5.4"
    log_format = "openai.chat"
    log_priority = 20

    def build(self, request: BodyRequest) -> dict[str, Any]:
        options, tools = request.options, request.tools
        if tools:  # schemas ({"name", "description", "input_schema"}) become functions; others stay
            options["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters": t["input_schema"],
                    },
                }
                if "input_schema" in t
                else dict(t)
                for t in tools
            ]
        return to_openai(request.composed, with_user(request.history, request.user), **options)

    def reserve(self, body: Mapping[str, Any]) -> int | None:
        asked = body.get("max_completion_tokens", body.get("max_tokens"))
        return asked if isinstance(asked, int) and not isinstance(asked, bool) else None

    def wire_parts(self, composed: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> list[PartRef]:
        return kit_wire_parts(composed, history)

    plain_history = True

    def cache_layout(self, turn: TurnPieces) -> list[Slot]:
        return kit_cache_layout(turn)

    usage_title = "OpenAI Chat (and LiteLLM, OpenRouter)"
    usage_anchor = ("prompt_tokens",)
    usage_keys = (
        "completion_tokens",
        "total_tokens",
        "prompt_tokens_details",
        "completion_tokens_details",
        "cost",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    )

    def parse_usage(self, usage: Mapping[str, Any], where: str) -> UsageCounts:
        return read_openai_usage(usage, where, ("prompt_tokens", "prompt_tokens_details", "completion_tokens"))

    def call(self, client: Any, body: dict[str, Any], stream: bool, on_text: Callable[[str], None]) -> CallResult:
        if not stream:
            completion = client.chat.completions.create(**body)
            choice = completion.choices[0]
            content = choice.message.content
            if content is not None and not isinstance(content, str):
                raise TypeError(f"the reply's content must be a string or null, got {type(content).__name__}")
            usage = completion.usage.model_dump(mode="json") if completion.usage is not None else None
            return (content or "", usage, getattr(completion, "_request_id", None), choice.finish_reason)
        parts: list[str] = []
        usage = finish = None
        chunks = client.chat.completions.create(**body, stream=True, stream_options={"include_usage": True})
        request_id = getattr(getattr(chunks, "response", None), "headers", {}).get("x-request-id")
        for chunk in chunks:
            for choice in chunk.choices:
                if choice.delta.content:
                    parts.append(choice.delta.content)
                    on_text(choice.delta.content)
                finish = choice.finish_reason or finish
            if chunk.usage is not None:  # the extra last chunk include_usage asks for
                usage = chunk.usage.model_dump(mode="json")
        return "".join(parts), usage, request_id, finish

    def body_elements(self, body: Mapping[str, Any]) -> list[BodyElement]:
        return chat_elements(body)

    def cached_blocks(self, blocks: LoggedBlocks) -> list[LoggedBlock]:
        return automatic_prefix(blocks)

    def is_body(self, body: Mapping[str, Any]) -> bool:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return False
        roles = {m.get("role") for m in messages if isinstance(m, Mapping)}
        tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping)]
        return bool(
            roles & {"system", "developer", "tool"}
            or any("function" in t for t in tools)
            or str(body.get("model", "")).startswith(("gpt", "o1", "o3", "o4"))
        )

    def may_be_body(self, body: Mapping[str, Any]) -> bool:
        return isinstance(body.get("messages"), list)

    stored_title = "OpenAI stored chat completions"

    def stored_response(self, record: Mapping[str, Any]) -> StoredResponse | None:
        # a chat.completion object as GET /chat/completions lists it (``{"object": "list", "data":
        # [...]}``): the response with its usage; the messages sent are another endpoint's
        if record.get("object") != "chat.completion" or not isinstance(record.get("choices"), list):
            return None
        choices = [c for c in record["choices"] if isinstance(c, Mapping)]
        usage, created, model, rid = record.get("usage"), record.get("created"), record.get("model"), record.get("id")
        finish = choices[0].get("finish_reason") if choices else None
        return StoredResponse(
            rid if isinstance(rid, str) else None,
            model if isinstance(model, str) else None,
            float(created) if isinstance(created, int | float) and not isinstance(created, bool) else None,
            usage if isinstance(usage, Mapping) else None,
            finish if isinstance(finish, str) else None,
        )


#: the wire the registry lists under ``openai``
DIALECT = OpenAIChatDialect()

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "to_openai",
    "chat_items",
    "chat_elements",
    "automatic_prefix",
    "read_openai_usage",
    "OpenAIChatDialect",
    "DIALECT",
]
