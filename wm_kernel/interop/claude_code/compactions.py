"""The compactions an imported Claude Code session recorded, and when each should have run.

``ImportedSession.compactions()`` and ``ImportedSession.compaction_plan()`` (docs/planner.md,
sections 2 and 3): one row per ``compact_boundary`` line of the log that a request follows.

- The *main chain* is the compacted conversation: the session file's own requests (no subagent,
  sidechain or compaction run). The row's ``request`` is its request marked ``after-compaction``,
  which carries the boundary (``LoggedRequest.compaction``: ``trigger``, ``preTokens``).
- The *compaction call* is the request of the ``agent-acompact-*`` subagent file (marked
  ``compaction``) that wrote the summary: the last such run of the session sent before the
  ``request``, after the previous boundary's and before the boundary line itself.
- A request's *total input* is its plain, read and written tokens; models are compared by family
  (a dated snapshot is its family); every dollar is the model profile's one cost rule
  (``ModelProfile.bill``), the input side only, at the request's own model; an unpriced model's
  dollars are NaN.

The plan prices, for a compaction that ran on a cold cache, the same compaction run right after
the main chain's previous request, within its cache's TTL and on that request's model (only the
model that built the conversation holds it in its cache); and, for every compaction whose call
wrote to the cache, the call as recorded with nothing written (its written tokens at the plain
input price: the next request reads only the system prompt and tools, never what the call
wrote). It keeps the cheapest of those and what was recorded ("as recorded" wins ties): a plan
never costs more than the log.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from wm_kernel.cachesim.models import Priced, family_name
from wm_kernel.interop.formats import LoggedRequest, parse_time

if TYPE_CHECKING:
    import pandas as pd

    from wm_kernel.dialects.usage import Usage

#: The columns of ``compactions()``, each with the dtype it has when no value is missing (a
#: boundary without its compaction call has None in ``call``, ``warm`` and ``model_switch``)
COMPACTION_COLUMNS: Mapping[str, str] = {
    "request": "int64",
    "call": "int64",
    "trigger": "object",
    "pre_tokens": "int64",
    "warm": "bool",
    "idle_s": "float64",
    "model_switch": "bool",
    "read": "float64",
    "write_5m": "float64",
    "write_1h": "float64",
    "input": "float64",
    "cost_usd": "float64",
    "after_read": "int64",
}
PLAN_COLUMNS = (
    "request",
    "call",
    "trigger",
    "warm",
    "idle_s",
    "model_switch",
    "recommended",
    "recorded_usd",
    "planned_usd",
    "saving_usd",
    "planned_at",
)
#: A compaction call is warm when it read at least this share of the previous same-model request.
WARM_SHARE = 0.95
_COUNTS = ("read", "write_5m", "write_1h", "input")
_OTHER_RUNS = frozenset({"subagent", "sidechain", "compaction"})
AS_RECORDED = "as recorded"
WITHOUT_WRITE = "as recorded, without a cache write"
CALL_MISSING = "compaction call not in the log"


class CompactedLog(Protocol):
    """What the compaction table reads of an imported log (an ImportedSession is one)."""

    @property
    def requests(self) -> Sequence[LoggedRequest]: ...

    def billed_usage(self) -> list[Usage | None]: ...

    def pricing(self, model: Any = None) -> list[Priced]: ...


def _family(model: str | None) -> str | None:
    return (family_name(model) or model) if model else None


def _main(request: LoggedRequest, conversation: str | None) -> bool:
    return request.conversation == conversation and not (_OTHER_RUNS & set(request.marks))


def _usd(pricing: Priced, usage: Usage) -> float:
    """The input side of ``usage`` at ``pricing``'s prices (NaN when unpriced)."""
    writes = {"5m": usage.cache_write_5m_tokens, "1h": usage.cache_write_1h_tokens}
    try:
        cost = pricing.profile.bill(usage.input_tokens, usage.cache_read_tokens, writes)
    except ValueError:  # a TTL the model has no price for
        return math.nan
    return math.nan if cost.prompt_usd is None else cost.prompt_usd


