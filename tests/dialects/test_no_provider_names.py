"""Issue 35 item 3: what one provider means lives in wm_kernel/dialects/ and its registry only.

An ast walk of every module outside ``wm_kernel/dialects/``: no comparison with a provider's name
(``x == "anthropic"``, ``x in ("openai", ...)``, a ``match`` case), and no list, tuple, set or dict
literal holding two or more provider names (a list of providers kept beside the registry).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from wm_kernel.dialects.registry import dialects

ROOT = Path(__file__).resolve().parents[2]
#: Every name a wire answers to: the registry's names and aliases.
NAMES = frozenset(name for d in dialects() for name in (d.name, *d.aliases))
#: Modules allowed a name, each with its reason.
ALLOWED = {
    # token *families* (o200k, cl100k, claude, gemini) name tokenizers, not wires; the token
    # counters are their own lower layer (wm_kernel.tokens), below the dialects
    "wm_kernel/tokens/registry.py",
}


def _names_in(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [n for elt in node.elts for n in _names_in(elt)]
    return []


def offences(source: str) -> list[tuple[int, str]]:
    """(line, what) for each comparison with a provider name and each literal listing two or more."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            named = [n for side in (node.left, *node.comparators) for n in _names_in(side)]
            if named:
                found.append((node.lineno, f"compares with {named[0]!r}"))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            named = _names_in(node)
            if len(named) >= 2:
                found.append((node.lineno, f"lists providers {named}"))
        elif isinstance(node, ast.Dict):
            named = [n for key in node.keys if key is not None for n in _names_in(key)]
            if len(named) >= 2:
                found.append((node.lineno, f"maps providers {named}"))
        elif isinstance(node, ast.MatchValue):
            named = _names_in(node.value)
            if named:
                found.append((node.lineno, f"matches {named[0]!r}"))
    return found


def modules() -> list[Path]:
    return sorted(
        p
        for package in ("wm_kernel", "trinkets")
        for p in (ROOT / package).rglob("*.py")
        if "dialects" not in p.relative_to(ROOT).parts
    )


def test_the_registry_knows_every_wire() -> None:
    assert {"anthropic", "openai", "openai-responses", "gemini", "mira"} <= {d.name for d in dialects()}
    assert {"openai.chat", "openai.responses", "google"} <= NAMES


@pytest.mark.parametrize(
    "source, expected",
    [
        ('if provider == "anthropic": pass', [(1, "compares with 'anthropic'")]),
        (
            'ok = p in ("openai", "gemini")',
            [(1, "compares with 'openai'"), (1, "lists providers ['openai', 'gemini']")],
        ),
        ('PROVIDERS = ("anthropic", "openai")', [(1, "lists providers ['anthropic', 'openai']")]),
        ('M = {"google": "gemini", "openai": "x"}', [(1, "maps providers ['google', 'openai']")]),
        ('match p:\n    case "mira": pass', [(2, "matches 'mira'")]),
        ('x = "anthropic"\ny = f(provider="openai")', []),
    ],
)
def test_the_walk_finds_what_it_looks_for(source: str, expected: list[tuple[int, str]]) -> None:
    assert offences(source) == expected


def test_no_module_outside_the_dialects_names_a_provider() -> None:
    found = {str(p.relative_to(ROOT)): offences(p.read_text(encoding="utf-8")) for p in modules()}
    assert len(found) > 100
    assert {path: hits for path, hits in found.items() if hits and path not in ALLOWED} == {}
