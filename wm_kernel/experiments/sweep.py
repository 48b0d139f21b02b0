"""Sweeps: run independent replays on an executor, collect their results in submission order.

A sweep replays many scenarios under many variants; each (scenario, variant) replay is one task,
independent of the others, so any ``concurrent.futures.Executor`` can run them: a
``ProcessPoolExecutor`` on one machine, a ``ThreadPoolExecutor`` (no parallel speed-up: the replay
is pure Python and holds the GIL, but nothing is pickled), or a Dask cluster through
``dask.distributed.Client`` (or its ``get_executor()``). Results come back in submission order
whatever order the workers finish in, so a sweep's table is the serial run's table.

A task that fails does not stop the others: its failure is kept (:class:`SweepFailure`, naming the
scenario file and the step's line) and, once every task has finished, :class:`SweepError` reports
them all and carries what did complete.

Work sent to a worker is a picklable task (a parsed Scenario, the variant, the tokenizer), never a
live Session; results come back as tables. Dask is the optional extra ``wm-kernel[scale]``; this
module imports it only when asked to connect to a cluster.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TypeVar

from wm_kernel.experiments.steps import ScenarioError

T = TypeVar("T")
R = TypeVar("R")

SCALE_HINT = "pip install 'wm-kernel[scale]'"


@dataclass(frozen=True)
class SweepFailure:
    """One replay that failed: which scenario, under which variant, and why (one line, starting
    with the scenario file and the step's line when the failure is a step's)."""

    scenario: str
    variant: str
    message: str


class SweepError(ScenarioError):
    """Some replays of a sweep failed; the others completed.

    Attributes
    ----------
    failures:
        One :class:`SweepFailure` per failed (scenario, variant), in submission order.
    completed:
        What the successful replays returned, in submission order (for :func:`compare`, the table
        of the scenarios that completed; for :func:`run_variants`, their runs).
    """

    def __init__(self, failures: Sequence[SweepFailure], variants: Sequence[str], completed: Any = None) -> None:
        self.failures = list(failures)
        self.completed = completed
        self.lines = describe_failures(self.failures, variants)
        count = len({f.scenario for f in self.failures})
        head = "" if len(self.lines) == 1 else f"{count} scenario(s) failed: "
        super().__init__(head + "; ".join(self.lines))


def describe_failures(failures: Sequence[SweepFailure], variants: Sequence[str]) -> list[str]:
    """One line per distinct failure: a failure shared by every variant of a scenario (a bad step)
    is told once; one that only some variants hit names them, unless its message already does."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for failure in failures:
        grouped.setdefault((failure.scenario, failure.message), []).append(failure.variant)
    lines = []
    for (_, message), names in grouped.items():
        if len(names) < len(variants) and not (len(names) == 1 and f"variant {names[0]!r}" in message):
            message += f" (variant{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))})"
        lines.append(message)
    return lines


def as_executor(executor: Any) -> cf.Executor | None:
    """A ``concurrent.futures.Executor`` for what the caller gave: None (run serially), an
    Executor, or a Dask ``Client`` (its ``get_executor()``)."""
    if executor is None or isinstance(executor, cf.Executor):
        return executor
    # a dask.distributed Client, recognised without importing dask (an optional extra)
    if type(executor).__module__.startswith("distributed") and hasattr(executor, "get_executor"):
        # pure=False: every replay is a task of its own; hashing each task's arguments to find
        # duplicates (Dask's default) walks every step of the scenario, for nothing
        found: cf.Executor = executor.get_executor(pure=False)
        return found
    raise TypeError(
        f"executor must be a concurrent.futures.Executor or a dask.distributed Client, got {type(executor).__name__}"
    )


def on_cluster(executor: Any) -> bool:
    """Whether ``executor`` is a Dask ``Client`` or one of its executors (``get_executor()``),
    recognised without importing dask: there a task costs more to schedule and ship than in a
    process pool, so a sweep sends one task per scenario."""
    return type(executor).__module__.startswith("distributed")


def run_tasks(
    function: Callable[[T], R],
    tasks: Sequence[T],
    executor: cf.Executor,
    on_done: Callable[[int, R], None] | None = None,
    on_error: Callable[[int, BaseException], R] | None = None,
) -> list[R]:
    """``[function(task) for task in tasks]`` on ``executor``, in the order of ``tasks``.

    ``on_done(index, result)`` runs here, in the caller's thread, as each result arrives (in
    completion order): progress bars update without any state shared with the workers. A
    KeyboardInterrupt cancels the tasks not yet started.

    A task whose worker fails it (a Dask ``KilledWorker``, any error the executor raises for it)
    gets ``on_error(index, error)`` as its result, and the others go on; without ``on_error`` the
    error is raised once every task has ended. A process pool breaks as a whole when one worker
    dies (every task not finished fails with BrokenProcessPool), so those tasks are run again one
    at a time, each in a process of its own: only a task that kills its process again fails,
    and what finished before is kept.

    Long because: its docstring states the failure rules, and the body follows them: results in
    order, errors through ``on_error``, a broken process pool's tasks run again one at a time.
    """
    futures = {executor.submit(function, task): index for index, task in enumerate(tasks)}
    results: list[Any] = [None] * len(tasks)
    broken: list[int] = []
    first_error: BaseException | None = None

    def failed(index: int, error: BaseException) -> None:
        nonlocal first_error
        if on_error is None:
            first_error = first_error or error
        else:
            finish(index, on_error(index, error))

    def finish(index: int, result: Any) -> None:
        results[index] = result
        if on_done is not None:
            on_done(index, result)

    try:
        for future in cf.as_completed(futures):
            index = futures[future]
            try:
                result = future.result()
            except BrokenProcessPool:
                broken.append(index)
                continue
            except Exception as exc:  # the task's own errors come back as results, not here
                failed(index, exc)
                continue
            finish(index, result)
        for index in sorted(broken):
            with cf.ProcessPoolExecutor(max_workers=1) as alone:
                try:
                    result = alone.submit(function, tasks[index]).result()
                except Exception as exc:
                    failed(index, exc)
                    continue
            finish(index, result)
    except BaseException:
        for future in futures:
            future.cancel()
        raise
    if first_error is not None:
        raise first_error
    return results


def dask_client(address: str | None = None, *, workers: int = 2) -> Any:
    """A Dask ``Client``: connected to the scheduler at ``address``, or, with None, to a new
    local cluster of ``workers`` processes (one thread each: the replay holds the GIL).

    ImportError in one line when Dask (the ``scale`` extra) is not installed.
    """
    try:
        # typed Any: dask.distributed's constructors carry no annotations
        distributed: Any = importlib.import_module("distributed")
    except ImportError:
        raise ImportError(
            f"a Dask cluster needs the optional 'scale' extra ({SCALE_HINT}); dask.distributed is not installed"
        ) from None
    Client, LocalCluster = distributed.Client, distributed.LocalCluster
    if address is not None:
        return Client(address)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster)


def close_dask_client(client: Any) -> None:
    """Close a client made by :func:`dask_client`, and the local cluster it started, if any."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()
