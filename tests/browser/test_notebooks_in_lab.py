"""Each shipped notebook, opened in JupyterLab in Chromium and run with "Run All Cells", as a user
sees it: no error output, the dashboard drawn (not "Error displaying widget"), the turn slider
working from the keyboard, hostile text shown as text, the dark theme readable.

Assertions read structure and numbers (countdowns, counts), not the wording of trinket output,
which follows the original system's and may change.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from browser.conftest import SCREENSHOTS, Lab, shipped_notebooks

pytestmark = [pytest.mark.slow, pytest.mark.browser]

# generous: a loaded CI machine runs a notebook's cells several times slower than a laptop
RUN_TIMEOUT_MS = 240_000
LOAD_TIMEOUT_MS = 120_000


def open_notebook(page: Any, lab: Lab, name: str) -> None:
    """Open ``name`` in a reset workspace and wait until its kernel is idle."""
    page.goto(f"{lab.url}/lab/tree/{name}?reset&token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=LOAD_TIMEOUT_MS)
    # JupyterLab may ask which kernel to start (the notebook's own is preselected): poll for
    # that dialog or the idle kernel, whichever comes first
    select = page.locator(".jp-Dialog button", has_text="Select")
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    while not page.evaluate(_READY):
        if select.count():
            select.first.click()
        if time.monotonic() > deadline:
            raise AssertionError(f"the kernel of {name} did not become idle")
        page.wait_for_timeout(250)


# the notebook in view is loaded, its cells drawn and its kernel idle
_READY = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    return !!(panel && panel.context && panel.context.isReady && panel.content
        && panel.content.widgets.length === panel.content.model.cells.length
        && panel.node.querySelector('.jp-Cell')
        && panel.sessionContext.session?.kernel?.status === 'idle');
}"""


def command(page: Any, name: str) -> None:
    """Run the JupyterLab command ``name`` on the notebook in view and wait for it to finish."""
    page.evaluate("name => window.jupyterapp.commands.execute(name)", name)


# every output cell's prompt carries an execution count; no widget view is still loading
_RAN_ALL = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const prompts = [...panel.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
    const views = [...panel.node.querySelectorAll(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.widget-view+json"]')];
    return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent))
        && panel.sessionContext.session?.kernel?.status === 'idle'
        && views.every(v => v.querySelector('.jupyter-widgets, .wm-dash')
                            || /Error displaying widget/.test(v.textContent));
}"""


def run_all(page: Any) -> None:
    """Clear the saved outputs, run all cells, then wait until every code cell has an execution
    count, the kernel is idle and every widget view is drawn."""
    command(page, "notebook:clear-all-cell-outputs")
    page.wait_for_function(
        """() => ![...window.jupyterapp.shell.currentWidget.node.querySelectorAll(
                '.jp-CodeCell .jp-InputPrompt')].some(p => /\\[\\d+\\]/.test(p.textContent))""",
        timeout=LOAD_TIMEOUT_MS,
    )
    command(page, "notebook:run-all-cells")
    page.wait_for_function(_RAN_ALL, timeout=RUN_TIMEOUT_MS)


def error_outputs(page: Any) -> list[str]:
    """The text of every error or stderr output, and every widget that failed to display."""
    return page.evaluate(
        """() => [...document.querySelectorAll(
                '[data-mime-type="application/vnd.jupyter.stderr"], .jp-OutputArea-output')]
            .filter(e => e.matches('[data-mime-type="application/vnd.jupyter.stderr"]')
                      || /Error displaying widget|Loading widget/.test(e.textContent))
            .map(e => e.textContent.slice(0, 500))"""
    )


def screenshot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}.png"), full_page=True)


def typeset(page: Any) -> list[str]:
    """The text around everything MathJax typeset on the page: a shipped notebook holds no math,
    so a pair of dollar amounts read as TeX shows here (JupyterLab 4.6 typesets "\\$5 to \\$10")."""
    return page.evaluate(
        """() => [...document.querySelectorAll('mjx-container, .MathJax')].map(
            e => (e.closest('.jp-RenderedMarkdown, .jp-RenderedHTMLCommon') || e).textContent.slice(0, 120))"""
    )


@pytest.mark.parametrize("name", shipped_notebooks())
def test_notebook_runs_clean_in_the_browser(page: Any, lab: Lab, name: str) -> None:
    open_notebook(page, lab, name)
    run_all(page)
    screenshot(page, name)
    assert error_outputs(page) == []
    assert page.dialogs == []
    assert typeset(page) == []  # the markdown, typeset as it opened, and the outputs of the run


def dashboard(page: Any) -> Any:
    """The (last) dashboard on the page."""
    return page.locator(".wm-dash").last


def tab(dash: Any, title: str) -> Any:
    """The dashboard's tab button titled ``title``."""
    return dash.get_by_role("tab", name=title, exact=True)


