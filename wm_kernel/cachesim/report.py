"""Prompt-cache accounting as Anthropic's Messages API caches prompts: hits, writes, cost.

The model
---------
The *cached prefix* of a request is the tools (a token count you give, default 0) plus the cached
system content up to its cache breakpoint (``export.to_anthropic`` puts ``cache_control`` on it).
For each recorded turn, in order:

* the prefix is shorter than ``min_cacheable_tokens`` (default 1024, the Messages API minimum for
  most models), or there is no cached system content: nothing is cached (status ``"none"``), every
  token is billed as plain input;
* the prefix is byte-identical to the previous turn's cached prefix: a cache **hit**, the prefix
  tokens are *read* from the cache (status ``"hit"``);
* otherwise the prefix is **written** to the cache (status ``"write"``): the first turn, or a cached
  section changed (``broke_by`` names it: ``base_prompt``, a changed section, ``+name`` added,
  ``-name`` removed).

Everything else (non-cached system content, conversation-prefix items, post-history items, the
notification centre) is *uncached* input on every turn. This report is a view over the prompt-cache
simulator (``wm_kernel.cachesim``): each turn is one request (tools, then each cached section, the
breakpoint on the last one, then the rest), played against a profile made of ``prices`` and
``min_cacheable_tokens`` with turns one minute apart, so every turn comes within the 5-minute cache
lifetime; a prefix that an *earlier* turn wrote is found again (as at the provider), not only the
previous turn's. For real time gaps, conversation growth, several breakpoints and real model
profiles use ``session.cache_simulation(model)``. Token counts are sums of per-section counts from
a TokenCounter (offline cl100k, or an estimate): separators, the HUD frame and message framing (a few tokens) are not counted, and
cl100k only approximates Anthropic's own tokenizer. Output tokens are not modelled.

Prices
------
``Prices(input, cache_write, cache_read)`` in US dollars per million tokens. The defaults (3.00,
3.75, 0.30) are **example prices** (Anthropic's list prices for Sonnet-class models with the
5-minute cache at the time of writing): an assumption to replace with your model's, e.g.
``cache_report(session, prices=Prices(input=15, cache_write=18.75, cache_read=1.5))`` or a dict.

Public API
----------
``cache_report(source, *, tools_tokens=0, min_cacheable_tokens=1024, prices=None, counter=None)``
    ``source``: a Session, a History, or an iterable of ComposedPrompts (turn = ``prompt.turn``, else
    position). Returns a ``CacheReport``: ``turns`` (DataFrame per turn: turn, status, hit,
    prefix_tokens, cache_write_tokens, cache_read_tokens, uncached_tokens, input_tokens, broke_by,
    cost), ``hit_rate``, ``cost``, ``cost_without_cache``, ``summary()``, ``str()`` and
    ``_repr_html_()``. The counter defaults to the History's own (so counts are shared with
    ``session.history``).

Examples
--------
>>> from wm_kernel.core.composer import SystemPromptComposer
>>> from wm_kernel.utils.tokens import EstimateTokenizer, TokenCounter
>>> c = SystemPromptComposer(); prompts = []
>>> for turn, base in enumerate(["A" * 8000, "A" * 8000, "B" * 8000]):
...     c.set_base_prompt(base); c.add_section("datetime_section", f"t{turn}")
...     prompts.append(c.compose())
>>> r = cache_report(prompts, counter=TokenCounter(EstimateTokenizer()))
>>> r.turns[["turn", "status", "cache_write_tokens", "cache_read_tokens", "broke_by"]].to_dict("records")[1:]
[{'turn': 1, 'status': 'hit', 'cache_write_tokens': 0, 'cache_read_tokens': 2061, 'broke_by': ''}, {'turn': 2, 'status': 'write', 'cache_write_tokens': 2061, 'cache_read_tokens': 0, 'broke_by': 'base_prompt'}]
>>> round(r.hit_rate, 3)
0.333
"""  # noqa: E501 - examples show their output line for line
from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.engine import Block, Request
from wm_kernel.cachesim.models import ModelProfile
from wm_kernel.cachesim.simulation import simulate
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.instruments.history import Entry, History
from wm_kernel.utils.tokens import TokenCounter

