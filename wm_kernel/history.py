"""Per-turn record of every composed prompt, stored compactly, optionally persisted in SQLite.

A :class:`History` keeps, for each recorded turn, every section of the composed prompt: its text,
placement, trinket, cache policy and whether the layout listed it. A Session records each compose
(``session.recorder``); ``session.history`` is :meth:`History.frame`.

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
With a ``SQLiteStore`` (its ``.connection``) the history lives in three tables of the same file:
``wm_history_texts`` (digest -> text, shared by every history in the file), ``wm_history_entries``
and ``wm_history_composes`` (one row per (user_id, continuum_id, turn): segment numbers and the entry
ids). A history is identified by ``(user_id, continuum_id)``: a new History (or Session) on the same
file with the same pair loads the earlier turns, and the Session resumes its turn and segment
counters after the last recorded turn (so new turns never overwrite old ones). A Session created
without ``continuum_id`` is ``continuum-N`` (N counts Sessions in the process): a restarted notebook
that creates its Sessions in the same order finds its histories again; pass ``continuum_id`` to be
explicit. Each compose is written in one transaction, each new text once. The notification
centre's frame (namespace and title) is stored only when it differs from the composer's default.

Measured (10,000 turns, all eight built-in trinkets, a 7 KB base prompt): about 420 bytes per turn
in memory, texts included (one copy per turn would be 8.8 KB of text per turn), about 210 bytes per
turn in the SQLite file, and 25 us (memory) / 150 us (SQLite, one commit) per recorded compose.

Public API
----------
``History(store=None, user_id="notebook", continuum_id="", counter=None)``
``record(turn, segment, composed, segment_turn=None)``   called by Session.compose
``frame()``        DataFrame: turn, segment, placement, section, trinket, chars, tokens, changed,
                   cached, digest, priority, dropped (one row per (turn, section), output order
                   within a turn; ``trinket`` is missing (NA) for the base prompt; ``digest`` is
                   the text's blake2b-128 in hex, equal texts have equal digests; ``priority`` is
                   the section's priority when composed (NA if not known); sections a token budget dropped follow the turn's sections as rows with
                   ``dropped`` True, the ``tokens`` they would have cost, no placement, chars 0)
``prompt_at(turn)``  the ComposedPrompt of that turn, rebuilt (five keys and ``sections``)
``turns``, ``len(history)``, ``last_position()`` (turn, segment, segment_turn of the last record)
``texts()``        digest -> text of every distinct stored text
``stats()``        sizes: distinct texts, bytes of texts and records, bytes per turn
``counter``        the TokenCounter for the ``tokens`` column (offline tiktoken or an estimate)

``changed`` is True when the section's text differs from the previous recorded turn's section of the
same name, or the section was absent there (every section of the first recorded turn is changed).

Examples
--------
>>> from wm_kernel.tokens import EstimateTokenizer, TokenCounter
>>> from wm_kernel.composer import SystemPromptComposer
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

import hashlib
import json
import sqlite3
import sys
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from wm_kernel.checks import check_int
from wm_kernel.composer import DEFAULT_HUD_TITLE, DEFAULT_NAMESPACE, RULE, Layout, SystemPromptComposer
from wm_kernel.store import StateStore
from wm_kernel.tokens import TokenCounter
from wm_kernel.types import PLACEMENTS, ComposedPrompt, OmittedSection, SectionRecord

if TYPE_CHECKING:
    import pandas as pd

FRAME_COLUMNS = ["turn", "segment", "placement", "section", "trinket", "chars", "tokens", "changed",
                 "cached", "digest", "priority", "dropped"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS wm_history_texts (digest BLOB PRIMARY KEY, text TEXT NOT NULL) "
    "WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS wm_history_entries (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
    "placement TEXT NOT NULL, trinket TEXT NOT NULL, cache_policy INTEGER NOT NULL, "
    "straggler INTEGER NOT NULL, digest BLOB NOT NULL, "
    "UNIQUE (name, placement, trinket, cache_policy, straggler, digest))",
    "CREATE TABLE IF NOT EXISTS wm_history_composes (user_id TEXT NOT NULL, continuum_id TEXT NOT NULL, "
    "turn INTEGER NOT NULL, segment INTEGER NOT NULL, segment_turn INTEGER NOT NULL, "
    "entries TEXT NOT NULL, hud_frame TEXT, PRIMARY KEY (user_id, continuum_id, turn)) WITHOUT ROWID",
    # per turn, JSON {"priorities": {section: int}, "dropped": [[name, trinket, tokens, priority]]}
    "CREATE TABLE IF NOT EXISTS wm_history_budgets (user_id TEXT NOT NULL, continuum_id TEXT NOT NULL, "
    "turn INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (user_id, continuum_id, turn)) WITHOUT ROWID",
)
_CHUNK = 500  # ids per "IN (...)" query, well under SQLite's variable limit


def text_digest(text: str) -> bytes:
    """The 16-byte blake2b digest a history interns ``text`` by."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Entry:
    """One distinct section as recorded: shared by every turn in which it appears unchanged."""

    __slots__ = ("name", "placement", "trinket", "cache_policy", "straggler", "text", "digest", "id")

    def __init__(self, name: str, placement: str, trinket: str | None, cache_policy: bool,
                 straggler: bool, text: str, digest: bytes, id: int = 0) -> None:
        self.name = name
        self.placement = placement
        self.trinket = trinket
        self.cache_policy = cache_policy
        self.straggler = straggler
        self.text = text
        self.digest = digest
        self.id = id

    @property
    def key(self) -> tuple[str, str, str | None, bool, bool, bytes]:
        """What makes two entries the same: every field but the text itself (its digest stands in)."""
        return (self.name, self.placement, self.trinket, self.cache_policy, self.straggler, self.digest)

    @property
    def cached(self) -> bool:
        """In the cached part of the system prompt (as ``SectionRecord.cached``)."""
        return self.placement == "system" and self.cache_policy

    def matches(self, record: SectionRecord) -> bool:
        """Same section as ``record`` (identity first, so an unchanged text is never rescanned)."""
        text = record.content
        return ((self.text is text or self.text == text) and self.placement == record.placement
                and self.cache_policy == record.cache_policy and self.trinket == record.trinket
                and self.straggler == record.straggler)

    def to_record(self) -> SectionRecord:
        """The SectionRecord this entry was recorded from."""
        return SectionRecord(self.name, self.placement, self.text, self.cache_policy, self.trinket,
                             self.straggler)

    def __repr__(self) -> str:
        return f"<Entry {self.name} {self.placement} chars={len(self.text)} {self.digest.hex()[:8]}>"


