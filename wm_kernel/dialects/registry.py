"""The one registry of wire dialects and log formats: every view asks it, none names a provider.

A **wire dialect** is one way a request goes out: which JSON body a composed prompt becomes, who
owns each part of that body (the wire view), where its cache breakpoints sit and with which TTL (the
cache simulator), how its provider reports usage, and how its SDK client is called (send). One
module per dialect holds all of that (``wm_kernel/dialects/anthropic.py``, ``openai_chat.py``,
``openai_responses.py``, ``gemini.py``, ``mira.py``); each registers one :class:`Dialect` here when
imported (the package's ``__init__`` imports them all, so any import of this module has them).

Looking one up:

* :func:`get_dialect` by its name or an alias (``get_dialect("mira")``, ``get_dialect("openai.chat")``);
* :func:`dialect_for_provider` by a model profile's ``provider`` field
  (``wm_kernel.cachesim.profile.ModelProfile.provider``: ``"anthropic"``, ``"openai"``, ``"google"``):
  the model registry maps a model to its provider, this maps the provider to its default wire;
* :func:`dialect_for_sdk` by the package an SDK client comes from (``type(client).__module__``);
* :func:`usage_dialect` by the keys of a usage object (``Dialect.reads_usage``);
* :func:`dialect_names` / :func:`usage_providers`: what is registered.

A **log format** is a file another agent wrote (request bodies, transcripts, traces, a traffic
tap). The import layer (``wm_kernel.interop``) sits above this one, so its readers plug in by
registration, never by an import from here:

.. code-block:: python

    from wm_kernel.dialects.registry import LogFormat, register_log_format

    class MyTapReader:
        def __init__(self, path: str, splitter: Splitter) -> None: ...
        def feed(self, line: int, text: str, value: Any) -> None: ...   # one parsed JSON line
        def finish(self) -> list[LoggedRequest]: ...

    register_log_format(LogFormat("my-tap", MyTapReader, detect=lambda record: "tap" in record,
                                  priority=20, title="my traffic tap"))

``detect(record)`` is asked of a file's first record when no format is named (formats by ascending
``priority``, then in registration order; the first True wins); ``reader(path, splitter)`` is built
once per file and fed every record. A format whose file is not JSON Lines sets ``read_file`` instead
(``read_file(path, text, splitter) -> (requests, issues)``), and ``sniff(text)`` to claim a whole file
from its first characters. The module that registers must be imported before a log is read: add it
to ``wm_kernel/interop/__init__.py`` (as ``formats.py`` and ``otlp.py`` are). ``log_formats()``
lists the names; ``import_log(..., format=NAME)`` takes any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: A dialect's answer to a send: (reply text, usage dict or None, request id, stop reason).
CallResult = tuple[str, dict[str, Any] | None, str | None, str | None]


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


class Dialect:
    """One wire dialect (see the module docstring). Subclasses set the attributes and override the
    hooks their provider has; a hook a dialect lacks raises ValueError naming it.

    ``name``: the wire's name; ``aliases``: other names meaning it (a log's dialect name, an
    OpenTelemetry provider name); ``provider``: the provider billed, as a Usage or an exchange
    names it; ``serves``: the model-profile providers whose models it can send to;
    ``default_for``: the model-profile providers whose models use it unless told otherwise;
    ``sdk``: the package of its SDK client; ``body_shape``: its body's JSON shape;
    ``default_model``: the model a log of its requests is simulated with when the log's own is
    unknown; ``whole_prefix_cached``: the provider caches every prefix automatically (no
    breakpoints), so an imported request's tools and system text are all its cached part."""

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
    whole_prefix_cached: bool = False
    #: the JSON shape of its request body: ``messages`` (Anthropic's), ``chat``, ``responses``, ""
    body_shape: str = ""
    #: the cache simulator's model for its requests when a log's own model is not registered
    default_model: str = ""
    #: the name of the composer ``Layout`` whose sessions use this wire by default ("" for none)
    layout: str = ""
    #: the wire sets its own ``max_tokens`` (a view does not pass the model's output limit)
    own_max_tokens: bool = False
    #: its body builder takes the current user message as ``user=`` (else ``user`` is a body field)
    takes_user: bool = False
    #: its ``cache_layout`` places every message of the conversation before the last assistant
    #: reply as a plain slot of its own (messages layer, no breakpoint, in order, together), so the
    #: simulator lays out only what follows it and reuses the blocks of the rest turn after turn
    #: (a replay costs what each turn adds); False (the default) lays out every message each turn
    plain_history: bool = False

    def __repr__(self) -> str:
        return f"<Dialect {self.name}>"

    def _lacks(self, what: str) -> ValueError:
        if what == "request body builder":
            others = ", ".join(d.name for d in _dialects.values() if d.builds_body)
            return ValueError(f"the {self.name} wire has no {what} (wires with one: {others})")
        return ValueError(f"the {self.name} wire has no {what}")

    @property
    def builds_body(self) -> bool:
        """Whether this wire builds request bodies (the wire view and send need one)."""
        return type(self).body is not Dialect.body

    # -- the request body
    def body(
        self,
        composed: Mapping[str, Any],
        history: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        **options: Any,
    ) -> dict[str, Any]:
        """The request body for ``composed`` after ``history`` with ``tools`` (``{"name",
        "description", "input_schema"}`` schemas), ``options`` passed to the body builder."""
        raise self._lacks("request body builder")

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
    #: most of (:func:`usage_dialect`), never by the absence of another wire's keys
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

    def parse_usage(self, usage: Mapping[str, Any], where: str, common: Mapping[str, Any]) -> Any:
        """The ``wm_kernel.dialects.usage.Usage`` of one usage object (``common``: model,
        request_id, prefix, line)."""
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


