"""The steps of a scenario: one typed class per kind, each parsing, validating, writing and applying
itself, so adding a kind of step touches one class (and :data:`STEP_TYPES`).

==============  ==================================================================================
``step``        fields
==============  ==================================================================================
base_prompt     ``text``: the new base prompt template
profile         ``fields``: Profile fields to change (the others keep their values)
feed            ``trinket`` (class name), ``method`` (a ``@feed`` method), ``args`` (list),
                ``kwargs`` (object); args and kwargs optional
turn            ``n``: turns to complete (a positive integer, default 1)
collapse        ``summary`` (default ""), ``tools_used`` (list of strings, default [])
clock           exactly one of ``advance`` (seconds, a number >= 0) or ``set`` (ISO 8601 with offset)
compose         no fields: an explicit compose (auto composes after turns are not steps)
auto_compose    ``value``: true or false
send            ``exchange``: a user message sent to a model and the reply and usage it got
                (``wm_kernel.instruments.exchange``); a replay answers from it, with no network
add_trinket     ``trinket``: a trinket class name registered at this point (not built in: a
                factory passed to ``run``); later steps may feed it
==============  ==================================================================================

Examples
--------
>>> step = parse_step({"step": "turn", "n": 2}, "line 2", trinkets=())
>>> step, step.to_json()
(TurnStep(n=2), {'step': 'turn', 'n': 2})
>>> parse_step({"step": "turn", "n": 0}, "line 3", trinkets=())
Traceback (most recent call last):
...
wm_kernel.experiments.steps.ScenarioError: line 3: field 'n' must be a positive integer
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from wm_kernel.core.clock import ManualClock, parse_instant
from wm_kernel.core.profile import Profile
from wm_kernel.experiments.codec import decode_value
from wm_kernel.instruments.exchange import Exchange, ExchangeRecordedEvent
from wm_kernel.instruments.history import History
from wm_kernel.session import MAX_TURNS_AT_ONCE

if TYPE_CHECKING:
    from trinkets.base import EventAwareTrinket
    from wm_kernel.experiments.variants import Variant
    from wm_kernel.session import Session

#: The longest clock ``advance`` a step may hold, in seconds: what separates 0001 from 9999.
MAX_ADVANCE = (datetime.max.replace(tzinfo=None) - datetime.min).total_seconds()

PROFILE_FIELDS = tuple(f.name for f in dataclasses.fields(Profile) if f.init)


class ScenarioError(ValueError):
    """A scenario file or step is malformed, or a step failed while replaying.

    The message is one line naming where: ``scenario.jsonl line 7: field 'n' must be a positive
    integer`` (or ``step 7`` for a scenario built in Python).
    """


# -- checks shared by the steps and the header ------------------------------------------------------


def fail(where: str, message: str) -> ScenarioError:
    """The error for ``message`` at ``where`` (a line of a file, or a step number)."""
    return ScenarioError(f"{where}: {message}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool); ints too large for a float are numbers too."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def check_fields(obj: Mapping[str, Any], allowed: Sequence[str], where: str, what: str) -> None:
    """ScenarioError naming the first key of ``obj`` that is not ``allowed``."""
    for key in obj:
        if key not in allowed:
            raise fail(where, f"unknown field {key!r} for {what} (fields: {', '.join(allowed)})")


def check_profile_fields(fields: Any, where: str, name: str, base: Profile | None = None) -> dict[str, Any]:
    """A copy of ``fields`` once they are known Profile fields that make a valid Profile."""
    if not isinstance(fields, dict):
        raise fail(where, f"field {name!r} must be an object of Profile fields")
    for key in fields:
        if key not in PROFILE_FIELDS:
            raise fail(where, f"field {name!r} has unknown Profile field {key!r} (fields: {', '.join(PROFILE_FIELDS)})")
    try:
        (base.replace(**fields) if base is not None else Profile(**fields))
    except (TypeError, ValueError) as exc:
        raise fail(where, f"field {name!r}: {exc}") from None
    return dict(fields)


def check_instant(value: Any, where: str, name: str) -> str:
    """``value`` once it is an ISO 8601 date-time with an offset."""
    if not isinstance(value, str):
        raise fail(where, f"field {name!r} must be an ISO 8601 date-time string with an offset")
    try:
        parse_instant(value)
    except ValueError as exc:
        raise fail(where, f"field {name!r}: {exc}") from None
    return value


def builtin_class(name: str) -> type[EventAwareTrinket] | None:
    """The built-in trinket class of that name (MIRA HEAD's five newer ones included), or None."""
    import trinkets

    if name not in trinkets.MIRA_HEAD_NAMES:
        return None
    # a lazily loaded built-in (trinkets.__getattr__ returns Any): a trinket class
    return getattr(trinkets, name)  # type: ignore[no-any-return]


# -- replaying --------------------------------------------------------------------------------------


@dataclass
class Replay:
    """What a step applies itself to: the fresh Session, its ManualClock, the variant being run,
    the trinkets that variant switched off and those whose style it set."""

    session: Session
    clock: ManualClock
    variant: Variant
    disabled: set[str] = field(default_factory=set)
    styled: set[str] = field(default_factory=set)
    #: The trinket factories ``run`` was given, by name (an ``add_trinket`` step builds from them).
    factories: Mapping[str, Any] = field(default_factory=dict)


class TrinketNames(list[str]):
    """The trinket names a step may name while a scenario is read: the header's, then each
    ``add_trinket`` step's (:func:`parse_step` adds them as it reads those steps)."""


# -- the steps --------------------------------------------------------------------------------------


class Step(ABC):
    """One step of a scenario. Subclasses are frozen dataclasses named by ``kind``."""

    #: The ``step`` field of the JSON form.
    kind: ClassVar[str]
    #: The other fields the JSON form may have.
    fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    @abstractmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> Step:
        """The step ``raw`` (its JSON form, ``step`` and field names already checked) stands for;
        ScenarioError naming ``where`` and the field for anything invalid."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The JSON form: ``{"step": kind, ...fields}``."""

    @abstractmethod
    def apply(self, replay: Replay) -> None:
        """Do what the step says to the replay's Session."""

    def describe(self) -> str:
        """How an error names the step."""
        return f"{self.kind!r} step"


@dataclass(frozen=True)
class BasePromptStep(Step):
    text: str
    kind: ClassVar[str] = "base_prompt"
    fields: ClassVar[tuple[str, ...]] = ("text",)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> BasePromptStep:
        if not isinstance(raw.get("text"), str):
            raise fail(where, "field 'text' must be a string")
        return cls(raw["text"])

    def to_json(self) -> dict[str, Any]:
        return {"step": self.kind, "text": self.text}

    def apply(self, replay: Replay) -> None:
        replay.session.base_prompt = replay.variant.wording(self.text)


@dataclass(frozen=True)
class ProfileStep(Step):
    changes: Mapping[str, Any]
    kind: ClassVar[str] = "profile"
    fields: ClassVar[tuple[str, ...]] = ("fields",)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> ProfileStep:
        return cls(check_profile_fields(raw.get("fields"), where, "fields", Profile()))

    def to_json(self) -> dict[str, Any]:
        return {"step": self.kind, "fields": dict(self.changes)}

    def apply(self, replay: Replay) -> None:
        replay.session.profile = replay.session.profile.replace(**self.changes)


@dataclass(frozen=True)
class FeedStep(Step):
    trinket: str
    method: str
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    kind: ClassVar[str] = "feed"
    fields: ClassVar[tuple[str, ...]] = ("trinket", "method", "args", "kwargs")

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> FeedStep:
        trinket = raw.get("trinket")
        if not isinstance(trinket, str) or not trinket:
            raise fail(where, "field 'trinket' must be a trinket class name")
        if trinket not in trinkets:
            raise fail(
                where,
                f"field 'trinket': {trinket!r} is not one of the scenario's trinkets ({', '.join(trinkets) or 'none'})",
            )
        method = raw.get("method")
        if not isinstance(method, str) or not method.isidentifier():
            raise fail(where, "field 'method' must be the name of a feed method")
        builtin = builtin_class(trinket)
        if builtin is not None:
            from trinkets.base import feed_methods

            known = feed_methods(builtin)
            if method not in known:
                raise fail(
                    where,
                    f"field 'method': {method!r} is not a feed method of {trinket} (feed methods: {', '.join(known)})",
                )
        args = raw.get("args", [])
        if not isinstance(args, list):
            raise fail(where, "field 'args' must be a list")
        kwargs = raw.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise fail(where, "field 'kwargs' must be an object")
        for name, value in (("args", args), ("kwargs", kwargs)):
            try:
                decode_value(value)
            except ValueError as exc:
                raise fail(where, f"field {name!r}: {exc}") from None
        return cls(trinket, method, tuple(args), dict(kwargs))

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.kind,
            "trinket": self.trinket,
            "method": self.method,
            "args": list(self.args),
            "kwargs": dict(self.kwargs),
        }

    def apply(self, replay: Replay) -> None:
        trinket = replay.session.trinket(self.trinket)
        if self.method == "set_enabled" and trinket.name in replay.disabled:
            return  # the variant's switch wins over the recorded one
        if self.method == "set_style" and trinket.name in replay.styled:
            return  # and so does its style
        method = getattr(trinket, self.method, None)
        if method is None or not getattr(method, "__wm_feed__", False):
            raise ValueError(f"{self.method!r} is not a feed method of {trinket.name}")
        method(*decode_value(list(self.args)), **decode_value(dict(self.kwargs)))

    def describe(self) -> str:
        return f"feed {self.trinket}.{self.method}"


