"""No HTML this project shows can be typeset as math: JupyterLab's MathJax reads text between two
``$`` as TeX. Every view is wrapped in a ``<div>`` of the classes MathJax skips, and no ``$`` is
left in a text run (each is ``&#36;`` in a span of those classes; in SVG, a plain ``&#36;``).
The browser test (tests/browser/test_contrast.py) checks the same in JupyterLab itself."""

from __future__ import annotations

import html
import re

import pytest

from wm_kernel.cachesim.advice import advise
from wm_kernel.cachesim.report import cache_report
from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.display import render
from wm_kernel.display.budget_bars import budget_bars
from wm_kernel.display.cache_view import CacheView
from wm_kernel.display.tables import Table
from wm_kernel.session import Session
from wm_kernel.utils.htmltext import NO_MATH_CLASS, dollars_as_text, no_math

PRICES = "Quote prices as $5 to $10, or $$x$$ and \\(y\\)."


def session() -> Session:
    s = Session(
        base_prompt="You help {first_name}. " + PRICES,
        profile=Profile(first_name="Ada", timezone="Europe/London"),
        clock=ManualClock("2026-11-30T09:00:00+00:00"),
    )
    s.trinket("PeanutGalleryTrinket").add_guidance("concern", PRICES, ttl=3)
    s.compose()
    s.advance_turn(2)
    return s


def text_runs(page: str) -> list[str]:
    """The text between tags, outside SVG (where the spans are not allowed)."""
    page = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)
    return [run for run in re.split(r"<[^>]*>", page) if run]


def views() -> dict[str, str]:
    s = session()
    p = s.composed
    simulation = s.cache_simulation()
    return {
        "compose": render.composed_mimebundle(p, view="html")["text/html"],
        "compose --section": render.PromptView(p, names=["peanutgallery_guidance"])._repr_mimebundle_()["text/html"],
        "compose --raw": render.PromptText(PRICES)._repr_mimebundle_()["text/html"],
        "compose --blame": render.BlameView(p)._repr_mimebundle_()["text/html"],
        "compose --diff": s.diff(0)._repr_html_(),
        "turn": render.TurnReport(1, 2, [{"turn": 2, "trinket": "X", "label": PRICES}])._repr_html_(),
        "table": Table({"text": [PRICES]})._repr_html_(),
        "simulation": simulation._repr_html_(),
        "advice": advise(simulation)._repr_html_(),
        "cache": CacheView(simulation, advise(simulation))._repr_html_(),
        "cache report": cache_report(s)._repr_html_(),
        "budget bars": budget_bars(p)._repr_html_(),
    }


@pytest.mark.parametrize("name", list(views()))
def test_every_view_is_kept_from_the_typesetter(name: str) -> None:
    page = views()[name]
    assert page.startswith(f'<div class="{NO_MATH_CLASS}">')
    assert [run for run in text_runs(page) if "$" in run] == []
    assert "&#36;" in page or name == "budget bars"  # the dollars are there, as text


def test_the_amounts_read_as_written_once_the_markup_is_read() -> None:
    page = render.PromptText(PRICES)._repr_mimebundle_()["text/html"]
    assert html.unescape(re.sub(r"<[^>]*>", "", page)) == PRICES


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ("no dollars", "no dollars"),
        ("$5", f'<span class="{NO_MATH_CLASS}">&#36;</span>5'),
        ('<a title="$5">$</a>', f'<a title="$5"><span class="{NO_MATH_CLASS}">&#36;</span></a>'),
        (
            "<svg><text>$5</text><title>$6</title></svg>$7",
            f'<svg><text>&#36;5</text><title>&#36;6</title></svg><span class="{NO_MATH_CLASS}">&#36;</span>7',
        ),
        ("<div><svg/>$1</div>", f'<div><svg/><span class="{NO_MATH_CLASS}">&#36;</span>1</div>'),
    ],
)
def test_dollars_as_text(fragment: str, expected: str) -> None:
    assert dollars_as_text(fragment) == expected
    assert no_math(fragment) == f'<div class="{NO_MATH_CLASS}">{expected}</div>'


def test_the_dashboards_html_keeps_dollars_as_text() -> None:
    pytest.importorskip("anywidget")
    from wm_kernel.jupyter.dashboard.widget import Dashboard

    s = session()
    d = Dashboard(s)
    d.tab = "cache"  # drawn when open
    page = d.tab_html
    assert "input cost" in page and "&#36;" in page
    assert [run for run in text_runs(page) if "$" in run] == []
    # the view a host without widgets shows is typeset like any HTML output: no math there either
    d.report(ValueError("costs $1 and $2"))
    snapshot = d.snapshot_html()
    assert "costs" in snapshot or "input cost" in snapshot
    assert [run for run in text_runs(snapshot) if "$" in run] == []
    d.close()
