"""The Gemini wire: its usage (``usageMetadata``) and its models' cache layout (the kit builds no
Gemini body and sends none).

Logs: JSON Lines of ``generateContent`` request bodies (``contents``, ``systemInstruction``,
``tools``, ``cachedContent``), alone or in an envelope whose response holds ``usageMetadata`` and
``modelVersion``: the ``gemini`` log format (``wm_kernel.interop.formats`` reads it, cut by the
``contents`` body shape).

Usage: ``promptTokenCount`` includes ``cachedContentTokenCount``; ``toolUsePromptTokenCount`` is
input too, ``thoughtsTokenCount`` output; camelCase (REST) or snake_case (the Python SDK). No
writes are reported. The cache simulator lays a Gemini request out as the kit's wire does (its
implicit caching reads the longest common prefix; breakpoints other than ``explicit`` are ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wm_kernel.dialects.base import Dialect, Slot, TurnPieces
from wm_kernel.dialects.counts import UsageCounts, usage_int
from wm_kernel.dialects.elements import BodyElement, BodyPart, Path, tool_section
from wm_kernel.dialects.kit import kit_cache_layout


def gemini_elements(body: Mapping[str, Any]) -> list[BodyElement]:
    """A ``generateContent`` body's elements: tools, the system instruction, the cached content it
    names (the cache's text is not in the body: the section is its name), then ``contents``."""
    elements: list[BodyElement] = []
    for key, value in body.items():
        if key == "tools" and isinstance(value, list):
            for index, tool in enumerate(value):
                declared = (
                    tool.get("functionDeclarations") or tool.get("function_declarations")
                    if isinstance(tool, Mapping)
                    else None
                )
                names = (
                    [d.get("name") for d in declared if isinstance(d, Mapping)] if isinstance(declared, list) else []
                )
                name = ",".join(str(n) for n in names if n) or index
                elements.append(BodyElement(("tools", index), tool_section(name), "tool", "tools"))
        elif key in ("systemInstruction", "system_instruction") and isinstance(value, Mapping):
            elements.append(BodyElement((key,), "system", "system", "system", _parts(value, ())))
        elif key in ("cachedContent", "cached_content") and isinstance(value, str):
            elements.append(BodyElement((key,), "cachedContent", "system", "system"))
        elif key == "contents" and isinstance(value, list):
            for index, content in enumerate(value):
                if not isinstance(content, Mapping):
                    elements.append(BodyElement(("contents", index), f"msg[{index}]", "message", None))
                    continue
                role = str(content.get("role") or "user")
                parts = _parts(content, ())
                elements.append(BodyElement(("contents", index), f"msg[{index}] {role}", "message", role, parts))
    return elements


def _parts(content: Mapping[str, Any], at: Path) -> tuple[BodyPart, ...]:
    """A Gemini content's ``parts``: text split, anything else (calls, results, data) as JSON."""
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ()
    return tuple(
        BodyPart((*at, "parts", index, "text"), "split", f"[{index}] text")
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        else BodyPart((*at, "parts", index), "json", f"[{index}]")
        for index, part in enumerate(parts)
    )


class GeminiDialect(Dialect):
    """The Gemini wire (see the module docstring)."""

    name = "gemini"
    rank = 40
    #: a model profile's provider, then OpenTelemetry's ``gen_ai.provider.name`` values
    aliases = ("google", "gcp.gemini", "gcp.vertex_ai", "gcp.gen_ai")
    provider = "gemini"
    serves = ("google",)
    default_for = ("google",)
    title = "a Gemini generateContent"
    default_model = "gemini-2.5-flash"
    log_format = "gemini"
    log_priority = 40

    plain_history = True

    def cache_layout(self, turn: TurnPieces) -> list[Slot]:
        return kit_cache_layout(turn)

    usage_title = "Gemini"
    usage_anchor = ("promptTokenCount", "prompt_token_count")
    usage_keys = ("candidatesTokenCount", "cachedContentTokenCount", "totalTokenCount", "candidates_token_count")

    def parse_usage(self, usage: Mapping[str, Any], where: str) -> UsageCounts:
        camel = "promptTokenCount" in usage

        def g(name: str, snake: str) -> int:
            return usage_int(usage, name if camel else snake, where)

        prompt = g("promptTokenCount", "prompt_token_count")
        cached = g("cachedContentTokenCount", "cached_content_token_count")
        if cached > prompt:
            raise ValueError(
                f"{where}: cachedContentTokenCount ({cached}) exceeds promptTokenCount ({prompt}), which includes it"
            )
        tool_input = g("toolUsePromptTokenCount", "tool_use_prompt_token_count")
        output = g("candidatesTokenCount", "candidates_token_count") + g("thoughtsTokenCount", "thoughts_token_count")
        return UsageCounts(prompt - cached + tool_input, cached, {}, output)

    def body_elements(self, body: Mapping[str, Any]) -> list[BodyElement]:
        return gemini_elements(body)

    def is_body(self, body: Mapping[str, Any]) -> bool:
        return isinstance(body.get("contents"), list) and "messages" not in body

    def check_body(self, body: Mapping[str, Any]) -> None:
        if not isinstance(body.get("contents"), list):
            raise ValueError("not a Gemini generateContent request: no 'contents' list")


#: the wire the registry lists under ``gemini``
DIALECT = GeminiDialect()

__all__ = ["gemini_elements", "GeminiDialect", "DIALECT"]
