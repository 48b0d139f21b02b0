"""What a log says a request was billed, read with the providers' one usage parser.

A logged request keeps its usage object as the log had it (``LoggedRequest.usage``, in the shape
named by ``usage_format``). :func:`logged_usage` reads it with
:func:`wm_kernel.dialects.usage.parse_usage` into a provider-neutral
:class:`~wm_kernel.dialects.usage.Usage`, carrying the request id the log kept and the digests of
the request's cacheable prefix (:func:`~wm_kernel.dialects.usage.request_prefix`) when the log
holds the request body itself. With those digests a reconciliation tells a provider's miss (the
prefix was byte-identical to the previous request's) from an invalidation (tools, cached system text
or parameters changed); without them (a Claude Code transcript has neither the system prompt nor the
tools; a foreign span has no body) such a miss stays ``unknown``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from wm_kernel.dialects.registry import get_dialect, known_name
from wm_kernel.dialects.usage import Usage, parse_usage, request_prefix
from wm_kernel.interop.formats import LoggedRequest
from wm_kernel.interop.readers import get_log_format, log_formats


def body_log(dialect: str) -> bool:
    """Whether a logged request's text is one JSON request body (alone or in an envelope): its
    dialect is a log format registered for a wire's request bodies, or a wire's own name."""
    if dialect in log_formats():
        return get_log_format(dialect).dialect is not None
    return known_name(dialect) and get_dialect(dialect).reads_bodies


def request_body(request: LoggedRequest) -> Mapping[str, Any] | None:
    """The request body the log holds for ``request`` (its line, without the envelope), or None
    where the log has no body (a transcript, a foreign span)."""
    if not body_log(request.dialect):
        return None
    try:
        value = json.loads(request.logged_text)
    except json.JSONDecodeError:
        return None
    if isinstance(value, Mapping) and isinstance(value.get("request"), Mapping):
        value = value["request"]
    elif isinstance(value, Mapping) and "ts" in value and isinstance(value.get("body"), Mapping):
        value = value["body"]  # a record of a traffic tap (MIRA's llm_requests.jsonl)
    return value if isinstance(value, Mapping) else None


def logged_usage(request: LoggedRequest, *, where: str = "usage") -> Usage | None:
    """The usage the log recorded for ``request`` as a :class:`Usage` (None where it has none),
    with the request's id and, when the body is in the log, its prefix digests."""
    usage = logged_counts(request, where=where)
    if usage is None or usage.model is not None:
        return usage
    return dataclasses.replace(usage, model=request.model)


def logged_counts(request: LoggedRequest, *, where: str = "usage") -> Usage | None:
    """:func:`logged_usage` without the request's model filled in where the usage names none (the
    usage report, which counts by ``request.model``, reads this: one Usage built per request, not two)."""
    if not request.usage:
        return None
    body = request_body(request)
    # a provider as the log names it (OpenTelemetry's ``gcp.gemini``...) is a wire's alias
    provider = get_dialect(request.provider).provider if known_name(request.provider) else None
    return parse_usage(
        request.usage,
        where=where,
        shape=request.usage_format,
        provider=provider,
        request_id=request.request_id,
        prefix=request_prefix(body) if body is not None else None,
    )


def gen_ai_counts(usage: Usage) -> dict[str, int]:
    """``usage`` in OpenTelemetry's GenAI vocabulary: ``input_tokens`` counts every input token
    (cached and written ones included), then ``cache_read_input_tokens``,
    ``cache_creation_input_tokens`` and ``output_tokens``."""
    return {
        "input_tokens": usage.prompt_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "output_tokens": usage.output_tokens,
    }


__all__ = ["body_log", "request_body", "logged_usage", "logged_counts", "gen_ai_counts"]
