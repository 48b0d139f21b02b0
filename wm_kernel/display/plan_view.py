"""What ``%plan`` shows: a plan's table beside its cache clock, for an imported log or a Session.

:func:`log_clock` draws an imported log's requests (a lane per conversation; a compaction call
on the lane of the conversation it forks, whose cache it reads) with each recorded compaction
and, where the plan moves one, where it would run (``ImportedSession.compaction_plan()``).
:func:`session_clock` draws a Session's simulated requests with the segment collapses it
recorded and where ``Session.plan()`` would run a collapse and a tool-result clear: now, or at
the next cold miss (an edit the plan says never to run is a note). :func:`plan_view` picks
the one that fits what it is given and returns a :class:`PlanView` (the headline, the table,
the clock); the dashboard's plan panel shows the same picture.
"""

from __future__ import annotations

import html
import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.models import family_name
from wm_kernel.display.cache_clock import CacheClock, ClockEdit, ClockRequest
from wm_kernel.display.tables import Table
from wm_kernel.utils.htmltext import no_math

if TYPE_CHECKING:
    import pandas as pd

    from wm_kernel.dialects.usage import Usage
    from wm_kernel.interop.imported import ImportedSession
    from wm_kernel.session import Session

__all__ = ["PlanView", "log_clock", "session_clock", "plan_view"]

#: A request that read at least this share of what the previous request of its conversation held
#: (its whole input) read all the cache could give it: a hit (``compactions.WARM_SHARE``).
HIT_SHARE = 0.95


def _status(usage: Usage | None, held: int | None) -> str:
    """hit (it read what the previous request of its conversation held), partial (some of it),
    write (nothing read, something written), miss (neither)."""
    if usage is None or not usage.prompt_tokens:
        return "miss"
    if usage.cache_read_tokens and held and usage.cache_read_tokens >= HIT_SHARE * held:
        return "hit"
    if usage.cache_read_tokens:
        return "partial"
    return "write" if usage.cache_write_tokens else "miss"


def _family(model: str | None) -> str | None:
    return (family_name(model) or model) if model else None


def _lane(conversation: str) -> str:
    """A conversation's short name: a subagent's own (``<session>/agent-a1``: ``agent-a1``), a
    session id's first eight characters."""
    if "/" in conversation:
        return conversation.split("/", 1)[1]
    return conversation if len(conversation) <= 12 else conversation[:8]


def _usd(value: float) -> str:
    return "n/a" if math.isnan(value) else f"${value:,.6f}"


def log_clock(log: ImportedSession, plan: pd.DataFrame | None = None, *, now: datetime | None = None) -> CacheClock:
    """The cache clock of an imported log (module docstring); ``plan`` is its
    ``compaction_plan()`` (computed when not given); ``now`` is marked when given (the dashboard
    marks the request on view). A request without a send time is left out and counted in a note."""
    plan = log.compaction_plan() if plan is None else plan
    requests, untimed = _log_requests(log)
    notes = [f"{untimed} request{'s' if untimed != 1 else ''} without a send time not drawn"] if untimed else []
    edits = _compaction_marks(log, plan)
    return CacheClock(f"cache clock: {log.name or 'the imported log'}", requests, edits, now=now, notes=notes)


