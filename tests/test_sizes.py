"""No class over 400 lines or function over 80, as ``ruff format`` lays them out, unless its docstring
states why on a line starting "Long because:" (issue 35 item 4)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest
from utils.test_style import ruff

ROOT = Path(__file__).resolve().parents[1]
LIMITS = {ast.ClassDef: 400, ast.FunctionDef: 80, ast.AsyncFunctionDef: 80}


def _formatted(path: Path) -> str:
    done = subprocess.run(
        [ruff(), "format", "--stdin-filename", str(path), "-"],
        cwd=ROOT,
        input=path.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _reasoned(node: ast.AST) -> bool:
    doc = ast.get_docstring(node) if isinstance(node, tuple(LIMITS)) else None  # type: ignore[arg-type]
    return doc is not None and any(line.strip().startswith("Long because:") for line in doc.splitlines())


def too_long(path: Path) -> list[str]:
    """Each class or function of ``path`` over its limit once formatted, with no stated reason."""
    found = []
    for node in ast.walk(ast.parse(_formatted(path))):
        limit = LIMITS.get(type(node))
        if limit is None or node.end_lineno is None:  # type: ignore[attr-defined]
            continue
        lines = node.end_lineno - node.lineno + 1  # type: ignore[attr-defined]
        if lines > limit and not _reasoned(node):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} {lines} lines")  # type: ignore[attr-defined]
    return found


@pytest.mark.slow
def test_the_counter_sees_a_long_function_and_its_stated_reason(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    plain = tmp_path / "plain.py"
    plain.write_text(f"def f():\n{body}")
    reasoned = tmp_path / "reasoned.py"
    reasoned.write_text(f'def f():\n    """What f does.\n\n    Long because: a table.\n    """\n{body}')
    short = tmp_path / "short.py"
    short.write_text("def f():\n    return 1\n")
    assert [s.split(" ", 1)[1] for s in _too_long_at(plain)] == ["f 81 lines"]
    assert _too_long_at(reasoned) == [] and _too_long_at(short) == []


def _too_long_at(path: Path) -> list[str]:
    global ROOT
    saved, ROOT = ROOT, path.parent
    try:
        return too_long(path)
    finally:
        ROOT = saved


@pytest.mark.slow
def test_no_class_over_400_or_function_over_80_lines_without_a_reason() -> None:
    paths = sorted([*ROOT.glob("wm_kernel/**/*.py"), *ROOT.glob("trinkets/**/*.py")])
    found = [line for path in paths for line in too_long(path)]
    assert found == [], "\n".join(found)
