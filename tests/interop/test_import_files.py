"""import_log on paths that are not log files (issue 34 item 12): a FIFO, a device, a folder or
JSON nested too deeply is one line, never a hang, a MemoryError or a RecursionError."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from wm_kernel.interop.log_files import import_log

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_or_a_device_is_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)
    stop = threading.Event()

    def unblock() -> None:  # a reader waiting for a writer is let go after 5 s: it fails, not hangs
        if not stop.wait(5):
            with open(fifo, "w") as writer:
                writer.write("\n")

    threading.Thread(target=unblock, daemon=True).start()
    with pytest.raises(ValueError) as caught:
        import_log(fifo)
    stop.set()
    assert str(caught.value) == f"{fifo}: not a regular file (a device or a FIFO)"
    with pytest.raises(ValueError, match=r"^/dev/zero: not a regular file \(a device or a FIFO\)$"):
        import_log("/dev/zero")


def test_deep_nesting_is_an_issue_of_its_line_not_a_recursion_error(tmp_path: Path) -> None:
    good = (DATA / "support_anthropic.jsonl").read_text(encoding="utf-8")
    path = tmp_path / "log.jsonl"
    path.write_text(good + "[" * 100_000 + "\n", encoding="utf-8")
    log = import_log(path)
    assert log.errors[-1].message == "malformed JSON: nested too deeply to read"
    assert len(log.requests) == len(import_log(DATA / "support_anthropic.jsonl").requests)


def test_a_deeply_nested_otlp_document_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text('{"resourceSpans": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        import_log(path)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"{path}")
