"""One import path per public name.

The front doors (``wm_kernel``, ``trinkets``, ``trinkets.base`` and the packages the docs import
from) list the names users use; every other module's ``__all__`` holds only what that module
defines, so a name is importable from its own module and, if public, from one front door. The
README, the docs and the notebooks import each front-door name from its front door.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The packages whose ``__init__`` lists public names; no other module re-exports.
FRONT_DOORS = (
    "wm_kernel",
    "trinkets",
    "trinkets.base",
    "wm_kernel.tokens",
    "wm_kernel.cachesim",
    "wm_kernel.experiments",
    "wm_kernel.providers",
    "wm_kernel.interop",
    "wm_kernel.testing",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in ("wm_kernel", "trinkets") for p in (ROOT / package).rglob("*.py")}


def defined_and_all(path: Path) -> tuple[set[str], list[str] | None]:
    defined: set[str] = set()
    exported: list[str] | None = None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    defined.add(target.id)
                    if target.id == "__all__" and isinstance(node.value, (ast.List, ast.Tuple)):
                        exported = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    return defined, exported


def front_door_names() -> dict[str, list[str]]:
    owners: dict[str, list[str]] = defaultdict(list)
    for door in FRONT_DOORS:
        for name in importlib.import_module(door).__all__:
            owners[name].append(door)
    return owners


def test_no_module_but_a_front_door_exports_a_name_it_does_not_define() -> None:
    borrowed = {}
    for name, path in modules().items():
        if name in FRONT_DOORS:
            continue
        defined, exported = defined_and_all(path)
        extra = sorted(set(exported or ()) - defined)
        if extra:
            borrowed[name] = extra
    assert borrowed == {}


def test_every_front_door_name_imports_and_no_two_doors_share_one() -> None:
    owners = front_door_names()
    assert len(owners) > 100
    shared = {name: doors for name, doors in owners.items() if len(doors) > 1}
    assert shared == {}
    for name, [door] in owners.items():
        # a submodule of the same name must not shadow the name (``wm_kernel.providers.send``)
        assert not isinstance(getattr(importlib.import_module(door), name), ModuleType), f"{door}.{name}"


def user_imports() -> list[tuple[str, str, str]]:
    """(where, module, name) of every ``from M import name`` in the README, docs and notebooks."""
    sources: list[tuple[str, str]] = []
    guides = [ROOT / "README.md", ROOT / "trinkets" / "HOW_TO_BUILD_A_TRINKET.md", *sorted(ROOT.glob("docs/*.md"))]
    for path in guides:
        for block in re.findall(r"```(?:python|py|ipython)?\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S):
            sources.append((path.name, block))
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                sources.append((path.name, "".join(cell["source"])))
    found = []
    for where, text in sources:
        # IPython lines (magics, shell escapes, a magic's value assigned) are not Python: blank
        # them, keeping the line numbers
        python = "\n".join(
            "" if line.lstrip().startswith(("%", "!")) or re.search(r"=\s*[%!]", line) else line
            for line in text.split("\n")
        )
        try:
            tree = ast.parse(python)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("wm_kernel", "trinkets"):
                found += [(where, str(node.module), alias.name) for alias in node.names]
    return found


def test_the_readme_docs_and_notebooks_import_public_names_from_their_front_door() -> None:
    owners = front_door_names()
    found = user_imports()
    assert len(found) > 30
    elsewhere = sorted(
        {
            (where, f"from {module} import {name}", owners[name][0])
            for where, module, name in found
            if name in owners and module != owners[name][0]
        }
    )
    assert elsewhere == []


def test_no_module_but_a_front_door_re_exports_with_the_x_as_x_idiom() -> None:
    """``from m import X as X`` marks a re-export for type checkers; only front doors may use it."""
    found = []
    for name, path in modules().items():
        if name in FRONT_DOORS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                found += [f"{name}: {alias.name}" for alias in node.names if alias.asname == alias.name]
    assert found == []


def test_the_core_package_keeps_no_former_names() -> None:
    # WorkingMemory's module before round three; its names went as the round-four CHANGELOG says
    core = importlib.import_module("wm_kernel.core")
    for name in ("WorkingMemory", "CollapseIncompleteError", "failure_kind"):
        with pytest.raises(AttributeError):
            getattr(core, name)
