"""Section caps: a hard cap is never exceeded, a soft cap marks and stores nothing new."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import SystemPromptComposer
from wm_kernel.core.composer.caps import Cap, apply_caps
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session
from wm_kernel.tokens import TokenCounter

COUNTER = TokenCounter()


def session() -> Session:
    s = Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
    )
    gallery = s.trinket("PeanutGalleryTrinket")
    for i in range(6):
        gallery.add_guidance("concern", f"Point {i}: check the units before you answer.", ttl=10)
    return s


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=400).filter(str.strip),
    limit=st.integers(1, 120),
    unit=st.sampled_from(["tokens", "chars"]),
)
def test_a_composed_section_never_exceeds_its_hard_cap(text: str, limit: int, unit: str) -> None:
    composer = SystemPromptComposer()
    composer.set_base_prompt("Base.")
    composer.add_section("datetime_section", text)
    [result] = apply_caps(composer, [], {"datetime_section": Cap(limit, unit)}, COUNTER)
    size = len if unit == "chars" else COUNTER.count
    if "datetime_section" in composer.section_names:
        shown = composer.get_entry("datetime_section")[0]
        assert size(shown) <= limit and result.shown == size(shown)
        if result.action == "cut":
            assert shown.endswith("]") or shown.endswith("…")
    else:
        assert result.action == "left out"
    hud = composer.compose()["notification_center"]
    assert result.action != "within" or text.strip() in hud


def test_a_hard_cap_keeps_the_best_items_of_a_ranking_trinket() -> None:
    s = session()
    full = s.compose().section("peanutgallery_guidance").content
    assert full.count("<guidance") == 6
    s.working_memory.set_cap("PeanutGalleryTrinket", 60)
    composed = s.compose()
    shown = composed.section("peanutgallery_guidance").content
    [result] = composed.budget.caps
    kept = shown.count("<guidance")
    assert 1 <= kept < 6 and result.action == f"kept {kept} of 6 items"
    assert COUNTER.count(shown) <= 60 < COUNTER.count(full)
    # what the trinket holds is untouched
    assert len(s.trinket("PeanutGalleryTrinket").get_active_guidance()) == 6


def test_a_soft_cap_marks_the_section_and_changes_no_stored_state() -> None:
    s = session()
    full = s.compose().section("peanutgallery_guidance").content
    stored_before = s.working_memory.store.hgetall(s.working_memory.store_key)
    s.working_memory.set_cap("peanutgallery_guidance", 50, mode="soft")
    composed = s.compose()
    shown = composed.section("peanutgallery_guidance").content
    size = COUNTER.count(full)
    assert shown == full + f"\n[over its cap: {size:,} of 50 tokens]"
    assert composed.budget.caps[0].action == "marked" and composed.budget.caps[0].share > 1
    stored = s.working_memory.store.hgetall(s.working_memory.store_key)
    assert stored["peanutgallery_guidance"]["content"] == stored_before["peanutgallery_guidance"]["content"]


def test_a_section_within_its_cap_is_untouched_and_the_cap_can_be_removed() -> None:
    s = session()
    s.working_memory.set_cap("datetime_section", 500, unit="chars")
    composed = s.compose()
    assert composed.budget.caps[0].action == "within"
    s.working_memory.set_cap("datetime_section", None)
    assert s.compose().budget.caps == ()
    with pytest.raises(ValueError, match="has no cap to remove"):
        s.working_memory.set_cap("datetime_section", None)


@pytest.mark.parametrize(
    "args, message",
    [
        ((0,), "limit must be a positive int"),
        ((5, "words"), "unit must be one of tokens, chars"),
        ((5, "tokens", "firm"), "mode must be one of hard, soft"),
        ((True,), "positive int"),
    ],
)
def test_bad_caps(args: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Cap(*args)
    s = session()
    with pytest.raises(ValueError, match=message):
        s.working_memory.set_cap("datetime_section", *args[:1], **dict(zip(("unit", "mode"), args[1:], strict=False)))
    assert s.working_memory.caps == {}


def test_the_trinket_cap_command(ip: Any) -> None:
    from IPython.core.error import UsageError

    ip.run_line_magic("wm_session", "--clock 2026-11-30T09:00:00+00:00")
    out = ip.run_line_magic("trinket", "peanutgallery cap 800")
    import wm_kernel

    caps = wm_kernel.current_session().working_memory.caps
    assert caps == {"peanutgallery_guidance": Cap(800)}
    assert "peanutgallery_guidance: hard cap of 800 tokens" in str(out)
    ip.run_line_magic("trinket", "peanutgallery cap 300 --chars --soft")
    assert caps != wm_kernel.current_session().working_memory.caps
    assert wm_kernel.current_session().working_memory.caps["peanutgallery_guidance"] == Cap(300, "chars", "soft")
    with pytest.raises(UsageError, match="limit must be a whole number or 'off'"):
        ip.run_line_magic("trinket", "peanutgallery cap lots")
    ip.run_line_magic("trinket", "peanutgallery cap off")
    assert wm_kernel.current_session().working_memory.caps == {}