@dataclass(frozen=True)
class TurnStep(Step):
    n: int = 1
    kind: ClassVar[str] = "turn"
    fields: ClassVar[tuple[str, ...]] = ("n",)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> TurnStep:
        n = raw.get("n", 1)
        if not is_int(n) or n < 1:
            raise fail(where, "field 'n' must be a positive integer")
        if n > MAX_TURNS_AT_ONCE:
            raise fail(
                where,
                f"field 'n' must be a positive integer of at most "
                f"{MAX_TURNS_AT_ONCE:,} (one step's turns must finish; use several "
                f"steps)",
            )
        return cls(n)

    def to_json(self) -> dict[str, Any]:
        return {"step": self.kind, "n": self.n}

    def apply(self, replay: Replay) -> None:
        replay.session.advance_turn(self.n)


@dataclass(frozen=True)
class CollapseStep(Step):
    summary: str = ""
    tools_used: tuple[str, ...] = ()
    kind: ClassVar[str] = "collapse"
    fields: ClassVar[tuple[str, ...]] = ("summary", "tools_used")

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> CollapseStep:
        summary = raw.get("summary", "")
        if not isinstance(summary, str):
            raise fail(where, "field 'summary' must be a string")
        tools = raw.get("tools_used", [])
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise fail(where, "field 'tools_used' must be a list of strings")
        return cls(summary, tuple(tools))

    def to_json(self) -> dict[str, Any]:
        return {"step": self.kind, "summary": self.summary, "tools_used": list(self.tools_used)}

    def apply(self, replay: Replay) -> None:
        replay.session.collapse_segment(summary=self.summary, tools_used=self.tools_used)


