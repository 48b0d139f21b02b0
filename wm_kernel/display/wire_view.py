"""What ``%request`` shows: the whole request of a turn against the model's context window.

One stacked bar, as wide as the model's context window: the tokens of every owner of the request
(tools, the system prompt's sections, the conversation, the injected items and the HUD, framing),
then the output reserved for the reply, then what is free; a table of the owners below it; the
growth forecast when a history is given. Text for terminals, escaped HTML for notebooks, and a
DataFrame (:meth:`WireView.frame`).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.instruments.wire import WireRequest
from wm_kernel.utils import style
from wm_kernel.utils.htmltext import no_math

if TYPE_CHECKING:
    from wm_kernel.dialects.base import Dialect
    from wm_kernel.instruments.forecast import Forecast
    from wm_kernel.instruments.history import History
    from wm_kernel.session import Session
    from wm_kernel.tokens.counting import TokenCounter

#: The order a provider reads a request in, and each kind's colour in the bar.
GROUPS = (
    ("tool", "tools", "#8e6cc7"),
    ("system", "system prompt", "#3f7fbf"),
    ("message", "conversation", "#6a9a4b"),
    ("injected", "injected items and HUD", "#c98a2e"),
    ("framing", "framing", "#8c8c8c"),
)
RESERVED_COLOUR = "#c0504d"
#: The growth forecast fits the whole request of at most this many of the last recorded turns.
FORECAST_TURNS = 60


def _group(kind: str, placement: str) -> str:
    if kind == "section":
        return "system" if placement == "system" else "injected"
    return kind


class WireView:
    """The request of one turn (``wire``) against ``profile``'s window, with ``forecast`` lines."""

    def __init__(
        self,
        wire: WireRequest,
        profile: ModelProfile,
        *,
        turn: int | None = None,
        forecast: Forecast | None = None,
        counter_name: str = "",
        reserved: int | None = None,
        reserve_source: str = "",
    ) -> None:
        self.wire, self.profile, self.turn, self.forecast = wire, profile, turn, forecast
        self.counter_name = counter_name
        self.window = profile.context_window
        #: the room kept for the reply: the ``max_tokens`` the session sent, else the profile's
        self.reserved = (profile.max_output or 0) if reserved is None else reserved
        #: where :attr:`reserved` comes from, as the headline says it
        self.reserve_source = reserve_source or "the profile's max_output"
        #: (turns an hour, US dollars a day of input) when asked for
        self.daily: tuple[float, float] | None = None
        #: what the request shown leaves out that the cost views count (a log's inferred parts)
        self.left_out: list[str] = []

    @property
    def used(self) -> int:
        """Tokens of the request plus the output reserved for the reply."""
        return self.wire.tokens + self.reserved

    @property
    def share(self) -> float | None:
        """:attr:`used` as a share of the window (None when the window is unknown)."""
        return self.used / self.window if self.window else None

    def frame(self) -> Any:
        """The owners' DataFrame (see ``WireRequest.frame``), plus the reserve for the reply."""
        import pandas as pd

        frame = self.wire.frame()
        reserve = pd.DataFrame(
            [
                {
                    "owner": "reserved for the reply",
                    "kind": "reserved",
                    "placement": "",
                    "trinket": None,
                    "chars": 0,
                    "bytes": 0,
                    "tokens": self.reserved,
                }
            ]
        )
        frame = pd.concat([frame, reserve], ignore_index=True)
        frame["share"] = frame["tokens"] / (self.window or max(int(frame["tokens"].sum()), 1))
        return frame

    def _groups(self) -> list[tuple[str, str, int]]:
        totals = {key: 0 for key, _, _ in GROUPS}
        for owner in self.wire.owners:
            totals[_group(owner.kind, owner.placement)] += owner.tokens
        totals["framing"] += self.wire.framing_estimate
        return [(label, colour, totals[key]) for key, label, colour in GROUPS]

    def headline(self) -> str:
        where = f"turn {self.turn}, " if self.turn is not None else ""
        counted = f", counted with {self.counter_name}" if self.counter_name else ""
        head = (
            f"{where}{self.wire.provider} request for {self.profile.name}: {self.wire.tokens:,} tokens"
            f" + {self.reserved:,} reserved for the reply ({self.reserve_source})"
        )
        if self.window:
            head += f" = {self.used:,} of {self.window:,} ({self.share:.1%} of the window)"
        return head + counted + f"; body {len(self.wire.text.encode('utf-8')):,} bytes"

    def notes(self) -> list[str]:
        """What the request leaves out, the forecast's lines and the day's cost."""
        lines = list(self.left_out)
        lines += self.forecast.lines() if self.forecast is not None else []
        if self.daily is not None:
            rate, cost = self.daily
            lines.append(
                f"a day at {rate:g} turns an hour costs about USD {cost:,.2f} of input "
                f"(the cache simulator's average per recorded turn)"
            )
        return lines

    def __repr__(self) -> str:
        lines = [self.headline()]
        for label, _, tokens in self._groups():
            lines.append(f"  {label:<24}{tokens:>9,}")
        lines.append(f"  {'reserved for the reply':<24}{self.reserved:>9,}")
        lines.append("owners (tokens, bytes):")
        for owner in sorted(self.wire.owners, key=lambda o: -o.tokens):
            lines.append(f"  {owner.label:<36}{owner.tokens:>8,}{owner.bytes:>10,}")
        return "\n".join(lines + self.notes())

    def _repr_html_(self) -> str:
        total = self.window or max(self.used, 1)
        cells = []
        for label, colour, tokens in [*self._groups(), ("reserved for the reply", RESERVED_COLOUR, self.reserved)]:
            if tokens:
                width = max(100 * tokens / total, 0.3)
                cells.append(
                    f'<div title="{html.escape(label)}: {tokens:,} tokens" style="width:'
                    f'{width:.3f}%;background:{colour}"></div>'
                )
        bar = (
            f'<div class="wm-wire-bar" style="display:flex;height:18px;border:1px solid {style.BORDER};'
            f'background:var(--jp-layout-color2, #eeeeee)">{"".join(cells)}</div>'
        )
        legend = "".join(
            f'<span style="margin-right:14px;white-space:nowrap"><span style="display:inline-block;'
            f'width:10px;height:10px;background:{colour};margin-right:4px"></span>{html.escape(label)} '
            f"{tokens:,}</span>"
            for label, colour, tokens in [*self._groups(), ("reserved for the reply", RESERVED_COLOUR, self.reserved)]
        )
        rows = "".join(
            f"<tr><td>{html.escape(o.label)}</td><td>{html.escape(o.kind)}</td>"
            f"<td>{html.escape(o.placement)}</td><td style='text-align:right'>{o.tokens:,}</td>"
            f"<td style='text-align:right'>{o.bytes:,}</td></tr>"
            for o in sorted(self.wire.owners, key=lambda o: -o.tokens)
        )
        forecast = "".join(f"<li>{html.escape(line)}</li>" for line in self.notes())
        forecast = f"<ul style='margin:4px 0'>{forecast}</ul>" if forecast else ""
        text = "color:var(--jp-ui-font-color1, #212121)"
        return no_math(
            f'<div class="wm-wire" style="{text}"><div style="margin-bottom:4px">'
            f'{html.escape(self.headline())}</div>{bar}<div style="margin:4px 0;font-size:90%">'
            f"{legend}</div>"
            + style.scrolling(
                f'<table class="wm-wire-owners" style="{text}"><thead><tr><th>owner</th>'
                f"<th>kind</th><th>placement</th><th>tokens</th><th>bytes</th></tr></thead><tbody>{rows}"
                "</tbody></table>"
            )
            + f"{forecast}</div>"
        )