def bars(page: Any) -> list[tuple[str, str, str]]:
    """(item, state, turns remaining) of every timeline bar the browser draws."""
    return [
        tuple(bar)
        for bar in page.evaluate(
            """() => [...document.querySelectorAll('svg.wm-timeline rect.wm-bar')].map(
            b => [b.dataset.item, b.dataset.state, b.dataset.remaining])"""
        )
    ]


def eventually(page: Any, read: Callable[[], Any], expected: Any, timeout_s: float = 60) -> Any:
    """``read()`` once it returns ``expected``, or its last answer after ``timeout_s`` (for the
    assertion to show): a slider move reaches the page as several widget updates, one at a time."""
    deadline = time.monotonic() + timeout_s
    while (value := read()) != expected and time.monotonic() < deadline:
        page.wait_for_timeout(100)  # polling interval, not a wait for the answer
    return value


def guidance_countdowns(dash: Any) -> list[int]:
    """The ``expires_in`` of every guidance entry the notification tab's peanut gallery panel
    shows, in order."""
    tab(dash, "notification").click()
    text = dash.locator("pre", has_text="mira:peanutgallery").last.text_content() or ""
    tab(dash, "overview").click()
    return [int(n) for n in re.findall(r'expires_in="(\d+)_turns"', text)]


def test_ttl_dashboard_renders_and_the_slider_moves_from_the_keyboard(page: Any, lab: Lab) -> None:
    open_notebook(page, lab, "02_ttl_expiry.ipynb")
    run_all(page)
    dash = dashboard(page)
    dash.scroll_into_view_if_needed()
    assert dash.locator("svg.wm-timeline rect.wm-bar").count() == 4  # the timeline is drawn
    assert dash.locator("line.wm-now").count() == 1  # the turn on view marked
    handle = dash.get_by_role("slider", name="turn on view")
    handle.focus()
    handle.press("Home")  # back to turn 0
    # the fourth entry is added after the collapse at turn 6: not yet there
    at_start = [
        ("guidance-1", "live", "0"),
        ("guidance-2", "live", "2"),
        ("guidance-3", "live", "5"),
        ("guidance-4", "future", "7"),
    ]
    assert eventually(page, lambda: bars(page), at_start) == at_start
    assert eventually(page, lambda: guidance_countdowns(dash), [0, 2, 5]) == [0, 2, 5]
    handle.focus()
    handle.press("ArrowRight")  # turn 1
    # the ttl=0 entry expired and left the panel; the others counted down by one
    at_next = [
        ("guidance-1", "expired", "0"),
        ("guidance-2", "live", "1"),
        ("guidance-3", "live", "4"),
        ("guidance-4", "future", "6"),
    ]
    assert eventually(page, lambda: bars(page), at_next) == at_next
    assert eventually(page, lambda: guidance_countdowns(dash), [1, 4]) == [1, 4]
    dash.screenshot(path=str(SCREENSHOTS / "02_ttl_expiry_dashboard.png"))
    assert error_outputs(page) == [] and page.dialogs == []


HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def test_hostile_guidance_shows_as_text_and_fires_no_dialog(page: Any, lab: Lab) -> None:
    import nbformat

    cells = [
        "%load_ext wm_kernel\n%wm_session --clock 2026-11-30T09:00:00+00:00 "
        "--trinkets TimeManager,PeanutGalleryTrinket",
        "import wm_kernel\n"
        "s = wm_kernel.current_session()\n"
        f"s.trinket('PeanutGalleryTrinket').add_guidance('concern', {HOSTILE!r}, ttl=3)\n"
        "wm_kernel.dashboard(s)",
        "%trinket peanutgallery add concern '<b onmouseover=alert(3)>hover me</b>' --ttl 1",
        "%compose",
        "%trinkets",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, lab.root / "hostile.ipynb")
    open_notebook(page, lab, "hostile.ipynb")
    run_all(page)
    dash = dashboard(page)
    tab(dash, "notification").click()
    page.locator("pre", has_text="hover me").first.hover()
    screenshot(page, "hostile")
    assert page.dialogs == []
    outputs = page.locator(".jp-OutputArea")
    assert outputs.locator("img[src='x'], b[onmouseover]").count() == 0
    assert outputs.get_by_text("onerror=alert(1)", exact=False).count() >= 2  # shown as text
    assert error_outputs(page) == []


