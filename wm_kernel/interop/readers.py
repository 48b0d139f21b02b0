"""The log formats another agent's file can be read as: the one registry the import asks, and the
readers of the wires' request bodies.

A **log format** is a file another agent wrote (request bodies, transcripts, traces, a traffic
tap). The built-in ones are listed here once: a wire dialect with a log format of its own
(``Dialect.log_format``) has its request bodies read by :class:`BodyReader` (and its stored
responses, where its provider keeps them, by :class:`StoredResponseReader`), and every other
format is the ``LOG_FORMAT`` of the module :data:`BUILT_IN` names. They are read when the registry
is first asked, so what it answers does not depend on which module was imported first.

Another format plugs in by registration:

.. code-block:: python

    from wm_kernel.interop import register_log_format
    from wm_kernel.interop.formats import LogFormat

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
from its first characters. ``log_formats()`` lists the names; ``import_log(..., format=NAME)`` takes
any of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from wm_kernel.dialects.base import Dialect
from wm_kernel.dialects.bedrock import model_from_url
from wm_kernel.dialects.registry import body_dialect, dialects, get_dialect
from wm_kernel.interop.bodies import cut_body
from wm_kernel.interop.formats import LogFormat, LoggedRequest, epoch_time, parse_time
from wm_kernel.interop.jsonspan import locate
from wm_kernel.interop.split import Splitter

#: The built-in formats other than the wires' request bodies, by name, and the module whose
#: ``LOG_FORMAT`` each is: read, after the wires' formats and in this order, when first asked.
BUILT_IN: Mapping[str, str] = MappingProxyType(
    {
        "claude-code": "wm_kernel.interop.claude_code",
        "mira-tap": "wm_kernel.interop.mira",
        "otlp": "wm_kernel.interop.otlp",
        "claude-trace": "wm_kernel.interop.agents.claude_trace",
        "codex": "wm_kernel.interop.agents.codex",
        "openhands": "wm_kernel.interop.agents.openhands",
    }
)

_formats: dict[str, LogFormat] = {}
_loaded = False


def _body(value: Any) -> Any:
    if isinstance(value, Mapping) and isinstance(value.get("request"), Mapping):
        return value["request"]
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _detects_body(dialect: Dialect) -> Any:
    """A record is a request body of ``dialect`` (alone or in an envelope): the wire registry's choice."""

    def detects(value: Any) -> bool:
        body = _body(value) if isinstance(value, Mapping) else None
        return isinstance(body, Mapping) and body_dialect(body) is dialect

    return detects


