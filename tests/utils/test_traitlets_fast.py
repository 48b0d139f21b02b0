"""set_traits (wm_kernel/utils/traitlets_fast.py) against the installed traitlets: it does what
hold_trait_notifications does, a subclass's validators and observers always run, a failed value
changes nothing, and the pinned range is the one it was tested with."""
from __future__ import annotations

import tomllib
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from traitlets import HasTraits, Int, TraitError, Unicode, observe, validate

from trinkets.base import EventAwareTrinket, StatefulTrinket, feed
from wm_kernel.core.clock import ManualClock
from wm_kernel.session import Session
from wm_kernel.utils.traitlets_fast import TESTED, set_traits

ROOT = Path(__file__).resolve().parents[2]


def test_the_pinned_range_is_the_tested_one_and_holds_the_installed_traitlets() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = [Requirement(r) for r in project["dependencies"] if r.startswith("traitlets")]
    assert [r.specifier for r in pinned] == [SpecifierSet(TESTED)]
    assert pinned[0].specifier.contains(version("traitlets"))


class Echo(EventAwareTrinket):
    """Shows what it was fed; its validator and observer record every change of ``content``."""

    variable_name = "datetime_section"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.text = ""
        self.proposed: list[str] = []
        self.seen: list[tuple[str, str]] = []
        super().__init__(*args, **kwargs)

    def generate_content(self, context: dict[str, Any]) -> str:
        return self.text

    @feed
    def say(self, text: str) -> None:
        self.text = text

    @validate("content")
    def _check_content(self, proposal: dict[str, Any]) -> str:
        self.proposed.append(proposal["value"])
        if "forbidden" in proposal["value"]:
            raise TraitError("content may not say 'forbidden'")
        return str(proposal["value"])

    @observe("content")
    def _content_changed_seen(self, change: dict[str, Any]) -> None:
        self.seen.append((change["old"], change["new"]))


def session(*trinkets: type) -> Session:
    return Session(base_prompt="Hi.", clock=ManualClock("2026-11-30T09:00:00+00:00"),
                   trinkets=list(trinkets))


def test_a_subclass_validator_and_observer_see_every_change_on_the_update_path() -> None:
    s = session(Echo)
    echo = s.trinket("Echo")
    for text in ("one", "two", "two", "three"):
        echo.say(text)
        s.compose()
    assert echo.proposed == ["one", "two", "three"]   # an unchanged text is not set again
    assert echo.seen == [("", "one"), ("one", "two"), ("two", "three")]
    assert echo.content == "three"


def test_a_subclass_validator_that_refuses_makes_the_update_fail_visibly() -> None:
    s = session(Echo)
    echo = s.trinket("Echo")
    echo.say("fine")
    s.compose()
    echo.say("forbidden words")
    prompt = s.compose()
    assert echo.error == "TraitError: content may not say 'forbidden'"
    assert "forbidden" not in prompt["cached_content"] + prompt["non_cached_content"]
    assert echo.seen == [("", "fine"), ("fine", "")]   # the failure empties the section


class Turns(StatefulTrinket):
    variable_name = "active_reminders"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.proposed: list[int] = []
        self.seen: list[tuple[int, int]] = []
        super().__init__(*args, **kwargs)

    def generate_content(self, context: dict[str, Any]) -> str:
        return f"turn {self.current_turn}"

    def _expire_items(self) -> bool:
        return True

    def _clear_all_state(self) -> None:
        pass

    @validate("current_turn")
    def _check_turn(self, proposal: dict[str, Any]) -> int:
        self.proposed.append(proposal["value"])
        return int(proposal["value"])

    @observe("current_turn")
    def _turn_seen(self, change: dict[str, Any]) -> None:
        self.seen.append((change["old"], change["new"]))


def test_a_subclass_validator_and_observer_see_every_turn() -> None:
    s = session(Turns)
    turns = s.trinket("Turns")
    turns.proposed.clear()
    turns.seen.clear()
    for _ in range(3):
        s.advance_turn()
    assert turns.proposed == [1, 2, 3]
    assert turns.seen == [(0, 1), (1, 2), (2, 3)]
    assert "turn 3" in s.compose().to_json()


class Pair(HasTraits):
    a = Unicode("")
    b = Int(0)


class HeardPair(Pair):
    def __init__(self) -> None:
        super().__init__()
        self.heard: list[tuple[str, Any, Any, Any, Any]] = []
        self.observe(lambda c: self.heard.append((c.name, c.old, c.new, self.a, self.b)))


class ValidatedPair(HeardPair):
    @validate("a")
    def _upper(self, proposal: dict[str, Any]) -> str:
        return str(proposal["value"]).upper()


class LegacyValidatedPair(HeardPair):
    def _b_validate(self, value: int, trait: Any) -> int:
        return value * 10


@pytest.mark.parametrize("cls", [HeardPair, ValidatedPair, LegacyValidatedPair])
@pytest.mark.parametrize("values", [{"a": "x", "b": 2}, {"b": 2, "a": "x"}, {"a": "", "b": 5}])
def test_set_traits_does_what_hold_trait_notifications_does(cls: type, values: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # traitlets on _b_validate
        fast, public = cls(), cls()
        set_traits(fast, tuple(values), *values.values())
        with public.hold_trait_notifications():
            for name, value in values.items():
                setattr(public, name, value)
    assert (fast.a, fast.b) == (public.a, public.b)
    assert fast.heard == public.heard


def test_set_traits_checks_each_value_against_its_trait_type() -> None:
    pair = HeardPair()
    with pytest.raises(TraitError, match="'b' trait of a HeardPair instance expected an int"):
        set_traits(pair, ("b",), "two")
    assert pair.b == 0 and pair.heard == []


def test_a_value_that_fails_leaves_every_trait_as_it_was_and_notifies_nobody() -> None:
    pair = HeardPair()
    with pytest.raises(TraitError, match="'b' trait of a HeardPair instance expected an int"):
        set_traits(pair, ("a", "b"), "x", "two")   # the first one was set: it is undone
    assert (pair.a, pair.b) == ("", 0) and pair.heard == []
    set_traits(pair, ("a", "b"), "y", 3)            # and the object still notifies as before
    assert pair.heard == [("a", "", "y", "y", 3), ("b", 0, 3, "y", 3)]


def test_inside_hold_trait_notifications_the_changes_wait_for_its_end() -> None:
    pair = HeardPair()
    with pair.hold_trait_notifications():
        set_traits(pair, ("a", "b"), "x", 2)
        pair.a = "z"
        assert pair.heard == []
    # traitlets merges the held changes of a name into one
    assert pair.heard == [("a", "", "z", "z", 2), ("b", 0, 2, "z", 2)]
    set_traits(pair, ("b",), 4)
    assert pair.heard[-1] == ("b", 2, 4, "z", 4)


def test_set_traits_wants_one_value_per_name() -> None:
    with pytest.raises(TypeError, match="set_traits: 2 names and 1 values"):
        set_traits(HeardPair(), ("a", "b"), "x")