@dataclass(frozen=True)
class ClockStep(Step):
    """A clock move: ``advance`` seconds forward, or ``set`` to an instant (exactly one)."""

    advance: int | float | None = None
    set: str | None = None
    kind: ClassVar[str] = "clock"
    fields: ClassVar[tuple[str, ...]] = ("advance", "set")

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> ClockStep:
        if ("advance" in raw) == ("set" in raw):
            raise fail(where, "a 'clock' step needs exactly one of the fields 'advance' or 'set'")
        if "advance" in raw:
            seconds = raw["advance"]
            if not is_number(seconds) or seconds < 0:
                raise fail(where, "field 'advance' must be a number of seconds >= 0")
            if seconds > MAX_ADVANCE:
                raise fail(
                    where,
                    f"field 'advance' is more than a clock can move (at most "
                    f"{MAX_ADVANCE:.0f} seconds, about 10,000 years)",
                )
            return cls(advance=seconds)
        return cls(set=check_instant(raw["set"], where, "set"))

    def to_json(self) -> dict[str, Any]:
        if self.advance is not None:
            return {"step": self.kind, "advance": self.advance}
        return {"step": self.kind, "set": self.set}

    def apply(self, replay: Replay) -> None:
        if self.advance is not None:
            now = replay.clock.now()
            # checked here, not left to the clock: datetime arithmetic past 9999 is an OverflowError
            try:
                now + timedelta(seconds=self.advance)
            except OverflowError:
                raise ValueError(
                    f"advancing the clock {self.advance!r} seconds from {now.isoformat()} passes the year 9999"
                ) from None
            replay.clock.advance(timedelta(seconds=self.advance))
        else:
            assert self.set is not None  # parse() makes exactly one of the two
            replay.clock.set(self.set)


