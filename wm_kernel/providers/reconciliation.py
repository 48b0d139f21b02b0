"""The result of a reconciliation: one row per compared turn, its summary and its views.

:func:`reconciliation` builds a :class:`Reconciliation` from the simulated and billed usage of each
compared turn: every row is priced with its own model (a dated snapshot as its family; a model the
registry does not know is priced as the session's and the summary and table say "priced as X: model
Y unknown") and given its cause (:func:`wm_kernel.providers.causes.cause`). The Reconciliation shows
itself as text lines, a per-turn table, HTML and a plot of both cumulative costs.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.models import priced_as
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import Simulation
from wm_kernel.dialects.usage import Usage
from wm_kernel.providers.causes import cause, steady_factor
from wm_kernel.providers.pricing import price
from wm_kernel.providers.request_context import Context
from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.style import WORD_WRAP, scrolling

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "Reconciliation", "reconciliation"]

COLUMNS = [
    "turn",
    "request_id",
    "model",
    "predicted_input",
    "billed_input",
    "predicted_read",
    "billed_read",
    "predicted_write",
    "billed_write",
    "predicted_write_1h",
    "billed_write_1h",
    "predicted_usd",
    "billed_usd",
    "residual_usd",
    "output_usd",
    "cause",
    "detail",
    "provider_usd",
]


def reconciliation(
    simulation: Simulation, turns: Sequence[Any], aligned: Sequence[tuple[Usage, Usage]], contexts: Sequence[Context]
) -> Reconciliation:
    """The Reconciliation of ``aligned`` (each compared request's simulated and billed usage, its
    row numbered by ``turns`` and judged with ``contexts``): each row priced with its own model and
    given its cause; the notes say which models were priced as another and what the simulation
    assumed."""
    factor, steady = steady_factor(aligned)
    rows = []
    notes: dict[str, None] = {}
    for index, (turn, (p, b), ctx) in enumerate(zip(turns, aligned, contexts, strict=True)):
        profile = ctx.profile
        billed_profile = profile
        if b.model:
            chosen = priced_as(b.model, profile)
            billed_profile = chosen.profile
            if chosen.note:
                notes[chosen.note] = None
        predicted_usd = price(p, profile).prompt_usd
        billed_cost = price(b, billed_profile)
        row_cause, detail = cause(
            p, b, predicted_usd, billed_cost.prompt_usd, ctx, index in steady, factor, len(steady)
        )
        if b.model and (note := priced_as(b.model, profile).note):
            detail = "; ".join(x for x in (detail, note) if x)
        rows.append(
            (
                turn,
                b.request_id,
                profile.name,
                p.input_tokens,
                b.input_tokens,
                p.cache_read_tokens,
                b.cache_read_tokens,
                p.cache_write_tokens,
                b.cache_write_tokens,
                p.cache_write_1h_tokens,
                b.cache_write_1h_tokens,
                _dollars(predicted_usd),
                _dollars(billed_cost.prompt_usd),
                _dollars(billed_cost.prompt_usd) - _dollars(predicted_usd),
                _dollars(billed_cost.output_usd),
                row_cause,
                detail,
                _dollars(b.billed_usd),
            )
        )
    notes.update({line: None for line in simulation.assumptions})
    return Reconciliation(simulation.profile, rows, factor if steady else None, list(notes))


def _dollars(value: float | None) -> float:
    """Dollars as a table holds them: NaN where they are missing (an unpriced model)."""
    return math.nan if value is None else value


def _usd(value: float, sign: str = "") -> str:
    return "unpriced" if math.isnan(value) else f"${value:{sign}.6f}"


class Reconciliation:
    """The result of :func:`wm_kernel.providers.reconcile.reconcile`: ``rows`` (a DataFrame,
    columns ``COLUMNS``), ``summary()``, ``plot()``, the fitted tokenizer factor (``factor``; None
    when no steady one was found) and ``notes``: what the simulation assumed (send times, an
    inferred system prompt, a model priced as another), shown under the summary."""

    def __init__(
        self, profile: ModelProfile, rows: list[tuple[Any, ...]], factor: float | None, notes: Sequence[str] = ()
    ) -> None:
        import pandas as pd

        self.profile = profile
        self.factor = factor
        self.notes: list[str] = list(notes)
        self.rows: pd.DataFrame = pd.DataFrame.from_records(rows, columns=COLUMNS)

    def summary(self) -> dict[str, Any]:
        """Totals (predicted, billed, residual, in dollars, prompt side), billed output dollars, the
        causes counted (most frequent first), the billed dollars on turns with a named cause (all
        but ``unknown``) and their share, the models priced, the tokenizer factor and the notes."""
        r = self.rows
        # a total over rows of which one is unpriced is missing (NaN), not the sum of the others
        every = len(r)
        predicted = float(r["predicted_usd"].sum(min_count=every))
        billed = float(r["billed_usd"].sum(min_count=every))
        named_rows = r.loc[r["cause"] != "unknown", "billed_usd"]
        named = float(named_rows.sum(min_count=len(named_rows)))
        return {
            "model": self.profile.name,
            "models": sorted(set(r["model"])) or [self.profile.name],
            "turns": len(r),
            "predicted_usd": predicted,
            "billed_usd": billed,
            "residual_usd": billed - predicted,
            "output_usd": float(r["output_usd"].sum(min_count=every)),
            "unpriced": int((r["billed_usd"].isna() | r["predicted_usd"].isna()).sum()),
            # what the provider itself says it billed, prompt and output (OpenRouter's usage.cost)
            "provider_usd": float(r["provider_usd"].sum(min_count=every)),
            "provider_priced_usd": float((r["billed_usd"] + r["output_usd"])[r["provider_usd"].notna()].sum()),
            "provider_requests": int(r["provider_usd"].notna().sum()),
            "causes": dict(Counter(r["cause"]).most_common()),
            "named_usd": named,
            "named_share": named / billed if billed and not math.isnan(billed) else 1.0,
            "tokenizer_factor": self.factor,
            "notes": list(self.notes),
        }

    def calibration(self) -> dict[str, Any] | None:
        """What a token-count calibration needs from this reconciliation: the model and the fitted
        factor (billed / predicted tokens), or None when no steady factor was found."""
        if self.factor is None:
            return None
        return {
            "model": self.profile.name,
            "factor": self.factor,
            "turns": int((self.rows["cause"] == "tokenizer").sum()),
        }

    def lines(self) -> list[str]:
        """The summary as text lines."""
        s = self.summary()
        residual = s["residual_usd"]
        share = f" ({residual / s['predicted_usd']:+.1%})" if s["predicted_usd"] and not math.isnan(residual) else ""
        causes = ", ".join(f"{k} {v}" for k, v in s["causes"].items())
        models = s["model"] if len(s["models"]) <= 1 else ", ".join(s["models"])
        head = [
            f"{models}: {s['turns']} turns; predicted {_usd(s['predicted_usd'])}, billed "
            f"{_usd(s['billed_usd'])} (prompt side), residual {_usd(residual, '+')}{share}",
            f"causes: {causes}"
            + ("" if s["unpriced"] else f" ({s['named_share']:.0%} of the billed dollars on a named cause)"),
        ]
        if s["unpriced"]:
            head.append(
                f"{s['unpriced']} of {s['turns']} requests unpriced: their model is not in the price table "
                "(the notes say which); the totals are missing, not partial"
            )
        if s["provider_requests"]:
            head.append(
                f"the provider's own bill for {s['provider_requests']} of {s['turns']} requests (its usage.cost): "
                f"{_usd(s['provider_usd'])}; priced here {_usd(s['provider_priced_usd'])} (prompt and output)"
            )
        if self.factor is not None:
            head.append(f"tokenizer factor {self.factor:.3f} (billed / predicted tokens)")
        return head + self.notes

    def table(self) -> pd.DataFrame:
        """The per-turn table, shortened for reading: billed and predicted uncached input, reads,
        writes (and their 1-hour part) and dollars, side by side."""
        r = self.rows
        out = r[
            [
                "turn",
                "model",
                "predicted_input",
                "billed_input",
                "predicted_read",
                "billed_read",
                "predicted_write",
                "billed_write",
                "predicted_write_1h",
                "billed_write_1h",
                "predicted_usd",
                "billed_usd",
                "residual_usd",
                "cause",
                "detail",
            ]
        ]
        return out.rename(
            columns={
                "predicted_input": "uncached (sim)",
                "billed_input": "uncached (bill)",
                "predicted_read": "read (sim)",
                "billed_read": "read (bill)",
                "predicted_write": "write (sim)",
                "billed_write": "write (bill)",
                "predicted_write_1h": "1h writes (sim)",
                "billed_write_1h": "1h writes (bill)",
                "predicted_usd": "$ sim",
                "billed_usd": "$ bill",
                "residual_usd": "residual",
            }
        )

    def plot(self, ax: Any = None) -> Figure:
        """Both cumulative prompt costs by turn (matplotlib; a new figure unless ``ax`` is given)."""
        import matplotlib.pyplot as plt

        if ax is None:
            figure, ax = plt.subplots(figsize=(6, 3))
        else:
            figure = ax.figure
        r = self.rows
        ax.plot(r["turn"], r["predicted_usd"].cumsum(), marker="o", label="simulated")
        ax.plot(r["turn"], r["billed_usd"].cumsum(), marker="s", label="billed")
        ax.set_xlabel("turn")
        ax.set_ylabel("cumulative prompt cost (US$)")
        ax.set_title(f"{self.profile.name}: simulated vs billed")
        ax.legend()
        figure.tight_layout()
        return figure

    def __str__(self) -> str:
        import pandas as pd

        with pd.option_context("display.width", 200, "display.max_colwidth", 70):
            return "\n".join(self.lines() + [self.table().to_string(index=False, float_format="{:.6f}".format)])

    def __repr__(self) -> str:
        return f"<Reconciliation {self.lines()[0]}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's text view (a terminal, nbval's comparison) shows the whole reconciliation; a
        # notebook shows the HTML, whose cells wrap between words (print() gives JupyterLab's
        # stream, which breaks a long line inside a word)
        printer.text(str(self))

    def _repr_html_(self) -> str:
        lines = "".join(f"<div>{html.escape(line)}</div>" for line in self.lines())
        table = self.table().to_html(index=False, float_format="{:.6f}".format)
        # a cell wraps between words, never inside one (a cause, a model id, a number)
        table = table.replace("<td>", f'<td style="{WORD_WRAP}">')
        return no_math(f'<div class="wm-reconciliation">{lines}{scrolling(table)}</div>')
