"""No dollar amount of a shipped notebook is typeset as math: JupyterLab reads text between two ``$``
in markdown and in HTML outputs as TeX. In markdown every ``$`` outside code is written ``\\$``; no
text run of an HTML output holds two ``$`` unless the view is wrapped in the classes MathJax skips
(``wm_kernel.utils.htmltext.no_math``; the kit's own views are, tests/display/test_view_registry.py)."""

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


def bare_dollars(markdown: str) -> list[str]:
    """The lines of ``markdown`` with a ``$`` a typesetter would read (outside code, not ``\\$``).

    >>> bare_dollars("costs \\\\$5, or `$x`")
    []
    >>> bare_dollars("$0.0168 instead of $0.0274")
    ['$0.0168 instead of $0.0274']
    """
    text = _CODE.sub("", markdown)
    return [line for line in text.splitlines() if _BARE_DOLLAR.search(line)]


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
