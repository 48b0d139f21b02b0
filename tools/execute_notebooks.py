"""Execute the shipped notebooks in place and save their widget state.

A notebook saved with its widget state shows the dashboard's last state where no kernel runs:
JupyterLab before "Run All", nbviewer, GitHub. nbconvert's ExecutePreprocessor records the state
(``store_widget_state``) in the notebook's ``metadata.widgets``; nbval ignores metadata, so the
suite still compares every output. The shipped notebooks are the ones pyproject's ``testpaths``
names. Per-cell execution timestamps are dropped, so re-running changes only what changed.

Usage: ``make notebooks`` or ``python tools/execute_notebooks.py [NAME.ipynb ...]``.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ExecutePreprocessor

ROOT = Path(__file__).resolve().parents[1]


def shipped_notebooks() -> list[Path]:
    """The notebooks pyproject's pytest ``testpaths`` lists, in that order."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    paths = config["tool"]["pytest"]["ini_options"]["testpaths"]
    return [ROOT / p for p in paths if p.endswith(".ipynb")]


def execute(path: Path) -> None:
    """Run every cell of ``path`` in a fresh kernel (from the notebook's folder) and save it with
    its outputs and widget state."""
    notebook = nbformat.read(path, as_version=4)
    runner = ExecutePreprocessor(timeout=600, kernel_name="python3", store_widget_state=True)
    runner.preprocess(notebook, {"metadata": {"path": str(path.parent)}})
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(notebook, path)


def main(argv: list[str]) -> int:
    # the kernel imports this checkout, as the tests do
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    shipped = shipped_notebooks()
    chosen = shipped if not argv else [p for p in shipped if p.name in argv]
    unknown = set(argv) - {p.name for p in shipped}
    if unknown:
        print(
            f"not a shipped notebook: {', '.join(sorted(unknown))} (shipped: {', '.join(p.name for p in shipped)})",
            file=sys.stderr,
        )
        return 2
    for path in chosen:
        print(f"executing {path.relative_to(ROOT)}", flush=True)
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
