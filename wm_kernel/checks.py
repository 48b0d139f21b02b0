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
"""
from __future__ import annotations


def check_str(value: object, what: str, *, empty_ok: bool = False) -> str:
    """``value`` if it is a str (non-blank unless ``empty_ok``)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise ValueError(f"{what} must not be empty")
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
