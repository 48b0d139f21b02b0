"""Scenarios: a script of what happens to a Session, saved as JSON Lines, replayed into a fresh one.

A :class:`Scenario` holds the settings of the Session it starts from (the header) and its steps
(:mod:`wm_kernel.experiments.steps`). It can be built in Python with the step methods, loaded from a
file, recorded from a live Session (:func:`~wm_kernel.experiments.recorder.record`) and replayed (:meth:`Scenario.run`),
which composes exactly the prompts the recorded session did.

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
``{"name": ..., "placements": {placement: [section, ...]}}``, as ``Layout.to_dict`` writes it).
Every further line is one step, a JSON object whose ``step`` field names its kind (see
:mod:`wm_kernel.experiments.steps`); blank lines are skipped. Feed arguments are encoded by
:mod:`wm_kernel.experiments.codec`.

A loaded file is streamed: :meth:`Scenario.load` reads it once to validate every line and count the
steps and turns, and keeps only the header and those counts; the steps are read from the file again
whenever they are iterated (a replay, a save). A scenario of millions of steps loads and replays
in constant memory. The file must stay as it was while the Scenario uses it (ScenarioError if it
changed); building on a loaded scenario (``Scenario.load(path).advance_turn()``) reads its steps
into memory first.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from wm_kernel.core.clock import ManualClock, parse_instant
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.profile import Profile
from wm_kernel.experiments.codec import encode_arguments
from wm_kernel.experiments.scenario_file import (
    DEFAULT_BASE_PROMPT,
    FORMAT,
    VERSION,
    FileSteps,
    check_header,
    check_layout,
    default_trinkets,
    json_line,
    profile_fields,
    read_header,
    read_json_lines,
    step_label,
    unwritable,
)
from wm_kernel.experiments.steps import (
    Replay,
    ScenarioError,
    Step,
    TrinketNames,
    TurnStep,
    builtin_class,
    fail,
    parse_step,
)
from wm_kernel.utils.safe_files import atomic_write_text as atomic_write

if TYPE_CHECKING:
    from trinkets.base import EventAwareTrinket
    from wm_kernel.experiments.variants import Variant
    from wm_kernel.session import Instrument, Session
    from wm_kernel.session.trinket_factory import TrinketFactory

# the file format lives in scenario_file
__all__ = ["Scenario"]


@dataclass
class Scenario:
    """A scripted sequence of steps for a Session, with the settings of the Session it starts from.

    Build one in Python with the step methods (each returns the scenario, for chaining), load one
    with :meth:`load`, or record a live Session with :func:`~wm_kernel.experiments.recorder.record`.

    Parameters
    ----------
    base_prompt, user_id, continuum_id, auto_compose:
        As for :class:`~wm_kernel.session.Session`.
    profile:
        A :class:`~wm_kernel.core.profile.Profile` or a dict of its fields.
    clock:
        The start time of the replay's ManualClock (aware datetime or ISO 8601 with offset).
    trinkets:
        Trinket class names to register, in order (default: every built-in trinket). Names that are
        not built in need a factory passed to :meth:`run`.
    layout:
        The layout (None: ``Layout.default()``).
    steps:
        :class:`~wm_kernel.experiments.steps.Step` objects or their JSON form (see the file
        format); validated.
    """

    base_prompt: str = DEFAULT_BASE_PROMPT
    profile: dict[str, Any] = field(default_factory=dict)
    clock: str = "2026-01-01T00:00:00+00:00"
    user_id: str = "notebook"
    trinkets: tuple[str, ...] = field(default_factory=default_trinkets)
    continuum_id: str | None = None
    auto_compose: bool = True
    layout: Any = None
    steps: Sequence[Step] = field(default_factory=list)
    source: str = field(default="", compare=False, repr=False)
    _lines: list[int | None] = field(default_factory=list, compare=False, repr=False)
    _names: TrinketNames = field(default_factory=TrinketNames, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.profile, Profile):
            self.profile = profile_fields(self.profile)
        if isinstance(self.clock, datetime):
            self.clock = parse_instant(self.clock).isoformat()
        if isinstance(self.layout, Layout):
            self.layout = None if self.layout == Layout.default() else self.layout.to_dict()
        if isinstance(self.trinkets, (list, tuple)):
            self.trinkets = tuple(self.trinkets)
        header = self._header()
        check_header(header, "scenario header")
        self.layout = check_layout(self.layout, "scenario header")
        steps, self.steps, self._lines = list(self.steps), [], []
        self._names = TrinketNames(self.trinkets)
        for raw in steps:
            self._append(raw)

    def _editable(self) -> list[Step]:
        """The steps as a list to change: a loaded file's steps are read into memory first."""
        if not isinstance(self.steps, list):
            numbered = (
                list(self.steps.numbered())
                if isinstance(self.steps, FileSteps)
                else [(None, step) for step in self.steps]
            )
            self.steps = [step for _, step in numbered]
            self._lines = [number for number, _ in numbered]
        return self.steps

    def _numbered_steps(self) -> Iterator[tuple[str, Step]]:
        """(where, step) for every step: ``file line N`` for a file's steps, else ``step N``."""
        if isinstance(self.steps, FileSteps):
            for line, step in self.steps.numbered():
                yield f"{self.source} line {line}", step
        else:
            for index, step in enumerate(self.steps):
                yield self._where(index), step

    # -- reading and writing
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Scenario:
        """Read a scenario file; ScenarioError naming the line and field for anything malformed.

        Every line is validated now, but the steps are not kept: they are read from the file again
        whenever they are iterated (see the module docstring), so the file must stay as it is.
        """
        source = str(path)
        header, steps = FileSteps.scan(Path(path), source)
        scenario = cls(**header)
        scenario.steps, scenario.source = steps, source
        scenario._names = TrinketNames([*header["trinkets"], *steps.added])
        return scenario

    @classmethod
    def loads(cls, text: str, source: str = "<scenario>") -> Scenario:
        """Parse a scenario from the text of a file."""
        return cls._parse(text.split("\n"), source)  # never at U+2028, U+0085...: str.splitlines would

    @classmethod
    def _parse(cls, lines: Iterable[str], source: str) -> Scenario:
        records = read_json_lines(lines, source)
        header = read_header(records, source)
        steps: list[Step] = []
        numbers: list[int | None] = []
        names = TrinketNames(header["trinkets"])
        for number, obj in records:
            steps.append(parse_step(obj, f"{source} line {number}", names))
            numbers.append(number)
        scenario = cls(**header)
        scenario.steps, scenario._lines, scenario.source, scenario._names = steps, numbers, source, names
        return scenario

    def dumps(self) -> str:
        """The text of the scenario file: the header line, then one line per step."""
        return "".join(line + "\n" for line in self._dump_lines())

    def _dump_lines(self) -> Iterator[str]:
        for _, obj in self._json_forms():
            yield json_line(obj)

    def _json_forms(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(what, JSON form) of the header and of each step, in file order."""
        yield "the header", {"format": FORMAT, "version": VERSION, **self._header()}
        for number, step in enumerate(self.steps, 1):
            yield step_label(number, step), step.to_json()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the scenario file atomically (a temporary file renamed over ``path``).

        A step that cannot be written (a string UTF-8 cannot encode, such as a lone surrogate)
        raises ScenarioError naming the step and its field or argument; ``path`` is left as it was.
        """

        def write(handle: TextIO) -> None:
            for what, obj in self._json_forms():
                try:
                    handle.write(json_line(obj) + "\n")
                except (UnicodeEncodeError, TypeError, ValueError) as exc:
                    raise ScenarioError(f"cannot save {path}: {what}: {unwritable(obj, exc)}") from None

        atomic_write(path, write)

    @property
    def all_trinkets(self) -> tuple[str, ...]:
        """Every trinket the replay registers: the header's ``trinkets``, then those of its
        ``add_trinket`` steps."""
        return tuple(self._names)

    def _header(self) -> dict[str, Any]:
        return {
            "base_prompt": self.base_prompt,
            "profile": dict(self.profile),
            "clock": self.clock,
            "user_id": self.user_id,
            "trinkets": list(self.trinkets),
            "continuum_id": self.continuum_id,
            "auto_compose": self.auto_compose,
            "layout": self.layout,
        }

    # -- building
    def _where(self, index: int) -> str:
        line = self._lines[index] if index < len(self._lines) else None
        if line is not None:
            return f"{self.source} line {line}"
        return f"step {index + 1}"

    def _append(self, raw: Mapping[str, Any] | Step) -> Scenario:
        # a Step built in Python is checked through its JSON form: one validation for every source
        steps = self._editable()
        where = f"step {len(steps) + 1}"
        data = raw.to_json() if isinstance(raw, Step) else dict(raw)
        steps.append(parse_step(data, where, self._names))
        self._lines.append(None)
        return self

    def _replace_last(self, step: Step) -> None:
        """Replace the last step (a recorder merging a turn or a clock move into it)."""
        steps = self._editable()
        steps[-1] = parse_step(step.to_json(), self._where(len(steps) - 1), self._names)

    def set_base_prompt(self, text: str) -> Scenario:
        """Replace the base prompt template at this point."""
        return self._append({"step": "base_prompt", "text": text})

    def set_profile(self, **fields: Any) -> Scenario:
        """Change some Profile fields (``account_created`` as an ISO string or aware datetime)."""
        if isinstance(fields.get("account_created"), datetime):
            fields["account_created"] = fields["account_created"].isoformat()
        return self._append({"step": "profile", "fields": fields})

    def feed(self, trinket: str, method: str, *args: Any, **kwargs: Any) -> Scenario:
        """Call ``trinket.method(*args, **kwargs)`` (a ``@feed`` method) at this point."""
        try:
            encoded_args, encoded_kwargs = encode_arguments(args, kwargs)
        except TypeError as exc:
            raise TypeError(f"step {len(self) + 1} (feed {trinket}.{method}): {exc}") from None
        return self._append(
            {"step": "feed", "trinket": trinket, "method": method, "args": encoded_args, "kwargs": encoded_kwargs}
        )

    def add_trinket(self, trinket: str) -> Scenario:
        """Register the trinket class ``trinket`` at this point (a name that is not built in needs
        a factory passed to :meth:`run`); later steps may feed it."""
        return self._append({"step": "add_trinket", "trinket": trinket})

    def advance_turn(self, n: int = 1) -> Scenario:
        """Complete ``n`` turns (as :meth:`Session.advance_turn`)."""
        return self._append({"step": "turn", "n": n})

    def collapse_segment(self, summary: str = "", tools_used: Sequence[str] = ()) -> Scenario:
        """End the segment (as :meth:`Session.collapse_segment`)."""
        if isinstance(tools_used, str):
            raise TypeError("tools_used must be a sequence of tool names (strings)")
        return self._append({"step": "collapse", "summary": summary, "tools_used": list(tools_used)})

    def advance(self, delta: timedelta | None = None, /, **kwargs: float) -> Scenario:
        """Move the clock forward by a timedelta or timedelta keywords (``minutes=5``)."""
        if delta is None:
            try:
                delta = timedelta(**kwargs)
            except OverflowError as exc:
                raise ValueError(f"advance({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}): {exc}") from None
        elif kwargs:
            raise TypeError("advance() takes a timedelta or keywords, not both")
        seconds = delta.total_seconds()
        return self._append({"step": "clock", "advance": int(seconds) if seconds.is_integer() else seconds})

    def set_clock(self, when: datetime | str) -> Scenario:
        """Set the clock to an instant (aware datetime or ISO 8601 with offset)."""
        instant = parse_instant(when)
        return self._append({"step": "clock", "set": instant.isoformat()})

    def compose(self) -> Scenario:
        """An explicit compose (the composes after turns and collapses are part of those steps)."""
        return self._append({"step": "compose"})

    def set_auto_compose(self, value: bool) -> Scenario:
        """Switch the Session's ``auto_compose`` at this point."""
        return self._append({"step": "auto_compose", "value": value})

    # -- facts
    @property
    def turns(self) -> int:
        """Turns the scenario completes (its ``turn`` steps' ``n``, summed): THE count of turns, which
        the repr and ``python -m wm_kernel replay`` show. A replay composes one prompt more than
        this: turn 0, before the first exchange, then one per completed turn."""
        if isinstance(self.steps, FileSteps):
            return self.steps.turns  # counted when the file was loaded
        return sum(step.n for step in self.steps if isinstance(step, TurnStep))

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        if isinstance(self.steps, FileSteps):
            counts = self.steps.kinds
        else:
            for step in self.steps:
                counts[step.kind] = counts.get(step.kind, 0) + 1
        body = ", ".join(f"{kind}={n}" for kind, n in counts.items()) or "no steps"
        return f"<Scenario {len(self.steps)} steps ({body}), {self.turns} turns>"

    # -- recording and replaying
    def run(
        self,
        variant: Variant | Layout | Mapping[str, Any] | None = None,
        *,
        factories: Mapping[str, type[EventAwareTrinket] | TrinketFactory] | None = None,
        instruments: Iterable[Instrument] | None = None,
    ) -> Session:
        """Replay the steps into a fresh Session (ManualClock at ``clock``) and return it.

        Long because: its docstring documents three options; the body builds the Session the variant
        describes and replays the steps into it, each failure named by its step.

        Parameters
        ----------
        variant:
            What to change for this run (see :class:`Variant`); a Layout or a dict is accepted too.
        factories:
            Trinket classes (or factories ``f(bus, wm)``) by name, for names that are not built in
            (or to replace a built-in one).
        instruments:
            As for :class:`~wm_kernel.session.Session`: callables ``f(session)`` attached before
            the first step (a History, progress bars, collectors); None attaches the defaults.

        A step that fails raises ScenarioError naming the step (and its line, for a loaded file).
        """
        from wm_kernel.experiments.variants import as_variant
        from wm_kernel.session import Session

        chosen = as_variant(variant)
        layout = chosen.layout
        if layout is None and self.layout is not None:
            layout = Layout.from_dict(self.layout)
        made = []
        for name in self.trinkets:
            made.append(self._factory(name, factories))
        clock = ManualClock(self.clock)
        session = Session(
            base_prompt=chosen.wording(self.base_prompt),
            profile=Profile(**self.profile),
            clock=clock,
            user_id=self.user_id,
            layout=layout,
            trinkets=made,
            continuum_id=self.continuum_id,
            auto_compose=self.auto_compose,
            instruments=instruments,
        )
        for name in chosen.disabled:
            try:
                session.trinket(name).enabled = False
            except ValueError as exc:
                raise ValueError(f"variant {chosen.name!r}: {exc}") from None
        disabled = {session.trinket(name).name for name in chosen.disabled}
        styled = chosen.apply_styles(session)
        if chosen.hook is not None:
            chosen.hook(session)
        replay = Replay(session, clock, chosen, disabled, styled, dict(factories or {}))
        for where, step in self._numbered_steps():
            try:
                step.apply(replay)
            except ScenarioError:
                raise
            except (TypeError, ValueError, RuntimeError, OverflowError) as exc:
                raise fail(where, f"{step.describe()} failed: {type(exc).__name__}: {exc}") from exc
        return session

    def _factory(
        self,
        name: str,
        factories: Mapping[str, type[EventAwareTrinket] | TrinketFactory] | None,
    ) -> type[EventAwareTrinket] | TrinketFactory:
        if factories and name in factories:
            return factories[name]
        builtin = builtin_class(name)
        if builtin is None:
            raise ScenarioError(
                f"trinket {name!r} is not built in; pass factories={{{name!r}: <class or factory>}} to run()"
            )
        return builtin
