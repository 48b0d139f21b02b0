"""An imported log as a recorded session: history, diff, blame, cache simulation, usage, replay.

:func:`import_log` reads files (see ``wm_kernel.interop.formats``) into an
:class:`ImportedSession`: one turn per logged request, in send order (file order where the log has
no times). It presents what the instruments read from a recorded Session:

- ``prompt_at(turn)``: a :class:`~wm_kernel.core.prompt.ComposedPrompt` of the request's own
  texts: tools and system sections in ``cached_content`` (covered by a cache breakpoint; every
  tool and system section for OpenAI's automatic prefix caching) or ``non_cached_content``, one
  ``conversation_prefix_items`` entry per message. Elements are joined with a blank line the blame
  map gives to ``(composer)``; a blame map covers every character. So ``diff_prompts``,
  ``first_change`` and ``blame`` work as on a composed prompt.
- ``history``: a real :class:`~wm_kernel.instruments.history.History` recorded from those
  prompts (its ``frame()``, one row per turn and section, as ``Session.history``).
- ``cache_simulation(model)``: the requests played through ``wm_kernel.cachesim`` at the send
  times of the log, with the cache_control marks of the log as breakpoints.
- ``usage``: what the provider reported, per turn, next to the simulated figures; the logged
  usage objects themselves stay in ``requests[i].usage`` in the provider's shape, and
  ``billed_usage()`` reads them with the providers' parser (what
  ``wm_kernel.providers.reconcile.reconcile(log)`` reconciles with ``cache_simulation()``).
- ``replay(turn)``: the logged text of the request, byte for byte (joined from its sections).
- ``to_session()``: a live Session replaying the turns (each section a StoredSection trinket, the
  clock at each send time), for the dashboard, budgets and every tool that takes a Session.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wm_kernel.cachesim.engine import Block, Request
from wm_kernel.cachesim.models import MODELS
from wm_kernel.cachesim.simulation import Simulation, simulate
from wm_kernel.core.prompt import BlameData, BlameSpan, ComposedPrompt, SectionRecord
from wm_kernel.dialects.registry import get_dialect, get_log_format, known_name, log_formats, sniff_log_format
from wm_kernel.dialects.usage import request_prefix
from wm_kernel.instruments.diff import FirstChange, PromptDiff, diff_prompts, first_change
from wm_kernel.instruments.history import History
from wm_kernel.instruments.history_records import text_digest
from wm_kernel.interop.billing import gen_ai_counts, logged_usage, request_body
from wm_kernel.interop.bodies import Section, prompt_order
from wm_kernel.interop.formats import ImportIssue, LoggedRequest, detect
from wm_kernel.interop.mira_tap import DIALECT as MIRA_TAP  # (registers the mira-tap format)
from wm_kernel.interop.mira_tap import mira_prompt
from wm_kernel.interop.otlp import read_otlp as _read_otlp  # noqa: F401  (registers the otlp format)
from wm_kernel.interop.split import Splitter
from wm_kernel.tokens import TokenCounter

if TYPE_CHECKING:
    import pandas as pd

    from wm_kernel.dialects.usage import Usage
    from wm_kernel.session import Session

#: Blank line between two elements of one prompt key (owned by "(composer)" in the blame map).
ELEMENT_SEPARATOR = "\n\n"
_LAYER = {"tool": "tools", "system": "system", "message": "messages"}
#: The cache simulator's model when neither the log's own nor its wire's default is a registered profile.
FALLBACK_MODEL = "claude-sonnet-4-6"
USAGE_COLUMNS = ["turn", "sent_at", "model", "input_tokens", "cache_read_input_tokens",
                 "cache_creation_input_tokens", "output_tokens"]


class ImportedSession:
    """Recorded turns read from another agent's log (see the module docstring)."""

    def __init__(self, requests: Sequence[LoggedRequest], errors: Sequence[ImportIssue] = (), *,
                 counter: TokenCounter | None = None, name: str = "") -> None:
        # calls a reader marked as not turns of the conversation (MIRA's tap) are kept apart
        background = [r for r in requests if r.background]
        requests = [r for r in requests if not r.background]
        if not requests:
            raise ValueError("an imported session needs at least one request"
                             + (f" (the log's {len(background)} calls are all background)" if background else ""))
        timed = all(r.sent_at is not None for r in requests)
        ordered = sorted(requests, key=lambda r: r.sent_at) if timed else list(requests)  # type: ignore[arg-type,return-value]
        self.requests: tuple[LoggedRequest, ...] = tuple(ordered)
        self.errors: tuple[ImportIssue, ...] = tuple(errors)
        #: Calls of the same log that are not turns of the conversation (MIRA's tap: summaries,
        #: memory extraction, other models and system prompts), in send order.
        self.background: tuple[LoggedRequest, ...] = tuple(
            sorted(background, key=lambda r: r.sent_at) if all(r.sent_at for r in background)  # type: ignore[arg-type,return-value]
            else background)
        self.name = name
        self.counter = counter if counter is not None else TokenCounter()
        self._prompts: dict[int, ComposedPrompt] = {}
        self._history: History | None = None

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
            request = self.request(turn)
            if request.dialect == MIRA_TAP:
                # MIRA's own markers give back the composer's five keys and sections
                found = self._prompts[turn] = mira_prompt(request.sections, turn)
            else:
                found = self._prompts[turn] = _composed(prompt_order(request.sections),
                                                        _cached_names(request), turn)
        return found

    @property
    def history(self) -> pd.DataFrame:
        """One row per (turn, section), as ``Session.history`` (History's frame)."""
        return self._recorded().frame()

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
        return diff_prompts(self.prompt_at(turn_a), self.prompt_at(b), old_label=f"turn {turn_a}",
                            new_label=f"turn {b}", context=context)

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

    def cache_requests(self, *, times: Sequence[datetime] | None = None) -> list[Request]:
        """One cachesim Request per turn: its sections as blocks (key: name and digest), the log's
        cache marks as breakpoints, sent at the log's times (or ``times``)."""
        when = list(times) if times is not None else [r.sent_at for r in self.requests]
        if len(when) != len(self.requests):
            raise ValueError(f"times has {len(when)} entries for {len(self.requests)} turns")
        missing = [turn for turn, at in enumerate(when) if at is None]
        if missing:
            raise ValueError(f"turn {missing[0]} has no send time in the log; pass times=")
        requests = []
        for turn, at in enumerate(when):
            assert at is not None
            model = self.requests[turn].model
            blocks = [Block(f"{s.name}:{text_digest(s.text).hex()}", self.counter.count(s.text),
                            breakpoint=s.cache, layer=_LAYER[s.kind],
                            label=f"{s.name} ({s.trinket})" if s.trinket else s.name)
                      for s in self.sections(turn)]
            requests.append(Request(at, blocks, params={"model": model} if model else None))
        return requests

    def cache_model(self) -> str:
        """The cachesim profile for this log: its model if registered, else the provider's default."""
        first = self.requests[0]
        if first.model in MODELS:
            return str(first.model)
        default = get_dialect(first.provider).default_model if known_name(first.provider) else ""
        return default if default in MODELS else FALLBACK_MODEL

    def cache_simulation(self, model: str | None = None, *,
                         times: Sequence[datetime] | None = None) -> Simulation:
        """The turns played through the cache simulator (``cache_model()`` unless ``model``); the
        result's ``turns`` gains a ``turn`` column."""
        sim = simulate(self.cache_requests(times=times), model or self.cache_model())
        sim.turns.insert(0, "turn", self.turns)
        return sim

    def billed_usage(self) -> list[Usage | None]:
        """Per turn, the usage the log recorded as a :class:`~wm_kernel.dialects.usage.Usage`
        (None where it has none), with the request's id and prefix digests where the log has them
        (``wm_kernel.interop.billing``). A usage object the parser refuses is a ValueError naming
        the file and line."""
        out = []
        for request in self.requests:
            where = f"{request.path}:{request.lines[0]}" if request.lines else request.path
            out.append(logged_usage(request, where=where))
        return out

    def request_prefixes(self) -> list[dict[str, str]]:
        """Per turn, the digests of the request's cacheable prefix (tools, cached system text,
        parameters: ``wm_kernel.dialects.usage.request_prefix``) where the log holds the body,
        else an empty dict."""
        return [request_prefix(body) if (body := request_body(r)) is not None else {} for r in self.requests]

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

        sim = self.cache_simulation(model).turns if all(r.sent_at for r in self.requests) else None
        usage = self.usage
        rows = []
        for turn in self.turns:
            change = self.first_change(turn - 1, turn) if turn else None
            row: dict[str, Any] = {
                "turn": turn, "sent_at": self.requests[turn].sent_at, "sections": len(self.sections(turn)),
                "tokens": sum(self.counter.count(s.text) for s in self.sections(turn)),
                "first_change": "" if change is None else (change.section or "")}
            if sim is not None:
                row.update(sim_status=sim["status"].iloc[turn],
                           sim_read=int(sim["cache_read_input_tokens"].iloc[turn]),
                           sim_written=int(sim["cache_creation_input_tokens"].iloc[turn]))
            row.update(logged_read=usage.loc[turn, "cache_read_input_tokens"],
                       logged_written=usage.loc[turn, "cache_creation_input_tokens"])
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
        return (f"<ImportedSession {self.name or '-'} turns={len(self.requests)} format={','.join(formats)} "
                f"errors={len(self.errors)}>")


