"""The guide's code runs: every ```python block of HOW_TO_BUILD_A_TRINKET.md, in order, in one
namespace; a block followed by an ```output block must print exactly that."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

GUIDE = Path(__file__).resolve().parents[2] / "trinkets" / "HOW_TO_BUILD_A_TRINKET.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def blocks() -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(GUIDE.read_text(encoding="utf-8"))]


def test_fences_are_balanced_and_every_output_follows_code() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    assert text.count("\n```") % 2 == 0
    found = blocks()
    for index, (language, _) in enumerate(found):
        if language == "output":
            assert index > 0 and found[index - 1][0] == "python", f"output block {index} follows no code"


def test_every_python_block_runs_and_prints_what_the_guide_says() -> None:
    namespace: dict[str, Any] = {"__name__": "howto"}
    found = blocks()
    ran = checked = 0
    for index, (language, body) in enumerate(found):
        if language != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(body, f"{GUIDE.name}[block {index}]", "exec"), namespace)
        ran += 1
        following = found[index + 1] if index + 1 < len(found) else None
        if following is not None and following[0] == "output":
            assert out.getvalue() == following[1], f"block {index} printed something else"
            checked += 1
    # the guide's examples: a stateless, a stateful and a failing trinket, placed and tested
    assert ran >= 10 and checked >= 8
    for name in ("FlightStatusTrinket", "ScratchpadTrinket", "TrainTimesTrinket", "test_note_lives_exactly_its_ttl"):
        assert name in namespace
    # the results the guide shows hold after the last block
    assert namespace["trains"].error == "ConnectionError: departures feed unreachable"
    assert namespace["pad"].notes == (("note-3", "Sent by a background job.", 0), ("note-4", namespace["hostile"], 2))


def test_guide_trinkets_reject_bad_input_as_described() -> None:
    namespace: dict[str, Any] = {"__name__": "howto"}
    code = [body for language, body in blocks() if language == "python"]
    with contextlib.redirect_stdout(io.StringIO()):
        for body in code[:2]:  # the flight trinket and its session
            exec(body, namespace)
    flights = namespace["flights"]
    with pytest.raises(ValueError, match=r"^flight must be a non-empty str; got ''$"):
        flights.set_flight("", "x")
    assert (flights.flight, flights.status) == ("BA117", "Boarding at gate B32 <on time>")
