"""The headless demo: `python -m wm_kernel demo` runs every trinket and shows items expiring."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from wm_kernel.__main__ import main
from wm_kernel.demo import run_demo


def test_demo_table_shows_guidance_and_search_errors_expiring():
    out = io.StringIO()
    assert run_demo(turns=7, quiet=True, out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == "turn  sections   chars  expired"
    expired = {int(line[:4]): line[24:] for line in lines[1:]}
    assert [t for t, what in expired.items() if what != "-"] == [3, 5, 6]
    assert expired[3].startswith("PeanutGalleryTrinket: concern: You have answered three questions")
    assert expired[5] == "PeanutGalleryTrinket: coaching: Offer a worked example before the general rule."
    assert expired[6] == "GetContextTrinket: failed: Ada's calendar for December"
    sections = {int(line.split()[0]): int(line.split()[1]) for line in lines[1:]}
    assert sections == {0: 9, 1: 9, 2: 9, 3: 9, 4: 9, 5: 8, 6: 8, 7: 8}


def test_demo_prints_the_whole_prompt_and_is_deterministic():
    first, second = io.StringIO(), io.StringIO()
    run_demo(turns=2, out=first)
    run_demo(turns=2, out=second)
    text = first.getvalue()
    assert text == second.getvalue()
    assert text.startswith(
        "=== composed prompt at turn 0 ===\n--- system (cached) ---\nYou are a thoughtful assistant helping Ada.\n"
    )
    for marker in (
        "<user_model>",
        "<conversation_manifest>",
        "<mira:domain_knowledge>",
        "<current_datetime>TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:05 AM GMT.</current_datetime>",
        "=== RECENT GET_CONTEXT TOOL SEARCH RESULTS ===",
        "<active_reminders>",
        "<surfaced_memories>",
        "<mira:peanutgallery>",
        "=== composed prompt at turn 2 ===",
    ):
        assert marker in text, marker


@pytest.mark.slow  # runs python -m wm_kernel in a subprocess
def test_demo_command_line():
    done = subprocess.run(
        [sys.executable, "-m", "wm_kernel", "demo", "--turns", "1", "--quiet"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[0] == "turn  sections   chars  expired"
    assert done.stderr == ""
    assert main(["demo", "--turns", "0"]) == 2