def _cached_names(request: LoggedRequest) -> set[str]:
    """The sections in the cached prefix: up to the last cache mark (Anthropic), every tool and
    system section under automatic prefix caching (OpenAI)."""
    ordered = prompt_order(request.sections)
    if known_name(request.provider) and get_dialect(request.provider).whole_prefix_cached:
        return {s.name for s in ordered if s.kind != "message"}
    marked = [i for i, s in enumerate(ordered) if s.cache]
    return {s.name for s in ordered[:marked[-1] + 1]} if marked else set()


def _composed(sections: list[Section], cached: set[str], turn: int) -> ComposedPrompt:
    records = [SectionRecord(s.name, s.placement or "system", s.text, s.name in cached, s.trinket)
               for s in sections]
    keys: dict[str, list[tuple[str, int]]] = {"cached_content": [], "non_cached_content": []}
    items: list[list[tuple[str, int]]] = []
    previous: str | None = None
    for index, section in enumerate(sections):
        if section.kind == "message":
            if section.element != previous:
                items.append([])
            target = items[-1]
        else:
            target = keys["cached_content" if section.name in cached else "non_cached_content"]
            if target and section.element != previous:
                target.append((ELEMENT_SEPARATOR, -1))
        target.append((section.text, index))
        previous = section.element
    blame: BlameData = {}
    texts: dict[str, str] = {}
    for key, parts in [*keys.items(), *((f"conversation_prefix_items[{i}]", p) for i, p in enumerate(items))]:
        texts[key] = "".join(text for text, _ in parts)
        blame[key] = tuple((len(text), owner) for text, owner in parts if text)
    return ComposedPrompt(texts["cached_content"], texts["non_cached_content"],
                          [texts[f"conversation_prefix_items[{i}]"] for i in range(len(items))],
                          sections=records, turn=turn, blame=blame)


