"""The shipped notebooks as files: what a user sees on opening one before running anything."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [
    ROOT / p
    for p in tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]["ini_options"]["testpaths"]
    if p.endswith(".ipynb")
]


def read(name: str) -> object:
    return nbformat.read(ROOT / "notebooks" / name, as_version=4)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_names_its_kernel_as_the_kernel_does(path: Path) -> None:
    """JupyterLab rewrites a kernelspec whose display name differs from the kernel it starts, and
    marks the notebook modified the moment it opens."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    kernelspec = nbformat.read(path, as_version=4).metadata["kernelspec"]
    assert kernelspec == {"name": "python3", "display_name": spec.display_name, "language": spec.language}


def test_the_token_plot_of_notebook_08_is_a_picture() -> None:
    cells = [c for c in read("08_budgets.ipynb").cells if c.cell_type == "code"]
    assert not any("savefig" in c.source or "matplotlib.use" in c.source for c in cells)
    [plot] = [c for c in cells if "plot_tokens(tight)" in c.source]
    assert [o.output_type for o in plot.outputs] == ["display_data"]
    assert "image/png" in plot.outputs[0].data
    # the picture is not compared (pixels vary with the fonts); the axes' words are
    assert plot.source.startswith("# NBVAL_IGNORE_OUTPUT\n")
    [words] = [c for c in cells if "ax.get_title()" in c.source]
    assert words.outputs[0].text == "tokens by section | tokens (tiktoken cl100k_base)\n"


def test_the_cache_magic_of_notebook_07_shows_its_coloured_table() -> None:
    [cell] = [c for c in read("07_cache_economics.ipynb").cells if c.cell_type == "code" and "%cache" in c.source]
    [shown] = [o for o in cell.outputs if o.output_type == "execute_result"]
    page = shown.data["text/html"]
    assert page.count('<tr class="wm-cache-partial"') == 39 and page.count('<tr class="wm-cache-write"') == 1
    assert "advised:" in page
