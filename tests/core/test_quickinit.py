"""quick_init keeps what the dataclass's own __init__ promises: signature, defaults, frozenness."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from wm_kernel.core import events
from wm_kernel.core import prompt as types
from wm_kernel.utils.quickinit import quick_init

QUICK = [cls for cls in vars(events).values() if isinstance(cls, type) and issubclass(cls, events.Event)] + [
    types.SectionRecord,
    types.OmittedSection,
]


@pytest.mark.parametrize("cls", QUICK, ids=lambda c: c.__name__)
def test_the_quick_init_takes_the_arguments_the_generated_one_takes(cls: type) -> None:
    fields = dataclasses.fields(cls)
    params = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default
        elif f.default_factory is dataclasses.MISSING:
            assert p.default is inspect.Parameter.empty
    values = {f.name: f"value {i}" for i, f in enumerate(fields)}
    positional, by_name = cls(*values.values()), cls(**values)
    assert positional == by_name
    assert {f.name: getattr(by_name, f.name) for f in fields} == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(by_name, fields[0].name, "changed")


def test_a_default_factory_makes_a_new_value_for_each_instance() -> None:
    a = events.UpdateTrinketEvent("c", "u", "e1", None, "T")  # type: ignore[arg-type]
    b = events.UpdateTrinketEvent("c", "u", "e2", None, "T")  # type: ignore[arg-type]
    assert a.context == {} and a.context is not b.context
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'occurred_at'"):
        events.UpdateTrinketEvent("c", "u", "e1")  # type: ignore[call-arg]


def test_it_refuses_classes_whose_generated_init_is_needed() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class KeywordOnly:
        x: int = field(kw_only=True)

    for cls, message in (
        (NoSlots, "frozen dataclass with slots"),
        (Checked, "__post_init__"),
        (KeywordOnly, "positional"),
    ):
        with pytest.raises(TypeError, match=message):
            quick_init(cls)
