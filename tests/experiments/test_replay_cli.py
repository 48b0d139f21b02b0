"""``python -m wm_kernel replay``: the per-turn table, variants, --out, progress and errors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wm_kernel.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = """\
{"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00", "profile": {"first_name": "Ada"}, "trinkets": ["TimeManager", "PeanutGalleryTrinket"]}
{"step": "compose"}
{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "add_guidance", "args": ["concern", "Slow down."], "kwargs": {"ttl": 1}}
{"step": "turn", "n": 3}
"""  # noqa: E501 - golden text, line for line


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.jsonl"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def test_prints_one_row_per_turn(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(scenario), "--estimate-tokens"]) == 0
    captured = capsys.readouterr()
    assert captured.out == (
        " turn  segment  sections  chars  tokens cache  written  read  uncached\n"
        "    0        1         2    637      94  miss        0     0       194\n"
        "    1        1         3    751     122  miss        0     0       722\n"
        "    2        1         2    637      94  miss        0     0      1194\n"
        "    3        1         2    637      94  miss        0     0      1694\n"
        "3 turns, 4 prompts (turns 0-3), 0 read from the cache, hit rate 0.0% of input tokens, "
        "404 system-prompt tokens "
        "(≈ estimate (chars/4) −50%/+100%), input cost ≈ $0.0114 ($0.0057–$0.0228) at claude-sonnet-4-6's "
        "prices\n"
        "assuming a 500-token exchange per turn (100-token message, 400-token reply)\n"
    )
    assert captured.err == ""  # not a terminal: no progress bar


def test_variants_get_a_block_each(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "replay",
            str(scenario),
            "--estimate-tokens",
            "--variant",
            "orig=original",
            "--variant",
            'quiet={"disabled": ["PeanutGalleryTrinket"]}',
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    blocks = out.split("== ")[1:]
    assert [b.splitlines()[0] for b in blocks] == ["recorded", "orig", "quiet"]
    assert blocks[2].splitlines()[3] == "    1        1         2    637      94  miss        0     0       694"


def test_warnings_are_one_readable_line_each(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # PeanutGalleryTrinket's section has no place in a layout that lists only the datetime
    lean = 'lean={"system": ["base_prompt"], "notification": ["datetime_section"]}'
    assert main(["replay", str(scenario), "--estimate-tokens", "--variant", lean]) == 0
    captured = capsys.readouterr()
    # shown once though the section straggles at every compose of the variant; no file path
    assert captured.err == (
        "warning: section 'peanutgallery_guidance' is not in layout 'lean'; appended to the system prompt\n"
    )
    assert captured.out.count("== ") == 2


def test_out_writes_the_history_csv(scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "history.csv"
    assert main(["replay", str(scenario), "--estimate-tokens", "--variant", "orig=original", "--out", str(out)]) == 0
    assert capsys.readouterr().out.endswith(f"history: 18 rows written to {out}\n")
    frame = pd.read_csv(out)
    assert list(frame.columns) == [
        "variant",
        "turn",
        "segment",
        "placement",
        "section",
        "trinket",
        "chars",
        "tokens",
        "changed",
        "cached",
        "digest",
        "priority",
        "dropped",
        "reply",
        "usage",
    ]
    assert frame.groupby("variant").size().to_dict() == {"orig": 9, "recorded": 9}
    assert frame[(frame.turn == 1) & (frame.variant == "recorded")]["section"].tolist() == [
        "base_prompt",
        "datetime_section",
        "peanutgallery_guidance",
    ]
    assert sorted(os.listdir(tmp_path)) == ["history.csv", "scenario.jsonl"]


def test_progress_bar_only_when_asked(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(scenario), "--estimate-tokens", "--progress"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "\rreplay [#########.....................]  33% 1/3 turns"
        "\rreplay [###################...........]  66% 2/3 turns"
        "\rreplay [##############################] 100% 3/3 turns\n"
    )


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (SCENARIO + '{"step": "turn", "n": -1}\n', [], "replay: {file} line 5: field 'n' must be a positive integer\n"),
        (
            SCENARIO,
            ["--variant", "x=bogus"],
            "replay: --variant x: unknown built-in layout 'bogus' (built in: default, original; or give JSON)\n",
        ),
        (
            SCENARIO,
            ["--variant", "x"],
            "replay: --variant 'x': expected NAME=LAYOUT (a built-in layout name: default, original; or JSON)\n",
        ),
        (
            SCENARIO,
            ["--variant", 'x={"system": ["a"], "footer": []}'],
            "replay: --variant x: unknown field 'system' (a layout's keys are placements: system, "
            "conversation_prefix, post_history, notification; a variant's: layout, base_prompt, disabled, styles)\n",
        ),
        (
            SCENARIO,
            ["--variant", "recorded=original"],
            "replay: --variant recorded: the name is used twice (or is 'recorded', the scenario as it is)\n",
        ),
        (
            SCENARIO,
            ["--variant", 'x={"disabled": ["Nope"]}'],
            "replay: variant 'x': unknown trinket 'Nope' (known: TimeManager, PeanutGalleryTrinket)\n",
        ),
        (
            SCENARIO + '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", '
            '"args": [' + "[" * 200_000 + "]" * 200_000 + "]}\n",
            [],
            "replay: {file} line 5: JSON nested too deeply to read (values may nest at most 100 levels deep)\n",
        ),
        (
            SCENARIO.replace('"trinkets"', '"layout": ' + "[" * 200_000 + "]" * 200_000 + ', "trinkets"'),
            [],
            "replay: {file} line 1: JSON nested too deeply to read (values may nest at most 100 levels deep)\n",
        ),
        (
            SCENARIO + '{"step": "clock", "advance": 1e300}\n',
            [],
            "replay: {file} line 5: field 'advance' is more than a clock can move (at most 315537897600 "
            "seconds, about 10,000 years)\n",
        ),
        (
            SCENARIO + '{"step": "clock", "set": "9999-12-31T23:00:00+00:00"}\n{"step": "clock", "advance": 3600}\n',
            [],
            "replay: {file} line 6: 'clock' step failed: ValueError: advancing the clock 3600 seconds from "
            "9999-12-31T23:00:00+00:00 passes the year 9999\n",
        ),
        (
            SCENARIO + '{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "remove", '
            '"args": ["guidance-9"]}\n',
            [],
            "replay: {file} line 5: feed PeanutGalleryTrinket.remove failed: ValueError: no guidance with id "
            "'guidance-9' (active: none)\n",
        ),
    ],
)
def test_errors_are_one_line_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, args: list[str], message: str
) -> None:
    path = tmp_path / "scenario.jsonl"
    path.write_text(content, encoding="utf-8")
    out = tmp_path / "history.csv"
    assert main(["replay", str(path), "--estimate-tokens", "--out", str(out), *args]) == 2
    captured = capsys.readouterr()
    # every error of the CLI is one line in argparse's form: python -m wm_kernel replay: error: ...
    assert captured.err == "python -m wm_kernel " + message.format(file=path).replace("replay: ", "replay: error: ", 1)
    assert captured.out == ""
    assert not out.exists()


def test_a_failed_csv_write_leaves_the_old_file(
    scenario: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "history.csv"
    out.write_text("previous run\n", encoding="utf-8")

    def broken(self: pd.DataFrame, handle: object, **kwargs: object) -> None:
        handle.write("variant,turn\nrecorded,0\n")  # type: ignore[attr-defined]
        raise OSError("No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken)
    assert main(["replay", str(scenario), "--estimate-tokens", "--out", str(out)]) == 2
    assert capsys.readouterr().err == "python -m wm_kernel replay: error: No space left on device\n"
    assert out.read_text(encoding="utf-8") == "previous run\n"
    assert sorted(os.listdir(tmp_path)) == ["history.csv", "scenario.jsonl"]


@pytest.mark.slow  # runs python -m wm_kernel in subprocesses
def test_the_module_command_exit_codes(scenario: Path, tmp_path: Path) -> None:
    run = [sys.executable, "-m", "wm_kernel", "replay"]
    ok = subprocess.run(
        [*run, str(scenario), "--estimate-tokens"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert (ok.returncode, ok.stderr) == (0, "")
    assert ok.stdout.splitlines()[0] == " turn  segment  sections  chars  tokens cache  written  read  uncached"
    missing = subprocess.run(
        [*run, str(tmp_path / "nope.jsonl")], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert missing.returncode == 2
    assert missing.stderr == (
        f"python -m wm_kernel replay: error: no such file or directory: {tmp_path / 'nope.jsonl'}\n"
    )
    assert missing.stdout == ""


def test_a_scenario_that_composes_nothing_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 25 item 11: it ended with KeyError: 'chars_cached'
    from wm_kernel.experiments import Scenario, compare
    from wm_kernel.experiments.sweep import SweepError

    scenario = Scenario(base_prompt="Hi.", trinkets=[])
    scenario.advance(minutes=1)
    expected = "the scenario composed no prompt (it has no compose or turn step): nothing to compare"
    with pytest.raises(SweepError, match=f"^{re.escape(expected)}$"):
        compare(scenario, {"recorded": None})
    path = tmp_path / "quiet.jsonl"
    scenario.save(path)
    assert main(["replay", str(path), "--estimate-tokens"]) == 2
    assert capsys.readouterr().err == f"python -m wm_kernel replay: error: {expected}\n"


# -- issue 25 item 13: what is not a file is refused; workers are capped at the replays


@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
def test_replay_refuses_what_is_not_a_regular_file(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "device":
        path = Path("/dev/zero")
    elif kind == "fifo":
        path = tmp_path / "pipe.jsonl"
        os.mkfifo(path)  # nobody writes to it: opening it to read would wait forever
    else:
        path = tmp_path / "folder.jsonl"
        path.mkdir()
    assert main(["replay", str(path), "--estimate-tokens"]) == 2
    assert capsys.readouterr().err == (
        f"python -m wm_kernel replay: error: {path}: not a regular file (a scenario is a .jsonl file)\n"
    )


def test_a_line_longer_than_the_limit_is_refused_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wm_kernel.experiments import Scenario, scenario_file
    from wm_kernel.experiments.steps import ScenarioError

    monkeypatch.setattr(scenario_file, "MAX_LINE_CHARS", 1_000)
    path = tmp_path / "long.jsonl"
    Scenario(base_prompt="Hi.", trinkets=[]).save(path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"step": "compose", "base_prompt": "' + "x" * 2_000 + '"}\n')
    with pytest.raises(
        ScenarioError,
        match=r"^.*long\.jsonl line 2: longer than 1,000 characters; "
        r"a scenario line holds one step$",
    ):
        Scenario.load(path)


@pytest.mark.slow
def test_workers_are_capped_at_the_number_of_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from wm_kernel.experiments import Scenario
    from wm_kernel.experiments import cli as cli_module

    started: list[int | None] = []

    class CountingPool(ProcessPoolExecutor):
        def __init__(self, max_workers: int | None = None, **kwargs: Any) -> None:
            started.append(max_workers)
            super().__init__(max_workers, **kwargs)

    monkeypatch.setattr(cli_module, "ProcessPoolExecutor", CountingPool)
    path = tmp_path / "one.jsonl"
    Scenario(base_prompt="Hi.", trinkets=[]).compose().save(path)
    assert main(["replay", str(path), "--estimate-tokens", "--workers", "64"]) == 0
    assert main(["replay", str(path), "--variant", "o=original", "--estimate-tokens", "--workers", "64"]) == 0
    assert started == [2]  # one replay runs here; two get two processes, not 64


def test_a_replay_says_when_its_requests_pass_the_models_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(
        '{"format": "wm-kernel-scenario", "version": 1, "clock": "2026-11-30T09:00:00+00:00"}\n'
        '{"step": "compose"}\n{"step": "turn", "n": 260}\n',
        encoding="utf-8",
    )
    assert main(["replay", str(path), "--estimate-tokens", "--model", "gpt-4o"]) == 0
    tail = capsys.readouterr().out.splitlines()[-2:]
    assert tail[0] == "assuming a 500-token exchange per turn (100-token message, 400-token reply)"
    assert re.fullmatch(
        r"\d+ of 261 requests are longer than gpt-4o's 128,000-token window \(from request 25\d, 128,\d{3} tokens\): "
        r"the provider would refuse them",
        tail[1],
    ), tail[1]


def test_a_request_log_is_pointed_to_import(capsys: pytest.CaptureFixture[str]) -> None:
    log = Path(__file__).resolve().parents[2] / "notebooks" / "logs" / "parcelly_support.jsonl"
    assert main(["replay", str(log)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"python -m wm_kernel replay: error: {log} is a request log (anthropic), not a scenario; "
        f"read it with python -m wm_kernel import {log}\n"
    )
