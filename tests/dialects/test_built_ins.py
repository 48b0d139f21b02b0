"""The two registries name their built-ins (issue 42 item 4): the wires in
``wm_kernel.dialects.registry.BUILT_IN``, the log formats in ``wm_kernel.interop.readers.BUILT_IN``,
each read when first asked, so what they answer does not depend on which module was imported first."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wm_kernel.dialects import registry
from wm_kernel.interop import readers

ROOT = Path(__file__).resolve().parents[2]


def defining(package: str, name: str) -> set[str]:
    """The modules of ``package`` that assign ``name`` at their top level."""
    found = set()
    folder = ROOT / package.replace(".", "/")
    for path in folder.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = [
            t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
        ]
        if name in targets:
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_module_that_defines_a_wire_or_a_log_format_is_listed() -> None:
    assert set(registry.BUILT_IN.values()) == defining("wm_kernel.dialects", "DIALECT")
    assert set(readers.BUILT_IN.values()) == defining("wm_kernel.interop", "LOG_FORMAT")
    assert tuple(registry.BUILT_IN) == ("anthropic", "openai", "openai-responses", "gemini", "bedrock", "mira")


def test_no_module_of_the_two_packages_is_imported_for_its_side_effect() -> None:
    kept = []
    for package in ("wm_kernel", "trinkets"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if "import" in line and "noqa: F401" in line:
                    kept.append(f"{path.relative_to(ROOT)}:{number}")
    assert kept == []


def fresh(code: str) -> str:
    """What ``code`` prints in a fresh interpreter (which writes nothing to stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stderr == ""
    return done.stdout


#: What each fresh interpreter prints once its first import is done: the wires, the usage
#: providers, the log formats, what two records read as, and a body each wire builds.
PROBE = """
from wm_kernel.core.prompt import ComposedPrompt
from wm_kernel.dialects.registry import dialect_names, get_dialect, usage_providers
from wm_kernel.interop.readers import detect_log_format, log_formats
p = ComposedPrompt("Base.", "Now.", ["Before."], ["After."], "HUD")
print(dialect_names())
print(usage_providers())
print(log_formats())
print(detect_log_format({"resourceSpans": []}), detect_log_format({"messages": [], "system": "S"}))
print(sorted(p.to_mira([{"role": "user", "content": "Hi"}])), get_dialect("openai").body(p, user="Hi")["messages"][-1])
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "first",
    [
        "wm_kernel.core.prompt",
        "wm_kernel.dialects.mira",
        "wm_kernel.dialects.usage",
        "wm_kernel.interop.otlp",
        "wm_kernel.interop.log_files",
        "wm_kernel.session",
        "wm_kernel",
    ],
)
def test_the_registries_answer_alike_whichever_module_was_imported_first(first: str) -> None:
    assert fresh(f"import {first}\n{PROBE}").splitlines() == [
        "('anthropic', 'openai', 'openai-responses', 'gemini', 'bedrock', 'mira')",
        "('anthropic', 'openai', 'openai-responses', 'gemini', 'bedrock')",
        "('anthropic', 'openai.chat', 'openai.chat.stored', 'openai.responses', 'gemini', 'claude-code', "
        "'mira-tap', 'otlp', 'claude-trace', 'codex', 'openhands')",
        "otlp anthropic",
        "['max_tokens', 'messages', 'model', 'stream', 'system', 'temperature'] "
        "{'role': 'user', 'content': 'Before.\\n\\nHi\\n\\nAfter.\\n\\nHUD'}",
    ]


@pytest.mark.slow
def test_a_compose_loads_no_wire() -> None:
    # the registry is read when first asked: a session that only composes never loads a wire
    code = """
import sys
from wm_kernel.session import Session
from wm_kernel.core.clock import ManualClock
from wm_kernel.dialects.registry import BUILT_IN
Session(clock=ManualClock("2026-11-30T09:00:00+00:00"), trinkets=[], instruments=()).compose()
print(sorted(m for m in sys.modules if m in BUILT_IN.values() or m.startswith("wm_kernel.interop")))
"""
    assert fresh(code).strip() == "[]"
