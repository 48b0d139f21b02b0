"""Per-turn record of every composed prompt, stored compactly in the session's state store.

A :class:`History` keeps, for each recorded turn, every section of the composed prompt: its text,
placement, trinket, cache policy and whether the layout listed it. It is an observer: attached to a
Session (:meth:`History.attach`, which a Session does by default), it records each new value of the
session's ``composed`` trait; ``session.recorder`` is the attached History and ``session.history``
its :meth:`History.frame`.

Storage
-------
Each distinct section text is kept once, interned by its blake2b digest, and each distinct section
*entry* (name, placement, trinket, cache policy, straggler flag, text) once as well; a turn is a tuple
of references to entries. A 10,000-turn run in which most sections never change holds each unchanged
text once, not 10,000 times. Recording is cheap per compose: a section whose text is the same object
as (or equal to) the one recorded last time for that name is matched without hashing; only new texts
are digested. :meth:`History.stats` measures the bytes used per turn.

A turn composed several times keeps its **last** compose (a re-compose replaces the record).

Persistence
-----------
A history lives in its store (any :class:`~wm_kernel.stores.embedded.StateStore` but the in-process
MemoryStore, which would only copy what the History holds anyway: a SQLite file...) under the
hashes declared in :data:`SCHEMA`: the user's texts by digest (``history-texts:{user_id}``) and
entries by id (``history-entries:{user_id}``; both content-addressed, so two writers never
disagree, and per user, so a per-user ACL can run a session and no user's store writes reach
another's history) and one hash per conversation, ``history:{user_id}:{continuum_id}`` (ids
encoded by :mod:`wm_kernel.stores.keys`), one field per turn, with the time it was composed. A
text read back is checked against its digest: a rewritten text is a ValueError, never shown.
Histories written before issue 34 (schema version 1: texts and entries in the shared
``history:texts`` and ``history:entries``) are still read. Every record
carries ``"v": 1``. A History on a store that holds the same pair loads the earlier turns. Each
compose is written in one store transaction, each new text and entry once. The notification centre's frame
(namespace and title, carried by the ComposedPrompt) is stored only when it differs from the
composer's default.
A Session created without ``continuum_id`` gets a new unique one (``continuum-`` and 12 hex
digits), so two Sessions, in one process or two, never share a history by accident; pass
``continuum_id`` to resume a conversation. A history never replaces a record another one wrote:
recording a turn that another History of the same conversation has recorded (or re-recorded) in
the store is a :class:`HistoryConflictError`, and nothing is recorded, in memory or in the store.

Each distinct section text is kept once, so a turn costs its section references, not its text
(docs/performance.md has the figures).

Public API
----------
``History(store=None, user_id="notebook", continuum_id="", counter=None)``
``History.attach(session)``, ``History.of(session)``, ``detach()``   observing a Session
``record(turn, segment, composed, segment_turn=None)``   called for each compose of the session
``frame()``        DataFrame: turn, segment, placement, section, trinket, chars, tokens, changed,
                   cached, digest, priority, dropped (one row per (turn, section), output order
                   within a turn; ``trinket`` is missing (NA) for the base prompt; ``digest`` is
                   the text's blake2b-128 in hex, equal texts have equal digests; ``priority`` is
                   the section's priority when composed (NA if not known); sections a token
                   budget dropped follow the turn's sections as rows with
                   ``dropped`` True, the ``tokens`` they would have cost, no placement, chars 0;
                   ``reply`` and ``usage`` are the turn's exchange's reply text and billed usage
                   dict, None on turns that sent nothing)
``prompt_at(turn)``  the ComposedPrompt of that turn, rebuilt (five keys and ``sections``)
``turns``, ``len(history)``, ``last_position()`` (turn, segment, segment_turn of the last record)
``texts()``        digest -> text of every distinct stored text
``stats()``        sizes: distinct texts, bytes of texts and records, bytes per turn
``counter``        the TokenCounter for the ``tokens`` column (a Session's ``token_counter``;
                   ``frame().attrs["tokens"]`` is its label)
``record_exchange(exchange)``, ``exchanges()``, ``exchange_at(turn)``, ``conversation()``
                   what was sent to a model and its reply (``wm_kernel.instruments.exchange``);
                   the frame's ``reply`` and ``usage`` columns show them on the turn's rows

``changed`` is True when the section's text differs from the previous recorded turn's section of the
same name, or the section was absent there (every section of the first recorded turn is changed).

Examples
--------
>>> from wm_kernel.tokens import EstimateTokenizer, TokenCounter
>>> from wm_kernel.core.composer import SystemPromptComposer
>>> c = SystemPromptComposer(); c.set_base_prompt("You help.")
>>> h = History(counter=TokenCounter(EstimateTokenizer()))
>>> for turn in range(3):
...     c.add_section("datetime_section", f"<t>{turn}</t>")
...     h.record(turn, 1, c.compose())
>>> print(h.frame()[["turn", "section", "chars", "changed"]].to_string(index=False))
 turn          section  chars  changed
    0      base_prompt    252     True
    0 datetime_section      8     True
    1      base_prompt    252    False
    1 datetime_section      8     True
    2      base_prompt    252    False
    2 datetime_section      8     True
>>> h.stats()["distinct_texts"]
4
>>> h.prompt_at(1)["notification_center"].splitlines()[4]
'<t>1</t>'
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from wm_kernel.core.composer import DEFAULT_HUD_TITLE, DEFAULT_NAMESPACE, SystemPromptComposer
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.prompt import ComposedPrompt, OmittedSection, SectionRecord
from wm_kernel.core.prompt_dict import PLACEMENTS
from wm_kernel.instruments.attached import AttachedInstrument
from wm_kernel.instruments.exchange import Exchange
from wm_kernel.instruments.exchange_log import ExchangeLog
from wm_kernel.instruments.history.frame import history_frame
from wm_kernel.instruments.history.store import StoredHistory
from wm_kernel.instruments.history_records import Budget as _Budget
from wm_kernel.instruments.history_records import Compose, Entry, text_digest
from wm_kernel.stores.embedded import MemoryStore, StateStore
from wm_kernel.tokens import TokenCounter
from wm_kernel.utils.checks import check_int

if TYPE_CHECKING:
    import pandas as pd

# the record format (keys, Compose, Entry, digests) lives in history_records, its reading and
# writing in .store, the frame's columns in .frame
__all__ = ["History", "RecordableSession"]


class RecordableSession(Protocol):
    """What a History observes (a Session is one): the store and ids its records are keyed by, the
    turn and segment counters, and a ``composed`` trait to observe (traitlets' ``observe``)."""

    @property
    def store(self) -> StateStore: ...

    @property
    def user_id(self) -> str: ...

    @property
    def continuum_id(self) -> str: ...

    @property
    def turn(self) -> int: ...

    @property
    def segment_number(self) -> int: ...

    @property
    def segment_turn(self) -> int: ...

    def observe(self, handler: Any, names: Any = ..., type: Any = ...) -> None: ...

    def unobserve(self, handler: Any, names: Any = ..., type: Any = ...) -> None: ...


class History(AttachedInstrument):
    """Every compose of a conversation, by turn (see the module docstring).

    Parameters
    ----------
    store:
        The state store it keeps its records in (see :data:`SCHEMA`), so that a History on the same
        store later (a restart, another process) finds them. A MemoryStore (the default) is not
        written: the History keeps everything in memory itself.
    user_id, continuum_id:
        Identify this history in a shared file.
    counter:
        The TokenCounter for the ``tokens`` column (default: one over ``default_tokenizer()``,
        created on first use).
    """

    #: The History attached to each live Session (History.attach); a Session that goes away takes
    #: its entry with it.
    _attached: ClassVar[weakref.WeakKeyDictionary[RecordableSession, History]] = weakref.WeakKeyDictionary()

    def __init__(
        self,
        store: StateStore | None = None,
        *,
        user_id: str = "notebook",
        continuum_id: str = "",
        counter: TokenCounter | None = None,
    ) -> None:
        if not isinstance(user_id, str) or not isinstance(continuum_id, str):
            raise TypeError("user_id and continuum_id must be strings")
        if counter is not None and not isinstance(counter, TokenCounter):
            raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        self.store: StateStore = store if store is not None else MemoryStore()
        self.user_id = user_id
        self.continuum_id = continuum_id
        self._counter = counter
        self._records: dict[int, Compose] = {}
        # turn -> (section -> priority, sections a token budget dropped)
        self._budgets: dict[int, tuple[Mapping[str, int], tuple[OmittedSection, ...]]] = {}
        self._in_order = True
        self._max_turn = -1
        self._texts: dict[bytes, str] = {}
        self._entries: dict[tuple[str, str, str | None, bool, bool, bytes], Entry] = {}
        self._entries_by_id: dict[str, Entry] = {}
        super().__init__()
        self._last: dict[str, Entry] = {}  # section name -> last recorded entry (the fast path)
        self._last_entries: tuple[Entry, ...] = ()
        # the last frame and the tokenizer that counted its tokens column
        self._frame_cache: tuple[pd.DataFrame, object] | None = None
        # a MemoryStore lives no longer than this History, which holds every record itself: writing
        # them there too would only copy them (and its transactions copy whole hashes)
        persistent = not isinstance(self.store, MemoryStore)
        self._stored = StoredHistory(self.store, user_id, continuum_id) if persistent else None
        self._exchange_log = ExchangeLog(self.store, user_id, continuum_id, persistent=persistent)
        if self._stored is not None:
            self._load(self._stored)

    # -- observing a Session
    @classmethod
    def attach(cls, session: RecordableSession, *, counter: TokenCounter | None = None) -> History:
        """A History of ``session``'s conversation (in its store, so earlier turns load) that
        records every compose from now on; :meth:`of` finds it. One History per session: attaching
        a second one is a ValueError."""
        cls._refuse_second(session, "this session already has a History attached (History.of(session))")
        if counter is None:  # the session's one counter, if it has one
            counter = getattr(session, "token_counter", None)
        history = cls(session.store, user_id=session.user_id, continuum_id=session.continuum_id, counter=counter)
        history._observe(session)
        return history

    @classmethod
    def of(cls, session: RecordableSession) -> History:
        """The History attached to ``session``; one is attached now if none is (it records the
        composes from now on, and whatever the store already holds)."""
        found = cls.find(session)
        return found if found is not None else cls.attach(session)

    def _on_composed(self, change: Any) -> None:
        composed, session = change["new"], change["owner"]
        if composed is not None:
            self.record(
                session.turn,
                session.segment_number,
                composed,
                segment_turn=session.segment_turn,
                at=session.clock.now(),
            )

    # -- reading
    @property
    def counter(self) -> TokenCounter:
        """The TokenCounter behind the ``tokens`` column."""
        if self._counter is None:
            self._counter = TokenCounter()
        return self._counter

    @counter.setter
    def counter(self, counter: TokenCounter) -> None:
        if not isinstance(counter, TokenCounter):
            raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        self._counter = counter
        self._frame_cache = None

    @property
    def turns(self) -> list[int]:
        """Recorded turns, ascending."""
        return [c.turn for c in self.composes()]

    def __len__(self) -> int:
        return len(self._records)

    def composes(self) -> Iterator[Compose]:
        """Recorded composes in turn order (the last compose of each turn)."""
        if not self._in_order:
            self._records = dict(sorted(self._records.items()))
            self._in_order = True
        return iter(tuple(self._records.values()))

    def times(self) -> dict[int, datetime]:
        """When each recorded turn was (last) composed, for the turns whose time is known: every
        turn recorded from a Session (records of earlier versions carry none)."""
        return {c.turn: c.at for c in self.composes() if c.at is not None}

    def last_position(self) -> tuple[int, int, int] | None:
        """(turn, segment, segment_turn) of the latest recorded turn, or None if empty."""
        if not self._records:
            return None
        c = self._records[self._max_turn]
        return (c.turn, c.segment, c.segment_turn)

    def texts(self) -> dict[str, str]:
        """Every distinct stored text by its digest (hex)."""
        return {digest.hex(): text for digest, text in self._texts.items()}

    def compose_at(self, turn: int) -> Compose:
        """The raw record of ``turn``; ValueError naming the recorded range if absent."""
        if isinstance(turn, bool) or not isinstance(turn, int):
            raise TypeError(f"turn must be an int, got {type(turn).__name__}")
        found = self._records.get(turn)
        if found is None:
            if not self._records:
                raise ValueError(f"turn {turn} was not recorded (nothing recorded yet)")
            raise ValueError(
                f"turn {turn} was not recorded (recorded turns: {min(self._records)}"
                f"..{max(self._records)}, {len(self._records)} in all)"
            )
        return found

    def prompt_at(self, turn: int) -> ComposedPrompt:
        """The ComposedPrompt of ``turn`` (its last compose), rebuilt from the stored sections.

        The five keys are exactly what was composed; ``sections`` holds the section records;
        ``omitted`` is empty (not recorded)."""
        record = self.compose_at(turn)
        placements: dict[str, list[str]] = {p: [] for p in PLACEMENTS}
        for entry in record.entries:
            placements[entry.placement].append(entry.name)
        namespace, title = record.hud_frame or (DEFAULT_NAMESPACE, DEFAULT_HUD_TITLE)
        composer = SystemPromptComposer(Layout(placements, name="recorded"), namespace=namespace, hud_title=title)
        for entry in record.entries:
            composer.add_section(entry.name, entry.text, entry.cache_policy, entry.trinket)
        rebuilt = composer.compose()
        # the rebuilt records are the entries' in the same order, so its blame map holds as it is
        return ComposedPrompt(
            **rebuilt.as_dict(),
            sections=[e.to_record() for e in record.entries],
            turn=record.turn,
            hud_frame=rebuilt.hud_frame,
            blame=rebuilt._blame,
        )

    def frame(self) -> pd.DataFrame:
        """pandas DataFrame, one row per (turn, section); see the module docstring for columns."""
        counter = self.counter
        if self._frame_cache is not None and self._frame_cache[1] is counter.tokenizer:
            return self._frame_cache[0].copy()
        df = history_frame(self.composes(), self._budgets, self._exchange_log.by_turn, counter)
        self._frame_cache = (df, counter.tokenizer)
        return df.copy()

    def stats(self) -> dict[str, Any]:
        """What the history holds and its size in bytes (Python object sizes, texts counted once).

        Keys: turns, rows (sections over all turns), distinct_texts, distinct_entries, text_bytes
        (UTF-8 bytes of the distinct texts), naive_text_bytes (what one copy per turn would take),
        memory_bytes (texts, entries, records and index as Python objects) and bytes_per_turn
        (memory_bytes / turns)."""
        turns = len(self._records)
        rows = 0
        naive = 0
        memory = sys.getsizeof(self._records) + sys.getsizeof(self._texts) + sys.getsizeof(self._entries)
        seen_tuples: set[int] = set()
        for record in self._records.values():
            rows += len(record.entries)
            naive += sum(len(e.text.encode("utf-8", "surrogatepass")) for e in record.entries)
            memory += sys.getsizeof(record) + sys.getsizeof(record.turn)
            if id(record.entries) not in seen_tuples:
                seen_tuples.add(id(record.entries))
                memory += sys.getsizeof(record.entries)
        text_bytes = 0
        for digest, text in self._texts.items():
            text_bytes += len(text.encode("utf-8", "surrogatepass"))
            memory += sys.getsizeof(text) + sys.getsizeof(digest)
        memory += sum(sys.getsizeof(e) for e in self._entries.values())
        memory += sys.getsizeof(self._entries_by_id)
        result: dict[str, Any] = {
            "turns": turns,
            "rows": rows,
            "distinct_texts": len(self._texts),
            "distinct_entries": len(self._entries),
            "text_bytes": text_bytes,
            "naive_text_bytes": naive,
            "memory_bytes": memory,
            "bytes_per_turn": memory / turns if turns else 0.0,
        }
        return result

    # -- recording
    def record(
        self,
        turn: int,
        segment: int,
        composed: ComposedPrompt,
        *,
        segment_turn: int | None = None,
        at: datetime | None = None,
    ) -> None:
        """Record ``composed`` as the prompt of ``turn`` (replacing an earlier compose of that turn),
        composed at ``at`` (an aware datetime; kept as the turn's send time, see :meth:`times`).

        One store transaction writes the new texts, new entries and the turn's record; if it fails,
        the in-memory history is unchanged too.

        Long because: each argument checked, then the entries found or made, then the store written
        before memory is changed (so a failed write leaves the history as it was): one transaction,
        step by step.
        """
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise ValueError(f"turn must be a non-negative int, got {turn!r}")
        if not isinstance(composed, ComposedPrompt):
            raise TypeError(f"expected a ComposedPrompt, got {type(composed).__name__}")
        check_int(segment, "segment", minimum=1)
        if segment_turn is not None:
            check_int(segment_turn, "segment turn", minimum=0)
        if at is not None and (not isinstance(at, datetime) or at.utcoffset() is None):
            raise TypeError(f"at must be an aware datetime, got {at!r}")
        if not composed.sections and any(composed.values()):
            raise ValueError(
                "this ComposedPrompt has content but no section records (built from a "
                "plain dict?); only prompts from a composer can be recorded"
            )
        last = self._last
        entries: list[Entry] = []
        fresh: list[Entry] = []
        fresh_texts: dict[bytes, str] = {}
        for section in composed.sections:
            entry = last.get(section.name)
            if entry is None or not entry.matches(section):
                entry = self._find(section, fresh, fresh_texts)
            entries.append(entry)
        previous = self._last_entries
        if len(previous) == len(entries) and all(a is b for a, b in zip(previous, entries, strict=True)):
            shared = previous  # the whole prompt is unchanged: share the tuple too
        else:
            shared = tuple(entries)
        frame = composed.hud_frame
        hud_frame = None if frame in (None, (DEFAULT_NAMESPACE, DEFAULT_HUD_TITLE)) else frame
        position = segment_turn if segment_turn is not None else 0
        budget = None
        if composed.budget is not None:
            budget = (dict(composed.budget.priorities), composed.budget.dropped)
        compose = Compose(turn, segment, position, shared, hud_frame, at)
        if self._stored is not None:
            self._stored.write(compose, budget, fresh, fresh_texts, held=self._held)
        # commit to memory only now that the store has it
        self._texts.update(fresh_texts)
        for entry in fresh:
            self._entries[entry.key] = entry
            self._entries_by_id[entry.id] = entry
        if turn < self._max_turn and turn not in self._records:
            self._in_order = False
        self._max_turn = max(self._max_turn, turn)
        self._records[turn] = compose
        if budget is not None:
            self._budgets[turn] = budget
        else:
            self._budgets.pop(turn, None)
        self._last = {e.name: e for e in shared}
        self._last_entries = shared
        self._frame_cache = None

    def _find(self, section: SectionRecord, fresh: list[Entry], fresh_texts: dict[bytes, str]) -> Entry:
        text = section.content
        digest = text_digest(text)
        stored = self._texts.get(digest)
        if stored is not None:
            text = stored  # share the one stored copy
        elif digest in fresh_texts:
            text = fresh_texts[digest]
        else:
            fresh_texts[digest] = text
        key = (section.name, section.placement, section.trinket, section.cache_policy, section.straggler, digest)
        entry = self._entries.get(key)
        if entry is None:
            entry = next((e for e in fresh if e.key == key), None)
            if entry is None:
                entry = Entry(
                    section.name,
                    section.placement,
                    section.trinket,
                    section.cache_policy,
                    section.straggler,
                    text,
                    digest,
                )
                fresh.append(entry)
        return entry

    # -- exchanges with a model (wm_kernel.providers.send records them; kept by an ExchangeLog)
    def record_exchange(self, exchange: Exchange) -> None:
        """Keep ``exchange`` as what was sent at its turn and answered; a turn holds one exchange
        (a second one is a ValueError). Stored first, then kept in memory: a failed store write
        records nothing."""
        self._exchange_log.record(exchange)
        self._frame_cache = None

    def exchanges(self) -> list[Exchange]:
        """Every recorded exchange, in turn order."""
        return self._exchange_log.all()

    def exchange_at(self, turn: int) -> Exchange | None:
        """The exchange of ``turn``, or None if nothing was sent then."""
        return self._exchange_log.at(turn)

    def conversation(self, before: int | None = None) -> list[dict[str, str]]:
        """The messages of every exchange (of turns before ``before`` when given), user and
        assistant alternating: the history the next request carries."""
        return self._exchange_log.conversation(before)

    def conversation_at(self, turn: int) -> list[dict[str, str]]:
        """The messages the request of ``turn`` carries: every exchange before it, then its own
        user message when one was sent at ``turn`` (``%request`` shows that request)."""
        messages = self.conversation(before=turn)
        sent = self.exchange_at(turn)
        if sent is not None:
            messages.append({"role": "user", "content": sent.user})
        return messages

    # -- persistence (see SCHEMA; a StoredHistory reads and writes the records)
    def _held(self, turn: int) -> tuple[Compose, _Budget | None] | None:
        """The record of ``turn`` this History holds and its budget, or None."""
        mine = self._records.get(turn)
        return None if mine is None else (mine, self._budgets.get(turn))

    def _load(self, stored: StoredHistory) -> None:
        self._records, self._budgets = stored.load(self._texts, self._entries_by_id)
        for entry in self._entries_by_id.values():
            self._entries[entry.key] = entry
        previous = self._records[max(self._records)].entries if self._records else ()
        self._max_turn = max(self._records, default=-1)
        self._last = {e.name: e for e in previous}
        self._last_entries = previous
        self._exchange_log.load()

    def __repr__(self) -> str:
        return (
            f"<History {self.continuum_id or '-'} turns={len(self._records)} "
            f"texts={len(self._texts)} ({type(self.store).__name__})>"
        )
