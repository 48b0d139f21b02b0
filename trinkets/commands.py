"""Commands a trinket declares for ``%trinket NAME COMMAND [ARGS]``, next to its ``@feed`` methods.

A trinket knows best what it can be told, so it says so in its class body: :func:`command` marks a
method as the handler of a named command, with its arguments declared by :func:`arg` (argparse's
``add_argument`` keywords: ``type=``, ``choices=``, ``default=``, ``action=``...). The parsed values
are the method's keyword arguments. ``EventAwareTrinket.commands()`` collects them along the class's
bases (the base class declares ``enable``, ``disable``, ``show``, ``refresh`` and ``style``), and
the ``%trinket`` magic only routes to them: argparse validates, the method runs.

This module uses argparse only: the core stays free of IPython. A command line it cannot take is a
:class:`CommandError` (a ValueError), raised before the method runs, so nothing changes.

Examples
--------
>>> from trinkets.base import EventAwareTrinket, arg, command, feed, non_negative_int
>>> class Counter(EventAwareTrinket):
...     variable_name = "counter"
...     count = 0
...     @command("bump", arg("by", type=non_negative_int, help="How much."), help="Count up.")
...     @feed
...     def bump(self, by: int) -> int:
...         self.count += by
...         return self.count
...     def generate_content(self, context):
...         return str(self.count)
>>> list(Counter.commands())
['enable', 'disable', 'show', 'cap', 'refresh', 'style', 'bump']
>>> Counter.commands()["bump"].parse(Counter, ["3"])
{'by': 3}
>>> Counter.commands()["bump"].parse(Counter, ["-3"])
Traceback (most recent call last):
...
trinkets.commands.CommandError: argument by: must be a non-negative integer, got '-3'
"""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NoReturn, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: Fixed choices, or a function of the trinket class giving them (``lambda cls: cls.styles``).
Choices = Sequence[str] | Callable[[type], Sequence[str]]
#: Tab-completion candidates: called with the trinket and the positional values typed before.
Completer = Callable[[Any, Sequence[str]], Iterable[str]]

# actions that take no value on the command line (so the word after them is not theirs)
_VALUELESS = frozenset({"store_true", "store_false", "store_const", "append_const", "count"})


class CommandError(ValueError):
    """A command line a command cannot take: an unknown option, a bad or missing value."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting the process."""

    def error(self, message: str) -> NoReturn:
        raise CommandError(message)


# -- argument types (argparse ``type=``): a message that says what was expected ------------------


def non_negative_int(text: str) -> int:
    """``text`` as an int of 0 or more (``--ttl 0``); ``"1.5"``, ``"-1"``, ``""``: refused."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


_RELATIVE = re.compile(r"^\+(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def instant_or_offset(text: str) -> datetime | timedelta:
    """An ISO 8601 instant with an offset, or ``+N`` with a unit (m, h, d, w): a timedelta the
    handler adds to its clock's now (see :func:`at`)."""
    from wm_kernel.core.clock import parse_instant

    match = _RELATIVE.match(text.strip())
    if match:
        try:
            return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
        except OverflowError:
            raise argparse.ArgumentTypeError(f"{text.strip()} is too far ahead (past the year 9999)") from None
    try:
        return parse_instant(text)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or give +N with m, h, d or w, e.g. +2h)") from None


def at(now: datetime, value: datetime | timedelta, what: str) -> datetime:
    """What :func:`instant_or_offset` read for the option ``what``, as an instant: an offset counts
    from ``now``. CommandError naming ``what`` if that passes the year 9999."""
    if not isinstance(value, timedelta):
        return value
    try:
        return now + value
    except OverflowError:
        raise CommandError(f"{what}: {now.isoformat()} plus {value.days} days passes the year 9999") from None


# -- declarations --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Arg:
    """One argument of a command (see :func:`arg`)."""

    flags: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    choices: Choices | None = None
    words: bool = False
    complete: Completer | None = None

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def dest(self) -> str:
        if "dest" in self.options:
            return str(self.options["dest"])
        long = next((f for f in self.flags if f.startswith("--")), self.flags[0])
        return long.lstrip("-").replace("-", "_")

    @property
    def takes_value(self) -> bool:
        return self.options.get("action") not in _VALUELESS

    def choices_for(self, owner: type) -> Sequence[str] | None:
        return self.choices(owner) if callable(self.choices) else self.choices

    def candidates(self, trinket: object, typed: Sequence[str]) -> list[str]:
        """What tab completion offers for this argument."""
        if self.complete is not None:
            return [str(c) for c in self.complete(trinket, typed)]
        return list(self.choices_for(type(trinket)) or ())


