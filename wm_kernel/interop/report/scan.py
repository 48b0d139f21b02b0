"""The usage of every log under some paths, one row per request, read through a per-file cache.

A *unit* is what :func:`~wm_kernel.interop.log_files.read_unit` reads as one: a log file, or a
Claude Code session file with its ``<session>/subagents/*.jsonl``. Each unit is read by the same
readers as :func:`~wm_kernel.interop.log_files.import_log` and its requests' usage by the same
parser (``logged_counts``, the counts of ``logged_usage``), so the report's totals are the import's. A request becomes a
:class:`UsageRow`: its time, model, provider, session, the five counts, and (a transcript's) the
response ids the import dedupes on, across files.

The cache keeps a unit's rows, issues and skipped counts in one JSON file named by the unit's path,
keyed on the path, size and modification time (ns) of each of its files and the cache's version
(``CACHE_VERSION``, bumped whenever a reader or a row changes). An entry that does not match, or
does not read, is rebuilt, never trusted; entries are written whole (a temporary file renamed over
the old).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wm_kernel.interop.billing import logged_counts
from wm_kernel.interop.log_files import read_unit, subagent_files
from wm_kernel.utils.fastjson import loads_exact
from wm_kernel.utils.safe_files import UnreadableFileError

#: Bumped whenever what a row holds, or how a unit is read, changes: older entries are rebuilt.
CACHE_VERSION = 2
#: The environment variable naming the cache folder (default: ``$XDG_CACHE_HOME/wm-kernel/usage``).
CACHE_ENV = "WM_KERNEL_CACHE"


class UsageRow:
    """One request's usage, as the report counts it: its send time (ISO-8601), model, provider,
    session, uncached input, cache reads, writes by TTL (as ``Usage.cache_writes`` keys them:
    ``5m``, ``1h``, ``default``), output, and the response ids a transcript's request is deduped
    on. ``usage`` False: the log holds none for it (counted as a request, with no tokens). A plain
    slotted class: a cached run builds one per request, and a dataclass's checks cost more than
    the rest of the run."""

    __slots__ = (
        "sent_at",
        "model",
        "provider",
        "session",
        "input",
        "cache_read",
        "writes",
        "output",
        "usage",
        "ids",
        "cache_write_1h",
        "cache_write_5m",
    )

    def __init__(
        self,
        sent_at: str | None,
        model: str | None,
        provider: str,
        session: str,
        input: int = 0,
        cache_read: int = 0,
        writes: tuple[tuple[str, int], ...] = (),
        output: int = 0,
        usage: bool = True,
        ids: tuple[str, ...] = (),
    ) -> None:
        self.sent_at, self.model, self.provider, self.session = sent_at, model, provider, session
        self.input, self.cache_read, self.writes, self.output = input, cache_read, writes, output
        self.usage, self.ids = usage, ids
        one_hour = 0
        written = 0
        for ttl, count in writes:
            written += count
            if ttl == "1h":
                one_hour += count
        #: writes at the one-hour TTL, and at any other (``Usage.cache_write_5m_tokens``)
        self.cache_write_1h = one_hour
        self.cache_write_5m = written - one_hour

    def to_json(self) -> list[Any]:
        return [
            self.sent_at,
            self.model,
            self.provider,
            self.session,
            self.input,
            self.cache_read,
            dict(self.writes),
            self.output,
            self.usage,
            list(self.ids),
        ]

    @classmethod
    def from_json(cls, item: Sequence[Any]) -> UsageRow:
        sent_at, model, provider, session, plain, read, writes, output, usage, ids = item
        for n in (plain, read, output, *writes.values()):
            if type(n) is not int or n < 0:
                raise ValueError("a cached row's counts are not counts")
        if type(provider) is not str or type(session) is not str or type(usage) is not bool:
            raise ValueError("a cached row is malformed")
        if not (sent_at is None or type(sent_at) is str) or not (model is None or type(model) is str):
            raise ValueError("a cached row is malformed")
        if not all(type(i) is str for i in ids):
            raise ValueError("a cached row's ids are malformed")
        return cls(sent_at, model, provider, session, plain, read, tuple(writes.items()), output, usage, tuple(ids))


@dataclass
class UnitRead:
    """What one unit gave: its rows, the lines no reader understood (``path:line: why``), the
    ordinary lines read and skipped by kind, and the background calls left out (MIRA's tap)."""

    rows: list[UsageRow]
    issues: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    background: int = 0
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [r.to_json() for r in self.rows],
            "issues": self.issues,
            "skipped": dict(self.skipped),
            "background": self.background,
        }

    @classmethod
    def from_json(cls, value: Any) -> UnitRead:
        rows = [UsageRow.from_json(item) for item in value["rows"]]
        issues = [str(i) for i in value["issues"]]
        skipped = Counter({str(k): int(v) for k, v in value["skipped"].items()})
        return cls(rows, issues, skipped, int(value["background"]), cached=True)


