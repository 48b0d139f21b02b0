"""The perturbations of the stability checker: changes that must not move a cached byte.

Each check has a name (the one ``skip=`` / ``--skip`` take) and a one-line description:

``recompose``
    The same state composed twice, right after each compose of the replay. A section that differs
    holds something fresh on every compose (a new id, a counter, a random pick).
``hash_seed``
    Two fresh processes with different ``PYTHONHASHSEED``: sets (and dicts built from them) of
    strings iterate in another order in each process, as in two workers of one deployment.
``insertion_order``
    The dicts and sets a trinket receives (the update context and every feed argument, at any depth)
    arrive in another order: dicts with their keys reversed, sets iterating in reverse.
``clock_jitter``
    The whole timeline moved by as many seconds as keeps every compose within its minute.
``tz_locale``
    A fresh process with another ``TZ`` (an offset of +12:45 or +13:45) and another locale, adopted
    with ``setlocale(LC_ALL, "")``.
``tool_order``
    The session's tool list reversed. Sessions declare no tools today, so the check says "not
    applicable" until they do.
"""

from __future__ import annotations

import dataclasses
import functools
import locale
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wm_kernel.experiments.scenario import Scenario

CHECKS: dict[str, str] = {
    "recompose": "the same state composed twice",
    "hash_seed": "another PYTHONHASHSEED, in a fresh process",
    "insertion_order": "dicts and sets the trinkets receive in another order",
    "clock_jitter": "the clock moved a few seconds within the same minute",
    "tz_locale": "another TZ and locale in the environment, in a fresh process",
    "tool_order": "the tool list reordered",
}

#: The ``TZ`` the ``tz_locale`` check sets: Chatham Islands, UTC+12:45 (+13:45 in southern summer),
#: an offset no machine of a deployment is likely to share with its neighbours by accident.
DEFAULT_TZ = "Pacific/Chatham"
#: The ``TZ`` and locale the fresh-process baseline runs with.
BASELINE_TZ = "UTC"
BASELINE_LOCALE = "C.UTF-8"


# -- insertion order --------------------------------------------------------------------------------


class _ReversedSet(set[Any]):
    """A set that iterates in the reverse of its usual order (everything else is a set's)."""

    def __iter__(self) -> Iterator[Any]:
        items: list[Any] = list(super().__iter__())
        return iter(items[::-1])


class _ReversedFrozenSet(frozenset[Any]):
    """A frozenset that iterates in the reverse of its usual order."""

    def __iter__(self) -> Iterator[Any]:
        items: list[Any] = list(super().__iter__())
        return iter(items[::-1])


def reordered(value: Any, depth: int = 0) -> Any:
    """``value`` with every dict's keys in reverse insertion order and every set iterating in
    reverse, at any depth of dicts, lists, tuples and sets (other objects as they are).

    >>> reordered({"a": 1, "b": [{"c": 2, "d": 3}]})
    {'b': [{'d': 3, 'c': 2}], 'a': 1}
    >>> list(reordered(frozenset({1, 2, 3})))
    [3, 2, 1]
    """
    if depth > 100:
        return value
    if type(value) is dict:
        return {key: reordered(item, depth + 1) for key, item in reversed(value.items())}
    if type(value) is list:
        return [reordered(item, depth + 1) for item in value]
    if type(value) is tuple:
        return tuple(reordered(item, depth + 1) for item in value)
    if type(value) is set:
        return _ReversedSet(reordered(item, depth + 1) for item in value)
    if type(value) is frozenset:
        return _ReversedFrozenSet(reordered(item, depth + 1) for item in value)
    return value