@dataclass(frozen=True)
class StoredResponse:
    """One response a provider stored: its id, model, creation time (Unix seconds), usage object
    and finish reason (what a stored-responses export holds; the request's messages are not in it)."""

    id: str | None
    model: str | None
    created: float | None
    usage: Mapping[str, Any] | None
    finish_reason: str | None = None


@dataclass(frozen=True)
class LogFormat:
    """A log format a reader is registered for (see the module docstring)."""

    name: str
    reader: Callable[..., Any] | None = None
    detect: Callable[[Any], bool] | None = None
    priority: int = 100
    title: str = ""
    dialect: str | None = None
    read_file: Callable[..., Any] | None = None
    sniff: Callable[[str], bool] | None = None


#: The kit's own wire: what a view lays a request out as when neither it nor a session names one.
DEFAULT_WIRE = "anthropic"

_dialects: dict[str, Dialect] = {}
_names: dict[str, str] = {}  # name or alias -> dialect name
_formats: dict[str, LogFormat] = {}
#: ``usage_providers()`` as last computed (every Usage built asks): None once a dialect registers
_providers: tuple[str, ...] | None = None


def register_dialect(dialect: Dialect, *, replace: bool = False) -> Dialect:
    """Register ``dialect`` under its name and aliases (``replace=True`` to override one)."""
    if not isinstance(dialect, Dialect):
        raise TypeError(f"expected a Dialect, got {type(dialect).__name__}")
    if not dialect.name:
        raise ValueError("a dialect needs a name")
    if dialect.name in _dialects and not replace:
        raise ValueError(f"dialect {dialect.name!r} is already registered; pass replace=True")
    for alias in (dialect.name, *dialect.aliases):
        owner = _names.get(alias)
        if owner is not None and owner != dialect.name and not replace:
            raise ValueError(f"{alias!r} already names the {owner} dialect")
    global _providers
    _dialects[dialect.name] = dialect
    _providers = None
    ordered = sorted(_dialects.values(), key=lambda d: d.rank)  # stable: registration order within a rank
    _dialects.clear()
    _dialects.update((d.name, d) for d in ordered)
    for alias in (dialect.name, *dialect.aliases):
        _names[alias] = dialect.name
    return dialect


def dialect_names() -> tuple[str, ...]:
    """The registered dialects' names, in registration order."""
    return tuple(_dialects)


def dialects() -> tuple[Dialect, ...]:
    """The registered dialects, in registration order."""
    return tuple(_dialects.values())


def known_name(name: object) -> bool:
    """Whether ``name`` is a registered dialect's name or alias."""
    return isinstance(name, str) and name in _names


def get_dialect(name: str | Dialect) -> Dialect:
    """The dialect called ``name`` (or one of its aliases); a Dialect is returned as is."""
    if isinstance(name, Dialect):
        return name
    if not isinstance(name, str) or name not in _names:
        raise ValueError(f"unknown wire {name!r}; wires: {', '.join(_dialects)}")
    return _dialects[_names[name]]


def dialect_for_provider(provider: str) -> Dialect:
    """The default wire of a model-profile provider (``ModelProfile.provider``)."""
    for dialect in _dialects.values():
        if provider in dialect.default_for:
            return dialect
    raise ValueError(f"no wire is registered for {provider!r} models; wires: {', '.join(_dialects)}")


def check_serves(dialect: Dialect, provider: str, model: str) -> None:
    """ValueError unless ``dialect`` can send to a model of ``provider``."""
    if provider not in dialect.serves:
        raise ValueError(
            f"{model} is a {provider} model; the {dialect.name} wire sends to "
            f"{' or '.join(dialect.serves) or 'no'} models"
        )


def choose_wire(wire: str | Dialect | None, session_wire: str | None, provider: str, model: str) -> Dialect:
    """The wire a view of ``model`` (whose profile names ``provider``) assumes: ``wire`` when given
    (ValueError when it cannot send to that model), else the session's wire when it can, else the
    provider's default."""
    if wire is not None:
        dialect = get_dialect(wire)
        check_serves(dialect, provider, model)
        return dialect
    if session_wire is not None and provider in get_dialect(session_wire).serves:
        return get_dialect(session_wire)
    return dialect_for_provider(provider)


def wire_for_layout(layout: str) -> str | None:
    """The wire a session laid out by the ``Layout`` called ``layout`` uses by default (MIRA's for
    ``Layout.original()``), or None (the model's provider's own)."""
    for dialect in _dialects.values():
        if dialect.layout and dialect.layout == layout:
            return dialect.name
    return None


