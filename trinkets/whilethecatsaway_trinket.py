"""WhileTheCatsAwayTrinket: results of MIRA's background research, by task id (MIRA HEAD).

MIRA's while-the-cat's-away agent researches a topic between conversations and reports once, fed
with ``wm.publish_trinket_update("WhileTheCatsAwayTrinket", context)``: ``{task_id, status:
"success", topic, result}`` or ``{task_id, status: "timeout" | "failed", topic, error}``. A context
without ``task_id`` only re-renders; any other status stores nothing. There is no dismissal.

Every result shows for :data:`RESULT_TTL_TURNS` (8) turns after the one it arrived in (while
``current_turn <= arrival + 8``), is deleted at the first turn past that, and replaces an earlier
result of the same task in place. A segment collapse clears them all.

The section ``whilethecatsaway_results``::

    <whilethecatsaway_results>
    <result type="success" task_id="t1" topic="tides">
    the result
    </result>
    <result type="timeout" task_id="t2" topic="moons" turns_remaining="8">
    Background research timed out.
    </result>
    <result type="failed" task_id="t3" topic="stars" turns_remaining="8">
    Background research failed: the error
    </result>
    </whilethecatsaway_results>

Escaping (docs/deviations.md, ``catsaway_escape``): MIRA writes every value raw; here task ids and
topics go through :func:`~wm_kernel.utils.markup.escape_attr`, results and errors through
:func:`~wm_kernel.utils.markup.escape_text`.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(trinkets=[WhileTheCatsAwayTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> s.working_memory.publish_trinket_update("WhileTheCatsAwayTrinket",
...     {"task_id": "w1", "status": "failed", "topic": "tides", "error": "no network"})
>>> print(s.trinket("WhileTheCatsAwayTrinket").content)
<whilethecatsaway_results>
<result type="failed" task_id="w1" topic="tides" turns_remaining="8">
Background research failed: no network
</result>
</whilethecatsaway_results>
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from traitlets import Instance

from trinkets.base import StatefulTrinket, arg, command, feed
from wm_kernel.core.events import UpdateTrinketEvent
from wm_kernel.utils.frozenmap import FrozenMap
from wm_kernel.utils.markup import escape_attr, escape_text

#: Turns a result shows after the turn it arrived in (MIRA's RESULT_TTL_TURNS).
RESULT_TTL_TURNS = 8
STATUSES: tuple[str, ...] = ("success", "timeout", "failed")


@dataclass(frozen=True, slots=True)
class ResearchResult:
    """One task's result: its status, topic, result or error text, and the last turn it shows."""

    task_id: str
    status: str
    data: Mapping[str, Any]
    until: int

    def record(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "status": self.status, "data": dict(self.data), "until": self.until}


def _from_record(item: object, where: str) -> ResearchResult:
    if not isinstance(item, dict) or set(item) != {"task_id", "status", "data", "until"}:
        raise ValueError(f"{where} must be a dict with task_id, status, data, until")
    until = item["until"]
    if not isinstance(item["task_id"], str) or item["status"] not in STATUSES or not isinstance(item["data"], dict):
        raise ValueError(f"{where}: bad task_id, status or data")
    if isinstance(until, bool) or not isinstance(until, int):
        raise ValueError(f"{where}.until must be an int")
    return ResearchResult(item["task_id"], item["status"], dict(item["data"]), until)


