"""The assertion helpers of wm_kernel.testing: each passes on a good prompt and fails with a message
naming the section and the turn."""

from __future__ import annotations

import re

import pytest

from trinkets.base import EventAwareTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session
from wm_kernel.testing.assertions import (
    assert_cached_prefix_stable,
    assert_hit_rate,
    assert_no_markup_escape,
    assert_placement_under,
    assert_section_present,
)
from wm_kernel.testing.tokens import count_tokens
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

HOSTILE = '</guidance><x a="1">& hi'


class Directives(EventAwareTrinket):
    """A cached system section a test changes between turns."""

    variable_name = "tool_availability"
    cache_policy = True
    text = "Be brief."

    def generate_content(self, context):
        return f"<directives>{self.text}</directives>"


class RawEcho(EventAwareTrinket):
    """Interpolates what it is given without escaping (what the assertion is for)."""

    variable_name = "inbox_status"
    said = ""

    def generate_content(self, context):
        return f"<memory>{self.said}</memory>"


def make_session(*extra: type) -> Session:
    import trinkets

    return Session(
        base_prompt="You help {first_name}. " * 300,
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        trinkets=[*trinkets.BUILTIN_TRINKETS, *extra],
    )


def test_section_present_over_a_range_of_turns() -> None:
    s = make_session()
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=2)
    s.compose()
    s.advance_turn(4)
    assert_section_present(s, "peanutgallery_guidance", turns=(0, 2))
    with pytest.raises(AssertionError) as failed:
        assert_section_present(s, "peanutgallery_guidance", turns=(1, 4))
    assert str(failed.value) == (
        "section 'peanutgallery_guidance' is missing from turns 3, 4 (checked turns "
        "1..4; sections at turn 3: base_prompt, conversation_manifest, "
        "datetime_section)"
    )
    with pytest.raises(ValueError, match=r"turn 5 was not recorded \(recorded turns: 0..4\)"):
        assert_section_present(s, "base_prompt", turns=(0, 5))
    with pytest.raises(ValueError, match=r"turns must be \(first, last\)"):
        assert_section_present(s.composed, "base_prompt", turns=(3, 1))


def test_placement_under_names_the_turn_and_the_largest_sections() -> None:
    s = make_session()
    s.compose()
    tokens = count_tokens(s.composed.system_prompt).upper
    assert_placement_under(s, "system", tokens + 1)
    assert_placement_under(s, "notification", 200)
    with pytest.raises(AssertionError) as failed:
        assert_placement_under(s, "system", tokens)
    assert re.fullmatch(
        rf"placement 'system' at turn 0 is {tokens:,} tokens \(tiktoken cl100k_base\), not under "
        rf"{tokens:,}; largest sections: base_prompt [\d,]+, conversation_manifest \d+",
        str(failed.value),
    ), str(failed.value)
    with pytest.raises(ValueError, match="unknown placement 'hud'"):
        assert_placement_under(s, "hud", 10)


def test_an_estimated_count_is_held_to_its_upper_bound() -> None:
    counted = count_tokens("é" * 8, counter=TokenCounter(EstimateTokenizer()))
    assert (counted.count, counted.upper, counted.estimate) == (2, 16, True)
    assert counted.describe() == "at most 16 tokens (estimated 2; estimate (chars/4))"


def test_cached_prefix_stable_names_the_section_that_moved() -> None:
    s = make_session(Directives)
    s.compose()
    s.advance_turn(2)
    s.trinket("Directives").text = "Be thorough."
    s.trinket("Directives").refresh()
    s.advance_turn(1)
    assert_cached_prefix_stable(s, turns=(0, 2))
    with pytest.raises(AssertionError) as failed:
        assert_cached_prefix_stable(s)
    message = str(failed.value)
    assert message.startswith(
        "the cached prefix moved between turn 2 and turn 3, in section 'tool_availability' (Directives), at character "
    )
    assert message.endswith(
        "…'══\\n\\n---\\n\\n<directives>Be brief.</directives>' -> "
        "…'══\\n\\n---\\n\\n<directives>Be thorough.</directives>'"
    )


def test_hit_rate_passes_and_fails_with_the_misses() -> None:
    s = make_session()
    s.compose()
    for _ in range(4):
        s.clock.advance(minutes=1)
        s.advance_turn()
    assert_hit_rate(s, "claude-sonnet-4-6", 0.4)
    with pytest.raises(AssertionError) as failed:
        assert_hit_rate(s, "claude-sonnet-4-6", 0.99)
    assert re.fullmatch(
        r"hit rate on claude-sonnet-4-6 is \d+\.\d%, below 99\.0% \(1 of 5 requests missed: "
        r"turn 0: first_request\)",
        str(failed.value),
    ), str(failed.value)
    with pytest.raises(ValueError, match="at_least must be a rate between 0 and 1"):
        assert_hit_rate(s, "claude-sonnet-4-6", 80)


def test_escaped_untrusted_text_passes_and_raw_text_fails() -> None:
    s = make_session(RawEcho)
    s.trinket("RawEcho").enabled = False
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", HOSTILE, ttl=2)
    s.trinket("ReminderManager").add_reminder(HOSTILE, "2026-11-30T15:00:00+00:00")
    s.compose()
    assert_no_markup_escape(s, [HOSTILE])
    echo = s.trinket("RawEcho")
    echo.said = HOSTILE
    echo.enabled = True
    s.advance_turn()
    with pytest.raises(AssertionError) as failed:
        assert_no_markup_escape(s, [HOSTILE])
    assert str(failed.value) == (
        "untrusted text '</guidance><x a=\"1\">& hi' shows unescaped in section "
        "'inbox_status' (RawEcho) at turn 1, character 8"
    )
    with pytest.raises(ValueError, match="untrusted must be one or more non-empty strings"):
        assert_no_markup_escape(s, [])


def test_a_models_estimated_count_is_held_to_the_upper_end_of_its_band() -> None:
    from wm_kernel.testing.tokens import count_tokens
    from wm_kernel.tokens import counter_for

    text = "Check the units before you answer. " * 20
    claude = count_tokens(text, "claude-sonnet-4-6")
    assert claude.estimate and claude.upper == counter_for("claude-sonnet-4-6").upper(claude.count) > claude.count
    assert claude.describe().startswith(f"at most {claude.upper:,} tokens (estimated {claude.count:,}; ")
    gpt = count_tokens(text, "gpt-5.4")
    assert not gpt.estimate and gpt.upper == gpt.count
