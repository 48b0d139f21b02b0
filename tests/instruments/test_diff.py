"""diff_prompts / Session.diff: per-section status, unified diffs, escaped HTML."""

from __future__ import annotations

import re

import pytest
import sample_trinkets
from sample_trinkets import Ticker

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer import SystemPromptComposer
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.profile import Profile
from wm_kernel.instruments.diff import PromptDiff, diff_prompts
from wm_kernel.session import Session
from wm_kernel.utils import style


class Directives(sample_trinkets.Directives):
    text = "Be brief.\nUse lists."


class Tip(sample_trinkets.Directives):
    """An uncached notification section, empty until a test gives it text."""

    variable_name = "peanutgallery_guidance"
    cache_policy = False
    text = ""


def make_session(continuum_id="a", layout=None):
    return Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        continuum_id=continuum_id,
        trinkets=[Directives, Ticker, Tip],
        layout=layout,
    )


def test_session_diff_between_two_turns_as_text():
    s = make_session()
    s.compose()
    s.clock.advance(minutes=5)
    s.trinket("Directives").text = "Be brief.\nUse tables."
    s.trinket("Tip").text = "Slow down."
    s.advance_turn()
    d = s.diff(0, 1)
    assert isinstance(d, PromptDiff)
    assert d.changed_sections == ["behavioral_directives", "datetime_section", "peanutgallery_guidance"]
    assert d.counts() == {"added": 1, "removed": 0, "changed": 2, "unchanged": 1}
    assert (
        str(d)
        == """\
turn 0 -> turn 1: 2 changed, 1 added, 0 removed, 1 unchanged
= base_prompt (system)
~ behavioral_directives (system)
--- turn 0/behavioral_directives
+++ turn 1/behavioral_directives
@@ -1,2 +1,2 @@
 Be brief.
-Use lists.
+Use tables.
~ datetime_section (notification)
--- turn 0/datetime_section
+++ turn 1/datetime_section
@@ -1 +1 @@
-<now>09:00</now>
+<now>09:05</now>
+ peanutgallery_guidance (notification)
--- /dev/null
+++ turn 1/peanutgallery_guidance
@@ -0,0 +1 @@
+Slow down."""
    )
    # turn_b defaults to the latest recorded turn; the same turn diffs to nothing
    assert s.diff(0).changed_sections == d.changed_sections
    assert not s.diff(1, 1)


def test_removed_sections_stay_where_they_were():
    s = make_session()
    s.trinket("Tip").text = "Slow down."
    s.compose()
    s.trinket("Tip").text = ""
    s.advance_turn()
    d = s.diff(0, 1)
    assert [(x.name, x.status) for x in d.sections] == [
        ("base_prompt", "unchanged"),
        ("behavioral_directives", "unchanged"),
        ("datetime_section", "unchanged"),
        ("peanutgallery_guidance", "removed"),
    ]
    assert d.section("peanutgallery_guidance").lines == (
        "--- turn 0/peanutgallery_guidance",
        "+++ /dev/null",
        "@@ -1 +0,0 @@",
        "-Slow down.",
    )


def test_diff_between_two_sessions_shows_a_moved_section():
    a = make_session("a")
    b = make_session("b", layout=Layout.default().with_section("datetime_section", "system"))
    a.compose()
    b.compose()
    d = a.diff(0, other=b)
    assert d.summary() == "a turn 0 -> b turn 0: 1 changed, 0 added, 0 removed, 2 unchanged"
    moved = d.section("datetime_section")
    assert (moved.status, moved.old_placement, moved.new_placement, moved.lines) == (
        "changed",
        "notification",
        "system",
        (),
    )
    assert moved.header() == "~ datetime_section (moved notification -> system)"
    # the same through diff_prompts and prompt_at
    assert str(diff_prompts(a.prompt_at(0), b.prompt_at(0), old_label="a turn 0", new_label="b turn 0")) == str(d)


def test_five_key_dicts_are_diffed_by_field():
    old = {
        "cached_content": "base",
        "non_cached_content": "",
        "conversation_prefix_items": [],
        "post_history_items": ["doc v1"],
        "notification_center": "hud",
    }
    new = dict(old, post_history_items=["doc v2", "extra"])
    d = diff_prompts(old, new)
    assert [(x.name, x.status) for x in d.sections] == [
        ("cached_content", "unchanged"),
        ("non_cached_content", "unchanged"),
        ("post_history_items[0]", "changed"),
        ("post_history_items[1]", "added"),
        ("notification_center", "unchanged"),
    ]
    # a ComposedPrompt without section records is compared the same way
    composer = SystemPromptComposer()
    composer.set_base_prompt("base")
    assert diff_prompts(old, composer.compose()).changed_sections == [
        "cached_content",
        "post_history_items[0]",
        "notification_center",
    ]


