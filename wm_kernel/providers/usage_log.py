"""An imported log as a reconciliation reads it, and its reconciliation.

:class:`UsageLog` is what :func:`wm_kernel.providers.reconcile.reconcile` asks of a log someone
else sent (``wm_kernel.interop.ImportedSession`` is one), so providers does not import interop.
:func:`reconcile_log` plays every logged request through the cache simulator at the log's send
times and compares each turn with billed usage (the usage the log recorded, or usage kept apart: one
record per request in order, or by the log's request ids), each with the prefix of the request sent
just before it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import Simulation
from wm_kernel.dialects.usage import Usage
from wm_kernel.providers.compared_usage import simulated_usage, usage_list
from wm_kernel.providers.reconciliation import Reconciliation, reconciliation
from wm_kernel.providers.request_context import contexts

__all__ = ["UsageLog", "reconcile_log"]


@runtime_checkable
class UsageLog(Protocol):
    """A log of requests someone else sent, with what they were billed
    (``wm_kernel.interop.ImportedSession`` is one): its cache simulation at the log's send times,
    the usage it recorded per request (None where none), the request ids and the digests of each
    request's cacheable prefix (``request_prefix``; empty where the log has no request body).
    A log may also give ``request_context()``: per request its ``conversation``, whether it is a
    ``subagent``'s, its ``model``, the digest of its ``first_message`` (what tells a
    compaction) and ``rewritten`` (the tokens read before the agent changed text its log does not
    hold); it takes the ``times=`` / ``gap=`` the simulation was given."""

    @property
    def request_ids(self) -> list[str | None]: ...

    def cache_simulation(self, model: str | None = None) -> Simulation: ...

    def billed_usage(self) -> list[Usage | None]: ...

    def request_prefixes(self) -> list[dict[str, str]]: ...


def reconcile_log(
    log: UsageLog,
    usage: Any,
    *,
    model: str | ModelProfile | None,
    by: str,
    request_ids: Sequence[str | None] | None,
    **options: Any,
) -> Reconciliation:
    """:func:`~wm_kernel.providers.reconcile.reconcile` of an imported log (module docstring):
    every request is simulated (the cache remembers them all), the turns with billed usage are
    compared, each with the prefix of the request sent just before it."""
    name = model.name if isinstance(model, ModelProfile) else model
    simulation = log.cache_simulation(name, **options)
    prefixes = log.request_prefixes()
    predicted = simulated_usage(simulation)
    if usage is None:
        if request_ids is not None or by != "order":
            raise ValueError(
                "by= and request_ids= align usage given apart; the log's own usage is aligned with its requests already"
            )
        recorded = log.billed_usage()
        kept = [turn for turn, u in enumerate(recorded) if u is not None]
        if not kept:
            raise ValueError("the log records no usage; pass usage= (one record per request, or by request id)")
        billed = {turn: recorded[turn] for turn in kept}
    else:
        records = usage_list(usage)
        if by == "order":
            if len(records) != len(predicted):
                raise ValueError(
                    f"the log has {len(predicted)} requests but there are {len(records)} usage "
                    f"records; align by request id, or give one record per request"
                )
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
    describe = getattr(log, "request_context", None)
    timing = {k: options[k] for k in ("times", "gap") if k in options}
    context = describe(**timing) if callable(describe) else None
    row_contexts = contexts(simulation, kept, aligned, previous, context)
    return reconciliation(simulation, kept, aligned, row_contexts)
