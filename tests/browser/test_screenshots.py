"""The dashboard as it looks, compared with reference screenshots committed in the repository:
in JupyterLab and in a headless marimo server (both started here on loopback), light and dark, in
Debian's Chromium.

A screenshot matches its reference when both have the same size and at most ``TOLERANCE`` of their
pixels differ by more than ``THRESHOLD`` in a colour channel (font hinting moves a few pixels,
never a panel). When one does not match, the test fails naming the share that differs, and saves
the screenshot and a diff image (the reference, faded, with every differing pixel red) to
``artifacts/screenshots/compared/``.

To accept a new look, write the references again and commit them:

    WM_UPDATE_SCREENSHOTS=1 .venv/bin/python -m pytest tests/browser/test_screenshots.py -p no:cacheprovider

(``make test`` never writes them: without the variable a missing reference is a failure.)
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser.conftest import ROOT, SCREENSHOTS, Lab, free_port, serving
from browser.test_notebooks_in_lab import dashboard, eventually, open_notebook, run_all

REFERENCES = Path(__file__).with_name("screenshots")
COMPARED = SCREENSHOTS / "compared"
#: A pixel differs when a colour channel moves by more than this (of 255).
THRESHOLD = 48
#: The share of pixels that may differ.
TOLERANCE = 0.01
UPDATE = os.environ.get("WM_UPDATE_SCREENSHOTS") == "1"


def compare(actual: bytes, name: str) -> None:
    """Compare the PNG ``actual`` with the reference ``name``.png (or write it, when updating)."""
    from io import BytesIO

    from PIL import Image, ImageChops

    reference = REFERENCES / f"{name}.png"
    if UPDATE:
        REFERENCES.mkdir(parents=True, exist_ok=True)
        reference.write_bytes(actual)
        return
    COMPARED.mkdir(parents=True, exist_ok=True)
    (COMPARED / f"{name}.png").write_bytes(actual)
    if not reference.exists():
        pytest.fail(
            f"no reference {reference.relative_to(ROOT)}: write it with WM_UPDATE_SCREENSHOTS=1 (see this module)"
        )
    shown = Image.open(BytesIO(actual)).convert("RGB")
    expected = Image.open(reference).convert("RGB")
    if shown.size != expected.size:
        pytest.fail(
            f"{name}: {shown.size[0]}x{shown.size[1]} px, the reference is {expected.size[0]}x{expected.size[1]}"
        )
    differs = ImageChops.difference(shown, expected).point(lambda v: 255 if v > THRESHOLD else 0).convert("L")
    mask = differs.point(lambda v: 255 if v else 0)
    count = mask.histogram()[255]
    share = count / (shown.size[0] * shown.size[1])
    if share > TOLERANCE:
        faded = Image.blend(expected, Image.new("RGB", expected.size, "white"), 0.7)
        faded.paste(Image.new("RGB", expected.size, (230, 0, 0)), mask=mask)
        faded.save(COMPARED / f"{name}.diff.png")
        pytest.fail(
            f"{name}: {share:.2%} of the pixels differ (tolerance {TOLERANCE:.0%}); the screenshot and the diff "
            f"are in {COMPARED}"
        )


def test_a_screenshot_that_differs_fails_and_leaves_its_diff(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from io import BytesIO

    from PIL import Image, ImageDraw

    monkeypatch.setattr(sys.modules[__name__], "REFERENCES", tmp_path / "references")
    monkeypatch.setattr(sys.modules[__name__], "COMPARED", tmp_path / "compared")
    monkeypatch.setattr(sys.modules[__name__], "UPDATE", False)
    (tmp_path / "references").mkdir()
    picture = Image.new("RGB", (200, 100), "white")
    picture.save(tmp_path / "references" / "board.png")

    def png(image: Any) -> bytes:
        out = BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()

    nudged = picture.copy()
    ImageDraw.Draw(nudged).rectangle((0, 0, 9, 1), fill="black")  # 20 px: 0.1%, within the tolerance
    compare(png(nudged), "board")
    moved = picture.copy()
    ImageDraw.Draw(moved).rectangle((0, 0, 49, 9), fill="black")  # 500 px: 2.5%
    with pytest.raises(pytest.fail.Exception, match=r"board: 2.50% of the pixels differ \(tolerance 1%\)"):
        compare(png(moved), "board")
    diff = Image.open(tmp_path / "compared" / "board.diff.png").convert("RGB")
    assert diff.getpixel((10, 5)) == (230, 0, 0) and diff.getpixel((100, 50)) != (230, 0, 0)
    with pytest.raises(pytest.fail.Exception, match=r"board: 100x100 px, the reference is 200x100"):
        compare(png(Image.new("RGB", (100, 100), "white")), "board")


def still(page: Any) -> None:
    """Let the page settle: the pointer away from the dashboard, no focus, the next frames drawn."""
    page.mouse.move(0, 0)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.wait_for_timeout(600)


# -- JupyterLab ---------------------------------------------------------------------------------------
SESSION = """import wm_kernel
from trinkets.peanutgallery_trinket import PeanutGalleryTrinket
s = wm_kernel.Session(
    base_prompt="You help {first_name}.",
    profile=wm_kernel.Profile(first_name="Ada", timezone="Europe/London"),
    clock=wm_kernel.ManualClock("2026-11-30T09:00:00+00:00"),
    trinkets=[PeanutGalleryTrinket],
)
g = s.trinket("PeanutGalleryTrinket")
g.add_guidance("concern", "Confirm the budget before booking.", ttl=2)
g.add_guidance("coaching", "Ask one question at a time.", ttl=5)
s.compose()
s.advance_turn(3)
wm_kernel.dashboard(s)"""


@pytest.fixture(scope="module")
def lab_notebook(lab: Lab) -> str:
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SESSION)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, lab.root / "screenshots.ipynb")
    return "screenshots.ipynb"


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.slow  # the comparison's own test above needs neither a browser nor time
@pytest.mark.browser
def test_the_dashboard_in_jupyterlab_looks_as_its_reference(page: Any, lab: Lab, lab_notebook: str, theme: str) -> None:
    lab.set_theme("JupyterLab Dark" if theme == "dark" else "JupyterLab Light")
    try:
        open_notebook(page, lab, lab_notebook)
        run_all(page)
        dash = dashboard(page)
        banner = dash.locator(".wm-banner")
        assert eventually(
            page, lambda: " ".join((banner.text_content() or "").split()).startswith("live · turn 3"), True
        )
        dash.scroll_into_view_if_needed()
        still(page)
        compare(dash.screenshot(), f"jupyterlab_{theme}")
        # a placement tab, drawn from the panels' HTML
        dash.get_by_role("tab", name="notification", exact=True).click()
        still(page)
        compare(dash.screenshot(), f"jupyterlab_{theme}_notification")
    finally:
        lab.set_theme("JupyterLab Light")


# -- marimo -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def marimo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``marimo run notebooks/marimo_tour.py`` headless on a free loopback port (the app's own
    config in a temporary folder); its URL."""
    pytest.importorskip("marimo")
    base = tmp_path_factory.mktemp("marimo")
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "XDG_CONFIG_HOME": str(base / "config"),
        "HOME": str(base),
    }
    command = [sys.executable, "-m", "marimo", "run", str(ROOT / "notebooks" / "marimo_tour.py")]
    command += ["--headless", "--host", "127.0.0.1", "--port", str(port), "--no-token", "--no-sandbox"]
    url = f"http://127.0.0.1:{port}"
    with serving(
        command,
        env,
        base,
        base / "marimo.log",
        lambda: urllib.request.urlopen(f"{url}/health", timeout=5).read(),
        "marimo",
    ):
        yield url


