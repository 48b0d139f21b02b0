"""The trinkets' hot path against the installed traitlets, used through its public API (the
private shortcuts of wm_kernel/utils/traitlets_fast.py are gone, issue 33; one came back in one
place, the composed prompt's set, issue 42, held here to traitlets' behaviour): a subclass's
validators and observers see every change, content and time are set together as
hold_trait_notifications sets them (a refused one puts both back, and nobody is told), and the
installed traitlets is in the pinned range."""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from traitlets import HasTraits, TraitError, observe, validate

from trinkets.base import EventAwareTrinket, StatefulTrinket, feed
from wm_kernel.core.bus import EventBus
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.prompt import ComposedPrompt, ComposedPromptTrait
from wm_kernel.core.working_memory import WorkingMemory
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


#: traitlets' private names; wm-kernel reads them in one place only, ComposedPromptTrait.set
#: (issue 42: the composed prompt's set was a compose cycle's largest single cost; see
#: docs/performance.md), which the tests below hold to traitlets' own behaviour
PRIVATE = re.compile(
    r"\._(?:trait_values|trait_notifiers|trait_validators|notify_observers|"
    r"notify_trait|cross_validation_lock|validate|cross_validate)\b"
)


def test_traitlets_private_names_appear_in_the_composed_trait_set_alone() -> None:
    one_home = inspect.getsource(ComposedPromptTrait.set)
    assert PRIVATE.findall(one_home), "the shortcut moved: update this test and docs/performance.md"
    for path in sorted([*(ROOT / "wm_kernel").rglob("*.py"), *(ROOT / "trinkets").rglob("*.py")]):
        text = path.read_text(encoding="utf-8")
        if path.name == "prompt.py" and path.parent.name == "core":
            text = text.replace(one_home, "")
        assert PRIVATE.findall(text) == [], path.relative_to(ROOT)
        assert "traitlets.traitlets" not in text, path.relative_to(ROOT)


class Guarded(WorkingMemory[Any]):
    """Its ``@validate`` sees every composed prompt and refuses one whose cached part is empty."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.proposed: list[int] = []
        super().__init__(*args, **kwargs)

    @validate("composed")
    def _check_composed(self, proposal: dict[str, Any]) -> Any:
        self.proposed.append(id(proposal["value"]))
        if proposal["value"] is not None and not proposal["value"]["cached_content"]:
            raise TraitError("an empty cached part")
        return proposal["value"]


def test_the_composed_trait_runs_a_subclass_validator_on_every_compose() -> None:
    wm = Guarded(EventBus(), clock=ManualClock("2026-11-30T09:00:00+00:00"))
    first, second = wm.compose("Hi."), wm.compose("Hi.")
    assert wm.proposed == [id(first), id(second)] and wm.composed is second
    with pytest.raises(TraitError, match="^an empty cached part$"):
        wm.composed = ComposedPrompt("", "", [], [], "")
    assert wm.composed is second  # refused: left as it was


def test_the_composed_trait_refuses_what_is_not_a_prompt_and_keeps_the_old_one() -> None:
    wm = WorkingMemory(EventBus())
    prompt = wm.compose("Hi.")
    told: list[Any] = []
    wm.observe(told.append, "composed")
    with pytest.raises(TraitError, match="'composed' trait of a WorkingMemory instance expected a ComposedPrompt"):
        wm.composed = {"cached_content": "Hi."}  # type: ignore[assignment]
    assert wm.composed is prompt and told == []
    wm.composed = None  # allowed, and told
    assert [(c["old"], c["new"]) for c in told] == [(prompt, None)]


def test_the_composed_trait_tells_observers_of_every_trait_and_of_the_name() -> None:
    wm = WorkingMemory(EventBus())
    every: list[str] = []
    named: list[str] = []
    wm.observe(lambda c: every.append(c["name"]))  # names=All
    wm.compose("Hi.")
    wm.observe(lambda c: named.append(c["type"]), "composed")
    wm.compose("Hi.")
    assert every == ["composed", "composed"] and named == ["change"]
    wm.unobserve_all()
    wm.compose("Hi.")  # nobody listens: nothing is told, the prompt is kept
    assert every == ["composed", "composed"] and named == ["change"] and wm.composed["cached_content"]


class Synced(HasTraits):
    """Sends every change somewhere, as a widget does: its ``notify_change`` is its own."""

    prompt = ComposedPromptTrait()

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def notify_change(self, change: Any) -> None:
        self.sent.append(change["name"])
        super().notify_change(change)


def test_an_owner_with_its_own_notify_change_is_told_of_every_new_prompt() -> None:
    owner = Synced()
    prompt = ComposedPrompt("A.", "", [], [], "")
    owner.prompt = prompt
    owner.prompt = prompt  # the same object: no change
    owner.prompt = ComposedPrompt("A.", "", [], [], "")  # an equal prompt is a new compose
    assert owner.sent == ["prompt", "prompt"]


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
