"""Every file the kit reads goes through the one safe opening (issue 44 item 2): a FIFO is refused at
once (never a hang), /dev/zero is one line (never a MemoryError), a symlink loop one line. Each FIFO
is a real one (os.mkfifo); a thread lets a reader that waits go after 5 s, so a regression fails
instead of hanging the suite."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mira_tap_files import load, three_turns

from wm_kernel.__main__ import main
from wm_kernel.dialects.usage import read_usage
from wm_kernel.testing.snapshot import load as load_snapshot
from wm_kernel.tokens.calibration import Calibration

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
SCENARIO = {"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00"}


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """Make a FIFO at a path; any reader still waiting on it at the test's end is let go."""
    made: list[Path] = []
    stop = threading.Event()

    def unblock() -> None:
        if not stop.wait(5):
            for path in made:
                with open(path, "w") as writer:
                    writer.write("\n")

    def make(path: Path) -> Path:
        os.mkfifo(path)
        made.append(path)
        return path

    threading.Thread(target=unblock, daemon=True).start()
    yield make
    stop.set()


def test_a_fifo_named_as_the_taps_responses_is_an_issue_and_the_requests_import(
    tmp_path: Path, fifo: Callable[[Path], Path]
) -> None:
    tap, _ = three_turns(tmp_path)
    tap.responses.unlink()
    fifo(tap.responses)
    log = load(tap.requests)
    assert len(log.requests) == 3 and all(r.usage is None for r in log.requests)
    assert [str(e) for e in log.errors if e.path == str(tap.responses)] == [
        f"{tap.responses}:0: cannot read the responses (not a regular file (a device or a FIFO)); "
        "requests imported without usage"
    ]


def test_a_tap_whose_responses_are_dev_zero_is_an_issue(tmp_path: Path) -> None:
    tap, _ = three_turns(tmp_path)
    tap.responses.unlink()
    os.symlink("/dev/zero", tap.responses)
    log = load(tap.requests)
    assert len(log.requests) == 3
    assert any("not a regular file" in e.message for e in log.errors if e.path == str(tap.responses))


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "loop"])
def test_check_of_a_fifo_a_device_or_a_symlink_loop_is_one_line(
    tmp_path: Path, fifo: Callable[[Path], Path], capsys: pytest.CaptureFixture[str], target: str
) -> None:
    path = tmp_path / "scenario.jsonl"
    if target == "fifo":
        fifo(path)
    elif target == "loop":
        os.symlink(tmp_path / "other.jsonl", path)
        os.symlink(path, tmp_path / "other.jsonl")
    else:
        path = Path(target)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m wm_kernel check: error: {path}: ") and err.count("\n") == 1


@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_check_tools_of_a_fifo_or_a_device_is_one_line(
    tmp_path: Path, fifo: Callable[[Path], Path], capsys: pytest.CaptureFixture[str], target: str
) -> None:
    scenario = tmp_path / "s.jsonl"
    scenario.write_text(json.dumps(SCENARIO) + "\n", encoding="utf-8")
    tools = fifo(tmp_path / "tools.json") if target == "fifo" else Path(target)
    assert main(["check", str(scenario), "--tools", str(tools)]) == 2
    assert capsys.readouterr().err == (
        f"python -m wm_kernel check: error: --tools {tools}: not a regular file (a device or a FIFO)\n"
    )


def test_check_tools_holding_nan_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.jsonl"
    scenario.write_text(json.dumps(SCENARIO) + "\n", encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text('[{"name": "x", "input_schema": {"maximum": NaN}}]', encoding="utf-8")
    assert main(["check", str(scenario), "--tools", str(tools)]) == 2
    assert capsys.readouterr().err == (
        f"python -m wm_kernel check: error: --tools {tools}: not JSON "
        "(NaN is not a JSON number (numbers must be finite))\n"
    )


@pytest.mark.parametrize(
    "read",
    [read_usage, load_snapshot, Calibration.load],
    ids=["usage", "snapshot", "calibration"],
)
def test_every_other_reader_refuses_a_fifo_and_a_device_at_once(
    tmp_path: Path, fifo: Callable[[Path], Path], read: Callable[[Path], object]
) -> None:
    path = fifo(tmp_path / "file.json")
    with pytest.raises(ValueError, match="not a regular file"):
        read(path)
    with pytest.raises(ValueError, match="not a regular file"):
        read(Path("/dev/zero"))


def test_a_scenario_starting_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    from wm_kernel.experiments import Scenario

    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(SCENARIO) + "\n").encode("utf-8"))
    assert Scenario.load(path).steps == []
