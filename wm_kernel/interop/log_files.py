"""Reading log files: :func:`import_log` over files and folders, :func:`read_log` for one file.

A folder is the ``.jsonl`` / ``.json`` files in it (:func:`log_files`); a Claude Code session file
brings its ``subagents/`` files beside it. Each file is split into records (JSON Lines split on "\\n"
only, or one JSON document), the registered log format that claims it is chosen (forced, sniffed
from the whole file, or detected from the first record that names it) and its reader turns the
records into requests (:class:`~wm_kernel.interop.formats.LoggedRequest`); what cannot be read is an
:class:`~wm_kernel.interop.formats.ImportIssue` naming its line, and the rest imports into an
:class:`~wm_kernel.interop.imported.ImportedSession`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from wm_kernel.interop.claude_code import ClaudeCodeReader
from wm_kernel.interop.formats import ImportIssue, LoggedRequest
from wm_kernel.interop.imported import ImportedSession
from wm_kernel.interop.jsonspan import locate
from wm_kernel.interop.readers import detect_log_format, get_log_format, log_formats, sniff_log_format
from wm_kernel.interop.split import Splitter
from wm_kernel.tokens import TokenCounter
from wm_kernel.utils.fastjson import UNREAD, loads_fast, long_digits
from wm_kernel.utils.safe_files import BOM, BadJSONError, UnreadableFileError, open_regular, parse_json, read_bytes

#: How much of a file :func:`log_format_of` reads to tell its format.
MAX_SNIFF_CHARS = 4 * 1024 * 1024

#: The ``skipped`` kind of a file's last line when it is cut off (still being written).
INCOMPLETE = "incomplete last line (still being written)"


@dataclass
class LogFile:
    """What one file gave: its requests, the issues of the records that could not be read, and the
    count of ordinary records of each type that carry no request (a transcript's ``progress``
    lines...), read and skipped."""

    path: str
    format: str | None
    requests: list[LoggedRequest]
    issues: list[ImportIssue]
    skipped: Counter[str] = field(default_factory=Counter)
    reader: Any = None


def _records(
    data: bytes,
    name: str,
    issues: list[ImportIssue],
    skipped: Counter[str] | None = None,
    decoded: Sequence[bool] = (True,),
) -> Iterator[tuple[int, str, Any]]:
    """(line, text, value) of each record: JSON Lines split on "\n" only (U+2028, U+0085 and the
    other characters ``str.splitlines`` breaks on stay inside their line), each line decoded on its
    own (a bad UTF-8 byte is an issue naming its line); or, where the file is one JSON document
    over several lines (a pretty-printed body, an array or ``{"data": [...]}`` list of records),
    its records. A last line that is not JSON and has no newline after it is a line still being
    written (the file grew as it was read): counted in ``skipped`` as ``INCOMPLETE``, not an issue,
    and read on the next run. ``decoded[0]`` False (the caller may change it between records): a line
    read fast is given as "" rather than decoded (its reader does not keep the text).
    """
    rows = data.split(b"\n")
    document = _one_document(data, rows)
    if document is not None:
        yield from _document(*document)
        return
    long = long_digits(data)  # checked once: a file without a long digit run needs no check per line
    for number, row in enumerate(rows, start=1):
        if row.endswith(b"\r"):
            row = row[:-1]
        if not row or row.isspace():  # (strip() would copy every line to find the blank ones)
            continue
        # orjson's fast reading where it reads exactly (it checks the UTF-8 itself: a line it reads
        # is decoded only for a reader that keeps the text); else the line decoded and read by the
        # one strict decoder, whose one-line error (NaN, a huge integer, deep nesting, malformed) is
        # the line's issue
        value = UNREAD if long and long_digits(row) else loads_fast(row)
        if value is not UNREAD:
            yield number, row.decode("utf-8") if decoded[0] else "", value
            continue
        try:
            line = row.decode("utf-8")
        except UnicodeDecodeError as exc:
            issues.append(
                ImportIssue(
                    name,
                    number,
                    f"not UTF-8: byte 0x{row[exc.start]:02x} at column {exc.start + 1}; the line is skipped",
                )
            )
            continue
        try:
            value = parse_json(line)
        except BadJSONError as exc:
            if number == len(rows) and skipped is not None:
                # no newline after it: a line still being written (the file changed as it was read)
                skipped[INCOMPLETE] += 1
                continue
            issues.append(ImportIssue(name, number, str(exc)))
            continue
        yield number, line, value


def _one_document(data: bytes, rows: list[bytes]) -> tuple[str, Any] | None:
    """The text of a file that is one JSON document, and the document; None for JSON Lines. A file
    is one document when its only line holds an array of records or an API's list of them, or
    when it has several lines and the first is not JSON alone (a pretty-printed body)."""
    first = next((i for i, row in enumerate(rows) if row.strip()), None)
    if first is None:
        return None
    if not any(r.strip() for r in rows[first + 1 :]):
        if rows[first].lstrip()[:1] not in b"[{":
            return None
        try:  # one line holding an array of records, or an API's list of them
            text = data.decode("utf-8")
            whole = parse_json(text)
        except (BadJSONError, UnicodeDecodeError):
            return None
        listed = isinstance(whole, list) or (isinstance(whole, Mapping) and whole.get("object") == "list")
        return (text, whole) if listed else None
    try:
        parse_json(rows[first].decode("utf-8"))
    except (BadJSONError, UnicodeDecodeError):
        pass
    else:
        return None  # a first line that is JSON alone: JSON Lines
    try:
        text = data.decode("utf-8")
        whole = parse_json(text)
    except (BadJSONError, UnicodeDecodeError):
        return None
    return text, whole


def _document(text: str, whole: Any) -> Iterator[tuple[int, str, Any]]:
    """The records of a file that is one JSON document: the document itself, the items of an
    array, or the items of a ``{"data": [...]}`` list (an API's list export)."""
    items: list[Any] | None = None
    node = locate(text)
    if isinstance(whole, list):
        items, nodes = whole, node.items
    elif isinstance(whole, Mapping) and isinstance(whole.get("data"), list) and "messages" not in whole:
        items, nodes = whole["data"], node["data"].items
    if items is None:
        yield text.count("\n", 0, node.start) + 1, text, whole
        return
    newlines = 0
    last = 0
    for item, child in zip(items, nodes, strict=True):
        newlines += text.count("\n", last, child.start)
        last = child.start
        yield newlines + 1, text[child.start : child.end], item


def read_log(
    path: str | Path,
    *,
    format: str | None = None,
    splitter: Splitter | None = None,
    context: Any = None,
    subagent: bool = False,
    usage_only: bool = False,
) -> LogFile:
    """One log file read (:class:`LogFile`). ValueError (naming the file and line) when it cannot
    be imported at all: no such file, an unknown format, no record readable. ``context`` and
    ``subagent`` read a Claude Code subagent file beside the reader of its session; ``usage_only``
    reads a transcript for its usage alone (the same requests, without their sections).

    Long because: one read of a file: its bytes read and sniffed for a whole-file format, else each
    record fed to the reader the first recognised record chooses (records before it held back), then
    the issues gathered; every step is a few lines.
    """
    name = str(path)
    if format is not None and format not in log_formats():
        raise ValueError(f"unknown format {format!r}; formats: {', '.join(log_formats())}")
    try:
        data = read_bytes(path, name)  # a regular file only (a FIFO, /dev/zero: one line), bounded
    except UnreadableFileError:
        raise
    except OSError as exc:
        raise ValueError(f"{name}: cannot read the file ({exc})") from None
    data = data.removeprefix(BOM.encode("utf-8"))  # an editor's byte order mark: not part of line 1
    split = splitter or Splitter()
    # a format read as a whole file (OTLP...) claims the file from its text (LogFormat.sniff)
    # (its first MiB: a whole-file format's sniff reads the first records, not the whole file)
    whole = format if format is not None else sniff_log_format(data[: 1 << 20].decode("utf-8", errors="replace"))
    if whole is not None and get_log_format(whole).read_file is not None:
        return _read_whole(name, data, whole, split)
    issues: list[ImportIssue] = []
    reader: Any = None
    chosen = format
    pending: list[tuple[int, str, Any]] = []
    partial: Counter[str] = Counter()
    decoded = [True]  # whether the lines are decoded: until a reader that does not keep them is chosen
    for number, row, value in _records(data, name, issues, partial, decoded):
        if chosen is None:
            chosen = detect_log_format(value)
            if chosen is None:
                pending.append((number, row, value))
                continue
        if reader is None:
            make = get_log_format(chosen).reader
            if make is None:  # a whole-file format its sniff did not claim (a first line that is not its)
                return _read_whole(name, data, chosen, split)
            if make is ClaudeCodeReader:
                reader = ClaudeCodeReader(name, split, context, subagent, usage_only=usage_only)
            elif usage_only and getattr(make, "reads_usage_only", False):
                reader = make(name, split, usage_only=True)
            else:
                reader = make(name, split)
            decoded[0] = getattr(reader, "keeps_text", True)
            for early in pending:  # records before the first one that named the format
                _feed(reader, early, issues)
            pending = []
        _feed(reader, (number, row, value), issues)
    for number, _, _ in pending:
        issues.append(
            ImportIssue(
                name,
                number,
                "unknown format: not a request body, transcript line or OTLP document "
                f"({', '.join(sorted(log_formats()))})",
            )
        )
    requests = reader.finish() if reader is not None else []
    issues += getattr(reader, "issues", [])
    issues.sort(key=lambda issue: issue.line)
    if not requests:
        first = issues[0] if issues else ImportIssue(name, 1, "no requests in the file")
        raise ValueError(f"{first} (nothing imported)")
    return LogFile(name, chosen, requests, issues, Counter(getattr(reader, "skipped", {})) + partial, reader)


def _read_whole(name: str, data: bytes, chosen: str, split: Splitter) -> LogFile:
    """A file read by a format that reads whole files (OTLP, MIRA's tap)."""
    whole_file = get_log_format(chosen).read_file
    assert whole_file is not None
    issues: list[ImportIssue] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        issues.append(ImportIssue(name, line, f"not UTF-8: byte 0x{data[exc.start]:02x}; read as U+FFFD"))
        text = data.decode("utf-8", errors="replace")
    try:
        found, problems = whole_file(name, text, split)
    except (RecursionError, BadJSONError):
        raise ValueError(f"{name}: JSON nested too deeply to read (nothing imported)") from None
    return LogFile(name, chosen, found, issues + problems)


def _feed(reader: Any, record: tuple[int, str, Any], issues: list[ImportIssue]) -> None:
    number, line, value = record
    try:
        reader.feed(number, line, value)
    except (ValueError, KeyError, TypeError, IndexError, OverflowError) as exc:
        issues.append(ImportIssue(reader.path, number, str(exc)))
    except RecursionError:  # a record nested deeper than the readers' walk can go
        issues.append(ImportIssue(reader.path, number, "JSON nested too deeply to read; the line is skipped"))


def read_file(
    path: str | Path, *, format: str | None = None, splitter: Splitter | None = None
) -> tuple[list[LoggedRequest], list[ImportIssue]]:
    """The requests of one log file and the issues of the records that could not be read
    (:func:`read_log` without its counts). ValueError (naming the file and line) when the file
    cannot be imported at all: no such file, an unknown format, no record readable."""
    read = read_log(path, format=format, splitter=splitter)
    return read.requests, read.issues


def log_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files ``paths`` name: a file as it is, a folder as the ``.jsonl`` / ``.json`` files in it
    (sorted; a Claude Code session folder as its session file, when it sits beside the folder)."""
    out: list[Path] = []
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            out.append(path)
            continue
        inside = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".jsonl", ".json"))
        beside = path.parent / f"{path.name}.jsonl"
        if not inside and beside.is_file():
            inside = [beside]
        if not inside and not (path / "subagents").is_dir():
            raise ValueError(f"{path}: a folder with no .jsonl or .json log in it")
        out += inside
        if not inside:
            out += sorted((path / "subagents").glob("*.jsonl"))
    return out


def _real(path: Path) -> Path:
    """The path with its links followed (a loop of links left as it is: reading it is the one-line
    error; ``Path.resolve`` raises a RuntimeError on one)."""
    return Path(os.path.realpath(path))


def _issue_of(path: Path, exc: ValueError) -> ImportIssue:
    """A file that gave nothing, as the issue its one-line error names (file and line)."""
    message = str(exc).removesuffix(" (nothing imported)")
    prefix = f"{path}:"
    if message.startswith(prefix):
        line, _, why = message[len(prefix) :].partition(": ")
        if line.isdigit():
            return ImportIssue(str(path), int(line), f"{why}; nothing imported from this subagent file")
        message = message[len(prefix) :].lstrip()
    return ImportIssue(str(path), 0, f"{message}; nothing imported from this subagent file")


def import_log(
    *paths: str | Path,
    format: str | None = None,
    splitter: Splitter | None = None,
    rules: Iterable[str] = (),
    counter: TokenCounter | None = None,
    subagents: bool = True,
    gap: timedelta | float | None = None,
    times: Sequence[datetime] | None = None,
) -> ImportedSession:
    """An :class:`ImportedSession` of every request in ``paths`` (files or folders, in send order).

    ``format`` forces a format (default: detected per file); ``splitter`` or ``rules`` (regular
    expressions, each match starting a section) add your own splitting. A Claude Code session file
    brings its ``<session>/subagents/*.jsonl`` beside it (``subagents=False``: not), each its own
    conversation. Records that cannot be read are in the result's ``errors`` (file, line, why);
    ordinary records that carry no request are counted in ``skipped``; the rest imports. ``gap`` (a
    timedelta or seconds) spaces, in file order, the requests the log gives no send time; ``times``
    gives every request's (see :meth:`ImportedSession.send_times`)."""
    if not paths:
        raise ValueError("import_log needs at least one file")
    if splitter is None:
        splitter = Splitter(list(rules))
    requests: list[LoggedRequest] = []
    issues: list[ImportIssue] = []
    skipped: Counter[str] = Counter()
    files = log_files(paths)
    done: set[Path] = set()  # a subagent file read with its session is not read again
    seen: set[str] = set()  # the API responses imported: one request each, in whichever file
    for path in files:
        if _real(path) in done:
            continue
        for one in read_unit(path, format=format, splitter=splitter, subagents=subagents, done=done):
            requests += new_responses(one.requests, seen, skipped)
            issues += one.issues
            skipped += one.skipped
    names = ", ".join(Path(p).name for p in paths)
    return ImportedSession(requests, issues, counter=counter, name=names, skipped=skipped, gap=gap, times=times)


def subagent_files(path: Path) -> list[Path]:
    """The subagent files of a Claude Code session file (``<session>/subagents/*.jsonl``), sorted."""
    folder = path.with_suffix("") / "subagents"
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def read_unit(
    path: Path,
    *,
    format: str | None = None,
    splitter: Splitter | None = None,
    subagents: bool = True,
    done: set[Path] | None = None,
    usage_only: bool = False,
) -> list[LogFile]:
    """One file read, and, when it is a Claude Code session, its subagent files read beside it (each
    with the session's reader as context), skipping those in ``done`` and adding the others to it:
    what :func:`import_log` and the usage report read as one unit (``usage_only``: see :func:`read_log`)."""
    done = done if done is not None else set()
    read = read_log(path, format=format, splitter=splitter, usage_only=usage_only)
    found = [read]
    if subagents and read.format == "claude-code":
        for sub in subagent_files(path):
            if _real(sub) not in done:
                done.add(_real(sub))
                try:
                    found.append(
                        read_log(
                            sub,
                            format=format,
                            splitter=splitter,
                            context=read.reader,
                            subagent=True,
                            usage_only=usage_only,
                        )
                    )
                except ValueError as exc:  # an empty or progress-only subagent: its session still reads
                    found.append(LogFile(str(sub), None, [], [_issue_of(sub, exc)], Counter(), None))
    return found


def new_responses(found: list[LoggedRequest], seen: set[str], skipped: Counter[str]) -> list[LoggedRequest]:
    """The transcript requests whose API response was not imported yet (a sidechain written both
    into its session and into a subagent file, a session copied on resume): one request per
    response, the first file's; the others are counted in ``skipped``."""
    out = []
    for request in found:
        ids = [i for i in (request.response_id, request.request_id) if i] if request.dialect == "claude-code" else []
        if any(i in seen for i in ids):
            skipped["duplicate response"] += 1
            continue
        seen.update(ids)
        out.append(request)
    return out


__all__ = [
    "LogFile",
    "read_log",
    "read_file",
    "log_files",
    "import_log",
    "read_unit",
    "subagent_files",
    "new_responses",
    "log_format_of",
]


def log_format_of(path: str | Path) -> str | None:
    """The registered log format that claims the file at ``path`` (sniffed from its text, else
    detected from its first record), or None when none does or it cannot be read: how a command
    given a log where it expects something else says to import it."""
    try:
        with open_regular(path, str(path), errors="replace") as handle:
            text = handle.read(MAX_SNIFF_CHARS)
    except (OSError, UnreadableFileError):
        return None
    sniffed = sniff_log_format(text)
    if sniffed is not None:
        return sniffed
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):
        try:
            record = json.loads(text)  # one JSON document (an API's list export)
        except (ValueError, RecursionError):
            return None
        if isinstance(record, list) and record:
            record = record[0]
    return detect_log_format(record)