class _Reading:
    """The log's requests, usage and pricing, read once for every row."""

    def __init__(self, log: CompactedLog) -> None:
        self.requests = list(log.requests)
        self.billed = log.billed_usage()
        self.pricing = log.pricing()

    def boundaries(self) -> list[tuple[int, Mapping[str, Any]]]:
        found = [(i, r.compaction) for i, r in enumerate(self.requests) if _main(r, r.conversation)]
        return [(i, boundary) for i, boundary in found if boundary is not None]

    def call_for(self, request: int, after: int, boundary: Mapping[str, Any], used: set[int]) -> int | None:
        """The compaction run of ``request``'s session sent between ``after`` and ``request`` (and
        not after the boundary line), the last one; None when the log has none."""
        conversation = self.requests[request].conversation
        try:
            at: datetime | None = parse_time(boundary.get("timestamp"), "timestamp")
        except ValueError:
            at = None
        for index in range(request - 1, after, -1):
            found = self.requests[index]
            if "compaction" not in found.marks or index in used:
                continue
            if not (found.conversation or "").startswith(f"{conversation}/"):
                continue
            if at is not None and found.sent_at is not None and found.sent_at > at:
                continue
            return index
        return None

    def previous(self, call: int, conversation: str | None, model: str | None = None) -> int | None:
        """The last main-chain request sent before ``call`` (on ``model``'s family when given)."""
        for index in range(call - 1, -1, -1):
            found = self.requests[index]
            if _main(found, conversation) and (model is None or _family(found.model) == model):
                return index
        return None

    def ttl_s(self, before: int, conversation: str | None, model: str | None) -> float:
        """The TTL of the main chain's latest cache write on ``model`` before ``before`` (seconds)."""
        for index in range(before - 1, -1, -1):
            found, usage = self.requests[index], self.billed[index]
            if _main(found, conversation) and _family(found.model) == model and usage and usage.cache_write_tokens:
                return 3600.0 if usage.cache_write_1h_tokens else 300.0
        return 300.0


def _row(reading: _Reading, request: int, boundary: Mapping[str, Any], call: int | None) -> dict[str, Any]:
    after = reading.billed[request]
    row: dict[str, Any] = {
        "request": request,
        "call": call,
        "trigger": boundary.get("trigger"),
        "pre_tokens": boundary.get("preTokens"),
        "warm": None,
        "idle_s": math.nan,
        "model_switch": None,
        "read": math.nan,
        "write_5m": math.nan,
        "write_1h": math.nan,
        "input": math.nan,
        "cost_usd": math.nan,
        "after_read": after.cache_read_tokens if after is not None else 0,
    }
    if call is None:
        return row
    conversation = reading.requests[request].conversation
    made, usage = reading.requests[call], reading.billed[call]
    model = _family(made.model)
    same = reading.previous(call, conversation, model)
    same_usage = reading.billed[same] if same is not None else None
    read = usage.cache_read_tokens if usage is not None else 0
    row["warm"] = same_usage is not None and read >= WARM_SHARE * same_usage.prompt_tokens
    last = reading.previous(call, conversation)
    row["model_switch"] = last is not None and _family(reading.requests[last].model) != model
    sent, before = made.sent_at, reading.requests[last].sent_at if last is not None else None
    if sent is not None and before is not None:
        row["idle_s"] = (sent - before).total_seconds()
    if usage is not None:
        row.update(
            read=usage.cache_read_tokens,
            write_5m=usage.cache_write_5m_tokens,
            write_1h=usage.cache_write_1h_tokens,
            input=usage.input_tokens,
            cost_usd=_usd(reading.pricing[call], usage),
        )
    return row


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A frame of ``rows`` whose columns have ``COMPACTION_COLUMNS``' dtypes where no value is
    missing: None stays None in an int or bool column (an object column), NaN in a float one;
    token counts are ints once every row has them."""
    import pandas as pd

    columns: dict[str, pd.Series[Any]] = {}
    for name, dtype in COMPACTION_COLUMNS.items():
        values = [row[name] for row in rows]
        missing = any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values)
        if name in _COUNTS and not missing:
            dtype = "int64"
        elif missing and dtype in ("int64", "bool"):
            dtype = "object"
            values = [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values]
        columns[name] = pd.Series(values, dtype=dtype)
    return pd.DataFrame(columns, columns=list(COMPACTION_COLUMNS))


def compaction_table(log: CompactedLog) -> pd.DataFrame:
    """``ImportedSession.compactions()``: one row per recorded compaction (the module docstring,
    docs/planner.md section 2), ordered by ``request``; empty, with the same columns, when the
    log has none."""
    reading = _Reading(log)
    rows: list[dict[str, Any]] = []
    used: set[int] = set()
    after = -1
    for request, boundary in reading.boundaries():
        call = reading.call_for(request, after, boundary, used)
        if call is not None:
            used.add(call)
        rows.append(_row(reading, request, boundary, call))
        after = request
    return _frame(rows)


def _before_expiry(reading: _Reading, row: Mapping[Any, Any]) -> tuple[float, str, datetime | None] | None:
    """The mandatory candidate of a cold row: the same compaction run right after the main
    chain's previous request, within its cache's TTL, on that request's model (its price, its
    text, that request's send time); None without one."""
    request, call = int(row["request"]), int(row["call"])
    conversation = reading.requests[request].conversation
    last = reading.previous(call, conversation)
    usage, last_usage = reading.billed[call], reading.billed[last] if last is not None else None
    if last is None or usage is None or last_usage is None:
        return None
    made, before = reading.requests[call], reading.requests[last]
    model = _family(before.model)
    ttl_s = reading.ttl_s(last + 1, conversation, model)
    total, plain, held = usage.prompt_tokens, usage.input_tokens, last_usage.prompt_tokens
    ttl = "1h" if ttl_s == 3600.0 else "5m"
    profile = reading.pricing[last].profile
    try:
        cost = profile.bill(plain, min(total - plain, held), {ttl: max(0, total - plain - held)}).prompt_usd
    except ValueError:
        return None
    if cost is None:
        return None
    when = before.sent_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if before.sent_at else "its send"
    named = f", on {model}" if model != _family(made.model) else ""
    return cost, f"compact before the cache expires (within {ttl_s:.0f} s of {when}{named})", before.sent_at


