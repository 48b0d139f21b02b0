"""The trinkets' hot path against the installed traitlets, used only through its public API (the
private shortcuts of wm_kernel/utils/traitlets_fast.py are gone, issue 33): a subclass's
validators and observers see every change, content and time are set together as
hold_trait_notifications sets them (a refused one puts both back, and nobody is told), and the
installed traitlets is in the pinned range."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from traitlets import TraitError, observe, validate

from trinkets.base import EventAwareTrinket, StatefulTrinket, feed
from wm_kernel.core.clock import ManualClock
from wm_kernel.session import Session

ROOT = Path(__file__).resolve().parents[2]


#: The traitlets versions the trinkets were tested with (5.16.1, the newest release offered when
#: the shortcuts went); pyproject.toml pins the same range.
TESTED = ">=5.9,<5.17"


def test_the_pinned_range_is_the_tested_one_and_holds_the_installed_traitlets() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pinned = [Requirement(r) for r in project["dependencies"] if r.startswith("traitlets")]
    assert [r.specifier for r in pinned] == [SpecifierSet(TESTED)]
    assert pinned[0].specifier.contains(version("traitlets"))


def test_the_hot_path_names_nothing_private_of_traitlets() -> None:
    import re

    private = re.compile(
        r"\._(?:trait_values|trait_notifiers|trait_validators|notify_observers|"
        r"notify_trait|cross_validation_lock|validate|cross_validate)\b"
    )
    for path in [
        "trinkets/event_aware.py",
        "trinkets/stateful.py",
        "wm_kernel/core/working_memory.py",
        "wm_kernel/core/composer/budget.py",
        "wm_kernel/core/bus.py",
        "wm_kernel/core/composer/__init__.py",
    ]:
        text = (ROOT / path).read_text(encoding="utf-8")
        assert private.findall(text) == [], path
        assert "traitlets.traitlets" not in text, path


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
    return Session(base_prompt="Hi.", clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=list(trinkets))


def test_a_subclass_validator_and_observer_see_every_change_on_the_update_path() -> None:
    s = session(Echo)
    echo = s.trinket("Echo")
    for text in ("one", "two", "two", "three"):
        echo.say(text)
        s.compose()
    assert echo.proposed == ["one", "two", "three"]  # an unchanged text is not set again
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
    assert echo.seen == [("", "fine"), ("fine", "")]  # the failure empties the section


class LateClock(Echo):
    """Refuses the time of an afternoon text: the text must not stay, nor be told to anyone."""

    @validate("last_updated")
    def _not_in_the_afternoon(self, proposal: dict[str, Any]) -> Any:
        if self.content == "afternoon":
            raise TraitError("too late")
        return proposal["value"]


def test_a_refused_time_leaves_content_and_time_as_they_were_and_tells_nobody() -> None:
    s = session(LateClock)
    late = s.trinket("LateClock")
    late.say("morning")
    s.compose()
    before = late.last_updated
    late.seen.clear()
    s.working_memory.clock.advance(hours=4)
    late.say("afternoon")
    prompt = s.compose()
    assert late.error == "TraitError: too late"
    # the failure empties the section (and says when); "afternoon" was never shown to anyone
    assert late.seen == [("morning", "")]
    assert late.content == "" and "afternoon" not in prompt.to_json()
    assert late.last_updated == s.working_memory.clock.now() != before  # when it failed


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


class Seen(EventAwareTrinket):
    """Its content changes with what it was fed; an observer of each trait records what it reads
    of both when it is told."""

    variable_name = "datetime_section"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.text = ""
        self.heard: list[tuple[str, Any, Any]] = []
        super().__init__(*args, **kwargs)
        self.observe(
            lambda c: self.heard.append((c.name, self.content, self.last_updated)), names=["content", "last_updated"]
        )

    def generate_content(self, context: dict[str, Any]) -> str:
        return self.text

    @feed
    def say(self, text: str) -> None:
        self.text = text


def test_content_and_time_are_both_set_before_either_is_told() -> None:
    s = session(Seen)
    seen = s.trinket("Seen")
    clock = s.working_memory.clock
    seen.say("one")
    s.compose()
    first = clock.now()
    clock.advance(minutes=1)
    seen.say("two")
    s.compose()
    s.compose()  # unchanged: nobody is told again
    assert seen.heard == [
        ("content", "one", first),
        ("last_updated", "one", first),
        ("content", "two", clock.now()),
        ("last_updated", "two", clock.now()),
    ]
