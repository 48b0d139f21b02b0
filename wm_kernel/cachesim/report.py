"""A per-turn cache report of a recorded session, priced by the cache simulator: one cost model.

``cache_report(source, *, model=None, tools_tokens=0, counter=None, **options)`` plays the recorded
turns against a model's profile (``wm_kernel.cachesim.models``: its caching rules and prices) at the
times they were composed, exactly as ``session.cache_simulation(model)`` and ``%cache`` do (the same
requests: tools, cached system sections with a breakpoint on the last, the rest, and the
conversation; ``options`` are :func:`~wm_kernel.cachesim.requests.simulate_session`'s), and tabulates
it by turn. The figures are the simulation's: the same total, the same cost, the same counter.

``source`` is a Session (its model by default, its recorded times), or a History or ComposedPrompts
with no session behind them: those have no send times, so turns are taken one minute apart and the
report says so. ``model`` defaults to the session's model, else ``claude-sonnet-4-6``.

Hits are counted one way (see :class:`~wm_kernel.cachesim.simulation.Simulation`): a turn *read from
the cache* when it read any token; ``hit_rate`` is the share of input tokens read. Each turn carries
the exchange the session recorded at it (sent or replayed); only a turn that recorded none carries an
assumed one (``exchange``, default a 100-token user message after a 400-token reply), and the report
says so, as ``%cache`` does.

Examples
--------
>>> from wm_kernel.core.composer import SystemPromptComposer
>>> from wm_kernel.tokens import EstimateTokenizer, TokenCounter
>>> c = SystemPromptComposer(); prompts = []
>>> for turn, base in enumerate(["A" * 8000, "A" * 8000, "B" * 8000]):
...     c.set_base_prompt(base); c.add_section("datetime_section", f"t{turn}")
...     prompts.append(c.compose())
>>> r = cache_report(prompts, counter=TokenCounter(EstimateTokenizer()))
>>> r.turns[["turn", "status", "cache_write_tokens", "cache_read_tokens", "broke_by"]].values.tolist()
[[0, 'write', 2061, 0, '(first turn)'], [1, 'hit', 0, 2061, ''], [2, 'write', 2061, 0, 'base_prompt']]
>>> print(r.lines()[-1])
send times: none recorded, turns taken one minute apart
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.models import DEFAULT_MODEL
from wm_kernel.cachesim.requests import simulate_session
from wm_kernel.cachesim.simulation import Simulation
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.instruments.history import History
from wm_kernel.tokens import TokenCounter
from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.style import scrolling

if TYPE_CHECKING:
    import pandas as pd

_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
REPORT_COLUMNS = [
    "turn",
    "status",
    "hit",
    "cache_write_tokens",
    "cache_read_tokens",
    "uncached_tokens",
    "input_tokens",
    "broke_by",
    "cost",
]


class CacheReport:
    """The simulation of the recorded turns, tabulated by turn (see the module docstring).

    ``turns`` columns: ``turn``, ``status`` (hit, partial, write, miss), ``hit`` (read anything from
    the cache), ``cache_write_tokens``, ``cache_read_tokens``, ``uncached_tokens``, ``input_tokens``
    (all of the request), ``broke_by`` (the section that broke the cached prefix on a write after
    the first), ``cost`` (US$, the model's prices).
    """

    def __init__(self, simulation: Simulation, *, assumed_times: bool = False) -> None:
        import pandas as pd

        self.simulation = simulation
        self.assumed_times = assumed_times
        t = simulation.turns
        broke = [
            ("(first turn)" if reason == "first_request" else (label or "").split(" (")[0] or reason)
            if status in ("write", "partial")
            else ""
            for status, reason, label in zip(t["status"], t["miss_reason"], t["divergent_label"], strict=True)
        ]
        self.turns: pd.DataFrame = pd.DataFrame(
            {
                "turn": t["turn"].astype("int64") if "turn" in t.columns else t["request"].astype("int64"),
                "status": t["status"],
                "hit": t["cache_read_input_tokens"] > 0,
                "cache_write_tokens": t["cache_creation_input_tokens"],
                "cache_read_tokens": t["cache_read_input_tokens"],
                "uncached_tokens": t["input_tokens"],
                "input_tokens": t["prompt_tokens"],
                "broke_by": broke,
                "cost": t["cost_usd"],
            },
            columns=REPORT_COLUMNS,
        )

    @property
    def model(self) -> str:
        return self.simulation.profile.name

    @property
    def counter(self) -> TokenCounter | None:
        return self.simulation.counter

    @property
    def hit_rate(self) -> float:
        """Share of input tokens read from the cache (the simulation's)."""
        return self.simulation.hit_rate

    @property
    def turns_read(self) -> int:
        """Turns that read anything from the cache."""
        return int(self.turns["hit"].sum())

    @property
    def cost(self) -> float:
        """Input cost of the run in US dollars, with caching (the simulation's total)."""
        return self.simulation.total_cost

    @property
    def cost_range(self) -> tuple[float, float]:
        return self.simulation.cost_range

    @property
    def cost_without_cache(self) -> float:
        return self.simulation.cost_without_cache

    def summary(self) -> dict[str, Any]:
        """Totals, each key saying what it counts: ``turns``, ``turns_read`` (read anything from
        the cache), ``turns_wrote_without_reading``, ``hit_rate_of_input_tokens``, tokens by kind
        (``input_tokens`` all of them), the input costs and the counter."""
        t = self.turns
        return {
            "model": self.model,
            "turns": len(t),
            "turns_read": self.turns_read,
            "turns_wrote_without_reading": int((t["status"] == "write").sum()),
            "hit_rate_of_input_tokens": self.hit_rate,
            "cache_write_tokens": int(t["cache_write_tokens"].sum()),
            "cache_read_tokens": int(t["cache_read_tokens"].sum()),
            "uncached_tokens": int(t["uncached_tokens"].sum()),
            "input_tokens": int(t["input_tokens"].sum()),
            "input_cost": self.cost,
            "input_cost_range": self.cost_range,
            "input_cost_without_cache": self.cost_without_cache,
            "tokenizer": self.counter.label if self.counter is not None else "",
            "assumed_exchange": self.simulation.exchange_note(),
            "over_window": self.simulation.window_note(),
        }

    def breaks(self) -> pd.DataFrame:
        """The turns where the cache was written after the first (and what broke it)."""
        t = self.turns
        return t[(t["status"] == "write") & (t["broke_by"] != "(first turn)")]

    def lines(self) -> list[str]:
        """The report's head as lines of text."""
        s = self.summary()
        out = [
            f"{self.simulation.title}: {s['turns']} turns: {s['turns_read']} read from the cache, "
            f"{s['turns_wrote_without_reading']} wrote it without reading; "
            f"hit rate {s['hit_rate_of_input_tokens']:.1%} of input tokens",
            f"tokens: {s['cache_write_tokens']} written, {s['cache_read_tokens']} read, "
            f"{s['uncached_tokens']} uncached, {s['input_tokens']} in all",
            f"input cost {self.simulation.cost_text(4)} (without caching ${s['input_cost_without_cache']:.4f}) "
            f"at {self.model}'s prices",
            self.simulation.counter_line(),
        ]
        if s["assumed_exchange"]:
            out.insert(1, s["assumed_exchange"])
        if s["over_window"]:
            out.insert(1, s["over_window"])
        if self.assumed_times:
            out.append("send times: none recorded, turns taken one minute apart")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"<CacheReport {self.lines()[0]}>"

    def _repr_html_(self) -> str:
        head = "".join(f"<div>{html.escape(line)}</div>" for line in self.lines())
        table = scrolling(self.turns.to_html(index=False, escape=True))
        return no_math(f'<div class="wm-cache-report">{head}{table}</div>')


class _Recorded:
    """What ``simulate_session`` reads of a session, for a History with none behind it."""

    def __init__(self, history: History) -> None:
        self.recorder = history
        self.history = history.frame()
        self.model = None


def cache_report(
    source: Any, *, model: str | None = None, tools_tokens: int = 0, counter: TokenCounter | None = None, **options: Any
) -> CacheReport:
    """The recorded turns of ``source`` played against ``model`` (see the module docstring)."""
    if counter is not None and not isinstance(counter, TokenCounter):
        raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
    recorder = getattr(source, "recorder", None)
    if isinstance(recorder, History):
        chosen = model or getattr(source, "model", None) or DEFAULT_MODEL
        return CacheReport(
            simulate_session(source, model=chosen, tools_tokens=tools_tokens, counter=counter, **options)
        )
    history = _as_history(source, counter)
    frame = history.frame()
    if frame.empty:
        raise ValueError("nothing recorded yet: compose first")
    turns = sorted(int(t) for t in frame["turn"].unique())
    options.setdefault("times", [_EPOCH + timedelta(minutes=i) for i in range(len(turns))])
    sim = simulate_session(
        _Recorded(history),  # type: ignore[arg-type]
        model=model or DEFAULT_MODEL,
        tools_tokens=tools_tokens,
        counter=history.counter,
        **options,
    )
    return CacheReport(sim, assumed_times=True)


def _as_history(source: Any, counter: TokenCounter | None) -> History:
    if isinstance(source, History):
        if counter is not None and counter is not source.counter:
            raise ValueError("a History counts with its own counter (history.counter); pass no counter")
        return source
    if isinstance(source, (str, bytes, Mapping)) or not isinstance(source, Iterable):
        raise TypeError(f"expected a Session, a History or ComposedPrompts, got {type(source).__name__}")
    history = History(counter=counter)
    for position, prompt in enumerate(source):
        if not isinstance(prompt, ComposedPrompt):
            raise TypeError(f"item {position} is a {type(prompt).__name__}, not a ComposedPrompt")
        history.record(prompt.turn if prompt.turn is not None else position, 1, prompt)
    return history
