"""ForageTrinket: background forage results by task id, in the notification centre (MIRA HEAD).

MIRA's forage tool starts a background agent and reports on it through update contexts, all fed
with ``wm.publish_trinket_update("ForageTrinket", context)``:

==========  ==================================================================================
status      context (as MIRA's producers send it)
==========  ==================================================================================
pending     ``task_id, query`` (the tool's dispatch)
in_progress ``task_id, query, iteration, max_iterations, summary`` (one per agent iteration; may
            arrive late or out of order)
success     ``task_id, query, iterations, result``
timeout     ``task_id, query`` and ``elapsed`` (seconds), ``iteration``, or ``iterations, error``
failed      ``task_id, query, error, error_type`` (a thread crash sends no ``query``)
dismissed   ``task_id``: the result is deleted; a later report for the id goes last
==========  ==================================================================================

A context without ``task_id`` (``{}``, a lifecycle refresh) only re-renders; any other status
stores nothing. Results keep the order of their first report; a later report replaces the earlier
one in place. An ``in_progress`` report is ignored once the task holds a success, timeout or
failure; otherwise its summary is stacked under the ones before it (while the task stays in
progress). ``pending`` and ``success`` stay until dismissed or the segment collapses; ``timeout`` and
``failed`` show while ``current_turn <= arrival + 5`` and are gone at the first turn past that.

The section ``forage_results``::

    <forage_results>
    <result type="in_progress" task_id="t" query="q" iteration="2/5">
    [1] first summary
    [2] second summary
    </result>
    <result type="pending" task_id="t" query="q">
    Foraging in progress...
    </result>
    <result type="success" task_id="t" query="q" iterations="3">
    the result
    </result>
    <result type="timeout" task_id="t" query="q" turns_remaining="5">
    Forage timed out after 120s at iteration 4.
    </result>
    <result type="failed" task_id="t" query="q" turns_remaining="5">
    Forage failed: Error — the error
    </result>
    </forage_results>

Escaping (docs/deviations.md, ``forage_escape``): MIRA writes every value raw; here attribute values
go through :func:`~wm_kernel.utils.markup.escape_attr` and summaries, results and errors through
:func:`~wm_kernel.utils.markup.escape_text`. Text without markup characters is byte for byte MIRA's.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(trinkets=[ForageTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> s.working_memory.publish_trinket_update("ForageTrinket", {"task_id": "f1", "status": "pending", "query": "tides"})
>>> s.working_memory.publish_trinket_update("ForageTrinket", {"task_id": "f1", "status": "in_progress",
...     "query": "tides", "iteration": 1, "max_iterations": 4, "summary": "Read the almanac."})
>>> print(s.trinket("ForageTrinket").content)
<forage_results>
<result type="in_progress" task_id="f1" query="tides" iteration="1/4">
[1] Read the almanac.
</result>
</forage_results>
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from traitlets import Instance

from trinkets.base import StatefulTrinket, arg, command, feed, non_negative_int
from wm_kernel.core.events import UpdateTrinketEvent
from wm_kernel.utils.frozenmap import FrozenMap
from wm_kernel.utils.markup import escape_attr, escape_text

#: Turns a timeout or failure shows after the turn it arrived in (MIRA's ERROR_TTL_TURNS).
ERROR_TTL_TURNS = 5
#: The statuses that store a result; ``dismissed`` deletes one.
STATUSES: tuple[str, ...] = ("pending", "in_progress", "success", "timeout", "failed")
_FINAL = frozenset({"success", "timeout", "failed"})


@dataclass(frozen=True, slots=True)
class ForageResult:
    """One task's latest report: its status, the context it came with (a copy), the turn through
    which a timeout or failure shows (None: until dismissed), and the stacked progress summaries."""

    task_id: str
    status: str
    data: Mapping[str, Any]
    until: int | None = None
    summaries: tuple[tuple[Any, Any], ...] = field(default=())

    def record(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "status": self.status,
            "data": dict(self.data),
            "until": self.until,
            "summaries": [list(s) for s in self.summaries],
        }


def _from_record(item: object, where: str) -> ForageResult:
    if not isinstance(item, dict) or set(item) != {"task_id", "status", "data", "until", "summaries"}:
        raise ValueError(f"{where} must be a dict with task_id, status, data, until, summaries")
    task_id, status, data, until, summaries = (item[k] for k in ("task_id", "status", "data", "until", "summaries"))
    if not isinstance(task_id, str) or status not in STATUSES or not isinstance(data, dict):
        raise ValueError(f"{where}: bad task_id, status or data")
    if until is not None and (isinstance(until, bool) or not isinstance(until, int)):
        raise ValueError(f"{where}.until must be an int or None")
    if not isinstance(summaries, list) or not all(isinstance(s, list) and len(s) == 2 for s in summaries):
        raise ValueError(f"{where}.summaries must be a list of [iteration, summary] pairs")
    return ForageResult(task_id, status, dict(data), until, tuple((s[0], s[1]) for s in summaries))


class ForageTrinket(StatefulTrinket):
    """Background forage results by task id, published as ``forage_results`` (not cached).

    See the module docstring for the contexts, the lifetime rules and the markup.
    """

    variable_name = "forage_results"
    cache_policy = False
    default_priority = 60  # token budgets: as the other tool results (docs/budgets.md)
    reuse_content = True  # its inputs: traits, feeds, lifecycle, own store writes
    state_prefix = "forage"
    state_items = "results"
    state_item_id = "task_id"
    ERROR_TTL_TURNS: ClassVar[int] = ERROR_TTL_TURNS

    results = Instance(
        FrozenMap,
        args=(),
        read_only=True,
        help="task_id -> ForageResult, in order of first report: a FrozenMap, replaced "
        "(never mutated) on every change so observers hear of it.",
    )

    # -- feeding
    @feed
    def report(self, context: Mapping[str, Any]) -> None:
        """Apply one of MIRA's forage contexts (see the module docstring) without re-rendering;
        ``publish_trinket_update("ForageTrinket", context)`` applies it and re-renders."""
        if not isinstance(context, Mapping):
            raise TypeError(f"a forage context must be a mapping, got {type(context).__name__}")
        self._apply(context)

    @command(
        "report",
        arg("task_id", help="The forage task id."),
        arg("status", choices=(*STATUSES, "dismissed")),
        arg("--query", help="The forage query."),
        arg("--iteration", type=non_negative_int),
        arg("--max-iterations", type=non_negative_int),
        arg("--iterations", type=non_negative_int),
        arg("--summary", help="An in_progress report's summary."),
        arg("--result", help="A success's written result."),
        arg("--elapsed", type=float, help="Seconds before a timeout."),
        arg("--error"),
        arg("--error-type"),
        help="Report on a forage as MIRA does: TASK_ID STATUS [--query Q] and the status's "
        "fields (in_progress: --iteration N --max-iterations N --summary S; success: --iterations N "
        "--result R; timeout: --elapsed S --iteration N; failed: --error E [--error-type T]).",
    )
    def _report_command(self, task_id: str, status: str, **fields: Any) -> None:
        context: dict[str, Any] = {"task_id": task_id, "status": status}
        context.update({k: v for k, v in fields.items() if v is not None})
        self.working_memory.publish_trinket_update(self.name, context)

    @command("dismiss", arg("task_id", help="The forage task id."), help="Dismiss a result (MIRA's dismiss).")
    def _dismiss_command(self, task_id: str) -> None:
        self.working_memory.publish_trinket_update(self.name, {"task_id": task_id, "status": "dismissed"})

    def handle_update_trinket(self, event: UpdateTrinketEvent) -> None:
        """Apply the context's report (if it names a task), then regenerate. The report goes
        through :meth:`report`, a feed, so a scenario recorder hears MIRA's contexts too."""
        if event.context.get("task_id"):
            self.report(event.context)
        super().handle_update_trinket(event)

    def _apply(self, context: Mapping[str, Any]) -> None:
        raw_id = context.get("task_id")
        if not raw_id:
            return
        task_id = str(raw_id)
        status = context.get("status")
        earlier: ForageResult | None = self.results.get(task_id)
        if status == "dismissed":
            if earlier is not None:
                self._drop_items([task_id])
            return
        if status == "in_progress":
            if earlier is not None and earlier.status in _FINAL:
                return  # a late progress report never undoes a result
            stacked = earlier.summaries if earlier is not None and earlier.status == "in_progress" else ()
            result = ForageResult(
                task_id,
                status,
                {
                    "query": context.get("query", ""),
                    "iteration": context.get("iteration", 0),
                    "max_iterations": context.get("max_iterations", 0),
                },
                None,
                (*stacked, (context.get("iteration", 0), context.get("summary", ""))),
            )
        elif status in ("pending", "success"):
            result = ForageResult(task_id, status, dict(context))
        elif status in ("timeout", "failed"):
            result = ForageResult(task_id, status, dict(context), self.current_turn + self.ERROR_TTL_TURNS)
        else:
            return
        with self._changing_state() as change:  # stored first: a failed write changes nothing
            change.put(task_id, result.record())
        self.set_trait("results", self.results.set(task_id, result))

    # -- reading
    def _visible(self) -> list[ForageResult]:
        turn = self.current_turn
        return [r for r in self.results.values() if r.until is None or turn <= r.until]

    def describe_items(self) -> list[dict[str, Any]]:
        turn = self.current_turn
        return [
            {
                "id": r.task_id,
                "label": f"{r.status}: {r.data.get('query', '')}",
                "turns_remaining": None if r.until is None else r.until - turn,
            }
            for r in self._visible()
        ]

    def generate_content(self, context: dict[str, Any]) -> str:
        blocks = [self._block(r) for r in self._visible()]
        if not blocks:
            return ""
        return "<forage_results>\n" + "\n".join(blocks) + "\n</forage_results>"

    def _block(self, r: ForageResult) -> str:
        d = r.data
        head = f'<result type="{r.status}" task_id="{escape_attr(r.task_id)}" query="{escape_attr(d.get("query", ""))}"'
        if r.status == "in_progress":
            lines = "".join(f"[{escape_text(i)}] {escape_text(s)}\n" for i, s in r.summaries)
            progress = f"{d.get('iteration', 0)}/{d.get('max_iterations', 0)}"
            return f'{head} iteration="{escape_attr(progress)}">\n{lines}</result>'
        if r.status == "pending":
            return f"{head}>\nForaging in progress...\n</result>"
        if r.status == "success":
            return (
                f'{head} iterations="{escape_attr(d.get("iterations", 0))}">\n'
                f"{escape_text(d.get('result', ''))}\n</result>"
            )
        assert r.until is not None
        head += f' turns_remaining="{r.until - self.current_turn}">\n'
        if r.status == "timeout":
            elapsed = f"{d.get('elapsed', 0):.0f}"
            return (
                f"{head}Forage timed out after {elapsed}s at iteration {escape_text(d.get('iteration', 0))}.\n</result>"
            )
        error_type, error = d.get("error_type", "Error"), d.get("error", "Unknown error")
        return f"{head}Forage failed: {escape_text(error_type)} — {escape_text(error)}\n</result>"

    # -- lifecycle
    def _expire_items(self) -> bool:
        turn = self.current_turn
        return self._drop_items([r.task_id for r in self.results.values() if r.until is not None and turn > r.until])

    def _clear_all_state(self) -> None:
        self._clear_items()

    # -- persistence: one record per task (StatefulTrinket's per-item persistence)
    def _dump_state(self) -> dict[str, Any] | None:
        if not self.results:
            return None
        return {"results": [r.record() for r in self.results.values()]}

    def _parse_state(self, data: dict[str, Any]) -> FrozenMap[str, ForageResult]:
        items = data.get("results")
        if not isinstance(items, list):
            raise ValueError("results must be a list")
        parsed = [_from_record(item, f"results[{i}]") for i, item in enumerate(items)]
        return FrozenMap((r.task_id, r) for r in parsed)

    def _restore_state(self, parsed: FrozenMap[str, ForageResult]) -> None:
        self.set_trait("results", parsed)
