"""Comparing variants: replay scenarios under several, here or on an executor, tabulate every turn,
plot the table."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import os
import pickle
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wm_kernel.core.composer.layout import Layout
from wm_kernel.experiments.progress import Progress, TerminalProgress, TurnCounter, auto_progress
from wm_kernel.experiments.results import (
    PART_KEYS,
    PARTS,
    VariantRun,
    part_chars,
    part_digest,
    run_table,
    tabulate,
)
from wm_kernel.experiments.scenario import Scenario
from wm_kernel.experiments.steps import ScenarioError
from wm_kernel.experiments.sweep import SweepError, SweepFailure, as_executor, on_cluster, run_tasks
from wm_kernel.experiments.variants import Variant, as_variant

if TYPE_CHECKING:
    import pandas as pd

    from wm_kernel.core.prompt import ComposedPrompt
    from wm_kernel.session import Instrument, Session


#: What :func:`compare` and :func:`run_variants` accept as scenarios: one (a Scenario or a file),
#: or many (a sequence of them, or a mapping name -> Scenario or file).
ScenarioSource = Scenario | str | os.PathLike[str]
Scenarios = ScenarioSource | Sequence[ScenarioSource] | Mapping[str, ScenarioSource]
VariantsArg = Mapping[str, "Variant | Layout | Mapping[str, Any] | None"]
ProgressArg = bool | None | Callable[[int], "Progress | None"]


@dataclass(frozen=True)
class _Task:
    """One replay, as sent to a worker: everything in it pickles (no Session, no open file)."""

    scenario_name: str
    scenario: Scenario
    variant: Variant
    tokenizer: bytes  # the pickled Tokenizer: a worker keeps one counter per tokenizer
    factories: Mapping[str, Any] | None
    options: tuple[Any, ...]
    history: bool
    filters: tuple[Any, ...] = ()  # this process's warning filters, applied in the worker too


def run_variants(
    scenarios: Scenarios,
    variants: VariantsArg,
    *,
    executor: Any = None,
    counter: Any = None,
    factories: Mapping[str, Any] | None = None,
    instruments: Iterable[Instrument] = (),
    progress: ProgressArg = None,
    history: bool = False,
    tools_tokens: int = 0,
    model: str | None = None,
) -> list[VariantRun]:
    """Replay each scenario once per variant, scenario by scenario, variants in order.

    Long because: its docstring documents ten options (scenario and variant forms, executors,
    progress); the body only checks them and hands the replays to the local or the pooled runner.

    Parameters
    ----------
    scenarios:
        One Scenario or scenario file, or many: a sequence of them (each named by its file, or
        ``scenario-N``) or a mapping name -> Scenario or file.
    variants:
        name -> :class:`Variant`, a Layout, a dict of Variant fields, or None (the scenario as is).
    executor:
        None to replay here, one after the other; or any ``concurrent.futures.Executor`` (a
        ``ProcessPoolExecutor`` for several cores) or a ``dask.distributed.Client`` (or its
        ``get_executor()``): each (scenario, variant) replay is then one task, and the runs come
        back in the same order with the same tables, but without their Sessions.
    factories:
        Trinket classes (or factories ``f(bus, wm)``) by name, for names that are not built in (or
        to replace a built-in one), as :meth:`Scenario.run` takes them.
    counter:
        The TokenCounter every replay here shares (default a new one), so a text common to several
        variants is counted once. An executor's workers count with the same tokenizer, each
        keeping its own counter.
    instruments:
        Attached to each replay's Session besides its History (collectors); only without an
        executor (a worker's Session cannot call back here).
    progress:
        None shows progress for a sweep (several scenarios, or an executor) where it can be seen:
        a widget under a Jupyter kernel, a bar when stderr is a terminal. True always, False never;
        or a function ``f(total_turns)`` returning the progress to report to (or None).
    history:
        Ship each replay's section-level history back (``run.history``) from the workers.
    tools_tokens, model:
        How each run is tabulated where it runs (see :func:`compare`).

    Raises
    ------
    SweepError
        After every replay has finished, when some failed: one line per failure naming the scenario
        file and the step's line; ``error.completed`` holds the runs that succeeded.
    """
    from wm_kernel.tokens import TokenCounter

    named, many = _scenarios(scenarios)
    chosen = _variants(variants)
    if executor is not None and tuple(instruments):
        raise TypeError(
            "instruments run in this process; with an executor the Sessions live in the "
            "workers (progress= shows how far the sweep is)"
        )
    pool = as_executor(executor)
    shared = counter if counter is not None else TokenCounter()
    blob = _tokenizer_blob(shared, pool)
    slots = _slots(named, chosen, blob, factories, (tools_tokens, model), history, to_workers=pool is not None)
    tasks = [slot for slot in slots if isinstance(slot, _Task)]
    bar = _progress(progress, sum(task.scenario.turns for task in tasks), shown=many or pool is not None)
    ran: list[VariantRun | SweepFailure]
    try:
        if pool is None:
            ran = _replay_here(tasks, shared, instruments, bar)
        else:
            ran = _replay_on(executor, pool, tasks, bar)
    finally:
        if bar is not None:
            bar.close()
    return _gathered(slots, ran, chosen, many)


def _tokenizer_blob(counter: Any, pool: cf.Executor | None) -> bytes:
    """The counter's tokenizer pickled for the workers (empty with no pool); TypeError when it
    cannot be sent."""
    try:
        # only workers need it; a tokenizer that cannot be pickled still counts here
        return pickle.dumps(counter.tokenizer) if pool is not None else b""
    except Exception as exc:
        raise TypeError(
            f"the tokenizer {counter.tokenizer!r} cannot be sent to a worker: {type(exc).__name__}: {exc}"
        ) from None


def _slots(
    named: Sequence[tuple[str, Scenario | SweepFailure]],
    chosen: Sequence[Variant],
    blob: bytes,
    factories: Mapping[str, Any] | None,
    options: tuple[Any, ...],
    history: bool,
    *,
    to_workers: bool,
) -> list[_Task | SweepFailure]:
    """One slot per (scenario, variant), scenario by scenario: a task, or the failure to read the
    file. A task for the workers carries this process's warning filters."""
    slots: list[_Task | SweepFailure] = []
    for name, scenario in named:
        for variant in chosen:
            slots.append(
                dataclasses.replace(scenario, variant=variant.name)
                if isinstance(scenario, SweepFailure)
                else _Task(
                    name,
                    scenario,
                    variant,
                    blob,
                    factories,
                    options,
                    history,
                    tuple(warnings.filters) if to_workers else (),
                )
            )
    return slots


def _replay_here(
    tasks: Sequence[_Task], counter: Any, instruments: Iterable[Instrument], bar: Progress | None
) -> list[VariantRun | SweepFailure]:
    """The replays in this process, one after the other, sharing ``counter``; the progress is told
    turn by turn (a TurnCounter attached to each Session) or replay by replay."""
    ran: list[VariantRun | SweepFailure] = []
    for task in tasks:
        if isinstance(bar, TurnCounter):  # turn by turn, as the Session advances
            ran.append(_replay(task, counter, (*instruments, bar)))
        else:
            ran.append(_replay(task, counter, tuple(instruments)))
            if bar is not None:
                bar.advance(task.scenario.turns)
    return ran


def _replay_on(
    executor: Any, pool: cf.Executor, tasks: Sequence[_Task], bar: Progress | None
) -> list[VariantRun | SweepFailure]:
    """The replays on ``pool``, one task per replay (per scenario on a cluster), in the order of
    ``tasks``: a worker that dies is the failure of its replays; the warnings the workers caught
    are issued here."""
    if isinstance(pool, cf.ProcessPoolExecutor):
        _check_picklable(tasks)

    def done(index: int, result: VariantRun | SweepFailure) -> None:
        if bar is not None:
            bar.advance(tasks[index].scenario.turns)

    def lost(index: int, error: BaseException) -> SweepFailure:
        # the worker died under it (killed, out of memory, a Dask KilledWorker)
        task, kind = tasks[index], type(error).__name__
        message = (
            "the worker process replaying it died"
            if kind in ("BrokenProcessPool", "KilledWorker")
            else f"its worker failed: {_one_line(error)}"
        )
        return SweepFailure(task.scenario_name, task.variant.name, message)

    if on_cluster(executor):
        ran = _run_by_scenario(tasks, pool, done, lost)
    else:
        ran = run_tasks(_replay_in_worker, tasks, pool, done, lost)
    for run in ran:
        if isinstance(run, VariantRun):
            _reissue(run.warnings)
    return ran


def _gathered(
    slots: Sequence[_Task | SweepFailure],
    ran: Sequence[VariantRun | SweepFailure],
    chosen: Sequence[Variant],
    many: bool,
) -> list[VariantRun]:
    """The runs, in slot order, once every replay has finished; a SweepError naming each failure
    (the successful runs in ``completed``) when some failed."""
    replayed = iter(ran)
    results = [next(replayed) if isinstance(slot, _Task) else slot for slot in slots]
    failed = [r for r in results if isinstance(r, SweepFailure)]
    runs = [r for r in results if isinstance(r, VariantRun)]
    if failed:
        if many:
            failed = [_named(f) for f in failed]
        raise SweepError(failed, [v.name for v in chosen], completed=runs)
    return runs


def _named(failure: SweepFailure) -> SweepFailure:
    """In a sweep, a failure's message starts with its scenario (a file's steps already do)."""
    if failure.message.startswith(failure.scenario):
        return failure
    return dataclasses.replace(failure, message=f"{failure.scenario}: {failure.message}")


def _scenarios(scenarios: Scenarios) -> tuple[list[tuple[str, Scenario | SweepFailure]], bool]:
    """(name, Scenario) pairs, and whether several were asked for. Files are read here, so a
    worker gets the parsed scenario (it may not see this file system); in a sweep a file that
    cannot be read is a failure of that scenario, not of the sweep."""
    if isinstance(scenarios, (Scenario, str, os.PathLike)):
        return [("", _load(scenarios))], False
    if isinstance(scenarios, Mapping):
        items = list(scenarios.items())
        for key, _ in items:
            if not isinstance(key, str) or not key:
                raise ValueError(f"scenario names must be non-empty strings, got {key!r}")
    elif isinstance(scenarios, Sequence):
        items = [(_default_name(value, i), value) for i, value in enumerate(scenarios)]
    else:
        raise TypeError(
            f"scenarios must be a Scenario, a file, or a sequence or mapping of them, got {type(scenarios).__name__}"
        )
    if not items:
        raise ValueError("no scenarios to run")
    seen: set[str] = set()
    named: list[tuple[str, Scenario | SweepFailure]] = []
    for name, value in items:
        if name in seen:
            raise ValueError(f"scenario {name!r} is given twice")
        seen.add(name)
        try:
            named.append((name, _load(value)))
        except (ScenarioError, OSError) as exc:
            named.append((name, SweepFailure(name, "", _one_line(exc))))
    return named, True


def _default_name(value: Any, index: int) -> str:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value) if isinstance(os.fspath(value), str) else f"scenario-{index + 1}"
    if isinstance(value, Scenario) and value.source:
        return value.source
    return f"scenario-{index + 1}"


