"""The versions the suite was last green with: write them, or compare a virtualenv with them.

``constraints.txt`` (at the top of the repository) pins every distribution installed in the
project's virtualenv except wm-kernel itself; ``make test``, ``make lab`` and ``.ci/run`` install
with ``pip install -c constraints.txt -e '.[test]'``, so a fresh clone gets the versions the suite
passed with, while pyproject.toml keeps open ranges for the package's users.

Usage (run by the virtualenv's own Python, whose installed distributions are read):

- ``python tools/constraints.py write constraints.txt``: record them (``make constraints``);
- ``python tools/constraints.py compare constraints.txt``: one line per distribution whose version
  differs from the recorded one (``make test-latest`` prints it before its run).
"""

from __future__ import annotations

import platform
import re
import sys
from importlib.metadata import distributions
from pathlib import Path

#: Never pinned: the project itself (installed editable from the checkout) and the installer.
LEFT_OUT = frozenset({"wm-kernel", "pip"})


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed() -> dict[str, str]:
    """{canonical name: version} of every distribution this Python sees, but :data:`LEFT_OUT`."""
    found: dict[str, str] = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name and canonical(name) not in LEFT_OUT:
            found.setdefault(canonical(name), dist.version)
    return dict(sorted(found.items()))


def recorded(path: Path) -> dict[str, str]:
    """{canonical name: version} of a constraints file's ``name==version`` lines."""
    pins: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[canonical(name.strip())] = version.strip()
    return pins


def write(path: Path) -> None:
    python = ".".join(platform.python_version_tuple()[:2])
    lines = [
        "# The versions the test suite last passed with (`make constraints` writes this file from .venv;",
        "# `make test`, `make lab` and .ci/run install with `pip install -c constraints.txt -e '.[test]'`).",
        "# pyproject.toml keeps open ranges for the package's users; `make test-latest` tries the newest.",
        f"# Recorded on Python {python}, {platform.system()} {platform.machine()}.",
        *(f"{name}=={version}" for name, version in installed().items()),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{path}: {len(lines) - 4} versions recorded")


def compare(path: Path) -> None:
    pins, now = recorded(path), installed()
    changed = [
        f"{name} {pins.get(name, '(none)')} -> {now.get(name, '(none)')}"
        for name in sorted(pins.keys() | now.keys())
        if pins.get(name) != now.get(name)
    ]
    if changed:
        print(f"versions that differ from {path} ({len(changed)}; recorded -> installed):")
        for line in changed:
            print(f"  {line}")
    else:
        print(f"every version is the one {path} records")


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("write", "compare"):
        print("usage: python tools/constraints.py write|compare FILE", file=sys.stderr)
        return 2
    (write if argv[0] == "write" else compare)(Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
