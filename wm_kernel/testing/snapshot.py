"""Golden files of composed prompts, compared section by section.

A golden file holds every turn of a subject (a Session's recorded turns, a ComposedPrompt, or a list
of them; see :mod:`wm_kernel.testing.assertions`) as JSON: per turn, the sections in order, each
with its placement, whether it was cached, its trinket and its text as a list of lines (so a change
reads as a line diff in review). A comparison fails with one message: the first difference, named
by turn and section, with a short line diff, and how many differences there are in all.

>>> data = {"format": FORMAT, "version": VERSION, "turns": [{"turn": 0, "sections": [
...     {"name": "a", "placement": "system", "cached": True, "trinket": None, "lines": ["x", "y"]}]}]}
>>> changed = {**data, "turns": [{"turn": 0, "sections": [
...     {"name": "a", "placement": "system", "cached": True, "trinket": None, "lines": ["x", "z"]}]}]}
>>> print(first_difference(data, changed))
turn 0, section 'a' (system) differs:
--- golden
+++ composed
@@ -1,2 +1,2 @@
 x
-y
+z
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Any

from wm_kernel.testing.assertions import PromptSubject, prompts_of
from wm_kernel.utils.safe_files import BadJSONError, parse_json, read_text

FORMAT = "wm-kernel-prompt-snapshot"
VERSION = 1
#: Lines of diff a failure shows at most.
DIFF_LINES = 16


def snapshot_data(subject: PromptSubject) -> dict[str, Any]:
    """The JSON-ready golden data of ``subject``."""
    turns = []
    for turn, prompt in prompts_of(subject):
        turns.append(
            {
                "turn": turn,
                "sections": [
                    {
                        "name": r.name,
                        "placement": r.placement,
                        "cached": r.cached,
                        "trinket": r.trinket,
                        "lines": r.content.split("\n"),
                    }
                    for r in prompt.sections
                ],
            }
        )
    return {"format": FORMAT, "version": VERSION, "turns": turns}


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def load(path: Path) -> dict[str, Any]:
    """A golden file's data; ValueError naming the file for one this module did not write."""
    try:  # a regular file only, bounded, strict JSON (a FIFO, /dev/zero: one line)
        data = parse_json(read_text(path))
    except BadJSONError as exc:
        raise ValueError(
            f"{path}: not a prompt snapshot (invalid JSON: {str(exc).removeprefix('malformed JSON: ')})"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f'{path}: not a prompt snapshot (no "format": {FORMAT!r})')
    if data.get("version") != VERSION:
        raise ValueError(
            f"{path}: prompt snapshot version {data.get('version')!r}; this wm-kernel reads "
            f"version {VERSION} (run pytest --wm-update to rewrite it)"
        )
    return data


def _differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    out: list[str] = []
    old_turns = {t["turn"]: t["sections"] for t in expected["turns"]}
    new_turns = {t["turn"]: t["sections"] for t in actual["turns"]}
    for turn in sorted(set(old_turns) | set(new_turns)):
        if turn not in new_turns:
            out.append(f"turn {turn} is in the golden file but was not composed")
            continue
        if turn not in old_turns:
            out.append(f"turn {turn} was composed but is not in the golden file")
            continue
        old = {s["name"]: s for s in old_turns[turn]}
        new = {s["name"]: s for s in new_turns[turn]}
        for name in dict.fromkeys([*old, *new]):
            if name not in new:
                out.append(
                    f"turn {turn}, section {name!r} ({old[name]['placement']}) is in the golden "
                    f"file but not in the prompt"
                )
            elif name not in old:
                out.append(f"turn {turn}, section {name!r} ({new[name]['placement']}) is new: not in the golden file")
            elif (old[name]["placement"], old[name]["cached"]) != (new[name]["placement"], new[name]["cached"]):
                out.append(f"turn {turn}, section {name!r} moved from {_where(old[name])} to {_where(new[name])}")
            elif old[name]["lines"] != new[name]["lines"]:
                diff = list(
                    difflib.unified_diff(old[name]["lines"], new[name]["lines"], "golden", "composed", n=1, lineterm="")
                )
                if len(diff) > DIFF_LINES:
                    diff = diff[:DIFF_LINES] + [f"... ({len(diff) - DIFF_LINES} more diff lines)"]
                out.append(f"turn {turn}, section {name!r} ({new[name]['placement']}) differs:\n" + "\n".join(diff))
        common = [n for n in old if n in new]
        if common != [n for n in new if n in old]:
            out.append(
                f"turn {turn}: sections in another order: golden {common}, composed {[n for n in new if n in old]}"
            )
    return out


def _where(section: dict[str, Any]) -> str:
    return ("cached " if section["cached"] else "") + str(section["placement"])


def first_difference(expected: dict[str, Any], actual: dict[str, Any]) -> str | None:
    """The first difference between two golden data, as a message (None when equal); a count of the
    others follows it when there are more."""
    found = _differences(expected, actual)
    if not found:
        return None
    more = f"\n(and {len(found) - 1} more difference{'s' if len(found) > 2 else ''})" if len(found) > 1 else ""
    return found[0] + more


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
#: The longest golden file name (bytes, before the suffix): a longer one ends in a digest.
MAX_NAME_BYTES = 200


def golden_name(node_name: str) -> str:
    """The golden file name (without ``.json``) of a test named ``node_name``: letters, digits,
    ``_``, ``.`` and ``-`` as they are, every other character percent-encoded (its UTF-8 bytes as
    ``%XX``, ``%`` itself as ``%25``), so two test ids never share a file (``a/b``, ``a_b``,
    ``a b`` and ``a:b`` are four); a name too long for a file system ends in a digest instead."""
    name = "".join(
        c if c in _PLAIN else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in node_name
    )
    if len(name.encode()) > MAX_NAME_BYTES:
        digest = hashlib.blake2b(node_name.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        name = name[: MAX_NAME_BYTES - 17] + "-" + digest
    return name


class PromptSnapshot:
    """The golden files of one test: ``snapshot.assert_match(subject)`` (or ``snapshot(subject)``)
    compares ``subject`` with the next golden file of the test, or writes it when ``update``."""

    def __init__(self, directory: Path, name: str, *, update: bool = False) -> None:
        self.directory = directory
        self.name = name
        self.update = update
        self.written: list[Path] = []
        self._calls = 0

    def path(self, index: int) -> Path:
        suffix = "" if index == 1 else f"-{index}"
        return self.directory / f"{self.name}{suffix}.json"

    def assert_match(self, subject: PromptSubject) -> None:
        # pytest shows a failure at the test's line, with the message, not this helper's source
        __tracebackhide__ = True
        self._calls += 1
        path = self.path(self._calls)
        actual = snapshot_data(subject)
        if self.update:
            if not path.exists() or path.read_text(encoding="utf-8") != dumps(actual):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(dumps(actual), encoding="utf-8")
                self.written.append(path)
            return
        if not path.exists():
            raise AssertionError(f"no golden file {path}: run pytest --wm-update to write it")
        message = first_difference(load(path), actual)
        if message is not None:
            raise AssertionError(
                f"prompt snapshot {path.name}: {message}\n(run pytest --wm-update to accept the new prompt)"
            )

    __call__ = assert_match
