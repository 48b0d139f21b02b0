"""Opening a file a user named, safely: only a regular file, read in bounded pieces, JSON of bounded
nesting. Every reader of a user's file (recordings, imported logs, tool lists) goes through here.

A FIFO would make ``open`` wait for a writer forever, ``/dev/zero`` never ends (a MemoryError after
gigabytes), and JSON nested a million levels deep ends Python's stack (a RecursionError): each is a
one-line :class:`UnreadableFileError` (a ValueError) naming the file instead.

Examples
--------
>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "tools.json")
>>> _ = open(path, "w").write('[{"name": "search"}]')
>>> load_json(path, "tools.json")
[{'name': 'search'}]
>>> read_text("/dev/null", "/dev/null")
Traceback (most recent call last):
...
wm_kernel.utils.safe_files.UnreadableFileError: /dev/null: not a regular file (a device or a FIFO)
>>> loads_json("[" * 100_000, "deep.json")
Traceback (most recent call last):
...
wm_kernel.utils.safe_files.UnreadableFileError: deep.json: JSON nested too deeply to read (at most 1,000 levels)
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

#: The largest file read whole (bytes of text), and the longest line of a line-by-line file.
MAX_FILE_CHARS = 512 * 1024 * 1024
MAX_LINE_CHARS = 64 * 1024 * 1024
#: How deep JSON may nest before it is refused (json recurses once per level).
MAX_JSON_DEPTH = 1000


class UnreadableFileError(ValueError):
    """A file that is not a regular file, too large, or holds JSON too deep to read (one line)."""


class BadJSONError(ValueError):
    """One JSON text (a file's, a line's) the kit does not read, and why, in one line: malformed,
    NaN or Infinity, an integer of too many digits, or nested too deeply."""


#: A UTF-8 byte order mark: some editors write one first; it is never part of a record.
BOM = "\ufeff"


_DEEP = "malformed JSON: nested too deeply to read"


def _constant(name: str) -> Any:
    raise BadJSONError(f"{name} is not a JSON number (numbers must be finite)")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise BadJSONError(f"{text} is out of a float's range (numbers must be finite)")
    return value


def parse_json(text: str, *, finite: bool = True) -> Any:
    """``text`` as strict JSON: BadJSONError (one line) for malformed JSON, ``NaN``/``Infinity``
    (which ``json.loads`` accepts), a number out of a float's range, an integer of more digits than
    Python converts (4,300), or nesting deeper than :data:`MAX_JSON_DEPTH` (or than the stack).
    ``finite=False`` lets NaN and Infinity through, for a reader that names the field holding one.

    >>> parse_json('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    >>> parse_json('{"a": NaN}')
    Traceback (most recent call last):
    ...
    wm_kernel.utils.safe_files.BadJSONError: NaN is not a JSON number (numbers must be finite)
    """
    if _too_deep(text):
        raise BadJSONError(_DEEP)
    try:
        if not finite:
            return json.loads(text)
        return json.loads(text, parse_constant=_constant, parse_float=_finite)
    except BadJSONError:
        raise
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise BadJSONError(f"malformed JSON: {exc.msg} at {at}") from None
    except RecursionError:
        raise BadJSONError(_DEEP) from None
    except ValueError as exc:  # an integer of too many digits
        raise BadJSONError(f"malformed JSON: {str(exc).split(';')[0]}") from None


def open_regular(path: str | os.PathLike[str], source: str | None = None, *, errors: str = "strict") -> TextIO:
    """``path`` opened to read text (UTF-8), if it is a regular file; UnreadableFileError otherwise.
    Opened without waiting (a FIFO) and checked through its descriptor, so it cannot be swapped
    between the check and the read."""
    where = source or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise UnreadableFileError(f"{where}: not a regular file (a folder)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableFileError(f"{where}: a symbolic link that loops (or too many links)") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnreadableFileError(f"{where}: not a regular file (a device or a FIFO)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, encoding="utf-8", errors=errors, newline="\n")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], source: str | None = None, *, max_bytes: int = MAX_FILE_CHARS) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (a FIFO or a device is refused at once)."""
    where = source or str(path)
    with open_regular(path, where) as handle:
        # the size first: read(n) of a buffered file allocates n bytes before it reads one
        if os.fstat(handle.fileno()).st_size > max_bytes:
            raise UnreadableFileError(f"{where}: larger than {max_bytes:,} bytes")
        data = handle.buffer.read()
    if len(data) > max_bytes:  # grown since the check
        raise UnreadableFileError(f"{where}: larger than {max_bytes:,} bytes")
    return data


def read_text(
    path: str | os.PathLike[str], source: str | None = None, *, max_chars: int = MAX_FILE_CHARS, errors: str = "strict"
) -> str:
    """The whole text of a regular file of at most ``max_chars`` characters (a leading byte order
    mark left out)."""
    where = source or str(path)
    with open_regular(path, where, errors=errors) as handle:
        try:
            # a regular file's text is at most as many characters as it has bytes: a small file is
            # read whole; read(n) alone would allocate n characters before it reads one
            size = os.fstat(handle.fileno()).st_size
            text = handle.read() if size <= max_chars else handle.read(max_chars + 1)
        except UnicodeDecodeError as exc:
            raise UnreadableFileError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    if len(text) > max_chars:
        raise UnreadableFileError(f"{where}: larger than {max_chars:,} characters")
    return text.removeprefix(BOM)


def lines(handle: TextIO, source: str, *, max_chars: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The lines of ``handle`` split at ``\\n`` only (never at U+2028, U+2029 or U+0085, which
    ``str.splitlines`` would split at), each read at most ``max_chars`` characters at a time; a
    byte order mark before the first line is not part of it."""
    number = 0
    while True:
        try:
            line = handle.readline(max_chars + 1)
        except UnicodeDecodeError as exc:
            raise UnreadableFileError(
                f"{source} line {number + 1}: not UTF-8 text (byte {exc.start} of the block read)"
            ) from None
        if not line:
            return
        number += 1
        if number == 1:
            line = line.removeprefix(BOM)
        if len(line) > max_chars and not line.endswith("\n"):
            raise UnreadableFileError(f"{source} line {number}: longer than {max_chars:,} characters")
        yield line


def loads_json(text: str, source: str) -> Any:
    """:func:`parse_json` of ``text`` (a leading byte order mark skipped), with any failure one
    UnreadableFileError naming ``source``."""
    try:
        return parse_json(text.removeprefix(BOM))
    except BadJSONError as exc:
        if str(exc) == _DEEP:
            raise UnreadableFileError(
                f"{source}: JSON nested too deeply to read (at most {MAX_JSON_DEPTH:,} levels)"
            ) from None
        reason = str(exc).removeprefix("malformed JSON: ")
        raise UnreadableFileError(f"{source}: not JSON ({reason})") from None


def _too_deep(text: str) -> bool:
    """Whether the brackets outside strings nest deeper than :data:`MAX_JSON_DEPTH` (a cheap scan
    only when the text holds that many opening brackets at all)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def load_json(path: str | os.PathLike[str], source: str | None = None) -> Any:
    """The JSON value of a regular file (see :func:`read_text` and :func:`loads_json`)."""
    where = source or str(path)
    return loads_json(read_text(path, where), where)


def atomic_write_text(path: str | os.PathLike[str], write: Callable[[TextIO], None]) -> None:
    """Call ``write(file)`` on a temporary file beside ``path``, flush it to disk, then rename it
    over ``path``: a reader (or a process killed at any moment) sees the old file or the new one,
    never a part. If anything raises before the rename, ``path`` is as it was."""
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
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
