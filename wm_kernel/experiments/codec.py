"""The value codec of scenario files: feed arguments as JSON, with ``$`` tags for what JSON lacks.

Values JSON cannot hold are written as one-key objects with a ``$`` tag:
``{"$datetime": "2026-11-30T09:00:00+00:00"}``, ``{"$date": "2026-11-30"}``,
``{"$timedelta": 90.0}`` (seconds) and ``{"$tuple": [...]}``; an ordinary one-key object whose key
starts with ``$`` is wrapped as ``{"$dict": {...}}``. Anything else (sets, custom objects, NaN,
strings holding a lone surrogate, which UTF-8 cannot write) cannot be recorded: :func:`encode_value`
raises TypeError naming where in the value it is. Values nest at most :data:`MAX_DEPTH` levels (a
deeper one, or one that contains itself, is refused rather than exhausting Python's stack).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

_TAGS = ("$datetime", "$date", "$timedelta", "$tuple", "$dict")

#: How deep lists, objects and tags may nest in a feed argument.
MAX_DEPTH = 100


class _Unrecordable(TypeError):
    """Raised inside :func:`_encode`; each enclosing container adds its index or key on the way
    out, so the message can say where in the value the bad part is (cheap when nothing fails)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []

    def located(self, prefix: str = "") -> str:
        path = self.path[::-1]
        # a value nested a hundred levels (or containing itself) makes a long path: keep its ends
        where = (
            "".join(path) if len(path) <= 8 else (f"{''.join(path[:4])}...{''.join(path[-4:])} ({len(path)} levels in)")
        )
        if not where:
            return f"{prefix}: {self.reason}" if prefix else self.reason
        return f"{prefix or 'value'} at {where}: {self.reason}"


def encode_value(value: Any) -> Any:
    """A JSON-ready form of a feed argument (see the module docstring for the ``$`` tags).

    >>> encode_value({"due": datetime.fromisoformat("2026-11-30T10:00:00+00:00"), "tags": ("a",)})
    {'due': {'$datetime': '2026-11-30T10:00:00+00:00'}, 'tags': {'$tuple': ['a']}}
    >>> encode_value({1, 2})
    Traceback (most recent call last):
    ...
    TypeError: cannot record a value of type set (JSON values, datetime, date, timedelta and tuples can be recorded)
    >>> encode_value({"tags": ["ok", {3}]})
    Traceback (most recent call last):
    ...
    TypeError: value at ['tags'][1]: cannot record a value of type set (JSON values, datetime, date, timedelta and tuples can be recorded)
    """  # noqa: E501 - examples show their output line for line
    try:
        return _encode(value, 0)
    except _Unrecordable as exc:
        raise TypeError(exc.located()) from None