def test_html_escapes_hostile_prompt_text():
    s = make_session()
    s.compose()
    s.trinket("Tip").text = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
    s.advance_turn()
    page = s.diff(0, 1)._repr_html_()
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;" in page
    assert page.startswith(
        '<div class="mathjax_ignore tex2jax_ignore"><div class="wm-diff"><p><b>turn 0 -&gt; turn 1: 0 changed, 1 added'
    )


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="^new must be a ComposedPrompt or a five-key dict, got str$"):
        diff_prompts({}, "text")
    with pytest.raises(ValueError, match=r"^old has unknown keys \['system'\]"):
        diff_prompts({"system": "x"}, {})
    s = make_session()
    with pytest.raises(ValueError, match="^nothing recorded yet: compose first$"):
        s.diff(0)
    with pytest.raises(TypeError, match="^other must be a Session, got dict$"):
        s.diff(0, other={})


def test_html_follows_the_theme():
    old = {"cached_content": "a\nb", "notification_center": "same"}
    new = {"cached_content": "a\nc", "notification_center": "same", "non_cached_content": "new"}
    page = diff_prompts(old, new)._repr_html_()
    # no fixed light backgrounds (unreadable in a dark theme): theme variables or translucent tints
    assert "background:#" not in page
    colours = re.findall(r'[;"](?:color|background):([^;"]+)', page) + re.findall(r'solid ([^;"]+)', page)
    assert colours and all(c.startswith(("var(--jp-", "rgba(", "color-mix(in srgb, var(--jp-")) for c in colours)
    assert f"border-left:3px solid {style.WARN}" in page  # changed
    assert f"border-left:3px solid {style.SUCCESS}" in page  # added
    assert re.search(r'<span style="background:rgba\([^)]*\)">\+c</span>', page)


def test_the_first_change_line_names_one_place_or_two_different_ones():
    """Where both prompts have the same section at the first differing character the line names it
    once; where the owners differ it names both, old then new (never "X -> X")."""
    from wm_kernel.instruments.diff import first_change

    def composed(*sections):
        c = SystemPromptComposer()
        c.set_base_prompt("You help.")
        for name, text in sections:
            c.add_section(name, text, True, "T")
        return c.compose()

    same = first_change(
        composed(("behavioral_directives", "alpha one")), composed(("behavioral_directives", "alpha two"))
    )
    assert str(same) == f"first change: cached_content at character {same.offset}, in behavioral_directives (T)"
    assert same.offset > len("You help.")
    other = first_change(composed(("behavioral_directives", "alpha")), composed(("conversation_manifest", "beta")))
    owners = "behavioral_directives (T) before, conversation_manifest (T) now"
    assert str(other) == f"first change: cached_content at character {other.offset}: {owners}"
    ended = first_change(composed(("behavioral_directives", "alpha")), composed())
    assert str(ended).endswith(": (composer) before, (end of text) now")  # the separator before it


class _Walked(list):  # type: ignore[type-arg]
    """A list of items that counts the times it is walked item by item."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        _Walked.walks += 1
        return super().__iter__()


def test_the_first_change_of_two_long_conversations_is_found_without_walking_their_items():
    """Two prompts of a conversation share their items: the first change is found by comparing
    the two lists, not by naming and copying every item of both (issue 44 item 6: a summary()
    did that per turn, the square of the log); items one prompt lacks read as empty."""
    from wm_kernel.instruments.diff import first_change

    items = [f"message {i}" for i in range(10_000)]
    old = {"cached_content": "sys", "conversation_prefix_items": _Walked(items)}
    new = {"cached_content": "sys", "conversation_prefix_items": _Walked([*items[:-1], "message 9999!", "next"])}
    _Walked.walks = 0
    change = first_change(old, new)
    assert (change.key, change.offset) == ("conversation_prefix_items[9999]", len("message 9999"))
    assert _Walked.walks == 0
    grown = {"cached_content": "sys", "conversation_prefix_items": _Walked([*items, "", "", "reply"])}
    change = first_change(old, grown)
    assert (change.key, change.offset) == ("conversation_prefix_items[10002]", 0)
    assert first_change(old, {**grown, "conversation_prefix_items": [*items, "", ""]}) is None
    shrunk = first_change(grown, old)
    assert (shrunk.key, shrunk.offset, shrunk.new, shrunk.old) == ("conversation_prefix_items[10002]", 0, None, None)
    # a plain dict's items as tuples compare as their lists; then the post-history items, the centre
    assert first_change({"conversation_prefix_items": ("a",)}, {"conversation_prefix_items": ["a"]}) is None
    assert (
        first_change({"post_history_items": ["a"]}, {"post_history_items": ["a", "b"]}).key == "post_history_items[1]"
    )
    assert first_change({"notification_center": "x"}, {"notification_center": "xy"}).offset == 1
    assert _Walked.walks == 0
