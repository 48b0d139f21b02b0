"""Every view, measured in JupyterLab's light and dark themes: text at least 4.5:1 against what is
behind it (WCAG 2 AA), and no dollar amount typeset as math.

One notebook shows every view a user meets: every entry of the kit's registry of rich views
(``wm_kernel.utils.views.RICH_VIEWS``: the composed prompt, its diff and blame map, ``%trinkets``,
``%cache``, ``%request``, ``%ask``, ``%wm_check`` and ``%%wm_check``, reconcile...), the imported
log's views and the dashboard, every tab of it. After "Run All", each text of each view is measured
in the light theme, the theme is switched in the running page (JupyterLab restyles the same
outputs) and everything is measured again. At 1440 px the reconcile table's cells wrap between
words, never inside one.

The contrast is WCAG's: relative luminances (L1 + 0.05) / (L2 + 0.05). The background of a text is
what its ancestors paint: their background colours composited from the first opaque one down (a
translucent tint lies over the page), and a translucent text colour is composited over that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from browser.conftest import SCREENSHOTS, Lab
from browser.test_notebooks_in_lab import dashboard, error_outputs, open_notebook, run_all

pytestmark = [pytest.mark.slow, pytest.mark.browser]

MINIMUM = 4.5
PRICES = "Quote prices as $5 to $10."

ROOT = Path(__file__).resolve().parents[2]


def _views() -> list[tuple[str, str]]:
    """(view name, cell source): the setup, then every view of the kit's registry
    (wm_kernel.utils.views: a view added there is measured here), the imported log's views, the
    dashboard and a control. The name is written on the cell's output area for the measurement."""
    from wm_kernel.utils.views import OTHER_VIEWS, RICH_VIEWS, VIEW_SETUP

    cells = [("setup", VIEW_SETUP[0]), ("feeds", VIEW_SETUP[1])]
    # the dashboard last of the kit's views, and measured tab by tab (dashboard_tabs)
    dashboard_cell = RICH_VIEWS["wm_kernel.jupyter.dashboard.widget:Dashboard"]
    cells += [
        (name.partition(":")[2], source.replace("{ROOT}", str(ROOT)))
        for name, source in RICH_VIEWS.items()
        if source != dashboard_cell
    ]
    cells.append(("dashboard", dashboard_cell))
    cells += [(name, source.replace("{ROOT}", str(ROOT))) for name, source in OTHER_VIEWS.items()]
    # a control: JupyterLab does typeset math in HTML outputs, so the checks below can fail
    cells.append(("control", "from IPython.display import HTML\nHTML('<div class=\"wm-control\">$x^2$</div>')"))
    return cells


VIEWS = _views()

# Every visible element holding text of its own (or an SVG text) inside ``root``: its text, its
# contrast ratio, its colour and the background it was measured against.
_MEASURE = """(root, chrome) => {
    const parse = s => {
        if (!s || s === 'none' || s === 'transparent') return [0, 0, 0, 0];
        const n = (s.match(/-?[\\d.]+(e-?\\d+)?/g) || []).map(Number);
        if (s.startsWith('color(srgb')) return [n[0] * 255, n[1] * 255, n[2] * 255, n.length > 3 ? n[3] : 1];
        return [n[0], n[1], n[2], n.length > 3 ? n[3] : 1];
    };
    const over = (top, below) => [0, 1, 2].map(i => top[3] * top[i] + (1 - top[3]) * below[i]);
    const lum = rgb => {
        const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
        return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2]);
    };
    const background = el => {
        const layers = [];
        for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
            const c = parse(getComputedStyle(node).backgroundColor);
            if (c[3] > 0) layers.push(c);
            if (c[3] >= 1) break;
        }
        let bg = [255, 255, 255];
        for (const layer of layers.reverse()) bg = over(layer, bg);
        return bg;
    };
    const owns = el => [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    const out = [];
    for (const el of root.querySelectorAll('*')) {
        const svgText = el instanceof SVGElement && (el.tagName === 'text' || el.tagName === 'tspan');
        if (el instanceof SVGElement && !svgText) continue;
        if (!owns(el) || el.closest(chrome)) continue;
        const box = el.getBoundingClientRect();
        if (box.width === 0 || box.height === 0 || !el.checkVisibility({visibilityProperty: true})) continue;
        const style = getComputedStyle(el);
        const bg = background(el);
        const fg = over(parse(svgText ? style.fill : style.color), bg);
        const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
        out.push({text: el.textContent.trim().slice(0, 60), ratio: (a + 0.05) / (b + 0.05),
                  where: [el, el.parentElement, el.parentElement?.parentElement]
                      .map(e => e && e.getAttribute('class')).join(' < '),
                  colour: svgText ? style.fill : style.color, background: bg.map(Math.round).join(',')});
    }
    return out;
}"""

_TAG_OUTPUTS = """(names) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const cells = [...panel.node.querySelectorAll('.jp-CodeCell')];
    cells.forEach((cell, i) => {
        const area = cell.querySelector('.jp-OutputArea');
        if (area) area.dataset.wmView = names[i];
    });
}"""


