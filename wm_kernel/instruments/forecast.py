"""Growth forecast: when does a section, or the whole prompt, reach a limit at its current rate?

Agents die slowly: a section that grows a little every turn fills the context window (or the token
budget) weeks later. :func:`fit_growth` fits one series of token counts by turn with a straight
line and with an exponential (a straight line through the logarithms), keeps the model whose
residuals are smaller, and says how sure it is: ``r2`` of the kept fit and, for a crossing, the
range of turns given by the slope's 95% band. :func:`forecast` does this for every section of a
history frame (``History.frame()``: turn, section, tokens) and for the whole prompt, against a
window and optional per-section limits.

Examples
--------
>>> g = fit_growth([0, 1, 2, 3, 4], [100, 110, 120, 130, 140])
>>> g.model, round(g.rate, 3), g.turn_reaching(200)
('linear', 10.0, 10)
>>> e = fit_growth(range(6), [100 * 1.1 ** t for t in range(6)])
>>> e.model, round(e.rate, 3), e.turn_reaching(200)
('exponential', 0.1, 8)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Two-sided 95% quantile of the normal distribution, for the band of a fitted slope.
_Z95 = 1.96
#: Fewer points than this say nothing about a rate.
MIN_POINTS = 3


@dataclass(frozen=True, slots=True)
class Growth:
    """A fitted series: ``model`` is ``linear`` (tokens = a + rate*turn), ``exponential`` (tokens =
    a * (1 + rate) ** turn) or ``flat`` (too few points or no growth); ``r2`` the share of the
    variance the fit explains; ``rate_low``/``rate_high`` the 95% band of the rate."""

    model: str
    intercept: float
    rate: float
    rate_low: float
    rate_high: float
    r2: float
    points: int
    last_turn: int
    last_value: float

    def value_at(self, turn: float, rate: float | None = None) -> float:
        """The fitted tokens at ``turn`` (with another ``rate`` when given)."""
        r = self.rate if rate is None else rate
        if self.model == "exponential":
            return float(self.intercept * (1 + r) ** turn)
        if self.model == "linear":
            return self.intercept + r * turn
        return self.last_value

    def turn_reaching(self, limit: float, rate: float | None = None) -> int | None:
        """The first turn whose fitted value is at least ``limit``; None if it never gets there
        (no growth), the last recorded turn if it is already there."""
        r = self.rate if rate is None else rate
        if self.last_value >= limit:
            return self.last_turn
        if self.model == "flat" or r <= 0:
            return None
        if self.model == "exponential":
            if self.intercept <= 0:
                return None
            exact = math.log(limit / self.intercept) / math.log1p(r)
        else:
            exact = (limit - self.intercept) / r
        return max(self.last_turn, math.ceil(exact - 1e-9))

    def turns_reaching(self, limit: float) -> tuple[int | None, int | None]:
        """(earliest, latest) turn of the crossing over the rate's 95% band."""
        return self.turn_reaching(limit, self.rate_high), self.turn_reaching(limit, self.rate_low)

    @property
    def sureness(self) -> str:
        """``firm`` (r2 >= 0.9 over at least 10 points), ``rough`` (r2 >= 0.5) or ``weak``."""
        if self.r2 >= 0.9 and self.points >= 10:
            return "firm"
        return "rough" if self.r2 >= 0.5 else "weak"


