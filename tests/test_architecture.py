"""docs/architecture.md stays true: every module, folder and dotted name it mentions exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def mentioned_paths() -> list[Path]:
    """Backticked paths (``wm_kernel/core/working_memory.py``, ``trinkets/*.py``, a folder); a bare ``name.py``
    on a line that named a folder before it is taken inside that folder."""
    found = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        folder: Path | None = None
        for token in re.findall(r"`([^`]+)`", line):
            if re.fullmatch(r"(wm_kernel|trinkets|tests|docs|notebooks)(/[\w.*]*)*", token):
                found.append(ROOT / token)
                if token.endswith("/"):
                    folder = ROOT / token
            elif folder is not None and re.fullmatch(r"\w+\.py", token):
                found.append(folder / token)
    return found


def test_every_module_the_architecture_names_exists() -> None:
    paths = mentioned_paths()
    assert len(paths) >= 20
    missing = [
        str(p.relative_to(ROOT)) for p in paths if not (any(p.parent.glob(p.name)) if "*" in p.name else p.exists())
    ]
    assert missing == []


def test_every_dotted_name_the_architecture_names_imports() -> None:
    names = re.findall(r"`(wm_kernel(?:\.\w+)+)`", DOC.read_text(encoding="utf-8"))
    assert names
    for name in names:
        module, _, attribute = name.rpartition(".")
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            assert hasattr(importlib.import_module(module), attribute), name


def test_every_module_is_placed_in_the_layer_table() -> None:
    section = DOC.read_text(encoding="utf-8").split("## Layers", 1)[1].split("\n## ", 1)[0]
    placed = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            folder = ""
            for token in re.findall(r"`([^`]+)`", line.split("|")[2]):
                if token.endswith("/"):
                    folder = token
                else:
                    placed.add(token if "/" in token else folder + token)
    modules = {
        str(p.relative_to(ROOT))
        for package in ("wm_kernel", "trinkets")
        for p in (ROOT / package).rglob("*.py")
        if p.name != "__init__.py" or p.parent.name == "wm_kernel"
    }
    assert sorted(modules - placed) == []
    assert sorted(placed - modules) == []


def test_the_state_table_names_every_key_the_keys_module_builds() -> None:
    source = (ROOT / "wm_kernel" / "stores" / "keys.py").read_text(encoding="utf-8")
    prefixes = set(re.findall(r'_key\("([\w-]+)"', source))
    assert {"trinkets", "reminders", "domaindocs", "lora", "manifest", "session", "history"} <= prefixes
    section = DOC.read_text(encoding="utf-8").split("## Where state lives", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([\w-]+):", section))
    assert sorted(prefixes - named) == []
