"""Reconcile a cache simulation with what a provider billed, and say why each turn differs.

``reconcile(session_or_simulation, usage)`` aligns billed usage with simulated requests (in order, or
by request id) and returns a :class:`Reconciliation`: per turn the predicted and billed input,
cache-read and cache-write tokens, both priced by :func:`wm_kernel.providers.pricing.price` (the
prompt side: a simulation predicts no output, so billed output dollars are shown apart), the
residual (billed minus predicted) and a cause:

``match``          the billed tokens are the predicted ones.
``ttl_priced``     the same tokens, but writes billed at the other TTL (1h where 5m was modelled, or
                   the reverse).
``tokenizer``      the counts differ by a steady factor (two or more turns agreeing within 2%): the
                   provider's tokenizer counts differently; the detail names the factor, and
                   :meth:`Reconciliation.calibration` hands it on.
``provider_miss``  a write was billed where the simulation read a live entry, and the request's
                   cacheable prefix (tools, cached system text, parameters) was byte-identical to
                   the previous request's: the provider missed.
``invalidated``    the same, but the prefix differed from the previous request's (tools, system text
                   or parameters changed): the cache was invalidated by the request itself.
``unknown``        anything else (or a miss with no request to compare).

Prefix evidence comes from ``Usage.prefix`` (a usage log line with its request body, see
``wm_kernel.dialects.usage.read_usage``), from the exchanges a session recorded while sending, or
from the request bodies of an imported log.

An imported log (``wm_kernel.interop.import_log``; anything with the :class:`UsageLog` methods) is
reconciled directly: ``reconcile(log)`` plays its requests through the cache simulator at the log's
send times and compares each turn that recorded usage with what it recorded; ``reconcile(log,
usage)`` compares with usage kept apart (a billing export: one record per request in order, or
``by="request_id"`` with the log's request ids).
"""
from __future__ import annotations

import dataclasses
import html
import os
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from wm_kernel.cachesim.models import ModelProfile
from wm_kernel.cachesim.requests import session_requests
from wm_kernel.cachesim.simulation import Simulation, simulate
from wm_kernel.dialects.registry import dialect_for_provider, get_dialect, known_name
from wm_kernel.dialects.usage import Usage, parse_usage, read_usage
from wm_kernel.instruments.history import History
from wm_kernel.providers.pricing import price
from wm_kernel.session import Session
from wm_kernel.utils.htmltext import no_math
from wm_kernel.utils.style import WORD_WRAP

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

CAUSES = ("match", "ttl_priced", "tokenizer", "provider_miss", "invalidated", "unknown")
COLUMNS = ["turn", "request_id", "predicted_input", "billed_input", "predicted_read", "billed_read",
           "predicted_write", "billed_write", "predicted_write_1h", "billed_write_1h", "predicted_usd",
           "billed_usd", "residual_usd", "output_usd", "cause", "detail"]
_PARTS = {"tools": "tools changed", "system": "cached system text changed", "params": "parameters changed"}
#: Ratios within this fraction of each other are one steady tokenizer factor.
FACTOR_TOLERANCE = 0.02


@runtime_checkable
class UsageLog(Protocol):
    """A log of requests someone else sent, with what they were billed
    (``wm_kernel.interop.ImportedSession`` is one): its cache simulation at the log's send times,
    the usage it recorded per request (None where none), the request ids and the digests of each
    request's cacheable prefix (``request_prefix``; empty where the log has no request body)."""

    @property
    def request_ids(self) -> list[str | None]: ...

    def cache_simulation(self, model: str | None = None) -> Simulation: ...

    def billed_usage(self) -> list[Usage | None]: ...

    def request_prefixes(self) -> list[dict[str, str]]: ...


def simulated_usage(simulation: Simulation) -> list[Usage]:
    """The usage each simulated request would be billed, in the provider-neutral shape."""
    if not isinstance(simulation, Simulation):
        raise TypeError(f"expected a Simulation, got {type(simulation).__name__}")
    # the provider billing the simulated wire (a model profile's provider resolves to its wire)
    wire = getattr(simulation, "wire", "") or simulation.profile.provider
    provider = get_dialect(wire).provider if known_name(wire) else dialect_for_provider(wire).provider
    t = simulation.turns
    return [Usage(provider, int(i), int(r), int(w), int(h), model=simulation.profile.name)
            for i, r, w, h in zip(t["input_tokens"], t["cache_read_input_tokens"], t["cache_creation_input_tokens"],
                                  t["ephemeral_1h_input_tokens"], strict=True)]


