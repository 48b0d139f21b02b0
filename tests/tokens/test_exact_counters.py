"""The token registry asks a table how a family counts exactly; it tests no provider by name (issue 42 item 6)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from wm_kernel.tokens import registry
from wm_kernel.tokens.counting import EstimateTokenizer

ROOT = Path(__file__).resolve().parents[2]


def test_a_family_counts_exactly_through_its_entry_in_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    exact = EstimateTokenizer()
    asked: list[tuple[str, dict[str, object]]] = []

    def counter(model: str, **options: object) -> EstimateTokenizer | None:
        asked.append((model, options))
        return exact if options["exact"] else None

    monkeypatch.setitem(registry.EXACT_COUNTERS, "gemini", counter)
    assert registry.tokenizer_for("gemini-2.5-pro", exact=True) is exact
    assert registry.tokenizer_for("gemini-2.5-pro") is registry.estimate_tokenizer("gemini-2.5-pro")
    assert [model for model, _ in asked] == ["gemini-2.5-pro", "gemini-2.5-pro"]
    assert set(registry.EXACT_COUNTERS) <= set(registry.FAMILIES)


def test_no_code_outside_the_dialects_compares_with_a_provider_name() -> None:
    names = {"anthropic", "openai", "google", "gemini", "claude", "mira"}
    found = []
    for path in sorted([*(ROOT / "wm_kernel").rglob("*.py"), *(ROOT / "trinkets").rglob("*.py")]):
        if "dialects" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
                sides = [node.left, *node.comparators]
                if any(isinstance(s, ast.Constant) and s.value in names for s in sides):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
