"""Sweeps: many scenarios under many variants, on any executor, with the serial run's results."""

from __future__ import annotations

import importlib
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wm_kernel.__main__ import main
from wm_kernel.core.composer.layout import Layout
from wm_kernel.experiments import Scenario, Variant, compare, run_variants
from wm_kernel.experiments.progress import TerminalProgress, WidgetProgress
from wm_kernel.experiments.sweep import SweepError, dask_client
from wm_kernel.tokens import EstimateTokenizer, TokenCounter

ROOT = Path(__file__).resolve().parents[2]
VARIANTS: dict[str, Any] = {
    "recorded": None,
    "guidance in system": Layout.default().with_section("peanutgallery_guidance", "system"),
    "no guidance": {"disabled": ["PeanutGalleryTrinket"]},
}


def make(n: int) -> Scenario:
    """A small scenario that differs with ``n`` (its guidance, its number of turns)."""
    scenario = Scenario(
        base_prompt="You help {first_name}.",
        profile={"first_name": "Ada"},
        clock="2026-11-30T09:00:00+00:00",
        trinkets=["TimeManager", "PeanutGalleryTrinket"],
    )
    scenario.compose()
    scenario.feed("PeanutGalleryTrinket", "add_guidance", "concern", f"Slow down ({n}).", ttl=1)
    scenario.advance(minutes=n).advance_turn(2 + n % 3)
    return scenario


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = []
    for n in range(4):
        path = tmp_path / f"s{n}.jsonl"
        make(n).save(path)
        paths.append(path)
    return paths


def estimate() -> TokenCounter:
    return TokenCounter(EstimateTokenizer())


def test_many_scenarios_add_a_scenario_level(files: list[Path]) -> None:
    frame = compare(files, VARIANTS, counter=estimate())
    assert list(frame.index.names) == ["scenario", "variant", "turn"]
    assert frame.index.get_level_values("scenario").unique().tolist() == [str(p) for p in files]
    # scenario by scenario, the variants in order, the turns of each: s1 has 3 turns (0..3)
    assert frame.xs(str(files[1])).index.tolist() == [(v, t) for v in VARIANTS for t in range(4)]
    # each scenario's rows are what comparing it alone gives
    alone = compare(Scenario.load(files[2]), VARIANTS, counter=estimate())
    pd.testing.assert_frame_equal(frame.xs(str(files[2])), alone)
    assert frame.attrs["cache"][str(files[2])] == alone.attrs["cache"]
    named = compare({"a": files[0], "b": make(1)}, {"recorded": None}, counter=estimate())
    assert named.index.get_level_values("scenario").unique().tolist() == ["a", "b"]


@pytest.mark.slow
def test_every_executor_gives_the_serial_frame(files: list[Path]) -> None:
    serial = compare(files, VARIANTS, counter=estimate())
    with ThreadPoolExecutor(max_workers=3) as threads:
        threaded = compare(files, VARIANTS, counter=estimate(), executor=threads)
    with ProcessPoolExecutor(max_workers=2) as processes:
        spread = compare(files, VARIANTS, counter=estimate(), executor=processes)
    for frame in (threaded, spread):
        pd.testing.assert_frame_equal(frame, serial)
        assert frame.attrs == serial.attrs