def _contrast_script() -> str:
    return """(el) => {
        const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
        const lum = ([r, g, b]) => {
            const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
            return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
        };
        const style = getComputedStyle(el);
        const fg = rgb(el instanceof SVGElement ? style.fill : style.color);
        let node = el, bg = null;
        while (node && node.nodeType === 1) {
            const c = rgb(getComputedStyle(node).backgroundColor);
            if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) { bg = c.slice(0, 3); break; }
            node = node.parentElement;
        }
        bg = bg || [255, 255, 255];
        const [a, b] = [lum(fg.slice(0, 3)), lum(bg)].sort((x, y) => y - x);
        return (a + 0.05) / (b + 0.05);
    }"""


def test_saved_dashboard_shows_without_running_and_reads_in_the_dark_theme(page: Any, lab: Lab) -> None:
    lab.set_theme("JupyterLab Dark")
    try:
        open_notebook(page, lab, "02_ttl_expiry.ipynb")
        page.wait_for_selector("svg.wm-timeline", timeout=30_000)  # from the saved widget state
        assert page.evaluate("() => document.body.dataset.jpThemeLight") == "false"
        dash = dashboard(page)
        dash.scroll_into_view_if_needed()
        texts = [
            dash.locator("svg.wm-timeline text").first,
            dash.locator(".wm-overview b").first,
            dash.locator(".wm-banner div").first,
        ]
        ratios = [text.evaluate(_contrast_script()) for text in texts]
        tab(dash, "notification").click()  # a tab's content is drawn when it is opened
        ratios.append(dash.locator("pre").first.evaluate(_contrast_script()))
        assert all(ratio >= 4.5 for ratio in ratios), ratios
        dash.screenshot(path=str(SCREENSHOTS / "02_ttl_expiry_dark.png"))
        assert error_outputs(page) == []
    finally:
        lab.set_theme("JupyterLab Light")


def slider_turn(dash: Any) -> str:
    """The turn the dashboard's slider reads out ("3 / 8": the turn on view of the latest)."""
    return (dash.locator(".wm-reading").first.text_content() or "").split("/")[0].strip()


def banner(dash: Any) -> str:
    return " ".join((dash.locator(".wm-banner").first.text_content() or "").split())


def test_end_returns_to_the_latest_turn_and_labelled_stop_pauses_where_it_is(page: Any, lab: Lab) -> None:
    open_notebook(page, lab, "02_ttl_expiry.ipynb")
    run_all(page)
    dash = dashboard(page)
    dash.scroll_into_view_if_needed()
    latest = slider_turn(dash)
    assert latest == "8"
    handle = dash.get_by_role("slider", name="turn on view")
    handle.focus()
    handle.press("Home")
    assert eventually(page, lambda: slider_turn(dash), "0") == "0"
    assert eventually(page, lambda: banner(dash).startswith("viewing turn 0"), True)
    handle.focus()
    handle.press("End")  # back to the latest turn: live
    assert eventually(page, lambda: slider_turn(dash), latest) == latest
    assert (
        eventually(page, lambda: banner(dash), "live · turn 8 · segment 2 (segment turn 2)")
        == "live · turn 8 · segment 2 (segment turn 2)"
    )
    # the labelled buttons (their icon is a glyph the accessible name also holds: found by title)
    play = dash.locator("button[title^='Replay the recorded turns, one a second']")
    stop = dash.locator("button[title^='Stop replaying: stay on the turn shown']")
    assert [(play.text_content() or "").strip(), (stop.text_content() or "").strip()] == ["▶ Play", "■ Stop"]
    play.click()  # replays from turn 0, a turn a second
    assert eventually(page, lambda: slider_turn(dash) in ("1", "2"), True)
    stop.click()  # stop: pauses where it is
    page.wait_for_timeout(1500)  # no tick comes after a stop
    stopped = slider_turn(dash)
    assert stopped in ("1", "2", "3")
    assert eventually(page, lambda: banner(dash).startswith(f"viewing turn {stopped}"), True)
    page.wait_for_timeout(1200)
    assert slider_turn(dash) == stopped
    assert error_outputs(page) == [] and page.dialogs == []


# what a dashboard without a kernel shows: (the offline line's text, whether it is visible), the
# controls and "disconnected" marks visible, and the banner's head (live or not)
_SAVED_VIEW = """(dash) => {
    const shown = el => !!el && getComputedStyle(el).display !== 'none' && el.offsetParent !== null;
    const view = dash.parentElement;  // the widget's own element, which the widget manager marks
    const line = dash.querySelector('.wm-offline');
    const marks = [view, ...dash.querySelectorAll('.jupyter-widgets-disconnected')].filter(
        el => el.classList.contains('jupyter-widgets-disconnected')
              && getComputedStyle(el, '::before').display !== 'none');
    return {
        disconnected: view.classList.contains('jupyter-widgets-disconnected'),
        line: line ? line.textContent.trim() : null, line_shown: shown(line),
        controls_shown: [...dash.querySelectorAll('.wm-controls')].filter(shown).length,
        live_head_shown: shown(dash.querySelector('.wm-live')),
        marks: marks.length,
    };
}"""


