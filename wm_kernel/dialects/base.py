"""What a wire dialect is: the :class:`Dialect` every wire module subclasses, the pieces its hooks
trade in, and what every body builder reads of a composed prompt and a conversation.

A **wire dialect** is one way a request goes out: which JSON body a composed prompt becomes, who
owns each part of that body (the wire view), where its cache breakpoints sit and with which TTL (the
cache simulator), how its provider reports usage, and how its SDK client is called (send). One
module per dialect holds all of that (``wm_kernel/dialects/anthropic.py``, ``openai_chat.py``,
``openai_responses.py``, ``gemini.py``, ``bedrock.py``, ``mira.py``), each defining its ``DIALECT``;
``wm_kernel.dialects.registry`` names those modules and reads them when first asked. This module
imports nothing of theirs, so they can all build on it.

A body reads only the composed prompt's five keys (``wm_kernel.core.prompt_dict``): the dialects
sit below the rest of the core, which calls them (``ComposedPrompt.to_anthropic`` is
``get_dialect("anthropic").body``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wm_kernel.core.prompt_dict import COMPOSED_KEYS
from wm_kernel.dialects.counts import UsageCounts
from wm_kernel.dialects.elements import BodyElement, LoggedBlock, LoggedBlocks, marked_prefix

#: A dialect's answer to a send: (reply text, usage dict or None, request id, stop reason).
CallResult = tuple[str, dict[str, Any] | None, str | None, str | None]

#: Body fields built from the composed prompt, which options may not replace.
RESERVED_FIELDS = ("system", "messages")


@dataclass(frozen=True, slots=True)
class PartRef:
    """One part of a composed prompt or conversation as a body carries it, in body text order:
    ``key`` is a composed key (``"cached_content"``, ``"post_history_items[2]"``...) or
    ``"history[i]"`` for the i-th message of the conversation."""

    key: str


@dataclass(frozen=True, slots=True)
class Piece:
    """One block of a request for the cache simulator, before the wire places it: a content key
    (equal keys, equal content), its tokens, a label, and what it is (``kind``: ``tools``,
    ``system``, ``system_uncached``, ``prefix``, ``message``, ``user``, ``post_history``,
    ``notification``; ``role`` for a message)."""

    key: str
    tokens: int
    label: str
    kind: str
    role: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Slot:
    """A piece placed by a wire: in which layer (``tools``, ``system``, ``messages``) and with which
    cache breakpoint (None, or a TTL name such as ``"5m"`` / ``"1h"``)."""

    piece: Piece
    layer: str
    breakpoint: str | None = None


@dataclass(frozen=True, slots=True)
class TurnPieces:
    """What one turn's request is made of, by kind, for :meth:`Dialect.cache_layout`:
    ``conversation`` is the history before the current user message, ``user`` that message."""

    tools: Sequence[Piece]
    system: Sequence[Piece]  # cached system sections, then the non-cached ones
    prefix: Sequence[Piece]
    conversation: Sequence[Piece]
    user: Piece | None
    post_history: Sequence[Piece]
    notification: Sequence[Piece]


@dataclass(frozen=True, slots=True)
class BodyRequest:
    """What :meth:`Dialect.body` was asked, as its ``build`` hook gets it: the composed prompt, the
    conversation, the current user message, the tool schemas and the wire's other fields
    (``model`` and ``max_tokens`` among them only when given)."""

    composed: Mapping[str, Any]
    history: Iterable[Mapping[str, Any]]
    user: str | None
    tools: Sequence[Mapping[str, Any]]
    options: dict[str, Any]


@dataclass(frozen=True)
class StoredResponse:
    """One response a provider stored: its id, model, creation time (Unix seconds), usage object
    and finish reason (what a stored-responses export holds; the request's messages are not in it)."""

    id: str | None
    model: str | None
    created: float | None
    usage: Mapping[str, Any] | None
    finish_reason: str | None = None


class Dialect:
    """One wire dialect (see the module docstring). Subclasses set the attributes and override the
    hooks their provider has; a hook a dialect lacks raises ValueError naming it.

    ``name``: the wire's name; ``aliases``: other names meaning it (a log's dialect name, an
    OpenTelemetry provider name); ``provider``: the provider billed, as a Usage or an exchange
    names it; ``serves``: the model-profile providers whose models it can send to;
    ``default_for``: the model-profile providers whose models use it unless told otherwise;
    ``sdk``: the package of its SDK client; ``default_model``: the model a log of its requests is
    simulated with when the log's own is unknown."""

    name: str = ""
    aliases: tuple[str, ...] = ()
    #: where the registry lists it (lower first; then in registration order)
    rank: int = 100
    provider: str = ""
    serves: tuple[str, ...] = ()
    default_for: tuple[str, ...] = ()
    sdk: str | None = None
    #: the SDK client class it sends with, as an error names it (``anthropic.Anthropic``)
    client: str = ""
    title: str = ""
    #: the cache simulator's model for its requests when a log's own model is not registered
    default_model: str = ""
    #: the name of the composer ``Layout`` whose sessions use this wire by default ("" for none)
    layout: str = ""
    #: its ``cache_layout`` places every message of the conversation before the last assistant
    #: reply as a plain slot of its own (messages layer, no breakpoint, in order, together), so the
    #: simulator lays out only what follows it and reuses the blocks of the rest turn after turn
    #: (a replay costs what each turn adds); False (the default) lays out every message each turn
    plain_history: bool = False

    def __repr__(self) -> str:
        return f"<Dialect {self.name}>"

    def _lacks(self, what: str) -> ValueError:
        return ValueError(f"the {self.name} wire has no {what}")

    @property
    def builds_body(self) -> bool:
        """Whether this wire builds request bodies (the wire view and send need one)."""
        return type(self).build is not Dialect.build

    # -- the request body
    def body(
        self,
        composed: Mapping[str, Any],
        history: Iterable[Mapping[str, Any]] = (),
        *,
        user: str | None = None,
        tools: Sequence[Mapping[str, Any]] = (),
        model: str | None = None,
        max_tokens: int | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """The request body for ``composed`` after the conversation ``history`` (``{"role",
        "content"}`` messages), every wire asked alike: ``user`` is the current user message,
        sent where the wire sends it (None: a conversation that ends with the user's message ends
        with it); ``tools`` are ``{"name", "description", "input_schema"}`` schemas; ``model`` and
        ``max_tokens`` None (or left out) take the wire's own; ``options`` are the wire's other
        fields (``temperature``, MIRA's ``effort``...)."""
        if model is not None:
            options["model"] = model
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        return self.build(BodyRequest(composed, history, user, tools, options))

    def build(self, request: BodyRequest) -> dict[str, Any]:
        """The body :meth:`body` was asked for (the hook a wire with a body builder overrides)."""
        raise self._lacks("request body builder")

    def reserve(self, body: Mapping[str, Any]) -> int | None:
        """The reply tokens ``body`` reserves (its ``max_tokens``), None when it names none."""
        asked = body.get("max_tokens")
        return asked if isinstance(asked, int) and not isinstance(asked, bool) else None

    def wire_parts(self, composed: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> list[PartRef]:
        """The parts of ``composed`` and ``history`` in the order the body's text carries them."""
        raise self._lacks("wire layout")

    def framed_messages(self, body: Mapping[str, Any]) -> int:
        """How many messages the provider frames (for the framing-token estimate)."""
        return len(body.get("messages", ()))

    # -- the cache simulator
    def cache_layout(self, turn: TurnPieces) -> list[Slot]:
        """The turn's pieces in the order the provider reads them, with this wire's breakpoints."""
        raise self._lacks("cache layout")

    # -- usage
    #: the keys a usage object of this wire holds: at least one of ``usage_anchor`` (its prompt
    #: count), then any of ``usage_keys``; a usage object is read by the wire whose keys it holds
    #: most of (``registry.usage_dialect``), never by the absence of another wire's keys
    usage_anchor: tuple[str, ...] = ()
    usage_keys: tuple[str, ...] = ()
    #: how an error names its usage shape ("" for the wire's name)
    usage_title: str = ""

    def reads_usage(self, usage: Mapping[str, Any]) -> bool:
        """Whether a usage object holding these keys can be this wire's (it holds its prompt count)."""
        return any(key in usage for key in self.usage_anchor)

    def usage_score(self, usage: Mapping[str, Any]) -> int:
        """How many of this wire's usage keys ``usage`` holds (0: it is not this wire's)."""
        if not self.reads_usage(usage):
            return 0
        return 1 + sum(key in usage for key in self.usage_keys)

    def parse_usage(self, usage: Mapping[str, Any], where: str) -> UsageCounts:
        """The counts of one usage object of this wire (``where`` names it in errors);
        ``wm_kernel.dialects.usage.parse_usage`` makes a ``Usage`` of them."""
        raise self._lacks("usage reader")

    # -- send
    def call(self, client: Any, body: dict[str, Any], stream: bool, on_text: Callable[[str], None]) -> CallResult:
        """Send ``body`` with the SDK ``client``."""
        raise self._lacks("SDK call")

    # -- logs of request bodies
    #: the log format of its request bodies ("" for none) and where its detection is tried
    log_format: str = ""
    log_priority: int = 100
    #: the provider a logged request of this wire names (OpenTelemetry's ``gen_ai.provider.name``);
    #: "" for ``provider``
    log_provider: str = ""

    def body_elements(self, body: Mapping[str, Any]) -> list[BodyElement]:
        """The elements of a logged request body of this wire (``wm_kernel.dialects.elements``):
        what the import layer cuts into sections."""
        raise self._lacks("reader of logged bodies")

    @property
    def reads_bodies(self) -> bool:
        """Whether this wire reads its logged request bodies back (``body_elements``)."""
        return type(self).body_elements is not Dialect.body_elements

    def reads_bodies_like(self, other: Dialect) -> bool:
        """Whether ``other``'s logged bodies are read as this wire's are (one element reader: MIRA's
        bodies are Anthropic Messages bodies)."""
        return self.reads_bodies and type(other).body_elements is type(self).body_elements

    def cached_blocks(self, blocks: LoggedBlocks) -> Sequence[LoggedBlock]:
        """The sections of a logged request of this wire its provider's cache serves: up to the
        last cache mark (a provider that caches every prefix by itself says all its tools and
        system text)."""
        return marked_prefix(blocks)

    def is_body(self, body: Mapping[str, Any]) -> bool:
        """Strong evidence that a logged request body is of this dialect."""
        return False

    def may_be_body(self, body: Mapping[str, Any]) -> bool:
        """Weak evidence, asked when no dialect had strong evidence."""
        return False

    def check_body(self, body: Mapping[str, Any]) -> None:
        """ValueError if ``body`` cannot be a request of this dialect."""
        if not isinstance(body.get("messages"), list):
            raise ValueError(f"not {self.title} request: no 'messages' list")

    # -- logs of stored responses (the provider's own record of a call: no request body)
    #: what a log of its stored responses is called ("" for none)
    stored_title: str = ""

    def stored_response(self, record: Mapping[str, Any]) -> StoredResponse | None:
        """``record`` read as a response the provider stores and lists (with its usage, model and
        time, but not the request), or None if it is not one."""
        return None


# -- what every body builder reads ------------------------------------------------------------------


def prompt_parts(composed: Mapping[str, Any]) -> tuple[str, str, list[str], list[str]]:
    """(cached, non_cached, before-history parts, after-history parts) of a composed prompt, its
    five keys checked: blank prefix and post-history items are left out, the HUD ends the parts
    after the history when it is not blank."""
    if not isinstance(composed, Mapping):
        raise TypeError(f"expected a ComposedPrompt or five-key dict, got {type(composed).__name__}")
    missing = [k for k in COMPOSED_KEYS if k not in composed]
    if missing:
        raise ValueError(f"composed prompt is missing keys: {', '.join(missing)}")
    for key in ("cached_content", "non_cached_content", "notification_center"):
        if not isinstance(composed[key], str):
            raise TypeError(f"{key} must be a str, got {type(composed[key]).__name__}")
    for key in ("conversation_prefix_items", "post_history_items"):
        items = composed[key]
        if isinstance(items, str) or not all(isinstance(i, str) for i in items):
            raise TypeError(f"{key} must be a list of strings")
    before = [i for i in composed["conversation_prefix_items"] if i.strip()]
    after = [i for i in composed["post_history_items"] if i.strip()]
    if composed["notification_center"].strip():
        after.append(composed["notification_center"])
    return composed["cached_content"], composed["non_cached_content"], before, after


def conversation(history: Iterable[Mapping[str, Any]], *, alternate: bool) -> list[dict[str, str]]:
    """``history`` as checked ``{"role", "content"}`` messages (``alternate``: no two of one role in
    a row, as the Messages API needs)."""
    if isinstance(history, (str, bytes, Mapping)):
        raise TypeError("history must be a list of {'role', 'content'} messages")
    out: list[dict[str, str]] = []
    for index, message in enumerate(history):
        if not isinstance(message, Mapping):
            raise TypeError(f"history[{index}] must be a dict with role and content, got {type(message).__name__}")
        unknown = sorted(set(message) - {"role", "content"})
        if unknown:
            raise ValueError(f"history[{index}] has unknown keys {unknown}; expected role and content")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise ValueError(f"history[{index}].role must be 'user' or 'assistant', got {role!r}")
        content = message.get("content")
        if not isinstance(content, str):
            raise TypeError(f"history[{index}].content must be a str, got {type(content).__name__}")
        if alternate and out and out[-1]["role"] == role:
            raise ValueError(
                f"history[{index}] is a second {role!r} message in a row; the Messages "
                f"API needs user and assistant messages to alternate"
            )
        out.append({"role": role, "content": content})
    return out


def with_user(history: Iterable[Mapping[str, Any]], user: str | None) -> Iterable[Mapping[str, Any]]:
    """The conversation with the current user message ``user`` (when given) as its last message."""
    if user is None:
        return history
    if not isinstance(user, str):
        raise TypeError(f"user must be a str or None, got {type(user).__name__}")
    if isinstance(history, (str, bytes, Mapping)):
        raise TypeError("history must be a list of {'role', 'content'} messages")
    return [*history, {"role": "user", "content": user}]


def split_user(history: Iterable[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], str | None]:
    """(the conversation before its last message when that is the user's, that message's text or
    None): a turn's conversation as :meth:`Dialect.body` takes it, ``history`` and ``user``."""
    messages = list(history)
    if (
        messages
        and isinstance(messages[-1], Mapping)
        and messages[-1].get("role") == "user"
        and isinstance(messages[-1].get("content"), str)
    ):
        return messages[:-1], messages[-1]["content"]
    return messages, None


def add_options(body: dict[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with the caller's other fields copied in (none may replace ``system`` or ``messages``)."""
    clash = [k for k in options if k in RESERVED_FIELDS]
    if clash:
        raise ValueError(f"{', '.join(clash)} is built from the composed prompt and cannot be passed")
    body.update(options)
    return body


def check_model(model: object) -> str:
    """``model`` when it is a non-empty string."""
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"model must be a non-empty string, got {model!r}")
    return model


def check_max_tokens(max_tokens: object) -> int:
    """``max_tokens`` when it is a positive int."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    return max_tokens


__all__ = [
    "CallResult",
    "RESERVED_FIELDS",
    "PartRef",
    "Piece",
    "Slot",
    "TurnPieces",
    "BodyRequest",
    "StoredResponse",
    "Dialect",
    "prompt_parts",
    "conversation",
    "with_user",
    "split_user",
    "add_options",
    "check_model",
    "check_max_tokens",
]
