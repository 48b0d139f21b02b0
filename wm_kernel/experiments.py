"""Prompt experiments: scripted scenarios, recording and replay, variants side by side.

A :class:`Scenario` is a script of what happens to a Session: base prompt changes, feeds to named
trinkets, turns, segment collapses, clock moves, profile changes and explicit composes. It is saved
as a JSON Lines file, can be recorded from a live Session (:meth:`Scenario.record`) and replayed into
a fresh one (:meth:`Scenario.run`), which composes exactly the prompts the recorded session did.
:func:`compare` replays one scenario under several :class:`Variant` s (a layout, a trinket switched
off, another base prompt or wording) and returns one DataFrame keyed by variant and turn.

The file format (version 1)
---------------------------
The first line is the header, a JSON object::

    {"format": "wm-kernel-scenario", "version": 1, "base_prompt": "You help {first_name}.",
     "profile": {"first_name": "Ada", "timezone": "Europe/London"},
     "clock": "2026-11-30T09:00:00+00:00", "user_id": "notebook",
     "trinkets": ["TimeManager", "PeanutGalleryTrinket"],
     "continuum_id": "support-1", "auto_compose": true, "layout": null}

``format``, ``version`` and ``clock`` are required; the rest default to a Session's defaults
(``trinkets``: every built-in one; ``layout``: null for ``Layout.default()``, else
``{"name": ..., "placements": {placement: [section, ...]}}``). Every further line is one step, a
JSON object whose ``step`` field names its kind; blank lines are skipped:

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
==============  ==================================================================================

Feed arguments are JSON. Values JSON cannot hold are written as one-key objects with a ``$`` tag:
``{"$datetime": "2026-11-30T09:00:00+00:00"}``, ``{"$date": "2026-11-30"}``,
``{"$timedelta": 90.0}`` (seconds) and ``{"$tuple": [...]}``; an ordinary one-key object whose key
starts with ``$`` is wrapped as ``{"$dict": {...}}``. Anything else (sets, custom objects, NaN) cannot
be recorded.

Examples
--------
>>> sc = Scenario(base_prompt="You help {first_name}.", profile={"first_name": "Ada"},
...               clock="2026-11-30T09:00:00+00:00", trinkets=["PeanutGalleryTrinket"])
>>> _ = sc.compose().feed("PeanutGalleryTrinket", "add_guidance", "concern", "Slow down.", ttl=1)
>>> _ = sc.advance_turn(3)
>>> session = sc.run()
>>> session.turn, session.composed["notification_center"] == ""
(3, True)
>>> print(sc.dumps().splitlines()[2])
{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "add_guidance", "args": ["concern", "Slow down."], "kwargs": {"ttl": 1}}
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence, TextIO, cast

from wm_kernel.clock import ManualClock, parse_instant
from wm_kernel.composer import Layout
from wm_kernel.profile import Profile

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from trinkets.base import EventAwareTrinket
    from wm_kernel.session import Session
    from wm_kernel.types import ComposedPrompt

FORMAT = "wm-kernel-scenario"
VERSION = 1

STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "base_prompt": ("text",),
    "profile": ("fields",),
    "feed": ("trinket", "method", "args", "kwargs"),
    "turn": ("n",),
    "collapse": ("summary", "tools_used"),
    "clock": ("advance", "set"),
    "compose": (),
    "auto_compose": ("value",),
}
HEADER_FIELDS = ("format", "version", "base_prompt", "profile", "clock", "user_id", "trinkets",
                 "continuum_id", "auto_compose", "layout")
DEFAULT_BASE_PROMPT = "You are a helpful assistant talking with {first_name}."
_PROFILE_FIELDS = tuple(f.name for f in dataclasses.fields(Profile) if f.init)


class ScenarioError(ValueError):
    """A scenario file or step is malformed, or a step failed while replaying.

    The message is one line naming where: ``scenario.jsonl line 7: field 'n' must be a positive
    integer`` (or ``step 7`` for a scenario built in Python).
    """


# -- encoding feed arguments --------------------------------------------------------------------

_TAGS = ("$datetime", "$date", "$timedelta", "$tuple", "$dict")


def encode_value(value: Any) -> Any:
    """A JSON-ready form of a feed argument (see the module docstring for the ``$`` tags).

    >>> encode_value({"due": datetime.fromisoformat("2026-11-30T10:00:00+00:00"), "tags": ("a",)})
    {'due': {'$datetime': '2026-11-30T10:00:00+00:00'}, 'tags': {'$tuple': ['a']}}
    >>> encode_value({1, 2})
    Traceback (most recent call last):
    ...
    TypeError: cannot record a value of type set (JSON values, datetime, date, timedelta and tuples can be recorded)
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"cannot record the non-finite number {value!r}")
        return value
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, timedelta):
        return {"$timedelta": value.total_seconds()}
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(v) for v in value]}
    if isinstance(value, list):
        return [encode_value(v) for v in value]
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"cannot record a mapping with a {type(key).__name__} key ({key!r}); "
                                f"keys must be strings")
            out[key] = encode_value(item)
        if len(out) == 1 and next(iter(out)).startswith("$"):
            return {"$dict": out}
        return out
    raise TypeError(f"cannot record a value of type {type(value).__name__} (JSON values, datetime, "
                    f"date, timedelta and tuples can be recorded)")


def decode_value(value: Any) -> Any:
    """The Python value an :func:`encode_value` form stands for (ValueError for a bad tag).

    >>> decode_value({"$datetime": "2026-11-30T10:00:00+00:00"}).hour
    10
    >>> decode_value({"$tuple": [1, {"$timedelta": 60}]})
    (1, datetime.timedelta(seconds=60))
    """
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        tag, inner = next(iter(value.items()))
        if tag.startswith("$"):
            return _decode_tagged(tag, inner)
    return {key: decode_value(item) for key, item in value.items()}


def _decode_tagged(tag: str, inner: Any) -> Any:
    if tag == "$datetime":
        if not isinstance(inner, str):
            raise ValueError("a $datetime value must be an ISO 8601 string")
        try:
            return datetime.fromisoformat(inner)
        except ValueError:
            raise ValueError(f"$datetime {inner!r} is not an ISO 8601 date-time") from None
    if tag == "$date":
        if not isinstance(inner, str):
            raise ValueError("a $date value must be an ISO 8601 string")
        try:
            return date.fromisoformat(inner)
        except ValueError:
            raise ValueError(f"$date {inner!r} is not an ISO 8601 date") from None
    if tag == "$timedelta":
        if isinstance(inner, bool) or not isinstance(inner, (int, float)):
            raise ValueError("a $timedelta value must be a number of seconds")
        return timedelta(seconds=inner)
    if tag == "$tuple":
        if not isinstance(inner, list):
            raise ValueError("a $tuple value must be a list")
        return tuple(decode_value(v) for v in inner)
    if tag == "$dict":
        if not isinstance(inner, dict):
            raise ValueError("a $dict value must be an object")
        return {key: decode_value(item) for key, item in inner.items()}
    raise ValueError(f"unknown tag {tag!r} (tags: {', '.join(_TAGS)})")