def request_view(
    session: Session,
    turn: int | None = None,
    *,
    model: str | None = None,
    history: Iterable[Mapping[str, Any]] | None = None,
    tools: Iterable[Mapping[str, Any] | Callable[..., Any]] = (),
    turns_per_hour: float | None = None,
    section_limits: Mapping[str, int] | None = None,
    wire: str | None = None,
) -> WireView:
    """The request ``session`` sends at ``turn`` (the last recorded one when None) to ``model``
    (a cache simulator model id: it names the provider, window and counter; default the
    session's model, else claude-sonnet-4-6) on ``wire`` (a wire dialect; default: the session's
    ``wire`` when it sends to that provider, else the provider's own:
    ``wm_kernel.dialects.registry.choose_wire``), after the conversation ``history`` (None: what
    the session sent to a model before that turn, and the user message of that turn if one was
    sent), with ``tools``. Tokens are counted with the model's counter. The request is the body
    ``send`` would post: the ``max_tokens`` the session last sent (its exchanges record it), else
    none, so the wire's own; the reply's reserve is that ``max_tokens``, else the profile's
    ``max_output`` where the body names none (OpenAI's), and the headline says which. With the growth forecast:
    the whole request of every recorded turn (its conversation so far, the reserve) against the
    window, the budgeted prompt against the session's token budget (an estimate on its upper
    bound), and ``section_limits``; given ``turns_per_hour``, what a day costs at that pace (the
    cache simulator's average input cost per recorded turn).

    Long because: its docstring states which model, wire, history and reserve the request is built
    with, each defaulted from the session; the body assembles the view from those, the forecast and
    the day's cost.
    """
    from wm_kernel.cachesim.models import DEFAULT_MODEL, get_model
    from wm_kernel.cachesim.requests import view_counter
    from wm_kernel.dialects.registry import choose_wire
    from wm_kernel.instruments.forecast import daily_cost

    profile = get_model(model or getattr(session, "model", None) or DEFAULT_MODEL)
    dialect = choose_wire(wire, getattr(session, "wire", None), profile.provider, profile.name)
    if not dialect.builds_body:
        raise ValueError(
            f"{profile.name} is a {profile.provider} model; its {dialect.name} wire has no "
            f"request body builder, so there is no request to show"
        )
    recorder = session.recorder
    turns = recorder.turns
    turn = _recorded_turn(turns, turn)
    counter = view_counter(session, profile.name, named=model is not None)
    # an imported log replayed into the session brings its own tools and messages
    replayed = getattr(session, "replayed", None)
    requests = _TurnRequests(recorder, replayed, profile, dialect, counter, history, tools)
    request, reserved, source = requests.reserved_request(turn)
    prediction = None
    fitted = turns[-FORECAST_TURNS:]
    # a transcript replayed has no sections of its own to fit (its whole prompt is messages): no forecast
    if len(turns) >= 2 and recorder.frame()["turn"].isin(fitted).any():
        prediction = _growth(session, requests, fitted, turn, request.tokens + reserved, section_limits)
    view = WireView(
        request,
        profile,
        turn=turn,
        forecast=prediction,
        counter_name=counter.label,
        reserved=reserved,
        reserve_source=source,
    )
    log = getattr(replayed, "log", None)
    for found in log.inferred().values() if log is not None and hasattr(log, "inferred") else ():
        view.left_out.append(
            f"not in the log, so not in this request: {found.label}; the cost views (%cache, reconcile) count it"
        )
    if turns_per_hour is not None and prediction is not None:
        sim = (
            session.cache_simulation(model, wire=dialect.name)
            if model is not None
            else session.cache_simulation(wire=dialect.name)
        )
        per_turn = sim.total_cost / max(len(turns), 1)
        view.daily = (turns_per_hour, daily_cost(per_turn, turns_per_hour))
    return view


