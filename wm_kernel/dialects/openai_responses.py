"""The OpenAI Responses wire: its usage and its logs (the kit builds no Responses body).

Usage: ``input_tokens`` with ``input_tokens_details`` (cached and written tokens included in it),
``output_tokens``, ``total_tokens``. Logs: JSON Lines of Responses bodies (``input`` /
``instructions``; format ``openai.responses``). Caching is automatic, as for Chat Completions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wm_kernel.dialects.base import Dialect
from wm_kernel.dialects.counts import UsageCounts
from wm_kernel.dialects.elements import BodyElement, BodyPart, LoggedBlock, LoggedBlocks, tool_section
from wm_kernel.dialects.openai_chat import automatic_prefix, chat_items, read_openai_usage


def responses_elements(body: Mapping[str, Any]) -> list[BodyElement]:
    """A Responses body's elements: tools, instructions, input (a string or items)."""
    elements: list[BodyElement] = []
    for key, value in body.items():
        if key == "tools" and isinstance(value, list):
            for index, tool in enumerate(value):
                name = tool.get("name", tool.get("type", index)) if isinstance(tool, Mapping) else index
                elements.append(BodyElement(("tools", index), tool_section(name), "tool", "tools"))
        elif key == "instructions" and isinstance(value, str):
            elements.append(
                BodyElement(("instructions",), "instructions", "system", "system", (BodyPart((), "split"),))
            )
        elif key == "input" and isinstance(value, str):
            elements.append(BodyElement(("input",), "input user", "message", "user", (BodyPart((), "split"),)))
        elif key == "input" and isinstance(value, list):
            elements += chat_items(value, ("input",), "input")
    return elements


class OpenAIResponsesDialect(Dialect):
    """The OpenAI Responses wire (see the module docstring)."""

    name = "openai-responses"
    rank = 30
    aliases = ("openai.responses",)
    provider = "openai-responses"
    serves = ("openai",)
    sdk = "openai"
    title = "an OpenAI Responses"
    default_model = "gpt-5.4"
    log_format = "openai.responses"
    log_provider = "openai"
    log_priority = 5

    usage_title = "OpenAI Responses"
    usage_anchor = ("input_tokens",)
    usage_keys = ("output_tokens", "input_tokens_details", "output_tokens_details", "total_tokens")

    def parse_usage(self, usage: Mapping[str, Any], where: str) -> UsageCounts:
        return read_openai_usage(usage, where, ("input_tokens", "input_tokens_details", "output_tokens"))

    def body_elements(self, body: Mapping[str, Any]) -> list[BodyElement]:
        return responses_elements(body)

    def cached_blocks(self, blocks: LoggedBlocks) -> list[LoggedBlock]:
        return automatic_prefix(blocks)

    def is_body(self, body: Mapping[str, Any]) -> bool:
        return "messages" not in body and ("input" in body or "instructions" in body)

    def check_body(self, body: Mapping[str, Any]) -> None:
        if "input" not in body and "instructions" not in body:
            raise ValueError("not an OpenAI Responses request: no 'input' or 'instructions'")


#: the wire the registry lists under ``openai-responses``
DIALECT = OpenAIResponsesDialect()

__all__ = ["responses_elements", "OpenAIResponsesDialect", "DIALECT"]