# -- validation -----------------------------------------------------------------------------------

def _fail(where: str, message: str) -> ScenarioError:
    return ScenarioError(f"{where}: {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_fields(obj: Mapping[str, Any], allowed: Sequence[str], where: str, what: str) -> None:
    for key in obj:
        if key not in allowed:
            raise _fail(where, f"unknown field {key!r} for {what} (fields: {', '.join(allowed)})")


def _check_profile_fields(fields: Any, where: str, name: str, base: Profile | None = None) -> dict[str, Any]:
    if not isinstance(fields, dict):
        raise _fail(where, f"field {name!r} must be an object of Profile fields")
    for key in fields:
        if key not in _PROFILE_FIELDS:
            raise _fail(where, f"field {name!r} has unknown Profile field {key!r} "
                               f"(fields: {', '.join(_PROFILE_FIELDS)})")
    try:
        (base.replace(**fields) if base is not None else Profile(**fields))
    except (TypeError, ValueError) as exc:
        raise _fail(where, f"field {name!r}: {exc}") from None
    return dict(fields)


def _check_instant(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str):
        raise _fail(where, f"field {name!r} must be an ISO 8601 date-time string with an offset")
    try:
        parse_instant(value)
    except ValueError as exc:
        raise _fail(where, f"field {name!r}: {exc}") from None
    return value


def _check_layout(value: Any, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("placements"), dict):
        raise _fail(where, "field 'layout' must be null or {\"name\": ..., \"placements\": "
                           "{placement: [section, ...]}}")
    _check_fields(value, ("name", "placements"), where, "the layout")
    name = value.get("name", "custom")
    if not isinstance(name, str):
        raise _fail(where, "field 'layout': 'name' must be a string")
    try:
        Layout(value["placements"], name=name)
    except (TypeError, ValueError) as exc:
        raise _fail(where, f"field 'layout': {exc}") from None
    return {"name": name, "placements": {p: list(s) for p, s in value["placements"].items()}}


def _check_step(raw: Any, where: str, trinket_names: Sequence[str]) -> dict[str, Any]:
    """A validated copy of one step (JSON form), or ScenarioError naming the field."""
    if not isinstance(raw, dict):
        raise _fail(where, f"a step must be a JSON object, got {type(raw).__name__}")
    kind = raw.get("step")
    if kind not in STEP_FIELDS:
        if "step" not in raw:
            raise _fail(where, "field 'step' is missing")
        raise _fail(where, f"field 'step' must be one of {', '.join(STEP_FIELDS)} (got {kind!r})")
    _check_fields(raw, ("step", *STEP_FIELDS[kind]), where, f"a {kind!r} step")
    step: dict[str, Any] = {"step": kind}
    if kind == "base_prompt":
        if not isinstance(raw.get("text"), str):
            raise _fail(where, "field 'text' must be a string")
        step["text"] = raw["text"]
    elif kind == "profile":
        step["fields"] = _check_profile_fields(raw.get("fields"), where, "fields", Profile())
    elif kind == "feed":
        trinket = raw.get("trinket")
        if not isinstance(trinket, str) or not trinket:
            raise _fail(where, "field 'trinket' must be a trinket class name")
        if trinket not in trinket_names:
            raise _fail(where, f"field 'trinket': {trinket!r} is not one of the scenario's trinkets "
                               f"({', '.join(trinket_names) or 'none'})")
        method = raw.get("method")
        if not isinstance(method, str) or not method.isidentifier():
            raise _fail(where, "field 'method' must be the name of a feed method")
        builtin = _builtin_class(trinket)
        if builtin is not None:
            from trinkets.base import feed_methods

            known = feed_methods(builtin)
            if method not in known:
                raise _fail(where, f"field 'method': {method!r} is not a feed method of {trinket} "
                                   f"(feed methods: {', '.join(known)})")
        args = raw.get("args", [])
        if not isinstance(args, list):
            raise _fail(where, "field 'args' must be a list")
        kwargs = raw.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise _fail(where, "field 'kwargs' must be an object")
        for name, value in (("args", args), ("kwargs", kwargs)):
            try:
                decode_value(value)
            except ValueError as exc:
                raise _fail(where, f"field {name!r}: {exc}") from None
        step.update(trinket=trinket, method=method, args=list(args), kwargs=dict(kwargs))
    elif kind == "turn":
        n = raw.get("n", 1)
        if not _is_int(n) or n < 1:
            raise _fail(where, "field 'n' must be a positive integer")
        step["n"] = n
    elif kind == "collapse":
        summary = raw.get("summary", "")
        if not isinstance(summary, str):
            raise _fail(where, "field 'summary' must be a string")
        tools = raw.get("tools_used", [])
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise _fail(where, "field 'tools_used' must be a list of strings")
        step.update(summary=summary, tools_used=list(tools))
    elif kind == "clock":
        if ("advance" in raw) == ("set" in raw):
            raise _fail(where, "a 'clock' step needs exactly one of the fields 'advance' or 'set'")
        if "advance" in raw:
            seconds = raw["advance"]
            if not _is_number(seconds) or seconds < 0:
                raise _fail(where, "field 'advance' must be a number of seconds >= 0")
            step["advance"] = seconds
        else:
            step["set"] = _check_instant(raw["set"], where, "set")
    elif kind == "auto_compose":
        if not isinstance(raw.get("value"), bool):
            raise _fail(where, "field 'value' must be true or false")
        step["value"] = raw["value"]
    return step


def _builtin_class(name: str) -> "type[EventAwareTrinket] | None":
    import trinkets

    if name not in trinkets.BUILTIN_NAMES:
        return None
    # a lazily loaded built-in (trinkets.__getattr__ returns Any): a trinket class
    return getattr(trinkets, name)  # type: ignore[no-any-return]


def _default_trinkets() -> tuple[str, ...]:
    import trinkets

    return tuple(trinkets.BUILTIN_NAMES)


# -- atomic writes --------------------------------------------------------------------------------

def atomic_write(path: "str | os.PathLike[str]", write: Callable[[TextIO], None]) -> None:
    """Call ``write(file)`` on a temporary file beside ``path``, then rename it over ``path``.

    If ``write`` (or anything before the rename) raises, the temporary file is removed and ``path``
    is left exactly as it was: a reader never sees a half-written file.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise FileNotFoundError(f"no such directory: {str(directory)!r}")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file private (0600); give it the mode the file had, or a normal one
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _json_line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


# -- the scenario ---------------------------------------------------------------------------------

@dataclass
class Scenario:
    """A scripted sequence of steps for a Session, with the settings of the Session it starts from.

    Build one in Python with the step methods (each returns the scenario, for chaining), load one
    with :meth:`load`, or record a live Session with :meth:`record`.

    Parameters
    ----------
    base_prompt, user_id, continuum_id, auto_compose:
        As for :class:`~wm_kernel.session.Session`.
    profile:
        A :class:`~wm_kernel.profile.Profile` or a dict of its fields.
    clock:
        The start time of the replay's ManualClock (aware datetime or ISO 8601 with offset).
    trinkets:
        Trinket class names to register, in order (default: every built-in trinket). Names that are
        not built in need a factory passed to :meth:`run`.
    layout:
        The layout (None: ``Layout.default()``).
    steps:
        Steps in their JSON form (see the module docstring); validated.
    """

    base_prompt: str = DEFAULT_BASE_PROMPT
    profile: dict[str, Any] = field(default_factory=dict)
    clock: str = "2026-01-01T00:00:00+00:00"
    user_id: str = "notebook"
    trinkets: tuple[str, ...] = field(default_factory=_default_trinkets)
    continuum_id: str | None = None
    auto_compose: bool = True
    layout: Any = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    source: str = field(default="", compare=False, repr=False)
    _lines: list[int | None] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.profile, Profile):
            self.profile = profile_fields(self.profile)
        if isinstance(self.clock, datetime):
            self.clock = parse_instant(self.clock).isoformat()
        if isinstance(self.layout, Layout):
            self.layout = None if self.layout == Layout.default() else {
                "name": self.layout.name, "placements": self.layout.as_dict()}
        if isinstance(self.trinkets, (list, tuple)):
            self.trinkets = tuple(self.trinkets)
        header = self._header()
        _check_header(header, "scenario header")
        self.layout = _check_layout(self.layout, "scenario header")
        steps, self.steps, self._lines = list(self.steps), [], []
        for raw in steps:
            self._append(raw)

    # -- reading and writing
    @classmethod
    def load(cls, path: "str | os.PathLike[str]") -> "Scenario":
        """Read a scenario file; ScenarioError naming the line and field for anything malformed."""
        name = str(path)
        with open(path, encoding="utf-8") as handle:
            return cls._parse(handle, name)

    @classmethod
    def loads(cls, text: str, source: str = "<scenario>") -> "Scenario":
        """Parse a scenario from the text of a file."""
        return cls._parse(text.splitlines(), source)

    @classmethod
    def _parse(cls, lines: Iterable[str], source: str) -> "Scenario":
        header: dict[str, Any] | None = None
        steps: list[dict[str, Any]] = []
        numbers: list[int | None] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{source} line {number}"
            try:
                obj = json.loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                raise _fail(where, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
            if header is None:
                if not isinstance(obj, dict):
                    raise _fail(where, "the first line must be the scenario header (a JSON object)")
                header = _check_header(obj, where, in_file=True)
                continue
            steps.append(_check_step(obj, where, header["trinkets"]))
            numbers.append(number)
        if header is None:
            raise ScenarioError(f"{source}: empty file (expected a header line)")
        header.pop("format")
        header.pop("version")
        scenario = cls(**header)
        scenario.steps, scenario._lines, scenario.source = steps, numbers, source
        return scenario

    def dumps(self) -> str:
        """The text of the scenario file: the header line, then one line per step."""
        return "".join(line + "\n" for line in self._dump_lines())

    def _dump_lines(self) -> Iterator[str]:
        yield _json_line({"format": FORMAT, "version": VERSION, **self._header()})
        for step in self.steps:
            yield _json_line(step)

    def save(self, path: "str | os.PathLike[str]") -> None:
        """Write the scenario file atomically (a temporary file renamed over ``path``)."""

        def write(handle: TextIO) -> None:
            for line in self._dump_lines():
                handle.write(line + "\n")

        atomic_write(path, write)

    def _header(self) -> dict[str, Any]:
        return {"base_prompt": self.base_prompt, "profile": dict(self.profile), "clock": self.clock,
                "user_id": self.user_id, "trinkets": list(self.trinkets),
                "continuum_id": self.continuum_id, "auto_compose": self.auto_compose,
                "layout": self.layout}

    # -- building
    def _where(self, index: int) -> str:
        line = self._lines[index] if index < len(self._lines) else None
        if line is not None:
            return f"{self.source} line {line}"
        return f"step {index + 1}"

    def _append(self, raw: Mapping[str, Any]) -> "Scenario":
        where = f"step {len(self.steps) + 1}"
        self.steps.append(_check_step(dict(raw), where, self.trinkets))
        self._lines.append(None)
        return self

    def set_base_prompt(self, text: str) -> "Scenario":
        """Replace the base prompt template at this point."""
        return self._append({"step": "base_prompt", "text": text})

    def set_profile(self, **fields: Any) -> "Scenario":
        """Change some Profile fields (``account_created`` as an ISO string or aware datetime)."""
        if isinstance(fields.get("account_created"), datetime):
            fields["account_created"] = fields["account_created"].isoformat()
        return self._append({"step": "profile", "fields": fields})

    def feed(self, trinket: str, method: str, *args: Any, **kwargs: Any) -> "Scenario":
        """Call ``trinket.method(*args, **kwargs)`` (a ``@feed`` method) at this point."""
        try:
            encoded_args, encoded_kwargs = encode_value(list(args)), encode_value(kwargs)
        except TypeError as exc:
            raise TypeError(f"feed {trinket}.{method}: {exc}") from None
        return self._append({"step": "feed", "trinket": trinket, "method": method,
                             "args": encoded_args, "kwargs": encoded_kwargs})

    def advance_turn(self, n: int = 1) -> "Scenario":
        """Complete ``n`` turns (as :meth:`Session.advance_turn`)."""
        return self._append({"step": "turn", "n": n})

    def collapse_segment(self, summary: str = "", tools_used: Sequence[str] = ()) -> "Scenario":
        """End the segment (as :meth:`Session.collapse_segment`)."""
        if isinstance(tools_used, str):
            raise TypeError("tools_used must be a sequence of tool names (strings)")
        return self._append({"step": "collapse", "summary": summary, "tools_used": list(tools_used)})

    def advance(self, delta: timedelta | None = None, /, **kwargs: float) -> "Scenario":
        """Move the clock forward by a timedelta or timedelta keywords (``minutes=5``)."""
        if delta is None:
            delta = timedelta(**kwargs)
        elif kwargs:
            raise TypeError("advance() takes a timedelta or keywords, not both")
        seconds = delta.total_seconds()
        return self._append({"step": "clock", "advance": int(seconds) if seconds.is_integer() else seconds})

    def set_clock(self, when: "datetime | str") -> "Scenario":
        """Set the clock to an instant (aware datetime or ISO 8601 with offset)."""
        instant = parse_instant(when)
        return self._append({"step": "clock", "set": instant.isoformat()})

    def compose(self) -> "Scenario":
        """An explicit compose (the composes after turns and collapses are part of those steps)."""
        return self._append({"step": "compose"})

    def set_auto_compose(self, value: bool) -> "Scenario":
        """Switch the Session's ``auto_compose`` at this point."""
        return self._append({"step": "auto_compose", "value": value})

    # -- facts
    @property
    def turns(self) -> int:
        """Turns the scenario completes."""
        return sum(step["n"] for step in self.steps if step["step"] == "turn")

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for step in self.steps:
            counts[step["step"]] = counts.get(step["step"], 0) + 1
        body = ", ".join(f"{kind}={n}" for kind, n in counts.items()) or "no steps"
        return f"<Scenario {len(self.steps)} steps ({body}), {self.turns} turns>"

    # -- recording and replaying
    @classmethod
    def record(cls, session: "Session") -> "ScenarioRecorder":
        """Start recording everything done to ``session`` (see :class:`ScenarioRecorder`)."""
        return ScenarioRecorder(session)

    def run(self, variant: "Variant | Layout | Mapping[str, Any] | None" = None, *,
            factories: Mapping[str, Any] | None = None,
            listeners: Iterable[Callable[[str, dict[str, Any]], None]] = ()) -> "Session":
        """Replay the steps into a fresh Session (ManualClock at ``clock``) and return it.

        Parameters
        ----------
        variant:
            What to change for this run (see :class:`Variant`); a Layout or a dict is accepted too.
        factories:
            Trinket classes (or factories ``f(bus, wm)``) by name, for names that are not built in
            (or to replace a built-in one).
        listeners:
            Session listeners attached before the first step (progress bars, collectors).

        A step that fails raises ScenarioError naming the step (and its line, for a loaded file).
        """
        from wm_kernel.session import Session

        chosen = as_variant(variant)
        layout = chosen.layout
        if layout is None and self.layout is not None:
            layout = Layout(self.layout["placements"], name=self.layout["name"])
        made = []
        for name in self.trinkets:
            made.append(self._factory(name, factories))
        clock = ManualClock(self.clock)
        session = Session(base_prompt=chosen.wording(self.base_prompt),
                          profile=Profile(**self.profile), clock=clock, user_id=self.user_id,
                          layout=layout, trinkets=made, continuum_id=self.continuum_id,
                          auto_compose=self.auto_compose)
        for name in chosen.disabled:
            try:
                session.trinket(name).enabled = False
            except ValueError as exc:
                raise ValueError(f"variant {chosen.name!r}: {exc}") from None
        disabled = {session.trinket(name).name for name in chosen.disabled}
        if chosen.hook is not None:
            chosen.hook(session)
        session.listeners.extend(listeners)
        for index, step in enumerate(self.steps):
            try:
                self._apply(session, clock, step, chosen, disabled)
            except ScenarioError:
                raise
            except (TypeError, ValueError, RuntimeError) as exc:
                raise _fail(self._where(index), f"{_describe(step)} failed: "
                                                f"{type(exc).__name__}: {exc}") from exc
        return session

    def _factory(self, name: str, factories: Mapping[str, Any] | None) -> Any:
        if factories and name in factories:
            return factories[name]
        builtin = _builtin_class(name)
        if builtin is None:
            raise ScenarioError(f"trinket {name!r} is not built in; pass factories={{{name!r}: "
                                f"<class or factory>}} to run()")
        return builtin

    @staticmethod
    def _apply(session: "Session", clock: ManualClock, step: Mapping[str, Any], variant: "Variant",
               disabled: set[str]) -> None:
        kind = step["step"]
        if kind == "turn":
            session.advance_turn(step["n"])
        elif kind == "feed":
            trinket = session.trinket(step["trinket"])
            if step["method"] == "set_enabled" and trinket.name in disabled:
                return  # the variant's switch wins over the recorded one
            method = getattr(trinket, step["method"], None)
            if method is None or not getattr(method, "__wm_feed__", False):
                raise ValueError(f"{step['method']!r} is not a feed method of {trinket.name}")
            method(*decode_value(step["args"]), **decode_value(step["kwargs"]))
        elif kind == "clock":
            if "advance" in step:
                clock.advance(timedelta(seconds=step["advance"]))
            else:
                clock.set(step["set"])
        elif kind == "collapse":
            session.collapse_segment(summary=step["summary"], tools_used=tuple(step["tools_used"]))
        elif kind == "compose":
            session.compose()
        elif kind == "base_prompt":
            session.base_prompt = variant.wording(step["text"])
        elif kind == "profile":
            session.profile = session.profile.replace(**step["fields"])
        elif kind == "auto_compose":
            session.auto_compose = step["value"]


def _describe(step: Mapping[str, Any]) -> str:
    if step["step"] == "feed":
        return f"feed {step['trinket']}.{step['method']}"
    return f"{step['step']!r} step"


def _check_header(raw: Mapping[str, Any], where: str, *, in_file: bool = False) -> dict[str, Any]:
    header = dict(raw)
    _check_fields(header, HEADER_FIELDS, where, "the header")
    if in_file or "format" in header or "version" in header:
        if header.get("format") != FORMAT:
            raise _fail(where, f"field 'format' must be {FORMAT!r}: is this a scenario file?")
        if header.get("version") != VERSION:
            raise _fail(where, f"field 'version' must be {VERSION} (this wm-kernel reads version "
                               f"{VERSION}; got {header.get('version')!r})")
    if "clock" not in header:
        raise _fail(where, "field 'clock' is missing (the replay's start time, ISO 8601 with offset)")
    _check_instant(header["clock"], where, "clock")
    header.setdefault("base_prompt", DEFAULT_BASE_PROMPT)
    if not isinstance(header["base_prompt"], str):
        raise _fail(where, "field 'base_prompt' must be a string")
    header["profile"] = _check_profile_fields(header.get("profile", {}), where, "profile")
    header.setdefault("user_id", "notebook")
    if not isinstance(header["user_id"], str) or not header["user_id"].strip():
        raise _fail(where, "field 'user_id' must be a non-empty string")
    names = header.get("trinkets", list(_default_trinkets()))
    if (not isinstance(names, (list, tuple)) or not all(isinstance(n, str) and n for n in names)
            or len(set(names)) != len(names)):
        raise _fail(where, "field 'trinkets' must be a list of distinct trinket class names")
    header["trinkets"] = tuple(names)
    continuum = header.get("continuum_id")
    if continuum is not None and (not isinstance(continuum, str) or not continuum):
        raise _fail(where, "field 'continuum_id' must be null or a non-empty string")
    header["continuum_id"] = continuum
    header.setdefault("auto_compose", True)
    if not isinstance(header["auto_compose"], bool):
        raise _fail(where, "field 'auto_compose' must be true or false")
    header["layout"] = _check_layout(header.get("layout"), where)
    return header


def profile_fields(profile: Profile) -> dict[str, Any]:
    """A Profile's fields as JSON values (``account_created`` as ISO 8601), defaults left out."""
    out: dict[str, Any] = {}
    default = Profile()
    for name in _PROFILE_FIELDS:
        value = getattr(profile, name)
        if value == getattr(default, name):
            continue
        out[name] = value.isoformat() if isinstance(value, datetime) else value
    return out


# -- recording ------------------------------------------------------------------------------------

class ScenarioRecorder:
    """Records what is done to a live Session into a :class:`Scenario`.

    From construction on it hears, through the listener hooks of the Session, its ManualClock, its
    WorkingMemory and its trinkets: feeds (``@feed`` methods, and ``enabled`` switches), turns,
    collapses, explicit composes (composes that follow a turn or collapse by ``auto_compose`` are
    part of those steps), clock moves, base prompt and ``auto_compose`` changes, and profile changes
    (noticed before the next step). :meth:`stop` removes every hook; a ``with`` block stops on exit.

    Start recording before the first turn: a replay starts from a fresh Session built from the
    header, so trinket data fed before recording started is not in it. Data a trinket reads from a
    persistent store (reminders in a SQLite file) is not recorded either, nor are changes made
    other than through ``@feed`` methods: update contexts (``request_update(action=...)``), trait
    assignments other than ``enabled``, composer attributes, trinkets registered later.
    """

    def __init__(self, session: "Session") -> None:
        from wm_kernel.session import Session

        if not isinstance(session, Session):
            raise TypeError(f"Scenario.record needs a Session, got {type(session).__name__}")
        if not isinstance(session.clock, ManualClock):
            raise ValueError("Scenario.record needs a Session with a ManualClock: the moves of a "
                             f"{type(session.clock).__name__} cannot be replayed")
        if session.turn != 0 or session.segment_number != 1:
            raise ValueError("start recording before the first turn and collapse: a replay starts "
                             f"from a fresh Session (this one is at turn {session.turn}, segment "
                             f"{session.segment_number})")
        self.session = session
        self.errors: list[str] = []
        self._clock: ManualClock = session.clock
        start = session.segment_started_at
        self._scenario = Scenario(
            base_prompt=session.base_prompt, profile=profile_fields(session.profile),
            clock=start.isoformat(),
            user_id=session.user_id, trinkets=tuple(session.trinkets),
            continuum_id=session.continuum_id, auto_compose=session.auto_compose,
            layout=session.layout)
        self._profile = session.profile
        self._now = start
        self._pending_composes = 0
        self._trinkets = list(session.trinkets.values())
        self._active = True
        session.listeners.append(self._on_session)
        self._clock.listeners.append(self._on_clock)
        session.working_memory.feed_listeners.append(self._on_feed)
        session.observe(self._on_base_prompt, "base_prompt")
        session.observe(self._on_auto_compose, "auto_compose")
        for trinket in self._trinkets:
            trinket.observe(self._on_enabled, "enabled")
            if not trinket.enabled:
                self._add({"step": "feed", "trinket": trinket.name, "method": "set_enabled",
                           "args": [False], "kwargs": {}})
        if self._clock.now() != start:
            self._on_clock(self._clock.now())

    @property
    def scenario(self) -> Scenario:
        """The scenario recorded so far (the live object: it grows while recording)."""
        if self._active:
            self._sync_profile()
        return self._scenario

    @property
    def active(self) -> bool:
        """True until :meth:`stop`."""
        return self._active

    def save(self, path: "str | os.PathLike[str]") -> None:
        """Save the recorded scenario (atomically); ScenarioError if a feed could not be recorded."""
        scenario = self.scenario
        if self.errors:
            raise ScenarioError(f"the recording is incomplete: {self.errors[0]}")
        scenario.save(path)

    def stop(self) -> Scenario:
        """Stop recording (remove every hook) and return the scenario. Calling it again is a no-op."""
        if self._active:
            self._sync_profile()
            self._active = False
            session = self.session
            with contextlib.suppress(ValueError):
                session.listeners.remove(self._on_session)
            with contextlib.suppress(ValueError):
                self._clock.listeners.remove(self._on_clock)
            with contextlib.suppress(ValueError):
                session.working_memory.feed_listeners.remove(self._on_feed)
            session.unobserve(self._on_base_prompt, "base_prompt")
            session.unobserve(self._on_auto_compose, "auto_compose")
            for trinket in self._trinkets:
                trinket.unobserve(self._on_enabled, "enabled")
        return self._scenario

    def __enter__(self) -> "ScenarioRecorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "recording" if self._active else "stopped"
        return f"<ScenarioRecorder {state}: {self._scenario!r}>"

    # -- hooks
    def _add(self, step: dict[str, Any]) -> None:
        self._sync_profile()
        self._scenario._append(step)

    def _sync_profile(self) -> None:
        current = self.session.profile
        if current == self._profile:
            return
        old, new = profile_fields(self._profile), profile_fields(current)
        changed = {name: new.get(name, getattr(Profile(), name))
                   for name in _PROFILE_FIELDS if old.get(name) != new.get(name)}
        self._profile = current
        self._scenario._append({"step": "profile", "fields": changed})

    def _on_feed(self, trinket: str, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if method == "set_enabled":
            return  # the 'enabled' observer records the switch (also when set as a trait)
        # the feed itself already happened: a step that cannot be recorded (an unrecordable value,
        # a trinket registered after recording started) fails the save, not the caller
        try:
            self._add({"step": "feed", "trinket": trinket, "method": method,
                       "args": encode_value(list(args)), "kwargs": encode_value(kwargs)})
        except (TypeError, ScenarioError) as exc:
            self.errors.append(f"feed {trinket}.{method}: {exc}")

    def _on_enabled(self, change: dict[str, Any]) -> None:
        self._add({"step": "feed", "trinket": change["owner"].name, "method": "set_enabled",
                   "args": [bool(change["new"])], "kwargs": {}})

    def _on_base_prompt(self, change: dict[str, Any]) -> None:
        self._add({"step": "base_prompt", "text": change["new"]})

    def _on_auto_compose(self, change: dict[str, Any]) -> None:
        self._add({"step": "auto_compose", "value": bool(change["new"])})

    def _on_clock(self, now: datetime) -> None:
        before, self._now = self._now, now
        delta = now - before
        steps = self._scenario.steps
        if delta >= timedelta(0) and (before + delta).isoformat() == now.isoformat():
            if steps and steps[-1]["step"] == "clock" and "advance" in steps[-1]:
                delta += timedelta(seconds=steps[-1]["advance"])
                seconds = _seconds(delta)
                if seconds is not None:
                    steps[-1]["advance"] = seconds
                    return
            seconds = _seconds(delta)
            if seconds is not None:
                self._add({"step": "clock", "advance": seconds})
                return
        self._add({"step": "clock", "set": now.isoformat()})

    def _on_session(self, what: str, details: dict[str, Any]) -> None:
        session = self.session
        if what == "turn":
            self._sync_profile()
            steps = self._scenario.steps
            if steps and steps[-1]["step"] == "turn":
                steps[-1]["n"] += 1
            else:
                self._add({"step": "turn", "n": 1})
            if session.auto_compose:
                self._pending_composes += 1
        elif what == "collapsed":
            self._add({"step": "collapse", "summary": details.get("summary", ""),
                       "tools_used": list(details.get("tools_used", ()))})
            if session.auto_compose:
                self._pending_composes += 1
        elif what == "composed":
            if self._pending_composes:
                self._pending_composes -= 1  # the compose a turn or collapse made by itself
            else:
                self._add({"step": "compose"})


def _seconds(delta: timedelta) -> int | float | None:
    """Seconds as a JSON number that turns back into exactly ``delta`` (None if none does)."""
    seconds = delta.total_seconds()
    value: int | float = int(seconds) if seconds.is_integer() else seconds
    return value if timedelta(seconds=value) == delta else None


# -- variants -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Variant:
    """One way to run a scenario differently.

    Parameters
    ----------
    name:
        How tables and plots label it.
    layout:
        The layout to compose with (None: the scenario's).
    base_prompt:
        A string replacing every base prompt of the scenario, or a function ``f(text) -> text``
        applied to each (a wording change).
    disabled:
        Trinket names switched off for the whole run (recorded ``set_enabled`` feeds are ignored).
    hook:
        ``hook(session)``, called on the fresh Session before the first step: change a trinket's
        wording trait, the composer's ``hud_title``, anything.
    """

    name: str = ""
    layout: Layout | None = None
    base_prompt: "str | Callable[[str], str] | None" = None
    disabled: tuple[str, ...] = ()
    hook: "Callable[[Session], None] | None" = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"Variant name must be a str, got {type(self.name).__name__}")
        if isinstance(self.layout, Mapping):
            object.__setattr__(self, "layout", Layout(self.layout, name=self.name or "custom"))
        if self.layout is not None and not isinstance(self.layout, Layout):
            raise TypeError(f"Variant layout must be a Layout or a mapping, got "
                            f"{type(self.layout).__name__}")
        if self.base_prompt is not None and not (isinstance(self.base_prompt, str)
                                                 or callable(self.base_prompt)):
            raise TypeError("Variant base_prompt must be a str or a function f(text) -> text")
        if isinstance(self.disabled, str):
            object.__setattr__(self, "disabled", (self.disabled,))
        object.__setattr__(self, "disabled", tuple(self.disabled))
        if not all(isinstance(n, str) for n in self.disabled):
            raise TypeError("Variant disabled must be trinket names (strings)")
        if self.hook is not None and not callable(self.hook):
            raise TypeError("Variant hook must be a function hook(session)")

    def wording(self, text: str) -> str:
        """The base prompt this variant uses where the scenario has ``text``."""
        if self.base_prompt is None:
            return text
        if isinstance(self.base_prompt, str):
            return self.base_prompt
        result = self.base_prompt(text)
        if not isinstance(result, str):
            raise TypeError(f"variant {self.name!r}: base_prompt function returned "
                            f"{type(result).__name__}, expected str")
        return result


def as_variant(value: "Variant | Layout | Mapping[str, Any] | None", name: str = "") -> Variant:
    """A Variant from a Variant, a Layout, a dict of Variant fields, or None (no change).

    >>> as_variant(Layout.original(), "original").layout.name
    'original'
    >>> as_variant({"disabled": ["TimeManager"]}, "no-time").disabled
    ('TimeManager',)
    """
    if value is None:
        return Variant(name=name)
    if isinstance(value, Variant):
        return value if value.name or not name else dataclasses.replace(value, name=name)
    if isinstance(value, Layout):
        return Variant(name=name or value.name, layout=value)
    if isinstance(value, Mapping):
        allowed = ("name", "layout", "base_prompt", "disabled", "hook")
        unknown = [k for k in value if k not in allowed]
        if unknown:
            raise ValueError(f"variant {name!r}: unknown field {unknown[0]!r} "
                             f"(fields: {', '.join(allowed)})")
        fields = dict(value)
        fields.setdefault("name", name)
        return Variant(**fields)
    raise TypeError(f"variant {name!r} must be a Layout, a Variant or a dict, got "
                    f"{type(value).__name__}")


# -- comparing variants ---------------------------------------------------------------------------

#: The parts of a composed prompt that ``compare`` measures: the system prompt's cached and
#: uncached content, then the other three placements.
PARTS = ("cached", "non_cached", "conversation_prefix", "post_history", "notification")
_PART_KEYS = {"cached": "cached_content", "non_cached": "non_cached_content",
              "conversation_prefix": "conversation_prefix_items",
              "post_history": "post_history_items", "notification": "notification_center"}
_CACHE_COLUMNS = {"status": "cache_status", "hit": "cache_hit", "cache_write_tokens": "cache_write_tokens",
                  "cache_read_tokens": "cache_read_tokens", "uncached_tokens": "uncached_tokens",
                  "broke_by": "cache_broke_by", "cost": "cost"}
COMPARE_COLUMNS = (["segment", "sections"] + [f"chars_{p}" for p in PARTS] + ["chars_total"]
                   + [f"tokens_{p}" for p in PARTS] + ["tokens_total"] + list(_CACHE_COLUMNS.values())
                   + [f"digest_{p}" for p in PARTS])


def part_digest(value: "str | Sequence[str]") -> str:
    """A short hex digest of one part of a prompt ('' when the part is empty).

    >>> part_digest("hello"), part_digest(""), part_digest(["a", "b"]) != part_digest(["ab"])
    ('ea6706f7', '', True)
    """
    if not value:
        return ""
    data = value if isinstance(value, str) else json.dumps(list(value), ensure_ascii=False)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


def _part_chars(value: "str | Sequence[str]") -> int:
    return len(value) if isinstance(value, str) else sum(len(item) for item in value)


@dataclass
class VariantRun:
    """One replay of a scenario under a variant: its name, the Session it drove, and a per-turn
    summary of the last compose of each turn (chars and digest of each part)."""

    name: str
    session: "Session"
    turns: dict[int, dict[str, Any]]


def run_variants(scenario: Scenario, variants: "Mapping[str, Variant | Layout | Mapping[str, Any] | None]",
                 *, counter: Any = None, factories: Mapping[str, Any] | None = None,
                 listeners: Iterable[Callable[[str, dict[str, Any]], None]] = ()) -> list[VariantRun]:
    """Replay ``scenario`` once per variant (in order), every history counting tokens with one shared
    TokenCounter (``counter``, default a new one) so a text common to several variants is counted
    once. :func:`compare` tabulates the result."""
    from wm_kernel.tokens import TokenCounter

    if not isinstance(scenario, Scenario):
        raise TypeError(f"expected a Scenario, got {type(scenario).__name__}")
    if not isinstance(variants, Mapping) or not variants:
        raise ValueError("variants must be a non-empty mapping name -> Layout | Variant | dict")
    chosen = []
    for name, value in variants.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"variant names must be non-empty strings, got {name!r}")
        chosen.append(dataclasses.replace(as_variant(value, name), name=name))
    shared = counter if counter is not None else TokenCounter()
    runs = []
    extra = tuple(listeners)
    for variant in chosen:
        turns: dict[int, dict[str, Any]] = {}
        holder: dict[str, Any] = {}

        def on_compose(what: str, details: dict[str, Any], turns: dict[int, dict[str, Any]] = turns,
                       holder: dict[str, Any] = holder) -> None:
            if what != "composed":
                return
            composed: ComposedPrompt = details["composed"]
            row: dict[str, Any] = {"segment": holder["session"].segment_number,
                                   "sections": len(composed.sections)}
            for part in PARTS:
                value = composed[_PART_KEYS[part]]
                row[f"chars_{part}"] = _part_chars(value)
                row[f"digest_{part}"] = part_digest(value)
            turns[composed.turn if composed.turn is not None else len(turns)] = row

        def attach(session: "Session", variant: Variant = variant, holder: dict[str, Any] = holder) -> None:
            holder["session"] = session
            session.recorder.counter = shared
            if variant.hook is not None:
                variant.hook(session)

        session = scenario.run(dataclasses.replace(variant, hook=attach), factories=factories,
                               listeners=(on_compose, *extra))
        runs.append(VariantRun(variant.name, session, turns))
    return runs