@dataclass(frozen=True)
class ComposeStep(Step):
    kind: ClassVar[str] = "compose"

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> ComposeStep:
        return cls()

    def to_json(self) -> dict[str, Any]:
        return {"step": self.kind}

    def apply(self, replay: Replay) -> None:
        replay.session.compose()


@dataclass(frozen=True)
class AutoComposeStep(Step):
    value: bool
    kind: ClassVar[str] = "auto_compose"
    fields: ClassVar[tuple[str, ...]] = ("value",)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> AutoComposeStep:
        if not isinstance(raw.get("value"), bool):
            raise fail(where, "field 'value' must be true or false")
        return cls(raw["value"])

    def to_json(self) -> dict[str, Any]:
        return {"step": self.kind, "value": self.value}

    def apply(self, replay: Replay) -> None:
        replay.session.auto_compose = self.value


@dataclass(frozen=True)
class SendStep(Step):
    """A send recorded with its answer: replaying it records the same exchange at the replay's turn
    (no client, no network); the turn step that followed the send completes the turn."""

    exchange: Exchange
    kind: ClassVar[str] = "send"
    fields: ClassVar[tuple[str, ...]] = ("exchange",)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> SendStep:
        try:
            return cls(Exchange.from_json(raw.get("exchange")))
        except ValueError as exc:
            raise fail(where, f"field 'exchange': {exc}") from None

    def to_json(self) -> dict[str, Any]:
        return {"step": self.kind, "exchange": self.exchange.to_json()}

    def apply(self, replay: Replay) -> None:
        session = replay.session
        exchange = dataclasses.replace(self.exchange, turn=session.turn)
        History.of(session).record_exchange(exchange)
        session.bus.publish(
            ExchangeRecordedEvent.create(
                continuum_id=session.continuum_id, user_id=session.user_id, clock=session.clock, exchange=exchange
            )
        )


@dataclass(frozen=True)
class AddTrinketStep(Step):
    """A trinket registered after the session was built (``session.add_trinket``)."""

    trinket: str
    kind: ClassVar[str] = "add_trinket"
    fields: ClassVar[tuple[str, ...]] = ("trinket",)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str, trinkets: Sequence[str]) -> AddTrinketStep:
        trinket = raw.get("trinket")
        if not isinstance(trinket, str) or not trinket.isidentifier():
            raise fail(where, "field 'trinket' must be a trinket class name")
        if trinket in trinkets:
            raise fail(where, f"field 'trinket': {trinket!r} is registered already")
        return cls(trinket)

    def to_json(self) -> dict[str, Any]:
        return {"step": self.kind, "trinket": self.trinket}

    def apply(self, replay: Replay) -> None:
        factory = replay.factories.get(self.trinket) or builtin_class(self.trinket)
        if factory is None:
            raise ValueError(
                f"trinket {self.trinket!r} is not built in; pass factories="
                f"{{{self.trinket!r}: <class or factory>}} to run()"
            )
        replay.session.add_trinket(factory)

    def describe(self) -> str:
        return f"add_trinket {self.trinket}"


#: Every kind of step by its ``step`` field, in the order the file format documents them.
STEP_TYPES: dict[str, type[Step]] = {
    cls.kind: cls
    for cls in (
        BasePromptStep,
        ProfileStep,
        FeedStep,
        TurnStep,
        CollapseStep,
        ClockStep,
        ComposeStep,
        AutoComposeStep,
        SendStep,
        AddTrinketStep,
    )
}


def parse_step(raw: Any, where: str, trinkets: Sequence[str]) -> Step:
    """The step of one JSON object (a line of a file, or built in Python), validated; ScenarioError
    naming ``where`` and the field otherwise. ``trinkets``: the scenario's trinket names (a
    :class:`TrinketNames` grows by the ``add_trinket`` steps read)."""
    if not isinstance(raw, dict):
        raise fail(where, f"a step must be a JSON object, got {type(raw).__name__}")
    kind = raw.get("step")
    step_type = STEP_TYPES.get(kind) if isinstance(kind, str) else None
    if step_type is None:
        if "step" not in raw:
            raise fail(where, "field 'step' is missing")
        raise fail(where, f"field 'step' must be one of {', '.join(STEP_TYPES)} (got {kind!r})")
    check_fields(raw, ("step", *step_type.fields), where, f"a {kind!r} step")
    step = step_type.parse(raw, where, trinkets)
    if isinstance(step, AddTrinketStep) and isinstance(trinkets, TrinketNames):
        trinkets.append(step.trinket)
    return step