def _recorded_turn(turns: list[int], turn: int | None) -> int:
    """``turn``, or the last recorded one when None; ValueError when it was not recorded."""
    if not turns:
        raise ValueError("nothing composed yet: compose first")
    if turn is None:
        turn = turns[-1]
    if turn not in turns:
        raise ValueError(f"turn {turn} was not recorded (recorded turns {turns[0]}-{turns[-1]})")
    return turn


@dataclass
class _TurnRequests:
    """The request a session sends at each recorded turn: its conversation, the reply's reserve and
    the request on the wire, from what the session recorded (or the imported log it replays)."""

    recorder: History
    replayed: Any  # the session's imported log (its own tools, messages, max_tokens), or None
    profile: ModelProfile
    dialect: Dialect
    counter: TokenCounter
    given: Iterable[Mapping[str, Any]] | None  # the conversation asked for; None: the recorded one
    tools: Iterable[Mapping[str, Any] | Callable[..., Any]]

    def conversation(self, at: int) -> list[dict[str, str]]:
        given, replayed, recorder = self.given, self.replayed, self.recorder
        if given is not None:
            return [dict(m) for m in given]
        if replayed is not None and at in replayed.messages:
            return list(replayed.messages[at])
        return recorder.conversation_at(at)

    def sent_max_tokens(self, at: int) -> tuple[int | None, str]:
        """The ``max_tokens`` the request of turn ``at`` sent and where that is read (None, "":
        none was sent, so the wire's own holds, as ``send`` would send it)."""
        replayed = self.replayed
        if replayed is not None and at in replayed.max_tokens:
            return replayed.max_tokens[at], "max_tokens the logged request sent"
        sent = [e for e in self.recorder.exchanges() if e.turn <= at and e.max_tokens is not None]
        last = sent[-1] if sent else None
        if last is not None and last.max_tokens is not None:
            return last.max_tokens, f"max_tokens sent at turn {last.turn}"
        return None, ""

    def reserved_request(self, at: int) -> tuple[WireRequest, int, str]:
        """The request of turn ``at``, the reply's reserve and where it is read: the ``max_tokens``
        sent, else the one the wire's body sets itself, else the profile's ``max_output``."""
        sent, source = self.sent_max_tokens(at)
        request = self.request_at(at, sent)
        if sent is not None:
            return request, sent, source
        own = self.dialect.reserve(request.body)
        if own is not None:
            return request, own, f"the {self.dialect.name} wire's max_tokens"
        return request, self.profile.max_output or 0, "the profile's max_output: nothing sent"

    def request_at(self, at: int, max_tokens: int | None) -> WireRequest:
        from wm_kernel.instruments.wire import wire_request

        own = self.tools
        if self.replayed is not None and not self.tools and at in self.replayed.tools:
            own = self.replayed.tools[at]
        return wire_request(
            self.recorder.prompt_at(at),
            self.conversation(at),
            provider=self.dialect.name,
            model=self.profile.name,
            tools=own,
            counter=self.counter,
            max_tokens=max_tokens,
        )


