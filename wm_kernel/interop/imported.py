"""An imported log as a recorded session: history, diff, blame, cache simulation, usage, replay.

:func:`~wm_kernel.interop.log_files.import_log` reads files (see ``wm_kernel.interop.log_files``)
into an :class:`ImportedSession`: one turn per logged request, in send order (file order where the
log has no times). It presents what the instruments read from a recorded Session:

- ``prompt_at(turn)``: a :class:`~wm_kernel.core.prompt.ComposedPrompt` of the request's own
  texts (``wm_kernel.interop.logged_prompt``): tools and system sections in ``cached_content``
  (covered by a cache breakpoint; every tool and system section for OpenAI's automatic prefix
  caching) or ``non_cached_content``, one ``conversation_prefix_items`` entry per message. Elements
  are joined with a blank line the blame map gives to ``(composer)``; a blame map covers every
  character. So ``diff_prompts``, ``first_change`` and ``blame`` work as on a composed prompt.
- ``history``: a real :class:`~wm_kernel.instruments.history.History` recorded from those
  prompts (its ``frame()``, one row per turn and section, as ``Session.history``).
- ``cache_simulation(model)``: the requests played through ``wm_kernel.cachesim`` at the send
  times of the log, with the cache_control marks of the log as breakpoints.
- ``usage``: what the provider reported, per turn, next to the simulated figures; the logged
  usage objects themselves stay in ``requests[i].usage`` in the provider's shape, and
  ``billed_usage()`` reads them with the providers' parser (what
  ``wm_kernel.providers.reconcile.reconcile(log)`` reconciles with ``cache_simulation()``).
- ``replay(turn)``: the logged text of the request, byte for byte (joined from its sections).
- ``compactions()`` and ``compaction_plan()``: the compactions a Claude Code session recorded and
  when each should have run (``wm_kernel.interop.claude_code.compactions``, docs/planner.md).
- ``to_session()``: a live Session replaying the turns (each section a StoredSection trinket, the
  clock at each send time), for the dashboard, budgets and every tool that takes a Session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.engine import Request
from wm_kernel.cachesim.models import Priced
from wm_kernel.cachesim.profile import ModelProfile
from wm_kernel.cachesim.simulation import Simulation, simulate, simulate_each
from wm_kernel.core.prompt import BlameSpan, ComposedPrompt
from wm_kernel.dialects.usage import request_prefix
from wm_kernel.instruments.diff import FirstChange, PromptDiff, diff_prompts, first_change
from wm_kernel.instruments.history import History
from wm_kernel.instruments.history_records import text_digest
from wm_kernel.interop.agent_cache import Inferred, cache_requests, conversation_of, infer, rewrites
from wm_kernel.interop.billing import gen_ai_counts, logged_usage, request_body
from wm_kernel.interop.bodies import Section, first_message, prompt_order
from wm_kernel.interop.claude_code.compactions import compaction_plan, compaction_table
from wm_kernel.interop.formats import ImportIssue, LoggedRequest
from wm_kernel.interop.log_pricing import log_cache_model, request_pricing
from wm_kernel.interop.logged_prompt import cached_names, composed
from wm_kernel.interop.mira import DIALECT as MIRA_TAP  # (registers the mira-tap format)
from wm_kernel.interop.mira.prompt import mira_prompt
from wm_kernel.interop.send_times import as_gap, checked_times, send_times
from wm_kernel.tokens import TokenCounter
from wm_kernel.utils.sequences import shared_start

if TYPE_CHECKING:
    import pandas as pd

    from wm_kernel.dialects.usage import Usage
    from wm_kernel.session import Session

USAGE_COLUMNS = [
    "turn",
    "sent_at",
    "model",
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
]
#: The section name of the part of each request a log does not hold (inferred from its usage).
INFERRED_SECTION = "(not in the log) system prompt and tools"


class ImportedSession:
    """Recorded turns read from another agent's log (see the module docstring).

    Long because: it offers the read side of a Session's API over a log (history, diff, blame, cache
    simulation, pricing, usage, compactions, request context...), one short method each, mostly
    handing on to the module that computes it.
    """

    def __init__(
        self,
        requests: Sequence[LoggedRequest],
        errors: Sequence[ImportIssue] = (),
        *,
        counter: TokenCounter | None = None,
        name: str = "",
        skipped: Mapping[str, int] | None = None,
        gap: timedelta | float | None = None,
        times: Sequence[datetime] | None = None,
    ) -> None:
        # calls a reader marked as not turns of the conversation (MIRA's tap) are kept apart
        background = [r for r in requests if r.background]
        requests = [r for r in requests if not r.background]
        if not requests:
            raise ValueError(
                "an imported session needs at least one request"
                + (f" (the log's {len(background)} calls are all background)" if background else "")
            )
        timed = all(r.sent_at is not None for r in requests)
        ordered = sorted(requests, key=lambda r: r.sent_at) if timed else list(requests)  # type: ignore[arg-type,return-value]
        # usage is read once, here: a request whose usage no shape reads is kept without it, and
        # the log says where (one bad record never refuses the others' figures)
        issues = list(errors)
        self._billed: list[Usage | None] = []
        for index, request in enumerate(ordered):
            where = f"{request.path}:{request.lines[0]}" if request.lines else request.path
            try:
                self._billed.append(logged_usage(request, where=where))
            except ValueError as exc:
                issues.append(
                    ImportIssue(request.path, request.lines[0] if request.lines else 0, f"usage not read: {exc}")
                )
                ordered[index] = dataclasses.replace(request, usage=None, usage_format=None)
                self._billed.append(None)
        self.requests: tuple[LoggedRequest, ...] = tuple(ordered)
        self.errors: tuple[ImportIssue, ...] = tuple(issues)
        #: Ordinary records read and skipped, by type (a transcript's ``progress`` lines...).
        self.skipped: dict[str, int] = dict(sorted((skipped or {}).items()))
        #: Calls of the same log that are not turns of the conversation (MIRA's tap: summaries,
        #: memory extraction, other models and system prompts), in send order.
        self.background: tuple[LoggedRequest, ...] = tuple(
            sorted(background, key=lambda r: r.sent_at)  # type: ignore[arg-type,return-value]
            if all(r.sent_at for r in background)
            else background
        )
        self.name = name
        self.counter = counter if counter is not None else TokenCounter()
        self._prompts: dict[int, ComposedPrompt] = {}
        self._shared: dict[Any, Any] = {}  # records and message texts shared between prompts
        self._history: History | None = None
        #: the spacing of requests the log gives no send time (``import_log(gap=...)``)
        self.gap: timedelta | None = as_gap(gap)
        #: send times given by the user (``import_log(times=...)``), one per request in file order
        self.times: list[datetime] | None = None
        if times is not None:
            self.times = checked_times(times, len(self.requests))
        self._inferred: dict[str, Inferred] | None = None

    # -- the recorded-session interface
    @property
    def turns(self) -> list[int]:
        """The turn numbers: 0 .. len - 1, in send order."""
        return list(range(len(self.requests)))

    @property
    def turn(self) -> int:
        """The last turn (as ``Session.turn``)."""
        return len(self.requests) - 1

    @property
    def recorder(self) -> ImportedSession:
        """What ``session.recorder`` gives on a Session: here the imported session itself
        (``prompt_at``, ``counter``, ``turns``, ``frame()``)."""
        return self

    def request(self, turn: int) -> LoggedRequest:
        """The logged request of ``turn``; ValueError naming the range if absent."""
        if isinstance(turn, bool) or not isinstance(turn, int):
            raise TypeError(f"turn must be an int, got {type(turn).__name__}")
        if not 0 <= turn < len(self.requests):
            raise ValueError(f"no turn {turn}: this log has turns 0..{len(self.requests) - 1}")
        return self.requests[turn]

    def sections(self, turn: int) -> list[Section]:
        """The prompt sections of ``turn`` in the order the provider reads them (no framing)."""
        return prompt_order(self.request(turn).sections)

    def prompt_at(self, turn: int) -> ComposedPrompt:
        """The ComposedPrompt of ``turn`` (module docstring), built once."""
        found = self._prompts.get(turn)
        if found is None:
            found = self._prompts[turn] = self._build_prompt(turn)
        return found

    def _build_prompt(self, turn: int, ordered: list[Section] | None = None) -> ComposedPrompt:
        """The ComposedPrompt of ``turn``, built now (``ordered``: its :meth:`sections`, where the
        caller has them)."""
        request = self.request(turn)
        if request.dialect == MIRA_TAP:
            # MIRA's own markers give back the composer's five keys and sections
            return mira_prompt(request.sections, turn)
        return composed(
            prompt_order(request.sections) if ordered is None else ordered, cached_names(request), turn, self._shared
        )

    @property
    def history(self) -> pd.DataFrame:
        """One row per (turn, section), as ``Session.history`` (History's frame); where the log
        lacks the system prompt and tools, one more row per turn of their size inferred from the
        usage (section ``INFERRED_SECTION``, trinket "(not in the log)", see :meth:`inferred`)."""
        import pandas as pd

        frame = self._recorded().frame()
        inferred = self.inferred()
        if not inferred:
            return frame
        extra = []
        for turn, request in enumerate(self.requests):
            found = inferred.get(conversation_of(request))
            if found is None:
                continue
            row: dict[str, Any] = {c: None for c in frame.columns}
            row.update(
                turn=turn,
                segment=1,
                placement="system",
                section=INFERRED_SECTION,
                trinket="(not in the log)",
                chars=0,
                tokens=found.tokens,
                changed=False,
                cached=True,
                digest="",
                dropped=False,
            )
            extra.append(row)
        out = pd.concat(
            [pd.DataFrame(extra, columns=frame.columns).astype(frame.dtypes.to_dict()), frame], ignore_index=True
        )
        out = out.sort_values("turn", kind="stable", ignore_index=True)
        out.attrs.update(frame.attrs)
        return out

    def frame(self) -> pd.DataFrame:
        """The same as ``history``."""
        return self.history

    def _recorded(self) -> History:
        if self._history is None:
            history = History(counter=self.counter)
            for turn in self.turns:
                history.record(turn, 1, self.prompt_at(turn))
            self._history = history
        return self._history

    # -- instruments
    def diff(self, turn_a: int, turn_b: int | None = None, *, context: int = 3) -> PromptDiff:
        """Section by section, what changed from ``turn_a`` to ``turn_b`` (default: the next)."""
        b = turn_a + 1 if turn_b is None else turn_b
        return diff_prompts(
            self.prompt_at(turn_a),
            self.prompt_at(b),
            old_label=f"turn {turn_a}",
            new_label=f"turn {b}",
            context=context,
        )

    def first_change(self, turn_a: int, turn_b: int | None = None) -> FirstChange | None:
        """The first character where ``turn_b`` (default the next) differs from ``turn_a``: what
        decides how much of a cached prefix survives."""
        b = turn_a + 1 if turn_b is None else turn_b
        return first_change(self.prompt_at(turn_a), self.prompt_at(b))

    def blame(self, turn: int, key: str | None = None) -> list[BlameSpan]:
        """Who wrote each character of ``turn``'s prompt (``ComposedPrompt.blame``)."""
        return self.prompt_at(turn).blame(key)

    def replay(self, turn: int) -> str:
        """The logged text of ``turn``'s request, exactly, joined from its sections."""
        return "".join(s.raw for s in self.request(turn).sections)

    def send_times(
        self, *, times: Sequence[datetime] | None = None, gap: timedelta | float | None = None
    ) -> tuple[list[datetime], str]:
        """Each request's send time and, when any was assumed, a line saying so ("" when the log
        gave them all): :func:`wm_kernel.interop.send_times.send_times` with the ``gap`` and
        ``times`` given to ``import_log`` as defaults."""
        given = times if times is not None else self.times
        return send_times([r.sent_at for r in self.requests], times=given, gap=gap, default=self.gap)

    def inferred(self) -> dict[str, Inferred]:
        """Per conversation (a file, or a subagent's), the system prompt and tools its log does
        not hold, inferred from the billed usage (:class:`~wm_kernel.interop.agent_cache.Inferred`);
        empty when the requests hold their system prompt or tools, or the log has no usage."""
        if self._inferred is None:
            self._inferred = infer(self)
        return self._inferred

    def rewrites(
        self, *, times: Sequence[datetime] | None = None, gap: timedelta | float | None = None
    ) -> dict[int, int]:
        """The turns where the agent changed text its log does not hold, each with the tokens the
        provider read before the change (``wm_kernel.interop.agent_cache.rewrites``)."""
        inferred = self.inferred()
        return rewrites(self, self.send_times(times=times, gap=gap)[0], inferred) if inferred else {}

    def cache_requests(
        self, *, times: Sequence[datetime] | None = None, gap: timedelta | float | None = None
    ) -> list[Request]:
        """One cachesim Request per turn: its sections as blocks (key: name and digest), the log's
        cache marks as breakpoints, sent at the log's times (or ``times``, or spaced ``gap``
        apart where the log has none: :meth:`send_times`).

        Where the log lacks the system prompt and tools (:meth:`inferred`), each request starts
        with one block of their inferred size, its conversation counted with the fitted factor,
        and, as the log has no cache marks, the agent's own caching as its usage shows it
        (Claude Code caches every request): a breakpoint after the system prompt and tools, one
        where the conversation's previous request ended, and one on the last block, at the TTL
        the usage bills."""
        return cache_requests(self, self.send_times(times=times, gap=gap)[0], self.inferred())[0]

    def pricing(self, model: str | ModelProfile | None = None) -> list[Priced]:
        """Per turn, the profile its request is priced with: ``model`` for all when given, else
        the request's own model (a dated snapshot as its family); a model the registry does not
        know is unpriced, simulated with its provider's cache rules, and says so (``Priced.note``;
        ``wm_kernel.interop.log_pricing``)."""
        return request_pricing(self.requests, model)

    def cache_model(self) -> str:
        """The cachesim profile for this log: its first request's model (a dated snapshot as its
        family) if registered, else the provider's default."""
        return log_cache_model(self.requests)

    def cache_simulation(
        self, model: str | None = None, *, times: Sequence[datetime] | None = None, gap: timedelta | float | None = None
    ) -> Simulation:
        """The turns played through the cache simulator, each on its own model (a session that
        switches models is simulated and priced per request), or all on ``model``; the result's
        ``turns`` gains a ``turn`` column, and ``assumptions`` says what the log did not (assumed
        send times, the inferred system prompt, an unpriced model)."""
        when, assumed = self.send_times(times=times, gap=gap)
        requests, warmups = cache_requests(self, when, self.inferred())
        pricing = self.pricing(model)
        if model is not None and not warmups:
            sim = simulate(requests, pricing[0].profile)
        else:
            sim = simulate_each(requests, [p.profile for p in pricing], warmups=warmups)
        sim.turns.insert(0, "turn", self.turns)
        sim.assumptions.extend(self.assumptions(pricing, assumed))
        if sim.counter is None:
            sim.counter = self.counter  # what counted the log's sections
        return sim

    def assumptions(self, pricing: Sequence[Priced] | None = None, assumed: str | None = None) -> list[str]:
        """What every view of this log says it assumed: send times, the inferred system prompt
        and tools (and the tokenizer factor fitted with them), unpriced models."""
        lines = []
        if assumed is None:
            _, assumed = self.send_times()
        if assumed:
            lines.append(assumed)
        for found in self.inferred().values():
            where = f" ({Path(found.conversation).name})" if len(self.inferred()) > 1 else ""
            line = f"{found.label}{where}"
            if found.factor != 1.0:
                line += (
                    f"; its conversation counted x{found.factor:.3f} (tokenizer factor fitted to the usage of "
                    f"{found.requests} requests)"
                )
            line += (
                f"; cached as the usage shows the agent caching (breakpoints near the end of the conversation, "
                f"{found.ttl} TTL)"
            )
            if found.before:
                line += (
                    f"; its first request read {found.before:,} tokens cached before the log, modelled as "
                    f"cached just before it"
                )
            lines.append(line)
        notes = sorted({p.note for p in (pricing if pricing is not None else self.pricing()) if p.note})
        lines.extend(notes)
        return lines

    def billed_usage(self) -> list[Usage | None]:
        """Per turn, the usage the log recorded as a :class:`~wm_kernel.dialects.usage.Usage`
        (None where it has none), with the request's id and prefix digests where the log has them
        (``wm_kernel.interop.billing``). A usage object no shape reads was dropped at import and
        is in :attr:`errors`, naming the file and line."""
        return list(self._billed)

    def request_prefixes(self) -> list[dict[str, str]]:
        """Per turn, the digests of the request's cacheable prefix (tools, cached system text,
        parameters: ``wm_kernel.dialects.usage.request_prefix``) where the log holds the body,
        else an empty dict."""
        return [request_prefix(body) if (body := request_body(r)) is not None else {} for r in self.requests]

    def request_context(
        self, *, times: Sequence[datetime] | None = None, gap: timedelta | float | None = None
    ) -> list[dict[str, Any]]:
        """Per turn, what a reconciliation tells causes with: its ``conversation`` (its own
        cache), whether it is a ``subagent``'s, its ``model``, the digest of its
        ``first_message`` (a new one in the same conversation: compacted or a new chain) and,
        where the agent changed text its log does not hold, ``rewritten``: the tokens the
        provider read before the change (:meth:`rewrites`, at ``times`` or ``gap``)."""
        rewritten = self.rewrites(times=times, gap=gap)
        out = []
        for turn, request in enumerate(self.requests):
            first = first_message(request.sections)
            out.append(
                {
                    "conversation": conversation_of(request),
                    "subagent": _subagent(request),
                    "model": request.model,
                    "first_message": text_digest(first.text).hex() if first is not None else None,
                    "rewritten": rewritten.get(turn),
                }
            )
        return out

    def compactions(self) -> pd.DataFrame:
        """One row per compaction the log recorded (``wm_kernel.interop.claude_code.compactions``)."""
        return compaction_table(self)

    def compaction_plan(self) -> pd.DataFrame:
        """When each compaction should have run, and what it saves (``wm_kernel.interop.claude_code.compactions``)."""
        return compaction_plan(self)

    @property
    def request_ids(self) -> list[str | None]:
        """Per turn, the provider's request id where the log keeps one."""
        return [r.request_id for r in self.requests]

    @property
    def usage(self) -> pd.DataFrame:
        """Per turn, the usage the log recorded, in one vocabulary (``USAGE_COLUMNS``;
        ``input_tokens`` counts every input token, cached ones included, as
        ``gen_ai.usage.input_tokens`` does); missing where the log has none."""
        import pandas as pd

        rows = []
        for turn, (request, billed) in enumerate(zip(self.requests, self.billed_usage(), strict=True)):
            counts = gen_ai_counts(billed) if billed is not None else {}
            rows.append((turn, request.sent_at, request.model, *(counts.get(c) for c in USAGE_COLUMNS[3:])))
        frame = pd.DataFrame.from_records(rows, columns=USAGE_COLUMNS)
        return frame.astype({c: "Int64" for c in USAGE_COLUMNS[3:]})

    def summary(self, model: str | None = None) -> pd.DataFrame:
        """One row per turn: when it was sent, its sections and tokens, the section holding the
        first character that changed since the turn before (what a cached prefix survives up to),
        the simulated cache outcome and, where the log has usage, what the provider reported."""
        import pandas as pd

        try:
            sim = self.cache_simulation(model).turns
        except ValueError:
            if all(r.sent_at for r in self.requests) or self.gap is not None:
                raise
            sim = None
        pricing = self.pricing(model)
        usage = self.usage
        # the columns read per turn taken out once (an element of a pandas column read per turn
        # went through the frame each time, at a cost that grew with it: the square of the log)
        logged = {c: usage[c].array for c in ("cache_read_input_tokens", "cache_creation_input_tokens")}
        simulated = (
            {c: sim[c].array for c in ("at", "status", "cache_read_input_tokens", "cache_creation_input_tokens")}
            if sim is not None
            else {}
        )
        rows = []
        # each turn's token sum carries on from the sections it shares with the turn before (a
        # conversation repeats them): a summary costs what each turn adds, not the square of it;
        # and only two turns' prompts are held at a time (a prompt holds its whole conversation:
        # kept for every turn, they would fill memory with the square of it)
        before: list[Section] = []
        sums: list[int] = []
        previous: ComposedPrompt | None = None
        for turn in self.turns:
            ordered = self.sections(turn)
            prompt = self._prompts.get(turn)
            if prompt is None:
                prompt = self._build_prompt(turn, ordered)
            change = first_change(previous, prompt) if previous is not None else None
            previous = prompt
            del sums[shared_start(ordered, before) :]
            total = sums[-1] if sums else 0
            for section in ordered[len(sums) :]:
                total += self.counter.count(section.text)
                sums.append(total)
            before = ordered
            row: dict[str, Any] = {
                "turn": turn,
                "sent_at": (simulated["at"][turn].to_pydatetime() if sim is not None else self.requests[turn].sent_at),
                "sections": len(ordered),
                "tokens": total,
                "first_change": "" if change is None else (change.section or ""),
            }
            if sim is not None:
                row.update(
                    sim_status=simulated["status"][turn],
                    sim_read=int(simulated["cache_read_input_tokens"][turn]),
                    sim_written=int(simulated["cache_creation_input_tokens"][turn]),
                )
            row.update(
                logged_read=logged["cache_read_input_tokens"][turn],
                logged_written=logged["cache_creation_input_tokens"][turn],
                priced_as=pricing[turn].profile.name if pricing[turn].priced else "unpriced",
            )
            rows.append(row)
        return pd.DataFrame(rows)

    def to_session(self, **options: Any) -> Session:
        """A Session that replays the turns (see ``wm_kernel.interop.live``)."""
        from wm_kernel.interop.live import replay_session

        return replay_session(self, **options)

    def __len__(self) -> int:
        return len(self.requests)

    def __repr__(self) -> str:
        formats = sorted({r.dialect for r in self.requests})
        return (
            f"<ImportedSession {self.name or '-'} turns={len(self.requests)} format={','.join(formats)} "
            f"errors={len(self.errors)}>"
        )


def _subagent(request: LoggedRequest) -> bool:
    """Whether ``request`` is a subagent's (a sidechain, or a file under ``subagents/``)."""
    if {"subagent", "sidechain"} & set(getattr(request, "marks", ())):
        return True
    for name in ("subagent", "sidechain", "is_sidechain"):
        value = getattr(request, name, None)
        if isinstance(value, bool):
            return value
    return "subagents" in Path(request.path).parts