@pytest.mark.slow
def test_a_local_dask_cluster_gives_the_serial_frame(files: list[Path]) -> None:
    distributed = pytest.importorskip("distributed")
    serial = compare(files, VARIANTS, counter=estimate())
    with (
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_client = compare(files, VARIANTS, counter=estimate(), executor=client)
        on_executor = compare(files, VARIANTS, counter=estimate(), executor=client.get_executor())
    for frame in (on_client, on_executor):
        pd.testing.assert_frame_equal(frame, serial)
        assert frame.attrs == serial.attrs


@pytest.mark.slow
def test_a_failing_scenario_names_its_file_and_line_and_the_others_complete(files: list[Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(
        make(5).dumps() + '{"step": "feed", "trinket": "PeanutGalleryTrinket", '
        '"method": "remove", "args": ["guidance-9"]}\n',
        encoding="utf-8",
    )
    missing = tmp_path / "missing.jsonl"
    sweep = [files[0], broken, files[1], missing]
    expected_lines = [
        f"{broken} line 6: feed PeanutGalleryTrinket.remove failed: ValueError: no guidance with "
        f"id 'guidance-9' (active: none)",
        f"{missing}: no such file or directory: {missing}",
    ]
    good = compare(files[:2], VARIANTS, counter=estimate())
    for executor in (None, ThreadPoolExecutor(max_workers=2), ProcessPoolExecutor(max_workers=2)):
        with pytest.raises(SweepError) as caught:
            compare(sweep, VARIANTS, counter=estimate(), executor=executor)
        if executor is not None:
            executor.shutdown()
        error = caught.value
        assert error.lines == expected_lines  # once per file, not per variant
        assert str(error) == "2 scenario(s) failed: " + "; ".join(expected_lines)
        assert [(f.scenario, f.variant) for f in error.failures] == [
            (str(path), name) for path in (broken, missing) for name in VARIANTS
        ]
        pd.testing.assert_frame_equal(error.completed, good)


def test_a_failure_in_some_variants_names_them() -> None:
    variants = {"recorded": None, "x": {"disabled": ["Nope"]}, "y": Variant(hook=lambda s: 1 / 0)}
    with pytest.raises(SweepError) as caught:
        run_variants([make(0), make(1)], variants, counter=estimate())
    assert caught.value.lines == [
        "scenario-1: variant 'x': unknown trinket 'Nope' (known: TimeManager, PeanutGalleryTrinket)",
        "scenario-1: ZeroDivisionError: division by zero (variant 'y')",
        "scenario-2: variant 'x': unknown trinket 'Nope' (known: TimeManager, PeanutGalleryTrinket)",
        "scenario-2: ZeroDivisionError: division by zero (variant 'y')",
    ]
    assert [(r.scenario, r.name) for r in caught.value.completed] == [
        ("scenario-1", "recorded"),
        ("scenario-2", "recorded"),
    ]
    # one scenario: the failure is its own message, raised after the other variants ran
    with pytest.raises(SweepError, match=r"^step 5: feed PeanutGalleryTrinket.remove failed: ValueError"):
        compare(make(0).feed("PeanutGalleryTrinket", "remove", "guidance-9"), VARIANTS)


@pytest.mark.slow
def test_runs_from_workers_carry_tables_not_sessions(files: list[Path]) -> None:
    here = run_variants(files[:2], {"recorded": None}, counter=estimate(), history=True)
    with ProcessPoolExecutor(max_workers=2) as pool:
        there = run_variants(files[:2], {"recorded": None}, counter=estimate(), executor=pool, history=True)
    assert [r.session is not None for r in here] == [True, True]
    assert [r.session for r in there] == [None, None]
    for mine, theirs in zip(here, there, strict=True):
        pd.testing.assert_frame_equal(theirs.history, mine.session.history)  # type: ignore[union-attr]
    with ProcessPoolExecutor(max_workers=1) as pool:
        plain = run_variants(files[:1], {"recorded": None}, counter=estimate(), executor=pool)
    with pytest.raises(
        ValueError,
        match=r"variant 'recorded' ran in an executor and did not ship "
        r"its history back \(ask for it with history=True\)",
    ):
        _ = plain[0].history


def test_what_cannot_go_to_a_worker_is_refused_before_anything_runs(files: list[Path]) -> None:
    hooked = {"hooked": Variant(hook=lambda s: None)}
    with ProcessPoolExecutor(max_workers=1) as pool:
        with pytest.raises(
            TypeError,
            match=r"^variant 'hooked' cannot be sent to a worker process "
            r"\(.*\); use module-level functions and classes, or a "
            r"Dask client \(cloudpickle\)$",
        ):
            run_variants(files, hooked, executor=pool)
        with pytest.raises(TypeError, match=r"^instruments run in this process; with an executor"):
            run_variants(files, VARIANTS, executor=pool, instruments=[lambda s: None])
    with ThreadPoolExecutor(max_workers=2) as threads:  # threads pickle nothing
        assert len(run_variants(files, hooked, executor=threads, counter=estimate())) == 4
    with pytest.raises(
        TypeError,
        match=r"^executor must be a concurrent.futures.Executor or a "
        r"dask.distributed Client, got int$",
    ):
        compare(files, VARIANTS, executor=4)
    with pytest.raises(ValueError, match=r"^scenario 'a' is given twice$"):
        compare(["a", "a"], VARIANTS)


def test_progress_counts_turns_serially_and_per_scenario_on_an_executor(files: list[Path]) -> None:
    seen: list[tuple[int, list[int]]] = []

    class Recorder:
        def __init__(self, total: int) -> None:
            self.steps: list[int] = []
            seen.append((total, self.steps))

        def advance(self, turns: int) -> None:
            self.steps.append(turns)

        def close(self) -> None:
            self.steps.append(-1)

    turns = [Scenario.load(p).turns for p in files]
    assert turns == [2, 3, 4, 2]
    run_variants(files, {"a": None, "b": None}, counter=estimate(), progress=Recorder)
    with ThreadPoolExecutor(max_workers=2) as threads:
        run_variants(files, {"a": None, "b": None}, counter=estimate(), progress=Recorder, executor=threads)
    (total, serial), (total2, pooled) = seen
    assert total == total2 == 2 * sum(turns)
    # not a TurnCounter: told per replay, in order when serial, as they finish on an executor
    assert serial == [t for t in turns for _ in "ab"] + [-1]
    assert sorted(pooled[:-1]) == sorted(serial[:-1]) and pooled[-1] == -1


@pytest.mark.slow
def test_a_terminal_bar_moves_turn_by_turn_here_and_by_scenario_from_workers(files: list[Path]) -> None:
    import io

    streams = []

    def bar(total: int) -> TerminalProgress:
        streams.append(io.StringIO())
        return TerminalProgress(total, streams[-1], width=10)

    run_variants(files[:2], {"a": None}, counter=estimate(), progress=bar)
    with ProcessPoolExecutor(max_workers=1) as pool:  # one worker: results arrive in order
        run_variants(files[:2], {"a": None}, counter=estimate(), progress=bar, executor=pool)
    assert (
        streams[0].getvalue()
        == "".join(
            f"\rreplay [{'#' * (10 * n // 5)}{'.' * (10 - 10 * n // 5)}] {100 * n // 5:3d}% {n}/5 turns"
            for n in range(1, 6)
        )
        + "\n"
    )
    assert streams[1].getvalue() == ("\rreplay [####......]  40% 2/5 turns\rreplay [##########] 100% 5/5 turns\n")


@pytest.mark.slow
def test_the_notebook_bar_is_a_widget_and_ipywidgets_loads_only_for_it() -> None:
    code = (
        "import sys, wm_kernel.experiments, wm_kernel.experiments.progress as p; "
        "assert 'ipywidgets' not in sys.modules; assert not p.in_kernel(); "
        "assert p.auto_progress(10) is None; assert 'ipywidgets' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    widget = WidgetProgress(4)
    widget.advance(1)
    assert (widget.bar.value, widget.bar.max, widget.text.value) == (1, 4, "1/4 turns")
    widget.advance(3)
    widget.close()
    assert (widget.bar.value, widget.text.value, widget.bar.bar_style) == (4, "4/4 turns", "success")


def test_without_dask_a_cluster_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, files: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if it were not installed
    message = (
        "a Dask cluster needs the optional 'scale' extra (pip install 'wm-kernel[scale]'); "
        "dask.distributed is not installed"
    )
    with pytest.raises(ImportError) as caught:
        dask_client()
    assert str(caught.value) == message
    assert main(["replay", str(files[0]), "--dask", "local"]) == 2
    assert capsys.readouterr() == ("", f"python -m wm_kernel replay: error: {message}\n")


# -- the command line


@pytest.mark.slow
def test_replay_of_many_files_in_parallel_prints_the_serial_output(
    files: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["replay", *map(str, files[:2]), "--estimate-tokens", "--variant", "orig=original"]
    assert main(args) == 0
    serial = capsys.readouterr()
    assert main([*args, "--workers", "2"]) == 0
    assert capsys.readouterr() == serial
    blocks = serial.out.split("== ")[1:]
    assert [b.splitlines()[0] for b in blocks] == [
        f"{files[0]} [recorded]",
        f"{files[0]} [orig]",
        f"{files[1]} [recorded]",
        f"{files[1]} [orig]",
    ]
    assert blocks[2].splitlines()[1:] == [
        " turn  segment  sections  chars  tokens cache  written  read  uncached",
        "    0        1         2    605      86  miss        0     0       186",
        "    1        1         3    723     115  miss        0     0       715",
        "    2        1         2    605      86  miss        0     0      1186",
        "    3        1         2    605      86  miss        0     0      1686",
        "3 turns, 4 prompts (turns 0-3), 0 read from the cache, hit rate 0.0% of input tokens, "
        "373 system-prompt tokens "
        "(≈ estimate (chars/4) −50%/+100%), input cost ≈ $0.0113 ($0.0057–$0.0226) at claude-sonnet-4-6's prices",
        "assuming a 500-token exchange per turn (100-token message, 400-token reply)",
    ]


@pytest.mark.slow
def test_replay_reports_a_failing_file_and_completes_the_others(
    files: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(make(1).dumps() + '{"step": "turn", "n": -1}\n', encoding="utf-8")
    out = tmp_path / "history.csv"
    code = main(
        ["replay", str(files[0]), str(broken), str(files[1]), "--estimate-tokens", "--workers", "2", "--out", str(out)]
    )
    assert code == 2
    captured = capsys.readouterr()
    assert captured.err == f"python -m wm_kernel replay: error: {broken} line 6: field 'n' must be a positive integer\n"
    assert [line for line in captured.out.splitlines() if line.startswith("==")] == [f"== {files[0]}", f"== {files[1]}"]
    history = pd.read_csv(out)
    assert list(history.columns[:3]) == ["scenario", "variant", "turn"]
    assert history["scenario"].unique().tolist() == [str(files[0]), str(files[1])]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "argument --workers: must be at least 1, got 0"),
        (["--workers", "two"], "argument --workers: expected a whole number, got 'two'"),
    ],
)
def test_bad_worker_counts_are_usage_errors(
    files: list[Path], capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit):
        main(["replay", str(files[0]), *args])
    assert capsys.readouterr().err.splitlines()[-1].endswith(message)


@pytest.mark.slow
def test_warnings_raised_in_workers_are_the_serial_runs(files: list[Path]) -> None:
    import warnings

    bare = {"bare": Layout({"system": ["base_prompt"]}, name="bare")}  # places no other section

    def caught(executor: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            compare(files[:2], bare, counter=estimate(), executor=executor)
        return sorted({f"{w.category.__name__}: {w.message}" for w in seen})

    serial = caught(None)
    assert serial == [
        "StragglerSectionWarning: section 'datetime_section' is not in layout 'bare'; appended to the system prompt",
        "StragglerSectionWarning: section 'peanutgallery_guidance' is not in layout 'bare'; "
        "appended to the system prompt",
    ]
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert caught(pool) == serial
        # the test suite's filters make this warning an error: in a worker too, it fails the replay
        with pytest.raises(SweepError, match=r"StragglerSectionWarning: section 'datetime_section'"):
            compare(files[:2], bare, counter=estimate(), executor=pool)
    with pytest.raises(SweepError, match=r"StragglerSectionWarning: section 'datetime_section'"):
        compare(files[:2], bare, counter=estimate())


# -- a worker that dies (issue 25 item 4): the finished replays survive, the dead one is named


def _killer(session: Any) -> None:
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.slow
def test_a_killed_worker_fails_its_replay_and_keeps_every_finished_one(files: list[Path]) -> None:
    variants = {"recorded": None, "killer": Variant(hook=_killer)}
    with ProcessPoolExecutor(max_workers=2) as pool, pytest.raises(SweepError) as caught:
        run_variants(files[:3], variants, counter=estimate(), executor=pool)
    error = caught.value
    assert [(f.scenario, f.variant) for f in error.failures] == [(str(path), "killer") for path in files[:3]]
    assert error.lines == [f"{path}: the worker process replaying it died (variant 'killer')" for path in files[:3]]
    assert [(r.scenario, r.name) for r in error.completed] == [(str(path), "recorded") for path in files[:3]]
    serial = run_variants(files[:3], {"recorded": None}, counter=estimate())
    for finished, expected in zip(error.completed, serial, strict=True):
        pd.testing.assert_frame_equal(finished.table, expected.table)


def _replay_or_die(task: Any) -> Any:
    """The worker's replay, except that the file named killer.jsonl kills the worker."""
    import os
    import signal

    compare_module = importlib.import_module("wm_kernel.experiments.compare")
    if task.scenario_name.endswith("killer.jsonl"):
        os.kill(os.getpid(), signal.SIGKILL)
    return compare_module._REAL_REPLAY_IN_WORKER(task)  # type: ignore[attr-defined]


@pytest.mark.slow
def test_replay_reports_a_dead_worker_in_one_line_and_prints_what_finished(
    files: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    compare_module = importlib.import_module("wm_kernel.experiments.compare")
    killer = tmp_path / "killer.jsonl"
    make(1).save(killer)
    monkeypatch.setattr(compare_module, "_REAL_REPLAY_IN_WORKER", compare_module._replay_in_worker, raising=False)
    monkeypatch.setattr(compare_module, "_replay_in_worker", _replay_or_die)
    code = main(["replay", str(files[0]), str(killer), str(files[1]), "--estimate-tokens", "--workers", "2"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == f"python -m wm_kernel replay: error: {killer}: the worker process replaying it died\n"
    assert [line for line in captured.out.splitlines() if line.startswith("==")] == [f"== {files[0]}", f"== {files[1]}"]
