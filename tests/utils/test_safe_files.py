"""The bounded file readers cost what the file holds, not what the bound allows."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from wm_kernel.utils.safe_files import UnreadableFileError, read_bytes, read_text


@pytest.mark.parametrize("read", [read_bytes, read_text])
def test_reading_a_small_file_never_allocates_the_bound(tmp_path: Path, read: object) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"a": 1}\n' * 1000, encoding="utf-8")
    tracemalloc.start()
    try:
        data = read(path)  # type: ignore[operator]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(data) == 9000
    assert peak < 1 << 20  # the default bound is 512 MiB; a 9 kB file costs kilobytes


def test_a_file_over_the_bound_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("x" * 101, encoding="utf-8")
    with pytest.raises(UnreadableFileError, match=r"big.txt: larger than 100 bytes$"):
        read_bytes(path, max_bytes=100)
    with pytest.raises(UnreadableFileError, match=r"big.txt: larger than 100 characters$"):
        read_text(path, max_chars=100)
