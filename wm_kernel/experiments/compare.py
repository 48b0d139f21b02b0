"""Comparing variants: replay one scenario under several, tabulate every turn, plot the table."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from wm_kernel.composer import Layout
from wm_kernel.experiments.scenario import Scenario
from wm_kernel.experiments.variants import Variant, as_variant

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from wm_kernel.session import Instrument, Session
    from wm_kernel.types import ComposedPrompt


#: The parts of a composed prompt that ``compare`` measures: the system prompt's cached and
#: uncached content, then the other three placements.
PARTS = ("cached", "non_cached", "conversation_prefix", "post_history", "notification")
_PART_KEYS = {"cached": "cached_content", "non_cached": "non_cached_content",
              "conversation_prefix": "conversation_prefix_items",
              "post_history": "post_history_items", "notification": "notification_center"}
_CACHE_COLUMNS = {"status": "cache_status", "hit": "cache_hit", "cache_write_tokens": "cache_write_tokens",
                  "cache_read_tokens": "cache_read_tokens", "uncached_tokens": "uncached_tokens",
                  "broke_by": "cache_broke_by", "cost": "cost"}
COMPARE_COLUMNS = (["segment", "sections"] + [f"chars_{p}" for p in PARTS] + ["chars_total"]
                   + [f"tokens_{p}" for p in PARTS] + ["tokens_total"] + list(_CACHE_COLUMNS.values())
                   + [f"digest_{p}" for p in PARTS])


def part_digest(value: "str | Sequence[str]") -> str:
    """A short hex digest of one part of a prompt ('' when the part is empty).

    >>> part_digest("hello"), part_digest(""), part_digest(["a", "b"]) != part_digest(["ab"])
    ('ea6706f7', '', True)
    """
    if not value:
        return ""
    data = value if isinstance(value, str) else json.dumps(list(value), ensure_ascii=False)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def _part_chars(value: "str | Sequence[str]") -> int:
    return len(value) if isinstance(value, str) else sum(len(item) for item in value)


@dataclass
class VariantRun:
    """One replay of a scenario under a variant: its name, the Session it drove, and a per-turn
    summary of the last compose of each turn (chars and digest of each part)."""

    name: str
    session: "Session"
    turns: dict[int, dict[str, Any]]


def run_variants(scenario: Scenario, variants: "Mapping[str, Variant | Layout | Mapping[str, Any] | None]",
                 *, counter: Any = None, factories: Mapping[str, Any] | None = None,
                 instruments: "Iterable[Instrument]" = ()) -> list[VariantRun]:
    """Replay ``scenario`` once per variant (in order), every history counting tokens with one shared
    TokenCounter (``counter``, default a new one) so a text common to several variants is counted
    once. ``instruments`` are attached to each replay's Session besides its History (progress
    bars, collectors). :func:`compare` tabulates the result."""
    from wm_kernel.history import History
    from wm_kernel.tokens import TokenCounter

    if not isinstance(scenario, Scenario):
        raise TypeError(f"expected a Scenario, got {type(scenario).__name__}")
    if not isinstance(variants, Mapping) or not variants:
        raise ValueError("variants must be a non-empty mapping name -> Layout | Variant | dict")
    chosen = []
    for name, value in variants.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"variant names must be non-empty strings, got {name!r}")
        chosen.append(dataclasses.replace(as_variant(value, name), name=name))
    shared = counter if counter is not None else TokenCounter()
    runs = []
    for variant in chosen:
        turns: dict[int, dict[str, Any]] = {}

        def collect(session: "Session", turns: dict[int, dict[str, Any]] = turns) -> None:
            session.observe(lambda change: _summarise(change, turns), "composed")

        session = scenario.run(variant, factories=factories, instruments=(
            lambda s: History.attach(s, counter=shared), collect, *instruments))
        runs.append(VariantRun(variant.name, session, turns))
    return runs


def _summarise(change: Any, turns: dict[int, dict[str, Any]]) -> None:
    """Keep the sizes and digests of a compose as the row of its turn."""
    composed: ComposedPrompt = change["new"]
    row: dict[str, Any] = {"segment": change["owner"].segment_number,
                           "sections": len(composed.sections)}
    for part in PARTS:
        value = composed[_PART_KEYS[part]]
        row[f"chars_{part}"] = _part_chars(value)
        row[f"digest_{part}"] = part_digest(value)
    turns[composed.turn if composed.turn is not None else len(turns)] = row


def compare(scenario: Scenario, variants: "Mapping[str, Variant | Layout | Mapping[str, Any] | None]",
            *, counter: Any = None, factories: Mapping[str, Any] | None = None,
            tools_tokens: int = 0, min_cacheable_tokens: int = 1024,
            prices: Any = None) -> "pd.DataFrame":
    """Run ``scenario`` under each variant and tabulate every turn side by side.

    Parameters
    ----------
    variants:
        name -> :class:`Variant`, a Layout, a dict of Variant fields, or None (the scenario as is).
    counter:
        The TokenCounter to share (default: a new one over the default tokenizer).
    tools_tokens, min_cacheable_tokens, prices:
        Passed to :func:`wm_kernel.cache.cache_report`.

    Returns
    -------
    DataFrame indexed by (variant, turn), one row per turn (its last compose), with columns
    ``segment``, ``sections``; ``chars_<part>`` and ``chars_total`` (characters of each part as
    composed: cached and non-cached system content, conversation prefix, post history, notification
    centre); ``tokens_<part>`` and ``tokens_total`` (sums of per-section token counts, as
    :mod:`wm_kernel.cache` counts them: separators and the HUD frame are not counted);
    ``cache_status`` (hit / write / none), ``cache_hit``, ``cache_write_tokens``,
    ``cache_read_tokens``, ``uncached_tokens``, ``cache_broke_by``, ``cost`` (from
    :func:`wm_kernel.cache.cache_report`); and ``digest_<part>`` (a short hex digest, '' when empty),
    so ``frame.groupby(level="turn")["digest_cached"].nunique()`` shows where variants differ.
    ``frame.attrs`` holds the tokenizer name and the prices.
    """
    runs = run_variants(scenario, variants, counter=counter, factories=factories)
    return tabulate(runs, tools_tokens=tools_tokens, min_cacheable_tokens=min_cacheable_tokens,
                    prices=prices)


def tabulate(runs: Sequence[VariantRun], *, tools_tokens: int = 0, min_cacheable_tokens: int = 1024,
             prices: Any = None) -> "pd.DataFrame":
    """The :func:`compare` frame of some :func:`run_variants` runs. ``frame.attrs["cache"]`` holds
    each variant's cache summary (:meth:`wm_kernel.cache.CacheReport.summary`)."""
    import pandas as pd

    from wm_kernel.cache import Prices, cache_report

    frames = []
    tokenizer = ""
    summaries: dict[str, dict[str, Any]] = {}
    for run in runs:
        history = run.session.recorder
        tokenizer = history.counter.name
        sections = history.frame()
        sections = sections[~sections["dropped"]]  # rows of what a token budget left out
        part = sections["placement"].where(sections["placement"] != "system",
                                           sections["cached"].map({True: "cached", False: "non_cached"}))
        tokens = (sections.assign(part=part).pivot_table(index="turn", columns="part", values="tokens",
                                                         aggfunc="sum", fill_value=0)
                  .reindex(columns=list(PARTS), fill_value=0))
        tokens.columns = [f"tokens_{p}" for p in PARTS]
        report = cache_report(run.session, tools_tokens=tools_tokens,
                              min_cacheable_tokens=min_cacheable_tokens, prices=prices)
        summaries[run.name] = report.summary()
        cache = report.turns.set_index("turn")[list(_CACHE_COLUMNS)].rename(columns=_CACHE_COLUMNS)
        sizes = pd.DataFrame.from_dict(run.turns, orient="index")
        sizes.index.name = "turn"
        frame = sizes.join(tokens, how="left").join(cache, how="left")
        frame["chars_total"] = sum(frame[f"chars_{p}"] for p in PARTS)
        frame["tokens_total"] = sum(frame[f"tokens_{p}"] for p in PARTS)
        frame = frame.reset_index()
        frame.insert(0, "variant", run.name)
        frames.append(frame)
    result = pd.concat(frames, ignore_index=True)
    int_columns = ["segment", "sections", "chars_total", "tokens_total", "cache_write_tokens",
                   "cache_read_tokens", "uncached_tokens"]
    int_columns += [f"chars_{p}" for p in PARTS] + [f"tokens_{p}" for p in PARTS]
    result = result.astype({c: "int64" for c in int_columns} | {"cache_hit": "bool"})
    result = result.set_index(["variant", "turn"])[COMPARE_COLUMNS]
    result.attrs["tokenizer"] = tokenizer
    result.attrs["prices_per_million"] = dataclasses.asdict(Prices.coerce(prices))
    result.attrs["cache"] = summaries
    return result