def reorder_inputs(trinket: Any) -> None:
    """Make ``trinket`` receive its update contexts and feed arguments :func:`reordered` (its
    ``generate_content`` and ``@feed`` methods are wrapped on this instance only)."""
    from trinkets.base import feed_methods

    generate = trinket.generate_content

    def generate_content(context: dict[str, Any]) -> str:
        return generate(reordered(context))  # type: ignore[no-any-return]

    trinket.generate_content = generate_content
    for name in feed_methods(trinket):
        method = getattr(trinket, name)

        def fed(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            return _method(*reordered(list(args)), **reordered(kwargs))

        functools.update_wrapper(fed, method)
        setattr(trinket, name, fed)


# -- the clock --------------------------------------------------------------------------------------


def minute_preserving_shift(instants: list[datetime], limit: int = 30) -> int:
    """Whole seconds (at most ``limit``, either way) to move every instant by while each stays within
    its minute: forward when there is more room forward, else back. 0 when there is no room.

    >>> from datetime import timezone
    >>> t = datetime(2026, 11, 30, 9, 0, 5, tzinfo=timezone.utc)
    >>> minute_preserving_shift([t, t.replace(second=20)])
    30
    >>> minute_preserving_shift([t.replace(second=50), t.replace(second=20)])
    -20
    """
    if not instants:
        return 0
    forward = min(59 - t.second for t in instants)
    back = min(t.second for t in instants)
    return min(forward, limit) if forward >= back else -min(back, limit)


def shifted_scenario(scenario: Scenario, seconds: int) -> Scenario:
    """``scenario`` with its start and every clock ``set`` step moved by ``seconds``."""
    from wm_kernel.experiments.scenario import Scenario
    from wm_kernel.experiments.steps import ClockStep

    delta = timedelta(seconds=seconds)
    steps = [
        ClockStep(set=(datetime.fromisoformat(step.set) + delta).isoformat())
        if isinstance(step, ClockStep) and step.set is not None
        else step
        for step in scenario.steps
    ]
    start = (datetime.fromisoformat(scenario.clock) + delta).isoformat()
    return Scenario(
        base_prompt=scenario.base_prompt,
        profile=dict(scenario.profile),
        clock=start,
        user_id=scenario.user_id,
        trinkets=tuple(scenario.trinkets),
        continuum_id=scenario.continuum_id,
        auto_compose=scenario.auto_compose,
        layout=scenario.layout,
        steps=steps,
    )


def with_continuum(scenario: Scenario, continuum_id: str) -> Scenario:
    """``scenario`` with ``continuum_id`` set (a copy; the steps are read into memory)."""
    return dataclasses.replace(scenario, continuum_id=continuum_id, steps=list(scenario.steps), source="", _lines=[])


# -- TZ and locale ----------------------------------------------------------------------------------


@functools.cache
def installed_locales() -> tuple[str, ...]:
    """The locales ``locale -a`` lists (empty when the command is missing)."""
    try:
        out = subprocess.run(["locale", "-a"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.strip() for line in out.splitlines() if line.strip())


def other_locale() -> str:
    """A locale for the ``tz_locale`` check: one whose dates and numbers differ from C's if one is
    installed (German, French, Turkish...), else ``POSIX`` (only C-family locales installed)."""
    found = installed_locales()
    for wanted in ("de_DE", "fr_FR", "tr_TR", "ja_JP", "en_GB", "en_US"):
        for name in found:
            if name.startswith(wanted) and name.lower().endswith(("utf-8", "utf8")):
                return name
    for name in found:
        if name not in ("C", "POSIX") and not name.lower().startswith("c."):
            return name
    return "POSIX"


def locale_usable(name: str) -> bool:
    """Whether this machine can switch to locale ``name`` (it is restored at once)."""
    saved = locale.setlocale(locale.LC_TIME)
    try:
        locale.setlocale(locale.LC_TIME, name)
    except locale.Error:
        return False
    finally:
        locale.setlocale(locale.LC_TIME, saved)
    return True


# -- tools ------------------------------------------------------------------------------------------


def session_tools(session: object) -> list[Any] | None:
    """The tool list a session declares (a ``tools`` attribute holding a list), or None when it
    declares none: Sessions have no tools today, and ``tool_order`` is then not applicable."""
    tools = getattr(session, "tools", None)
    return tools if isinstance(tools, list) and tools else None


def reverse_tools(session: object) -> None:
    """Give ``session`` its tool list in reverse order (an instrument, attached before any step)."""
    tools = session_tools(session)
    if tools is not None:
        setattr(session, "tools", list(reversed(tools)))  # noqa: B010 (any session with a tools list)
