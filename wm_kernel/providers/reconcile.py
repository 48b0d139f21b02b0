"""Reconcile a cache simulation with what a provider billed, and say why each turn differs.

``reconcile(session_or_simulation, usage)`` aligns billed usage with simulated requests (in order, or
by request id) and returns a :class:`~wm_kernel.providers.reconciliation.Reconciliation`: per turn
the predicted and billed input, cache-read and cache-write tokens, both priced by
:func:`wm_kernel.providers.pricing.price` (the prompt side: a simulation predicts no output, so
billed output dollars are shown apart), the residual (billed minus predicted) and a cause, one of
``CAUSES`` (:mod:`wm_kernel.providers.causes` says what each means).

An imported log (``wm_kernel.interop.import_log``; anything with the
:class:`~wm_kernel.providers.usage_log.UsageLog` methods) is reconciled directly: ``reconcile(log)``
plays its requests through the cache simulator at the log's send times and compares each turn that
recorded usage with what it recorded; ``reconcile(log, usage)`` compares with usage kept apart (a
billing export: one record per request in order, or ``by="request_id"`` with the log's request ids).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.requests import session_requests, view_counter
from wm_kernel.cachesim.simulation import Simulation, simulate
from wm_kernel.dialects.usage import Usage, parse_usage
from wm_kernel.instruments.history import History
from wm_kernel.providers.compared_usage import simulated_usage, usage_list
from wm_kernel.providers.reconciliation import Reconciliation, reconciliation
from wm_kernel.providers.request_context import contexts
from wm_kernel.providers.usage_log import UsageLog, reconcile_log
from wm_kernel.session import Session


def _session_model(source: Session, exchanges: Mapping[int, Any]) -> str:
    known = next((e.model for e in exchanges.values() if getattr(e, "model", None)), None)
    model = source.model or known
    if model is None:
        raise ValueError("pass model= (the session names no model and sent nothing to take it from)")
    return str(model)


def reconcile(
    source: Session | Simulation | UsageLog,
    usage: Any = None,
    *,
    model: str | ModelProfile | None = None,
    by: str = "order",
    request_ids: Sequence[str | None] | None = None,
    **options: Any,
) -> Reconciliation:
    """Reconcile ``source`` (a Session, simulated with ``model`` (default: the session's own, else
    the model it sent with) and ``options`` as ``simulate_session`` takes them, with its recorded
    conversation and, when it sent anything, only the turns it sent; an imported log, see
    :class:`UsageLog`, simulated on ``model`` or each request on its own, ``gap=`` / ``times=``
    where it has no send times; or a Simulation) with ``usage``
    (Usage objects, usage/response records, or a JSON Lines path; None: the session's recorded
    exchanges, or the usage the log recorded). ``by``: ``"order"`` or ``"request_id"`` (ids of the
    session's exchanges or of the log's requests, or ``request_ids`` given per simulated request)."""
    if by not in ("order", "request_id"):
        raise ValueError(f"by must be 'order' or 'request_id', got {by!r}")
    if not isinstance(source, (Session, Simulation)) and isinstance(source, UsageLog):
        return reconcile_log(source, usage, model=model, by=by, request_ids=request_ids, **options)
    if isinstance(source, Session):
        run = _simulate_session(source, usage, model, options)
    elif isinstance(source, Simulation):
        if model is not None or options:
            raise ValueError("model and simulation options apply to a Session; this Simulation is already run")
        run = _SimulatedRun(source, usage, {})
    else:
        raise TypeError(f"reconcile needs a Session, an imported log or a Simulation, got {type(source).__name__}")
    if run.usage is None:
        raise ValueError("usage is required with a Simulation")
    simulation = run.simulation
    billed = usage_list(run.usage)
    predicted = simulated_usage(simulation)
    turns = simulation.turns["turn"].tolist() if "turn" in simulation.turns else list(range(len(predicted)))
    if by == "order":
        aligned = _aligned_by_order(predicted, billed)
    else:
        ids = (
            list(request_ids)
            if request_ids is not None
            else [getattr(run.exchanges_by_turn.get(t), "request_id", None) for t in turns]
        )
        aligned = _aligned_by_request_id(predicted, billed, ids)
    row_contexts = contexts(simulation, list(range(len(predicted))), aligned)
    return reconciliation(simulation, turns, aligned, row_contexts)


@dataclasses.dataclass(frozen=True)
class _SimulatedRun:
    """A simulation to reconcile, the usage to reconcile it with, and the exchanges it came from."""

    simulation: Simulation
    usage: Any  # as :func:`reconcile` takes it; None when nothing gave any
    exchanges_by_turn: Mapping[int, Any]


def _simulate_session(
    source: Session, usage: Any, model: str | ModelProfile | None, options: dict[str, Any]
) -> _SimulatedRun:
    """Simulate a session's turns (only those it sent, when it sent any) with its recorded
    conversation; the usage defaults to what its exchanges recorded. ``options`` gains the history."""
    history = History.of(source)
    exchanges_by_turn = {e.turn: e for e in history.exchanges()}
    if usage is None:
        usage = [
            parse_usage(e.usage, where=f"turn {e.turn}", request_id=e.request_id, prefix=e.prefix)
            for e in exchanges_by_turn.values()
            if e.usage is not None
        ]
    named = model is not None  # a model named counts with its own counter
    if model is None:
        model = _session_model(source, exchanges_by_turn)
    if exchanges_by_turn and "history" not in options:
        # the real conversation; a turn that sent nothing holds an empty user message (no
        # tokens), since each recorded turn needs one, and is left out below
        options["history"] = [
            m
            for turn in history.turns
            for m in (
                exchanges_by_turn[turn].messages() if turn in exchanges_by_turn else [{"role": "user", "content": ""}]
            )
        ]
    if options.get("counter") is None:  # as every view of the session counts for that model
        options["counter"] = view_counter(source, model, named=named)
    turns_sent, requests = session_requests(source, **options)
    if exchanges_by_turn:  # only the turns that were sent reach a provider's cache
        kept = [(t, r) for t, r in zip(turns_sent, requests, strict=True) if t in exchanges_by_turn]
        turns_sent, requests = [t for t, _ in kept], [r for _, r in kept]
    simulation = simulate(requests, model, counter=options["counter"])
    simulation.turns.insert(0, "turn", turns_sent)
    return _SimulatedRun(simulation, usage, exchanges_by_turn)


def _aligned_by_order(predicted: Sequence[Usage], billed: Sequence[Usage]) -> list[tuple[Usage, Usage]]:
    """Each simulated request with the usage record in its place."""
    if len(billed) != len(predicted):
        raise ValueError(
            f"{len(predicted)} simulated requests but {len(billed)} usage records; align by "
            f"request id, or give one record per request"
        )
    return list(zip(predicted, billed, strict=True))


def _aligned_by_request_id(
    predicted: Sequence[Usage], billed: Sequence[Usage], ids: Sequence[str | None]
) -> list[tuple[Usage, Usage]]:
    """Each simulated request with the usage record of its request id."""
    if len(ids) != len(predicted):
        raise ValueError(f"request_ids has {len(ids)} entries for {len(predicted)} simulated requests")
    by_id = {u.request_id: u for u in billed if u.request_id}
    missing = [i for i in ids if not isinstance(i, str) or i not in by_id]
    if missing:
        raise ValueError(f"no usage record has request id {missing[0]!r}")
    return [(p, by_id[str(i)]) for p, i in zip(predicted, ids, strict=True)]