def arg(
    *flags: str, choices: Choices | None = None, words: bool = False, complete: Completer | None = None, **options: Any
) -> Arg:
    """Declare one argument of a :func:`command`, as ``argparse.add_argument`` would take it.

    Parameters
    ----------
    flags:
        ``"name"`` for a positional argument, ``"--name"`` (and short forms) for an option.
    choices:
        The allowed values, or a function of the trinket class returning them (checked by argparse,
        and offered by tab completion).
    words:
        Take every remaining word, joined by single spaces into one string (unquoted text:
        ``%trinket peanutgallery add concern Slow down``). A positional one without a ``default`` is
        required text: none, or only blanks, is refused as ``argument NAME: must not be empty``.
    complete:
        ``complete(trinket, typed)``: tab-completion candidates, given the positional values typed
        before this one (the document labels of a trinket, say).
    options:
        Any other ``add_argument`` keyword: ``type``, ``default``, ``required``, ``action``,
        ``dest``, ``help``, ``metavar``...
    """
    if not flags or not all(isinstance(f, str) and f for f in flags):
        raise TypeError("arg() needs at least one non-empty name or flag")
    return Arg(tuple(flags), dict(options), choices, words, complete)


@dataclass(frozen=True, eq=False)
class Command:
    """One ``%trinket NAME COMMAND``: the method it calls with the parsed arguments (and
    ``fixed``), its help line and its arguments."""

    name: str
    help: str
    method: str
    args: tuple[Arg, ...] = ()
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def parser(self, owner: type) -> argparse.ArgumentParser:
        """The argparse parser of this command on trinket class ``owner`` (built once per class:
        choices may come from the class)."""
        return _parser(self, owner)

    def parse(self, owner: type, words: Sequence[str]) -> dict[str, Any]:
        """The keyword arguments of the method for the command line ``words``; CommandError if
        argparse refuses them."""
        values = vars(self.parser(owner).parse_args(list(words)))
        for argument in self.args:
            if argument.words:
                values[argument.dest] = " ".join(values[argument.dest] or ())
                if argument.positional and "default" not in argument.options and not values[argument.dest].strip():
                    # said as argparse says the other mistakes, naming the argument
                    raise CommandError(f"argument {argument.dest}: must not be empty")
        return {**values, **self.fixed}

    def run(self, trinket: object, words: Sequence[str]) -> Any:
        """Parse ``words``, then call the trinket's method; returns what it returns."""
        kwargs = self.parse(type(trinket), words)
        return getattr(trinket, self.method)(**kwargs)

    def completions(self, trinket: object, words: Sequence[str]) -> list[str]:
        """Tab-completion candidates for the last of ``words`` (the words after the command's
        name; the last one is being typed, possibly empty)."""
        *done, current = words or [""]
        options = {flag: a for a in self.args if not a.positional for flag in a.flags}
        if done and done[-1] in options and options[done[-1]].takes_value:
            return options[done[-1]].candidates(trinket, ())
        if current.startswith("-"):
            return list(options)
        typed: list[str] = []
        skip = False
        for word in done:
            if skip:
                skip = False
            elif word in options:
                skip = options[word].takes_value
            elif not word.startswith("-"):
                typed.append(word)
        positionals = [a for a in self.args if a.positional]
        if len(typed) < len(positionals):
            return positionals[len(typed)].candidates(trinket, typed)
        return []


@functools.lru_cache(maxsize=512)
def _parser(command: Command, owner: type) -> argparse.ArgumentParser:
    # built on first use: most commands are never run in a session
    parser = _Parser(prog=f"%trinket {owner.__name__} {command.name}", description=command.help, add_help=False)
    for argument in command.args:
        options = dict(argument.options)
        choices = argument.choices_for(owner)
        if choices is not None:
            options["choices"] = tuple(choices)
        if argument.words:
            options.setdefault("nargs", "*")
        parser.add_argument(*argument.flags, **options)
    return parser


def command(name: str, *args: Arg, help: str, fixed: Mapping[str, Any] | None = None) -> Callable[[F], F]:
    """Declare the decorated method as the handler of ``%trinket NAME <name>``.

    The parsed arguments (see :func:`arg`; their ``dest`` names are the method's parameters) and
    ``fixed`` are passed as keyword arguments. Put it on a ``@feed`` method (stacked above
    ``@feed``) when the command maps onto it, or on a small method that turns the command line into
    a feed call. Several commands may share a method (``enable`` and ``disable``, with ``fixed``);
    they are listed top to bottom. A subclass's command of the same name replaces its base's.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a command name is one word, got {name!r}")

    def declare(method: F) -> F:
        declared = Command(name, help, method.__name__, tuple(args), dict(fixed or {}))
        # decorators apply bottom-up: put this one first so the listing reads as the source does
        method.__wm_commands__ = (declared, *getattr(method, "__wm_commands__", ()))  # type: ignore[attr-defined]
        return method

    return declare


def commands_of(cls: type) -> dict[str, Command]:
    """The commands declared on ``cls`` and its bases, base classes' first, by name."""
    found: dict[str, Command] = {}
    for klass in reversed(cls.__mro__):
        for value in vars(klass).values():
            for declared in getattr(value, "__wm_commands__", ()):
                found[declared.name] = declared
    return found