def encode_arguments(args: tuple[Any, ...] | list[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The JSON-ready forms of a call's arguments; TypeError naming the argument that cannot be
    recorded (``argument 2``, 1-based, or ``argument 'due'``) and where inside it.

    >>> encode_arguments(("concern", "half \\ud83d emoji"), {})
    Traceback (most recent call last):
    ...
    TypeError: argument 2: cannot record a string holding the lone surrogate U+D83D at index 5 (UTF-8 cannot write it; was the text cut mid-character?)
    >>> encode_arguments((), {"due": {"at": float("nan")}})
    Traceback (most recent call last):
    ...
    TypeError: argument 'due' at ['at']: cannot record the non-finite number nan
    """  # noqa: E501 - examples show their output line for line
    encoded_args = []
    for number, value in enumerate(args, 1):
        try:
            encoded_args.append(_encode(value, 1))
        except _Unrecordable as exc:
            raise TypeError(exc.located(f"argument {number}")) from None
    encoded_kwargs: dict[str, Any] = {}
    for name, value in kwargs.items():
        try:
            encoded_kwargs[_check_text(name, "a keyword")] = _encode(value, 1)
        except _Unrecordable as exc:
            raise TypeError(exc.located(f"argument {name!r}")) from None
    return encoded_args, encoded_kwargs


def _check_text(text: str, what: str = "a string") -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Unrecordable(
            f"cannot record {what} holding the lone surrogate "
            f"U+{ord(text[exc.start]):04X} at index {exc.start} (UTF-8 cannot "
            f"write it; was the text cut mid-character?)"
        ) from None
    return text


def _encode(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return _check_text(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Unrecordable(f"cannot record the non-finite number {value!r}")
        return value
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, timedelta):
        return {"$timedelta": value.total_seconds()}
    if isinstance(value, (tuple, list, Mapping)) and depth >= MAX_DEPTH:
        raise _Unrecordable(
            f"cannot record a value nested more than {MAX_DEPTH} levels deep (or one that contains itself)"
        )
    if isinstance(value, (tuple, list)):
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_encode(item, depth + 1))
            except _Unrecordable as exc:
                exc.path.append(f"[{index}]")
                raise
        return {"$tuple": items} if isinstance(value, tuple) else items
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unrecordable(
                    f"cannot record a mapping with a {type(key).__name__} key ({key!r}); keys must be strings"
                )
            _check_text(key, "a key")
            try:
                out[key] = _encode(item, depth + 1)
            except _Unrecordable as exc:
                exc.path.append(f"[{key!r}]")
                raise
        if len(out) == 1 and next(iter(out)).startswith("$"):
            return {"$dict": out}
        return out
    raise _Unrecordable(
        f"cannot record a value of type {type(value).__name__} (JSON values, "
        f"datetime, date, timedelta and tuples can be recorded)"
    )


def decode_value(value: Any) -> Any:
    """The Python value an :func:`encode_value` form stands for; ValueError for a bad tag, a value
    JSON cannot hold, or nesting deeper than :data:`MAX_DEPTH`.

    >>> decode_value({"$datetime": "2026-11-30T10:00:00+00:00"}).hour
    10
    >>> decode_value({"$tuple": [1, {"$timedelta": 60}]})
    (1, datetime.timedelta(seconds=60))
    >>> decode_value([[[1]]] * 2)
    [[[1]], [[1]]]
    """
    return _decode(value, 0)


def _decode(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(
                    f"a string holds the lone surrogate U+{ord(value[exc.start]):04X} (UTF-8 cannot write it)"
                ) from None
        return value
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"the non-finite number {value!r} is not a JSON value")
        return value
    if not isinstance(value, (list, dict)):
        raise ValueError(f"a {type(value).__name__} is not a JSON value (encode feed arguments with encode_value)")
    if depth >= MAX_DEPTH:
        raise ValueError(f"values may nest at most {MAX_DEPTH} levels deep")
    if isinstance(value, list):
        return [_decode(v, depth + 1) for v in value]
    if len(value) == 1:
        tag, inner = next(iter(value.items()))
        if isinstance(tag, str) and tag.startswith("$"):
            return _decode_tagged(tag, inner, depth)
    return _decode_object(value, depth)


def _decode_object(value: dict[Any, Any], depth: int) -> dict[str, Any]:
    out = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ValueError(f"an object key must be a string, got {type(key).__name__} {key!r}")
        out[_decode(key, depth)] = _decode(item, depth + 1)
    return out


def _decode_tagged(tag: str, inner: Any, depth: int) -> Any:
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
        try:
            return timedelta(seconds=inner)
        except OverflowError:
            raise ValueError(
                f"$timedelta {inner!r} is out of range (at most {timedelta.max.total_seconds():.0f} seconds)"
            ) from None
    if tag == "$tuple":
        if not isinstance(inner, list):
            raise ValueError("a $tuple value must be a list")
        return tuple(_decode(v, depth + 1) for v in inner)
    if tag == "$dict":
        if not isinstance(inner, dict):
            raise ValueError("a $dict value must be an object")
        return _decode_object(inner, depth)
    raise ValueError(f"unknown tag {tag!r} (tags: {', '.join(_TAGS)})")
