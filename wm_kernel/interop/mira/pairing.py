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
from bisect import bisect_left, insort
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


class _Group:
    """The unanswered calls of one provider and model: in send order (the earliest first) and by
    prompt size (the nearest to a reported input found by bisection)."""

    def __init__(self, provider: Any, model: Any) -> None:
        self.provider = provider
        self.model = model
        self.order: dict[int, Call] = {}  # send number -> call, in send order
        self.sizes: list[tuple[int, int]] = []  # (tokens, send number), sorted

    def add(self, number: int, call: Call) -> None:
        self.order[number] = call
        insort(self.sizes, (call.tokens, number))

    def remove(self, number: int, call: Call) -> None:
        del self.order[number]
        del self.sizes[bisect_left(self.sizes, (call.tokens, number))]

    def earliest(self) -> int:
        return next(iter(self.order))

    def nearest(self, reported: int) -> tuple[int, int]:
        """(distance, send number) of the call whose size is nearest ``reported``, the earliest
        sent among equals."""
        sizes = self.sizes
        at = bisect_left(sizes, (reported, -1))
        best: tuple[int, int] | None = None
        if at < len(sizes):  # the smallest size at or above: its earliest call comes first
            best = (sizes[at][0] - reported, sizes[at][1])
        if at:  # the largest size below: its earliest call
            below = sizes[at - 1][0]
            first = sizes[bisect_left(sizes, (below, -1))]
            best = min(best, (reported - below, first[1])) if best is not None else (reported - below, first[1])
        assert best is not None, "nearest() of an empty group"
        return best


class _OpenCalls:
    """The calls no response has answered yet, indexed so that pairing costs what each record
    adds, not what is still open: an unpaired tap (calls that never get a response) stays linear.
    A call is found by its key (a retry: at most one open call has a key, since a request with an
    open call's key folds into it) and by its provider and model (a response's candidates)."""

    def __init__(self) -> None:
        self.by_key: dict[str, tuple[int, Call]] = {}
        self.groups: dict[str, _Group] = {}
        self.count = 0

    def add(self, call: Call) -> None:
        self.count += 1
        value = call.last.value
        self.by_key[call.key] = (self.count, call)
        name = json.dumps([value["provider"], value["model"]], sort_keys=True, ensure_ascii=False)
        group = self.groups.get(name)
        if group is None:
            group = self.groups[name] = _Group(value["provider"], value["model"])
        group.add(self.count, call)

    def retried(self, key: str) -> Call | None:
        found = self.by_key.get(key)
        return found[1] if found is not None else None

    def answer(self, response: Mapping[str, Any]) -> Call | None:
        """The call ``response`` answers (module docstring), taken out of the open calls; None if
        no open call is of its provider and model."""
        groups = [
            g
            for g in self.groups.values()
            if g.order and g.provider == response["provider"] and _same_model(g.model, response.get("model"))
        ]
        if not groups:
            return None
        reported = _reported_input(response)
        if reported is not None and sum(len(g.order) for g in groups) > 1:
            group = min(groups, key=lambda g: g.nearest(reported))
            number = group.nearest(reported)[1]
        else:
            group = min(groups, key=_Group.earliest)
            number = group.earliest()
        call = group.order[number]
        group.remove(number, call)
        del self.by_key[call.key]
        return call


def pair(
    requests: Sequence[Record],
    responses: Sequence[Record],
    counter: TokenCounter,
) -> tuple[list[Call], int, list[Record]]:
    """The calls (retries folded in), each with its response where one answers it; the number of
    retries; the responses no call took (see the module docstring). Requests and responses are
    taken in time order, a request before a response of the same instant."""
    calls: list[Call] = []
    open_calls = _OpenCalls()
    left: list[Record] = []
    retries = 0
    events = sorted(
        [(r.ts, 0, r.line, r) for r in requests] + [(r.ts, 1, r.line, r) for r in responses], key=lambda e: e[:3]
    )
    for _, is_response, _, record in events:
        value = record.value
        if not is_response:
            key = json.dumps([value["provider"], value["model"], value["body"]], sort_keys=True, ensure_ascii=False)
            retry = open_calls.retried(key)
            if retry is not None:
                retry.attempts.append(record)
                retries += 1
                continue
            call = Call([record], counter.count(json.dumps(value["body"], ensure_ascii=False)), key)
            calls.append(call)
            open_calls.add(call)
            continue
        chosen = open_calls.answer(value)
        if chosen is None:
            left.append(record)
            continue
        chosen.response = record
    return calls, retries, left


__all__ = ["Call", "Record", "pair", "usage_of"]