def test_a_saved_dashboard_opens_tidy_with_one_line_saying_how_to_bring_it_to_life(page: Any, lab: Lab) -> None:
    open_notebook(page, lab, "02_ttl_expiry.ipynb")
    page.wait_for_selector("svg.wm-timeline", timeout=30_000)  # from the saved widget state
    dash = dashboard(page)
    dash.scroll_into_view_if_needed()
    view = dash.evaluate(_SAVED_VIEW)
    assert view == {
        "disconnected": True,
        "line": "a saved view: run the notebook's cells to bring this dashboard to life",
        "line_shown": True,
        "controls_shown": 0,
        "live_head_shown": False,
        "marks": 0,
    }
    # the banner still says which turn the saved view shows
    assert "turn 8 · segment 2 (segment turn 2)" in banner(dash)
    dash.screenshot(path=str(SCREENSHOTS / "02_ttl_expiry_saved.png"))
    # run, the same dashboard is live: the line and the marks go, the controls come
    run_all(page)
    dash = dashboard(page)
    live = eventually(page, lambda: dash.evaluate(_SAVED_VIEW)["controls_shown"], 2)
    assert live == 2
    view = dash.evaluate(_SAVED_VIEW)
    assert (view["disconnected"], view["line_shown"], view["live_head_shown"]) == (False, False, True)
    assert error_outputs(page) == [] and page.dialogs == []


def test_page_up_and_page_down_stay_within_the_turns(page: Any, lab: Lab) -> None:
    open_notebook(page, lab, "02_ttl_expiry.ipynb")
    run_all(page)
    dash = dashboard(page)
    dash.scroll_into_view_if_needed()
    handle = dash.get_by_role("slider", name="turn on view")
    assert handle.get_attribute("aria-label") == "turn on view"
    handle.focus()
    handle.press("PageUp")  # at the latest turn already: stays there
    assert eventually(page, lambda: slider_turn(dash), "8") == "8"
    for _ in range(12):  # past the start: stops at turn 0
        handle.press("PageDown")
    assert eventually(page, lambda: slider_turn(dash), "0") == "0"
    assert eventually(page, lambda: banner(dash).startswith("viewing turn 0"), True)
    handle.press("PageUp")
    assert eventually(page, lambda: slider_turn(dash), "1") == "1"
    assert error_outputs(page) == [] and page.dialogs == []


def test_a_notebook_saved_in_lab_keeps_its_dashboard_for_the_next_opening(page: Any, lab: Lab) -> None:
    # JupyterLab saves no widget state unless told (jupyterlab-manager's saveState is false by
    # default), and then a reopened notebook shows "Error displaying widget" where the dashboard
    # was; make's install writes the setting into the virtualenv's JupyterLab
    # (tools/lab_settings.py), which this JupyterLab reads
    import json

    source = json.loads((lab.root / "02_ttl_expiry.ipynb").read_text("utf-8"))
    source["metadata"].pop("widgets", None)
    name = "02_saved_here.ipynb"
    (lab.root / name).write_text(json.dumps(source), "utf-8")
    open_notebook(page, lab, name)
    run_all(page)
    command(page, "docmanager:save")
    deadline = time.monotonic() + 60
    while not (saved := json.loads((lab.root / name).read_text("utf-8"))["metadata"].get("widgets")):
        assert time.monotonic() < deadline, "JupyterLab saved the notebook without its widget state"
        page.wait_for_timeout(250)  # polling interval, not a wait for the answer
    state = saved["application/vnd.jupyter.widget-state+json"]["state"]
    shown = [
        output["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        for cell in json.loads((lab.root / name).read_text("utf-8"))["cells"]
        for output in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in output.get("data", {})
    ]
    assert shown and all(model in state for model in shown)
    # opened again with a new kernel that runs nothing: the saved view, with its line
    lab.shutdown_kernels()
    open_notebook(page, lab, name)
    page.wait_for_selector("svg.wm-timeline", timeout=30_000)
    view = dashboard(page).evaluate(_SAVED_VIEW)
    assert view["line"] == "a saved view: run the notebook's cells to bring this dashboard to life"
    assert error_outputs(page) == []
