"""quick_init: a faster ``__init__`` for the frozen, slotted dataclasses built on every compose.

A frozen dataclass's generated ``__init__`` stores each field with ``object.__setattr__(self,
name, value)``, which first looks the slot up by name on the class, on every call. Events are built
18 times per compose cycle and section records once per changed section, so that lookup is a
visible part of a compose. :func:`quick_init` gives such a class an ``__init__`` with the same
signature (names, order, defaults, default factories) that stores each field through its slot's
descriptor, found once when the class is made. Instances are the same: still
frozen (assigning a field raises ``FrozenInstanceError``), equal and hashed as before.

Examples
--------
>>> from dataclasses import dataclass, field
>>> @quick_init
... @dataclass(frozen=True, slots=True)
... class Point:
...     x: int
...     tags: list[str] = field(default_factory=list)
>>> Point(1), Point(1).tags is not Point(1).tags
(Point(x=1, tags=[]), True)
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def quick_init(cls: T) -> T:
    """Replace the ``__init__`` of a frozen, slotted dataclass without ``__post_init__``, init-only
    or keyword-only fields (TypeError otherwise: the generated one would be needed)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"quick_init needs a frozen dataclass with slots, got {cls.__name__}")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"quick_init cannot run {cls.__name__}.__post_init__")
    fields = dataclasses.fields(cls)
    if any(not f.init or f.kw_only for f in fields):
        raise TypeError(f"quick_init needs every field of {cls.__name__} positional and in __init__")
    # the generated code only names what this dict holds: setters, defaults, factories
    env: dict[str, Any] = {"_NO_VALUE": dataclasses.MISSING}
    params_src: list[str] = []
    body: list[str] = []
    for i, f in enumerate(fields):
        env[f"_set{i}"] = getattr(cls, f.name).__set__  # the slot's member descriptor
        if f.default is not dataclasses.MISSING:
            env[f"_default{i}"] = f.default
            params_src.append(f"{f.name}=_default{i}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory{i}"] = f.default_factory
            params_src.append(f"{f.name}=_NO_VALUE")
            body.append(f"if {f.name} is _NO_VALUE: {f.name} = _factory{i}()")
        else:
            params_src.append(f.name)
        body.append(f"_set{i}(self, {f.name})")
    source = f"def __init__(self, {', '.join(params_src)}):\n    " + "\n    ".join(body or ["pass"]) + "\n"
    exec(source, env)  # noqa: S102 - built above from field names, nothing from outside
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__dict__["__init__"].__doc__
    type.__setattr__(cls, "__init__", init)  # cls is a class (T is bound to type)
    return cls
