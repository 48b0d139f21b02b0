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
- :func:`trait_values` reads the values traits hold without their descriptors, where a compose
  reads the same few traits of every trinket (read only: a write there would skip validators and
  observers).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from traitlets import Bunch, HasTraits, TraitType

__all__ = ["TESTED", "set_traits", "trait_values"]

#: The traitlets versions these shortcuts were written and tested against (pyproject pins the same).
TESTED = ">=5.9,<5.17"


def trait_values(obj: Any) -> Mapping[str, Any]:
    """The values of ``obj``'s traits, by name, to read (never to write). A trait whose default is
    computed (``@default``) is here only once it was read or set: read it through its attribute
    when it is missing."""
    values: Mapping[str, Any] = obj._trait_values
    return values


# (class, trait names) -> each trait's (name, type's ``validate`` or None, allows None), or None
# when a name has a deprecated ``_<name>_validate`` method (a cross-validator, as ``@validate`` is)
_Plan = tuple[tuple[str, Callable[[Any, Any], Any] | None, bool], ...] | None
_plans: dict[tuple[type, tuple[str, ...]], _Plan] = {}


def _plan(cls: type, names: tuple[str, ...]) -> _Plan:
    steps = []
    for name in names:
        trait = getattr(cls, name)
        if not isinstance(trait, TraitType):
            raise AttributeError(f"{cls.__name__}.{name} is not a trait")
        if hasattr(cls, f"_{name}_validate"):
            return None
        steps.append((name, getattr(trait, "validate", None), trait.allow_none))
    return tuple(steps)


def set_traits(obj: HasTraits, names: tuple[str, ...], *values: Any) -> None:
    """Set the traits ``names`` to ``values`` (in order), then notify of each change (in the same
    order), as ``with obj.hold_trait_notifications(): ...`` would: an observer of one sees the new
    value of all. Each value passes its trait type's ``validate``; unchanged ones stay quiet. When
    one of the traits has a cross-validator, all take traitlets' own path."""
    key = (type(obj), names)
    plan = _plans[key] if key in _plans else _plans.setdefault(key, _plan(*key))
    validators = obj._trait_validators
    if plan is None or not validators.keys().isdisjoint(names):
        with obj.hold_trait_notifications():
            for name, value in zip(names, values, strict=True):
                setattr(obj, name, value)
        return
    store = obj._trait_values
    changes = []
    index = 0
    for name, validate, allow_none in plan:
        new = values[index]
        index += 1
        if validate is not None and (new is not None or not allow_none):
            new = validate(obj, new)
        old = store[name] if name in store else getattr(obj, name)
        store[name] = new
        if old != new:
            changes.append(Bunch(name=name, old=old, new=new, owner=obj, type="change"))
    for change in changes:
        obj.notify_change(change)
