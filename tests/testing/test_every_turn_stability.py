"""The stability checker names an edit that fires every turn (issue 47 item 2): a cached section
new at each turn by design, which no perturbation moves but which never pays back."""

from __future__ import annotations

import stability_samples as samples

from wm_kernel.experiments.scenario import Scenario
from wm_kernel.testing.replay import Compose, SectionText
from wm_kernel.testing.stability import check_stability
from wm_kernel.testing.stability.every_turn import every_turn_sections
from wm_kernel.utils.style import PROMPT_PRE

START = "2026-11-30T09:00:00+00:00"


def scenario(cls: type) -> Scenario:
    made = Scenario(
        clock=START, base_prompt="You help {first_name}.", trinkets=[cls.__name__], profile={"first_name": "Ada"}
    )
    return made.compose().advance(minutes=2).advance_turn().advance(minutes=3).advance_turn()


def test_a_cached_clock_to_the_second_is_named_below_the_checks_and_its_fix_is_not() -> None:
    report = check_stability(scenario(samples.Seconds), factories={"Seconds": samples.Seconds}, only=["recompose"])
    assert report.passed and report.verdict == "stable"  # nothing moved under the perturbation
    (every,) = report.every_turn
    assert (every.section, every.trinket, every.placement, every.changed, every.compared) == (
        "location_context",
        "Seconds",
        "system",
        2,
        2,
    )
    line = every.line()
    assert line.startswith(
        "every turn: section 'location_context' (Seconds), cached system: new at each of the 2 turns"
    )
    assert line.endswith("saves nothing, so it never pays back (break-even infinite)")
    assert str(report).endswith("\n" + line)
    # a <pre> of its own, wrapping at spaces as the findings do
    assert (
        f'<pre style="{PROMPT_PRE}">every turn: section &#x27;location_context&#x27; (Seconds)' in report._repr_html_()
    )
    fixed = check_stability(scenario(samples.DateOnly), factories={"DateOnly": samples.DateOnly}, only=["recompose"])
    assert fixed.every_turn == [] and "every turn" not in str(fixed)


def _compose(turn: int, *sections: tuple[str, bool, str]) -> Compose:
    return Compose(turn, None, tuple(SectionText(n, "system", c, "T", text) for n, c, text in sections))  # type: ignore[arg-type]


def test_every_turn_counts_turns_not_composes_and_only_the_cached_prefix() -> None:
    composes = [
        _compose(0, ("rules", True, "r" * 50), ("clock", True, "09:00"), ("hud", False, "a")),
        _compose(1, ("rules", True, "r" * 50), ("clock", True, "09:00"), ("hud", False, "b")),
        _compose(1, ("rules", True, "r" * 50), ("clock", True, "09:01"), ("hud", False, "c")),  # the turn's last
        _compose(2, ("rules", True, "r" * 50), ("clock", True, "09:02"), ("hud", False, "d")),
    ]
    (found,) = every_turn_sections(composes)
    assert (found.section, found.changed, found.compared, found.offset, found.prefix_chars) == ("clock", 2, 2, 50, 55)
    # two turns are too few; a section that held still one turn is not "every turn"
    assert every_turn_sections(composes[:3]) == []
    held = [*composes[:3], _compose(2, ("rules", True, "r" * 50), ("clock", True, "09:01"))]
    assert every_turn_sections(held) == []
