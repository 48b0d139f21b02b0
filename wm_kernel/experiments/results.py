"""The results of a comparison: each replay (:class:`VariantRun`), its per-turn rows, the table of
every run side by side (:func:`tabulate`) and its plot (:func:`plot_compare`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from wm_kernel.session import Session


#: The parts of a composed prompt that ``compare`` measures: the system prompt's cached and
#: uncached content, then the other three placements.
PARTS = ("cached", "non_cached", "conversation_prefix", "post_history", "notification")
PART_KEYS = {
    "cached": "cached_content",
    "non_cached": "non_cached_content",
    "conversation_prefix": "conversation_prefix_items",
    "post_history": "post_history_items",
    "notification": "notification_center",
}
_CACHE_COLUMNS = {
    "status": "cache_status",
    "hit": "cache_hit",
    "cache_write_tokens": "cache_write_tokens",
    "cache_read_tokens": "cache_read_tokens",
    "uncached_tokens": "uncached_tokens",
    "broke_by": "cache_broke_by",
    "cost": "cost",
}
COMPARE_COLUMNS = (
    ["segment", "sections"]
    + [f"chars_{p}" for p in PARTS]
    + ["chars_total"]
    + [f"tokens_{p}" for p in PARTS]
    + ["tokens_total"]
    + list(_CACHE_COLUMNS.values())
    + [f"digest_{p}" for p in PARTS]
)


def part_digest(value: str | Sequence[str]) -> str:
    """A short hex digest of one part of a prompt ('' when the part is empty).

    >>> part_digest("hello"), part_digest(""), part_digest(["a", "b"]) != part_digest(["ab"])
    ('ea6706f7', '', True)
    """
    if not value:
        return ""
    data = value if isinstance(value, str) else json.dumps(list(value), ensure_ascii=False)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def part_chars(value: str | Sequence[str]) -> int:
    return len(value) if isinstance(value, str) else sum(len(item) for item in value)


@dataclass
class VariantRun:
    """One replay of a scenario under a variant.

    Attributes
    ----------
    name:
        The variant's name.
    session:
        The Session the replay drove; None when an executor ran it (the Session stayed in the
        worker; what comes back is its table).
    turns:
        A per-turn summary of the last compose of each turn (chars and digest of each part);
        empty when a Dask cluster ran it (the same figures are the rows of ``table``, and only
        the table travels back).
    scenario:
        The scenario's name in a sweep (its file, or its key); '' for a single scenario.
    table, cache, options:
        This run's rows of the :func:`compare` frame and its cache summary, tabulated with
        ``options`` (tools_tokens, model) where the replay ran.
    sections:
        The section-level history (``session.history``), when the run was asked to ship it back.
    scenario_turns:
        The turns the scenario completes (``Scenario.turns``).
    warnings:
        The warnings a worker's replay raised, (category, message, file, line): re-issued here, so
        a sweep on an executor warns as the serial run does.
    """

    name: str
    session: Session | None
    turns: dict[int, dict[str, Any]]
    scenario: str = ""
    table: pd.DataFrame | None = None
    cache: dict[str, Any] | None = None
    options: tuple[Any, ...] | None = None
    sections: pd.DataFrame | None = None
    scenario_turns: int = 0
    warnings: tuple[tuple[type[Warning], str, str, int], ...] = ()

    @property
    def history(self) -> pd.DataFrame:
        """The section-level history: shipped back, or read from the Session."""
        if self.sections is not None:
            return self.sections
        if self.session is None:
            raise ValueError(
                f"variant {self.name!r} ran in an executor and did not ship its "
                f"history back (ask for it with history=True)"
            )
        return self.session.history


def run_table(run: VariantRun, tools_tokens: int = 0, model: str | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One run's rows of the compare frame (a ``turn`` column, not yet indexed) and its cache
    summary, from its Session."""
    import pandas as pd

    from wm_kernel.cachesim.report import cache_report

    assert run.session is not None
    history = run.session.recorder
    sections = history.frame()
    sections = sections[~sections["dropped"]]  # rows of what a token budget left out
    part = sections["placement"].where(
        sections["placement"] != "system", sections["cached"].map({True: "cached", False: "non_cached"})
    )
    tokens = (
        sections.assign(part=part)
        .pivot_table(index="turn", columns="part", values="tokens", aggfunc="sum", fill_value=0)
        .reindex(columns=list(PARTS), fill_value=0)
    )
    tokens.columns = [f"tokens_{p}" for p in PARTS]
    report = cache_report(run.session, tools_tokens=tools_tokens, model=model)
    cache = report.turns.set_index("turn")[list(_CACHE_COLUMNS)].rename(columns=_CACHE_COLUMNS)
    sizes = pd.DataFrame.from_dict(run.turns, orient="index")
    sizes.index.name = "turn"
    frame = sizes.join(tokens, how="left").join(cache, how="left")
    frame["chars_total"] = sum(frame[f"chars_{p}"] for p in PARTS)
    frame["tokens_total"] = sum(frame[f"tokens_{p}"] for p in PARTS)
    summary = report.summary()
    summary["tokenizer"] = history.counter.label
    return frame.reset_index(), summary