def _line(xs: list[float], ys: list[float]) -> tuple[float, float, float, float]:
    """Least squares: (intercept, slope, slope standard error, r2)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0:
        return my, 0.0, 0.0, 0.0
    slope = sxy / sxx
    intercept = my - slope * mx
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    r2 = 1.0 - residual / syy if syy > 0 else 1.0
    se = math.sqrt(residual / (n - 2) / sxx) if n > 2 else 0.0
    return intercept, slope, se, r2


def fit_growth(turns: Iterable[float], values: Iterable[float]) -> Growth:
    """Fit ``values`` by ``turns`` (see the module docstring)."""
    xs = [float(t) for t in turns]
    ys = [float(v) for v in values]
    if len(xs) != len(ys):
        raise ValueError(f"turns and values differ in length ({len(xs)} and {len(ys)})")
    if not xs:
        raise ValueError("nothing to fit: no points")
    if any(not math.isfinite(v) for v in xs + ys):
        raise ValueError("turns and values must be finite numbers")
    last = max(range(len(xs)), key=lambda i: xs[i])
    last_turn, last_value = int(xs[last]), ys[last]
    if len(xs) < MIN_POINTS or len(set(ys)) == 1:
        return Growth(
            "flat", last_value, 0.0, 0.0, 0.0, 1.0 if len(set(ys)) == 1 else 0.0, len(xs), last_turn, last_value
        )
    a, b, se, r2 = _line(xs, ys)
    best = Growth("linear", a, b, b - _Z95 * se, b + _Z95 * se, r2, len(xs), last_turn, last_value)
    if all(y > 0 for y in ys):
        la, lb, lse, _ = _line(xs, [math.log(y) for y in ys])
        fitted = [math.exp(la + lb * x) for x in xs]
        my = sum(ys) / len(ys)
        syy = sum((y - my) ** 2 for y in ys)
        residual = sum((y - f) ** 2 for y, f in zip(ys, fitted, strict=True))
        er2 = 1.0 - residual / syy if syy > 0 else 1.0
        # the exponential must explain clearly more: a straight line is the humbler claim
        if er2 > r2 + 1e-3 and lb > 0:
            best = Growth(
                "exponential",
                math.exp(la),
                math.expm1(lb),
                math.expm1(lb - _Z95 * lse),
                math.expm1(lb + _Z95 * lse),
                er2,
                len(xs),
                last_turn,
                last_value,
            )
    return best


@dataclass(frozen=True, slots=True)
class Crossing:
    """Where a series reaches a limit: ``what`` (a section name or ``prompt``), the limit, the
    turn at the fitted rate and the (earliest, latest) turns over the rate's band."""

    what: str
    limit: float
    turn: int | None
    earliest: int | None
    latest: int | None
    growth: Growth

    def describe(self, limit_name: str) -> str:
        """One line: "prompt fills the window near turn 412 (398-431, firm linear fit)"."""
        g = self.growth
        if self.turn is None:
            return f"{self.what} does not grow toward the {limit_name} ({g.model} fit)"
        band = ""
        if self.earliest is not None and self.latest is not None and self.earliest != self.latest:
            band = f"{self.earliest}-{self.latest}, "
        elif self.latest is None and self.earliest is not None:
            band = f"{self.earliest} or later, "
        return (
            f"{self.what} reaches the {limit_name} ({self.limit:,.0f} tokens) near turn "
            f"{self.turn:,} ({band}{g.sureness} {g.model} fit, r2 {g.r2:.2f})"
        )


@dataclass
class Forecast:
    """Every section's growth and where the request, the budgeted prompt and the sections meet
    their limits. ``prompt`` is the series compared with the window (the whole request, when
    given), ``budgeted`` the one compared with the budget (None without a budget)."""

    sections: dict[str, Growth]
    prompt: Growth
    crossings: list[tuple[str, Crossing]]  # (limit name, crossing)
    budgeted: Growth | None = None

    def lines(self) -> list[str]:
        return [crossing.describe(name) for name, crossing in self.crossings]

    def frame(self) -> Any:
        """One row per series (``prompt``, ``budgeted`` with a budget, each section): model, rate,
        band, r2, sureness, last tokens."""
        import pandas as pd

        series = [("prompt", self.prompt)] + ([("budgeted", self.budgeted)] if self.budgeted is not None else [])
        rows = [
            {
                "what": name,
                "model": g.model,
                "rate": g.rate,
                "rate_low": g.rate_low,
                "rate_high": g.rate_high,
                "r2": g.r2,
                "sureness": g.sureness,
                "points": g.points,
                "last_turn": g.last_turn,
                "last_tokens": g.last_value,
            }
            for name, g in [*series, *self.sections.items()]
        ]
        return pd.DataFrame(rows)