def _log_requests(log: ImportedSession) -> tuple[list[ClockRequest], int]:
    """The log's requests on their lanes, and how many had no send time (left out).

    A request's lane is its conversation's (:func:`_lane`), a compaction call's the conversation
    it forks; its cache lasts the TTL it wrote (1 hour, 5 minutes) or else its lane's last, at
    first the pricing profile's default; its status compares what it read with what the last
    request of its lane that reported usage held (:func:`_status`)."""
    billed, pricing = log.billed_usage(), log.pricing()
    requests, untimed = [], 0
    ttl_of: dict[str, float] = {}
    held: dict[str, int] = {}
    for index, request in enumerate(log.requests):
        if request.sent_at is None:
            untimed += 1
            continue
        conversation = request.conversation or "conversation"
        note = ""
        if "compaction" in request.marks:
            conversation, note = conversation.split("/", 1)[0], "the compaction call (it reads this conversation)"
        conversation = _lane(conversation)
        usage = billed[index]
        profile = pricing[index].profile
        if usage is not None and usage.cache_write_1h_tokens:
            ttl = 3600.0
        elif usage is not None and usage.cache_write_5m_tokens:
            ttl = 300.0
        else:
            ttl = ttl_of.get(conversation, profile.ttls[profile.default_ttl].total_seconds())
        ttl_of[conversation] = ttl
        model = _family(request.model)
        status = _status(usage, held.get(conversation))
        if usage is not None:
            held[conversation] = usage.prompt_tokens
        requests.append(ClockRequest(index, request.sent_at, ttl, conversation, status, model, note))
    return requests, untimed


def _compaction_marks(log: ImportedSession, plan: pd.DataFrame) -> list[ClockEdit]:
    """A mark per row of ``plan`` (the log's ``compaction_plan()``): the recorded compaction at its
    call's send time, worded with its cache, idle time, model switch and cost, and where the plan
    runs it instead as a planned mark (on the same line when the plan keeps the moment); a
    compaction whose call is not in the log is marked at its request, saying so."""
    edits = []
    for row in plan.to_dict("records"):
        kind = f"compaction ({row['trigger']})"
        if row["call"] is None:
            at = log.requests[int(row["request"])].sent_at
            if at is not None:
                edits.append(ClockEdit(at, kind, False, f"{kind}: its call is not in the log"))
            continue
        call = log.requests[int(row["call"])]
        warm = "warm" if row["warm"] else "cold"
        idle = "" if math.isnan(row["idle_s"]) else f", {row['idle_s']:,.0f} s after the previous request"
        switch = ", after a model switch" if row["model_switch"] else ""
        planned_at = row.get("planned_at")
        moved = row["saving_usd"] > 0 and isinstance(planned_at, datetime)
        if call.sent_at is not None:
            text = f"{kind} on a {warm} cache{idle}{switch}: {_usd(row['recorded_usd'])}"
            if moved and planned_at == call.sent_at:  # the plan keeps the moment: said on the same line
                moved = False
                text += f"; plan: {row['recommended']}: {_usd(row['planned_usd'])}, saves {_usd(row['saving_usd'])}"
            edits.append(ClockEdit(call.sent_at, kind, False, text))
        if moved and isinstance(planned_at, datetime):
            edits.append(
                ClockEdit(
                    planned_at,
                    kind,
                    True,
                    f"{row['recommended']}: {_usd(row['planned_usd'])}, saves {_usd(row['saving_usd'])}",
                )
            )
    return edits


def session_clock(
    session: Session,
    model: str | None = None,
    *,
    turn: int | None = None,
    plan: pd.DataFrame | None = None,
    **options: Any,
) -> CacheClock:
    """The cache clock of a Session's recorded turns up to ``turn`` (default: all), simulated on
    ``model`` as ``session.cache_simulation`` does, with its recorded segment collapses and where
    ``plan`` (default ``session.plan(model, turn=turn, **options)``) runs each edit."""
    simulation = session.cache_simulation(model)
    if plan is None:
        plan = session.plan(model, turn=turn, **options)
    profile = simulation.profile
    turns = list(simulation.turns["turn"]) if "turn" in simulation.turns else list(range(len(simulation.requests)))
    statuses = list(simulation.turns["status"])
    segments = _segments(session)
    requests, edits = [], []
    last_segment: int | None = None
    for index, (request, at_turn, status) in enumerate(zip(simulation.requests, turns, statuses, strict=True)):
        if turn is not None and at_turn > turn:
            break
        ttl = profile.default_ttl
        for block in request.blocks:
            if block.breakpoint is not None and block.breakpoint in profile.ttls:
                ttl = block.breakpoint
        seconds = profile.ttls[ttl].total_seconds()
        requests.append(
            ClockRequest(index, request.at, seconds, "conversation", status, profile.name, f"turn {at_turn}")
        )
        segment = segments.get(at_turn)
        if segment is not None and last_segment is not None and segment > last_segment:
            edits.append(
                ClockEdit(
                    request.at, "segment collapse", False, f"segment collapse before turn {at_turn} (segment {segment})"
                )
            )
        if segment is not None:
            last_segment = segment
    clock = getattr(session, "clock", None)
    now = requests[-1].at if requests else None
    if clock is not None and len(requests) == len(simulation.requests):  # planned at the session's clock
        now = clock.now()
    notes = []
    for row in plan.to_dict("records"):
        text = f"{row['edit']}: {row['recommended']}"
        if str(row["recommended"]).startswith("now") and now is not None:
            edits.append(ClockEdit(now, row["edit"], True, text))
        elif str(row["recommended"]).startswith("at the next cold miss") and isinstance(row["cold_at"], datetime):
            edits.append(ClockEdit(row["cold_at"], row["edit"], True, text))
        else:
            notes.append(text)
    title = f"cache clock: the session on {profile.name}"
    return CacheClock(title, requests, edits, now=now, notes=notes)