if TYPE_CHECKING:
    import pandas as pd

_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
TURN_COLUMNS = ["turn", "status", "hit", "prefix_tokens", "cache_write_tokens", "cache_read_tokens",
                "uncached_tokens", "input_tokens", "broke_by", "cost"]


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens: plain input, cache write, cache read (example defaults)."""

    input: float = 3.00
    cache_write: float = 3.75
    cache_read: float = 0.30

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ValueError(f"price {name} must be a non-negative number, got {value!r}")

    @classmethod
    def coerce(cls, value: Prices | Mapping[str, float] | None) -> Prices:
        """A Prices from a Prices, a dict with some of its keys, or None (the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, Prices):
            return value
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"input", "cache_write", "cache_read"})
            if unknown:
                raise ValueError(f"unknown price keys {unknown} (keys: input, cache_write, cache_read)")
            return cls(**value)
        raise TypeError(f"prices must be a Prices or a dict, got {type(value).__name__}")


class CacheReport:
    """Per-turn cache behaviour and the run's totals (see the module docstring)."""

    def __init__(self, turns: pd.DataFrame, prices: Prices, tokenizer: str, tools_tokens: int,
                 min_cacheable_tokens: int) -> None:
        self.turns = turns
        self.prices = prices
        self.tokenizer = tokenizer
        self.tools_tokens = tools_tokens
        self.min_cacheable_tokens = min_cacheable_tokens

    @property
    def hit_rate(self) -> float:
        """Share of turns whose prefix was read from the cache (0.0 with no turns)."""
        n = len(self.turns)
        return float(self.turns["hit"].sum()) / n if n else 0.0

    @property
    def cost(self) -> float:
        """Estimated input cost of the run in US dollars, with caching."""
        return float(self.turns["cost"].sum())

    @property
    def cost_without_cache(self) -> float:
        """The same input tokens all billed at the plain input price."""
        return float(self.turns["input_tokens"].sum()) * self.prices.input / 1_000_000

    def summary(self) -> dict[str, Any]:
        """Totals: turns, hits, writes, hit_rate, tokens written/read/uncached, costs, assumptions."""
        t = self.turns
        return {"turns": len(t), "hits": int(t["hit"].sum()), "writes": int((t["status"] == "write").sum()),
                "hit_rate": self.hit_rate, "cache_write_tokens": int(t["cache_write_tokens"].sum()),
                "cache_read_tokens": int(t["cache_read_tokens"].sum()),
                "uncached_tokens": int(t["uncached_tokens"].sum()),
                "input_tokens": int(t["input_tokens"].sum()), "cost": self.cost,
                "cost_without_cache": self.cost_without_cache, "tokenizer": self.tokenizer,
                "prices_per_million": asdict(self.prices)}

    def breaks(self) -> pd.DataFrame:
        """The turns where the cache was written after the first (and what broke it)."""
        t = self.turns
        return t[(t["status"] == "write") & (t["broke_by"] != "(first turn)")]

    def _lines(self) -> list[str]:
        s = self.summary()
        p = self.prices
        return [f"{s['turns']} turns: {s['hits']} cache hits, {s['writes']} writes, hit rate "
                f"{s['hit_rate']:.1%}",
                f"tokens: {s['cache_write_tokens']} written, {s['cache_read_tokens']} read, "
                f"{s['uncached_tokens']} uncached ({self.tokenizer})",
                f"estimated input cost ${s['cost']:.4f} (without caching ${s['cost_without_cache']:.4f}) "
                f"at assumed prices per million tokens: input ${p.input:g}, cache write "
                f"${p.cache_write:g}, cache read ${p.cache_read:g}"]

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def __repr__(self) -> str:
        return f"<CacheReport {self._lines()[0]}>"

    def _repr_html_(self) -> str:
        head = "".join(f"<div>{html.escape(line)}</div>" for line in self._lines())
        return f'<div class="wm-cache-report">{head}{self.turns.to_html(index=False, escape=True)}</div>'


