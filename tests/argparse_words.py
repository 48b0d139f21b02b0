"""What this Python's argparse says, for tests of messages that carry its words.

argparse's wording moves between Python releases (3.12.8 and 3.13.1 stopped quoting the choices of
"invalid choice"); a test that compares a whole message asks the running argparse for its part
instead of writing one release's words down.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def invalid_choice(argument: str, value: str, choices: Sequence[str]) -> str:
    """argparse's message for ``value`` given to ``argument`` (``style``, ``--tea``), which takes
    one of ``choices``: ``"argument style: invalid choice: 'bright' (choose from ...)"``."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument(argument, choices=list(choices))
    try:
        parser.parse_args([argument, value] if argument.startswith("-") else [value])
    except argparse.ArgumentError as exc:
        return str(exc)
    raise AssertionError(f"argparse accepted {value!r} for {argument}")