def plot_compare(frame: "pd.DataFrame", metrics: Sequence[str] = ("chars_total", "tokens_total"), *,
                 title: str | None = None) -> "Figure":
    """Plot each metric per turn, one line per variant, one panel per metric; returns the Figure.

    Builds a ``matplotlib.figure.Figure`` directly (no pyplot state), so it works with any backend,
    Agg included, and leaves nothing open.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if isinstance(metrics, str):
        metrics = (metrics,)
    missing = [m for m in metrics if m not in frame.columns]
    if missing:
        raise ValueError(f"unknown metric {missing[0]!r} (columns: {', '.join(map(str, frame.columns))})")
    if list(frame.index.names) != ["variant", "turn"]:
        raise ValueError("expected a compare() frame, indexed by (variant, turn)")
    fig = Figure(figsize=(8, 2.8 * len(metrics)), layout="constrained")
    axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    variants = list(dict.fromkeys(frame.index.get_level_values("variant")))
    # identical variants draw on top of each other: vary the dash so each stays visible
    styles = ("-", "--", ":", "-.")
    for ax, metric in zip(axes, metrics):
        for position, name in enumerate(variants):
            series = frame.xs(name, level="variant")[metric]
            ax.plot(series.index, series.to_numpy(), styles[position % len(styles)], label=name,
                    linewidth=2.2 - 0.4 * (position % len(styles)),
                    marker="o" if len(series) <= 40 else None, markersize=3)
        ax.set_ylabel(metric)
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].set_xlabel("turn")
    axes[0].legend(loc="best", fontsize="small")
    if title:
        fig.suptitle(title)
    return fig
