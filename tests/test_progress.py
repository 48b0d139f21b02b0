"""``make test`` is never quiet for long (tests/progress.py): a run of a slow file, in a process of
its own as ``make test`` runs, shows a line at once, the file's name, and a line while a test runs
long (timings are never asserted: bench/ measures)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a pytest run in a process of its own
def test_a_run_says_what_it_does_while_a_slow_test_is_quiet(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n", encoding="utf-8")
    (tmp_path / "test_long.py").write_text(
        "import time\nimport pytest\n\n\n@pytest.mark.slow\ndef test_long():\n    time.sleep(3.5)\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WM_KERNEL_TEST_QUIET": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.progress", "-p", "no:cacheprovider", "test_long.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "pytest: collecting the tests (every module is imported for its doctests)"
    assert "test_long.py " in lines  # the file named as it starts; its dot follows
    running = [line for line in lines if line.startswith("  [running test_long.py::test_long: ")]
    assert len(running) >= 2 and all(line.endswith(" s so far]") for line in running), lines
    assert lines[-1].startswith("1 passed in ")


@pytest.mark.slow  # a pytest run in a process of its own
def test_after_the_summary_no_collection_walks_what_the_run_made(tmp_path: Path) -> None:
    """What the tests made stays out of every collection once the summary is written (the root
    conftest's unconfigure freezes it): collections after it (threading's shutdown, atexit handlers,
    finalisation) walked some 800,000 objects each and held `make test` silent for 15 s."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n", encoding="utf-8")
    (tmp_path / "test_heap.py").write_text(
        "HEAP = [[n] for n in range(200_000)]  # lists: always tracked\n\n\n"
        "def test_heap():\n    assert len(HEAP) == 200_000\n",
        encoding="utf-8",
    )
    # an atexit handler registered first runs last: what a collection would walk at the very end
    (tmp_path / "heap_at_exit.py").write_text(
        "import atexit, gc\n\n\n@atexit.register\ndef report():\n"
        "    print(f'tracked {len(gc.get_objects())} frozen {gc.get_freeze_count()}', flush=True)\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "WM_KERNEL_TEST_QUIET": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "heap_at_exit", "-p", "conftest", "-p", "no:cacheprovider"]
        + ["test_heap.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    words = done.stdout.splitlines()[-1].split()
    assert words[0] == "tracked" and words[2] == "frozen", done.stdout
    assert int(words[3]) > 200_000 > 100 * int(words[1])


def test_the_starting_line_repeats_until_pytest_is_configured() -> None:
    import threading

    from tests.starting import tick

    said: list[str] = []
    stop = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 3:
            stop.set()

    tick(stop, say, 0.001, 0.0)
    assert len(said) == 3
    assert all(line.startswith("pytest: still starting (") and line.endswith("loading its plugins)\n") for line in said)


@pytest.mark.slow  # a pytest run in a process of its own
def test_the_starting_line_stops_once_pytest_is_configured_even_when_its_module_is_collected(
    tmp_path: Path,
) -> None:
    """``-p tests.starting`` says pytest is starting, then stops once pytest is configured;
    collecting the module for its doctests imports it again, which starts no second ticker."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_wait.py").write_text(
        "import time\n\n\ndef test_wait():\n    print('the test runs', flush=True)\n    time.sleep(2.5)\n",
        encoding="utf-8",
    )
    # the child is a pytest of its own, not an xdist worker, even when this test runs in one
    outer = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    env = {**outer, "PYTHONPATH": str(ROOT), "WM_KERNEL_TEST_QUIET": "0.5"}
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "tests.starting", "-p", "no:cacheprovider"]
    command += ["--doctest-modules", "test_wait.py", str(ROOT / "tests" / "starting.py")]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("pytest: starting (")
    assert sum("pytest: starting (" in line for line in lines) == 1, lines
    runs = next(i for i, line in enumerate(lines) if "the test runs" in line)
    # five ticks of 0.5 s fit in the test's 2.5 s: none may come
    assert not [line for line in lines[runs:] if "still starting" in line], lines
