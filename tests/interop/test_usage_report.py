"""``python -m wm_kernel usage``: every log under some folders, per day, model and session; its
totals equal the full import's; the per-file cache; the lines no reader understands named last."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from agent_log_files import claude_trace, codex_rollout, gemini_envelopes, openhands

from wm_kernel.__main__ import main as cli
from wm_kernel.interop import import_log, usage_report
from wm_kernel.interop.report.cli import _Progress
from wm_kernel.interop.report.scan import UsageCache, log_units
from wm_kernel.interop.report.tally import model_key
from wm_kernel.providers.pricing import price

DATA = Path(__file__).resolve().parents[1] / "data" / "interop"
SESSION = DATA / "claude_code" / "session"


def _tree(root: Path) -> Path:
    """A folder tree as users keep them: a Claude Code project (a session with its subagents), a
    Codex sessions folder, a capture, a trajectory and Gemini envelopes."""
    project = root / "claude" / "projects" / "-home-dev-app"
    shutil.copytree(SESSION, project)
    codex = root / "codex" / "sessions" / "2026" / "02" / "23"
    codex.mkdir(parents=True)
    codex_rollout(codex / "rollout-2026-02-23T11-41-04-019c.jsonl")
    claude_trace(root / "trace.jsonl")
    openhands(root / "trajectory.json")
    gemini_envelopes(root / "gemini.envelope.jsonl")
    return root


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli(["usage", *args])
    return status, out.getvalue(), err.getvalue()


def _import_totals(paths: list[Path]) -> dict[str, Any]:
    """The full import's figures over the same files, each imported as import_log reads it."""
    totals = {"requests": 0, "input": 0, "cache_read": 0, "cache_write_5m": 0, "cache_write_1h": 0, "output": 0}
    usd = 0.0
    unpriced = 0
    for path in paths:
        session = import_log(path)
        totals["requests"] += len(session)
        for usage, priced in zip(session.billed_usage(), session.pricing(), strict=True):
            assert usage is not None
            totals["input"] += usage.input_tokens
            totals["cache_read"] += usage.cache_read_tokens
            totals["cache_write_5m"] += usage.cache_write_5m_tokens
            totals["cache_write_1h"] += usage.cache_write_1h_tokens
            totals["output"] += usage.output_tokens
            if priced.priced:
                usd += price(usage, priced.profile).total_usd or 0.0
            else:
                unpriced += 1
    return {**totals, "usd": round(usd, 6), "unpriced": unpriced}


