"""The registry of rich views (wm_kernel.utils.views.RICH_VIEWS) names every class of the kit that
shows richly in a notebook, so the browser's contrast test, which draws its list from it, cannot
leave a view out."""

from __future__ import annotations

import importlib
import pkgutil

import trinkets
import wm_kernel
from wm_kernel.utils.views import OTHER_VIEWS, RICH_VIEWS

RICH = ("_repr_html_", "_repr_mimebundle_")


def rich_classes() -> set[str]:
    """``module:QualName`` of every class defined in wm_kernel or trinkets with a rich view of its own."""
    found: set[str] = set()
    for package in (wm_kernel, trinkets):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and value.__module__ == module.__name__
                    and any(name in vars(value) for name in RICH)
                ):
                    found.add(f"{value.__module__}:{value.__qualname__}")
    return found


def test_every_class_with_a_rich_view_is_in_the_registry() -> None:
    classes = rich_classes()
    assert sorted(classes - set(RICH_VIEWS)) == [], "add these to wm_kernel.utils.views.RICH_VIEWS"
    assert sorted(set(RICH_VIEWS) - classes) == [], "these entries name no class with a rich view"
    assert len(classes) >= 18


def test_the_registry_covers_the_newer_magics() -> None:
    cells = "\n".join([*RICH_VIEWS.values(), *OTHER_VIEWS.values()])
    for magic in ("%request", "%ask", "%wm_check stability", "%%wm_check", "reconcile(", "%wm_import", "%cache"):
        assert magic in cells


def test_every_registered_view_shows_its_cell_and_no_dollar_reads_as_math() -> None:
    """Each registry cell, run in a real IPython shell after the setup cells, returns a view whose
    HTML no typesetter reads as math (the browser test measures the same cells' contrast)."""
    import re
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

    from wm_kernel.jupyter.magics.ask import set_ask_client
    from wm_kernel.session import set_current_session
    from wm_kernel.utils.htmltext import NO_MATH_CLASS
    from wm_kernel.utils.views import VIEW_SETUP

    root = str(Path(__file__).resolve().parents[2])
    shell = InteractiveShell.instance()
    try:
        for cell in VIEW_SETUP:
            shell.run_cell(cell).raise_error()
        shown: dict[str, str] = {}
        for name, cell in [*RICH_VIEWS.items(), *OTHER_VIEWS.items()]:
            source = cell.replace("{ROOT}", root)
            if source.startswith("%%"):
                first, _, body = source.partition("\n")
                value = shell.run_cell_magic(first[2:].split()[0], "", body)
            else:
                result = shell.run_cell(source)
                result.raise_error()
                value = result.result
            data, _ = shell.display_formatter.format(value)
            assert "text/html" in data or name in OTHER_VIEWS, f"{name}: no HTML view"
            shown[name] = data.get("text/html", "")
    finally:
        shell.extension_manager.unload_extension("wm_kernel")
        set_ask_client(None)
        set_current_session(None)
    for name, page in shown.items():
        if not name.startswith("wm_kernel."):
            continue  # pandas frames: JupyterLab's own tables
        outside_svg = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)
        runs = [run for run in re.split(r"<[^>]*>", outside_svg) if "$" in run]
        assert runs == [], f"{name}: a $ MathJax would read: {runs[:2]}"
        assert f'class="{NO_MATH_CLASS}"' in page, f"{name}: not wrapped in no_math"
        # a wide table scrolls sideways wherever it is shown (an output, a dashboard tab), never
        # cut; a <pre> wraps at spaces, never inside a word (JupyterLab's own <pre> breaks anywhere)
        tables = len(re.findall(r"<table[\s>]", page))
        scrolled = len(re.findall(r'<div class="wm-scroll" style="overflow-x:auto;max-width:100%"><table[\s>]', page))
        assert tables == scrolled, f"{name}: {tables - scrolled} of {tables} tables without their own scroller"
        for pre in re.findall(r"<pre[^>]*>", page):
            assert "word-break:normal" in pre, f"{name}: {pre} wraps inside words"
