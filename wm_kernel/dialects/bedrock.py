"""Amazon Bedrock's Converse wire: its usage (the kit builds no Converse body and sends none).

Usage is camelCase: ``inputTokens`` (the tokens after the last ``cachePoint``, as Anthropic's
``input_tokens``), ``cacheReadInputTokens`` and ``cacheWriteInputTokens`` added to them,
``outputTokens``. A Converse response does not name its model: the request's URL does
(``/model/{modelId}/converse``, the id with a regional prefix such as ``us.``), and so does the
URL of an InvokeModel call, whose body is Anthropic's (:func:`model_from_url`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from wm_kernel.dialects.base import Dialect, Slot, TurnPieces
from wm_kernel.dialects.counts import DEFAULT_TTL, UsageCounts, usage_int
from wm_kernel.dialects.kit import kit_cache_layout

_MODEL_IN_URL = re.compile(r"/model/([^/?#]+)/(?:converse|converse-stream|invoke|invoke-with-response-stream)\b")


def model_from_url(url: object) -> str | None:
    """The model id of a Bedrock Converse or InvokeModel URL (None for any other URL).

    >>> model_from_url("https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse")
    'us.anthropic.claude-sonnet-4-5-20250929-v1:0'
    """  # noqa: E501 - a URL is one line
    if not isinstance(url, str):
        return None
    found = _MODEL_IN_URL.search(url)
    return unquote(found.group(1)) if found else None


class BedrockConverseDialect(Dialect):
    """The Bedrock Converse wire (see the module docstring)."""

    name = "bedrock"
    rank = 45
    aliases = ("aws.bedrock", "bedrock.converse")
    provider = "bedrock"
    title = "an Amazon Bedrock Converse"
    default_model = ""
    usage_title = "Bedrock Converse"
    usage_anchor = ("inputTokens",)
    usage_keys = ("outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens", "totalTokens")

    plain_history = True

    def cache_layout(self, turn: TurnPieces) -> list[Slot]:
        return kit_cache_layout(turn)

    def parse_usage(self, usage: Mapping[str, Any], where: str) -> UsageCounts:
        return UsageCounts(
            usage_int(usage, "inputTokens", where),
            usage_int(usage, "cacheReadInputTokens", where),
            {DEFAULT_TTL: usage_int(usage, "cacheWriteInputTokens", where)},
            usage_int(usage, "outputTokens", where),
        )


#: the wire the registry lists under ``bedrock``
DIALECT = BedrockConverseDialect()

__all__ = ["model_from_url", "BedrockConverseDialect", "DIALECT"]