def reading_cell(page: Any) -> str:
    """The text of the cell that reads the dashboard's turn."""
    found = page.get_by_text("The dashboard shows turn", exact=False)
    return " ".join((found.first.text_content() or "").split()) if found.count() else ""


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.slow  # the comparison's own test above needs neither a browser nor time
@pytest.mark.browser
def test_the_dashboard_in_marimo_looks_as_its_reference_and_moves_the_reading_cell(
    browser: Any, marimo_server: str, theme: str
) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=theme)
    page = context.new_page()
    try:
        page.goto(f"{marimo_server}/?theme={theme}")
        dash = page.locator(".wm-dash").first
        dash.wait_for(timeout=90_000)
        assert eventually(page, lambda: reading_cell(page).startswith("The dashboard shows turn 6 of 6"), True)
        assert page.evaluate("() => document.body.classList.contains('dark')") is (theme == "dark")
        assert ("wm-dark" in (dash.get_attribute("class") or "")) is (theme == "dark")
        dash.scroll_into_view_if_needed()
        still(page)
        compare(dash.screenshot(), f"marimo_{theme}")
        # the slider moves the turn on view: the cell reading it runs again (marimo's reactivity)
        slider = dash.get_by_role("slider", name="turn on view")
        slider.focus()
        slider.press("Home")
        expected = "The dashboard shows turn 0 of 6"
        assert eventually(page, lambda: reading_cell(page)[: len(expected)], expected) == expected
        assert eventually(
            page,
            lambda: " ".join((dash.locator(".wm-banner").text_content() or "").split())[:21],
            ("viewing turn 0 (read-"),
        )
    finally:
        context.close()