def _token_count(value: object, what: str, *, minimum: int = 1) -> None:
    """A ValueError unless ``value`` is a whole, finite number of tokens of at least ``minimum``."""
    wording = "a positive int of tokens" if minimum == 1 else "an int of tokens, 0 or more"
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value != int(value)
        or value < minimum
    ):
        raise ValueError(f"{what} must be {wording}, got {value!r}")


def forecast(
    history: Any,
    *,
    window: int | None = None,
    budget: int | None = None,
    section_limits: Mapping[str, int] | None = None,
    fixed_tokens: int = 0,
    requests: Mapping[int, float] | None = None,
    budgeted: Mapping[int, float] | None = None,
    counter: Any = None,
) -> Forecast:
    """Fit every section of ``history`` (a ``History.frame()`` DataFrame, or anything with
    ``frame()``), and say when each named in ``section_limits`` reaches its limit.

    The window is compared with the whole request: ``requests`` (turn -> tokens of the request
    sent at that turn, the reply's reserve included), else the sections' total plus
    ``fixed_tokens``. The budget is compared with the budgeted prompt: ``budgeted`` (turn -> what
    the budget counts, ``wm_kernel.core.composer.budget.budgeted_tokens``), else the sections' total; with
    an estimated ``counter`` on the upper bound of its band, where the budget cuts."""
    for name, value in (("window", window), ("budget", budget)):
        if value is not None:
            _token_count(value, name)
    for section, value in (section_limits or {}).items():
        _token_count(value, f"the limit of section {section!r}")
    _token_count(fixed_tokens, "fixed_tokens", minimum=0)
    frame = history.frame() if hasattr(history, "frame") else history
    for column in ("turn", "section", "tokens"):
        if column not in frame.columns:
            raise ValueError(f"the history frame has no {column!r} column")
    if "dropped" in frame.columns:
        frame = frame[~frame["dropped"].astype(bool)]
    if frame.empty:
        raise ValueError("the history holds no composed turn to forecast from")
    sections = {
        str(name): fit_growth(group["turn"], group["tokens"]) for name, group in frame.groupby("section", sort=False)
    }
    totals = frame.groupby("turn")["tokens"].sum()
    if requests is not None:
        prompt = fit_growth(list(requests), list(requests.values()))
    else:
        prompt = fit_growth(totals.index, totals.to_numpy() + fixed_tokens)
    crossings = []
    if window is not None:
        crossings.append(("window", _crossing("request" if requests is not None else "prompt", window, prompt)))
    fitted_budget = None
    if budget is not None:
        points = dict(budgeted) if budgeted is not None else {int(t): float(v) for t, v in totals.items()}
        upper = counter is not None and not getattr(counter, "exact", True)
        if upper:  # as the budget cuts: on the count's upper bound
            points = {t: float(counter.upper(int(round(v)))) for t, v in points.items()}
        fitted_budget = fit_growth(list(points), list(points.values()))
        what = "budgeted prompt" + (" (upper bound)" if upper else "")
        crossings.append(("budget", _crossing(what, budget, fitted_budget)))
    for name, limit in (section_limits or {}).items():
        if name not in sections:
            raise ValueError(f"no section {name!r} in the history (sections: {', '.join(sections)})")
        crossings.append(("limit", _crossing(name, limit, sections[name])))
    return Forecast(sections, prompt, crossings, fitted_budget)


def _crossing(what: str, limit: float, growth: Growth) -> Crossing:
    early, late = growth.turns_reaching(limit)
    return Crossing(what, limit, growth.turn_reaching(limit), early, late, growth)


def daily_cost(cost_per_turn: float, turns_per_hour: float) -> float:
    """What a day costs at ``turns_per_hour`` turns an hour, each costing ``cost_per_turn``: a
    TypeError for what is not a number, a ValueError (one line) for NaN, an infinity or a negative."""
    for value, what in ((cost_per_turn, "cost per turn"), (turns_per_hour, "turns per hour")):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{what} must be a number, got {type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"{what} must be a finite number, got {value!r}")
    if turns_per_hour < 0 or cost_per_turn < 0:
        raise ValueError("cost per turn and turns per hour must not be negative")
    return cost_per_turn * turns_per_hour * 24
