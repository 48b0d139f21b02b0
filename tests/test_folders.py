"""A folder per concept (issue 42 item 1): no folder lays three or more ``<concept>_<part>.py``
modules of one concept flat, and none holds more than 16 modules (its ``__init__`` aside)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MOST_MODULES = 16


def folders() -> list[Path]:
    return sorted(
        path.parent for package in ("wm_kernel", "trinkets") for path in (ROOT / package).rglob("__init__.py")
    )


def test_no_folder_lays_three_parts_of_one_concept_flat() -> None:
    flat = {}
    for folder in folders():
        concepts = Counter(p.stem.split("_")[0] for p in folder.glob("*_*.py") if p.name != "__init__.py")
        crowded = sorted(name for name, count in concepts.items() if count >= 3)
        if crowded:
            flat[str(folder.relative_to(ROOT))] = crowded
    assert flat == {}


def test_no_folder_holds_more_than_sixteen_modules() -> None:
    sizes = {str(folder.relative_to(ROOT)): len(list(folder.glob("*.py"))) - 1 for folder in folders()}
    assert len(sizes) >= 20
    assert {folder: n for folder, n in sizes.items() if n > MOST_MODULES} == {}