def tabulate(runs: Sequence[VariantRun], *, tools_tokens: int = 0, model: str | None = None) -> pd.DataFrame:
    """The :func:`compare` frame of some :func:`run_variants` runs. ``frame.attrs["cache"]`` holds
    each variant's cache summary (:meth:`wm_kernel.cachesim.report.CacheReport.summary`), by scenario first
    when the runs come from several scenarios."""
    import pandas as pd

    from wm_kernel.cachesim.models import DEFAULT_MODEL

    if not runs:
        raise ValueError("no runs to tabulate")
    options = (tools_tokens, model)
    many = any(run.scenario for run in runs)
    frames = []
    tokenizer = ""
    summaries: dict[str, Any] = {}
    for run in runs:
        if run.table is not None and run.cache is not None and run.options == options:
            frame, summary = run.table, run.cache
        elif run.session is not None:
            frame, summary = run_table(run, *options)
        else:
            raise ValueError(
                f"variant {run.name!r} was tabulated in its worker with tools_tokens, "
                f"model = {run.options!r}; pass the same options to run_variants and "
                f"tabulate"
            )
        summary = dict(summary)
        tokenizer = summary.pop("tokenizer")
        frame = frame.copy()
        frame.insert(0, "variant", run.name)
        if many:
            frame.insert(0, "scenario", run.scenario)
            summaries.setdefault(run.scenario, {})[run.name] = summary
        else:
            summaries[run.name] = summary
        frames.append(frame)
    result = pd.concat(frames, ignore_index=True)
    int_columns = [
        "segment",
        "sections",
        "chars_total",
        "tokens_total",
        "cache_write_tokens",
        "cache_read_tokens",
        "uncached_tokens",
    ]
    int_columns += [f"chars_{p}" for p in PARTS] + [f"tokens_{p}" for p in PARTS]
    result = result.astype({c: "int64" for c in int_columns} | {"cache_hit": "bool"})
    keys = ["scenario", "variant", "turn"] if many else ["variant", "turn"]
    result = result.set_index(keys)[COMPARE_COLUMNS]
    result.attrs["tokenizer"] = tokenizer
    result.attrs["model"] = model or DEFAULT_MODEL
    result.attrs["cache"] = summaries
    return result


def plot_compare(
    frame: pd.DataFrame, metrics: Sequence[str] = ("chars_total", "tokens_total"), *, title: str | None = None
) -> Figure:
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
    for ax, metric in zip(axes, metrics, strict=True):
        for position, name in enumerate(variants):
            series = frame.xs(name, level="variant")[metric]
            ax.plot(
                series.index,
                series.to_numpy(),
                styles[position % len(styles)],
                label=name,
                linewidth=2.2 - 0.4 * (position % len(styles)),
                marker="o" if len(series) <= 40 else None,
                markersize=3,
            )
        ax.set_ylabel(metric)
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].set_xlabel("turn")
    axes[0].legend(loc="best", fontsize="small")
    if title:
        fig.suptitle(title)
    return fig
