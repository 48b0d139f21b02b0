"""The layer contract of pyproject.toml ([tool.wm-kernel]) holds for every import of every module.

Imports are read from the source (ast), so function-local and ``TYPE_CHECKING`` imports count, and
so does a string constant giving the dotted name of one of the modules (the lazy name tables of the package
``__init__`` files, which ``importlib`` imports by name).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("wm_kernel", "trinkets")


@cache
def contract() -> tuple[list[list[str]], list[tuple[str, str]]]:
    """The layers, bottom to top (each a list of names), and the loops allowed."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["wm-kernel"]
    layers = [[entry] if isinstance(entry, str) else list(entry) for entry in table["layers"]]
    return layers, [(a, b) for a, b in table.get("allowed-loops", [])]


@cache
def modules() -> dict[str, Path]:
    """Every module of the two packages by dotted name (a package by its own name)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def layer_of(module: str) -> tuple[int, str]:
    """(index of the layer, the name that holds ``module``); the longest name wins."""
    best: tuple[int, str] | None = None
    for index, names in enumerate(contract()[0]):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > len(best[1])):
                best = (index, name)
    assert best is not None, f"{module} is in no layer of the contract"
    return best


def imports(module: str) -> list[tuple[str, int]]:
    """(module imported, line) for every import of ours in ``module``'s source."""
    path, known = modules()[module], modules()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            for alias in node.names:
                name = f"{base}.{alias.name}"
                found.append((name if name in known else base, node.lineno))
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value and node.value in known
        ):
            found.append((node.value, node.lineno))
    return [(name, line) for name, line in found if name.split(".")[0] in PACKAGES and name != module]


def edges() -> dict[str, set[str]]:
    return {module: {name for name, _ in imports(module)} for module in modules()}


def test_the_contract_names_every_module() -> None:
    layers, allowed = contract()
    named = [name for names in layers for name in names]
    assert len(named) == len(set(named)), "a name is in two layers"
    assert [name for name in named if name not in modules()] == []
    # a module of wm_kernel held only by the bare package name was never placed
    unplaced = [m for m in modules() if layer_of(m)[1] == "wm_kernel" and m != "wm_kernel" and m not in named]
    assert unplaced == []
    assert all(a in modules() and b in modules() and layer_of(a)[0] == layer_of(b)[0] for a, b in allowed)


def test_no_import_points_up_a_layer() -> None:
    upward = [
        f"{module}:{line} imports {name} ({layer_of(name)[1]} is above {layer_of(module)[1]})"
        for module in modules()
        for name, line in imports(module)
        if layer_of(name)[0] > layer_of(module)[0]
    ]
    assert upward == []


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_in_a_loop() -> None:
    graph = edges()
    for a, b in contract()[1]:
        assert b in graph[a], f"the allowed loop {a} -> {b} is gone: take it out of the contract"
        graph[a].discard(b)
    assert loops(graph) == []


def test_the_walk_sees_every_kind_of_import() -> None:
    # the cases the contract relies on, in modules that have them
    assert ("wm_kernel.display.render", 0) not in imports("wm_kernel.core.prompt")
    names = {name for name, _ in imports("wm_kernel")}
    assert {
        "wm_kernel.display.render",
        "wm_kernel.jupyter.magics.working_memory",  # function-local
        "wm_kernel.session",
        "wm_kernel.jupyter.dashboard.widget",
    } <= names  # by name, lazily
    assert "wm_kernel.cachesim.advice" in {n for n, _ in imports("wm_kernel.session.recorded_views")}  # TYPE_CHECKING
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def architecture_table() -> list[tuple[str, list[str]]]:
    """(layer name, the backticked module names of its row) from docs/architecture.md's table."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [(row.split("|")[1].strip(), re.findall(r"`([\w.]+)`", row.split("|")[1])) for row in rows]


def test_the_architecture_table_is_the_contract() -> None:
    layers = contract()[0]
    table = architecture_table()
    assert [names for _, names in table] == list(reversed(layers))  # the doc reads top down


@pytest.mark.slow
def test_a_composed_prompt_shows_richly_without_anyone_importing_the_display_layer() -> None:
    # a fresh interpreter: the core alone is imported, and the first display loads the views
    code = """
import sys
from wm_kernel.core.prompt import ComposedPrompt
assert "wm_kernel.display.render" not in sys.modules
bundle = ComposedPrompt("You help Ada.")._repr_mimebundle_()
print(sorted(bundle), "wm_kernel.display.render" in sys.modules)
print(bundle["text/html"].splitlines()[0])
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "['text/html', 'text/plain'] True",
        '<div class="mathjax_ignore tex2jax_ignore"><div class="wm-composed-prompt">',
    ]
