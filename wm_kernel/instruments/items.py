"""The stateful trinkets' items over time: an instrument that records them from a session's start.

A prompt's text says what an item says; it does not say how many turns the item has left, or when
it was added. :class:`ItemHistory` records that: attached to a Session (every Session attaches one
by default, beside its History), it reads every stateful trinket's ``describe_items()`` at each
compose and keeps them in an :class:`ItemLog`, as changes rather than per-turn copies. So a view
opened late (the dashboard, at turn 30) still shows every item of the turns before it.

A trinket whose ``describe_items()`` fails, or answers something that is not a list of items
(:func:`checked_items`), is left out of the log and its failure kept in
:attr:`ItemHistory.errors`, as a compose isolates a failing trinket: one faulty trinket never
stops the turn or the others' items.

Examples
--------
>>> spans = item_spans({0: {"g": [{"id": "a", "label": "x", "turns_remaining": 2}]},
...                     1: {"g": [{"id": "a", "label": "x", "turns_remaining": 1}]}},
...                    {"g": "PeanutGalleryTrinket"})
>>> spans
[ItemSpan(section='g', trinket='PeanutGalleryTrinket', id='a', label='x', start=0, end=2)]
>>> spans[0].state(3), spans[0].state(2), spans[0].remaining(1)
('expired', 'live', 1)
>>> log = ItemLog()
>>> log.sight(0, {"g": [{"id": "a", "label": "x", "turns_remaining": 2}]})
>>> log.sight(1, {"g": [{"id": "a", "label": "x", "turns_remaining": 1}]})
>>> log.spans({"g": "PeanutGalleryTrinket"}) == spans, log.items_at(1, "g")
(True, [{'id': 'a', 'label': 'x', 'turns_remaining': 1}])
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from trinkets.base import EventAwareTrinket, StatefulTrinket
from wm_kernel.instruments.attached import AttachedInstrument

#: How many turns a window of the timeline spans at most (the most recent ones).
WINDOW = 40


@dataclass(frozen=True)
class ItemSpan:
    """One item of a stateful trinket, from the turn it was first seen to the last turn it is
    shown (``end``), or ``end=None`` for an item that lives until the segment collapses."""

    section: str
    trinket: str
    id: str
    label: str
    start: int
    end: int | None

    def state(self, turn: int) -> str:
        """``"live"``, ``"expired"`` or ``"future"`` as seen at ``turn``."""
        if turn < self.start:
            return "future"
        return "live" if self.end is None or turn <= self.end else "expired"

    def remaining(self, turn: int) -> int | None:
        """Turns it is still shown after ``turn`` (None: until a collapse)."""
        return None if self.end is None else max(self.end - turn, 0)


def item_spans(
    items_at: Mapping[int, Mapping[str, Sequence[Mapping[str, Any]]]], trinkets: Mapping[str, str]
) -> list[ItemSpan]:
    """Every item seen in ``items_at`` (turn -> section -> ``describe_items()``), in the order
    they appeared. ``trinkets`` maps a section to its trinket's name.

    An item still present at its last sighting shows until ``turns_remaining`` more turns have
    passed; one that vanished earlier than announced (a collapse, a removal) ends where it was last
    seen."""
    first: dict[tuple[str, str], int] = {}
    last: dict[tuple[str, str], tuple[int, Mapping[str, Any]]] = {}
    turns = sorted(items_at)
    for turn in turns:
        for section, items in items_at[turn].items():
            for item in items:
                key = (section, str(item.get("id")))
                first.setdefault(key, turn)
                last[key] = (turn, item)
    latest = turns[-1] if turns else 0
    spans = []
    for key, start in first.items():
        seen, item = last[key]
        remaining = item.get("turns_remaining")
        if seen < latest:
            # gone by the latest record: either it expired as announced or it was cut short
            later = [t for t in turns if t > seen]
            announced = None if remaining is None else seen + int(remaining)
            end: int | None = seen if announced is None else min(announced, later[0] - 1)
        else:
            end = None if remaining is None else seen + int(remaining)
        label = str(item.get("label") or item.get("id"))
        spans.append(ItemSpan(key[0], trinkets.get(key[0], ""), key[1], label, start, end))
    return spans


@dataclass
class _ItemTrace:
    """What an :class:`ItemLog` knows of one item: each field changes rarely, so it stays small
    however many turns the item lives."""

    label: str
    seen: list[list[int]]  # [first, last] turns of each stretch it was seen in
    ends: list[tuple[int, int | None]]  # (from turn, announced last turn): one per change
    gone: int | None = None  # the first sighting after the last stretch without it
    extra: dict[str, Any] = field(default_factory=dict)  # other keys of describe_items(), if any


class ItemLog:
    """The items of the stateful trinkets over time, kept as changes rather than per-turn copies.

    :meth:`sight` is given what ``describe_items()`` says at a turn (any number of times per turn;
    what is seen at a turn is the union of those sightings). Per item the log keeps its label once,
    the stretches of turns it was seen in and each change of its announced last turn
    (``turn + turns_remaining``, which a countdown leaves unchanged). So an item alive for 1,000
    turns costs the same as one alive for one, and a turn in which nothing is fed or expires costs
    nothing: memory is bounded by the number of items ever fed, not by turns x items.

    Other keys of an item (besides ``id``, ``label``, ``turns_remaining``) are kept as first seen.
    """

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], _ItemTrace] = {}
        self._live: set[tuple[str, str]] = set()  # seen at the latest sighting turn
        self.latest: int | None = None
        #: The first turn sighted (None: none yet): earlier turns' items are unknown, not absent.
        self.first: int | None = None
        self._version = 0
        # the spans as last computed, per item, and the items changed since (recomputed on demand):
        # a turn costs what its changed items cost, not what every item ever fed would
        self._spans: dict[tuple[str, str], ItemSpan] = {}
        self._stale: set[tuple[str, str]] = set()
        self._names: dict[str, str] = {}
        # the items marked gone by the latest turn's first sighting and not yet settled: most are
        # seen again at once, which changes nothing, so only those still gone count as changed
        self._tentative: set[tuple[str, str]] = set()
        # for window(): the spans with an end, sorted by (end, first-seen rank), and those without
        # (in first-seen order), so a window costs what it draws, not every item ever fed
        self._rank: dict[tuple[str, str], int] = {}
        self._by_end: list[tuple[int, int, tuple[str, str]]] = []
        self._endless: dict[tuple[str, str], None] = {}

    def sight(self, turn: int, items: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Record the items of each section (section -> ``describe_items()``) as seen at ``turn``.

        Sightings must come in turn order (an earlier turn than the latest is ignored)."""
        if self.latest is not None and turn < self.latest:
            return
        if self.latest is not None and turn > self.latest:
            # tentatively gone as of this turn; seeing one again at this turn takes it back
            self._settle()
            for key in self._live:
                self._items[key].gone = turn
            self._tentative, self._live = self._live, set()
        self.latest = turn
        if self.first is None:
            self.first = turn
        for section, described in items.items():
            for item in described:
                key = (section, str(item.get("id")))
                remaining = item.get("turns_remaining")
                end = None if remaining is None else turn + int(remaining)
                trace = self._items.get(key)
                if trace is None:
                    extra = {k: v for k, v in item.items() if k not in ("id", "label", "turns_remaining")}
                    trace = self._items[key] = _ItemTrace(
                        str(item.get("label") or item.get("id")), [[turn, turn]], [(turn, end)], extra=extra
                    )
                    self._rank[key] = len(self._rank)
                    self._stale.add(key)
                    self._version += 1
                else:
                    # while an item is not gone its span does not read its last sighting, so
                    # only a gap, a return or a new announced end changes what spans() gives
                    if trace.gone is not None:
                        if trace.gone < turn:
                            trace.seen.append([turn, turn])  # back after it was gone
                        else:
                            trace.seen[-1][1] = turn
                        trace.gone = None
                        if key in self._tentative:
                            self._tentative.discard(key)  # gone and back: nothing changed
                        else:
                            self._stale.add(key)
                            self._version += 1
                    else:
                        trace.seen[-1][1] = turn
                    if trace.ends[-1][1] != end:
                        trace.ends.append((turn, end))
                        self._stale.add(key)
                        self._version += 1
                self._live.add(key)

    def items_at(self, turn: int, section: str) -> list[dict[str, Any]]:
        """The items of ``section`` seen at ``turn``, as ``describe_items()`` gave them (turns
        remaining counted from ``turn``), in the order they were first seen."""
        out = []
        for (owner, item_id), trace in self._items.items():
            if owner != section or not any(a <= turn <= b for a, b in trace.seen):
                continue
            end = None
            for start, announced in trace.ends:
                if start > turn:
                    break
                end = announced
            out.append(
                {
                    "id": item_id,
                    "label": trace.label,
                    **trace.extra,
                    "turns_remaining": None if end is None else end - turn,
                }
            )
        return out

    def spans(self, trinkets: Mapping[str, str]) -> list[ItemSpan]:
        """One :class:`ItemSpan` per item, as :func:`item_spans` computes it from per-turn copies
        (``trinkets`` maps a section to its trinket's name)."""
        self._refresh(trinkets)
        # in the order the items were first seen (the dict of traces keeps it)
        spans = self._spans
        return [spans[key] for key in self._items]

    def window(self, trinkets: Mapping[str, str], marked_turn: int) -> tuple[list[ItemSpan], int]:
        """The spans :func:`timeline_html` draws with ``marked_turn`` marked (those that end in its
        window of ``WINDOW`` turns or later, in first-seen order) and how many it leaves out,
        found without visiting the items that ended earlier."""
        self._refresh(trinkets)
        if not self._spans:
            return [], 0
        newest = self._spans[next(reversed(self._items))]  # the largest start: sightings come in order
        last = max(marked_turn, newest.start, self._by_end[-1][0] if self._by_end else 0)
        low = max(0, last - WINDOW + 1)
        keys = [key for _, _, key in self._by_end[bisect.bisect_left(self._by_end, (low,)) :]]
        keys.extend(self._endless)
        keys.sort(key=self._rank.__getitem__)
        return [self._spans[key] for key in keys], len(self._spans) - len(keys)

    def _refresh(self, trinkets: Mapping[str, str]) -> None:
        """Compute the spans of the items changed since the last call."""
        self._settle()
        if trinkets != self._names:
            self._names = dict(trinkets)
            self._stale = set(self._items)
        for key in self._stale:
            section, item_id = key
            trace = self._items[key]
            seen, announced = trace.seen[-1][1], trace.ends[-1][1]
            if trace.gone is not None:
                end: int | None = seen if announced is None else min(announced, trace.gone - 1)
            else:
                end = announced
            span = ItemSpan(section, trinkets.get(section, ""), item_id, trace.label, trace.seen[0][0], end)
            old = self._spans.get(key)
            if old == span:
                continue  # an equal span is kept, with its escaped text
            rank = self._rank[key]
            if old is not None and old.end is None:
                del self._endless[key]
            elif old is not None:
                del self._by_end[bisect.bisect_left(self._by_end, (old.end, rank))]
            if end is None:
                self._endless[key] = None
            else:
                bisect.insort(self._by_end, (end, rank, key))
            self._spans[key] = span
        self._stale = set()

    @property
    def version(self) -> int:
        """Counts the changes that alter :meth:`spans` (an item new, gone or back, a new
        announced end): equal versions, equal spans, so a caller may keep what it drew from them."""
        self._settle()
        return self._version

    def _settle(self) -> None:
        """The items marked gone at the latest turn and not seen again since are gone: changed."""
        gone = [key for key in self._tentative if self._items[key].gone is not None]
        self._stale.update(gone)
        self._version += bool(gone)
        self._tentative = set()

    def __len__(self) -> int:
        return len(self._items)


