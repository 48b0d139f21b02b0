"""``%plan``: the current imported session's compaction plan, as a table with the total saving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from compaction_transcripts import manual_after_idle_and_switch, no_compaction
from IPython.core.error import UsageError

from wm_kernel.display.tables import Table


def test_plan_shows_the_table_and_the_total_saving(ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = manual_after_idle_and_switch(tmp_path)
    ip.run_line_magic("wm_import", f"'{path}'")
    capsys.readouterr()
    table = ip.run_line_magic("plan", "")
    assert isinstance(table, Table) and len(table) == 1
    assert table.attrs["total_saving_usd"] == pytest.approx(0.556012, abs=1e-9)
    assert capsys.readouterr().out == (
        f"{path.name}: 1 compaction, total saving $0.556012 (a plan never costs more than what was recorded)\n"
    )
    text = repr(table)
    assert "compact before the cache expires (within 300 s of 2026-01-05 10:00:30 UTC, on claude-haiku-4-5)" in text
    assert "<table" in table._repr_html_()


def test_plan_says_so_in_one_line_without_a_compaction(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = no_compaction(tmp_path)
    ip.run_line_magic("wm_import", f"'{path}'")
    capsys.readouterr()
    assert ip.run_line_magic("plan", "") is None
    assert capsys.readouterr().out == f"{path.name}: no compaction in the log, nothing to plan\n"


def test_plan_on_a_session_that_is_no_imported_log_and_with_arguments_is_a_usage_error(ip: Any) -> None:
    with pytest.raises(UsageError, match=r"^%plan: the current session is not an imported log; import one"):
        ip.run_line_magic("plan", "")
    with pytest.raises(UsageError, match="unrecognized arguments: --soon"):
        ip.run_line_magic("plan", "--soon")


def test_unloading_the_extension_removes_plan(ip: Any) -> None:
    assert ip.find_line_magic("plan") is not None
    ip.extension_manager.unload_extension("wm_kernel")
    try:
        assert ip.find_line_magic("plan") is None
    finally:
        ip.extension_manager.load_extension("wm_kernel")
