"""The README's tour runs as written, and its two commands exist."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")


def test_tour_runs_and_does_what_it_says(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "the README has a python tour"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    s = namespace["s"]
    assert s.turn == 3
    history = s.history
    guidance = history[history.section == "peanutgallery_guidance"]
    assert sorted(guidance.turn.unique()) == [1, 2]  # composed at 0 before it was added
    assert "TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:00 AM GMT." in capsys.readouterr().out


def test_the_two_commands_are_make_targets():
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert "`make lab`" in README and "`make test`" in README
    assert re.search(r"^lab:", makefile, flags=re.M) and re.search(r"^test:", makefile, flags=re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text("utf-8")
