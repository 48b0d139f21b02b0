"""The tap's requests paired with its responses (the tap keeps no id), and a response's usage.

Pairing
    A request whose body is byte for byte an earlier, still unanswered request's of the same
    provider and model is a retry of it (the SDK sends the same body again): the call is its last
    attempt. Responses are taken in time order; each goes to an unanswered call of its provider
    whose model it names (the API may report a dated name: ``claude-haiku-4-5`` is answered as
    ``claude-haiku-4-5-20251001``) sent at or before it (equal timestamps allowed). Among several:

    1. What the bodies hold: a conversation's next request carries the answer in its history, the
       assistant message right after the user message the call ended with (its *continuation*:
       the texts without MIRA's ``[h:mmam]`` prefix, whitespace runs made one space, and the ids
       of its tool calls). The one open call whose continuation is the response's content takes it.
    2. Otherwise the call whose prompt size (estimated tokens) is nearest the input the response
       reports, the earliest on a tie (the earliest when the response reports none).
    3. Calls first sent at the same instant as that one contend with it: one whose continuation cannot
       be the response's content (neither text holds the other, or other tool calls) drops out;
       of the rest, the size decides when the nearest is nearer by a factor of 1.5 or more (a
       background call that starts and ends inside a chat call, at its instant, pairs with its
       own request). Otherwise the pairing is ambiguous: the response is not paired (an import
       issue names the requests it could answer) unless, once every other response has been
       paired, one of them is left.

    :func:`~wm_kernel.interop.mira.read_tap` turns a response that finds no call, an ambiguous
    one, and a call no response answers, into an :class:`~wm_kernel.interop.formats.ImportIssue`
    naming its file and line; a call without a response still imports, without usage.

Usage
    From the paired response: an Anthropic SDK message's ``usage``; a generic call's usage (MIRA's
    generic client reports Anthropic's keys; the short keys ``input``, ``output``,
    ``cache_creation``, ``cache_read`` are read too) in Anthropic's shape.
"""

from __future__ import annotations

import json
import math
import re
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
    """One provider call: its attempts (request records), the response paired with it, and what
    the conversation's next request says it was answered with (None: nothing says)."""

    attempts: list[Record]
    tokens: int
    key: str
    response: Record | None = None
    continuation: tuple[str, tuple[str, ...]] | None = None

    @property
    def last(self) -> Record:
        return self.attempts[-1]

    @property
    def sent(self) -> float:
        """When the call was first sent (its first attempt's ``ts``)."""
        return self.attempts[0].ts


#: MIRA's time prefix on each message of the history (continuum.py): ``[9:05am] ``.
_TIME_PREFIX = re.compile(r"\A\s*\[\d{1,2}:\d{2}\s?[ap]m\]\s*", re.IGNORECASE)
#: How much nearer (in prompt size) one same-instant call must be than the next to decide alone.
SIZE_FACTOR = 1.5


def content_key(content: Any) -> tuple[str, tuple[str, ...]] | None:
    """What a message's (or a response's) content says, to compare an answer with the history
    that holds it: its text blocks joined, without MIRA's time prefix, runs of whitespace made one
    space, and the ids of its tool calls; None for content that holds neither.

    >>> content_key("[9:01am] Sure.")
    ('Sure.', ())
    >>> content_key([{"type": "text", "text": "Let me look. "}, {"type": "tool_use", "id": "toolu_1"}])
    ('Let me look.', ('toolu_1',))
    """
    if isinstance(content, str):
        text, ids = content, ()
    elif isinstance(content, list):
        parts, found = [], []
        for block in content:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                found.append(block["id"])
        text, ids = "".join(parts), tuple(found)
    else:
        return None
    text = " ".join(_TIME_PREFIX.sub("", text, count=1).split())
    return (text, ids) if text or ids else None


def _consistent(stored: tuple[str, tuple[str, ...]] | None, said: tuple[str, tuple[str, ...]] | None) -> bool:
    """Whether a history's stored answer can be this response's content: nothing known, the same,
    or one text inside the other with the same tool calls (MIRA may keep the answer without the
    tags it acts on)."""
    if stored is None or said is None:
        return True
    return stored[1] == said[1] and (stored[0] in said[0] or said[0] in stored[0])


