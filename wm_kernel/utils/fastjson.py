"""JSON read fast and exactly as the standard library reads it.

orjson (a dependency: a well-kept Rust parser, several times faster than ``json`` on agent logs) parses
a record first; whatever it refuses (``NaN``, lone surrogates, nesting past its limit, anything
malformed) is parsed again by ``json.loads``, which then gives its own value or its own error. orjson
reads an integer past 64 bits as a float: a record holding a run of 19 digits or more goes to
``json.loads`` directly (:func:`long_digits` finds one at several hundred MB/s, so a file is checked
once and its records only when it has one). So the result, and every error message, is exactly what ``json.loads`` alone
gives. Without orjson installed, ``json.loads`` alone.

Examples
--------
>>> loads_exact(b'{"a": [1, 2.5, "x"]}', '{"a": [1, 2.5, "x"]}')
{'a': [1, 2.5, 'x']}
>>> loads_exact(b'{"big": 123456789012345678901234567890}', '{"big": 123456789012345678901234567890}')
{'big': 123456789012345678901234567890}
>>> loads_exact(b'[NaN]', '[NaN]')
[nan]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

orjson: ModuleType | None
try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the standard library still reads
    orjson = None

#: Digits as 1, every other byte as 0: a run of 19 ones is a digit run long enough to be an integer
#: orjson would read as a float (2**63 has 19 digits).
_DIGITS = bytes(1 if 48 <= i <= 57 else 0 for i in range(256))
_RUN = b"\x01" * 19


def long_digits(data: bytes) -> bool:
    """Whether ``data`` holds a run of 19 digits or more (in a number or a string alike)."""
    return _RUN in data.translate(_DIGITS)


def loads_exact(
    data: bytes, text: str, *, long: bool | None = None, fallback: Callable[[str], Any] = json.loads
) -> Any:
    """The value of one JSON record given as its UTF-8 ``data`` and as ``text`` (the same record
    decoded): orjson's reading of ``data``, else ``fallback(text)`` (``json.loads``: its value or its
    error; the kit's strict ``parse_json`` where a log is read). ``long`` False says the record holds
    no long digit run (its file was checked whole). orjson refuses what strict JSON refuses (NaN,
    Infinity, nesting past its limit), so those reach ``fallback``, which says why in one line."""
    if long is None:
        long = long_digits(data)
    if orjson is not None and not long:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return fallback(text)


#: What :func:`loads_fast` answers for a record orjson does not read.
UNREAD: Any = object()


def loads_fast(data: bytes) -> Any:
    """orjson's value of one JSON record given as UTF-8 ``data``, or :data:`UNREAD` where orjson
    refuses it (or is not installed): then the caller decodes the record and parses it with the
    strict reader, as :func:`loads_exact` does. orjson checks the UTF-8 itself, so a record it reads
    needs no decoding first. The caller checks the record holds no long digit run (:func:`long_digits`)."""
    if orjson is None:
        return UNREAD
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return UNREAD


__all__ = ["loads_exact", "loads_fast", "long_digits", "UNREAD"]