def _load(value: Any) -> Scenario:
    if isinstance(value, Scenario):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Scenario.load(value)
    raise TypeError(f"expected a Scenario or a scenario file, got {type(value).__name__}")


def _variants(variants: VariantsArg) -> list[Variant]:
    if not isinstance(variants, Mapping) or not variants:
        raise ValueError("variants must be a non-empty mapping name -> Layout | Variant | dict")
    chosen = []
    for name, value in variants.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"variant names must be non-empty strings, got {name!r}")
        chosen.append(dataclasses.replace(as_variant(value, name), name=name))
    return chosen


def _one_line(exc: BaseException) -> str:
    """An error as one line: the message of the errors users cause, else its type too."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror.lower()}{where}"
    text = " ".join(str(exc).split())
    if isinstance(exc, (ValueError, TypeError)) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _progress(progress: ProgressArg, total: int, *, shown: bool) -> Progress | None:
    if progress is False or (progress is None and not shown):
        return None
    if progress is None:
        return auto_progress(total)
    if progress is True:
        return auto_progress(total) or TerminalProgress(total, sys.stderr)
    if callable(progress):
        return progress(total)
    raise TypeError(f"progress must be True, False, None or a function f(total), got {type(progress).__name__}")


def _check_picklable(tasks: Sequence[_Task]) -> None:
    """A clear error before anything starts: a ProcessPoolExecutor pickles with the standard
    pickle, which refuses lambdas and functions defined inside functions (Dask's cloudpickle
    takes them)."""
    seen: set[int] = set()
    for task in tasks:
        for what, value in (("variant", task.variant), ("factories", task.factories)):
            if id(value) in seen:
                continue
            seen.add(id(value))
            try:
                pickle.dumps(value)
            except Exception as exc:
                raise TypeError(
                    f"{what} {getattr(value, 'name', '')!r} cannot be sent to a worker "
                    f"process ({type(exc).__name__}: {exc}); use module-level functions "
                    f"and classes, or a Dask client (cloudpickle)"
                ) from None


_WORKER_COUNTERS: dict[bytes, Any] = {}
_WORKER_LOCK = threading.Lock()
#: A worker forgets its cached counts past this many distinct texts (a long-lived Dask worker
#: would otherwise keep every text of every scenario it ever ran).
_WORKER_TEXTS = 200_000


def _worker_counter(blob: bytes) -> Any:
    """This process's TokenCounter for a pickled tokenizer: texts common to the replays a worker
    runs (the variants of one scenario, mostly) are tokenized once."""
    from wm_kernel.tokens import TokenCounter

    with _WORKER_LOCK:
        counter = _WORKER_COUNTERS.get(blob)
        if counter is None:
            if len(_WORKER_COUNTERS) >= 4:
                _WORKER_COUNTERS.pop(next(iter(_WORKER_COUNTERS)))
            counter = _WORKER_COUNTERS[blob] = TokenCounter(pickle.loads(blob))
        elif len(counter) > _WORKER_TEXTS:
            counter.clear()
    return counter


def _replay_in_worker(task: _Task) -> VariantRun | SweepFailure:
    """Run in a worker: the replay, tabulated there; the Session does not travel back, its
    warnings do (filtered by the caller's filters: one that is an error there fails the replay)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        for action, message, category, module, lineno in task.filters:
            # patterns are compiled, or plain strings where a filter was set from a string
            warnings.filterwarnings(
                action,
                getattr(message, "pattern", message) or "",
                category,
                getattr(module, "pattern", module) or "",
                lineno,
                append=True,
            )
        run = _replay(task, _worker_counter(task.tokenizer), ())
    if isinstance(run, VariantRun):
        run.session = None
        run.warnings = tuple((w.category, str(w.message), w.filename, w.lineno) for w in caught)
    return run


def _run_by_scenario(
    tasks: Sequence[_Task],
    pool: cf.Executor,
    done: Callable[[int, VariantRun | SweepFailure], None],
    lost: Callable[[int, BaseException], SweepFailure],
) -> list[VariantRun | SweepFailure]:
    """The tasks on a cluster, one task per scenario running all its variants: the scenario
    crosses to a worker once, and a task is worth the cluster's cost of scheduling it. ``done``
    and ``lost`` are told per replay, as with one task per replay."""
    groups: list[list[int]] = []
    for index, task in enumerate(tasks):  # the tasks come scenario by scenario
        if groups and tasks[groups[-1][0]].scenario_name == task.scenario_name:
            groups[-1].append(index)
        else:
            groups.append([index])

    def group_done(number: int, runs: list[VariantRun | SweepFailure]) -> None:
        for index, run in zip(groups[number], runs, strict=True):
            done(index, run)

    def group_lost(number: int, error: BaseException) -> list[VariantRun | SweepFailure]:
        return [lost(index, error) for index in groups[number]]

    grouped = run_tasks(
        _replay_all_in_worker, [tuple(tasks[i] for i in group) for group in groups], pool, group_done, group_lost
    )
    ran: list[VariantRun | SweepFailure] = [None] * len(tasks)  # type: ignore[list-item]
    for group, runs in zip(groups, grouped, strict=True):
        for index, run in zip(group, runs, strict=True):
            ran[index] = run
    return ran


def _replay_all_in_worker(tasks: tuple[_Task, ...]) -> list[VariantRun | SweepFailure]:
    """Run in a cluster's worker: the replays of one scenario, each sent back as its table (its
    per-turn summary, ``turns``, is left behind: the table's rows hold the same figures)."""
    runs = [_replay_in_worker(task) for task in tasks]
    for run in runs:
        if isinstance(run, VariantRun):
            run.turns = {}
    return runs


#: Where re-issued warnings are remembered, so "default" filters show each one once.
_REISSUED: dict[Any, Any] = {}


def _reissue(caught: Sequence[tuple[type[Warning], str, str, int]]) -> None:
    for category, message, filename, lineno in caught:
        warnings.warn_explicit(message, category, filename, lineno, registry=_REISSUED)


def _replay(task: _Task, counter: Any, instruments: Iterable[Instrument]) -> VariantRun | SweepFailure:
    """One replay and its table, or the failure that stopped it (as a value: a sweep goes on)."""
    from wm_kernel.instruments.history import History

    turns: dict[int, dict[str, Any]] = {}

    def collect(session: Session) -> None:
        session.observe(lambda change: _summarise(change, turns), "composed")

    try:
        session = task.scenario.run(
            task.variant,
            factories=task.factories,
            instruments=(lambda s: History.attach(s, counter=counter), collect, *instruments),
        )
        if not turns:
            raise ValueError("the scenario composed no prompt (it has no compose or turn step): nothing to compare")
        run = VariantRun(task.variant.name, session, turns, scenario=task.scenario_name)
        run.table, run.cache = run_table(run, *task.options)
        run.options = task.options
        run.scenario_turns = task.scenario.turns
        if task.history:
            run.sections = session.history
    except Exception as exc:
        return SweepFailure(task.scenario_name, task.variant.name, _one_line(exc))
    return run


def _summarise(change: Any, turns: dict[int, dict[str, Any]]) -> None:
    """Keep the sizes and digests of a compose as the row of its turn."""
    composed: ComposedPrompt = change["new"]
    row: dict[str, Any] = {"segment": change["owner"].segment_number, "sections": len(composed.sections)}
    for part in PARTS:
        value = composed[PART_KEYS[part]]
        row[f"chars_{part}"] = part_chars(value)
        row[f"digest_{part}"] = part_digest(value)
    turns[composed.turn if composed.turn is not None else len(turns)] = row


def compare(
    scenarios: Scenarios,
    variants: VariantsArg,
    *,
    executor: Any = None,
    counter: Any = None,
    factories: Mapping[str, Any] | None = None,
    tools_tokens: int = 0,
    model: str | None = None,
    progress: ProgressArg = None,
) -> pd.DataFrame:
    """Run each scenario under each variant and tabulate every turn side by side.

    Long because: its docstring lists every column of the frame it returns; the body is a call of
    :func:`run_variants` and :func:`tabulate`.

    Parameters
    ----------
    scenarios:
        One Scenario or scenario file; or many (a sequence, or a mapping name -> Scenario or
        file), which adds a ``scenario`` level in front of the index.
    variants:
        name -> :class:`Variant`, a Layout, a dict of Variant fields, or None (the scenario as is).
    executor:
        None (here, one replay after the other), a ``concurrent.futures.Executor`` or a
        ``dask.distributed.Client``: see :func:`run_variants`. The frame is the same either way.
    counter:
        The TokenCounter to share (default: ``counter_for(model)`` when a model is named, else a new
        one over the default tokenizer).
    tools_tokens, model:
        Passed to :func:`wm_kernel.cachesim.report.cache_report`: each turn is priced with the
        model's profile (default claude-sonnet-4-6) at the replay's recorded times, as
        ``session.cache_simulation(model)`` and ``%cache`` price it.
    progress:
        See :func:`run_variants`.

    Returns
    -------
    DataFrame indexed by (variant, turn), or (scenario, variant, turn) for many scenarios, one row
    per turn (its last compose), with columns ``segment``, ``sections``; ``chars_<part>`` and
    ``chars_total`` (characters of each part as composed: cached and non-cached system content,
    conversation prefix, post history, notification centre); ``tokens_<part>`` and
    ``tokens_total`` (sums of per-section token counts, as the history counts them: separators and
    the HUD frame are not counted); ``cache_status`` (hit / partial / write / miss), ``cache_hit``
    (read anything from the cache), ``cache_write_tokens``, ``cache_read_tokens``,
    ``uncached_tokens`` (the conversation included), ``cache_broke_by``, ``cost`` (from
    :func:`wm_kernel.cachesim.report.cache_report`); and
    ``digest_<part>`` (a short hex digest, '' when empty), so
    ``frame.groupby(level="turn")["digest_cached"].nunique()`` shows where variants differ.
    ``frame.attrs`` holds the counter's label (``tokenizer``), the model and each run's summary.

    Raises
    ------
    SweepError
        When some replays failed, after the others completed; ``error.completed`` is the frame of
        the runs that succeeded.
    """
    options: dict[str, Any] = {"tools_tokens": tools_tokens, "model": model}
    if counter is None and model is not None:
        from wm_kernel.tokens import counter_for

        counter = counter_for(model)
    try:
        runs = run_variants(
            scenarios, variants, executor=executor, counter=counter, factories=factories, progress=progress, **options
        )
    except SweepError as exc:
        exc.completed = tabulate(exc.completed, **options) if exc.completed else None
        raise
    return tabulate(runs, **options)


__all__ = ["compare", "run_variants"]