def compare(scenario: Scenario, variants: "Mapping[str, Variant | Layout | Mapping[str, Any] | None]",
            *, counter: Any = None, factories: Mapping[str, Any] | None = None,
            tools_tokens: int = 0, min_cacheable_tokens: int = 1024,
            prices: Any = None) -> "pd.DataFrame":
    """Run ``scenario`` under each variant and tabulate every turn side by side.

    Parameters
    ----------
    variants:
        name -> :class:`Variant`, a Layout, a dict of Variant fields, or None (the scenario as is).
    counter:
        The TokenCounter to share (default: a new one over the default tokenizer).
    tools_tokens, min_cacheable_tokens, prices:
        Passed to :func:`wm_kernel.cache.cache_report`.

    Returns
    -------
    DataFrame indexed by (variant, turn), one row per turn (its last compose), with columns
    ``segment``, ``sections``; ``chars_<part>`` and ``chars_total`` (characters of each part as
    composed: cached and non-cached system content, conversation prefix, post history, notification
    centre); ``tokens_<part>`` and ``tokens_total`` (sums of per-section token counts, as
    :mod:`wm_kernel.cache` counts them: separators and the HUD frame are not counted);
    ``cache_status`` (hit / write / none), ``cache_hit``, ``cache_write_tokens``,
    ``cache_read_tokens``, ``uncached_tokens``, ``cache_broke_by``, ``cost`` (from
    :func:`wm_kernel.cache.cache_report`); and ``digest_<part>`` (a short hex digest, '' when empty),
    so ``frame.groupby(level="turn")["digest_cached"].nunique()`` shows where variants differ.
    ``frame.attrs`` holds the tokenizer name and the prices.
    """
    runs = run_variants(scenario, variants, counter=counter, factories=factories)
    return tabulate(runs, tools_tokens=tools_tokens, min_cacheable_tokens=min_cacheable_tokens,
                    prices=prices)


