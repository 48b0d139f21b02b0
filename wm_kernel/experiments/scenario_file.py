"""The scenario file: its header, reading it line by line, streaming its steps, writing it whole.

What :class:`~wm_kernel.experiments.scenario.Scenario` needs of a file, apart from what a scenario
is: the header's fields and their check (:func:`check_header`, format ``wm-kernel-scenario``
version 1, see the scenario module's docstring), the opening of a file that must be a regular one,
lines bounded to :data:`MAX_LINE_CHARS`, the JSON of each line, :class:`FileSteps` (a loaded file's
steps, read again from the file whenever they are iterated). A scenario is written whole through
:func:`wm_kernel.utils.safe_files.atomic_write_text` (a reader never sees a half-written file).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO, overload

from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.profile import Profile
from wm_kernel.experiments.codec import MAX_DEPTH, decode_value
from wm_kernel.experiments.steps import (
    PROFILE_FIELDS,
    FeedStep,
    ScenarioError,
    Step,
    TrinketNames,
    TurnStep,
    check_fields,
    check_instant,
    check_profile_fields,
    fail,
    parse_step,
)
from wm_kernel.utils.safe_files import BOM, BadJSONError, UnreadableFileError, lines, open_regular, parse_json

FORMAT = "wm-kernel-scenario"
VERSION = 1
HEADER_FIELDS = (
    "format",
    "version",
    "base_prompt",
    "profile",
    "clock",
    "user_id",
    "trinkets",
    "continuum_id",
    "auto_compose",
    "layout",
)
DEFAULT_BASE_PROMPT = "You are a helpful assistant talking with {first_name}."


def json_line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


def read_json_lines(lines: Iterable[str], source: str) -> Iterator[tuple[int, Any]]:
    """(line number, JSON value) for each non-blank line; ScenarioError naming the line otherwise
    (malformed JSON, NaN or Infinity, an integer of too many digits, nesting too deep: see
    :func:`~wm_kernel.utils.safe_files.parse_json`). A byte order mark before line 1 is skipped."""
    for number, line in enumerate(lines, 1):
        if number == 1:
            line = line.removeprefix(BOM)
        if not line.strip():
            continue
        try:
            yield number, parse_json(line.rstrip("\r\n"), finite=False)  # the codec names a NaN's field
        except BadJSONError as exc:
            if str(exc).endswith("nested too deeply to read"):
                raise fail(
                    f"{source} line {number}",
                    f"JSON nested too deeply to read (values may nest at most {MAX_DEPTH} levels deep)",
                ) from None
            raise fail(
                f"{source} line {number}", f"not valid JSON ({str(exc).removeprefix('malformed JSON: ')})"
            ) from None


def read_header(records: Iterator[tuple[int, Any]], source: str) -> dict[str, Any]:
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


def open_scenario(path: Path, source: str) -> TextIO:
    """``path`` opened to read through :func:`~wm_kernel.utils.safe_files.open_regular`: a device
    (``/dev/zero`` never ends), a FIFO (opening it would wait for a writer forever), a folder or a
    symlink loop is a ScenarioError."""
    try:
        return open_regular(path, source)
    except UnreadableFileError as exc:
        if "not a regular file" in str(exc):
            raise ScenarioError(f"{source}: not a regular file (a scenario is a .jsonl file)") from None
        raise ScenarioError(str(exc)) from None


def bounded_lines(handle: TextIO, source: str) -> Iterator[str]:
    """The lines of ``handle``, each read at most :data:`MAX_LINE_CHARS` characters at a time."""
    try:
        yield from lines(handle, source, max_chars=MAX_LINE_CHARS)
    except UnreadableFileError as exc:
        if "longer than" in str(exc):
            raise ScenarioError(f"{exc}; a scenario line holds one step") from None
        raise ScenarioError(str(exc)) from None


def file_signature(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_ino, info.st_size, info.st_mtime_ns


def step_label(number: int, step: Step) -> str:
    """``step 3 (feed PeanutGalleryTrinket.add_guidance)`` or ``step 4 (turn)``."""
    if isinstance(step, FeedStep):
        return f"step {number} (feed {step.trinket}.{step.method})"
    return f"step {number} ({step.kind})"


def unwritable(obj: Mapping[str, Any], error: Exception) -> str:
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

    def __init__(
        self,
        path: Path,
        source: str,
        trinkets: Sequence[str],
        count: int,
        turns: int,
        kinds: Mapping[str, int],
        signature: tuple[int, int, int],
    ) -> None:
        self.path = path
        self.source = source
        self.trinkets = tuple(trinkets)
        self._length = count
        self.turns = turns
        #: The trinkets its ``add_trinket`` steps register, in order.
        self.added: tuple[str, ...] = ()
        self.kinds = dict(kinds)
        self._signature = signature

    @classmethod
    def scan(cls, path: Path, source: str) -> tuple[dict[str, Any], FileSteps]:
        """Read a scenario file once: its header and its steps, each validated and counted."""
        count = turns = 0
        kinds: dict[str, int] = {}
        with open_scenario(path, source) as handle:
            info = os.fstat(handle.fileno())  # the file opened, not the path looked at again
            signature = info.st_ino, info.st_size, info.st_mtime_ns
            records = read_json_lines(bounded_lines(handle, source), source)
            header = read_header(records, source)
            names = TrinketNames(header["trinkets"])
            for number, obj in records:
                step = parse_step(obj, f"{source} line {number}", names)
                count += 1
                kinds[step.kind] = kinds.get(step.kind, 0) + 1
                if isinstance(step, TurnStep):
                    turns += step.n
        steps = cls(path, source, header["trinkets"], count, turns, kinds, signature)
        steps.added = tuple(names[len(header["trinkets"]) :])
        return header, steps

    def numbered(self) -> Iterator[tuple[int, Step]]:
        """(line number, step) for every step, read from the file now."""
        try:
            unchanged = file_signature(self.path) == self._signature
        except OSError:
            unchanged = False
        if not unchanged:
            raise ScenarioError(f"{self.source}: the file changed (or went away) since it was loaded; load it again")
        with open_scenario(self.path, self.source) as handle:
            records = read_json_lines(bounded_lines(handle, self.source), self.source)
            next(records)  # the header, validated by scan()
            names = TrinketNames(self.trinkets)
            for number, obj in records:
                yield number, parse_step(obj, f"{self.source} line {number}", names)

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
            raise fail(
                where,
                f"field 'version' must be {VERSION} (this wm-kernel reads version "
                f"{VERSION}; got {header.get('version')!r})",
            )
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
    if (
        not isinstance(names, (list, tuple))
        or not all(isinstance(n, str) and n for n in names)
        or len(set(names)) != len(names)
    ):
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
    """A header's ``layout``: null, or a :meth:`Layout.to_dict <wm_kernel.core.composer.layout.Layout.to_dict>`
    form that makes a valid Layout (returned in that form)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("placements"), dict):
        raise fail(where, 'field \'layout\' must be null or {"name": ..., "placements": {placement: [section, ...]}}')
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
