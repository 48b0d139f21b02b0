"""GetContextTrinket: results of asynchronous context searches (the get_context tool), by task id.

A search tool reports on a task as it runs: ``pending`` when it starts, then ``success``, ``timeout``
or ``failed``. Each report replaces the previous one for the same ``task_id`` (a pending search
becomes its result, keeping its place in the list). ``pending`` and ``success`` stay until the segment
collapses; ``timeout`` and ``failed`` show while ``current_turn <= arrival + 5`` and then expire.

Fields by status (the same names in the Python API and in an UpdateTrinketEvent context):

=========  ==============================================================================
status     fields
=========  ==============================================================================
pending    ``query``; optional ``search_scope`` (list of source names, default: all
           sources) and ``search_mode`` (default ``"standard"``)
success    ``summary``: ``{"query", "summary", "key_findings": [{"point", "source"?}],
           "limitations"?}`` (``key_findings`` and ``limitations`` optional)
timeout    ``query``, ``iteration``, ``findings_count`` (non-negative ints)
failed     ``query``, ``error``, ``error_type``
=========  ==============================================================================

The section ``context_search_results`` is plain text: the header
``=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ===``, a blank line, then one block per result, blocks
separated by ``"\\n\\n---\\n\\n"``. Two styles (the ``style`` trait; docs/deviations.md lists both).

``"original"`` (the default) writes the original system's blocks, byte for byte::

    📎 Context Search: {query}
    <blank>
    {summary}                                  (with its blank line, left out when empty)
    <blank>
    <blank>
    • {point} (source: {source})               (one per finding; "• {point}" without a source;
                                                the findings and their blank lines left out if none)
    <blank>
    <blank>
    Note: {limitations}                        (only when given)

    🔍 Searching for context: '{query}'
    <blank>
    Mode: {search_mode} | Sources: {a, b}      ("all sources" when the scope is empty)
    <blank>
    Results will appear here when the search completes...

    ⚠️ Context search timed out: '{query}'
    <blank>
    The search exceeded 5 minutes (stopped at iteration {iteration} with {findings_count}
    findings). Try rephrasing your query or tell the user the search was inconclusive.   (one line)
    <blank>
    (This message will disappear in {N} turns)

    ⚠️ Context search failed: '{query}'
    <blank>
    Error: {error} ({error_type})
    <blank>
    Try rephrasing the query or tell the user you encountered an error.
    <blank>
    (This message will disappear in {N} turns)

N is the number of turns remaining,
``arrival + 5 - current_turn``: "1 turn", else "N turns", down to "0 turns" on the last turn a
message shows. As in the original, a collapse resets the turn count only when it clears something:
after a collapse with nothing stored, a timeout or failure counts from the turn before the collapse
(and so shows longer), until the next collapse that clears results.

``"revised"`` is this project's layout: no blank lines inside a block, the pending block's mode and
sources on two lines, singular and plural where they belong ("1 finding"), "(This message will
disappear after this turn)" on the last turn, and every collapse resets the turn count. Its wording::

    📎 Context Search: {query}
    {summary}                                  (left out when empty or blank)
    • {point} (source: {source})               (one per finding; "• {point}" without a source)
    Note: {limitations}                        (only when given)

    🔍 Searching for context: '{query}'
    Mode: {search_mode}
    Sources: {a, b}                            ("all sources" when the scope is empty)
    Results will appear here when the search completes.

    ⚠️ Context search timed out: '{query}'
    Stopped at iteration {iteration} with {findings_count} finding(s).
    Try rephrasing the query, or tell the user the search was inconclusive.
    (This message will disappear in {N} turn(s))

    ⚠️ Context search failed: '{query}'
    Error ({error_type}): {error}
    Try rephrasing the query, or tell the user the search ran into an error.
    (This message will disappear in {N} turn(s))

Escaping. The section sits inside the HUD's ``<mira:hud>`` element, so in both styles every value is
escaped as element text (``&``, ``<``, ``>``; :func:`wm_kernel.utils.markup.escape_text`): no value can
close the HUD or open a tag (the original writes them raw; for text without markup characters the
output is the same). The revised style also follows every line break inside a value with two spaces
of indentation, so a value can never start a line of its own: every line that begins at the left
margin (the header, the ``---`` separators, the status lines) comes from the trinket, and a hostile
summary cannot fake a new result or a separator. (Any Unicode line break counts; they all become
``"\\n  "``.)

Persistence. The results live in the WorkingMemory's store too, field ``state`` of the hash
``getcontext:{user_id}:{continuum_id}``, written whenever they change (a report, a removal, an
expiry, a collapse; never a plain compose), so a Session on a SQLite file shows them after a restart
with the same turns remaining. Stored data this trinket cannot read is a ValueError naming the key
when the trinket is constructed.

Bad input (an unknown status, a missing or mistyped field) is a ValueError and stores nothing; from
an UpdateTrinketEvent it is isolated by WorkingMemory and shown on the ``error`` trait. An event
context without ``task_id`` stores nothing, and a context with a ``task_id`` but no ``status`` is a
success, as in the original.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(trinkets=[GetContextTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> gc = s.trinket("GetContextTrinket")
>>> gc.add_success("t1", "budget decision", "Ada approved 12k.",
...                key_findings=[{"point": "Approved on Nov 28", "source": "chat"}])
>>> gc.add_failed("t2", "travel policy", "index offline", "ConnectionError")
>>> print(gc.generate_content({}))
=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ===
<BLANKLINE>
📎 Context Search: budget decision
<BLANKLINE>
Ada approved 12k.
<BLANKLINE>
<BLANKLINE>
• Approved on Nov 28 (source: chat)
<BLANKLINE>
---
<BLANKLINE>
⚠️ Context search failed: 'travel policy'
<BLANKLINE>
Error: index offline (ConnectionError)
<BLANKLINE>
Try rephrasing the query or tell the user you encountered an error.
<BLANKLINE>
(This message will disappear in 5 turns)
>>> gc.style = "revised"
>>> print(gc.generate_content({}))
=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ===
<BLANKLINE>
📎 Context Search: budget decision
Ada approved 12k.
• Approved on Nov 28 (source: chat)
<BLANKLINE>
---
<BLANKLINE>
⚠️ Context search failed: 'travel policy'
Error (ConnectionError): index offline
Try rephrasing the query, or tell the user the search ran into an error.
(This message will disappear in 5 turns)
>>> _ = s.advance_turn(6)
>>> [r["task_id"] for r in gc.results()]
['t1']
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

from traitlets import Instance

from trinkets.base import StatefulTrinket, arg, command, feed, non_negative_int
from trinkets.getcontext.render import render
from trinkets.getcontext.results import FIELDS, SearchResult, parse_entries, record, validate
from wm_kernel.core.events import UpdateTrinketEvent
from wm_kernel.utils.checks import check_unicode
from wm_kernel.utils.frozenmap import FrozenMap


class GetContextTrinket(StatefulTrinket):
    """Context search results by task id, published as ``context_search_results``.

    See the module docstring for the fields, display rules, wording and escaping.
    """

    variable_name = "context_search_results"
    default_priority = 60  # token budgets: see docs/budgets.md
    reuse_content = True  # its inputs: traits, feeds, own store writes, profile
    cache_policy = False
    state_prefix = "getcontext"
    styles = ("original", "revised")
    state_items = "entries"
    state_item_id = "task_id"
    #: Turns a timeout or failure stays after the turn it arrived in.
    ERROR_TURNS: ClassVar[int] = 5

    entries = Instance(
        FrozenMap,
        args=(),
        read_only=True,
        help="task_id -> SearchResult, in order of first report: a FrozenMap, "
        "replaced (never mutated) on every change so observers hear of it, "
        "without copying every entry.",
    )

    # -- feeding
    @feed
    def add_result(self, task_id: str, status: str, **fields: Any) -> None:
        """Store (or replace) the report for ``task_id``; fields by status as in the module docstring.

        ValueError, nothing stored, for an empty task id, an unknown status, a missing, unknown or
        mistyped field.
        """
        self._store(task_id, status, fields)

    @command(
        "add",
        arg("task_id", help="The search task id."),
        arg("status", choices=("pending", "success", "timeout", "failed")),
        arg("--query", required=True, help="The search query."),
        arg("--scope", metavar="A,B"),
        arg("--mode", default="standard"),
        arg("--summary", default=""),
        arg("--finding", action="append", default=[], metavar="'POINT | SOURCE'"),
        arg("--limitations"),
        arg("--iteration", type=non_negative_int, default=0),
        arg("--findings", type=non_negative_int, default=0),
        arg("--error"),
        arg("--error-type", default="Error"),
        help="Report on a search: TASK_ID STATUS --query Q, then by status: pending "
        "[--scope A,B] [--mode M]; success --summary S [--finding 'POINT | SOURCE']... "
        "[--limitations L]; timeout --iteration N --findings N; failed --error E "
        "[--error-type T].",
    )
    def _add_command(
        self,
        task_id: str,
        status: str,
        query: str,
        scope: str | None,
        mode: str,
        summary: str,
        finding: list[str],
        limitations: str | None,
        iteration: int,
        findings: int,
        error: str | None,
        error_type: str,
    ) -> None:
        """``add_result`` from the command line's options: the ones of ``status``.

        Long because: the options of every status share one command line (twelve parameters), and
        each status builds its own ``add_result`` call.
        """
        # the options of every status share one command line; add_result checks what it gets
        if status == "pending":
            self.add_result(
                task_id,
                status,
                query=query,
                search_mode=mode,
                search_scope=[s.strip() for s in (scope or "").split(",") if s.strip()],
            )
        elif status == "success":
            points = [f.partition(" | ") for f in finding]
            self.add_result(
                task_id,
                status,
                summary={
                    "query": query,
                    "summary": summary,
                    "limitations": limitations,
                    "key_findings": [
                        {"point": p, **({"source": s.strip()} if s.strip() else {})} for p, _, s in points
                    ],
                },
            )
        elif status == "timeout":
            self.add_result(task_id, status, query=query, iteration=iteration, findings_count=findings)
        elif error is None:
            raise ValueError("argument --error: required for a failed search")
        else:
            self.add_result(task_id, status, query=query, error=error, error_type=error_type)

    @feed
    def add_pending(
        self, task_id: str, query: str, search_scope: list[str] | tuple[str, ...] = (), search_mode: str = "standard"
    ) -> None:
        """A search has started."""
        self._store(task_id, "pending", {"query": query, "search_scope": search_scope, "search_mode": search_mode})

    @feed
    def add_success(
        self,
        task_id: str,
        query: str,
        summary: str,
        key_findings: list[dict[str, str]] | tuple[dict[str, str], ...] = (),
        limitations: str | None = None,
    ) -> None:
        """A search finished with a summary and findings (``[{"point": .., "source": ..}]``)."""
        self._store(
            task_id,
            "success",
            {"summary": {"query": query, "summary": summary, "key_findings": key_findings, "limitations": limitations}},
        )

    @feed
    def add_timeout(self, task_id: str, query: str, iteration: int, findings_count: int) -> None:
        """A search ran out of time at ``iteration`` with ``findings_count`` findings."""
        self._store(task_id, "timeout", {"query": query, "iteration": iteration, "findings_count": findings_count})

    @feed
    def add_failed(self, task_id: str, query: str, error: str, error_type: str) -> None:
        """A search failed with an error."""
        self._store(task_id, "failed", {"query": query, "error": error, "error_type": error_type})

    @command("remove", arg("task_id", help="The search task id."), help="Forget one task's result.")
    @feed
    def remove(self, task_id: str) -> None:
        """Forget one task's result; ValueError if there is none."""
        if task_id not in self.entries:
            known = ", ".join(map(repr, self.entries)) or "none"
            raise ValueError(f"no search result with task_id {task_id!r} (stored: {known})")
        self._drop_items([task_id])

    def _store(self, task_id: object, status: object, fields: Mapping[str, Any]) -> None:
        if not isinstance(task_id, str) or not task_id.strip():
            raise ValueError(f"task_id must be a non-empty str; got {task_id!r}")
        check_unicode(task_id, "task_id")
        data = validate(status, fields)
        assert isinstance(status, str)
        result = SearchResult(task_id, status, self.current_turn, data)
        with self._changing_state() as change:  # stored first: a failed write changes nothing
            change.put(task_id, record(result))
        self.set_trait("entries", self.entries.set(task_id, result))

    def handle_update_trinket(self, event: UpdateTrinketEvent) -> None:
        """Store the report an event context carries (if it has a ``task_id``), then regenerate."""
        context: Mapping[str, Any] = event.context
        task_id = context.get("task_id")
        if task_id:
            status = context.get("status", "success")
            accepted = FIELDS.get(status, ()) if isinstance(status, str) else ()
            self._store(task_id, status, {k: context[k] for k in accepted if k in context})
        super().handle_update_trinket(event)

    # -- reading
    def _turns_remaining(self, result: SearchResult) -> int | None:
        if not result.expires:
            return None
        return result.received_turn + self.ERROR_TURNS - self.current_turn

    def _visible(self) -> list[SearchResult]:
        return [
            r for r in self.entries.values() if not r.expires or self.current_turn <= r.received_turn + self.ERROR_TURNS
        ]

    def results(self) -> list[dict[str, Any]]:
        """Shown results, oldest report first: task_id, status, the status's fields (a copy),
        received_turn and turns_remaining (None for pending and success)."""
        out = []
        for r in self._visible():
            data = copy.deepcopy(r.data)
            out.append(
                {
                    "task_id": r.task_id,
                    "status": r.status,
                    **data,
                    "received_turn": r.received_turn,
                    "turns_remaining": self._turns_remaining(r),
                }
            )
        return out

    def describe_items(self) -> list[dict[str, Any]]:
        items = []
        for r in self._visible():
            query = r.data["summary"]["query"] if r.status == "success" else r.data["query"]
            items.append(
                {"id": r.task_id, "label": f"{r.status}: {query}", "turns_remaining": self._turns_remaining(r)}
            )
        return items

    def generate_content(self, context: dict[str, Any]) -> str:
        return render([(r, self._turns_remaining(r)) for r in self._visible()], self.style)

    # -- lifecycle
    def _expire_items(self) -> bool:
        turn = self.current_turn
        return self._drop_items(
            [r.task_id for r in self.entries.values() if r.expires and turn > r.received_turn + self.ERROR_TURNS]
        )

    def _clear_all_state(self) -> None:
        self._clear_items()

    # -- persistence: one record per task (StatefulTrinket's per-item persistence); the order of
    # first report is kept by the records' order numbers
    def _dump_state(self) -> dict[str, Any] | None:
        if not self.entries:
            return None
        return {"entries": [record(r) for r in self.entries.values()]}

    def _parse_state(self, data: dict[str, Any]) -> dict[str, SearchResult]:
        return parse_entries(data)

    def _restore_state(self, parsed: dict[str, SearchResult]) -> None:
        self.set_trait("entries", FrozenMap(parsed))
