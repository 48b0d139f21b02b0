"""Structures produced by the composer and WorkingMemory.

``ComposedPrompt`` is a ``dict`` with exactly the original's five keys, so code written against the
original (and ``json.dumps``) sees the same thing. What this project adds (per-section records, the
sections that were left out and why, rendering and export) lives on the object as attributes and
methods, never as extra keys.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

from traitlets import All, Bunch, HasTraits, Instance

# the original's keys and placements, named here too (``from wm_kernel.core.prompt import PLACEMENTS``)
from wm_kernel.core.prompt_dict import ComposedPromptDict
from wm_kernel.utils import views
from wm_kernel.utils.quickinit import quick_init


class TrinketState(TypedDict):
    section_name: str
    content: str
    cache_policy: bool
    last_updated: str | None


class AllTrinketStatesMeta(TypedDict):
    trinket_count: int
    loaded_at: str


class AllTrinketStates(TypedDict):
    trinkets: list[TrinketState]
    meta: AllTrinketStatesMeta


@quick_init
@dataclass(frozen=True, slots=True)
class SectionRecord:
    """One section as it went into a composed prompt.

    ``placement`` is where the layout put it; ``cached`` says whether it landed in the cached part of
    the system prompt (only ``system`` sections can); ``straggler`` marks a section the layout does not
    list (appended to ``system``).
    """

    name: str
    placement: str
    content: str
    cache_policy: bool
    trinket: str | None
    straggler: bool = False

    @property
    def chars(self) -> int:
        return len(self.content)

    @property
    def cached(self) -> bool:
        return self.placement == "system" and self.cache_policy


@quick_init
@dataclass(frozen=True, slots=True)
class OmittedSection:
    """A section that is not in the prompt, and why (a failed trinket, a disabled one, empty content,
    "over budget"). A section dropped by a token budget carries the ``tokens`` it would have cost
    and its ``priority``."""

    name: str
    trinket: str | None
    reason: str
    error: str = ""
    tokens: int | None = None
    priority: int | None = None


#: The owner the blame map gives to text the composer writes itself (separators, frames, the HUD).
COMPOSER = "(composer)"


@dataclass(frozen=True, slots=True)
class BlameSpan:
    """Characters ``start:end`` of one prompt key (``cached_content``, ``post_history_items[0]``...)
    and who wrote them: a section and its trinket, or :data:`COMPOSER` (trinket None)."""

    key: str
    start: int
    end: int
    section: str
    trinket: str | None

    def __len__(self) -> int:
        return self.end - self.start


#: How the composer describes who wrote a prompt: key -> ((length, owner), ...) in text order, where
#: owner is the index of the section in ``ComposedPrompt.sections`` or -1 for the composer.
BlameData = dict[str, tuple[tuple[int, int], ...]]


@dataclass(frozen=True, slots=True)
class TrimmedSection:
    """A section the budget kept with only its best ``kept`` of ``total`` items."""

    name: str
    trinket: str | None
    kept: int
    total: int
    tokens: int
    full_tokens: int


@dataclass(frozen=True)
class BudgetReport:
    """What one compose kept and dropped (``ComposedPrompt.budget``).

    ``priorities`` has every section the compose held (the base prompt at ``NEVER_DROP``). Without a
    budget nothing is counted: ``tokens`` is empty and ``total``/``full`` are None.
    """

    budget: int | None = None
    step: int | None = None
    priorities: Mapping[str, int] = field(default_factory=dict)
    #: the placement of every section the compose held (dropped ones included)
    placements: Mapping[str, str] = field(default_factory=dict)
    #: cost of each section counted (text + joiner), kept or dropped
    tokens: Mapping[str, int] = field(default_factory=dict)
    #: estimated tokens of the prompt as composed, and with nothing dropped
    total: int | None = None
    full: int | None = None
    dropped: tuple[OmittedSection, ...] = ()
    trimmed: tuple[TrimmedSection, ...] = ()
    #: the step band of the overflow (0: within budget, or no step)
    band: int = 0
    #: the lowest priority still kept whole when something was dropped, else None
    cutoff: int | None = None
    #: the cut of the previous compose was kept (same band, still fits)
    held: bool = False
    #: the counter's label (its name, with "≈" and the band for an estimate)
    tokenizer: str = ""
    #: what each section cap did in this compose (wm_kernel.core.composer.caps), before the budget's fit
    caps: tuple[Any, ...] = ()
    #: the upper bound of ``total`` for an estimated count (the fit is taken on it); None when exact
    upper: int | None = None

    @property
    def dropped_names(self) -> list[str]:
        return [d.name for d in self.dropped]

    def summary(self) -> str:
        """One line: tokens against the budget, the cut, what was dropped or trimmed."""
        if self.budget is None:
            return "no token budget"
        if self.upper is None:
            parts = [f"{self.total} / {self.budget} tokens, sections with joiners and HUD frame ({self.tokenizer})"]
        else:
            parts = [
                f"≈ {self.total} tokens, up to {self.upper} / {self.budget}, sections with joiners and HUD "
                f"frame ({self.tokenizer}; cut on the upper bound)"
            ]
        if self.step is not None:
            parts.append(f"step {self.step}, band {self.band}" + (", cut held" if self.held else ""))
        if self.dropped:
            parts.append(
                f"cut at priority {self.cutoff}; dropped " + ", ".join(f"{d.name} ({d.tokens})" for d in self.dropped)
            )
        for t in self.trimmed:
            parts.append(f"{t.name}: {t.total - t.kept} of {t.total} items dropped")
        return " · ".join(parts)


class ComposedPrompt(dict[str, Any]):
    """The composed prompt: the original's five keys, plus what this project knows about it.

    Attributes
    ----------
    sections:
        ``SectionRecord`` for each section in the prompt, in output order.
    omitted:
        ``OmittedSection`` for each known section that is not in the prompt.
    turn:
        The session turn it was composed at, when a Session composed it (else None).
    hud_frame:
        ``(namespace, title)`` of the notification centre's frame, as the composer wrote it (None
        when not composed by a composer), so a record of the prompt can rebuild it exactly.
    budget:
        The :class:`~wm_kernel.core.composer.budget.BudgetReport` of the compose (priorities, and what a token
        budget dropped), when WorkingMemory composed it (else None).
    """

    __slots__ = ("sections", "omitted", "turn", "previous", "hud_frame", "budget", "_blame")

    def __init__(
        self,
        cached_content: str = "",
        non_cached_content: str = "",
        conversation_prefix_items: Iterable[str] = (),
        post_history_items: Iterable[str] = (),
        notification_center: str = "",
        *,
        sections: Iterable[SectionRecord] = (),
        omitted: Iterable[OmittedSection] = (),
        turn: int | None = None,
        hud_frame: tuple[str, str] | None = None,
        blame: BlameData | Callable[[], BlameData] | None = None,
        budget: BudgetReport | None = None,
    ) -> None:
        # item by item, not super().__init__(**keys): a compose builds one, and keywords cost
        self["cached_content"] = cached_content
        self["non_cached_content"] = non_cached_content
        self["conversation_prefix_items"] = list(conversation_prefix_items)
        self["post_history_items"] = list(post_history_items)
        self["notification_center"] = notification_center
        self.sections: tuple[SectionRecord, ...] = tuple(sections)
        self.omitted: tuple[OmittedSection, ...] = tuple(omitted)
        self.turn = turn
        self.hud_frame = hud_frame
        self.previous: ComposedPrompt | None = None
        self.budget = budget
        # the map, or (from a composer) what works it out when first asked for
        self._blame: BlameData | Callable[[], BlameData] | None = blame

    @classmethod
    def from_parts(
        cls,
        cached_content: str,
        non_cached_content: str,
        conversation_prefix_items: Iterable[str],
        post_history_items: Iterable[str],
        notification_center: str,
        sections: tuple[SectionRecord, ...],
        omitted: Iterable[OmittedSection],
        hud_frame: tuple[str, str] | None,
        blame: BlameData | Callable[[], BlameData] | None,
    ) -> ComposedPrompt:
        """The prompt ``ComposedPrompt(...)`` builds from the same values, taken positionally
        (what a composer builds on every compose: keywords cost; ``sections`` already a tuple)."""
        self = cls.__new__(cls)
        self["cached_content"] = cached_content
        self["non_cached_content"] = non_cached_content
        self["conversation_prefix_items"] = list(conversation_prefix_items)
        self["post_history_items"] = list(post_history_items)
        self["notification_center"] = notification_center
        self.sections = sections
        self.omitted = tuple(omitted)
        self.turn = None
        self.hud_frame = hud_frame
        self.previous = None
        self.budget = None
        self._blame = blame
        return self

    # -- the original's fields as attributes, for readability in notebooks
    @property
    def cached_content(self) -> str:
        return cast(str, self["cached_content"])

    @property
    def non_cached_content(self) -> str:
        return cast(str, self["non_cached_content"])

    @property
    def conversation_prefix_items(self) -> list[str]:
        return cast("list[str]", self["conversation_prefix_items"])

    @property
    def post_history_items(self) -> list[str]:
        return cast("list[str]", self["post_history_items"])

    @property
    def notification_center(self) -> str:
        return cast(str, self["notification_center"])

    @property
    def system_prompt(self) -> str:
        """Cached and non-cached system content joined as one text (what a single system string gets)."""
        parts = [p for p in (self["cached_content"], self["non_cached_content"]) if p]
        return "\n\n".join(parts)

    def section(self, name: str) -> SectionRecord:
        """The record of a section in this prompt; ValueError naming the known ones if absent."""
        for record in self.sections:
            if record.name == name:
                return record
        for gone in self.omitted:
            if gone.name == name:
                raise ValueError(
                    f"section {name!r} is not in this prompt: {gone.reason}"
                    + (f" ({gone.error})" if gone.error else "")
                )
        known = ", ".join(r.name for r in self.sections) or "none"
        raise ValueError(f"no section {name!r} in this prompt (sections: {known})")

    def section_names(self, placement: str | None = None) -> list[str]:
        return [r.name for r in self.sections if placement is None or r.placement == placement]

    # -- the blame map: who wrote each character (built by the composer as it joins)
    def blame_keys(self) -> list[str]:
        """The keys the blame map covers: the two system strings and the notification centre, and
        one ``conversation_prefix_items[i]`` / ``post_history_items[i]`` per item, non-empty only."""
        keys = [k for k in ("cached_content", "non_cached_content") if self[k]]
        for key in ("conversation_prefix_items", "post_history_items"):
            keys += [f"{key}[{i}]" for i, item in enumerate(self[key]) if item]
        return keys + (["notification_center"] if self["notification_center"] else [])

    def _blame_data(self) -> BlameData:
        if self._blame is None:
            if any(self.blame_keys()):
                raise ValueError(
                    "this ComposedPrompt has no blame map (built from a plain dict?); "
                    "only prompts from a composer know who wrote each character"
                )
            return {}
        if callable(self._blame):
            self._blame = self._blame()
        return self._blame

    def blame(self, key: str | None = None) -> list[BlameSpan]:
        """Spans ``(key, start, end, section, trinket)`` covering every character of every key once,
        in text order (only those of ``key`` when given). Separators, rules, the HUD frame and its
        blank lines belong to :data:`COMPOSER`."""
        data = self._blame_data()
        keys = self.blame_keys() if key is None else [self._check_blame_key(key)]
        spans = []
        for name in keys:
            start = 0
            for length, owner in data.get(name, ()):
                if owner < 0:
                    section, trinket = COMPOSER, None
                else:
                    record = self.sections[owner]
                    section, trinket = record.name, record.trinket
                spans.append(BlameSpan(name, start, start + length, section, trinket))
                start += length
        return spans

    def blame_at(self, key: str, offset: int) -> BlameSpan:
        """The span of ``key`` holding character ``offset`` (ValueError if out of range)."""
        spans = self.blame(key)
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError(f"offset must be an int, got {type(offset).__name__}")
        size = spans[-1].end if spans else 0
        if not 0 <= offset < size:
            raise ValueError(
                f"offset {offset} is outside {key} (0..{size - 1})"
                if size
                else f"offset {offset} is outside {key}, which is empty"
            )
        return spans[bisect.bisect_right([s.start for s in spans], offset) - 1]

    def _check_blame_key(self, key: str) -> str:
        if not self._has_text(key):  # one key looked at, not every item's name made (a long conversation)
            known = self.blame_keys()
            raise ValueError(f"no text under {key!r} in this prompt (keys with text: {', '.join(known) or 'none'})")
        return key

    def _has_text(self, key: str) -> bool:
        """Whether ``key`` is one of :meth:`blame_keys`."""
        if key in ("cached_content", "non_cached_content", "notification_center"):
            return bool(self[key])
        name, bracket, rest = key.partition("[")
        index = rest[:-1]
        if name not in ("conversation_prefix_items", "post_history_items") or not bracket or rest[-1:] != "]":
            return False
        if not (index.isascii() and index.isdecimal()) or str(int(index)) != index:
            return False
        items = self[name]
        return int(index) < len(items) and bool(items[int(index)])

    def as_dict(self) -> ComposedPromptDict:
        """A plain dict copy with the original's five keys."""
        # the five keys __init__ set, with their types; a comprehension cannot show mypy that
        return {key: (list(value) if isinstance(value, list) else value) for key, value in self.items()}  # type: ignore[return-value]

    def to_json(self, **kwargs: Any) -> str:
        import json

        return json.dumps(self.as_dict(), ensure_ascii=False, **kwargs)

    # -- the views are the display layer's (registered in wm_kernel.utils.views); the request
    # bodies are the wire dialects' (wm_kernel.dialects), loaded on first use
    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None
    ) -> views.MimeBundle:
        return views.composed_mimebundle(self, include=include, exclude=exclude)

    def _repr_pretty_(self, printer: views.PrettyPrinter, cycle: bool) -> None:
        # IPython's text/plain formatter has a printer for dict, which outranks the mime bundle's
        # text/plain; this makes the text view win there too
        printer.text(views.composed_mimebundle(self, include={"text/plain"})["text/plain"])

    def to_anthropic(self, history: Iterable[dict[str, Any]] = (), **kwargs: Any) -> dict[str, Any]:
        """A Messages API request body: the ``anthropic`` wire's ``body`` (see
        ``wm_kernel.dialects.anthropic.to_anthropic``)."""
        return self._body("anthropic", history, kwargs)

    def to_openai(self, history: Iterable[dict[str, Any]] = (), **kwargs: Any) -> dict[str, Any]:
        """A Chat Completions request body: the ``openai`` wire's ``body`` (see
        ``wm_kernel.dialects.openai_chat.to_openai``)."""
        return self._body("openai", history, kwargs)

    def to_mira(self, history: Iterable[dict[str, Any]] = (), **kwargs: Any) -> dict[str, Any]:
        """The body MIRA's orchestrator posts: the ``mira`` wire's ``body`` (see
        ``wm_kernel.dialects.mira.to_mira``)."""
        return self._body("mira", history, kwargs)

    def _body(self, wire: str, history: Iterable[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
        # the registry reads the wires when first asked: a compose that never builds a body never loads them
        from wm_kernel.dialects.registry import get_dialect

        return get_dialect(wire).body(self, history, **options)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{r.name}={r.chars}" for r in self.sections)
        return f"<ComposedPrompt turn={self.turn} sections: {sizes or 'none'}>"

    def __reduce__(self) -> tuple[Any, ...]:  # dict subclasses with slots need help to pickle/copy
        blame = None if self._blame is None else self._blame_data()
        return (
            _rebuild_composed,
            (self.as_dict(), self.sections, self.omitted, self.turn, self.hud_frame, blame, self.budget),
        )


def _rebuild_composed(
    data: ComposedPromptDict,
    sections: tuple[SectionRecord, ...],
    omitted: tuple[OmittedSection, ...],
    turn: int | None,
    hud_frame: tuple[str, str] | None = None,
    blame: BlameData | None = None,
    budget: BudgetReport | None = None,
) -> ComposedPrompt:
    return ComposedPrompt(
        **data, sections=sections, omitted=omitted, turn=turn, hud_frame=hud_frame, blame=blame, budget=budget
    )


class ComposedPromptTrait(Instance["ComposedPrompt | None"]):
    """A trait holding a ComposedPrompt that notifies on every new compose.

    ComposedPrompt is a dict, and traitlets stays silent when the new value *equals* the old one; a
    compose that produced the same text is still a new compose (a new turn, new metadata), so this
    trait tells of every new object, through ``HasTraits.notify_change`` (which also honours
    ``hold_trait_notifications``), and compares nothing.

    Its ``set`` is the one place wm-kernel reads traitlets' internals (the owner's
    ``_trait_values``, ``_trait_notifiers``, ``_trait_validators`` and ``_cross_validation_lock``,
    as traitlets 5.9-5.16, the pinned range, keep them): a compose sets it once per cycle, and
    traitlets' own set, with its equality test, validation by lookup and a change record built for
    nobody, was the largest single cost of an 8-trinket compose cycle after the trinkets' updates
    (2.1 µs of 34, measured by ``bench/compose.py``; docs/performance.md). What it keeps of
    traitlets: a value not a ComposedPrompt (or None) is a TraitError, ``@validate`` cross-
    validation runs, observers of the name or of all traits hear every new object, a held
    change waits for the end of ``hold_trait_notifications``, and an owner that overrides
    ``notify_change`` (a widget) is told always. Not kept: the deprecated magic methods
    ``_<name>_validate`` and ``_<name>_changed`` (traitlets 4), which nothing here defines.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(ComposedPrompt, allow_none=True, **kwargs)

    def set(self, obj: Any, value: Any) -> None:
        if value is not None and not isinstance(value, ComposedPrompt):
            self.error(obj, value)
        name = str(self.name)
        if obj._cross_validation_lock is False and name in obj._trait_validators:
            value = self._cross_validate(obj, value)
        values = obj._trait_values
        old = values.get(name, self.default_value)
        values[name] = value
        if value is old:
            return
        notifiers = obj._trait_notifiers
        if (
            name in notifiers
            or All in notifiers
            or obj._cross_validation_lock  # inside hold_trait_notifications: it keeps the change
            or type(obj).notify_change is not HasTraits.notify_change
        ):
            obj.notify_change(Bunch(name=name, old=old, new=value, owner=obj, type="change"))
