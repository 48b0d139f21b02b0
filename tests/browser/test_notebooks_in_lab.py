"""Each shipped notebook, opened in JupyterLab in Chromium and run with "Run All Cells", as a user
sees it: no error output, the dashboard drawn (not "Error displaying widget"), the turn slider
working from the keyboard, hostile text shown as text, the dark theme readable.

Assertions read structure and numbers (countdowns, counts), not the wording of trinket output,
which follows the original system's and may change.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import SCREENSHOTS, Lab, shipped_notebooks

pytestmark = [pytest.mark.slow, pytest.mark.browser]

RUN_TIMEOUT_MS = 120_000


def open_notebook(page: Any, lab: Lab, name: str) -> None:
    """Open ``name`` in a reset workspace and wait until its kernel is idle."""
    page.goto(f"{lab.url}/lab/tree/{name}?reset&token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    # JupyterLab may ask which kernel to start; the notebook's own is preselected
    kernel_ready = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")
    select = page.locator(".jp-Dialog button", has_text="Select")
    for _ in range(120):
        if select.count():
            select.first.click()
        if kernel_ready.count():
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"the kernel of {name} did not become idle")


def menu(page: Any, top: str, item: str) -> None:
    """Click ``item`` in the menu-bar menu ``top``."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def run_all(page: Any) -> None:
    """Clear the saved outputs, Run > Run All Cells, then wait until every code cell has an
    execution count."""
    menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function(
        "() => ![...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]"
        ".some(p => /\\[\\d+\\]/.test(p.textContent))")
    menu(page, "Run", "Run All Cells")
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden)'
                + ' .jp-CodeCell .jp-InputPrompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""", timeout=RUN_TIMEOUT_MS)
    page.wait_for_timeout(500)  # widget views render after the last reply


def error_outputs(page: Any) -> list[str]:
    """The text of every error or stderr output, and every widget that failed to display."""
    return page.evaluate(
        """() => [...document.querySelectorAll(
                '[data-mime-type="application/vnd.jupyter.stderr"], .jp-OutputArea-output')]
            .filter(e => e.matches('[data-mime-type="application/vnd.jupyter.stderr"]')
                      || /Error displaying widget|Loading widget/.test(e.textContent))
            .map(e => e.textContent.slice(0, 500))""")


def screenshot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}.png"), full_page=True)


@pytest.mark.parametrize("name", shipped_notebooks())
def test_notebook_runs_clean_in_the_browser(page: Any, lab: Lab, name: str) -> None:
    open_notebook(page, lab, name)
    run_all(page)
    screenshot(page, name)
    assert error_outputs(page) == []
    assert page.dialogs == []