def tabulate(runs: Sequence[VariantRun], *, tools_tokens: int = 0, min_cacheable_tokens: int = 1024,
             prices: Any = None) -> "pd.DataFrame":
    """The :func:`compare` frame of some :func:`run_variants` runs. ``frame.attrs["cache"]`` holds
    each variant's cache summary (:meth:`wm_kernel.cache.CacheReport.summary`)."""
    import pandas as pd

    from wm_kernel.cache import Prices, cache_report

    frames = []
    tokenizer = ""
    summaries: dict[str, dict[str, Any]] = {}
    for run in runs:
        history = run.session.recorder
        tokenizer = history.counter.name
        sections = history.frame()
        sections = sections[~sections["dropped"]]  # rows of what a token budget left out
        part = sections["placement"].where(sections["placement"] != "system",
                                           sections["cached"].map({True: "cached", False: "non_cached"}))
        tokens = (sections.assign(part=part).pivot_table(index="turn", columns="part", values="tokens",
                                                         aggfunc="sum", fill_value=0)
                  .reindex(columns=list(PARTS), fill_value=0))
        tokens.columns = [f"tokens_{p}" for p in PARTS]
        report = cache_report(run.session, tools_tokens=tools_tokens,
                              min_cacheable_tokens=min_cacheable_tokens, prices=prices)
        summaries[run.name] = report.summary()
        cache = report.turns.set_index("turn")[list(_CACHE_COLUMNS)].rename(columns=_CACHE_COLUMNS)
        sizes = pd.DataFrame.from_dict(run.turns, orient="index")
        sizes.index.name = "turn"
        frame = sizes.join(tokens, how="left").join(cache, how="left")
        frame["chars_total"] = sum(frame[f"chars_{p}"] for p in PARTS)
        frame["tokens_total"] = sum(frame[f"tokens_{p}"] for p in PARTS)
        frame = frame.reset_index()
        frame.insert(0, "variant", run.name)
        frames.append(frame)
    result = pd.concat(frames, ignore_index=True)
    int_columns = ["segment", "sections", "chars_total", "tokens_total", "cache_write_tokens",
                   "cache_read_tokens", "uncached_tokens"]
    int_columns += [f"chars_{p}" for p in PARTS] + [f"tokens_{p}" for p in PARTS]
    result = result.astype({c: "int64" for c in int_columns} | {"cache_hit": "bool"})
    result = result.set_index(["variant", "turn"])[COMPARE_COLUMNS]
    result.attrs["tokenizer"] = tokenizer
    result.attrs["prices_per_million"] = dataclasses.asdict(Prices.coerce(prices))
    result.attrs["cache"] = summaries
    return result