def response_key(record: Mapping[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """:func:`content_key` of a response record's content (an SDK message's blocks, a generic
    call's text)."""
    response = record.get("response")
    return content_key(response.get("content")) if isinstance(response, Mapping) else None


def continuations(requests: Sequence[Record]) -> dict[str, tuple[str, tuple[str, ...]] | None]:
    """For each user message a request's history holds (its content as JSON text), the
    :func:`content_key` of the assistant message right after it; None where requests disagree."""
    found: dict[str, tuple[str, tuple[str, ...]] | None] = {}
    for record in requests:
        messages = record.value["body"].get("messages")
        if not isinstance(messages, list):
            continue
        for before, after in zip(messages, messages[1:], strict=False):
            if not (isinstance(before, Mapping) and isinstance(after, Mapping)):
                continue
            if before.get("role") != "user" or after.get("role") != "assistant":
                continue
            key = _user_key(before)
            answer = content_key(after.get("content"))
            if key is None or answer is None:
                continue
            if key in found and found[key] != answer:
                found[key] = None
            else:
                found.setdefault(key, answer)
    return found


def _user_key(message: Any) -> str | None:
    if not isinstance(message, Mapping) or message.get("role") != "user":
        return None
    content = message.get("content")
    # a string as itself (most are: no encoding), any other content as its JSON text; the mark
    # in front keeps the string "[1]" apart from the list [1]
    if isinstance(content, str):
        return "s" + content
    return "j" + json.dumps(content, sort_keys=True, ensure_ascii=False)


def _last_user_key(body: Mapping[str, Any]) -> str | None:
    messages = body.get("messages")
    return _user_key(messages[-1]) if isinstance(messages, list) and messages else None


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
        self.instants: dict[float, dict[int, Call]] = {}  # sent at -> its open calls
        self.answers: dict[tuple[str, tuple[str, ...]], dict[int, Call]] = {}  # continuation -> open calls

    def add(self, number: int, call: Call) -> None:
        self.order[number] = call
        insort(self.sizes, (call.tokens, number))
        self.instants.setdefault(call.sent, {})[number] = call
        self.learn(number, call)

    def learn(self, number: int, call: Call) -> None:
        """Index an open call by its continuation (once it is known)."""
        if call.continuation is not None:
            self.answers.setdefault(call.continuation, {})[number] = call

    def remove(self, number: int, call: Call) -> None:
        del self.order[number]
        del self.sizes[bisect_left(self.sizes, (call.tokens, number))]
        at = self.instants[call.sent]
        del at[number]
        if not at:
            del self.instants[call.sent]
        if call.continuation is not None:
            same = self.answers[call.continuation]
            del same[number]
            if not same:
                del self.answers[call.continuation]

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

    def __init__(self, requests: Sequence[Record]) -> None:
        self.by_key: dict[str, tuple[int, Call]] = {}
        self.groups: dict[str, _Group] = {}
        self.count = 0
        self.requests = requests
        # what later requests' histories say each call was answered with: read the first time two
        # calls could take one response (a tap of one call at a time never needs it)
        self.answered: dict[str, tuple[str, tuple[str, ...]] | None] | None = None

    def _continuation(self, call: Call) -> tuple[str, tuple[str, ...]] | None:
        assert self.answered is not None
        last_user = _last_user_key(call.last.value["body"])
        return self.answered.get(last_user) if last_user is not None else None

    def _read_histories(self) -> None:
        self.answered = continuations(self.requests)
        for group in self.groups.values():
            for number, call in group.order.items():
                call.continuation = self._continuation(call)
                group.learn(number, call)

    def add(self, call: Call) -> None:
        self.count += 1
        if self.answered is not None:
            call.continuation = self._continuation(call)
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

    def answer(self, response: Mapping[str, Any]) -> Call | list[Call] | None:
        """The call ``response`` answers (module docstring), taken out of the open calls; the
        calls it could answer when the pairing is ambiguous (left open); None if no open call is
        of its provider and model."""
        groups = [
            g
            for g in self.groups.values()
            if g.order and g.provider == response["provider"] and _same_model(g.model, response.get("model"))
        ]
        if not groups:
            return None
        several = sum(len(g.order) for g in groups) > 1
        if several and self.answered is None:
            self._read_histories()
        said = response_key(response)
        if said is not None:
            named = [(n, g) for g in groups for n in g.answers.get(said, {})]
            if len(named) == 1:
                return self.take(*named[0])
        reported = _reported_input(response)
        if reported is not None and several:
            group = min(groups, key=lambda g: g.nearest(reported))
            number = group.nearest(reported)[1]
        else:
            group = min(groups, key=_Group.earliest)
            number = group.earliest()
        chosen = group.order[number]
        contenders = [
            (n, g, c)
            for g in groups
            for n, c in g.instants.get(chosen.sent, {}).items()
            if _consistent(c.continuation, said)
        ]
        if len(contenders) > 1 and reported is not None:
            contenders.sort(key=lambda x: (abs(math.log(max(x[2].tokens, 1) / max(reported, 1))), x[0]))
            nearest, second = (abs(math.log(max(x[2].tokens, 1) / max(reported, 1))) for x in contenders[:2])
            if second - nearest >= math.log(SIZE_FACTOR):
                contenders = contenders[:1]
        if len(contenders) > 1:
            return [c for _, _, c in sorted(contenders, key=lambda x: x[0])]
        if contenders:
            number, group, _ = contenders[0]
        return self.take(number, group)

    def take(self, number: int, group: _Group) -> Call:
        call = group.order[number]
        group.remove(number, call)
        del self.by_key[call.key]
        return call


@dataclass(frozen=True)
class Ambiguous:
    """A response left unpaired: the calls it could answer, which nothing told apart."""

    response: Record
    calls: tuple[Call, ...]


def pair(
    requests: Sequence[Record],
    responses: Sequence[Record],
    counter: TokenCounter,
) -> tuple[list[Call], int, list[Record], list[Ambiguous]]:
    """The calls (retries folded in), each with its response where one answers it; the number of
    retries; the responses no call took; the responses left unpaired as ambiguous (see the module
    docstring). Requests and responses are taken in time order, a request before a response of
    the same instant."""
    calls: list[Call] = []
    open_calls = _OpenCalls(requests)
    left: list[Record] = []
    ambiguous: list[Ambiguous] = []
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
        elif isinstance(chosen, list):
            ambiguous.append(Ambiguous(record, tuple(chosen)))
        else:
            chosen.response = record
    return calls, retries, left, _settled(ambiguous)


def _settled(ambiguous: list[Ambiguous]) -> list[Ambiguous]:
    """The ambiguous responses still ambiguous once each whose calls all but one were answered by
    other responses has taken the one left (as often as that frees another)."""
    waiting = list(ambiguous)
    changed = True
    while changed:
        changed = False
        for entry in list(waiting):
            free = [c for c in entry.calls if c.response is None]
            if len(free) == 1:
                free[0].response = entry.response
                waiting.remove(entry)
                changed = True
    return waiting


__all__ = [
    "Ambiguous",
    "Call",
    "Record",
    "SIZE_FACTOR",
    "content_key",
    "continuations",
    "pair",
    "response_key",
    "usage_of",
]
