"""Send a session's composed prompt to a model through the official SDK, and record the exchange.

``send(session, client, model=..., user="...")`` builds the request exactly as
``ComposedPrompt.to_anthropic`` / ``to_openai`` do (the conversation so far is the session's
recorded exchanges, the new user message last), sends it with ``client`` (an ``anthropic.Anthropic``
or an ``openai.OpenAI``, any ``base_url``), and, once the provider answered, records the reply and the
billed usage in the session's History, publishes an ``ExchangeRecordedEvent`` (a scenario recorder
writes it as a ``send`` step) and completes the turn, so the next request carries this exchange.

A failed send (authentication, rate limit, network, a bad request) raises :class:`SendError` with one
line and records nothing: the session is as it was.

Offline: with ``recording=`` a :class:`~wm_kernel.providers.recording.Recording`, a live send is
appended to it; with no client (or ``WM_KERNEL_OFFLINE=1``) the reply comes from the recording
instead, so a notebook that talked to a real model re-runs with no network.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from wm_kernel.cachesim.profile import Cost
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.dialects.base import CallResult, Dialect
from wm_kernel.dialects.registry import dialect_for_sdk, get_dialect, sdk_clients
from wm_kernel.dialects.usage import Usage, parse_usage, request_prefix
from wm_kernel.instruments.exchange import Exchange, ExchangeRecordedEvent
from wm_kernel.instruments.history import History
from wm_kernel.providers.pricing import price
from wm_kernel.providers.recording import Recording, offline, section_digests
from wm_kernel.session import Session
from wm_kernel.utils.checks import check_str
from wm_kernel.utils.style import PROMPT_PRE


class SendError(RuntimeError):
    """A request failed (authentication, rate limit, network, bad request); the message is one line."""


@dataclass(frozen=True)
class Reply:
    """What :func:`send` returns: the recorded exchange, its usage and what that usage costs
    (None when the model has no price profile)."""

    exchange: Exchange
    usage: Usage | None
    cost: Cost | None

    @property
    def text(self) -> str:
        """The model's reply."""
        return self.exchange.reply

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        e = self.exchange
        billed = ""
        if self.cost is not None and self.cost.total_usd is not None:
            billed = f", billed ${self.cost.total_usd:.6f} (prompt and output)"
        elif self.cost is not None or e.usage is not None:
            billed = f", unpriced: {e.model} is not in the price table"
        return f"<Reply turn {e.turn} from {e.model}: {len(e.reply):,} chars{billed}>"

    def _repr_html_(self) -> str:
        from html import escape

        from wm_kernel.utils.htmltext import no_math

        return no_math(f'<div class="wm-reply"><pre style="{PROMPT_PRE}">{escape(self.text)}</pre></div>')


#: Why nothing was sent, and the two ways on, in one line.
NO_WAY_TO_SEND = (
    "nothing to send with: pass a client (anthropic.Anthropic(), openai.OpenAI()) or a recording "
    "to answer from (recording=Recording.load(FILE)); WM_KERNEL_OFFLINE=1 needs the recording"
)


def provider_of(client: Any) -> str:
    """The SDK package an SDK client comes from (``"anthropic"``, ``"openai"``), when a registered
    wire sends with it; TypeError otherwise."""
    package = type(client).__module__.partition(".")[0]
    try:
        return str(dialect_for_sdk(package).sdk)
    except TypeError:
        raise TypeError(f"client must be an {' or '.join(sdk_clients())} client, got {type(client).__name__}") from None


def wire_for(session: Session, client: Any, wire: str | None) -> Dialect:
    """The wire a send uses: ``wire`` when given, else the session's (``Session.wire``: MIRA's for a
    session laid out as the original), else the client's SDK's default; TypeError when the client
    cannot send it."""
    package = provider_of(client)
    chosen = wire if wire is not None else session.wire
    dialect = get_dialect(chosen) if chosen is not None else dialect_for_sdk(package)
    if dialect.sdk != package:
        if wire is None:
            return dialect_for_sdk(package)
        raise TypeError(f"the {dialect.name} wire sends with a {dialect.sdk} client, got a {package} one")
    return dialect


