"""Hostile input to the magics and the forecast (issue 34 items 12, 16): a FIFO, a device or deep
nesting as ``%request --tools`` is one UsageError; NaN, infinite or negative limits are clear
errors; ``%%wm_check --turns 0..100000000`` checks without building the range."""

from __future__ import annotations

import math
import os
import resource
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("IPython")
from IPython.core.error import UsageError  # noqa: E402

from wm_kernel.instruments.forecast import forecast  # noqa: E402
from wm_kernel.session import Session  # noqa: E402


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_request_tools_from_a_fifo_a_device_or_deep_json_is_one_line(ip: Any, session: Session, tmp_path: Path) -> None:
    session.compose()
    fifo = tmp_path / "tools.json"
    os.mkfifo(fifo)

    def unblock() -> None:  # a reader that waits for a writer is let go after 5 s (so it fails, not hangs)
        if not stop.wait(5):
            with open(fifo, "w") as writer:
                writer.write("[]")

    stop = threading.Event()
    threading.Thread(target=unblock, daemon=True).start()
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for path, message in [
        (fifo, f"--tools: {fifo}: not a regular file (a device or a FIFO)"),
        ("/dev/zero", "--tools: /dev/zero: not a regular file (a device or a FIFO)"),
        (deep, f"--tools: {deep}: JSON nested too deeply to read (at most 1,000 levels)"),
    ]:
        with pytest.raises(UsageError) as caught:
            ip.run_line_magic("request", f"--tools {path}")
        assert str(caught.value) == message
    stop.set()


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_request_per_hour_must_be_finite(ip: Any, session: Session, value: str) -> None:
    session.compose()
    with pytest.raises(UsageError, match=r"^--per-hour must be a finite number of turns, 0 or more"):
        ip.run_line_magic("request", f"--per-hour {value}")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"window": math.nan}, "window must be a positive int of tokens, got nan"),
        ({"window": math.inf}, "window must be a positive int of tokens, got inf"),
        ({"budget": -100}, "budget must be a positive int of tokens, got -100"),
        (
            {"section_limits": {"base_prompt": -5}},
            "the limit of section 'base_prompt' must be a positive int of tokens, got -5",
        ),
        ({"fixed_tokens": math.nan}, "fixed_tokens must be an int of tokens, 0 or more, got nan"),
    ],
)
def test_forecast_limits_must_be_positive_token_counts(session: Session, options: dict[str, Any], message: str) -> None:
    session.compose()
    session.advance_turn(2)
    with pytest.raises(ValueError) as caught:
        forecast(session.recorder, **options)
    assert str(caught.value) == message


def test_wm_check_on_a_huge_turn_range_never_builds_it(ip: Any, session: Session) -> None:
    session.compose()
    session.advance_turn(2)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = 2 * 1024**3  # a range of 100,000,001 ints would take about 3.7 GB
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    try:
        with pytest.raises(UsageError) as caught:
            ip.run_cell_magic("wm_check", "", "section_present base_prompt --turns 0..100000000")
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert str(caught.value) == (
        "line 1 (section_present): --turns 0..100000000: turn 3 was not recorded (recorded turns: 0..2)"
    )