def _growth(
    session: Session,
    requests: _TurnRequests,
    fitted: list[int],
    turn: int,
    whole: int,
    section_limits: Mapping[str, int] | None,
) -> Forecast:
    """The growth forecast over the ``fitted`` turns: the whole request of each (``whole`` at
    ``turn``, already built) against the window, the budgeted prompt against the token budget,
    counted with the view's counter."""
    from wm_kernel.core.composer.budget import budgeted_tokens
    from wm_kernel.instruments.forecast import forecast

    recorder, counter = requests.recorder, requests.counter
    wholes: dict[int, float] = {}
    budgeted: dict[int, float] = {}
    for at in fitted:
        if at == turn:
            wholes[at] = whole
        else:
            request, reserved, _ = requests.reserved_request(at)
            wholes[at] = request.tokens + reserved
        budgeted[at] = budgeted_tokens(recorder.prompt_at(at), counter)
    frame = recorder.frame()
    frame = frame[frame["turn"].isin(fitted)]
    if counter is not recorder.counter:
        texts = recorder.texts()
        frame = frame.assign(
            tokens=[
                counter.count(texts[d]) if d in texts else n
                for d, n in zip(frame["digest"], frame["tokens"], strict=True)
            ]
        )
    return forecast(
        frame,
        window=requests.profile.context_window,
        budget=session.working_memory.token_budget,
        section_limits=section_limits,
        requests=wholes,
        budgeted=budgeted,
        counter=counter,
    )