class Compose:
    """One recorded turn: segment numbers, the entries in output order, the HUD frame if not default."""

    __slots__ = ("turn", "segment", "segment_turn", "entries", "hud_frame")

    def __init__(self, turn: int, segment: int, segment_turn: int, entries: tuple[Entry, ...],
                 hud_frame: tuple[str, str] | None = None) -> None:
        self.turn = turn
        self.segment = segment
        self.segment_turn = segment_turn
        self.entries = entries
        self.hud_frame = hud_frame


def _hud_frame(hud: str) -> tuple[str, str] | None:
    """(namespace, title) of a notification centre, None when empty or the default frame."""
    if not hud:
        return None
    tail = hud.rfind("\n</", 0, len(hud) - len(RULE))
    tag = hud[tail + 3:len(hud) - len(RULE) - 2]
    namespace = tag.removesuffix(":hud")
    title = hud[len(RULE) + 1:hud.find(f"\n{RULE}\n<{tag}>\n")]
    if namespace == DEFAULT_NAMESPACE and title == DEFAULT_HUD_TITLE:
        return None
    return (namespace, title)


class History:
    """Every compose of a conversation, by turn (see the module docstring).

    Parameters
    ----------
    store:
        A state store; a ``SQLiteStore`` (anything with a ``connection``) makes the history persist
        in the same file, other stores keep it in memory.
    user_id, continuum_id:
        Identify this history in a shared file.
    counter:
        The TokenCounter for the ``tokens`` column (default: one over ``default_tokenizer()``,
        created on first use).
    """

    def __init__(self, store: StateStore | None = None, *, user_id: str = "notebook",
                 continuum_id: str = "", counter: TokenCounter | None = None) -> None:
        if not isinstance(user_id, str) or not isinstance(continuum_id, str):
            raise TypeError("user_id and continuum_id must be strings")
        if counter is not None and not isinstance(counter, TokenCounter):
            raise TypeError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        self.store = store
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
        self._entries_by_id: dict[int, Entry] = {}
        self._next_id = 1
        self._last: dict[str, Entry] = {}  # section name -> last recorded entry (the fast path)
        self._last_entries: tuple[Entry, ...] = ()
        # the last frame and the tokenizer that counted its tokens column
        self._frame_cache: "tuple[pd.DataFrame, object] | None" = None
        self._conn: sqlite3.Connection | None = getattr(store, "connection", None)
        if store is not None and self._conn is not None:
            with store.transaction():
                for statement in _SCHEMA:
                    self._conn.execute(statement)
            self._load()

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
    def persistent(self) -> bool:
        """True when the history is written to a SQLite file."""
        return self._conn is not None

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
            raise ValueError(f"turn {turn} was not recorded (recorded turns: {min(self._records)}"
                             f"..{max(self._records)}, {len(self._records)} in all)")
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
        composer = SystemPromptComposer(Layout(placements, name="recorded"), namespace=namespace,
                                        hud_title=title)
        for entry in record.entries:
            composer.add_section(entry.name, entry.text, entry.cache_policy, entry.trinket)
        rebuilt = composer.compose()
        # the rebuilt records are the entries' in the same order, so its blame map holds as it is
        return ComposedPrompt(**rebuilt.as_dict(), sections=[e.to_record() for e in record.entries],
                              turn=record.turn, blame=rebuilt._blame)

    def frame(self) -> "pd.DataFrame":
        """pandas DataFrame, one row per (turn, section); see the module docstring for columns."""
        import pandas as pd

        counter = self.counter
        if self._frame_cache is not None and self._frame_cache[1] is counter.tokenizer:
            return self._frame_cache[0].copy()
        count = counter.count
        tokens: dict[bytes, int] = {}
        rows: list[tuple[Any, ...]] = []
        previous: dict[str, bytes] = {}
        previous_entries: tuple[Entry, ...] | None = None
        for record in self.composes():
            same = record.entries is previous_entries
            current: dict[str, bytes] = {}
            priorities, dropped = self._budgets.get(record.turn, ({}, ()))
            for entry in record.entries:
                digest = entry.digest
                n = tokens.get(digest)
                if n is None:
                    n = tokens[digest] = count(entry.text)
                changed = not same and previous.get(entry.name) != digest
                rows.append((record.turn, record.segment, entry.placement, entry.name, entry.trinket,
                             len(entry.text), n, changed, entry.cached, digest.hex(),
                             priorities.get(entry.name), False))
                current[entry.name] = digest
            # a section a budget dropped: a row of what it would have cost, not in the prompt
            for gone in dropped:
                rows.append((record.turn, record.segment, None, gone.name, gone.trinket, 0,
                             gone.tokens or 0, False, False, "", gone.priority, True))
            previous, previous_entries = current, record.entries
        df = pd.DataFrame.from_records(rows, columns=FRAME_COLUMNS)
        df = df.astype({"turn": "int64", "segment": "int64", "chars": "int64", "tokens": "int64",
                        "changed": "bool", "cached": "bool", "priority": "Int64", "dropped": "bool"})
        self._frame_cache = (df, counter.tokenizer)
        return df.copy()

    def stats(self) -> dict[str, Any]:
        """What the history holds and its size in bytes (Python object sizes, texts counted once).

        Keys: turns, rows (sections over all turns), distinct_texts, distinct_entries, text_bytes
        (UTF-8 bytes of the distinct texts), naive_text_bytes (what one copy per turn would take),
        memory_bytes (texts, entries, records and index as Python objects), bytes_per_turn
        (memory_bytes / turns) and, when persistent, file_bytes (the whole SQLite file's pages)."""
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
            "turns": turns, "rows": rows, "distinct_texts": len(self._texts),
            "distinct_entries": len(self._entries), "text_bytes": text_bytes,
            "naive_text_bytes": naive, "memory_bytes": memory,
            "bytes_per_turn": memory / turns if turns else 0.0}
        if self._conn is not None:
            pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
            size = self._conn.execute("PRAGMA page_size").fetchone()[0]
            result["file_bytes"] = pages * size
        return result

    # -- recording
    def record(self, turn: int, segment: int, composed: ComposedPrompt, *,
               segment_turn: int | None = None) -> None:
        """Record ``composed`` as the prompt of ``turn`` (replacing an earlier compose of that turn).

        With a SQLite store, one transaction writes the new texts, new entries and the turn's row;
        if it fails, the in-memory history is unchanged too."""
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise ValueError(f"turn must be a non-negative int, got {turn!r}")
        if not isinstance(composed, ComposedPrompt):
            raise TypeError(f"expected a ComposedPrompt, got {type(composed).__name__}")
        check_int(segment, "segment", minimum=1)
        if segment_turn is not None:
            check_int(segment_turn, "segment turn", minimum=0)
        if not composed.sections and any(composed.values()):
            raise ValueError("this ComposedPrompt has content but no section records (built from a "
                             "plain dict?); only prompts from a composer can be recorded")
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
        if len(previous) == len(entries) and all(a is b for a, b in zip(previous, entries)):
            shared = previous  # the whole prompt is unchanged: share the tuple too
        else:
            shared = tuple(entries)
        hud_frame = _hud_frame(composed["notification_center"])
        position = segment_turn if segment_turn is not None else 0
        budget = None
        if composed.budget is not None:
            budget = (dict(composed.budget.priorities), composed.budget.dropped)
        if self._conn is not None:
            self._write(turn, segment, position, shared, hud_frame, fresh, fresh_texts, budget)
        else:
            for entry in fresh:
                entry.id = self._next_id
                self._next_id += 1
        # commit to memory only now that the file (if any) has it
        self._texts.update(fresh_texts)
        for entry in fresh:
            self._entries[entry.key] = entry
            self._entries_by_id[entry.id] = entry
        if turn < self._max_turn and turn not in self._records:
            self._in_order = False
        self._max_turn = max(self._max_turn, turn)
        self._records[turn] = Compose(turn, segment, position, shared, hud_frame)
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
        key = (section.name, section.placement, section.trinket, section.cache_policy,
               section.straggler, digest)
        entry = self._entries.get(key)
        if entry is None:
            entry = next((e for e in fresh if e.key == key), None)
            if entry is None:
                entry = Entry(section.name, section.placement, section.trinket, section.cache_policy,
                              section.straggler, text, digest)
                fresh.append(entry)
        return entry

    # -- persistence
    def _write(self, turn: int, segment: int, segment_turn: int, entries: tuple[Entry, ...],
               hud_frame: tuple[str, str] | None, fresh: list[Entry],
               fresh_texts: dict[bytes, str],
               budget: tuple[dict[str, int], tuple[OmittedSection, ...]] | None = None) -> None:
        conn = self._conn
        assert conn is not None and self.store is not None
        with self.store.transaction():
            if fresh_texts:
                conn.executemany("INSERT OR IGNORE INTO wm_history_texts (digest, text) VALUES (?, ?)",
                                 list(fresh_texts.items()))
            ids: list[int] = []
            for entry in fresh:
                row = (entry.name, entry.placement, entry.trinket or "", int(entry.cache_policy),
                       int(entry.straggler), entry.digest)
                conn.execute("INSERT OR IGNORE INTO wm_history_entries (name, placement, trinket, "
                             "cache_policy, straggler, digest) VALUES (?, ?, ?, ?, ?, ?)", row)
                found = conn.execute("SELECT id FROM wm_history_entries WHERE name=? AND placement=? "
                                     "AND trinket=? AND cache_policy=? AND straggler=? AND digest=?",
                                     row).fetchone()
                ids.append(found[0])
            for entry, entry_id in zip(fresh, ids):
                entry.id = entry_id
            conn.execute("INSERT OR REPLACE INTO wm_history_composes (user_id, continuum_id, turn, "
                         "segment, segment_turn, entries, hud_frame) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (self.user_id, self.continuum_id, turn, segment, segment_turn,
                          ",".join(str(e.id) for e in entries),
                          None if hud_frame is None else json.dumps(hud_frame, ensure_ascii=False)))
            conn.execute("DELETE FROM wm_history_budgets WHERE user_id=? AND continuum_id=? AND turn=?",
                         (self.user_id, self.continuum_id, turn))
            if budget is not None:
                data = {"priorities": budget[0], "dropped": [[d.name, d.trinket, d.tokens, d.priority]
                                                             for d in budget[1]]}
                conn.execute("INSERT INTO wm_history_budgets (user_id, continuum_id, turn, data) "
                             "VALUES (?, ?, ?, ?)", (self.user_id, self.continuum_id, turn,
                                                     json.dumps(data, ensure_ascii=False)))

    def _load(self) -> None:
        conn = self._conn
        assert conn is not None
        rows = conn.execute("SELECT turn, segment, segment_turn, entries, hud_frame FROM "
                            "wm_history_composes WHERE user_id=? AND continuum_id=? ORDER BY turn",
                            (self.user_id, self.continuum_id)).fetchall()
        if not rows:
            return
        wanted = sorted({int(i) for row in rows if row[3] for i in row[3].split(",")})
        raw: dict[int, tuple[Any, ...]] = {}
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            for found in conn.execute(f"SELECT id, name, placement, trinket, cache_policy, straggler, "
                                      f"digest FROM wm_history_entries WHERE id IN ({marks})", chunk):
                raw[found[0]] = found
        digests = sorted({r[6] for r in raw.values()})
        for chunk in _chunks(digests):
            marks = ",".join("?" * len(chunk))
            for digest, text in conn.execute(f"SELECT digest, text FROM wm_history_texts WHERE digest "
                                             f"IN ({marks})", chunk):
                self._texts[bytes(digest)] = text
        for entry_id, name, placement, trinket, cache_policy, straggler, digest in raw.values():
            digest = bytes(digest)
            entry = Entry(name, placement, trinket or None, bool(cache_policy), bool(straggler),
                          self._texts[digest], digest, entry_id)
            self._entries[entry.key] = entry
            self._entries_by_id[entry_id] = entry
        previous: tuple[Entry, ...] = ()
        for turn, segment, segment_turn, ids, hud_frame in rows:
            entries = tuple(self._entries_by_id[int(i)] for i in ids.split(",")) if ids else ()
            if entries == previous:
                entries = previous
            frame = tuple(json.loads(hud_frame)) if hud_frame else None
            self._records[turn] = Compose(turn, segment, segment_turn, entries, frame)
            self._max_turn = max(self._max_turn, turn)
            previous = entries
        self._last = {e.name: e for e in previous}
        self._last_entries = previous
        for turn, data in conn.execute("SELECT turn, data FROM wm_history_budgets WHERE user_id=? "
                                       "AND continuum_id=?", (self.user_id, self.continuum_id)):
            loaded = json.loads(data)
            self._budgets[turn] = (loaded["priorities"], tuple(
                OmittedSection(name, trinket, "over budget", tokens=tokens, priority=priority)
                for name, trinket, tokens, priority in loaded["dropped"]))

    def __repr__(self) -> str:
        where = "sqlite" if self._conn is not None else "memory"
        return (f"<History {self.continuum_id or '-'} turns={len(self._records)} "
                f"texts={len(self._texts)} ({where})>")


def _chunks(items: list[Any]) -> Iterable[list[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]