def _usage_list(usage: Any) -> list[Usage]:
    if isinstance(usage, (str, os.PathLike)):
        return read_usage(usage)
    if isinstance(usage, Iterable) and not isinstance(usage, (bytes, dict)):
        items = list(usage)
        if all(isinstance(u, Usage) for u in items):
            return items
        return read_usage(items)
    raise TypeError(f"usage must be a path, or a list of Usage / usage records, got {type(usage).__name__}")


def _steady_factor(pairs: Sequence[tuple[Usage, Usage]]) -> tuple[float | None, set[int]]:
    """The largest group (2 or more) of turns whose billed/predicted ratios agree and are not 1."""
    ratios = {i: b.prompt_tokens / p.prompt_tokens for i, (p, b) in enumerate(pairs)
              if p.prompt_tokens and abs(b.prompt_tokens / p.prompt_tokens - 1) > FACTOR_TOLERANCE / 2
              and (b.cache_read_tokens > 0) == (p.cache_read_tokens > 0)
              and (b.cache_write_tokens > 0) == (p.cache_write_tokens > 0)}
    best: set[int] = set()
    for ratio in ratios.values():
        group = {i for i, r in ratios.items() if abs(r - ratio) <= FACTOR_TOLERANCE * ratio}
        if len(group) > len(best):
            best = group
    if len(best) < 2:
        return None, set()
    return statistics.median(ratios[i] for i in best), best