def _segments(session: Session) -> dict[int, int]:
    """Turn -> the segment it was composed in (the last compose of the turn)."""
    frame = session.history
    if frame.empty:
        return {}
    return {int(t): int(s) for t, s in zip(frame["turn"], frame["segment"], strict=True)}


def _rounded(plan: pd.DataFrame) -> pd.DataFrame:
    """``plan`` as a table shows it: dollars to six places, turns to one, token counts as ints."""
    shown = plan.copy()
    for name in shown.columns:
        if name.endswith("_usd"):
            shown[name] = shown[name].astype(float).round(6)
        elif name == "break_even_now":
            shown[name] = shown[name].astype(float).round(1)
        elif name == "edit_point":
            shown[name] = shown[name].astype("Int64")
    return shown


class PlanView:
    """A plan shown as people read it: the headline, the cache clock and the table beside it
    (``view.plan`` is the DataFrame, ``view.clock`` the picture)."""

    def __init__(self, headline: str, plan: pd.DataFrame, clock: CacheClock) -> None:
        self.headline = headline
        self.plan = plan
        self.table = Table(_rounded(plan))
        self.table.attrs.update(plan.attrs)
        self.clock = clock

    def __str__(self) -> str:
        return "\n".join([self.headline, str(self.clock), "", repr(self.table)])

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        return no_math(
            f'<div class="wm-plan"><div>{html.escape(self.headline)}</div>'
            '<div style="display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start">'
            f"<div>{self.clock.html()}</div><div>{self.table._repr_html_()}</div></div></div>"
        )


def plan_view(subject: ImportedSession | Session, *, summary_tokens: int = 0, model: str | None = None) -> PlanView:
    """``%plan``'s view of ``subject``: an imported log's compaction plan, or a Session's own
    (``summary_tokens`` and ``model`` as ``Session.plan``)."""
    from wm_kernel.interop.imported import ImportedSession

    if isinstance(subject, ImportedSession):
        plan = subject.compaction_plan()
        name = subject.name or "the imported log"
        count = len(plan)
        if plan.empty:
            headline = f"{name}: no compaction in the log, nothing to plan"
        else:
            headline = (
                f"{name}: {count} compaction{'s' if count != 1 else ''}, total saving "
                f"${plan.attrs['total_saving_usd']:,.6f} (a plan never costs more than what was recorded)"
            )
        return PlanView(headline, plan, log_clock(subject, plan))
    plan = subject.plan(model, summary_tokens=summary_tokens)
    clock = session_clock(subject, model, plan=plan)
    first = plan.iloc[0]
    state = "warm cache" if first["warm_now"] else "cold cache" if first["context"] else "nothing cached"
    headline = (
        f"the session after turn {subject.turn}: a segment collapse and a tool-result clear, priced now "
        f"({state}) and at the next cold miss"
    )
    return PlanView(headline, plan, clock)
