"""A view of what a session sent to models: per turn the user message, the reply, and the billed next
to the simulated prompt cost (a dashboard tab shows it, or a notebook cell by itself).

``exchanges_view(session)`` reads the session's recorded exchanges and, when they carry usage and the
model has a price profile, a reconciliation (``wm_kernel.providers.reconcile``) for the billed and
simulated dollars and the cause of any difference.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from wm_kernel.cachesim.models import family_name
from wm_kernel.instruments.history import History
from wm_kernel.providers.reconcile import reconcile
from wm_kernel.session import Session
from wm_kernel.utils.htmltext import no_math

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


def _clip(text: str, width: int = _CLIP) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class ExchangesView:
    """Rows of :class:`ExchangeRow`, shown as text (``str``) or HTML (``_repr_html_``)."""

    def __init__(self, rows: list[ExchangeRow], note: str = "") -> None:
        self.rows = rows
        self.note = note

    def __str__(self) -> str:
        if not self.rows:
            return "nothing sent yet"
        out = []
        for r in self.rows:
            money = ""
            if r.billed_usd is not None and r.simulated_usd is not None:
                money = f"  billed ${r.billed_usd:.6f} vs simulated ${r.simulated_usd:.6f} ({r.cause})"
            out.append(f"turn {r.turn} · {r.model}{money}\n  user: {_clip(r.user)}\n  reply: {_clip(r.reply)}")
        return "\n".join(out + ([self.note] if self.note else []))

    def __repr__(self) -> str:
        return f"<ExchangesView {len(self.rows)} turns>"

    def _repr_html_(self) -> str:
        if not self.rows:
            return no_math('<div class="wm-exchanges"><em>nothing sent yet</em></div>')
        head = "".join(f"<th>{h}</th>" for h in ("turn", "model", "user", "reply", "billed $", "simulated $", "cause"))
        body = []
        for r in self.rows:
            cells = [
                str(r.turn),
                r.model,
                _clip(r.user),
                _clip(r.reply),
                "" if r.billed_usd is None else f"{r.billed_usd:.6f}",
                "" if r.simulated_usd is None else f"{r.simulated_usd:.6f}",
                r.cause or "",
            ]
            body.append(
                "<tr>"
                + "".join(f'<td style="white-space:pre-wrap;text-align:left">{html.escape(c)}</td>' for c in cells)
                + "</tr>"
            )
        note = f"<div>{html.escape(self.note)}</div>" if self.note else ""
        return no_math(
            f'<div class="wm-exchanges"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>{note}</div>"
        )


def exchanges_view(session: Session, **options: Any) -> ExchangesView:
    """The exchanges of ``session`` with billed and simulated prompt dollars per turn (``options`` go
    to the simulation, as ``reconcile`` takes them)."""
    if not isinstance(session, Session):
        raise TypeError(f"expected a Session, got {type(session).__name__}")
    exchanges = History.of(session).exchanges()
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
        out.append(ExchangeRow(e.turn, e.model, e.user, e.reply, billed, simulated, cause))
    return ExchangesView(out, note)
