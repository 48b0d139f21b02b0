"""JupyterLab's defaults for this project's virtualenv: widget state saved with the notebook.

JupyterLab saves no widget state by default (the ``saveState`` setting of
``@jupyter-widgets/jupyterlab-manager`` is false), so a notebook saved in it and reopened without a
kernel shows "Error displaying widget: model not found" where the dashboard was. This writes the
setting into the virtualenv's ``share/jupyter/lab/settings/overrides.json`` (JupyterLab's defaults
for that installation: a user's own settings still win), merged with whatever the file holds.
``make`` runs it after the install; it changes nothing outside the virtualenv.

Usage: ``python tools/lab_settings.py [PREFIX]`` (default: the running interpreter's ``sys.prefix``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: The settings this project's JupyterLab starts with, by plugin.
OVERRIDES: dict[str, dict[str, Any]] = {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}


def overrides_path(prefix: Path) -> Path:
    """Where JupyterLab installed under ``prefix`` reads its default settings."""
    return prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def write_overrides(prefix: Path) -> bool:
    """Merge :data:`OVERRIDES` into ``prefix``'s overrides file; whether the file changed."""
    path = overrides_path(prefix)
    try:
        held = json.loads(path.read_text("utf-8")) if path.exists() else {}
    except ValueError as error:
        raise SystemExit(f"lab_settings: {path} is not JSON ({error}); fix or remove it") from None
    if not isinstance(held, dict):
        raise SystemExit(f"lab_settings: {path} holds a {type(held).__name__}, not an object; fix or remove it")
    merged = {**held, **{plugin: {**held.get(plugin, {}), **values} for plugin, values in OVERRIDES.items()}}
    if merged == held:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=2) + "\n", "utf-8")
    return True


def main(argv: list[str]) -> int:
    prefix = Path(argv[0]) if argv else Path(sys.prefix)
    if write_overrides(prefix):
        print(f"lab_settings: JupyterLab in {prefix} saves widget state with a notebook ({overrides_path(prefix)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