def _as_history(source: Any) -> History:
    recorder = getattr(source, "recorder", None)
    if isinstance(recorder, History):
        return recorder
    if isinstance(source, History):
        return source
    if isinstance(source, (str, bytes, Mapping)) or not isinstance(source, Iterable):
        raise TypeError(f"expected a Session, a History or ComposedPrompts, got {type(source).__name__}")
    history = History()
    for position, prompt in enumerate(source):
        if not isinstance(prompt, ComposedPrompt):
            raise TypeError(f"item {position} is a {type(prompt).__name__}, not a ComposedPrompt")
        history.record(prompt.turn if prompt.turn is not None else position, 1, prompt)
    return history


def cache_report(source: Any, *, tools_tokens: int = 0, min_cacheable_tokens: int = 1024,
                 prices: Prices | Mapping[str, float] | None = None,
                 counter: TokenCounter | None = None) -> CacheReport:
    """Account for prompt caching over every recorded turn of ``source`` (see the module docstring)."""
    import pandas as pd

    for name, value in (("tools_tokens", tools_tokens), ("min_cacheable_tokens", min_cacheable_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    if counter is not None and not isinstance(counter, TokenCounter):
        raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
    table = Prices.coerce(prices)
    history = _as_history(source)
    if counter is None:
        counter = history.counter
    count, tokenizer = counter.count, counter.name
    records = list(history.composes())
    requests = []
    prefixes = []
    for index, record in enumerate(records):
        cached = [e for e in record.entries if e.cached]
        rest = [e for e in record.entries if not e.cached]
        blocks = [Block("tools", tools_tokens, layer="tools")] if tools_tokens else []
        blocks += [Block(f"{e.name}:{e.digest.hex()}", count(e.text), layer="system", label=e.name,
                         breakpoint="5m" if position == len(cached) - 1 else None)
                   for position, e in enumerate(cached)]
        blocks += [Block(f"{e.name}:{e.digest.hex()}", count(e.text), label=e.name) for e in rest]
        requests.append(Request(_EPOCH + timedelta(minutes=index), blocks))
        prefixes.append(tools_tokens + sum(b.tokens for b in blocks if b.layer == "system"))
    profile = ModelProfile(name="cache_report", provider="anthropic", mode="breakpoints", input=table.input,
                           write_5m=table.cache_write, read=table.cache_read, output=0.0,
                           min_tokens=min_cacheable_tokens, ttls={"5m": timedelta(minutes=5)}, lookback=20,
                           source="wm_kernel.cachesim.report.Prices")
    outcome = simulate(requests, profile).turns
    rows: list[tuple[Any, ...]] = []
    previous_cached: dict[str, bytes] = {}
    columns = ("cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens", "prompt_tokens",
               "cost_usd", "miss_reason")
    for record, prefix, (read, written, plain, total, cost, reason) in zip(
            records, prefixes, zip(*(outcome[c].tolist() for c in columns), strict=True), strict=True):
        cached_now = {e.name: e.digest for e in record.entries if e.cached}
        status = "hit" if read else ("write" if written else "none")
        broke = ""
        if status == "write":
            broke = "(first turn)" if reason == "first_request" else \
                _breakers(previous_cached, cached_now, [e for e in record.entries if e.cached])
        rows.append((record.turn, status, status == "hit", prefix, written, read, plain, total, broke, cost))
        previous_cached = cached_now
    turns = pd.DataFrame.from_records(rows, columns=TURN_COLUMNS)
    turns = turns.astype({"turn": "int64", "hit": "bool", "prefix_tokens": "int64",
                          "cache_write_tokens": "int64", "cache_read_tokens": "int64",
                          "uncached_tokens": "int64", "input_tokens": "int64", "cost": "float64"})
    return CacheReport(turns, table, tokenizer, tools_tokens, min_cacheable_tokens)


def _breakers(before: dict[str, bytes], after: dict[str, bytes], entries: list[Entry]) -> str:
    """Names of the cached sections that differ from the previous turn's, in prompt order."""
    names = []
    for entry in entries:
        old = before.get(entry.name)
        if old is None:
            names.append(f"+{entry.name}")
        elif old != entry.digest:
            names.append(entry.name)
    names.extend(f"-{name}" for name in before if name not in after)
    if not names:  # same sections and texts, in a different order
        names.append("(order)")
    return ", ".join(names)
