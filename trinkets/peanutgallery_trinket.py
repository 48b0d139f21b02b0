"""PeanutGalleryTrinket: short-lived metacognitive guidance from an observer, in the notification centre.

An observer (a person in a notebook, or a model watching the conversation) adds guidance of type
``concern`` or ``coaching`` with a time to live in turns. The trinket publishes
``peanutgallery_guidance``::

    <mira:peanutgallery>
      <critical>
        <instruction>...</instruction>
        <guidance type="concern" expires_in="1_turns">...</guidance>
      </critical>
      <guidance type="coaching" expires_in="3_turns">...</guidance>
    </mira:peanutgallery>

Lifetime. An entry added while ``current_turn`` is *t* with ``ttl=n`` shows while
``current_turn <= t + n``; ``expires_in`` is ``t + n - current_turn`` (written ``"N_turns"`` for
every N, as the original writes it). So ``ttl=0`` means "this turn only": the entry shows in every
compose of the turn it was added in (``expires_in="0_turns"``) and is gone once the next turn
completes. The default TTL is 5.

Critical guidance. Entries added with ``critical=True`` go into one ``<critical>`` group placed
first, with its own instruction to acknowledge and repair the slip openly, so that instruction applies
to those entries alone. Standard entries follow as plain ``<guidance>`` lines; with no critical entry
the output is exactly the original's.

Feeding. Call :meth:`PeanutGalleryTrinket.add_guidance`, or publish an UpdateTrinketEvent whose
context is ``{"action": "add_guidance", "type": ..., "text": ..., "ttl": ..., "critical": ...}``
(``ttl`` and ``critical`` optional). Bad values in such a context raise ValueError: WorkingMemory
isolates the failure, the trinket's ``error`` trait shows it, and nothing is stored.

Persistence. The entries and the id counter live in the WorkingMemory's store too, field ``state``
of the hash ``peanutgallery:{user_id}:{continuum_id}``, written whenever they change (never on a
plain compose). A Session on a SQLite file therefore shows the same guidance after a restart, with
the same turns remaining, and ids keep counting (``guidance-<n>`` is never reused). Stored data
this trinket cannot read is a ValueError naming the key when the trinket is constructed.

Every text is escaped for element text and every attribute value for attributes
(:mod:`wm_kernel.utils.markup`), so an XML parser gets the exact text back.

Examples
--------
>>> from wm_kernel.core.clock import ManualClock
>>> from wm_kernel.session import Session
>>> s = Session(trinkets=[PeanutGalleryTrinket], clock=ManualClock("2026-11-30T09:00:00+00:00"))
>>> pg = s.trinket("PeanutGalleryTrinket")
>>> pg.add_guidance("concern", "Check the <units> before answering.", ttl=2)
'guidance-1'
>>> pg.add_guidance("coaching", "Ask one question at a time.", ttl=0, critical=True)
'guidance-2'
>>> print(s.compose()["notification_center"].split("<mira:hud>\\n")[1].split("\\n\\n</mira:hud>")[0])
<mira:peanutgallery>
  <critical>
    <instruction>Critical guidance: tell the user plainly what went wrong and repair it in your next reply.</instruction>
    <guidance type="coaching" expires_in="0_turns">Ask one question at a time.</guidance>
  </critical>
  <guidance type="concern" expires_in="2_turns">Check the &lt;units&gt; before answering.</guidance>
</mira:peanutgallery>
>>> s.advance_turn()  # the ttl=0 entry was for turn 0 only
[{'turn': 1, 'trinket': 'PeanutGalleryTrinket', 'id': 'guidance-2', 'label': 'critical coaching: Ask one question at a time.'}]
>>> [(g["id"], g["turns_remaining"]) for g in pg.get_active_guidance()]
[('guidance-1', 1)]
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from traitlets import Instance, Int

from trinkets.base import BUDGET_KEEP, StatefulTrinket, arg, command, feed, non_negative_int
from wm_kernel.core.events import UpdateTrinketEvent
from wm_kernel.utils.checks import check_unicode
from wm_kernel.utils.frozenmap import FrozenMap
from wm_kernel.utils.markup import escape_attr, escape_text

GUIDANCE_TYPES: tuple[str, ...] = ("concern", "coaching")
DEFAULT_TTL = 5
CRITICAL_INSTRUCTION = "Critical guidance: tell the user plainly what went wrong and repair it in your next reply."
_LABEL_CHARS = 60
_ID = re.compile(r"guidance-([1-9][0-9]*)")


@dataclass(frozen=True, slots=True)
class Guidance:
    """One guidance entry: added while ``current_turn`` was ``added_turn``, shown through turn
    ``added_turn + ttl``."""

    id: str
    type: str
    text: str
    added_turn: int
    ttl: int
    critical: bool = False

    @property
    def last_turn(self) -> int:
        """The last value of ``current_turn`` at which the entry is shown."""
        return self.added_turn + self.ttl

    def as_dict(self, current_turn: int) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "text": self.text,
            "turns_remaining": self.last_turn - current_turn,
            "critical": self.critical,
        }


def _check_type(guidance_type: object) -> str:
    if not isinstance(guidance_type, str) or guidance_type not in GUIDANCE_TYPES:
        allowed = ", ".join(repr(t) for t in GUIDANCE_TYPES)
        raise ValueError(f"guidance type must be one of {allowed}; got {guidance_type!r}")
    return guidance_type


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise ValueError(f"guidance text must be a non-empty str; got {type(text).__name__}")
    if not text.strip():
        raise ValueError("guidance text must be a non-empty str; got an empty or blank string")
    return check_unicode(text, "guidance text")


def _check_ttl(ttl: object) -> int:
    if ttl is None:
        return DEFAULT_TTL
    # bool is an int subclass; True as a TTL is almost certainly a mistake
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
        raise ValueError(f"ttl must be a non-negative int (a number of turns); got {ttl!r}")
    return ttl


def _check_critical(critical: object) -> bool:
    if not isinstance(critical, bool):
        raise ValueError(f"critical must be a bool; got {critical!r}")
    return critical


def _check_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative int; got {value!r}")
    return value


def _stored_entry(item: object, where: str, added_count: int) -> Guidance:
    """One entry as ``_dump_state`` wrote it, checked as strictly as ``add_guidance`` checks."""
    fields = ("id", "type", "text", "added_turn", "ttl", "critical")
    if not isinstance(item, dict) or set(item) != set(fields):
        raise ValueError(f"{where} must be a dict with exactly {', '.join(fields)}")
    match = _ID.fullmatch(item["id"]) if isinstance(item["id"], str) else None
    if match is None or int(match.group(1)) > added_count:
        raise ValueError(f"{where}.id {item['id']!r} is not guidance-<n> with n <= added_count ({added_count})")
    if item["ttl"] is None:
        raise ValueError(f"{where}.ttl must be a non-negative int; got None")
    return Guidance(
        item["id"],
        _check_type(item["type"]),
        _check_text(item["text"]),
        _check_count(item["added_turn"], f"{where}.added_turn"),
        _check_ttl(item["ttl"]),
        _check_critical(item["critical"]),
    )


class PeanutGalleryTrinket(StatefulTrinket):
    """Guidance entries with a TTL in turns, published as ``peanutgallery_guidance``.

    See the module docstring for the markup, the lifetime rule and the meaning of ``ttl=0``.
    """

    variable_name = "peanutgallery_guidance"
    default_priority = 90  # token budgets: see docs/budgets.md
    reuse_content = True  # its inputs: traits, feeds, own store writes, profile
    cache_policy = False
    state_prefix = "peanutgallery"
    state_items = "entries"
    state_counters = ("added_count",)

    entries = Instance(
        FrozenMap,
        args=(),
        read_only=True,
        help="id -> Guidance, oldest first: a FrozenMap, replaced (never mutated) "
        "on every change so observers hear of it, without copying every "
        "entry. Feed with add_guidance().",
    )
    added_count = Int(0, read_only=True, help="How many entries were ever added; ids are 'guidance-<n>', never reused.")

    # -- feeding
    @command(
        "add",
        arg("type", choices=GUIDANCE_TYPES, help="concern or coaching"),
        arg("text", words=True, help="The guidance."),
        arg("--ttl", type=non_negative_int, help="Turns to live after this one (default 5)."),
        arg("--critical", action="store_true", help="The critical group."),
        help="Add guidance: TYPE (concern or coaching) TEXT [--ttl N] [--critical].",
    )
    @feed
    def add_guidance(self, type: str, text: str, ttl: int | None = None, critical: bool = False) -> str:
        """Add guidance and return its id.

        Parameters
        ----------
        type:
            ``"concern"`` or ``"coaching"``.
        text:
            The guidance, a non-empty string (escaped when rendered).
        ttl:
            Turns to live after the current one (default 5); ``0`` shows it for this turn only.
        critical:
            Put it in the critical group, whose instruction asks for an open repair.

        Raises ValueError (nothing stored) for any other type, empty text, a TTL that is not a
        non-negative int (bool, float and str included) or a non-bool ``critical``.
        """
        return self._add(type, text, ttl, critical)

    def _add(self, guidance_type: object, text: object, ttl: object, critical: object) -> str:
        # validate everything before touching state, so a bad call changes nothing
        entry_type = _check_type(guidance_type)
        entry_text = _check_text(text)
        entry_ttl = _check_ttl(ttl)
        entry_critical = _check_critical(critical)
        # stored first (the id from the store's counter, unique across processes), then kept
        with self._changing_state() as change:
            number = change.allocate("added_count", self.added_count)
            entry = Guidance(f"guidance-{number}", entry_type, entry_text, self.current_turn, entry_ttl, entry_critical)
            change.put(entry.id, _record(entry))
        # entries last: an observer of it finds the count already up to date. Not inside
        # hold_trait_notifications, whose closing re-validation compares the whole map with
        # itself (an add would then cost as much as there are entries)
        self.set_trait("added_count", number)
        self.set_trait("entries", self.entries.set(entry.id, entry))
        return entry.id

    @command("remove", arg("id", help="The item's id."), help="Remove guidance by id.")
    @feed
    def remove(self, id: str) -> None:
        """Remove one entry by id; ValueError if there is none with that id."""
        if id not in self.entries:
            known = ", ".join(map(str, self.entries)) or "none"
            raise ValueError(f"no guidance with id {id!r} (active: {known})")
        self._drop_items([id])

    def handle_update_trinket(self, event: UpdateTrinketEvent) -> None:
        """Apply an ``add_guidance`` action from the event's context, then regenerate."""
        context: Mapping[str, Any] = event.context
        if context.get("action") == "add_guidance":
            self._add(context.get("type"), context.get("text"), context.get("ttl"), context.get("critical", False))
        super().handle_update_trinket(event)

    # -- reading
    def get_active_guidance(self) -> list[dict[str, Any]]:
        """Active entries, oldest first, as dicts: id, type, text, turns_remaining, critical."""
        turn = self.current_turn
        return [e.as_dict(turn) for e in self.entries.values() if turn <= e.last_turn]

    def describe_items(self) -> list[dict[str, Any]]:
        items = []
        for g in self.get_active_guidance():
            text = g["text"] if len(g["text"]) <= _LABEL_CHARS else g["text"][: _LABEL_CHARS - 1] + "…"
            prefix = "critical " if g["critical"] else ""
            items.append(
                {"id": g["id"], "label": f"{prefix}{g['type']}: {text}", "turns_remaining": g["turns_remaining"]}
            )
        return items

    def ranked_items(self) -> list[str]:
        """Active ids for a token budget: critical entries first, then those with the most turns
        to live, then the oldest."""
        active = self.get_active_guidance()
        order = sorted(range(len(active)), key=lambda i: (not active[i]["critical"], -active[i]["turns_remaining"], i))
        return [active[i]["id"] for i in order]

    def generate_content(self, context: dict[str, Any]) -> str:
        active = self.get_active_guidance()
        if BUDGET_KEEP in context:
            active = [g for g in active if g["id"] in context[BUDGET_KEEP]]
        if not active:
            return ""
        critical = [g for g in active if g["critical"]]
        lines = ["<mira:peanutgallery>"]
        if critical:
            lines.append("  <critical>")
            lines.append(f"    <instruction>{CRITICAL_INSTRUCTION}</instruction>")
            lines.extend("    " + _guidance_line(g) for g in critical)
            lines.append("  </critical>")
        lines.extend("  " + _guidance_line(g) for g in active if not g["critical"])
        lines.append("</mira:peanutgallery>")
        return "\n".join(lines)

    # -- lifecycle
    def _expire_items(self) -> bool:
        turn = self.current_turn
        return self._drop_items([e.id for e in self.entries.values() if turn > e.last_turn])

    def _clear_all_state(self) -> None:
        self._clear_items()

    # -- persistence: one record per entry, and the id counter, so ids are never reused after a
    # restart (StatefulTrinket's per-item persistence; the feeding methods write each change)
    def _dump_state(self) -> dict[str, Any] | None:
        if not self.added_count:
            return None
        return {"added_count": self.added_count, "entries": [_record(e) for e in self.entries.values()]}

    def _parse_state(self, data: dict[str, Any]) -> tuple[int, FrozenMap[str, Guidance]]:
        if set(data) != {"added_count", "entries"}:
            raise ValueError(f"expected keys added_count and entries, found {sorted(data)}")
        added_count = _check_count(data["added_count"], "added_count")
        if not isinstance(data["entries"], list):
            raise ValueError(f"entries must be a list; got {type(data['entries']).__name__}")
        entries = tuple(_stored_entry(item, f"entries[{i}]", added_count) for i, item in enumerate(data["entries"]))
        if len({e.id for e in entries}) != len(entries):
            raise ValueError("entries repeat an id")
        return added_count, FrozenMap((e.id, e) for e in entries)

    def _restore_state(self, parsed: tuple[int, FrozenMap[str, Guidance]]) -> None:
        added_count, entries = parsed
        with self.hold_trait_notifications():
            self.set_trait("added_count", added_count)
            self.set_trait("entries", entries)


def _record(e: Guidance) -> dict[str, Any]:
    """An entry as stored (what ``_stored_entry`` reads back)."""
    return {
        "id": e.id,
        "type": e.type,
        "text": e.text,
        "added_turn": e.added_turn,
        "ttl": e.ttl,
        "critical": e.critical,
    }


def _guidance_line(g: dict[str, Any]) -> str:
    return (
        f'<guidance type="{escape_attr(g["type"])}" expires_in="{g["turns_remaining"]}_turns">'
        f"{escape_text(g['text'])}</guidance>"
    )