def _error_line(provider: str, exc: Exception) -> str:
    """One line for an SDK error: what happened, the provider's message and the request id."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    message = None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, Mapping) else None
    message = " ".join(str(message or getattr(exc, "message", "") or exc).split())
    request_id = getattr(exc, "request_id", None)
    suffix = f" (request {request_id})" if request_id else ""
    if status is None:
        cause = exc.__cause__ or exc.__context__
        kind = "timed out" if "Timeout" in type(exc).__name__ else "could not connect"
        if cause is not None and "Connect" not in type(cause).__name__ and "Timeout" not in type(cause).__name__:
            kind = "the connection broke"
        detail = " ".join(str(cause).split()) if cause is not None else ""
        if detail and detail not in message:
            message = f"{message} ({detail})"
        return f"{provider}: {kind}: {message}"
    what = {
        401: "authentication failed",
        403: "permission denied",
        429: "rate limited",
        404: "not found",
        400: "bad request",
        413: "request too large",
        529: "overloaded",
    }.get(status)
    what = what or ("server error" if status >= 500 else "request refused")
    return f"{provider}: {what} ({status}): {message}{suffix}"


def _print(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def send(
    session: Session,
    client: Any | None,
    *,
    model: str,
    user: str,
    max_tokens: int | None = None,
    stream: bool = False,
    on_text: Callable[[str], None] | None = None,
    recording: Recording | None = None,
    advance: bool = True,
    wire: str | None = None,
    **extra: Any,
) -> Reply:
    """Send the session's prompt and ``user`` to ``model``; record and return the reply.

    ``wire`` names the request's wire dialect (``"anthropic"``, ``"openai"``, ``"mira"``: see
    ``wm_kernel.dialects.registry``); by default the session's (``Session.wire``), else the one of
    the client's SDK. ``max_tokens`` None: the wire's own (Anthropic's 1024, MIRA's 31999; none on
    OpenAI's, where the model's own limit holds). ``stream`` shows the reply as it comes
    (``on_text(chunk)`` for each piece; by default printed).
    ``advance`` completes the turn after the exchange (the next compose is the next turn's prompt).
    ``extra`` keys (``temperature``, ``tools``...) go into the request body. See the module docstring
    for offline replay from ``recording``.
    """
    if not isinstance(session, Session):
        raise TypeError(f"send needs a Session, got {type(session).__name__}")
    with _one_send_at_a_time(session):
        return _send(
            session,
            client,
            model=model,
            user=user,
            max_tokens=max_tokens,
            stream=stream,
            on_text=on_text,
            recording=recording,
            advance=advance,
            wire=wire,
            extra=extra,
        )


#: The lock of each session's send: a session sends one request at a time.
_SENDING: weakref.WeakKeyDictionary[Session, threading.Lock] = weakref.WeakKeyDictionary()
_SENDING_GUARD = threading.Lock()


@contextlib.contextmanager
def _one_send_at_a_time(session: Session) -> Iterator[None]:
    """Hold the session's send lock for the whole send (build, call, record, advance); a second
    send while one is in flight is refused in one line, so no request is recorded at a turn it was
    not built for."""
    with _SENDING_GUARD:
        lock = _SENDING.setdefault(session, threading.Lock())
    if not lock.acquire(blocking=False):
        raise SendError(
            f"a send is already in flight on this session (turn {session.turn}): "
            "a session sends one request at a time; send again when it has answered"
        )
    try:
        yield
    finally:
        lock.release()


def _send(
    session: Session,
    client: Any | None,
    *,
    model: str,
    user: str,
    max_tokens: int | None,
    stream: bool,
    on_text: Callable[[str], None] | None,
    recording: Recording | None,
    advance: bool,
    wire: str | None,
    extra: dict[str, Any],
) -> Reply:
    history = _checked_history(session, client, model=model, user=user, recording=recording, wire=wire)
    composed = _turn_prompt(session, client, recording)
    turn = session.turn
    position = None
    if client is None or offline():
        if recording is None:
            raise ValueError(NO_WAY_TO_SEND)
        position = recording.position
        exchange = _answer_from(recording, turn, composed, model=model, user=user, max_tokens=max_tokens)
        if stream:
            (on_text or _print)(exchange.reply)
    else:
        exchange = _send_live(
            session,
            client,
            history,
            composed,
            turn=turn,
            model=model,
            user=user,
            max_tokens=max_tokens,
            stream=stream,
            on_text=on_text,
            wire=wire,
            extra=extra,
        )
    # everything that can fail on what the provider sent is checked before anything is recorded
    usage_record, cost = _priced_usage(exchange, model, recording, position)
    if session.turn != exchange.turn:
        # the session was advanced (by another thread) while the request was in flight: the history
        # would describe, at the new turn, a request that was never sent
        _rewind(recording, position)
        raise SendError(
            f"the session moved to turn {session.turn} while the request of turn {exchange.turn} was in flight; "
            "nothing recorded"
        )
    _record(session, history, exchange, composed, client=client, recording=recording, position=position)
    if advance:
        session.advance_turn()
    return Reply(exchange, usage_record, cost)


def _checked_history(
    session: Session, client: Any | None, *, model: str, user: str, recording: Recording | None, wire: str | None
) -> History:
    """The session's History, once the arguments of a send are checked: a wrong argument, an
    unknown wire, a client that cannot send it or a turn that already has an exchange is refused
    before anything happens."""
    if not isinstance(session, Session):
        raise TypeError(f"send needs a Session, got {type(session).__name__}")
    check_str(model, "model")
    if not isinstance(user, str) or not user.strip():
        raise ValueError("user must be a non-empty message")
    if recording is not None and not isinstance(recording, Recording):
        raise TypeError(f"recording must be a Recording, got {type(recording).__name__}")
    history = History.of(session)
    if history.exchange_at(session.turn) is not None:
        raise ValueError(f"turn {session.turn} already has an exchange; advance the turn first")
    if wire is not None:
        get_dialect(wire)  # an unknown wire is refused before anything happens
    if client is not None and not offline():
        wire_for(session, client, wire)  # a wrong client is refused before anything happens
    return history


def _turn_prompt(session: Session, client: Any | None, recording: Recording | None) -> ComposedPrompt:
    """The prompt of this turn, composed once: what is sent (or answered from a recording) is what
    the history records for the turn, and what a simulation of the session plays."""
    composed = session.composed
    if not isinstance(composed, ComposedPrompt) or composed.turn != session.turn:
        if client is None and recording is None:
            raise ValueError(NO_WAY_TO_SEND)
        composed = session.compose()
    return composed


def _answer_from(
    recording: Recording,
    turn: int,
    composed: ComposedPrompt,
    *,
    model: str,
    user: str,
    max_tokens: int | None,
) -> Exchange:
    """The exchange of this turn as the recording answers it (offline: nothing is sent)."""
    recorded = recording.answer(user=user, model=model, sections=section_digests(composed))
    return Exchange(
        turn=turn,  # the turn the request was built at, whatever the session's is now
        provider=recorded.provider,
        model=recorded.model,
        user=user,
        reply=recorded.reply,
        usage=recorded.usage,
        request_id=recorded.request_id,
        stop_reason=recorded.stop_reason,
        prefix=recorded.prefix,
        max_tokens=max_tokens,
    )


def _send_live(
    session: Session,
    client: Any,
    history: History,
    composed: ComposedPrompt,
    *,
    turn: int,
    model: str,
    user: str,
    max_tokens: int | None,
    stream: bool,
    on_text: Callable[[str], None] | None,
    wire: str | None,
    extra: dict[str, Any],
) -> Exchange:
    """The exchange of this turn as the provider answers it: the request (the conversation so far,
    the new user message last) built on the send's wire and sent with ``client``."""
    dialect = wire_for(session, client, wire)
    body = dialect.body(composed, history.conversation(), user=user, model=model, max_tokens=max_tokens, **extra)
    reply, usage, request_id, stop = _call(dialect, client, body, stream, on_text or _print)
    return Exchange(
        turn=turn,  # the turn the request was built at, whatever the session's is now
        provider=dialect.provider,
        model=model,
        user=user,
        reply=reply,
        usage=usage,
        request_id=request_id,
        stop_reason=stop,
        prefix=request_prefix(body),
        max_tokens=max_tokens,
    )


def _call(
    dialect: Dialect, client: Any, body: dict[str, Any], stream: bool, shown: Callable[[str], None]
) -> CallResult:
    """The provider's (reply, usage, request id, stop reason) for ``body``; every failure of the
    call (the SDK's, a broken connection, a malformed reply, a cut stream) is a one-line
    :class:`SendError`."""
    provider = dialect.provider
    received: list[str] = []

    def showing(text: str) -> None:
        received.append(text)
        shown(text)

    try:
        reply, usage, request_id, stop = dialect.call(client, body, stream, showing)
    except Exception as exc:  # noqa: BLE001 - every failure of the call is one line
        if type(exc).__module__.partition(".")[0] == dialect.sdk:
            raise SendError(_error_line(provider, exc)) from None
        if _is_http_error(exc):
            raise SendError(
                f"{provider}: the connection broke: {_one_line(exc)} "
                f"({sum(map(len, received)):,} characters received); nothing recorded"
            ) from None
        raise SendError(
            f"{provider}: malformed reply ({type(exc).__name__}: {_one_line(exc)}); nothing recorded"
        ) from None
    if not isinstance(reply, str):  # every wire's reply is text: anything else is a malformed reply
        raise SendError(
            f"{provider}: malformed reply (the reply is a {type(reply).__name__}, not text); nothing recorded"
        )
    if stream and stop is None:  # no message_delta / no choice finished: the stream was cut
        raise SendError(
            f"{provider}: the reply stream ended before the reply was complete "
            f"({sum(map(len, received)):,} characters received); nothing recorded"
        )
    return reply, usage, request_id, stop


def _priced_usage(
    exchange: Exchange, model: str, recording: Recording | None, position: int | None
) -> tuple[Usage | None, Cost | None]:
    """The reply's usage, parsed, and its price. A usage that cannot be read is a SendError that
    records nothing: the turn does not advance and a recording answers the same again."""
    try:
        usage_record = (
            None
            if exchange.usage is None
            else parse_usage(exchange.usage, where=f"the usage of turn {exchange.turn}", request_id=exchange.request_id)
        )
        cost = _cost(usage_record, model)
    except (ValueError, TypeError) as exc:
        _rewind(recording, position)
        raise SendError(
            f"{exchange.provider}: the reply's usage cannot be read: {_one_line(exc)}; nothing recorded"
        ) from None
    return usage_record, cost


def _record(
    session: Session,
    history: History,
    exchange: Exchange,
    composed: ComposedPrompt,
    *,
    client: Any | None,
    recording: Recording | None,
    position: int | None,
) -> None:
    """Record the exchange in the History (a recording answers the same again if that fails),
    append a live one to ``recording`` and publish it."""
    try:
        history.record_exchange(exchange)
    except BaseException:
        _rewind(recording, position)
        raise
    if recording is not None and client is not None and not offline():
        recording.append(exchange, section_digests(composed))
    session.bus.publish(
        ExchangeRecordedEvent.create(
            continuum_id=session.continuum_id, user_id=session.user_id, clock=session.clock, exchange=exchange
        )
    )


def _rewind(recording: Recording | None, position: int | None) -> None:
    """Give the recording back the answer it gave for this send (a send that records nothing)."""
    if position is not None and recording is not None:
        recording.position = position


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _is_http_error(exc: BaseException) -> bool:
    """An error of the HTTP library under the SDKs (httpx2 or httpx): a broken connection."""
    return type(exc).__module__.partition(".")[0] in ("httpx2", "httpx", "httpcore", "httpcore2")


def _cost(usage: Usage | None, model: str) -> Cost | None:
    """The bill of a reply's usage at its model's row; None without usage, or for a model the price
    table lacks (unpriced: its dollars missing, never another model's)."""
    from wm_kernel.cachesim.models import family_name

    if usage is None or family_name(model) is None:  # a dated snapshot is priced as its family
        return None
    return price(usage, model)