def checked_items(items: object) -> list[dict[str, Any]]:
    """``items`` if it is what ``describe_items()`` promises: a list of dicts, each with a
    ``turns_remaining`` that is an int or None. TypeError otherwise."""
    if not isinstance(items, list):
        raise TypeError(f"expected a list of items, got {type(items).__name__}")
    for item in items:
        if not isinstance(item, Mapping):
            raise TypeError(f"expected each item to be a dict, got {type(item).__name__}")
        remaining = item.get("turns_remaining")
        if remaining is not None and (isinstance(remaining, bool) or not isinstance(remaining, int)):
            raise TypeError(f"item {item.get('id')!r}: turns_remaining must be an int or None, got {remaining!r}")
    return items


def describe(trinkets: Iterable[EventAwareTrinket], errors: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Section -> checked ``describe_items()`` of each stateful trinket among ``trinkets``; a
    trinket whose items cannot be read is left out and why is put in ``errors`` (and taken out
    again once they can)."""
    out = {}
    for trinket in trinkets:
        if not isinstance(trinket, StatefulTrinket):
            continue
        section = trinket.variable_name
        try:
            out[section] = checked_items(trinket.describe_items())
        except Exception as exc:
            errors[section] = f"describe_items() failed: {type(exc).__name__}: {exc}"
        else:
            errors.pop(section, None)
    return out


class _Trinkets(Protocol):
    @property
    def trinkets(self) -> Mapping[str, EventAwareTrinket]: ...


class ObservedSession(Protocol):
    """What an ItemHistory observes (a Session is one): its turn, its WorkingMemory's trinkets, the
    last composed prompt (None before the first compose) and a ``composed`` trait to observe
    (traitlets' ``observe``). Named here so the instrument never imports the Session above it."""

    @property
    def turn(self) -> int: ...

    @property
    def composed(self) -> object | None: ...

    @property
    def working_memory(self) -> _Trinkets: ...

    def observe(self, handler: Any, names: Any = ..., type: Any = ...) -> None: ...

    def unobserve(self, handler: Any, names: Any = ..., type: Any = ...) -> None: ...


class ItemHistory(AttachedInstrument):
    """The items of a session's stateful trinkets at every compose, from when it was attached.

    :attr:`log` is the :class:`ItemLog`; :attr:`latest` the items read at the last compose
    (section -> items) and :attr:`latest_turn` its turn; :attr:`errors` the sections whose
    trinket's items could not be read then.
    """

    _attached: ClassVar[weakref.WeakKeyDictionary[ObservedSession, ItemHistory]] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self.log = ItemLog()
        self.errors: dict[str, str] = {}
        self.latest: dict[str, list[dict[str, Any]]] = {}
        self.latest_turn: int | None = None
        super().__init__()

    @classmethod
    def attach(cls, session: ObservedSession) -> ItemHistory:
        """Record ``session``'s items at every compose from now on; :meth:`of` finds it. One per
        session: attaching a second one is a ValueError."""
        cls._refuse_second(session, "this session already has an ItemHistory (ItemHistory.of(session))")
        history = cls()
        history._observe(session)
        if session.composed is not None:
            history.sight(session.turn, session.working_memory.trinkets.values())
        return history

    @classmethod
    def of(cls, session: ObservedSession) -> ItemHistory:
        """The ItemHistory attached to ``session``; one is attached now if none is."""
        found = cls.find(session)
        return found if found is not None else cls.attach(session)

    def _on_composed(self, change: Any) -> None:
        if change["new"] is not None:
            session = change["owner"]
            self.sight(session.turn, session.working_memory.trinkets.values())

    def sight(self, turn: int, trinkets: Iterable[EventAwareTrinket]) -> dict[str, list[dict[str, Any]]]:
        """Read the items of ``trinkets`` now, at ``turn``, into the log; what was read."""
        items = describe(trinkets, self.errors)
        self.log.sight(turn, items)
        self.latest, self.latest_turn = items, turn
        return items


__all__ = ["ItemHistory", "ItemLog", "ItemSpan", "item_spans", "checked_items", "describe", "WINDOW"]
