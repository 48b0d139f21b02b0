"""``simulate()`` and its result, :class:`Simulation`: the per-request table, totals and views."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.engine import Request, SimulationData, run
from wm_kernel.cachesim.models import get_model
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.tokens import TokenCounter
from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.style import scrolling

if TYPE_CHECKING:
    import pandas as pd

#: Each request status and the :meth:`Simulation.summary` key counting the requests that have it.
STATUS_KEYS = {
    "hit": "read_whole_prefix",
    "partial": "read_part_of_prefix",
    "write": "wrote_without_reading",
    "miss": "neither_read_nor_wrote",
}
#: The columns of ``Simulation.turns``, in order.
TURN_COLUMNS = [
    "request",
    "at",
    "prompt_tokens",
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "ephemeral_5m_input_tokens",
    "ephemeral_1h_input_tokens",
    "hit_tokens",
    "storage_usd",
    "cost_usd",
    "cost_without_cache_usd",
    "status",
    "first_divergent_block",
    "divergent_label",
    "miss_reason",
]
# the token counts: integers from "prompt_tokens" to "hit_tokens"
_INT_COLUMNS = TURN_COLUMNS[TURN_COLUMNS.index("prompt_tokens") : TURN_COLUMNS.index("hit_tokens") + 1]
# Row tints: the theme's status colour, mostly transparent, over the page, under the page's own
# text colour (light pastel rows under the dark theme's white text were unreadable).
_COLOURS = {
    status: f"color-mix(in srgb, var(--jp-{name}-color1, {fallback}) 18%, transparent)"
    for status, name, fallback in [
        ("hit", "success", "#388e3c"),
        ("partial", "warn", "#f57c00"),
        ("write", "info", "#0097a7"),
        ("miss", "error", "#d32f2f"),
    ]
}


def simulate(
    requests: Iterable[Request], model: str | ModelProfile, *, counter: TokenCounter | None = None
) -> Simulation:
    """Play ``requests`` (in time order) against ``model``'s caching rules.

    ``model`` is a registered id (see ``MODELS``) or a ``ModelProfile``. Every request is checked
    before any is played, so bad input is one error and no result. ``counter``, the TokenCounter
    the block sizes were counted with, lets the result say so and carry an estimate's band into
    costs and the model's minimum.

    Examples
    --------
    >>> from datetime import datetime, timedelta, timezone
    >>> from wm_kernel.cachesim.engine import Block, Request
    >>> t0 = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)
    >>> blocks = [Block("system", 5000, breakpoint="5m", layer="system"), Block("hud", 250)]
    >>> sim = simulate([Request(t0 + timedelta(minutes=i), blocks) for i in range(3)], "claude-sonnet-4-6")
    >>> sim.turns[["cache_read_input_tokens", "cache_creation_input_tokens", "miss_reason"]].values.tolist()
    [[0, 5000, 'first_request'], [5000, 0, 'none'], [5000, 0, 'none']]
    >>> sim.turns["cost_usd"].round(6).tolist()
    [0.0195, 0.00225, 0.00225]
    >>> round(sim.total_cost, 5), round(sim.hit_rate, 4)
    (0.024, 0.6349)
    """
    return Simulation(run(requests, model), counter=counter)


def simulate_each(
    requests: Iterable[Request],
    models: Sequence[str | ModelProfile],
    *,
    counter: TokenCounter | None = None,
    warmups: Mapping[int, Request] | None = None,
) -> Simulation:
    """Play each request on its own model (``models[i]`` for ``requests[i]``): a provider caches
    per model, so the requests of each model are one run of that model's rules, and every row is
    priced at its own model's prices (``Simulation.models``). ``profile`` is the model of most
    requests (the first of them on a tie). ``warmups`` maps a request's index to a request played
    just before it on the same model and not reported: what the provider's cache held before (a
    log's first request that read what an earlier session wrote).

    >>> from datetime import datetime, timedelta, timezone
    >>> from wm_kernel.cachesim.engine import Block, Request
    >>> t0 = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)
    >>> blocks = [Block("system", 5000, breakpoint="5m", layer="system"), Block("hud", 250)]
    >>> sim = simulate_each([Request(t0 + timedelta(minutes=i), blocks) for i in range(3)],
    ...                     ["claude-sonnet-4-6", "claude-haiku-4-5", "claude-sonnet-4-6"])
    >>> sim.turns["cost_usd"].round(6).tolist(), [m.name for m in sim.models]
    ([0.0195, 0.0065, 0.00225], ['claude-sonnet-4-6', 'claude-haiku-4-5', 'claude-sonnet-4-6'])
    """
    if isinstance(requests, (str, bytes)) or not isinstance(requests, Iterable):
        raise TypeError(f"requests must be an iterable of Request, got {type(requests).__name__}")
    items = list(requests)
    profiles = [get_model(m) for m in models]
    if len(profiles) != len(items):
        raise ValueError(f"models has {len(profiles)} entries for {len(items)} requests")
    groups: dict[str, list[int]] = {}
    for index, profile in enumerate(profiles):
        groups.setdefault(profile.name, []).append(index)
    outcomes: list[Any] = [None] * len(items)
    warm = dict(warmups or {})
    for indices in groups.values():
        played: list[Request] = []
        reported: list[int | None] = []
        for i in indices:
            if i in warm:
                played.append(warm[i])
                reported.append(None)
            played.append(items[i])
            reported.append(i)
        data = run(played, profiles[indices[0]])
        for where, outcome in zip(reported, data.outcomes, strict=True):
            if where is not None:
                outcomes[where] = outcome
    if not groups:
        raise ValueError("simulate_each needs at least one request")
    profile = profiles[max(groups.values(), key=len)[0]]
    if len(groups) > 1:  # the whole list in time order, as one run checks it
        for a, b in zip(items, items[1:], strict=False):
            if b.at < a.at:
                raise ValueError(
                    f"requests must be in time order: a request at {b.at.isoformat()} follows one at {a.at.isoformat()}"
                )
    return Simulation(SimulationData(profile, items, outcomes), counter=counter, models=profiles)


def _status(read: int, created: int, reason: str) -> str:
    if read and reason == "none":
        return "hit"
    if read:
        return "partial"
    return "write" if created else "miss"


class Simulation:
    """The outcome of :func:`simulate`.

    Attributes
    ----------
    profile:
        The model profile the requests were played against.
    requests:
        The requests, as given.
    turns:
        DataFrame, one row per request (columns ``TURN_COLUMNS``): the provider's usage fields,
        ``hit_tokens`` (tokens served from the cache, whatever the provider calls them),
        ``cost_usd`` (input cost, storage included), ``status`` (hit, partial, write, miss),
        ``first_divergent_block`` (index or None) and its ``divergent_label``, ``miss_reason``
        (``"uncertain"`` instead of ``"below_minimum"`` where an estimated count's interval
        straddles the model's minimum: the provider may well cache that prefix).
    counter:
        The TokenCounter the blocks were counted with (None: not known).

    Hits are counted one way: a request *read from the cache* when it read any token of it (whole
    prefix: ``hit``; part: ``partial``); the *hit rate* is the share of input tokens read.
    """

    def __init__(
        self, data: SimulationData, *, counter: TokenCounter | None = None, models: Sequence[ModelProfile] | None = None
    ) -> None:
        """The simulation of ``data``, its ``turns`` frame built from the outcomes.

        Long because: it lays the outcomes out as the ``turns`` frame, one column per outcome field
        with its dtype, and declares each attribute the views read, every one with its comment.
        """
        import pandas as pd

        self.profile: ModelProfile = data.profile
        #: each request's model profile (all ``profile`` unless :func:`simulate_each` played them)
        self.models: list[ModelProfile] = list(models) if models is not None else [data.profile] * len(data.outcomes)
        #: what the simulation assumed that the log did not say (send times, the agent's caching,
        #: an inferred system prompt): lines every view of it shows
        self.assumptions: list[str] = []
        #: what the requests on the wire hold that these figures do not count (the separators
        #: between a session's sections, say, which ``%request`` counts): lines the full views
        #: show after the counter's
        self.left_out: list[str] = []
        self.requests: list[Request] = data.requests
        self.counter = counter
        #: the wire dialect the requests were laid out by ("" when the caller built them)
        self.wire = ""
        rows = [
            (
                index,
                o.at,
                o.prompt_tokens,
                o.input_tokens,
                o.cache_read_input_tokens,
                o.cache_creation_input_tokens,
                o.ephemeral_5m_input_tokens,
                o.ephemeral_1h_input_tokens,
                o.hit_tokens,
                o.storage_usd,
                o.cost_usd,
                o.cost_without_cache_usd,
                _status(o.cache_read_input_tokens, o.cache_creation_input_tokens, o.miss_reason),
                o.first_divergent_block,
                o.divergent_label,
                o.miss_reason,
            )
            for index, o in enumerate(data.outcomes)
        ]
        turns = pd.DataFrame.from_records(rows, columns=TURN_COLUMNS)
        turns = turns.astype({c: "int64" for c in _INT_COLUMNS})
        turns = turns.astype(
            {
                "storage_usd": "float64",
                "cost_usd": "float64",
                "cost_without_cache_usd": "float64",
                "first_divergent_block": "object",
            }
        )
        # None, not NaN, where no block diverged: an index is an int or nothing
        turns["first_divergent_block"] = pd.Series(
            [o.first_divergent_block for o in data.outcomes], index=turns.index, dtype="object"
        )
        if counter is not None and not counter.exact:
            minimum = self.profile.min_tokens
            reasons = turns["miss_reason"].tolist()
            for index, request in enumerate(self.requests):
                prefix = _prefix_tokens(request, whole=self.profile.mode == "automatic")
                if reasons[index] == "below_minimum" and counter.upper(prefix) >= minimum:
                    reasons[index] = "uncertain"
            turns["miss_reason"] = reasons
        self.turns: pd.DataFrame = turns
        #: (user tokens, reply tokens) of the exchange assumed for turns that recorded none, or None
        #: when every request carries the conversation that happened (or no conversation at all)
        self.assumed_exchange: tuple[int, int] | None = None
        #: the turns (request indices when no turn is known) that carry the assumed exchange
        self.assumed_turns: list[int] = []
        self._assumed_of = 0

    def assume_exchange(self, exchange: tuple[int, int], turns: Iterable[int], *, of: int) -> None:
        """Say that ``turns`` (of ``of`` requests) carry an assumed exchange of ``exchange``
        (user, reply) tokens: no exchange was recorded for them. The views then say so."""
        self.assumed_exchange = (int(exchange[0]), int(exchange[1]))
        self.assumed_turns = [int(t) for t in turns]
        self._assumed_of = of

    def exchange_note(self) -> str:
        """ "assuming a 500-token exchange per turn" (and where, when only some turns recorded
        none); '' when the conversation is the one that happened."""
        if self.assumed_exchange is None or not self.assumed_turns:
            return ""
        user, reply = self.assumed_exchange
        line = f"assuming a {user + reply:,}-token exchange per turn ({user:,}-token message, {reply:,}-token reply)"
        if len(self.assumed_turns) < self._assumed_of:
            shown = ", ".join(str(t) for t in self.assumed_turns[:6]) + (", ..." if len(self.assumed_turns) > 6 else "")
            line += f" where none was recorded (turn{'s' if len(self.assumed_turns) > 1 else ''} {shown})"
        return line

    def window_note(self) -> str:
        """ "3 of 1,600 requests are longer than claude-sonnet-4-6's 200,000-token window (from
        request 412, 200,090 tokens): the provider would refuse them"; '' when every request fits
        (or the model's window is not known)."""
        window = self.profile.context_window
        if window is None or self.turns.empty:
            return ""
        over = self.turns[self.turns["prompt_tokens"] > window]
        if over.empty:
            return ""
        first = over.iloc[0]
        return (
            f"{len(over):,} of {len(self.turns):,} requests are longer than {self.profile.name}'s "
            f"{window:,}-token window (from request {int(first['request'])}, {int(first['prompt_tokens']):,} tokens): "
            "the provider would refuse them"
        )

    # -- totals
    @property
    def total_cost(self) -> float:
        """Input cost of every request in US dollars, cache writes, reads and storage included; NaN
        (missing) when any request's model is unpriced (:attr:`unpriced`), never a partial sum."""
        return float(self.turns["cost_usd"].sum(min_count=len(self.turns)))

    @property
    def cost_without_cache(self) -> float:
        """The same prompts with every token billed as plain input (NaN when any is unpriced)."""
        return float(self.turns["cost_without_cache_usd"].sum(min_count=len(self.turns)))

    @property
    def unpriced(self) -> int:
        """How many requests have no dollars: their model is not in the price table."""
        return int(self.turns["cost_usd"].isna().sum())

    @property
    def hit_rate(self) -> float:
        """Tokens read from the cache over all input tokens (0.0 with no tokens)."""
        total = int(self.turns["prompt_tokens"].sum())
        return int(self.turns["cache_read_input_tokens"].sum()) / total if total else 0.0

    @property
    def cost_range(self) -> tuple[float, float]:
        """``(low, high)`` input cost: the total itself for exact counts, else the counter's band
        applied to it (costs are linear in tokens; a cache outcome the band would change is not
        re-simulated, see ``miss_reason == "uncertain"``)."""
        total = self.total_cost
        band = self.counter.band if self.counter is not None else None
        if band is None:
            return (total, total)
        return (total * (1 + band.low), total * (1 + band.high))

    @property
    def cached(self) -> bool:
        """Whether anything was read or written at all (a 0% hit rate with writes is not "never
        cached": the writes cost more than plain input)."""
        t = self.turns
        return bool(t["cache_read_input_tokens"].any() or t["cache_creation_input_tokens"].any())

    def summary(self) -> dict[str, Any]:
        """Totals, each key saying what it counts: requests by what they did with the cache
        (``read_whole_prefix``, ``read_part_of_prefix``, ``wrote_without_reading``,
        ``neither_read_nor_wrote``: the four statuses hit, partial, write, miss), tokens by kind
        (``input_tokens`` all of them; ``cache_read_tokens``, ``cache_write_tokens``,
        ``uncached_tokens`` their parts), ``hit_rate_of_input_tokens``, ``anything_cached``, the
        input costs, and ``why_not_whole_prefix``: for the requests that did not read their whole
        prefix (a first write included), how many for each reason."""
        t = self.turns
        statuses = Counter(t["status"])
        return {
            "model": self.profile.name,
            "wire": self.wire,
            "requests": len(t),
            **{key: statuses.get(status, 0) for status, key in STATUS_KEYS.items()},
            "hit_rate_of_input_tokens": self.hit_rate,
            "anything_cached": self.cached,
            "input_tokens": int(t["prompt_tokens"].sum()),
            "cache_read_tokens": int(t["cache_read_input_tokens"].sum()),
            "cache_write_tokens": int(t["cache_creation_input_tokens"].sum()),
            "uncached_tokens": int(t["input_tokens"].sum()),
            "input_cost": self.total_cost,
            "input_cost_without_cache": self.cost_without_cache,
            "input_cost_range": self.cost_range,
            "counter": self.counter.label if self.counter is not None else "",
            "assumed_exchange": self.exchange_note(),
            "why_not_whole_prefix": {
                reason: n for reason, n in Counter(t["miss_reason"]).most_common() if reason != "none"
            },
            "models": sorted({m.name for m in self.models}),
            "assumptions": list(self.assumptions),
        }

    # -- views
    def cost_text(self, digits: int = 6) -> str:
        """The input cost as the views print it: ``$0.012300``, or ``≈ $0.0111–$0.0148`` (and the
        central figure) for estimated counts."""
        if self.unpriced:
            return f"unpriced ({self.unpriced} of {len(self.turns)} requests' models are not in the price table)"
        low, high = self.cost_range
        if low == high:
            return f"${self.total_cost:.{digits}f}"
        return f"≈ ${self.total_cost:.{digits}f} (${low:.{digits}f}–${high:.{digits}f})"

    def _without_text(self, digits: int) -> str:
        return "" if self.unpriced else f" (without caching ${self.cost_without_cache:.{digits}f})"

    @property
    def title(self) -> str:
        """The model, and the wire the requests were laid out by when known (``claude-sonnet-4-6
        on the mira wire``)."""
        return f"{self.profile.name} on the {self.wire} wire" if self.wire else self.profile.name

    def headline(self) -> str:
        """One line for a dashboard: model and wire, hit rate of input tokens, cost, counter."""
        counter = f" · tokens {self.counter.label}" if self.counter is not None else ""
        assumed = f" · {self.exchange_note()}" if self.exchange_note() else ""
        assumed += "".join(f" · {line}" for line in self.assumptions)
        return (
            f"{self.title}: {self.hit_rate:.0%} of input tokens read from the cache · input cost "
            f"{self.cost_text(4)}{self._without_text(4)}{counter}{assumed}"
        )

    def counter_line(self) -> str:
        """What counted the tokens, and whether that is the model's own count."""
        if self.counter is None:
            return "tokens: counter not recorded"
        line = f"tokens counted with {self.counter.label}"
        if self.counter.model is not None and self.counter.model != self.profile.name:
            line += f" (for {self.counter.model}, not {self.profile.name})"
        elif self.counter.model is None:
            line += f" (no model chosen: not {self.profile.name}'s own count; Session(model=...) picks it)"
        if "uncertain" in set(self.turns["miss_reason"]):
            line += (
                f"; uncertain: the prefix's token interval straddles {self.profile.name}'s minimum of "
                f"{self.profile.min_tokens:,}, so it may be cached"
            )
        return line

    def _lines(self) -> list[str]:
        s = self.summary()
        whole, part = s["read_whole_prefix"], s["read_part_of_prefix"]
        wrote, neither = s["wrote_without_reading"], s["neither_read_nor_wrote"]
        head = (
            f"{self.title}: {s['requests']} requests: {whole + part} read from the cache ({whole} whole "
            f"prefix, {part} part), {wrote + neither} did not ({wrote} wrote it, {neither} neither)"
        )
        if s["assumed_exchange"]:
            head += f"; {s['assumed_exchange']}"
        if s["anything_cached"]:
            rate = (
                f"hit rate {s['hit_rate_of_input_tokens']:.1%} of input tokens ({s['cache_read_tokens']:,} of "
                f"{s['input_tokens']:,} read from the cache, {s['cache_write_tokens']:,} written)"
            )
        else:
            rate = "nothing was cached (hit rate 0% of input tokens, no cache writes)"
        without = s["input_cost_without_cache"]
        saving = s["input_cost"] / without - 1 if without else 0.0
        cost = f"input cost {self.cost_text()}" + (
            "" if self.unpriced else f" (without caching ${without:.6f}, {saving:+.1%})"
        )
        reasons = ", ".join(f"{k} {v}" for k, v in s["why_not_whole_prefix"].items()) or "none"
        lines = [head, rate, cost, f"why a request did not read its whole prefix: {reasons}", self.counter_line()]
        lines += self.left_out
        names = sorted({m.name for m in self.models})
        if len(names) > 1:
            lines.append(f"each request priced with its own model: {', '.join(names)}")
        return lines + self.assumptions

    def _table(self) -> pd.DataFrame:
        t = self.turns
        shown = [
            "request",
            "prompt_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "input_tokens",
            "cost_usd",
            "status",
            "miss_reason",
            "divergent_label",
        ]
        out = t[[c for c in ["turn", *shown] if c in t.columns]]
        out = out.rename(
            columns={
                "cache_read_input_tokens": "read",
                "cache_creation_input_tokens": "written",
                "input_tokens": "plain",
                "prompt_tokens": "tokens",
                "divergent_label": "first divergent",
            }
        )
        if len({m.name for m in self.models}) > 1:  # each request priced with its own model: say which
            out.insert(2 if "turn" in out.columns else 1, "model", [m.name for m in self.models])
        return out

    def __str__(self) -> str:
        return "\n".join(self._lines() + [self._table().to_string(index=False)])

    def __repr__(self) -> str:
        return f"<Simulation {self._lines()[0]}; ${self.total_cost:.6f}>"

    def _repr_html_(self) -> str:
        table = self._table()
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
        body = []
        status_at = list(table.columns).index("status")
        for row in table.itertuples(index=False, name=None):
            status = str(row[status_at])
            cells = "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row)
            body.append(f'<tr class="wm-cache-{status}" style="background:{_COLOURS[status]}">{cells}</tr>')
        lines = "".join(f"<div>{html.escape(line)}</div>" for line in self._lines())
        return no_math(
            f'<div class="wm-cache-simulation">{lines}'
            + scrolling(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
            + "</div>"
        )


def _prefix_tokens(request: Request, *, whole: bool = False) -> int:
    """Tokens up to the request's last breakpoint (the whole request when it marks none, or for
    automatic caching): the prefix a provider's minimum applies to."""
    marked = [] if whole else [i for i, block in enumerate(request.blocks) if block.breakpoint]
    end = marked[-1] + 1 if marked else len(request.blocks)
    return sum(block.tokens for block in request.blocks[:end])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6f}"
    return "" if value is None else str(value)