def test_its_totals_equal_the_full_imports(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    status, out, err = _run("--no-cache", "--json", str(root))
    assert status == 0
    total = json.loads(out)["total"]
    units = log_units([root])
    assert len(units) == 5  # the subagents are read with their session
    want = _import_totals(units)
    assert {k: total[k] for k in want} == want
    assert err == "every line of the 5 files was understood\n"
    assert usage_report([units[0]]).last_line() == "every line of the 1 file was understood"


def test_the_json_has_its_tables_and_keys(tmp_path: Path) -> None:
    data = json.loads(_run("--no-cache", "--json", str(_tree(tmp_path)))[1])
    assert list(data)[:4] == ["total", "by_day", "by_model", "by_session"]
    fields = {"requests", "input", "cache_read", "cache_write_5m", "cache_write_1h", "output", "usd", "unpriced"}
    for group in ("day", "model", "session"):
        for entry in data[f"by_{group}"]:
            assert group in entry and fields | {"hit_rate"} <= set(entry)
        assert sum(e["requests"] for e in data[f"by_{group}"]) == data["total"]["requests"]
    days = [e["day"] for e in data["by_day"]]
    assert "2026-02-24" in days and "2025-05-29" in days  # UTC dates of the send times
    models = {e["model"] for e in data["by_model"]}
    assert {"claude-sonnet-4", "claude-3-5-haiku", "gpt-5.3-codex", "gemini-2.5-flash"} <= models
    sessions = {e["session"]: e for e in data["by_session"]}
    # a session's subagents are counted in it; a rollout by its session_meta id
    assert "5e55a000-0000-4000-8000-000000000001" in sessions and "019c-codex-session" in sessions
    assert all("agent-" not in key for key in sessions)


def test_the_hit_rate_is_reads_over_all_prompt_tokens(tmp_path: Path) -> None:
    data = json.loads(_run("--no-cache", "--json", str(gemini_envelopes(tmp_path / "g.jsonl")))[1])
    total = data["total"]
    assert (total["input"], total["cache_read"]) == (16, 7024)
    assert total["hit_rate"] == round(7024 / 7040, 6)


def test_a_model_is_keyed_without_its_snapshot_date() -> None:
    assert model_key("claude-sonnet-4-20250514") == "claude-sonnet-4"
    assert model_key("some-model-2024-07-18") == "some-model"
    assert model_key("gpt-5.3-codex") == "gpt-5.3-codex"
    assert model_key(None) == "(no model)"


def test_since_and_until_keep_the_days_asked_for(tmp_path: Path) -> None:
    path = codex_rollout(tmp_path / "r.jsonl")
    data = json.loads(_run("--no-cache", "--json", "--since", "2026-02-24", str(path))[1])
    assert [e["day"] for e in data["by_day"]] == ["2026-02-24"]
    assert data["total"]["requests"] == 1
    data = json.loads(_run("--no-cache", "--json", "--until", "2026-02-23", str(path))[1])
    assert data["total"]["requests"] == 2
    status, _, err = _run("--since", "2026-03-01", "--until", "2026-02-01", str(path))
    assert status == 1 and "is after --until" in err


def test_by_chooses_the_tables_and_csv_has_one_row_per_entry(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    status, out, _ = _run("--no-cache", "--csv", "--by", "model", str(root))
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0 and {r["group"] for r in rows} == {"model", "total"}
    total = next(r for r in rows if r["group"] == "total")
    assert int(total["requests"]) == sum(int(r["requests"]) for r in rows if r["group"] == "model")
    text = _run("--no-cache", "--by", "day", str(root))[1]
    assert text.startswith("day ") and "\nmodel " not in text and "\ntotal " in text


def test_html_writes_a_page_with_a_chart_per_day(tmp_path: Path) -> None:
    root = _tree(tmp_path / "logs")
    page = tmp_path / "usage.html"
    status, out, _ = _run("--no-cache", "--html", str(page), str(root))
    html = page.read_text(encoding="utf-8")
    days = json.loads(_run("--no-cache", "--json", str(root))[1])["by_day"]
    assert status == 0 and out
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and html.count("<rect") == len(days) == 6
    assert "<script" not in html


def test_unpriced_requests_are_counted_apart_never_priced_as_another(tmp_path: Path) -> None:
    data = json.loads(_run("--no-cache", "--json", str(codex_rollout(tmp_path / "r.jsonl")))[1])
    models = {e["model"]: e for e in data["by_model"]}
    assert models["gpt-5.2"]["unpriced"] == 1 or models["gpt-5.2"]["usd"] > 0
    assert data["total"]["unpriced"] == sum(e["unpriced"] for e in data["by_model"])


def test_a_line_no_reader_understands_is_counted_and_named_last(tmp_path: Path) -> None:
    path = codex_rollout(tmp_path / "r.jsonl")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n" + json.dumps({"what": "is this"}) + "\n")
    status, out, _ = _run("--no-cache", str(tmp_path))
    last = out.splitlines()[-1]
    assert status == 0
    assert last.startswith("2 lines no reader understands, not counted: ")
    assert f"{path}:12: malformed JSON" in last and f"{path}:13: not a Codex rollout line" in last


def test_a_file_no_reader_understands_is_named_too(tmp_path: Path) -> None:
    codex_rollout(tmp_path / "r.jsonl")
    (tmp_path / "settings.json").write_text('{"theme": "dark"}', encoding="utf-8")
    report = usage_report([tmp_path])
    assert report.files == 2 and report.total.requests == 3
    assert report.issues == [
        f"{tmp_path / 'settings.json'}:1: unknown format: " + report.issues[0].split("unknown format: ")[1]
    ]
    assert report.issues[0].endswith("(file not read)")


def test_a_file_being_written_is_read_to_its_last_complete_line(tmp_path: Path) -> None:
    path = codex_rollout(tmp_path / "r.jsonl")
    whole = path.read_text(encoding="utf-8")
    path.write_text(whole + '{"timestamp": "2026-02-24T00:00:02Z", "type": "event_msg", "payl', encoding="utf-8")
    report = usage_report([path])
    assert report.issues == [] and report.total.requests == 3
    assert report.skipped["incomplete last line (still being written)"] == 1


def test_a_response_in_two_files_is_counted_once(tmp_path: Path) -> None:
    shutil.copytree(SESSION, tmp_path / "a")
    shutil.copytree(SESSION, tmp_path / "b")  # a session copied on resume
    once = usage_report([tmp_path / "a"])
    twice = usage_report([tmp_path])
    assert twice.total == once.total and twice.duplicates == once.total.requests


def test_a_second_run_reads_unchanged_files_from_the_cache(tmp_path: Path) -> None:
    root = _tree(tmp_path / "logs")
    cache = UsageCache(tmp_path / "cache")
    first = usage_report([root], cache=cache)
    second = usage_report([root], cache=cache)
    assert (first.cached, second.cached) == (0, 5)
    assert second.total == first.total and second.groups == first.groups and second.skipped == first.skipped


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    path = codex_rollout(tmp_path / "r.jsonl")
    cache = UsageCache(tmp_path / "cache")
    assert usage_report([path], cache=cache).total.requests == 3
    with path.open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps(
                {
                    "timestamp": "2026-02-24T00:00:05Z",
                    "type": "event_msg",
                    "payload": {
                        "type": "token_count",
                        "info": {
                            "total_token_usage": {"input_tokens": 9},
                            "last_token_usage": {"input_tokens": 5, "output_tokens": 1},
                        },
                    },
                }
            )
            + "\n"
        )
    again = usage_report([path], cache=cache)
    assert (again.cached, again.total.requests) == (0, 4)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong rows", "stale stamp"])
def test_a_corrupt_or_stale_entry_is_rebuilt_never_trusted(tmp_path: Path, damage: str) -> None:
    path = codex_rollout(tmp_path / "r.jsonl")
    cache = UsageCache(tmp_path / "cache")
    good = usage_report([path], cache=cache)
    (entry,) = (tmp_path / "cache").glob("*.json")
    text = entry.read_text(encoding="utf-8")
    value = json.loads(text)
    if damage == "garbage":
        entry.write_bytes(b"\x00\xff garbage")
    elif damage == "truncated":
        entry.write_text(text[: len(text) // 2], encoding="utf-8")
    elif damage == "wrong rows":
        value["read"]["rows"][0][4] = -5
        entry.write_text(json.dumps(value), encoding="utf-8")
    else:
        value["read"]["rows"] = value["read"]["rows"][:1]
        value["files"][0][1] += 1
        entry.write_text(json.dumps(value), encoding="utf-8")
    again = usage_report([path], cache=cache)
    assert again.cached == 0 and again.total == good.total
    assert usage_report([path], cache=cache).cached == 1  # rebuilt and written back


def test_the_cache_lives_where_the_environment_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WM_KERNEL_CACHE", str(tmp_path / "here"))
    path = codex_rollout(tmp_path / "r.jsonl")
    assert _run(str(path))[0] == 0
    assert len(list((tmp_path / "here").glob("*.json"))) == 1
    assert _run("--no-cache", str(path))[0] == 0


def test_no_log_is_one_clear_error(tmp_path: Path) -> None:
    status, out, err = _run("--no-cache", str(tmp_path))
    assert (status, out) == (1, "")
    assert err == f"python -m wm_kernel usage: error: no .jsonl or .json log under {tmp_path}\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_line_shows_on_a_terminal_only_after_a_second() -> None:
    clock = iter([0.0, 0.5, 1.5, 2.0, 9.0])
    terminal = _Terminal()
    bar = _Progress(terminal, clock=lambda: next(clock))
    bar(1, 3, 1_000_000)
    assert terminal.getvalue() == ""
    bar(2, 3, 2_000_000)
    bar(3, 3, 3_000_000)
    bar.close()
    assert terminal.getvalue() == "\rusage: 2/3 files, 2 MB read\rusage: 3/3 files, 3 MB read\n"
    piped = io.StringIO()
    quiet = _Progress(piped)
    quiet(1, 1, 5)
    quiet.close()
    assert piped.getvalue() == ""


def test_a_folder_tree_is_searched_to_any_depth_in_order(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    names = [p.relative_to(root).as_posix() for p in log_units([root])]
    # a folder's files, then its folders, each in name order
    assert names == [
        "gemini.envelope.jsonl",
        "trace.jsonl",
        "trajectory.json",
        "claude/projects/-home-dev-app/5e55a000.jsonl",
        "codex/sessions/2026/02/23/rollout-2026-02-23T11-41-04-019c.jsonl",
    ]
    assert os.path.isdir(root / "claude/projects/-home-dev-app/5e55a000/subagents")


@pytest.mark.slow
def test_the_usage_command_needs_no_jupyter_and_no_pandas(tmp_path: Path) -> None:
    """``python -m wm_kernel usage`` imports only the core: not IPython, ipywidgets or pandas."""
    import subprocess
    import sys

    path = codex_rollout(tmp_path / "r.jsonl")
    script = (
        "import sys, contextlib, io\n"
        "import wm_kernel.__main__ as m\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    status = m.main(['usage', '--no-cache', {str(path)!r}])\n"
        "print(status, sorted(n for n in ('IPython', 'ipywidgets', 'pandas', 'numpy') if n in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout == "0 []\n"


def test_records_are_read_exactly_as_json_reads_them(tmp_path: Path) -> None:
    """orjson reads first; a long integer, NaN or a lone surrogate is read by json, as the import
    always read it."""
    from wm_kernel.utils.fastjson import loads_exact

    for text in ('{"n": 123456789012345678901234567890}', '{"n": 18446744073709551616}', "[NaN, 1e400]", '"\\ud800"'):
        assert repr(loads_exact(text.encode(), text)) == repr(json.loads(text))
    with pytest.raises(json.JSONDecodeError, match="Expecting value: line 1 column 2"):
        loads_exact(b"[}", "[}")


def test_a_unit_read_for_the_report_is_freed_without_the_cycle_collector(tmp_path: Path) -> None:
    """A transcript's messages and chains point at one another; the report, done with a unit's
    requests, breaks those links (``ClaudeCodeReader.release``), so nothing is left for the cycle
    collector, which it pauses while a unit is read (and restarts after)."""
    import gc

    from wm_kernel.interop.report.scan import read_rows
    from wm_kernel.testing.synthetic import claude_code_session

    path = tmp_path / "s.jsonl"
    claude_code_session(path, turns=20)
    read = read_rows(path)  # imports and caches made once
    assert gc.isenabled()  # restarted after the unit
    assert len(read.rows) == len(import_log(path).requests) > 20
    gc.collect()
    gc.disable()  # (so that no collection runs before the count below)
    try:
        read_rows(path)
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0  # before: the unit's messages, chains and lines, thousands of objects
