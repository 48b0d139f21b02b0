"""The text and HTML views of a ComposedPrompt (wm_kernel.display.render)."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

from trinkets.base import EventAwareTrinket
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.composer.layout import Layout
from wm_kernel.core.prompt import ComposedPrompt, SectionRecord
from wm_kernel.display import render
from wm_kernel.session import Session
from wm_kernel.utils import style


class Note(EventAwareTrinket):
    variable_name = "note"
    text = "first <b>note</b>"

    def generate_content(self, context: dict[str, Any]) -> str:
        return self.text


class Flaky(EventAwareTrinket):
    variable_name = "flaky"
    fail = False

    def generate_content(self, context: dict[str, Any]) -> str:
        if self.fail:
            raise ValueError("store <down>")
        return "fine"


class Quiet(EventAwareTrinket):
    variable_name = "quiet"

    def generate_content(self, context: dict[str, Any]) -> str:
        return ""


def make_session() -> Session:
    layout = (
        Layout.default()
        .with_section("note", "notification")
        .with_section("flaky", "post_history")
        .with_section("quiet", "notification")
    )
    return Session(
        base_prompt="You help {first_name}.",
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
        layout=layout,
        trinkets=[Note, Flaky, Quiet],
    )


BASE = (
    "You help friend.\n\n" + "═" * 60 + "\nEverything after this delimiter is part of MIRA's "
    "scaffolding, injected to provide additional context during the reply.\n" + "═" * 60
)


@pytest.fixture(autouse=True)
def default_options():
    render.options.reset()
    yield
    render.options.reset()


def test_text_view_groups_sections_by_placement_and_lists_what_was_left_out():
    composed = make_session().compose()
    assert render.render_text(composed) == "\n".join(
        [
            "ComposedPrompt · turn 0 · 3 sections · 280 chars",
            "=== system · cached ===",
            "--- base_prompt · 259 chars ---",
            BASE,
            "=== post-history ===",
            "--- flaky · Flaky · 4 chars ---",
            "fine",
            "=== notification centre ===",
            "--- note · Note · 17 chars ---",
            "first <b>note</b>",
            "=== left out ===",
            "- quiet (Quiet): no content",
        ]
    )


def test_second_compose_marks_changed_sections_and_shows_the_failing_trinkets_error():
    s = make_session()
    s.compose()
    s.trinket("Note").text = "second <b>note</b>"
    s.trinket("Flaky").fail = True
    composed = s.compose()
    assert render.render_text(composed) == "\n".join(
        [
            "ComposedPrompt · turn 0 · 2 sections · 277 chars · changed: note · gone: flaky",
            "=== system · cached ===",
            "--- base_prompt · 259 chars ---",
            BASE,
            "=== notification centre ===",
            "--- note · Note · 18 chars · changed ---",
            "second <b>note</b>",
            "=== left out ===",
            "- flaky (Flaky): trinket failed: ValueError: store <down> (was in the previous prompt)",
            "- quiet (Quiet): no content",
        ]
    )
    page = render.render_html(composed)
    bare = unstyled(page)
    assert "<summary><code>note</code> · Note · 18 chars · <span>changed</span></summary>" in bare
    assert ("<li><code>flaky</code> · Flaky · trinket failed: <span>ValueError: store &lt;down&gt;</span>") in bare
    # the change is marked in the warning colour, the failure in the error colour of the theme
    assert f'<span style="color:{style.WARN};font-weight:bold">changed</span>' in page
    assert f'<span style="color:{style.ERROR}">ValueError' in page


def test_headline_names_new_changed_and_gone_sections_separately():
    s = make_session()
    s.trinket("Flaky").fail = True
    s.compose()
    s.trinket("Flaky").fail = False  # back: new
    s.trinket("Note").text = "other"  # changed
    s.trinket("Quiet").set_enabled(False)  # was never shown: not "gone"
    headline = render.render_text(s.compose()).splitlines()[0]
    assert headline == "ComposedPrompt · turn 0 · 3 sections · 268 chars · new: flaky · changed: note"
    s.trinket("Note").set_enabled(False)
    headline = render.render_text(s.compose()).splitlines()[0]
    assert headline == "ComposedPrompt · turn 0 · 2 sections · 263 chars · gone: note"
    assert render.render_text(s.compose()).splitlines()[0] == ("ComposedPrompt · turn 0 · 2 sections · 263 chars")


def unstyled(page: str) -> str:
    """The HTML without its style attributes: the structure a test pins (the golden snapshot below
    pins the styling once)."""
    return re.sub(r' style="[^"]*"', "", page)


def test_html_shows_prompt_text_monospaced_wrapped_and_scrolling_in_theme_colours():
    # the golden snapshot of one section of the HTML view, styling included
    page = render.render_html(make_session().compose())
    assert (
        '<details open style="margin:2px 0 2px 10px"><summary><code>flaky</code> · Flaky · '
        '4 chars</summary><pre style="white-space:pre-wrap;word-break:normal;'
        "overflow-wrap:anywhere;font-family:var(--jp-code-font-family, monospace);"
        "font-size:var(--jp-code-font-size, 13px);line-height:1.35;max-height:24em;overflow:auto;"
        "margin:2px 0 6px 14px;padding:2px 0 2px 8px;"
        'border-left:2px solid var(--jp-border-color2, #e0e0e0)">fine</pre></details>'
    ) in page
    # every colour is a theme variable with a fallback, so the dark theme stays readable
    assert (
        re.findall(r"(?:color|border-left):[^;\"]*", page)
        == ["border-left:2px solid var(--jp-border-color2, #e0e0e0)"] * 3
    )
    text_html = render.PromptText("a <b>")._repr_mimebundle_()["text/html"]
    assert unstyled(text_html) == '<div class="mathjax_ignore tex2jax_ignore"><pre>a &lt;b&gt;</pre></div>'
    assert style.CODE_FONT in text_html


def test_html_escapes_prompt_text_and_is_the_same_on_every_run():
    s = make_session()
    s.trinket("Note").text = '<img src=x onerror="alert(1)">'
    page = render.render_html(s.compose())
    assert "<img" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    again = make_session()
    again.trinket("Note").text = '<img src=x onerror="alert(1)">'
    assert render.render_html(again.compose()) == page
    assert " id=" not in page


def test_mimebundle_has_both_views_by_default_and_honours_include_exclude_and_the_view_option():
    composed = make_session().compose()
    bundle = composed._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert set(composed._repr_mimebundle_(include={"text/plain"})) == {"text/plain"}
    assert set(composed._repr_mimebundle_(exclude={"text/plain"})) == {"text/html"}
    render.options.view = "text"
    assert set(composed._repr_mimebundle_()) == {"text/plain"}
    render.options.view = "raw"
    assert composed._repr_mimebundle_()["text/plain"] == "\n\n".join(
        [
            "### system · cached\n" + BASE,
            "### post-history 1\nfine",
            "### notification centre\n" + composed["notification_center"],
        ]
    )


def test_a_very_large_section_shows_as_a_preview_with_its_full_size():
    big = "x" * 300_000
    composed = ComposedPrompt(big, sections=[SectionRecord("base_prompt", "system", big, True, None)])
    bundle = composed._repr_mimebundle_()
    note = "[preview: the first 2,000 of 300,000 characters]"
    assert bundle["text/plain"].endswith("x" * 2_000 + "\n" + note)
    assert note in bundle["text/html"]
    assert len(bundle["text/html"]) < 5_000
    text = render.PromptText(big)
    assert len(text) == 300_000 and len(text._repr_mimebundle_()["text/plain"]) < 2_100


def test_prompt_view_shows_only_the_chosen_sections_and_their_exact_text():
    composed = make_session().compose()
    view = render.PromptView(composed, names=["note"])
    assert view.text == "first <b>note</b>"
    assert repr(view) == "\n".join(
        [
            "ComposedPrompt · turn 0 · 1 section · 17 chars",
            "=== notification centre ===",
            "--- note · Note · 17 chars ---",
            "first <b>note</b>",
        ]
    )
    by_placement = render.PromptView(composed, placement="notification", placement_of=composed_layout_placement)
    assert [r.name for r in by_placement.sections] == ["note"]
    assert repr(by_placement).endswith("=== left out ===\n- quiet (Quiet): no content")


def composed_layout_placement(name: str) -> str | None:
    return make_session().layout.placement_of(name)


def test_turn_report_says_what_expired():
    report = render.TurnReport(
        3, 4, [{"turn": 4, "trinket": "PeanutGalleryTrinket", "id": "guidance-1", "label": "concern: Slow down."}]
    )
    assert repr(report) == ("Completed turns 3-4; 1 item expired:\n  turn 4: PeanutGalleryTrinket concern: Slow down.")
    assert repr(render.TurnReport(1, 1, [])) == "Completed turn 1; nothing expired."
    assert "<li>turn 4: PeanutGalleryTrinket concern: Slow down.</li>" in report._repr_html_()


@pytest.mark.slow
def test_rendering_needs_no_ipython():
    code = (
        "import sys, wm_kernel, wm_kernel.display.render\n"
        "from wm_kernel.session import Session\n"
        "Session(trinkets=[]).compose()._repr_mimebundle_()\n"
        "assert 'IPython' not in sys.modules and 'ipywidgets' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