def read_file(path: str | Path, *, format: str | None = None,
              splitter: Splitter | None = None) -> tuple[list[LoggedRequest], list[ImportIssue]]:
    """The requests of one log file and the issues of the records that could not be read.

    ValueError (naming the file and line) when the file cannot be imported at all: no such file,
    an unknown format, no record readable."""
    name = str(path)
    if format is not None and format not in log_formats():
        raise ValueError(f"unknown format {format!r}; formats: {', '.join(log_formats())}")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{name}: cannot read the file ({exc})") from None
    split = splitter or Splitter()
    whole = format if format is not None else sniff_log_format(text)
    if whole is not None and get_log_format(whole).read_file is not None:
        whole_file = get_log_format(whole).read_file
        assert whole_file is not None
        result: tuple[list[LoggedRequest], list[ImportIssue]] = whole_file(name, text, split)
        return result
    issues: list[ImportIssue] = []
    reader: Any = None
    chosen = format
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            issues.append(ImportIssue(name, number, f"malformed JSON: {exc.msg} at column {exc.colno}"))
            continue
        if chosen is None:
            chosen = detect(value)
            if chosen is None:
                issues.append(ImportIssue(name, number, "unknown format: not a request body, transcript "
                                                        f"line or OTLP document ({', '.join(log_formats())})"))
                continue
        if reader is None:
            make = get_log_format(chosen).reader
            if make is None:
                raise ValueError(f"{name}: the {chosen} format is read as a whole file, not line by line")
            reader = make(name, split)
        try:
            reader.feed(number, line, value)
        except (ValueError, KeyError, TypeError) as exc:
            issues.append(ImportIssue(name, number, str(exc)))
    requests = reader.finish() if reader is not None else []
    if not requests:
        first = issues[0] if issues else ImportIssue(name, 1, "no requests in the file")
        raise ValueError(f"{first} (nothing imported)")
    return requests, issues


def import_log(*paths: str | Path, format: str | None = None, splitter: Splitter | None = None,
               rules: Iterable[str] = (), counter: TokenCounter | None = None) -> ImportedSession:
    """An :class:`ImportedSession` of every request in ``paths`` (one conversation, in send order).

    ``format`` forces a format (default: detected per file); ``splitter`` or ``rules`` (regular
    expressions, each match starting a section) add your own splitting. Records that cannot be
    read are in the result's ``errors`` (file, line, why); the rest imports."""
    if not paths:
        raise ValueError("import_log needs at least one file")
    if splitter is None:
        splitter = Splitter(list(rules))
    requests: list[LoggedRequest] = []
    issues: list[ImportIssue] = []
    for path in paths:
        found, problems = read_file(path, format=format, splitter=splitter)
        requests += found
        issues += problems
    names = ", ".join(Path(p).name for p in paths)
    return ImportedSession(requests, issues, counter=counter, name=names)
