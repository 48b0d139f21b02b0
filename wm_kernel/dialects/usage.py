"""The usage a provider bills, read from SDK objects, dicts or a JSON Lines file of raw responses.

Every provider counts cached tokens its own way (``docs/providers.md`` has the sources); each wire
dialect's module reads its own (``Dialect.reads_usage`` / ``parse_usage``), and :func:`parse_usage`
hands a record to the first that knows its keys:

* **Anthropic** (Messages): ``input_tokens`` are only the tokens after the last cache breakpoint;
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are *added* to them (the request's
  total is the sum of the three); ``cache_creation.ephemeral_1h_input_tokens`` says how many of the
  writes were 1-hour ones (the rest are 5-minute writes).
* **OpenAI** Chat Completions (``prompt_tokens``) and Responses (``input_tokens`` with
  ``input_tokens_details``): the prompt count *includes* the cached tokens
  (``..._details.cached_tokens``) and the tokens written to the cache (``cache_write_tokens``).
* **Gemini** (``usageMetadata``): ``promptTokenCount`` includes ``cachedContentTokenCount``;
  ``toolUsePromptTokenCount`` is input too, ``thoughtsTokenCount`` is output. It reports no writes.
* **OpenTelemetry GenAI** spans (``gen_ai.usage.*``, read by ``wm_kernel.interop`` into a dict of
  ``input_tokens``, ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
  ``output_tokens``): ``input_tokens`` *includes* the cached and written tokens. Its keys look like
  Anthropic's, so it is never detected: name it with ``shape="gen_ai"``.

:class:`Usage` holds one request's usage in one shape whatever the provider: tokens billed as plain
input, read from the cache, written to it (and how many of those at the 1-hour price), and output;
each token in exactly one of the first three. ``wm_kernel.providers.pricing`` turns it into dollars.

Examples
--------
>>> u = parse_usage({"input_tokens": 50, "cache_creation_input_tokens": 1200,
...                  "cache_read_input_tokens": 100000, "output_tokens": 87,
...                  "cache_creation": {"ephemeral_5m_input_tokens": 200,
...                                     "ephemeral_1h_input_tokens": 1000}})
>>> u.provider, u.prompt_tokens, u.cache_write_5m_tokens, u.cache_write_1h_tokens
('anthropic', 101250, 200, 1000)
>>> parse_usage({"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
...              "prompt_tokens_details": {"cached_tokens": 1920}}).input_tokens
86
>>> parse_usage({"tokens": 5}, where="usage.jsonl line 3")
Traceback (most recent call last):
...
ValueError: usage.jsonl line 3: not a usage record of Anthropic, OpenAI Chat (and LiteLLM, OpenRouter), OpenAI Responses, Gemini, Bedrock Converse (keys: tokens)
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from wm_kernel.dialects.counts import DEFAULT_TTL, UsageCounts, check_count, usage_int
from wm_kernel.dialects.registry import (
    dialects,
    get_dialect,
    known_name,
    usage_dialect,
    usage_dialect_named,
    usage_providers,
    usage_titles,
)
from wm_kernel.utils.safe_files import BadJSONError, lines, open_regular, parse_json

#: The shape of OpenTelemetry GenAI usage (it names no provider); every other shape :func:`parse_usage`
#: reads when told (``shape=``) is a registered wire dialect's name or alias (``anthropic``,
#: ``openai.chat``...: ``wm_kernel.dialects.registry``), whose usage reader reads it.
GEN_AI = "gen_ai"
#: Whose usage a ``gen_ai`` record is when no ``provider`` is given.
DEFAULT_USAGE_WIRE = "anthropic"


@dataclass(frozen=True)
class Usage:
    """One request's billed usage, provider-neutral (see the module docstring).

    ``input_tokens`` are billed at the plain input price, ``cache_read_tokens`` at the read price,
    ``cache_writes`` at the write price of their TTL (``{"5m": 200, "1h": 1000}``; ``DEFAULT_TTL``
    for writes whose TTL the usage does not name), ``output_tokens`` at the output price.
    ``prefix`` holds digests of the request's cache-deciding parts when the request is known
    (:func:`request_prefix`); ``line`` is where in a file the record was read; ``billed_usd`` is
    what the provider itself says it billed, where it says so (OpenRouter's ``usage.cost``);
    ``steps`` counts the server-side steps summed into it (Anthropic's ``usage.iterations``).
    """

    provider: str
    input_tokens: int
    cache_read_tokens: int = 0
    cache_writes: Mapping[str, int] = field(default_factory=dict)
    output_tokens: int = 0
    model: str | None = None
    request_id: str | None = None
    prefix: Mapping[str, str] = field(default_factory=dict)
    line: int | None = None
    billed_usd: float | None = None
    steps: int = 1

    def __post_init__(self) -> None:
        if self.provider not in usage_providers():
            raise ValueError(f"provider must be one of {', '.join(usage_providers())}, got {self.provider!r}")
        for name in ("input_tokens", "cache_read_tokens", "output_tokens"):
            check_count(getattr(self, name), name)
        if not isinstance(self.cache_writes, Mapping):
            raise ValueError(f"cache_writes must map TTLs to counts, got {type(self.cache_writes).__name__}")
        for ttl, count in self.cache_writes.items():
            if not isinstance(ttl, str) or not ttl:
                raise ValueError(f"cache_writes keys must be TTL names, got {ttl!r}")
            check_count(count, f"cache_writes[{ttl!r}]")
        object.__setattr__(self, "cache_writes", MappingProxyType({k: v for k, v in self.cache_writes.items() if v}))
        if self.billed_usd is not None and (
            isinstance(self.billed_usd, bool)
            or not isinstance(self.billed_usd, (int, float))
            or not math.isfinite(self.billed_usd)
            or self.billed_usd < 0
        ):
            raise ValueError(f"billed_usd must be a non-negative number, got {self.billed_usd!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Usage):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return (
            self.provider,
            self.input_tokens,
            self.cache_read_tokens,
            tuple(sorted(self.cache_writes.items())),
            self.output_tokens,
            self.model,
            self.request_id,
            tuple(sorted(self.prefix.items())),
            self.line,
            self.billed_usd,
            self.steps,
        )

    @property
    def cache_write_tokens(self) -> int:
        """Every token written to the cache, whatever its TTL."""
        return sum(self.cache_writes.values())

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request: plain, read and written."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_write_1h_tokens(self) -> int:
        """Writes at the one-hour TTL."""
        return self.cache_writes.get("1h", 0)

    @property
    def cache_write_5m_tokens(self) -> int:
        """Writes at any other TTL: the five-minute one, or the model's default (OpenAI's 30 minutes)."""
        return self.cache_write_tokens - self.cache_write_1h_tokens


def _plain(obj: Any) -> Any:
    """A dict from an SDK object (pydantic ``model_dump``), or the object itself."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=False)
    return obj


def _find_usage(record: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(usage object, the response around it: {} when ``record`` is the usage itself)."""
    for key in ("usage", "usageMetadata", "usage_metadata"):
        inner = record.get(key)
        if isinstance(inner, Mapping):
            return inner, record
    # a streamed Anthropic message_start carries the message
    message = record.get("message")
    if isinstance(message, Mapping) and isinstance(message.get("usage"), Mapping):
        return message["usage"], message
    return record, {}


def parse_usage(
    obj: Any,
    *,
    where: str = "usage",
    request_id: str | None = None,
    prefix: Mapping[str, str] | None = None,
    line: int | None = None,
    shape: str | None = None,
    provider: str | None = None,
) -> Usage:
    """The :class:`Usage` of one response or usage object (SDK object or dict) of any provider.

    ``where`` names the record in errors. A response's ``id`` is not a request id; pass
    ``request_id`` (or give the record a ``request_id`` field) to align by request. ``shape``
    (a registered dialect's name or alias, or ``gen_ai``) says how to read the record instead of
    guessing from its keys (each dialect's ``reads_usage``); the ``gen_ai`` shape names no
    provider, so ``provider`` (one of ``usage_providers()``, default ``anthropic``) says whose
    usage it is.

    Long because: its docstring and doctest; the body checks the shape and provider, then reads the
    counts with the dialect the shape names or the record's keys choose.

    >>> u = parse_usage({"input_tokens": 2300, "cache_read_input_tokens": 2200, "output_tokens": 50},
    ...                 shape="gen_ai", provider="openai")
    >>> u.provider, u.input_tokens, u.cache_read_tokens, u.prompt_tokens
    ('openai', 100, 2200, 2300)
    """
    if shape is not None and shape != GEN_AI and not known_name(shape):
        shapes = [n for d in dialects() if d.usage_anchor for n in (d.name, *d.aliases)]
        raise ValueError(f"{where}: unknown usage shape {shape!r} (shapes: {', '.join([*shapes, GEN_AI])})")
    if provider is not None and provider not in usage_providers():
        raise ValueError(f"{where}: provider must be one of {', '.join(usage_providers())}, got {provider!r}")
    record = _plain(obj)
    if not isinstance(record, Mapping):
        raise ValueError(f"{where}: expected a response or usage object, got {type(record).__name__}")
    usage, response = _find_usage(record)
    model = response.get("model") or response.get("modelVersion") or response.get("model_version")
    rid = request_id or record.get("request_id") or record.get("_request_id")
    common: dict[str, Any] = {
        "model": model if isinstance(model, str) else None,
        "request_id": rid if isinstance(rid, str) else None,
        "prefix": dict(prefix or {}),
        "line": line,
    }
    if shape == GEN_AI:
        counts, billed = _gen_ai_counts(usage, where), provider or get_dialect(DEFAULT_USAGE_WIRE).provider
    else:
        dialect = usage_dialect_named(shape) if shape is not None else None
        if dialect is None or not dialect.reads_usage(usage):
            # read by what it holds: a log's wire names the body, not always the usage (a Bedrock
            # response to an Anthropic-shaped body); a record holding no shape's counts is an error
            dialect = usage_dialect(usage)
        if dialect is None:
            keys = ", ".join(sorted(str(k) for k in usage)) or "none"
            raise ValueError(f"{where}: not a usage record of {usage_titles()} (keys: {keys})")
        counts, billed = dialect.parse_usage(usage, where), dialect.provider
    return Usage(
        billed,
        counts.input_tokens,
        counts.cache_read_tokens,
        counts.cache_writes,
        counts.output_tokens,
        billed_usd=counts.billed_usd,
        steps=counts.steps,
        **common,
    )


def _gen_ai_counts(usage: Mapping[str, Any], where: str) -> UsageCounts:
    """An OpenTelemetry GenAI usage's counts: its ``input_tokens`` include the cached and written ones."""
    total = usage_int(usage, "input_tokens", where)
    cached = usage_int(usage, "cache_read_input_tokens", where)
    written = usage_int(usage, "cache_creation_input_tokens", where)
    if cached + written > total:
        raise ValueError(
            f"{where}: cached ({cached}) and written ({written}) tokens exceed input_tokens "
            f"({total}), which includes them"
        )
    return UsageCounts(
        total - cached - written, cached, {DEFAULT_TTL: written}, usage_int(usage, "output_tokens", where)
    )


def read_usage(source: str | os.PathLike[str] | Iterable[Any]) -> list[Usage]:
    """Every usage record of a JSON Lines file (a path) or of an iterable of objects / JSON lines.

    A line is a raw response, a bare usage object, or ``{"response": ..., "request": ...,
    "request_id": ...}`` (a request body lets a reconciliation tell a changed prefix from a provider
    miss). Blank lines are skipped. Anything else is one ValueError naming the line.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = path.name
        with open_regular(path, name) as handle:  # a regular file only (a FIFO, /dev/zero: one line)
            items: list[Any] = list(lines(handle, name))
    else:
        name, items = "usage", list(source)
    out = []
    for number, item in enumerate(items, start=1):
        where = f"{name} line {number}"
        if isinstance(item, str):
            if not item.strip():
                continue
            try:
                item = parse_json(item)
            except BadJSONError as exc:
                why = str(exc).removeprefix("malformed JSON: ").split(" at column")[0]
                raise ValueError(f"{where}: not JSON ({why})") from None
        record = _plain(item)
        if isinstance(record, Mapping) and "response" in record:
            request = record.get("request")
            if request is not None and not isinstance(request, Mapping):
                raise ValueError(f"{where}: request must be an object, got {type(request).__name__}")
            rid = record.get("request_id")
            out.append(
                parse_usage(
                    record["response"],
                    where=where,
                    request_id=rid if isinstance(rid, str) else None,
                    prefix=request_prefix(request) if request is not None else None,
                    line=number,
                )
            )
        else:
            out.append(parse_usage(record, where=where, line=number))
    return out


#: Request fields that do not change what a provider's cache can serve.
_NOT_PARAMS = (
    "messages",
    "system",
    "tools",
    "input",
    "instructions",
    "contents",
    "systemInstruction",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "stream",
    "stream_options",
    "metadata",
    "user",
)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def request_prefix(body: Mapping[str, Any]) -> dict[str, str]:
    """Digests of what decides a cache hit in a request body: ``tools``, ``system`` (Anthropic: the
    system blocks up to the last ``cache_control``; OpenAI: the system/developer message) and
    ``params`` (the model and sampling parameters). Equal digests: the same cacheable prefix.

    >>> a = request_prefix({"model": "m", "system": [{"type": "text", "text": "S",
    ...                     "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "t1"}]})
    >>> b = request_prefix({"model": "m", "system": [{"type": "text", "text": "S",
    ...                     "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "t2"}]})
    >>> a == b, a == request_prefix({"model": "m2", "system": "S"})
    (True, False)
    """
    if not isinstance(body, Mapping):
        raise TypeError(f"a request body must be a dict, got {type(body).__name__}")
    system: Any = body.get("system", body.get("instructions", body.get("systemInstruction")))
    if isinstance(system, list):
        marked = [i for i, block in enumerate(system) if isinstance(block, Mapping) and "cache_control" in block]
        system = system[: marked[-1] + 1] if marked else system[:1]
    elif system is None:
        messages = body.get("messages") or []
        first = messages[0] if messages else None
        if isinstance(first, Mapping) and first.get("role") in ("system", "developer"):
            system = first.get("content")
    return {
        "tools": _digest(body.get("tools")),
        "system": _digest(system),
        "params": _digest({k: v for k, v in body.items() if k not in _NOT_PARAMS}),
    }