def _without_write(reading: _Reading, row: Mapping[Any, Any]) -> tuple[float, str] | None:
    """The compaction call as recorded, but with nothing written to the cache: its written tokens
    at the plain input price (the next request reads only the system prompt and tools, never what
    the call wrote); None when it wrote nothing or is unpriced."""
    call = int(row["call"])
    usage = reading.billed[call]
    if usage is None or not usage.cache_write_tokens:
        return None
    profile = reading.pricing[call].profile
    try:
        cost = profile.bill(usage.input_tokens + usage.cache_write_tokens, usage.cache_read_tokens).prompt_usd
    except ValueError:
        return None
    if cost is None:
        return None
    written = usage.cache_write_tokens
    return cost, (
        f"{WITHOUT_WRITE} (its {written:,} written tokens as plain input: the next request reads only "
        "the system prompt and tools)"
    )


def compaction_plan(log: CompactedLog) -> pd.DataFrame:
    """``ImportedSession.compaction_plan()``: per row of :func:`compaction_table`, the cheapest
    of the priced candidates (docs/planner.md section 3) and what it saves; the total saving in
    ``attrs["total_saving_usd"]``."""
    import pandas as pd

    reading = _Reading(log)
    table = compaction_table(log)
    recommended, recorded_usd, planned_usd, saving_usd = [], [], [], []
    planned_at: list[datetime | None] = []
    for row in table.to_dict("records"):
        recorded = float(row["cost_usd"])
        at: datetime | None = None
        if row["call"] is None:
            text, recorded, best = CALL_MISSING, math.nan, math.nan
        else:
            best, text = recorded, AS_RECORDED
            at = reading.requests[int(row["call"])].sent_at
            candidate = None if row["warm"] else _before_expiry(reading, row)
            if candidate is not None and not math.isnan(recorded) and candidate[0] < recorded:
                best, text, at = candidate
            unwritten = _without_write(reading, row)
            if unwritten is not None and not math.isnan(recorded) and unwritten[0] < best:
                best, text = unwritten
                at = reading.requests[int(row["call"])].sent_at
        recommended.append(text)
        recorded_usd.append(recorded)
        planned_usd.append(best)
        saving_usd.append(0.0 if text in (AS_RECORDED, CALL_MISSING) else recorded - best)
        planned_at.append(at)
    frame = table[list(PLAN_COLUMNS[:6])].copy()
    frame["recommended"] = pd.Series(recommended, dtype=object)
    frame["recorded_usd"] = pd.Series(recorded_usd, dtype="float64")
    frame["planned_usd"] = pd.Series(planned_usd, dtype="float64")
    frame["saving_usd"] = pd.Series(saving_usd, dtype="float64")
    frame["planned_at"] = pd.Series(planned_at, dtype=object)
    frame.attrs["total_saving_usd"] = float(frame["saving_usd"].sum())
    return frame
