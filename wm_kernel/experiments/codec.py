"""The value codec of scenario files: feed arguments as JSON, with ``$`` tags for what JSON lacks.

Values JSON cannot hold are written as one-key objects with a ``$`` tag:
``{"$datetime": "2026-11-30T09:00:00+00:00"}``, ``{"$date": "2026-11-30"}``,
``{"$timedelta": 90.0}`` (seconds) and ``{"$tuple": [...]}``; an ordinary one-key object whose key
starts with ``$`` is wrapped as ``{"$dict": {...}}``. Anything else (sets, custom objects, NaN) cannot
be recorded: :func:`encode_value` raises TypeError.
"""
from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from typing import Any, Mapping

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
