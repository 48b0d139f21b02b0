"""A view of what a session sent to models: per turn the user message, the reply, and the billed next
to the simulated prompt cost (a dashboard tab shows it, or a notebook cell by itself).

``exchanges_view(session)`` reads the session's recorded exchanges and, when they carry usage and the
model has a price profile, a reconciliation (``wm_kernel.providers.reconcile``) for the billed and
simulated dollars and the cause of any difference. A session replaying an imported log
(``ImportedSession.to_session()``) sent nothing itself: its rows are the log's requests, each with
its last user message, its reply (the response the log keeps, else the assistant message the
conversation's next request carries) and the reconciliation of the log.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from typing import Any

from wm_kernel.cachesim.models import family_name
from wm_kernel.instruments.history import History
from wm_kernel.providers.reconcile import reconcile
from wm_kernel.providers.recording import CHANGED_PROMPT
from wm_kernel.session import Session
from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.style import WARN, scrolling, tint

_CLIP = 300


@dataclass(frozen=True)
class ExchangeRow:
    """One turn of the view; dollars and cause are None where there is nothing to compare."""

    turn: int
    model: str
    user: str
    reply: str
    billed_usd: float | None
    simulated_usd: float | None
    cause: str | None


def readable(text: object) -> str:
    r"""A message as a person reads it: a block a log keeps as JSON (a tool's result, a tool call,
    OpenAI's ``tool_calls``) becomes one line saying what it is; any other text stays as it is.

    >>> readable('{"type": "tool_result", "tool_use_id": "t1", "content": "in depot 104"}')
    'tool result: in depot 104'
    >>> readable('Where is it?\n\n{"type": "tool_use", "name": "track", "input": {"id": "PX1"}}')
    'Where is it?\n\ncalls track({"id": "PX1"})'
    >>> readable('[{"id": "c1", "type": "function", "function": {"name": "track", "arguments": "{}"}}]')
    'calls track({})'
    """
    if not isinstance(text, str):  # content blocks a log kept as a list
        text = json.dumps(text, ensure_ascii=False)
    if "{" not in text:
        return text
    return "\n\n".join(_readable_block(chunk) for chunk in text.split("\n\n"))


def _readable_block(chunk: str) -> str:
    stripped = chunk.strip()
    if not stripped.startswith(("{", "[")):
        return chunk
    try:
        data = json.loads(stripped)
    except ValueError:
        return chunk
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(item, dict) and ("type" in item or "function" in item) for item in items):
        return chunk
    return "\n".join(_readable_item(item) for item in items)


def _readable_item(item: dict[str, Any]) -> str:
    kind = str(item.get("type", ""))
    if kind == "text" and isinstance(item.get("text"), str):
        return str(item["text"])
    if "result" in kind or "output" in kind or kind == "tool_call_response":
        content = item.get("content", item.get("output", item.get("response", "")))
        if isinstance(content, list):
            content = " ".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
        return f"tool result: {content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)}"
    function = item.get("function")
    call: dict[str, Any] = function if isinstance(function, dict) else item
    name = call.get("name")
    if name is not None:
        arguments = call.get("input", call.get("arguments", call.get("args", "")))
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        return f"calls {name}({arguments})"
    return json.dumps(item, ensure_ascii=False)


def _clip(text: str, width: int = _CLIP) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class ExchangesView:
    """Rows of :class:`ExchangeRow`, shown as text (``str``) or HTML (``_repr_html_``)."""

    def __init__(
        self, rows: list[ExchangeRow], note: str = "", banner: str = "", *, current: int | None = None
    ) -> None:
        self.rows = rows
        self.note = note
        #: a warning shown above the rows (replies answered from a recording for another prompt)
        self.banner = banner
        #: the turn on view (a dashboard's slider): its row is marked
        self.current = current

    def __str__(self) -> str:
        if not self.rows:
            return "nothing sent yet"
        out = []
        for r in self.rows:
            money = ""
            if r.billed_usd is not None and r.simulated_usd is not None:
                money = f"  billed {_usd(r.billed_usd)} vs simulated {_usd(r.simulated_usd)}, prompt side ({r.cause})"
            out.append(f"turn {r.turn} · {r.model}{money}\n  user: {_clip(r.user)}\n  reply: {_clip(r.reply)}")
        return "\n".join(
            ([f"warning: {self.banner}"] if self.banner else []) + out + ([self.note] if self.note else [])
        )

    def __repr__(self) -> str:
        return f"<ExchangesView {len(self.rows)} turns>"

    def _repr_html_(self) -> str:
        if not self.rows:
            return no_math('<div class="wm-exchanges"><em>nothing sent yet</em></div>')
        head = "".join(
            f"<th>{h}</th>"
            for h in ("turn", "model", "user", "reply", "billed $ (prompt)", "simulated $ (prompt)", "cause")
        )
        body = []
        for r in self.rows:
            cells = [
                str(r.turn),
                r.model,
                _clip(r.user),
                _clip(r.reply),
                "" if r.billed_usd is None else _usd(r.billed_usd).lstrip("$"),
                "" if r.simulated_usd is None else _usd(r.simulated_usd).lstrip("$"),
                r.cause or "",
            ]
            mark = (
                f' aria-current="true" style="background:{tint("--jp-brand-color1", "#1976d2")}"'
                if r.turn == self.current
                else ""
            )
            body.append(
                f"<tr{mark}>"
                + "".join(f'<td style="white-space:pre-wrap;text-align:left">{html.escape(c)}</td>' for c in cells)
                + "</tr>"
            )
        note = f"<div>{html.escape(self.note)}</div>" if self.note else ""
        banner = (
            f'<div role="alert" style="color:{WARN}"><strong>warning:</strong> {html.escape(self.banner)}</div>'
            if self.banner
            else ""
        )
        return no_math(
            f'<div class="wm-exchanges">{banner}'
            + scrolling(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
            + f"{note}</div>"
        )


def exchanges_view(session: Session, **options: Any) -> ExchangesView:
    """The exchanges of ``session`` with billed and simulated prompt dollars per turn (``options`` go
    to the simulation, as ``reconcile`` takes them)."""
    if not isinstance(session, Session):
        raise TypeError(f"expected a Session, got {type(session).__name__}")
    exchanges = History.of(session).exchanges()
    replayed = getattr(session, "replayed", None)
    if not exchanges and replayed is not None:
        return _logged_view(replayed, **options)
    money: dict[int, tuple[float, float, str]] = {}
    note = ""
    models = {e.model for e in exchanges}
    if (
        exchanges
        and all(e.usage is not None for e in exchanges)
        and len(models) == 1
        and all(family_name(m) is not None for m in models)
    ):
        try:
            rows = reconcile(session, **options).rows
        except ValueError as exc:
            note = f"no simulated cost: {exc}"
        else:
            for turn, billed, simulated, cause in zip(
                rows["turn"], rows["billed_usd"], rows["predicted_usd"], rows["cause"], strict=True
            ):
                money[int(turn)] = (float(billed), float(simulated), str(cause))
    elif exchanges:
        note = "no simulated cost: the exchanges need usage and one model with a price profile"
    out = []
    for e in exchanges:
        billed, simulated, cause = money.get(e.turn, (None, None, None))
        out.append(ExchangeRow(e.turn, e.model, readable(e.user), readable(e.reply), billed, simulated, cause))
    changed = [e.turn for e in exchanges if (e.stop_reason or "").startswith(CHANGED_PROMPT)]
    banner = (
        f"turn{'s' if len(changed) > 1 else ''} {', '.join(map(str, changed))} {CHANGED_PROMPT} "
        f"(on_changed_prompt='warn'): the reply and the billed usage are the recording's, for "
        f"another prompt; record again with a client for this one's"
        if changed
        else ""
    )
    return ExchangesView(out, note, banner)


def _logged_view(replayed: Any, **options: Any) -> ExchangesView:
    """The rows of a replayed log: per request its model, last user message, its reply (the
    response the log keeps, else what the next request of its conversation carries), and the log's
    billed and simulated dollars."""
    log = replayed.log
    money: dict[int, tuple[float, float, str]] = {}
    note = "the log's requests (a reply is the response the log keeps, else the assistant message of the next request)"
    try:
        rows = reconcile(log, **options).rows
    except ValueError as exc:
        note += f"; no simulated cost: {exc}"
    else:
        for turn, billed, simulated, cause in zip(
            rows["turn"], rows["billed_usd"], rows["predicted_usd"], rows["cause"], strict=True
        ):
            money[int(turn)] = (float(billed), float(simulated), str(cause))
    following: dict[int, int] = {}  # turn -> the next turn of its conversation
    last: dict[str, int] = {}
    for turn in log.turns:
        request = log.requests[turn]
        conversation = getattr(request, "conversation", None) or request.path
        if conversation in last:
            following[last[conversation]] = turn
        last[conversation] = turn
    out = []
    for turn in log.turns:
        messages = replayed.messages.get(turn, [])
        user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        later = replayed.messages.get(following[turn], []) if turn in following else []
        reply = replayed.replies.get(turn) or next(
            (m["content"] for m in later[len(messages) :] if m["role"] == "assistant"), ""
        )
        billed, simulated, cause = money.get(turn, (None, None, None))
        model = log.requests[turn].model or ""
        out.append(
            ExchangeRow(turn, model, readable(user), readable(reply) or "(not in the log)", billed, simulated, cause)
        )
    return ExchangesView(out, note)


def _usd(value: float) -> str:
    """Dollars as the view shows them; "unpriced" where they are missing (the model has no row)."""
    return "unpriced" if math.isnan(value) else f"${value:.6f}"
