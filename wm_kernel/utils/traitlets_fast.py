"""The only module that reaches into traitlets' private parts: shortcuts on the trinkets' hot path.

Each does what traitlets' public API does, for less, and is kept for what the benchmarks show it
is worth (docs/performance.md has the figures). They rely on traitlets
internals that are stable across the range pinned in pyproject.toml (``TESTED``); a test runs them
against the installed traitlets, whatever its version. A subclass's validators (``@validate``) and
observers (``@observe``, ``observe()``) always run.

- :func:`set_traits` sets several traits and then notifies of each change in order, as
  ``hold_trait_notifications`` does, without its context manager, notification cache and second
  round of ``set_trait``. Each value passes its trait type's ``validate``; a trait with a
  cross-validator (``@validate``) takes the public path.
- :func:`trait_values` reads the values traits hold without their descriptors, where a compose
  reads the same few traits of every trinket (read only: a write there would skip validators and
  observers).
- :class:`QuickNotify` delivers a notification to the observers in traitlets' order without
  looking, on every change, for a deprecated ``_<name>_changed`` method (a lookup that fails by
  raising inside); a class that has one is served by traitlets itself.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from traitlets import All, Bunch, HasTraits, Instance, Int, TraitType, Unicode
from traitlets.traitlets import EventHandler, ObserveHandler, _CallbackWrapper

__all__ = ["TESTED", "QuickNotify", "set_traits", "trait_values"]

#: The traitlets versions these shortcuts were written and tested against (pyproject pins the same).
TESTED = ">=5.9,<5.17"


def trait_values(obj: Any) -> Mapping[str, Any]:
    """The values of ``obj``'s traits, by name, to read (never to write). A trait whose default is
    computed (``@default``) is here only once it was read or set: read it through its attribute
    when it is missing."""
    values: Mapping[str, Any] = obj._trait_values
    return values


# (class, trait names) -> each trait's (name, type's ``validate`` or None, allows None, the type a
# value needs no ``validate`` call for, or None), or None when a name has a deprecated
# ``_<name>_validate`` method (a cross-validator, as ``@validate`` is)
_Step = tuple[str, Callable[[Any, Any], Any] | None, bool, type | None]
_plans: dict[tuple[type, tuple[str, ...]], tuple[_Step, ...] | None] = {}
_MISSING: Any = object()


def _settled_type(trait: TraitType[Any, Any]) -> type | None:
    """The type whose values the trait's ``validate`` returns unchanged: str for a Unicode, int for
    an Int without bounds, the class of an Instance (exactly); None when unsure."""
    if type(trait) is Unicode:
        return str
    if type(trait) is Int and getattr(trait, "min", None) is None and getattr(trait, "max", None) is None:
        return int
    if type(trait) is Instance and isinstance(trait.klass, type):
        return trait.klass
    return None


def _plan(cls: type, names: tuple[str, ...]) -> tuple[_Step, ...] | None:
    steps = []
    for name in names:
        trait = getattr(cls, name)
        if not isinstance(trait, TraitType):
            raise AttributeError(f"{cls.__name__}.{name} is not a trait")
        if hasattr(cls, f"_{name}_validate"):
            return None
        steps.append((name, getattr(trait, "validate", None), trait.allow_none, _settled_type(trait)))
    return tuple(steps)


def _set_held(obj: HasTraits, names: tuple[str, ...], values: tuple[Any, ...]) -> None:
    """traitlets' own way: set inside ``hold_trait_notifications`` (cross-validation at its end)."""
    with obj.hold_trait_notifications():
        for name, value in zip(names, values, strict=True):
            setattr(obj, name, value)


def set_traits(obj: HasTraits, names: tuple[str, ...], *values: Any) -> None:
    """Set the traits ``names`` to ``values`` (one each, in order), then notify of each change (in the same
    order), as ``with obj.hold_trait_notifications(): ...`` would: an observer of one sees the new
    value of all. Each value passes its trait type's ``validate``; unchanged ones stay quiet. When
    one of the traits has a cross-validator, all take traitlets' own path."""
    key = (type(obj), names)
    plan = _plans.get(key, _MISSING)
    if plan is _MISSING:
        plan = _plans[key] = _plan(*key)
    validators = obj._trait_validators
    if plan is None:
        return _set_held(obj, names, values)
    for name in names:
        if name in validators:
            return _set_held(obj, names, values)
    store = obj._trait_values
    changes = []
    for (name, validate, allow_none, settled), new in zip(plan, values):  # noqa: B905 - one value per name
        if validate is not None and type(new) is not settled and (new is not None or not allow_none):
            new = validate(obj, new)
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