class WhileTheCatsAwayTrinket(StatefulTrinket):
    """Background research results, published as ``whilethecatsaway_results`` (not cached).

    See the module docstring for the contexts, the lifetime and the markup.
    """

    variable_name = "whilethecatsaway_results"
    cache_policy = False
    default_priority = 60
    reuse_content = True
    state_prefix = "whilethecatsaway"
    state_items = "results"
    state_item_id = "task_id"
    RESULT_TTL_TURNS: ClassVar[int] = RESULT_TTL_TURNS

    results = Instance(
        FrozenMap,
        args=(),
        read_only=True,
        help="task_id -> ResearchResult, in order of first report: a FrozenMap, replaced "
        "(never mutated) on every change.",
    )

    @feed
    def report(self, context: Mapping[str, Any]) -> None:
        """Apply one of MIRA's contexts without re-rendering (see the module docstring)."""
        if not isinstance(context, Mapping):
            raise TypeError(f"a research context must be a mapping, got {type(context).__name__}")
        self._apply(context)

    @command(
        "report",
        arg("task_id", help="The research task id."),
        arg("status", choices=STATUSES),
        arg("--topic", help="The researched topic."),
        arg("--result", help="A success's result."),
        arg("--error", help="A timeout's or failure's error."),
        help="Report background research as MIRA does: TASK_ID STATUS [--topic T] [--result R | --error E].",
    )
    def _report_command(self, task_id: str, status: str, **fields: Any) -> None:
        context: dict[str, Any] = {"task_id": task_id, "status": status}
        context.update({k: v for k, v in fields.items() if v is not None})
        self.working_memory.publish_trinket_update(self.name, context)

    def handle_update_trinket(self, event: UpdateTrinketEvent) -> None:
        """Apply the context's result (if it names a task), then regenerate. The result goes
        through :meth:`report`, a feed, so a scenario recorder hears MIRA's contexts too."""
        if event.context.get("task_id"):
            self.report(event.context)
        super().handle_update_trinket(event)

    def _apply(self, context: Mapping[str, Any]) -> None:
        raw_id = context.get("task_id")
        status = context.get("status")
        if not raw_id or status not in STATUSES:
            return
        task_id = str(raw_id)
        result = ResearchResult(task_id, str(status), dict(context), self.current_turn + self.RESULT_TTL_TURNS)
        with self._changing_state() as change:
            change.put(task_id, result.record())
        self.set_trait("results", self.results.set(task_id, result))

    # -- reading
    def _visible(self) -> list[ResearchResult]:
        turn = self.current_turn
        return [r for r in self.results.values() if turn <= r.until]

    def describe_items(self) -> list[dict[str, Any]]:
        turn = self.current_turn
        return [
            {"id": r.task_id, "label": f"{r.status}: {r.data.get('topic', '')}", "turns_remaining": r.until - turn}
            for r in self._visible()
        ]

    def generate_content(self, context: dict[str, Any]) -> str:
        blocks = [self._block(r) for r in self._visible()]
        if not blocks:
            return ""
        return "<whilethecatsaway_results>\n" + "\n".join(blocks) + "\n</whilethecatsaway_results>"

    def _block(self, r: ResearchResult) -> str:
        head = (
            f'<result type="{r.status}" task_id="{escape_attr(r.task_id)}" '
            f'topic="{escape_attr(r.data.get("topic", ""))}"'
        )
        if r.status == "success":
            return f"{head}>\n{escape_text(r.data.get('result', ''))}\n</result>"
        head += f' turns_remaining="{r.until - self.current_turn}">\n'
        if r.status == "timeout":
            return f"{head}Background research timed out.\n</result>"
        return f"{head}Background research failed: {escape_text(r.data.get('error', 'Unknown error'))}\n</result>"

    # -- lifecycle
    def _expire_items(self) -> bool:
        turn = self.current_turn
        return self._drop_items([r.task_id for r in self.results.values() if turn > r.until])

    def _clear_all_state(self) -> None:
        self._clear_items()

    # -- persistence: one record per task
    def _dump_state(self) -> dict[str, Any] | None:
        if not self.results:
            return None
        return {"results": [r.record() for r in self.results.values()]}

    def _parse_state(self, data: dict[str, Any]) -> FrozenMap[str, ResearchResult]:
        items = data.get("results")
        if not isinstance(items, list):
            raise ValueError("results must be a list")
        parsed = [_from_record(item, f"results[{i}]") for i, item in enumerate(items)]
        return FrozenMap((r.task_id, r) for r in parsed)

    def _restore_state(self, parsed: FrozenMap[str, ResearchResult]) -> None:
        self.set_trait("results", parsed)