def log_units(paths: Iterable[str | Path]) -> list[Path]:
    """The log units under ``paths``: each ``.jsonl`` / ``.json`` file (a folder searched to any
    depth, in sorted order), without the subagent files a session file beside them brings."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            found.append(path)
            continue
        for root, folders, files in os.walk(path):
            folders.sort()
            for name in sorted(files):
                if name.endswith((".jsonl", ".json")):
                    found.append(Path(root) / name)
    out = []
    for path in found:
        folder = path.parent
        if folder.name == "subagents" and folder.parent.with_suffix(".jsonl").is_file():
            continue  # read with its session
        out.append(path)
    return out


def unit_files(path: Path) -> list[Path]:
    """The files of the unit whose first file is ``path`` (a Claude Code session brings its subagents)."""
    return [path, *(subagent_files(path) if path.suffix == ".jsonl" else [])]


def _session_of(requests: Sequence[Any], path: Path) -> str:
    """The session a unit's requests count in: the id its log gives (a transcript's ``sessionId``,
    a rollout's ``session_meta`` id), else the file's name without its suffix."""
    for request in requests:
        found = request.conversation_id
        if isinstance(found, str) and found:
            return found
    return path.stem


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector paused (as it was before, after): a unit's lines are parsed
    into many short-lived containers that reference counting frees, yet the collector would walk
    them; paused, it costs a tenth of the pass less (``bench/usage.py``). What the reader's own
    cycles hold is collected once the unit is read."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_rows(path: Path) -> UnitRead:
    """The rows of one unit, read now (no cache)."""
    with _no_cycle_collection():
        return _read_rows(path)


def _read_rows(path: Path) -> UnitRead:
    try:
        files = read_unit(path, usage_only=True)
    except UnreadableFileError as exc:
        return UnitRead([], [f"{exc} (file not read)"])
    except ValueError as exc:
        return UnitRead([], [f"{exc}".replace(" (nothing imported)", "") + " (file not read)"])
    requests = [r for one in files for r in one.requests]
    session = _session_of(requests, path)
    out = UnitRead([])
    for one in files:
        out.issues += [str(issue) for issue in one.issues]
        out.skipped += one.skipped
    for request in requests:
        if request.background:
            out.background += 1
            continue
        ids = (
            tuple(i for i in (request.response_id, request.request_id) if i) if request.dialect == "claude-code" else ()
        )
        when = request.sent_at.isoformat() if request.sent_at is not None else None
        where = f"{request.path}:{request.lines[0]}" if request.lines else request.path
        try:
            usage = logged_counts(request, where=where)
        except ValueError as exc:
            out.issues.append(f"{where}: usage not read: {exc}")
            usage = None
        if usage is None:
            out.rows.append(UsageRow(when, request.model, request.provider, session, usage=False, ids=ids))
            continue
        # priced by the request's own model, as the import prices it (``request_pricing``)
        out.rows.append(
            UsageRow(
                when,
                request.model,
                request.provider,
                session,
                usage.input_tokens,
                usage.cache_read_tokens,
                tuple(sorted(usage.cache_writes.items())),
                usage.output_tokens,
                True,
                ids,
            )
        )
    for one in files:  # done with the requests: freed now, not by the cycle collector
        release = getattr(one.reader, "release", None)
        if release is not None:
            release()
    return out


def default_cache_dir() -> Path:
    """``$WM_KERNEL_CACHE``, else ``$XDG_CACHE_HOME/wm-kernel/usage``, else ``~/.cache/wm-kernel/usage``."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wm-kernel" / "usage"


class UsageCache:
    """The per-unit cache (module docstring) in ``folder``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.version = CACHE_VERSION

    def _entry(self, path: Path) -> Path:
        key = hashlib.blake2b(os.path.abspath(path).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        return self.folder / f"{key}.json"

    @staticmethod
    def stamp(path: Path) -> list[list[Any]]:
        """(absolute path, size, mtime in ns as text) of each of the unit's files, as the entry
        records them (the time as text: a 19-digit number would send the entry to the slow parser)."""
        out = []
        for one in unit_files(path):
            stat = os.stat(one)
            out.append([os.path.abspath(one), stat.st_size, str(stat.st_mtime_ns)])
        return out

    def get(self, path: Path, stamp: list[list[Any]]) -> UnitRead | None:
        """The unit's cached read, if its entry matches ``stamp`` and reads; else None."""
        try:
            raw = self._entry(path).read_bytes()
            value = loads_exact(raw, raw.decode("utf-8"))
            if value.get("version") != self.version or value.get("files") != stamp:
                return None
            return UnitRead.from_json(value["read"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None  # missing, stale or corrupt: rebuilt

    def put(self, path: Path, stamp: list[list[Any]], read: UnitRead) -> None:
        """Write the unit's entry whole (a failure to write leaves the cache as it was)."""
        entry = self._entry(path)
        text = json.dumps({"version": self.version, "files": stamp, "read": read.to_json()}, separators=(",", ":"))
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".entry-", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temporary, entry)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise


def scan(
    paths: Iterable[str | Path],
    *,
    cache: UsageCache | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> Iterator[tuple[Path, UnitRead]]:
    """Each unit under ``paths`` with its read (from ``cache`` when its entry matches); ``progress``
    is told (units done, units, bytes read) after each."""
    units = log_units(paths)
    read_bytes = 0
    for done, path in enumerate(units, start=1):
        try:
            stamp = UsageCache.stamp(path)
        except OSError as exc:
            yield path, UnitRead([], [f"{path}: cannot read the file ({exc}) (file not read)"])
            continue
        found = cache.get(path, stamp) if cache is not None else None
        if found is None:
            found = read_rows(path)
            if cache is not None:
                cache.put(path, stamp, found)
            read_bytes += sum(size for _, size, _ in stamp)
        if progress is not None:
            progress(done, len(units), read_bytes)
        yield path, found


__all__ = [
    "CACHE_VERSION",
    "CACHE_ENV",
    "UsageRow",
    "UnitRead",
    "UsageCache",
    "log_units",
    "unit_files",
    "read_rows",
    "default_cache_dir",
    "scan",
]
