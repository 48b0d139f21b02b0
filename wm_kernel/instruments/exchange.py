"""One exchange with a model: the user's message, the reply, and the usage the provider billed.

An :class:`Exchange` is what ``wm_kernel.providers.send`` records in a session's History once a
request succeeded (and what a scenario's ``send`` step holds, so a replay answers from it). It keeps
the provider's usage object exactly as returned (a JSON dict), so nothing is lost to a parser of
today; ``wm_kernel.dialects.usage`` reads it. ``prefix`` holds digests of the parts of the request
that decide whether a provider cache can be read (tools, the cached system text, the sampling
parameters), so a reconciliation can tell a prefix that changed from a provider that missed.

It never holds credentials: the request's headers are not part of it, and :meth:`Exchange.from_json`
refuses a record with a field it does not know.

Examples
--------
>>> e = Exchange(turn=2, provider="anthropic", model="claude-sonnet-4-6", user="Hi", reply="Hello.",
...              usage={"input_tokens": 12, "output_tokens": 3}, request_id="req_1")
>>> e.messages()
[{'role': 'user', 'content': 'Hi'}, {'role': 'assistant', 'content': 'Hello.'}]
>>> Exchange.from_json(e.to_json()) == e
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wm_kernel.core.events import Event
from wm_kernel.dialects.registry import usage_providers

#: Version of the record an exchange is stored as (the ``"v"`` field).
EXCHANGE_VERSION = 1
_FIELDS = (
    "v",
    "turn",
    "provider",
    "model",
    "user",
    "reply",
    "usage",
    "request_id",
    "stop_reason",
    "prefix",
    "max_tokens",
)


@dataclass(frozen=True)
class Exchange:
    """A user message sent at ``turn`` and the model's reply, with the billed usage (see the module
    docstring). ``usage`` is the provider's usage object as a JSON dict (None if it sent none)."""

    turn: int
    provider: str
    model: str
    user: str
    reply: str
    usage: Mapping[str, Any] | None = None
    request_id: str | None = None
    stop_reason: str | None = None
    prefix: Mapping[str, str] = field(default_factory=dict)
    #: the ``max_tokens`` the request asked for (the room kept for the reply); None: not recorded
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.turn, bool) or not isinstance(self.turn, int) or self.turn < 0:
            raise ValueError(f"turn must be a non-negative int, got {self.turn!r}")
        if self.provider not in usage_providers():
            raise ValueError(f"provider must be one of {', '.join(usage_providers())}, got {self.provider!r}")
        for name in ("model", "user", "reply"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")
        if self.usage is not None and not isinstance(self.usage, Mapping):
            raise TypeError(f"usage must be a dict or None, got {type(self.usage).__name__}")
        for name in ("request_id", "stop_reason"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
        if not isinstance(self.prefix, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.prefix.items()
        ):
            raise TypeError("prefix must map part names to digests (strings)")
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise ValueError(f"max_tokens must be a positive int or None, got {self.max_tokens!r}")

    def messages(self) -> list[dict[str, str]]:
        """The two messages this exchange adds to the conversation."""
        return [{"role": "user", "content": self.user}, {"role": "assistant", "content": self.reply}]

    def to_json(self) -> dict[str, Any]:
        """The stored record (``"v": 1``; ``max_tokens`` only when recorded)."""
        record = {
            "v": EXCHANGE_VERSION,
            "turn": self.turn,
            "provider": self.provider,
            "model": self.model,
            "user": self.user,
            "reply": self.reply,
            "usage": None if self.usage is None else dict(self.usage),
            "request_id": self.request_id,
            "stop_reason": self.stop_reason,
            "prefix": dict(self.prefix),
        }
        if self.max_tokens is not None:
            record["max_tokens"] = self.max_tokens
        return record

    @classmethod
    def from_json(cls, raw: Any) -> Exchange:
        """The exchange a stored record holds; ValueError naming what is wrong."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"an exchange record must be a JSON object, got {type(raw).__name__}")
        unknown = sorted(set(raw) - set(_FIELDS))
        if unknown:
            raise ValueError(f"an exchange record has unknown fields {unknown}")
        if raw.get("v", EXCHANGE_VERSION) != EXCHANGE_VERSION:
            raise ValueError(f"exchange record version {raw.get('v')!r}; this reads {EXCHANGE_VERSION}")
        missing = [k for k in ("turn", "provider", "model", "user", "reply") if k not in raw]
        if missing:
            raise ValueError(f"an exchange record lacks {', '.join(missing)}")
        try:
            return cls(
                turn=raw["turn"],
                provider=raw["provider"],
                model=raw["model"],
                user=raw["user"],
                reply=raw["reply"],
                usage=raw.get("usage"),
                request_id=raw.get("request_id"),
                stop_reason=raw.get("stop_reason"),
                prefix=raw.get("prefix") or {},
                max_tokens=raw.get("max_tokens"),
            )
        except TypeError as exc:
            raise ValueError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class ExchangeRecordedEvent(Event):
    """A session's History recorded an exchange (a send succeeded, or a replay answered from a
    recording); a scenario recorder writes it as a ``send`` step."""

    exchange: Exchange | None = None

    def detail(self) -> str:
        """One line for the event log: turn, provider, model and the reply's size."""
        e = self.exchange
        return "" if e is None else f"turn={e.turn}, {e.provider} {e.model}, reply of {len(e.reply):,} chars"
