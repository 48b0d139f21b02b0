"""Scenarios: a script of what happens to a Session, saved as JSON Lines, replayed into a fresh one.

A :class:`Scenario` holds the settings of the Session it starts from (the header) and its steps
(:mod:`wm_kernel.experiments.steps`). It can be built in Python with the step methods, loaded from a
file, recorded from a live Session (:meth:`Scenario.record`) and replayed (:meth:`Scenario.run`),
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

import contextlib
import itertools
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, overload

from wm_kernel.core.clock import ManualClock, parse_instant
from wm_kernel.core.composer import Layout
from wm_kernel.core.profile import Profile
from wm_kernel.experiments.codec import MAX_DEPTH, decode_value, encode_arguments
from wm_kernel.experiments.steps import (
    PROFILE_FIELDS,
    FeedStep,
    Replay,
    ScenarioError,
    Step,
    TurnStep,
    builtin_class,
    check_fields,
    check_instant,
    check_profile_fields,
    fail,
    parse_step,
)

if TYPE_CHECKING:
    from wm_kernel.experiments.variants import Variant
    from wm_kernel.session import Instrument, Session

#: What :meth:`Scenario.record` builds: ``wm_kernel.experiments.recorder`` registers its
#: ScenarioRecorder here when imported (the package's ``__init__`` imports it), so this module never
#: imports the recorder, which builds Scenarios.
_recorder: Callable[[Session], Any] | None = None


def register_recorder(recorder: Callable[[Session], Any]) -> None:
    """Make ``recorder`` what :meth:`Scenario.record` calls (done by the recorder module)."""
    global _recorder
    _recorder = recorder


FORMAT = "wm-kernel-scenario"
VERSION = 1
HEADER_FIELDS = ("format", "version", "base_prompt", "profile", "clock", "user_id", "trinkets",
                 "continuum_id", "auto_compose", "layout")
DEFAULT_BASE_PROMPT = "You are a helpful assistant talking with {first_name}."


def atomic_write(path: str | os.PathLike[str], write: Callable[[TextIO], None]) -> None:
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


def _read_json_lines(lines: Iterable[str], source: str) -> Iterator[tuple[int, Any]]:
    """(line number, JSON value) for each non-blank line; ScenarioError naming the line otherwise."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line.rstrip("\r\n"))
        except json.JSONDecodeError as exc:
            raise fail(f"{source} line {number}",
                       f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        except ValueError as exc:
            # an integer of more digits than int() converts (sys.get_int_max_str_digits)
            raise fail(f"{source} line {number}", f"not valid JSON ({exc})") from None
        except RecursionError:
            # json's parser recurses once per level: hostile nesting would end Python's stack
            raise fail(f"{source} line {number}", f"JSON nested too deeply to read (values may "
                                                  f"nest at most {MAX_DEPTH} levels deep)") from None


def _read_header(records: Iterator[tuple[int, Any]], source: str) -> dict[str, Any]:
    """The validated header, from the first record of a file (its ``format`` and ``version``
    removed)."""
    first = next(records, None)
    if first is None:
        raise ScenarioError(f"{source}: empty file (expected a header line)")
    number, obj = first
    where = f"{source} line {number}"
    if not isinstance(obj, dict):
        raise fail(where, "the first line must be the scenario header (a JSON object)")
    header = check_header(obj, where, in_file=True)
    header.pop("format")
    header.pop("version")
    return header


#: The longest line a scenario file may hold (one step's JSON): a longer one is refused after
#: reading this much, so a file of one endless line cannot take every byte of memory.
MAX_LINE_CHARS = 64 * 1024 * 1024


def _open_scenario(path: Path, source: str) -> TextIO:
    """``path`` opened to read, if it is a regular file. A device (``/dev/zero`` never ends), a
    FIFO (opening it would wait for a writer forever) or a folder is a ScenarioError; the file is
    opened without waiting and checked through its descriptor, so it cannot be swapped between."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise ScenarioError(f"{source}: not a regular file (a scenario is a .jsonl file)") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ScenarioError(f"{source}: not a regular file (a scenario is a .jsonl file)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def _bounded_lines(handle: TextIO, source: str) -> Iterator[str]:
    """The lines of ``handle``, each read at most :data:`MAX_LINE_CHARS` characters at a time."""
    number = 0
    while True:
        line = handle.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
            raise ScenarioError(f"{source} line {number}: longer than {MAX_LINE_CHARS:,} "
                                f"characters; a scenario line holds one step")
        yield line


def _file_signature(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_ino, info.st_size, info.st_mtime_ns


def _step_label(number: int, step: Step) -> str:
    """``step 3 (feed PeanutGalleryTrinket.add_guidance)`` or ``step 4 (turn)``."""
    if isinstance(step, FeedStep):
        return f"step {number} (feed {step.trinket}.{step.method})"
    return f"step {number} ({step.kind})"


def _unwritable(obj: Mapping[str, Any], error: Exception) -> str:
    """Which field of a step's (or the header's) JSON form cannot be written, and why; feed
    arguments are named one by one (``argument 2``, ``argument 'due'``)."""
    parts: list[tuple[str, Any]] = []
    for key, value in obj.items():
        if obj.get("step") == "feed" and key == "args" and isinstance(value, list):
            parts.extend((f"argument {i}", item) for i, item in enumerate(value, 1))
        elif obj.get("step") == "feed" and key == "kwargs" and isinstance(value, dict):
            parts.extend((f"argument {name!r}", item) for name, item in value.items())
        else:
            parts.append((f"field {key!r}", value))
    for name, value in parts:
        try:
            decode_value(value)
        except ValueError as exc:
            return f"{name}: {exc}"
    return f"{type(error).__name__}: {error}"


class FileSteps(Sequence[Step]):
    """The steps of a loaded scenario file, read from the file each time they are iterated.

    :meth:`Scenario.load` validated every line and counted the steps, turns and kinds, so ``len``,
    :attr:`turns` and :attr:`kinds` cost nothing; iterating parses the lines again (one at a time,
    in constant memory). Indexing walks the file up to the index. If the file changed since it was
    loaded, iterating raises ScenarioError (load it again).
    """

    def __init__(self, path: Path, source: str, trinkets: Sequence[str], count: int, turns: int,
                 kinds: Mapping[str, int], signature: tuple[int, int, int]) -> None:
        self.path = path
        self.source = source
        self.trinkets = tuple(trinkets)
        self._length = count
        self.turns = turns
        self.kinds = dict(kinds)
        self._signature = signature

    @classmethod
    def scan(cls, path: Path, source: str) -> tuple[dict[str, Any], FileSteps]:
        """Read a scenario file once: its header and its steps, each validated and counted."""
        signature = _file_signature(path)
        count = turns = 0
        kinds: dict[str, int] = {}
        with _open_scenario(path, source) as handle:
            records = _read_json_lines(_bounded_lines(handle, source), source)
            header = _read_header(records, source)
            for number, obj in records:
                step = parse_step(obj, f"{source} line {number}", header["trinkets"])
                count += 1
                kinds[step.kind] = kinds.get(step.kind, 0) + 1
                if isinstance(step, TurnStep):
                    turns += step.n
        return header, cls(path, source, header["trinkets"], count, turns, kinds, signature)

    def numbered(self) -> Iterator[tuple[int, Step]]:
        """(line number, step) for every step, read from the file now."""
        try:
            unchanged = _file_signature(self.path) == self._signature
        except OSError:
            unchanged = False
        if not unchanged:
            raise ScenarioError(f"{self.source}: the file changed (or went away) since it was "
                                f"loaded; load it again")
        with _open_scenario(self.path, self.source) as handle:
            records = _read_json_lines(_bounded_lines(handle, self.source), self.source)
            next(records)  # the header, validated by scan()
            for number, obj in records:
                yield number, parse_step(obj, f"{self.source} line {number}", self.trinkets)

    def __iter__(self) -> Iterator[Step]:
        for _, step in self.numbered():
            yield step

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Step: ...

    @overload
    def __getitem__(self, index: slice) -> list[Step]: ...

    def __getitem__(self, index: int | slice) -> Step | list[Step]:
        if isinstance(index, slice):
            return list(self)[index]
        position = index + self._length if index < 0 else index
        if not 0 <= position < self._length:
            raise IndexError(f"step index {index} out of range ({self._length} steps)")
        return next(itertools.islice(self, position, None))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable-compare like a list

    def __repr__(self) -> str:
        return f"<FileSteps {self._length} steps of {self.source}>"


def check_header(raw: Mapping[str, Any], where: str, *, in_file: bool = False) -> dict[str, Any]:
    """A validated copy of a header (its defaults filled in), or ScenarioError naming the field."""
    header = dict(raw)
    check_fields(header, HEADER_FIELDS, where, "the header")
    if in_file or "format" in header or "version" in header:
        if header.get("format") != FORMAT:
            raise fail(where, f"field 'format' must be {FORMAT!r}: is this a scenario file?")
        if header.get("version") != VERSION:
            raise fail(where, f"field 'version' must be {VERSION} (this wm-kernel reads version "
                               f"{VERSION}; got {header.get('version')!r})")
    if "clock" not in header:
        raise fail(where, "field 'clock' is missing (the replay's start time, ISO 8601 with offset)")
    check_instant(header["clock"], where, "clock")
    header.setdefault("base_prompt", DEFAULT_BASE_PROMPT)
    if not isinstance(header["base_prompt"], str):
        raise fail(where, "field 'base_prompt' must be a string")
    header["profile"] = check_profile_fields(header.get("profile", {}), where, "profile")
    header.setdefault("user_id", "notebook")
    if not isinstance(header["user_id"], str) or not header["user_id"].strip():
        raise fail(where, "field 'user_id' must be a non-empty string")
    names = header.get("trinkets", list(default_trinkets()))
    if (not isinstance(names, (list, tuple)) or not all(isinstance(n, str) and n for n in names)
            or len(set(names)) != len(names)):
        raise fail(where, "field 'trinkets' must be a list of distinct trinket class names")
    header["trinkets"] = tuple(names)
    continuum = header.get("continuum_id")
    if continuum is not None and (not isinstance(continuum, str) or not continuum):
        raise fail(where, "field 'continuum_id' must be null or a non-empty string")
    header["continuum_id"] = continuum
    header.setdefault("auto_compose", True)
    if not isinstance(header["auto_compose"], bool):
        raise fail(where, "field 'auto_compose' must be true or false")
    header["layout"] = check_layout(header.get("layout"), where)
    return header


def check_layout(value: Any, where: str) -> dict[str, Any] | None:
    """A header's ``layout``: null, or a :meth:`Layout.to_dict <wm_kernel.core.composer.Layout.to_dict>`
    form that makes a valid Layout (returned in that form)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("placements"), dict):
        raise fail(where, "field 'layout' must be null or {\"name\": ..., \"placements\": "
                          "{placement: [section, ...]}}")
    check_fields(value, ("name", "placements"), where, "the layout")
    try:
        return Layout.from_dict(value).to_dict()
    except (TypeError, ValueError) as exc:
        raise fail(where, f"field 'layout': {exc}") from None