# What JupyterLab's theme draws, not this project: the labels of the tabs not selected and the
# headers of closed accordion items (ipywidgets' chrome, secondary text on the layout grey, 4.2-4.4:1
# in JupyterLab's own light and dark themes).
_CHROME = (".lm-TabBar-tab:not(.lm-mod-current)", ".jupyter-widget-Collapse-header")


def write_notebook(lab: Lab) -> str:
    cells = [nbformat.v4.new_code_cell(source) for _, source in VIEWS]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, lab.root / "every_view.ipynb")
    return "every_view.ipynb"


def measure(page: Any, view: str, where: Any) -> list[str]:
    """The texts of ``where`` under 4.5:1, each as one readable line."""
    return [
        f"{view}: {m['text']!r} {m['ratio']:.2f}:1 ({m['colour']} on rgb({m['background']})) in {m['where']}"
        for m in where.evaluate(_MEASURE, ", ".join(_CHROME))
        if m["ratio"] < MINIMUM
    ]


def measure_everything(page: Any, theme: str) -> tuple[list[str], int]:
    """Every view and every dashboard tab: the texts under the minimum, and how many tabs."""
    low: list[str] = []
    for view, _ in VIEWS:
        if view in ("dashboard", "control"):
            continue
        area = page.locator(f".jp-OutputArea[data-wm-view='{view}']")
        low += measure(page, f"{theme} {view}", area)
    dash = dashboard(page)
    tabs = dash.get_by_role("tab")
    for index in range(tabs.count()):
        tab = tabs.nth(index)
        label = (tab.text_content() or "").strip()
        tab.click()
        page.wait_for_timeout(300)  # the tab's widget view is laid out on selection
        low += measure(page, f"{theme} dashboard [{label}]", dash)
    tabs.first.click()
    return low, tabs.count()


def test_every_view_reads_in_the_light_and_the_dark_theme(page: Any, lab: Lab) -> None:
    name = write_notebook(lab)
    open_notebook(page, lab, name)
    run_all(page)
    page.evaluate(_TAG_OUTPUTS, [view for view, _ in VIEWS])
    assert error_outputs(page) == []
    light, tab_count = measure_everything(page, "light")
    assert tab_count >= 12  # overview, five placements, budget, cache, request, replies, trinkets, event log
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "every_view_light.png"), full_page=True)
    try:
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
        page.wait_for_timeout(500)  # the theme's stylesheet applied
        dark, _ = measure_everything(page, "dark")
        page.screenshot(path=str(SCREENSHOTS / "every_view_dark.png"), full_page=True)
    finally:
        lab.set_theme("JupyterLab Light")
    low = light + dark
    assert not low, f"{len(low)} texts under {MINIMUM}:1:\n" + "\n".join(low)


_CELL_WRAPPING = """(area) => [...area.querySelectorAll('td, th')].map(cell => {
    const style = getComputedStyle(cell);
    return [cell.textContent.trim(), style.overflowWrap, style.wordBreak];
})"""


def test_reconcile_tables_wrap_between_words_at_1440_px(page: Any, lab: Lab) -> None:
    page.set_viewport_size({"width": 1440, "height": 1000})
    name = write_notebook(lab)
    open_notebook(page, lab, name)
    run_all(page)
    page.evaluate(_TAG_OUTPUTS, [view for view, _ in VIEWS])
    cells = page.locator(".jp-OutputArea[data-wm-view='Reconciliation']").evaluate(_CELL_WRAPPING)
    texts = [text for text, _, _ in cells]
    assert len(cells) > 10 and {"turn", "cause"} <= set(texts), texts
    assert {(wrap, brk) for _, wrap, brk in cells} == {("normal", "normal")}


def test_no_dollar_amount_is_typeset_as_math(page: Any, lab: Lab) -> None:
    name = write_notebook(lab)
    open_notebook(page, lab, name)
    run_all(page)
    page.evaluate(_TAG_OUTPUTS, [view for view, _ in VIEWS])
    control = page.locator(".jp-OutputArea[data-wm-view='control']")
    control.locator("mjx-container").first.wait_for(timeout=30_000)  # the typesetter is on
    typeset = page.evaluate("""() => [...document.querySelectorAll(
            '.jp-OutputArea:not([data-wm-view="control"]) mjx-container')]
        .map(m => m.closest('.jp-OutputArea').dataset.wmView)""")
    assert typeset == []
    # the amounts read as written, in the compose view, the cache headline and the dashboard
    compose = page.locator(".jp-OutputArea[data-wm-view='ComposedPrompt']").text_content() or ""
    assert PRICES in compose and "$4 a cup" in compose
    cache = page.locator(".jp-OutputArea[data-wm-view='CacheView']").text_content() or ""
    assert "input cost $" in cache and "(without caching $" in cache
    dash = dashboard(page)
    dash.get_by_role("tab", name="cache", exact=True).click()
    page.wait_for_timeout(300)
    assert "input cost $" in (dash.text_content() or "")
    assert dash.locator("mjx-container").count() == 0