def plot_compare(frame: "pd.DataFrame", metrics: Sequence[str] = ("chars_total", "tokens_total"), *,
                 title: str | None = None) -> "Figure":
    """Plot each metric per turn, one line per variant, one panel per metric; returns the Figure.

    Builds a ``matplotlib.figure.Figure`` directly (no pyplot state), so it works with any backend,
    Agg included, and leaves nothing open.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if isinstance(metrics, str):
        metrics = (metrics,)
    missing = [m for m in metrics if m not in frame.columns]
    if missing:
        raise ValueError(f"unknown metric {missing[0]!r} (columns: {', '.join(map(str, frame.columns))})")
    if list(frame.index.names) != ["variant", "turn"]:
        raise ValueError("expected a compare() frame, indexed by (variant, turn)")
    fig = Figure(figsize=(8, 2.8 * len(metrics)), layout="constrained")
    axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    variants = list(dict.fromkeys(frame.index.get_level_values("variant")))
    # identical variants draw on top of each other: vary the dash so each stays visible
    styles = ("-", "--", ":", "-.")
    for ax, metric in zip(axes, metrics):
        for position, name in enumerate(variants):
            series = frame.xs(name, level="variant")[metric]
            ax.plot(series.index, series.to_numpy(), styles[position % len(styles)], label=name,
                    linewidth=2.2 - 0.4 * (position % len(styles)),
                    marker="o" if len(series) <= 40 else None, markersize=3)
        ax.set_ylabel(metric)
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].set_xlabel("turn")
    axes[0].legend(loc="best", fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


# -- the command line: python -m wm_kernel replay -------------------------------------------------

_BUILTIN_LAYOUTS: dict[str, Callable[[], Layout]] = {"default": Layout.default,
                                                      "original": Layout.original}
_TABLE_COLUMNS = {"segment": "segment", "sections": "sections", "chars_total": "chars",
                  "tokens_total": "tokens", "cache_status": "cache", "cache_write_tokens": "written",
                  "cache_read_tokens": "read", "uncached_tokens": "uncached"}


def parse_variant_spec(spec: str) -> tuple[str, Variant]:
    """``NAME=SPEC`` from the command line: SPEC is a built-in layout name (default, original), a
    layout as JSON (``{"system": [...], ...}``) or Variant fields as JSON (``{"layout": "original",
    "base_prompt": "...", "disabled": ["TimeManager"]}``).

    >>> name, v = parse_variant_spec('no-time={"disabled": ["TimeManager"]}')
    >>> name, v.disabled
    ('no-time', ('TimeManager',))
    >>> parse_variant_spec("orig=original")[1].layout.name
    'original'
    """
    name, sep, body = spec.partition("=")
    name, body = name.strip(), body.strip()
    if not sep or not name or not body:
        raise ValueError(f"--variant {spec!r}: expected NAME=LAYOUT (a built-in layout name: "
                         f"{', '.join(_BUILTIN_LAYOUTS)}; or JSON)")
    try:
        if body in _BUILTIN_LAYOUTS:
            return name, Variant(name=name, layout=_BUILTIN_LAYOUTS[body]())
        if not body.startswith("{"):
            raise ValueError(f"unknown built-in layout {body!r} (built in: {', '.join(_BUILTIN_LAYOUTS)}; "
                             f"or give JSON)")
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(data, dict):
            raise ValueError("the JSON must be an object")
        from wm_kernel.types import PLACEMENTS

        if data and all(key in PLACEMENTS for key in data):
            return name, Variant(name=name, layout=Layout(data, name=name))
        unknown = [key for key in data if key not in ("layout", "base_prompt", "disabled")]
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r} (a layout's keys are placements: "
                             f"{', '.join(PLACEMENTS)}; a variant's: layout, base_prompt, disabled)")
        layout = data.get("layout")
        if isinstance(layout, str):
            if layout not in _BUILTIN_LAYOUTS:
                raise ValueError(f"unknown built-in layout {layout!r}")
            data["layout"] = _BUILTIN_LAYOUTS[layout]()
        if "base_prompt" in data and not isinstance(data["base_prompt"], str):
            raise ValueError("'base_prompt' must be a string")
        if "disabled" in data and (not isinstance(data["disabled"], list)
                                   or not all(isinstance(n, str) for n in data["disabled"])):
            raise ValueError("'disabled' must be a list of trinket names")
        return name, Variant(name=name, **data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--variant {name}: {exc}") from None


class _Progress:
    """A one-line progress bar on a stream (a terminal's stderr), redrawn at each whole percent."""

    def __init__(self, total: int, stream: TextIO, width: int = 30) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.width = width
        self.done = 0
        self._shown = -1

    def __call__(self, what: str, details: dict[str, Any]) -> None:
        if what == "turn":
            self.done += 1
            self._draw()

    def _draw(self) -> None:
        percent = min(100, self.done * 100 // self.total)
        if percent == self._shown:
            return
        self._shown = percent
        filled = self.width * percent // 100
        self.stream.write(f"\rreplay [{'#' * filled}{'.' * (self.width - filled)}] {percent:3d}% "
                          f"{self.done}/{self.total} turns")
        self.stream.flush()

    def close(self) -> None:
        if self._shown >= 0:
            self.stream.write("\n")
            self.stream.flush()


def add_replay_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]
                      ) -> argparse.ArgumentParser:
    """Add the ``replay`` subcommand to ``python -m wm_kernel``."""
    parser = subparsers.add_parser(
        "replay", help="replay a scenario file and print a per-turn table",
        description="Replay a scenario (JSON Lines, see wm_kernel.experiments) into a fresh Session, "
                    "as recorded and under each --variant, and print one row per turn.")
    parser.add_argument("file", metavar="FILE", help="the scenario file (.jsonl)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=LAYOUT",
                        help="also run under a variant: a built-in layout (default, original), a "
                             "layout as JSON, or JSON with layout/base_prompt/disabled; repeatable")
    parser.add_argument("--out", metavar="CSV", help="write the history (one row per variant, turn "
                                                     "and section) to this CSV file, atomically")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show a progress bar on stderr (default: only when stderr is a "
                             "terminal and the run is long)")
    parser.add_argument("--estimate-tokens", action="store_true",
                        help="count tokens as chars/4 instead of with the offline tokenizer")
    parser.set_defaults(func=replay_command)
    return parser


