"""A report, not a limit: every class over 400 lines and function over 60, as ``ruff format`` lays
them out (decorators counted), with the reason its docstring states on a line starting "Long
because:" (issue 42 item 2: split when a second idea appears, not at a line count).

The report prints as the suite runs (``pytest tests/test_sizes.py -m slow``) and from the command
line (``python tests/test_sizes.py``); it never fails the suite.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from utils.test_style import ruff  # noqa: E402 - the tests folder is put on the path first, for the command line

ROOT = Path(__file__).resolve().parents[1]
LIMITS = {ast.ClassDef: 400, ast.FunctionDef: 60, ast.AsyncFunctionDef: 60}


@dataclass(frozen=True)
class Long:
    """A class or function over its size: where, its name, its lines, the reason it states (or None)."""

    where: str
    name: str
    lines: int
    reason: str | None

    def __str__(self) -> str:
        return f"{self.lines:4d}  {self.where} {self.name}: {self.reason or 'no reason stated'}"


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


def _reason(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    doc = ast.get_docstring(node) or ""
    lines = [line.strip() for line in doc.splitlines()]
    for number, line in enumerate(lines):
        if line.startswith("Long because:"):
            # the reason runs on to the end of its paragraph
            rest = [line.removeprefix("Long because:").strip()]
            for more in lines[number + 1 :]:
                if not more:
                    break
                rest.append(more)
            return " ".join(rest)
    return None


def long_ones(path: Path, root: Path = ROOT) -> list[Long]:
    """Each class or function of ``path`` over its size once formatted."""
    found = []
    for node in ast.walk(ast.parse(_formatted(path))):
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or node.end_lineno is None:
            continue
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        lines = node.end_lineno - start + 1
        if lines > LIMITS[type(node)]:
            found.append(Long(f"{path.relative_to(root)}:{node.lineno}", node.name, lines, _reason(node)))
    return found


def report() -> str:
    """The report over both packages, longest first."""
    paths = sorted([*ROOT.glob("wm_kernel/**/*.py"), *ROOT.glob("trinkets/**/*.py")])
    found = sorted((long for path in paths for long in long_ones(path)), key=lambda f: (-f.lines, f.where))
    reasoned = sum(f.reason is not None for f in found)
    head = (
        f"sizes: {len(found)} classes over {LIMITS[ast.ClassDef]} lines or functions over "
        f"{LIMITS[ast.FunctionDef]} ({reasoned} say why)"
    )
    return "\n".join([head, *map(str, found)])


@pytest.mark.slow
def test_the_counter_sees_a_long_function_its_decorators_and_its_stated_reason(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    plain = tmp_path / "plain.py"
    plain.write_text(f"@staticmethod\ndef f():\n{body}")
    reasoned = tmp_path / "reasoned.py"
    reasoned.write_text(
        f'def f():\n    """What f does.\n\n    Long because: a table,\n    one row a line.\n    """\n{body}'
    )
    short = tmp_path / "short.py"
    short.write_text("def f():\n    return 1\n")
    assert [(f.name, f.lines, f.reason) for f in long_ones(plain, tmp_path)] == [("f", 62, None)]
    assert [(f.lines, f.reason) for f in long_ones(reasoned, tmp_path)] == [(66, "a table, one row a line.")]
    assert long_ones(short, tmp_path) == []


@pytest.mark.slow
def test_the_size_report_prints(capsys: pytest.CaptureFixture[str]) -> None:
    text = report()
    with capsys.disabled():
        print("\n" + text)
    assert text.startswith("sizes: ")


if __name__ == "__main__":
    print(report())
