"""read_usage of a file: a byte order mark drops no record, NaN is one line naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wm_kernel.dialects.usage import read_usage

USAGE = {"input_tokens": 50, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 5}


def test_a_usage_file_behind_a_byte_order_mark_reads_every_record(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (json.dumps(USAGE) + "\n").encode() * 2)
    assert len(read_usage(path)) == 2


def test_nan_in_a_usage_file_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    path.write_text(json.dumps(USAGE) + "\n" + '{"input_tokens": NaN}\n', encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        read_usage(path)
    assert str(caught.value) == "usage.jsonl line 2: not JSON (NaN is not a JSON number (numbers must be finite))"