class BodyReader:
    """JSON Lines of request bodies of one wire dialect, alone or in an envelope (module docstring).

    ``wire`` is the dialect (``wm_kernel.dialects``): its log format (else its name) names the
    records (``dialect``, ``usage_format``), its ``provider`` the provider, its ``check_body`` what a
    body must hold, its ``body_elements`` how the body is cut. A wire without a log format of its
    own (MIRA's) reads the bodies of any wire that reads them alike (Anthropic Messages)."""

    def __init__(self, path: str, splitter: Splitter, wire: Dialect | str = "anthropic") -> None:
        self.path = path
        self.splitter = splitter
        self.wire = get_dialect(wire)
        self.dialect = self.usage_format = self.wire.log_format or self.wire.name
        self.provider = self.wire.log_provider or self.wire.provider
        self.requests: list[LoggedRequest] = []

    def check(self, body: Mapping[str, Any]) -> None:
        """ValueError if ``body`` is not a request of this dialect."""
        self.wire.check_body(body)

    def title(self) -> str:
        return self.wire.title

    def _same_shape(self, kind: str) -> bool:
        """Whether the log format ``kind`` holds bodies of this wire's shape."""
        wire = get_log_format(kind).dialect
        return wire is not None and self.wire.reads_bodies_like(get_dialect(wire))

    def feed(self, line: int, text: str, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise ValueError(f"not {self.title()} request: a JSON {type(value).__name__}, not an object")
        body = _body(value)
        enveloped = body is not value
        self.check(body)
        kind = detect_log_format(value)
        if kind not in (self.dialect, None) and not self._same_shape(kind):
            raise ValueError(f"not {self.title()} request: it reads as {kind}")
        node = locate(text)
        response = value.get("response") if enveloped else None
        usage_key = "usageMetadata" if isinstance(response, Mapping) and "usageMetadata" in response else "usage"
        usage = response.get(usage_key) if isinstance(response, Mapping) else None
        if usage is not None and not isinstance(usage, Mapping):
            raise ValueError(f"response.{usage_key} must be an object, got {usage!r}")
        sent_at = parse_time(value.get("timestamp"), "timestamp") if enveloped else None
        sections = cut_body(text, body, self.wire.name, self.splitter, node["request"] if enveloped else node)
        rid = value.get("request_id") if enveloped else None
        answer = response if isinstance(response, Mapping) else {}
        # Bedrock names the model only in the URL (an envelope's ``url``); else the body, else the answer
        # (Gemini's answer names it ``modelVersion``)
        model = (
            body.get("model")
            or (model_from_url(value.get("url")) if enveloped else None)
            or answer.get("model")
            or answer.get("modelVersion")
        )
        choices = answer.get("choices") or answer.get("candidates")
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else {}
        finish = (
            answer.get("stop_reason") or answer.get("status") or first.get("finish_reason") or first.get("finishReason")
        )
        self.requests.append(
            LoggedRequest(
                tuple(sections),
                text,
                self.path,
                (line,),
                self.dialect,
                self.provider,
                model if isinstance(model, str) else None,
                sent_at,
                usage,
                self.usage_format if usage else None,
                rid if isinstance(rid, str) else None,
                response_id=_text(answer.get("id") or answer.get("responseId")),
                response_model=_text(answer.get("model") or answer.get("modelVersion")),
                finish_reason=_text(finish),
            )
        )

    def finish(self) -> list[LoggedRequest]:
        return self.requests


def _detects_stored(dialect: Dialect) -> Any:
    """A record is a response ``dialect``'s provider stored (its ``stored_response`` hook)."""

    def detects(value: Any) -> bool:
        return isinstance(value, Mapping) and dialect.stored_response(value) is not None

    return detects


class StoredResponseReader:
    """Responses a provider stored and lists (OpenAI's stored chat completions), one per record:
    each a request whose usage, model, time and response the record gives, and whose text the
    log does not hold (no sections: ``ImportedSession.inferred`` sizes it from the usage)."""

    def __init__(self, path: str, splitter: Splitter, wire: Dialect | str) -> None:
        self.path = path
        self.wire = get_dialect(wire)
        self.dialect = self.usage_format = self.wire.log_format or self.wire.name
        self.provider = self.wire.log_provider or self.wire.provider
        self.requests: list[LoggedRequest] = []

    def feed(self, line: int, text: str, value: Any) -> None:
        stored = self.wire.stored_response(value) if isinstance(value, Mapping) else None
        if stored is None:
            raise ValueError(f"not one of {self.wire.stored_title}")
        if stored.usage is None:
            raise ValueError(f"{self.wire.stored_title}: a response without usage")
        sent_at = epoch_time(stored.created, "created") if stored.created is not None else None
        self.requests.append(
            LoggedRequest(
                (),
                "",
                self.path,
                (line,),
                self.dialect,
                self.provider,
                stored.model,
                sent_at,
                stored.usage,
                self.usage_format,
                response_id=stored.id,
                response_model=stored.model,
                finish_reason=stored.finish_reason,
            )
        )

    def finish(self) -> list[LoggedRequest]:
        return self.requests


def wire_formats() -> list[LogFormat]:
    """The log formats of the wires' request bodies (and stored responses), in the wires' order."""
    found = []
    for wire in dialects():
        if wire.log_format:
            found.append(
                LogFormat(
                    wire.log_format,
                    lambda path, splitter, wire=wire: BodyReader(path, splitter, wire),
                    detect=_detects_body(wire),
                    priority=50,
                    title=f"{wire.title} request bodies",
                    dialect=wire.name,
                )
            )
        if wire.stored_title:
            found.append(
                LogFormat(
                    f"{wire.log_format or wire.name}.stored",
                    lambda path, splitter, wire=wire: StoredResponseReader(path, splitter, wire),
                    detect=_detects_stored(wire),
                    priority=55,
                    title=f"{wire.stored_title} (responses only: the requests' text is not in them)",
                    dialect=wire.name,
                )
            )
    return found


def _load_built_ins() -> None:
    """Read the built-in formats (once; every lookup calls it first)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    built_in = wire_formats()
    for name, module in BUILT_IN.items():
        log_format = importlib.import_module(module).LOG_FORMAT
        if log_format.name != name:
            raise AssertionError(f"{module} defines the {log_format.name} log format, not {name}")
        built_in.append(log_format)
    for log_format in built_in:
        _add(log_format, replace=False)


def register_log_format(log_format: LogFormat, *, replace: bool = False) -> LogFormat:
    """Register a log format's reader (see the module docstring; ``replace=True`` to override)."""
    _load_built_ins()
    return _add(log_format, replace=replace)


def _add(log_format: LogFormat, *, replace: bool) -> LogFormat:
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


def unregister_log_format(name: str) -> None:
    """Forget the log format called ``name`` (a registered one; a built-in one comes back only in
    a new interpreter)."""
    _load_built_ins()
    if name not in _formats:
        raise ValueError(f"unknown format {name!r}; formats: {', '.join(_formats)}")
    del _formats[name]


def log_formats() -> tuple[str, ...]:
    """The registered log formats' names, in registration order."""
    _load_built_ins()
    return tuple(_formats)


def get_log_format(name: str) -> LogFormat:
    """The log format called ``name``; ValueError naming the known ones."""
    _load_built_ins()
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
    _load_built_ins()
    return sorted(_formats.values(), key=lambda f: f.priority)


__all__ = [
    "BUILT_IN",
    "BodyReader",
    "StoredResponseReader",
    "wire_formats",
    "register_log_format",
    "unregister_log_format",
    "log_formats",
    "get_log_format",
    "detect_log_format",
    "sniff_log_format",
]
