"""Argument checks shared by the public API: one wording for every "wrong type" and "empty" error.

Each check returns the value it accepted, so a caller can check and bind in one line, and raises a
one-line TypeError (wrong type) or ValueError (wrong value) that names the argument.

Examples
--------
>>> check_str("Soil", "section header")
'Soil'
>>> check_str("  ", "section header")
Traceback (most recent call last):
...
ValueError: section header must not be empty
>>> check_int(True, "number of turns", minimum=1)
Traceback (most recent call last):
...
TypeError: number of turns must be an int, got bool
>>> check_str("cut emoji \\ud83d", "text")
Traceback (most recent call last):
...
ValueError: text contains a lone surrogate U+D83D at index 10 (half of a character, e.g. an emoji cut in two); it cannot be stored
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

import re

# a UTF-16 half (U+D800..U+DFFF) on its own: Python strings may hold one (text cut by a byte count,
# a bad decode with "surrogateescape"), but UTF-8, JSON files and SQLite cannot store it
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def check_str(value: object, what: str, *, empty_ok: bool = False) -> str:
    """``value`` if it is a str (non-blank unless ``empty_ok``)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise ValueError(f"{what} must not be empty")
    check_unicode(value, what)
    return value


def check_unicode(value: str, what: str) -> str:
    """``value`` if it holds no lone surrogate, which no store can keep; ValueError naming the first
    one and where it is (the usual cause: text cut in the middle of an emoji's UTF-16 pair)."""
    if value.isascii():  # a flag of the string: no scan
        return value
    found = _LONE_SURROGATE.search(value)
    if found is not None:
        raise ValueError(
            f"{what} contains a lone surrogate U+{ord(found.group()):04X} at index "
            f"{found.start()} (half of a character, e.g. an emoji cut in two); it "
            f"cannot be stored"
        )
    return value


def check_bool(value: object, what: str) -> bool:
    """``value`` if it is a bool (1 and "yes" are refused: they are usually mistakes)."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, got {type(value).__name__}")
    return value


def check_int(value: object, what: str, *, minimum: int, expected: str = "an int") -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum``; ``expected`` words the type
    in the TypeError (e.g. "an int or None" where None is also accepted)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be {expected}, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{what} must be at least {minimum}, got {value}")
    return value


def check_number(value: object, what: str, *, minimum: float = 0.0, strict: bool = False, unit: str = "") -> float:
    """``value`` as a float if it is a finite real number (not a bool) of at least ``minimum``
    (above it when ``strict``): NaN, infinities and negatives are a ValueError saying so, any other
    type a TypeError. ``unit`` ends the wording ("seconds")."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number, got {type(value).__name__}")
    kind = (
        "a positive, finite number"
        if strict and minimum == 0
        else ("a non-negative, finite number" if minimum == 0 else f"a finite number of at least {minimum:g}")
    )
    words = f"{kind}{' of ' + unit if unit else ''}"
    if not math.isfinite(value) or value < minimum or (strict and value == minimum):
        raise ValueError(f"{what} must be {words}, got {value!r}")
    return float(value)


#: The longest timeout the kit takes (about 31 years): longer ones overflow the platform's timers
#: (``threading``'s waits, a socket's ``time_t``) as a raw OverflowError.
MAX_TIMEOUT = 1_000_000_000.0


def check_timeout(value: object, what: str = "timeout") -> float:
    """``value`` as a float of seconds if it is a positive, finite number of at most
    :data:`MAX_TIMEOUT`; ValueError (TypeError for another type) in one line otherwise.

    >>> check_timeout(1e308)
    Traceback (most recent call last):
    ...
    ValueError: timeout must be at most 1,000,000,000 seconds (about 31 years), got 1e+308
    """
    seconds = check_number(value, what, strict=True, unit="seconds")
    if seconds > MAX_TIMEOUT:
        raise ValueError(f"{what} must be at most {MAX_TIMEOUT:,.0f} seconds (about 31 years), got {seconds:g}")
    return seconds


def cli_error(command: str, message: str) -> str:
    """The one line every ``python -m wm_kernel COMMAND`` prints for an error, as argparse prints
    its own usage errors: ``python -m wm_kernel replay: error: <message>``."""
    return f"python -m wm_kernel {command}: error: {message}"