def default_trinkets() -> tuple[str, ...]:
    """Every built-in trinket's name, in registration order."""
    import trinkets

    return tuple(trinkets.BUILTIN_NAMES)


def profile_fields(profile: Profile) -> dict[str, Any]:
    """A Profile's fields as JSON values (``account_created`` as ISO 8601), defaults left out."""
    out: dict[str, Any] = {}
    default = Profile()
    for name in PROFILE_FIELDS:
        value = getattr(profile, name)
        if value == getattr(default, name):
            continue
        out[name] = value.isoformat() if isinstance(value, datetime) else value
    return out


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
        for raw in steps:
            self._append(raw)

    def _editable(self) -> list[Step]:
        """The steps as a list to change: a loaded file's steps are read into memory first."""
        if not isinstance(self.steps, list):
            numbered = list(self.steps.numbered()) if isinstance(self.steps, FileSteps) else [
                (None, step) for step in self.steps]
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
        return scenario

    @classmethod
    def loads(cls, text: str, source: str = "<scenario>") -> Scenario:
        """Parse a scenario from the text of a file."""
        return cls._parse(text.splitlines(), source)

    @classmethod
    def _parse(cls, lines: Iterable[str], source: str) -> Scenario:
        records = _read_json_lines(lines, source)
        header = _read_header(records, source)
        steps: list[Step] = []
        numbers: list[int | None] = []
        for number, obj in records:
            steps.append(parse_step(obj, f"{source} line {number}", header["trinkets"]))
            numbers.append(number)
        scenario = cls(**header)
        scenario.steps, scenario._lines, scenario.source = steps, numbers, source
        return scenario

    def dumps(self) -> str:
        """The text of the scenario file: the header line, then one line per step."""
        return "".join(line + "\n" for line in self._dump_lines())

    def _dump_lines(self) -> Iterator[str]:
        for _, obj in self._json_forms():
            yield _json_line(obj)

    def _json_forms(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(what, JSON form) of the header and of each step, in file order."""
        yield "the header", {"format": FORMAT, "version": VERSION, **self._header()}
        for number, step in enumerate(self.steps, 1):
            yield _step_label(number, step), step.to_json()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the scenario file atomically (a temporary file renamed over ``path``).

        A step that cannot be written (a string UTF-8 cannot encode, such as a lone surrogate)
        raises ScenarioError naming the step and its field or argument; ``path`` is left as it was.
        """

        def write(handle: TextIO) -> None:
            for what, obj in self._json_forms():
                try:
                    handle.write(_json_line(obj) + "\n")
                except (UnicodeEncodeError, TypeError, ValueError) as exc:
                    raise ScenarioError(f"cannot save {path}: {what}: {_unwritable(obj, exc)}"
                                        ) from None

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

    def _append(self, raw: Mapping[str, Any] | Step) -> Scenario:
        # a Step built in Python is checked through its JSON form: one validation for every source
        steps = self._editable()
        where = f"step {len(steps) + 1}"
        data = raw.to_json() if isinstance(raw, Step) else dict(raw)
        steps.append(parse_step(data, where, self.trinkets))
        self._lines.append(None)
        return self

    def _replace_last(self, step: Step) -> None:
        """Replace the last step (a recorder merging a turn or a clock move into it)."""
        steps = self._editable()
        steps[-1] = parse_step(step.to_json(), self._where(len(steps) - 1), self.trinkets)

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
        return self._append({"step": "feed", "trinket": trinket, "method": method,
                             "args": encoded_args, "kwargs": encoded_kwargs})

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
                raise ValueError(f"advance({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}): "
                                 f"{exc}") from None
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
    @classmethod
    def record(cls, session: Session) -> Any:
        """Start recording everything done to ``session``: a
        :class:`~wm_kernel.experiments.recorder.ScenarioRecorder`, which builds a Scenario."""
        if _recorder is None:  # only while the package itself is still being imported
            raise RuntimeError("Scenario.record() needs wm_kernel.experiments.recorder, not imported yet")
        return _recorder(session)

    def run(self, variant: Variant | Layout | Mapping[str, Any] | None = None, *,
            factories: Mapping[str, Any] | None = None,
            instruments: Iterable[Instrument] | None = None) -> Session:
        """Replay the steps into a fresh Session (ManualClock at ``clock``) and return it.

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
        session = Session(base_prompt=chosen.wording(self.base_prompt),
                          profile=Profile(**self.profile), clock=clock, user_id=self.user_id,
                          layout=layout, trinkets=made, continuum_id=self.continuum_id,
                          auto_compose=self.auto_compose, instruments=instruments)
        for name in chosen.disabled:
            try:
                session.trinket(name).enabled = False
            except ValueError as exc:
                raise ValueError(f"variant {chosen.name!r}: {exc}") from None
        disabled = {session.trinket(name).name for name in chosen.disabled}
        styled = chosen.apply_styles(session)
        if chosen.hook is not None:
            chosen.hook(session)
        replay = Replay(session, clock, chosen, disabled, styled)
        for where, step in self._numbered_steps():
            try:
                step.apply(replay)
            except ScenarioError:
                raise
            except (TypeError, ValueError, RuntimeError, OverflowError) as exc:
                raise fail(where, f"{step.describe()} failed: {type(exc).__name__}: {exc}") from exc
        return session

    def _factory(self, name: str, factories: Mapping[str, Any] | None) -> Any:
        if factories and name in factories:
            return factories[name]
        builtin = builtin_class(name)
        if builtin is None:
            raise ScenarioError(f"trinket {name!r} is not built in; pass factories={{{name!r}: "
                                f"<class or factory>}} to run()")
        return builtin
