"""No dollar amount of a shipped notebook is typeset as math: JupyterLab reads text between two ``$``
in markdown and in HTML outputs as TeX. In markdown no ``$`` is written outside code, not even ``\\$``:
JupyterLab 4.6's markdown parser turns ``\\$`` into a plain ``$`` before MathJax reads the cell (seen
in Chromium: "cost \\$0.0168 instead of \\$0.0274" showed as "cost 0.0168insteadof0.0274" in italics),
so a dollar is written ``<span>&#36;</span>``, which every renderer shows as "$" and MathJax never
pairs (a tag ends its text run); no text run of an HTML output holds two ``$`` unless the view is
wrapped in the classes MathJax skips (``wm_kernel.utils.htmltext.no_math``; the kit's own views are,
tests/display/test_view_registry.py). tests/browser/test_notebooks_in_lab.py checks the page itself."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from wm_kernel.utils.htmltext import NO_MATH_CLASS

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [
    ROOT / p
    for p in tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]["ini_options"]["testpaths"]
    if p.endswith(".ipynb")
]
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_BARE_DOLLAR = re.compile(r"(?<!\\)\$")
#: the way a markdown cell writes a dollar (a typesetter never pairs it)
MARKDOWN_DOLLAR = "<span>&#36;</span>"


def bare_dollars(markdown: str) -> list[str]:
    """The lines of ``markdown`` with a ``$`` outside code, escaped or not (JupyterLab unescapes
    ``\\$`` before it typesets): a dollar is written :data:`MARKDOWN_DOLLAR`.

    >>> bare_dollars("costs <span>&#36;</span>5, or `$x`")
    []
    >>> bare_dollars("$0.0168 instead of $0.0274")
    ['$0.0168 instead of $0.0274']
    >>> bare_dollars("cost \\\\$0.0168 instead of \\\\$0.0274")
    ['cost \\\\$0.0168 instead of \\\\$0.0274']
    """
    text = _CODE.sub("", markdown)
    return [line for line in text.splitlines() if "$" in line]


def html_dollars(page: str) -> list[str]:
    """The text runs of an HTML output holding two ``$`` a typesetter would pair (math never spans
    a tag: a ``$`` alone in a table cell is text)."""
    if f'class="{NO_MATH_CLASS}"' in page.partition(">")[0] + ">":
        return []  # the whole view is one MathJax skips
    outside_svg = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)
    return [run for run in re.split(r"<[^>]*>", outside_svg) if len(_BARE_DOLLAR.findall(run)) >= 2]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_dollar_amount_is_typeset_as_math(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    found = []
    for number, cell in enumerate(notebook.cells, 1):
        if cell.cell_type == "markdown":
            found += [f"cell {number} (markdown): {line}" for line in bare_dollars(cell.source)]
        for output in cell.get("outputs", []):
            page = output.get("data", {}).get("text/html")
            if page:
                found += [
                    f"cell {number} (HTML output): {run.strip()[:80]}"
                    for run in html_dollars("".join(page) if isinstance(page, list) else page)
                ]
    assert found == []