def _cause(index: int, pairs: Sequence[tuple[Usage, Usage]], factor: float | None,
           steady: set[int], previous: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The cause of row ``index``; ``previous``: the prefix digests of the request sent before it
    (default: the previous row's)."""
    p, b = pairs[index]
    same_total = (p.input_tokens, p.cache_read_tokens, p.cache_write_tokens) == \
                 (b.input_tokens, b.cache_read_tokens, b.cache_write_tokens)
    if same_total and p.cache_write_1h_tokens == b.cache_write_1h_tokens:
        return "match", ""
    if same_total:
        if b.cache_write_1h_tokens > p.cache_write_1h_tokens:
            return "ttl_priced", (f"{b.cache_write_1h_tokens - p.cache_write_1h_tokens:,} write tokens billed "
                                  f"at the 1h price where 5m was modelled")
        return "ttl_priced", (f"{p.cache_write_1h_tokens - b.cache_write_1h_tokens:,} write tokens billed "
                              f"at the 5m price where 1h was modelled")
    if index in steady and factor is not None:
        return "tokenizer", f"counts x{factor:.2f} (steady over {len(steady)} turns)"
    if b.cache_read_tokens < p.cache_read_tokens and b.cache_write_tokens > p.cache_write_tokens:
        if previous is None:
            previous = pairs[index - 1][1].prefix if index else {}
        if not b.prefix or not previous:
            return "unknown", (f"billed a write where a read of {p.cache_read_tokens:,} tokens was modelled; "
                               f"no request to compare")
        changed = [_PARTS[k] for k in _PARTS if b.prefix.get(k) != previous.get(k)]
        if changed:
            return "invalidated", ", ".join(changed) + " since the previous request"
        return "provider_miss", (f"prefix byte-identical to the previous request and live ({p.cache_read_tokens:,} "
                                 f"tokens modelled as read); billed a write")
    return "unknown", "billed tokens differ from the simulation in no pattern known here"


def reconcile(source: Session | Simulation | UsageLog, usage: Any = None, *,
              model: str | ModelProfile | None = None, by: str = "order",
              request_ids: Sequence[str | None] | None = None, **options: Any) -> Reconciliation:
    """Reconcile ``source`` (a Session, simulated with ``model`` and ``options`` as
    ``simulate_session`` takes them, with its recorded conversation and, when it sent anything,
    only the turns it sent; an imported log, see :class:`UsageLog`, simulated on ``model`` or its
    own; or a Simulation) with ``usage``
    (Usage objects, usage/response records, or a JSON Lines path; None: the session's recorded
    exchanges, or the usage the log recorded). ``by``: ``"order"`` or ``"request_id"`` (ids of the
    session's exchanges or of the log's requests, or ``request_ids`` given per simulated request)."""
    if by not in ("order", "request_id"):
        raise ValueError(f"by must be 'order' or 'request_id', got {by!r}")
    if not isinstance(source, (Session, Simulation)) and isinstance(source, UsageLog):
        return _reconcile_log(source, usage, model=model, by=by, request_ids=request_ids, **options)
    exchanges_by_turn: dict[int, Any] = {}
    if isinstance(source, Session):
        history = History.of(source)
        exchanges_by_turn = {e.turn: e for e in history.exchanges()}
        if usage is None:
            usage = [parse_usage(e.usage, where=f"turn {e.turn}", request_id=e.request_id, prefix=e.prefix)
                     for e in exchanges_by_turn.values() if e.usage is not None]
        if model is None:
            known = next((e.model for e in exchanges_by_turn.values()), None)
            if known is None:
                raise ValueError("pass model= (the session sent nothing to take it from)")
            model = known
        if exchanges_by_turn and "history" not in options:
            # the real conversation; a turn that sent nothing holds an empty user message (no
            # tokens), since each recorded turn needs one, and is left out below
            options["history"] = [m for turn in history.turns for m in (
                exchanges_by_turn[turn].messages() if turn in exchanges_by_turn
                else [{"role": "user", "content": ""}])]
        turns_sent, requests = session_requests(source, **options)
        if exchanges_by_turn:  # only the turns that were sent reach a provider's cache
            kept = [(t, r) for t, r in zip(turns_sent, requests, strict=True) if t in exchanges_by_turn]
            turns_sent, requests = [t for t, _ in kept], [r for _, r in kept]
        simulation = simulate(requests, model)
        simulation.turns.insert(0, "turn", turns_sent)
    elif isinstance(source, Simulation):
        if model is not None or options:
            raise ValueError("model and simulation options apply to a Session; this Simulation is already run")
        simulation = source
    else:
        raise TypeError(f"reconcile needs a Session, an imported log or a Simulation, got {type(source).__name__}")
    if usage is None:
        raise ValueError("usage is required with a Simulation")
    billed = _usage_list(usage)
    predicted = simulated_usage(simulation)
    turns = simulation.turns["turn"].tolist() if "turn" in simulation.turns else list(range(len(predicted)))
    if by == "order":
        if len(billed) != len(predicted):
            raise ValueError(f"{len(predicted)} simulated requests but {len(billed)} usage records; align by "
                             f"request id, or give one record per request")
        aligned = list(zip(predicted, billed, strict=True))
    else:
        ids = list(request_ids) if request_ids is not None else [
            getattr(exchanges_by_turn.get(t), "request_id", None) for t in turns]
        if len(ids) != len(predicted):
            raise ValueError(f"request_ids has {len(ids)} entries for {len(predicted)} simulated requests")
        by_id = {u.request_id: u for u in billed if u.request_id}
        missing = [i for i in ids if not isinstance(i, str) or i not in by_id]
        if missing:
            raise ValueError(f"no usage record has request id {missing[0]!r}")
        aligned = [(p, by_id[str(i)]) for p, i in zip(predicted, ids, strict=True)]
    return _reconciliation(simulation.profile, turns, aligned)


def _reconcile_log(log: UsageLog, usage: Any, *, model: str | ModelProfile | None, by: str,
                   request_ids: Sequence[str | None] | None, **options: Any) -> Reconciliation:
    """``reconcile`` of an imported log (module docstring): every request is simulated (the cache
    remembers them all), the turns with billed usage are compared, each with the prefix of the
    request sent just before it."""
    name = model.name if isinstance(model, ModelProfile) else model
    simulation = log.cache_simulation(name, **options)
    prefixes = log.request_prefixes()
    predicted = simulated_usage(simulation)
    if usage is None:
        if request_ids is not None or by != "order":
            raise ValueError("by= and request_ids= align usage given apart; the log's own usage is "
                             "aligned with its requests already")
        recorded = log.billed_usage()
        kept = [turn for turn, u in enumerate(recorded) if u is not None]
        if not kept:
            raise ValueError("the log records no usage; pass usage= (one record per request, or by "
                             "request id)")
        billed = {turn: recorded[turn] for turn in kept}
    else:
        records = _usage_list(usage)
        if by == "order":
            if len(records) != len(predicted):
                raise ValueError(f"the log has {len(predicted)} requests but there are {len(records)} usage "
                                 f"records; align by request id, or give one record per request")
            billed = dict(enumerate(records))
        else:
            ids = list(request_ids) if request_ids is not None else log.request_ids
            if len(ids) != len(predicted):
                raise ValueError(f"request_ids has {len(ids)} entries for {len(predicted)} logged requests")
            by_id = {u.request_id: u for u in records if u.request_id}
            billed = {turn: by_id[i] for turn, i in enumerate(ids) if isinstance(i, str) and i in by_id}
            if not billed:
                raise ValueError("no usage record has a request id of the log's requests")
    kept = sorted(billed)
    aligned = []
    for turn in kept:
        b = billed[turn]
        assert b is not None
        if not b.prefix and prefixes[turn]:
            b = dataclasses.replace(b, prefix=prefixes[turn])
        aligned.append((predicted[turn], b))
    previous = [prefixes[turn - 1] if turn else {} for turn in kept]
    return _reconciliation(simulation.profile, kept, aligned, previous)


def _reconciliation(profile: ModelProfile, turns: Sequence[Any], aligned: Sequence[tuple[Usage, Usage]],
                    previous: Sequence[Mapping[str, str]] | None = None) -> Reconciliation:
    factor, steady = _steady_factor(aligned)
    rows = []
    for index, (turn, (p, b)) in enumerate(zip(turns, aligned, strict=True)):
        cause, detail = _cause(index, aligned, factor, steady, previous[index] if previous is not None else None)
        predicted_usd = price(p, profile).prompt_usd
        billed_cost = price(b, profile)
        rows.append((turn, b.request_id, p.input_tokens, b.input_tokens, p.cache_read_tokens, b.cache_read_tokens,
                     p.cache_write_tokens, b.cache_write_tokens, p.cache_write_1h_tokens, b.cache_write_1h_tokens,
                     predicted_usd, billed_cost.prompt_usd, billed_cost.prompt_usd - predicted_usd,
                     billed_cost.output_usd, cause, detail))
    return Reconciliation(profile, rows, factor if steady else None)


class Reconciliation:
    """The result of :func:`reconcile`: ``rows`` (a DataFrame, columns ``COLUMNS``), ``summary()``,
    ``plot()``, and the fitted tokenizer factor (``factor``; None when no steady one was found)."""

    def __init__(self, profile: ModelProfile, rows: list[tuple[Any, ...]], factor: float | None) -> None:
        import pandas as pd

        self.profile = profile
        self.factor = factor
        self.rows: pd.DataFrame = pd.DataFrame.from_records(rows, columns=COLUMNS)

    def summary(self) -> dict[str, Any]:
        """Totals (predicted, billed, residual, in dollars, prompt side), billed output dollars, the
        causes counted (most frequent first) and the tokenizer factor."""
        r = self.rows
        predicted, billed = float(r["predicted_usd"].sum()), float(r["billed_usd"].sum())
        return {"model": self.profile.name, "turns": len(r), "predicted_usd": predicted, "billed_usd": billed,
                "residual_usd": billed - predicted, "output_usd": float(r["output_usd"].sum()),
                "causes": dict(Counter(r["cause"]).most_common()), "tokenizer_factor": self.factor}

    def calibration(self) -> dict[str, Any] | None:
        """What a token-count calibration needs from this reconciliation: the model and the fitted
        factor (billed / predicted tokens), or None when no steady factor was found."""
        if self.factor is None:
            return None
        return {"model": self.profile.name, "factor": self.factor,
                "turns": int((self.rows["cause"] == "tokenizer").sum())}

    def lines(self) -> list[str]:
        """The summary as text lines."""
        s = self.summary()
        residual = s["residual_usd"]
        share = f" ({residual / s['predicted_usd']:+.1%})" if s["predicted_usd"] else ""
        causes = ", ".join(f"{k} {v}" for k, v in s["causes"].items())
        head = [f"{s['model']}: {s['turns']} turns; predicted ${s['predicted_usd']:.6f}, billed "
                f"${s['billed_usd']:.6f} (prompt side), residual ${residual:+.6f}{share}",
                f"causes: {causes}"]
        if self.factor is not None:
            head.append(f"tokenizer factor {self.factor:.3f} (billed / predicted tokens)")
        return head

    def table(self) -> pd.DataFrame:
        """The per-turn table, shortened for reading."""
        r = self.rows
        out = r[["turn", "predicted_read", "billed_read", "predicted_write", "billed_write", "predicted_usd",
                 "billed_usd", "residual_usd", "cause", "detail"]]
        return out.rename(columns={"predicted_read": "read (sim)", "billed_read": "read (bill)",
                                   "predicted_write": "write (sim)", "billed_write": "write (bill)",
                                   "predicted_usd": "$ sim", "billed_usd": "$ bill", "residual_usd": "residual"})

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

    def _repr_html_(self) -> str:
        lines = "".join(f"<div>{html.escape(line)}</div>" for line in self.lines())
        table = self.table().to_html(index=False, float_format="{:.6f}".format)
        # a cell wraps between words, never inside one (a cause, a model id, a number)
        table = table.replace("<td>", f'<td style="{WORD_WRAP}">').replace("<th>", f'<th style="{WORD_WRAP}">')
        return no_math(f'<div class="wm-reconciliation">{lines}{table}</div>')
