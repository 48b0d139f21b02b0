"""The only module that reaches into traitlets' private parts: two shortcuts on the trinkets' hot path.

Each does what traitlets' public API does, for less, and each is kept because ``bench/replay.py``
shows it is worth more than 10% (docs/performance.md has the figures). They rely on traitlets
internals that are stable across the range pinned in pyproject.toml (``TESTED``); a test runs them
against the installed traitlets, whatever its version. A subclass's validators (``@validate``) and
observers (``@observe``, ``observe()``) always run.

- :func:`set_traits` sets several traits and then notifies of each change in order, as
  ``hold_trait_notifications`` does, without its context manager, notification cache and second
  round of ``set_trait``. Each value passes its trait type's ``validate``; a trait with a
  cross-validator (``@validate``) takes the public path.
- :class:`QuickNotify` delivers a notification to the observers in traitlets' order without
  looking, on every change, for a deprecated ``_<name>_changed`` method (a lookup that fails by
  raising inside); a class that has one is served by traitlets itself.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from traitlets import All, Bunch, HasTraits, TraitType
from traitlets.traitlets import EventHandler, ObserveHandler, _CallbackWrapper

__all__ = ["TESTED", "QuickNotify", "set_traits"]

#: The traitlets versions these shortcuts were written and tested against (pyproject pins the same).
TESTED = ">=5.9,<5.17"


@functools.cache
def _checker(cls: type[HasTraits], name: str) -> tuple[Callable[[Any, Any], Any] | None, bool, bool]:
    """The trait type's ``validate`` (None if it has none), whether it allows None, and whether
    ``cls`` has a deprecated ``_<name>_validate`` method (a cross-validator, as ``@validate`` is)."""
    trait = getattr(cls, name)
    if not isinstance(trait, TraitType):
        raise AttributeError(f"{cls.__name__}.{name} is not a trait")
    return getattr(trait, "validate", None), trait.allow_none, hasattr(cls, f"_{name}_validate")


def set_traits(obj: HasTraits, values: Mapping[str, Any]) -> None:
    """Set every trait of ``values`` (in order), then notify of each change (in the same order),
    as ``with obj.hold_trait_notifications(): ...`` would: an observer of one sees the new value
    of all. Each value passes its trait type's ``validate``; unchanged ones stay quiet. When one
    of the traits has a cross-validator, all take traitlets' own path."""
    cls, validators = type(obj), obj._trait_validators
    if any(name in validators or _checker(cls, name)[2] for name in values):
        with obj.hold_trait_notifications():
            for name, value in values.items():
                setattr(obj, name, value)
        return
    store = obj._trait_values
    changes = []
    for name, value in values.items():
        check, allow_none, _ = _checker(cls, name)
        new = value if check is None or (value is None and allow_none) else check(obj, value)
        old = store[name] if name in store else getattr(obj, name)
        store[name] = new
        if old != new:
            changes.append(Bunch(name=name, old=old, new=new, owner=obj, type="change"))
    for change in changes:
        obj.notify_change(change)


@functools.cache
def _has_legacy_method(cls: type, name: str) -> bool:
    """Whether ``cls`` has a deprecated ``_<name>_changed`` method, which traitlets calls on a
    change of trait ``name`` besides the observers (an ``@observe`` handler of that name is not
    one)."""
    magic = getattr(cls, f"_{name}_changed", None)
    return magic is not None and not isinstance(magic, ObserveHandler)


class QuickNotify(HasTraits):
    """A HasTraits whose notifications reach the observers of the name, then those of every name,
    in traitlets' order, without traitlets' lookup of a deprecated ``_<name>_changed`` method on
    every change (asked once per class and name here)."""

    def _notify_observers(self, event: Bunch) -> None:
        if not isinstance(event, Bunch):
            event = Bunch(event)
        name, kind = event["name"], event["type"]
        if kind == "change" and _has_legacy_method(type(self), name):
            super()._notify_observers(event)
            return
        notifiers = self._trait_notifiers
        callbacks: list[Any] = []
        for key in (name, All):
            found = notifiers.get(key)
            if found:
                callbacks += found.get(kind, ())
                callbacks += found.get(All, ())
        for callback in callbacks:
            if isinstance(callback, _CallbackWrapper):
                callback = callback.__call__
            elif isinstance(callback, EventHandler) and callback.name is not None:
                callback = getattr(self, callback.name)
            callback(event)