def replay_command(args: argparse.Namespace, *, stdout: TextIO | None = None,
                   stderr: TextIO | None = None) -> int:
    """Run ``replay`` for parsed arguments; 0 on success, 2 (one line on stderr) on any error."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        return _replay(args, out, err)
    except OSError as exc:
        # "[Errno 2] No such file or directory: 'x'" reads better as the reason and the file
        where = f": {exc.filename}" if exc.filename else ""
        reason = (exc.strerror or str(exc)).lower() if exc.strerror else str(exc)
        err.write(f"replay: {reason}{where}\n")
        return 2
    except (ScenarioError, ValueError, TypeError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        err.write(f"replay: {message}\n")
        return 2


def _replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import pandas as pd

    from wm_kernel.tokens import EstimateTokenizer, TokenCounter

    variants: dict[str, Variant | None] = {"recorded": None}
    for spec in args.variant:
        name, variant = parse_variant_spec(spec)
        if name in variants:
            raise ValueError(f"--variant {name}: the name is used twice (or is 'recorded', the "
                             f"scenario as it is)")
        variants[name] = variant
    if args.out is not None:
        target = Path(args.out)
        if target.is_dir():
            raise ValueError(f"--out {args.out!r} is a directory")
        if not (target.parent if str(target.parent) else Path(".")).is_dir():
            raise ValueError(f"--out {args.out!r}: no such directory")
    scenario = Scenario.load(args.file)
    counter = TokenCounter(EstimateTokenizer()) if args.estimate_tokens else TokenCounter()
    total = scenario.turns * len(variants)
    show = args.progress if args.progress is not None else (err.isatty() and total >= 200)
    progress = _Progress(total, err) if show else None
    try:
        runs = run_variants(scenario, variants, counter=counter,
                            listeners=(progress,) if progress is not None else ())
    finally:
        if progress is not None:
            progress.close()
    frame = tabulate(runs)
    for run in runs:
        # one value of one index level: xs returns a frame (the stubs also allow a Series)
        rows = cast("pd.DataFrame", frame.xs(run.name, level="variant"))
        table = rows[list(_TABLE_COLUMNS)].rename(columns=_TABLE_COLUMNS)
        if len(runs) > 1:
            out.write(f"== {run.name}\n")
        out.write(table.reset_index().to_string(index=False) + "\n")
        summary = frame.attrs["cache"][run.name]
        out.write(f"{summary['turns']} turns, cache hit rate {summary['hit_rate']:.1%}, "
                  f"{int(table['tokens'].sum())} tokens ({counter.name}), estimated input cost "
                  f"${summary['cost']:.4f}\n")
    if args.out is not None:
        history = pd.concat([run.session.history.assign(variant=run.name) for run in runs],
                            ignore_index=True)
        history = history[["variant", *[c for c in history.columns if c != "variant"]]]
        atomic_write(args.out, lambda handle: history.to_csv(handle, index=False))
        out.write(f"history: {len(history)} rows written to {args.out}\n")
    return 0
