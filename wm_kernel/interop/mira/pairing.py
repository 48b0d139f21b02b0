"""The tap's requests paired with its responses (the tap keeps no id), and a response's usage.

Pairing
    A request whose body is byte for byte an earlier, still unanswered request's of the same
    provider and model is a retry of it (the SDK sends the same body again): the call is its last
    attempt. Responses are taken in time order; each goes to an unanswered call of its provider
    whose model it names (the API may report a dated name: ``claude-haiku-4-5`` is answered as
    ``claude-haiku-4-5-20251001``) sent at or before it (equal timestamps allowed). Among several,
    the call whose prompt size (estimated tokens) is nearest the input the response reports, the
    earliest on a tie; so a background call that starts and ends inside a chat call, with equal
    timestamps, pairs with its own request. :func:`~wm_kernel.interop.mira.read_tap` turns a
    response that finds no call, and a call no response answers, into an
    :class:`~wm_kernel.interop.formats.ImportIssue` naming its file and line; a call without a
    response still imports, without usage.

Usage
    From the paired response: an Anthropic SDK message's ``usage``; a generic call's usage (MIRA's
    generic client reports Anthropic's keys; the short keys ``input``, ``output``,
    ``cache_creation``, ``cache_read`` are read too) in Anthropic's shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wm_kernel.tokens import TokenCounter


@dataclass
class Record:
    """One record of the tap's files: its line number, its raw text, its JSON value, its ``ts``."""

    line: int
    text: str
    value: Mapping[str, Any]
    ts: float


@dataclass
class Call:
    """One provider call: its attempts (request records), and the response paired with it."""

    attempts: list[Record]
    tokens: int
    key: str
    response: Record | None = None

    @property
    def last(self) -> Record:
        return self.attempts[-1]


def _same_model(requested: Any, reported: Any) -> bool:
    """The model a response names is the requested one, or its dated name (or the other way)."""
    if not isinstance(requested, str) or not isinstance(reported, str):
        return bool(requested == reported)
    a, b = requested.lower(), reported.lower()
    return a == b or a.startswith(b + "-") or b.startswith(a + "-")


def _reported_input(response: Mapping[str, Any]) -> int | None:
    usage = usage_of(response)
    if usage is None:
        return None
    total = 0
    for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total or None


def usage_of(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """A response record's usage in Anthropic's shape (None where it has none)."""
    response = record.get("response")
    if not isinstance(response, Mapping):
        return None
    usage = response.get("usage")
    if not isinstance(usage, Mapping):
        return None
    if record.get("provider") == "generic":
        short = {
            "input": "input_tokens",
            "output": "output_tokens",
            "cache_creation": "cache_creation_input_tokens",
            "cache_read": "cache_read_input_tokens",
        }
        out = {short.get(str(k), str(k)): v for k, v in usage.items()}
        return {
            k: out.get(k, 0)
            for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        }
    return dict(usage)


def pair(
    requests: Sequence[Record],
    responses: Sequence[Record],
    counter: TokenCounter,
) -> tuple[list[Call], int, list[Record]]:
    """The calls (retries folded in), each with its response where one answers it; the number of
    retries; the responses no call took (see the module docstring). Requests and responses are
    taken in time order, a request before a response of the same instant."""
    calls: list[Call] = []
    open_calls: list[Call] = []
    left: list[Record] = []
    retries = 0
    events = sorted(
        [(r.ts, 0, r.line, r) for r in requests] + [(r.ts, 1, r.line, r) for r in responses], key=lambda e: e[:3]
    )
    for _, is_response, _, record in events:
        value = record.value
        if not is_response:
            key = json.dumps([value["provider"], value["model"], value["body"]], sort_keys=True, ensure_ascii=False)
            retry = next((c for c in reversed(open_calls) if c.key == key), None)
            if retry is not None:
                retry.attempts.append(record)
                retries += 1
                continue
            call = Call([record], counter.count(json.dumps(value["body"], ensure_ascii=False)), key)
            calls.append(call)
            open_calls.append(call)
            continue
        candidates = [
            c
            for c in open_calls
            if c.last.value["provider"] == value["provider"] and _same_model(c.last.value["model"], value.get("model"))
        ]
        if not candidates:
            left.append(record)
            continue
        reported = _reported_input(value)
        chosen = candidates[0]
        if reported is not None and len(candidates) > 1:
            chosen = min(candidates, key=lambda c: abs(c.tokens - reported))
        chosen.response = record
        open_calls.remove(chosen)
    return calls, retries, left


__all__ = ["Call", "Record", "pair", "usage_of"]