def dialect_for_sdk(package: str) -> Dialect:
    """The default wire of an SDK client's package (``type(client).__module__``'s first part)."""
    for dialect in _dialects.values():
        if dialect.sdk == package and dialect.default_for:
            return dialect
    raise TypeError(f"client must be an {' or '.join(sdk_clients())} client, got a {package} object")


def sdk_clients() -> tuple[str, ...]:
    """The SDK client classes the registered wires send with (``anthropic.Anthropic``...)."""
    return tuple(dict.fromkeys(d.client for d in _dialects.values() if d.client and d.default_for))


def usage_providers() -> tuple[str, ...]:
    """The provider names a Usage or an exchange may carry (the registered dialects' ``provider``)."""
    global _providers
    if _providers is None:
        _providers = tuple(dict.fromkeys(d.provider for d in _dialects.values() if d.provider))
    return _providers


def usage_dialect(usage: Mapping[str, Any]) -> Dialect | None:
    """The dialect whose usage shape ``usage`` holds most of (``Dialect.usage_score``), or None.

    A bare ``{"input_tokens", "output_tokens"}`` is as much Anthropic's as OpenAI Responses' (they
    read it alike: nothing cached, nothing written); the first registered reads it."""
    best: Dialect | None = None
    score = 0
    for dialect in _dialects.values():
        found = dialect.usage_score(usage)
        if found > score:
            best, score = dialect, found
    return best


def usage_titles() -> str:
    """The wires whose usage can be read, for an error that lists them."""
    titles = [d.usage_title or d.name for d in _dialects.values() if d.usage_anchor]
    return ", ".join(dict.fromkeys(titles))


def usage_dialect_named(provider: str) -> Dialect:
    """The dialect reading usage billed by ``provider`` (a ``Usage.provider`` name or a dialect name)."""
    dialect = get_dialect(provider)
    if dialect.usage_anchor:
        return dialect
    for other in _dialects.values():
        if other.provider == dialect.provider and other.usage_anchor:
            return other
    raise ValueError(f"the {dialect.name} wire has no usage reader")


def body_dialect(body: Mapping[str, Any]) -> Dialect | None:
    """The dialect a logged request body reads as: strong evidence first, then weak, each in
    ``log_priority`` order; None when no dialect with a log format claims it."""
    candidates = sorted((d for d in _dialects.values() if d.log_format), key=lambda d: d.log_priority)
    for dialect in candidates:
        if dialect.is_body(body):
            return dialect
    for dialect in candidates:
        if dialect.may_be_body(body):
            return dialect
    return None


def register_log_format(log_format: LogFormat, *, replace: bool = False) -> LogFormat:
    """Register a log format's reader (see the module docstring; ``replace=True`` to override)."""
    if not isinstance(log_format, LogFormat):
        raise TypeError(f"expected a LogFormat, got {type(log_format).__name__}")
    if not log_format.name:
        raise ValueError("a log format needs a name")
    if log_format.reader is None and log_format.read_file is None:
        raise ValueError(f"log format {log_format.name!r} needs a reader or a read_file")
    if log_format.name in _formats and not replace:
        raise ValueError(f"log format {log_format.name!r} is already registered; pass replace=True")
    _formats[log_format.name] = log_format
    return log_format


def log_formats() -> tuple[str, ...]:
    """The registered log formats' names, in registration order."""
    return tuple(_formats)


def get_log_format(name: str) -> LogFormat:
    """The log format called ``name``; ValueError naming the known ones."""
    if name not in _formats:
        raise ValueError(f"unknown format {name!r}; formats: {', '.join(_formats)}")
    return _formats[name]


def detect_log_format(record: Any) -> str | None:
    """The registered format one parsed record belongs to (see the module docstring), or None."""
    for log_format in _ordered_formats():
        if log_format.detect is not None and log_format.detect(record):
            return log_format.name
    return None


def sniff_log_format(text: str) -> str | None:
    """The registered format that claims a whole file from its text (``LogFormat.sniff``), or None."""
    for log_format in _ordered_formats():
        if log_format.sniff is not None and log_format.sniff(text):
            return log_format.name
    return None


def _ordered_formats() -> Iterable[LogFormat]:
    return sorted(_formats.values(), key=lambda f: f.priority)


__all__ = [
    "CallResult",
    "PartRef",
    "Piece",
    "Slot",
    "TurnPieces",
    "Dialect",
    "LogFormat",
    "StoredResponse",
    "DEFAULT_WIRE",
    "register_dialect",
    "dialect_names",
    "dialects",
    "known_name",
    "get_dialect",
    "dialect_for_provider",
    "check_serves",
    "choose_wire",
    "wire_for_layout",
    "dialect_for_sdk",
    "sdk_clients",
    "usage_providers",
    "usage_dialect",
    "usage_dialect_named",
    "body_dialect",
    "register_log_format",
    "log_formats",
    "get_log_format",
    "detect_log_format",
    "sniff_log_format",
]
