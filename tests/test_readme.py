"""Every code block of the README runs as written, and its two commands exist."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")


def test_tour_runs_and_does_what_it_says(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "the README has a python tour"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    s = namespace["s"]
    assert s.turn == 3
    history = s.history
    guidance = history[history.section == "peanutgallery_guidance"]
    assert sorted(guidance.turn.unique()) == [1, 2]  # composed at 0 before it was added
    assert "TODAY IS MONDAY, NOVEMBER 30, 2026 AT 9:00 AM GMT." in capsys.readouterr().out


def test_every_code_block_is_tested():
    """A new block in the README is either python (run by the tour test), a notebook cell (the
    ipython blocks, run in IPython and in a kernel), the remote-lab shell lines (checked below) or
    the layout listing."""
    fences = re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)
    kinds = [
        "python"
        if lang == "python"
        else "cell"
        if lang == "ipython"
        else "layout"
        if body.startswith("wm_kernel/")
        else "shell"
        if body.startswith("make lab")
        else "usage"
        if lang == "console" and " usage " in body.splitlines()[0]
        else f"untested: {body[:40]!r}"
        for lang, body in fences
    ]
    assert all(not kind.startswith("untested") for kind in kinds), kinds


def test_the_usage_examples_run_as_shown(tmp_path, monkeypatch, capsys):
    """The console blocks: ``pipx run wm-kernel usage`` runs the console script, which the package
    declares; the example on the tests' session prints what the README shows."""
    from wm_kernel.__main__ import main

    monkeypatch.setenv("WM_KERNEL_CACHE", str(tmp_path))
    monkeypatch.chdir(ROOT)
    blocks = re.findall(r"```console\n(.*?)```", README, flags=re.S)
    assert len(blocks) == 2
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert blocks[0].startswith("$ pipx run wm-kernel usage ") and scripts["wm-kernel"] == "wm_kernel.__main__:main"
    command, *shown = blocks[1].splitlines()
    assert command.startswith("$ python -m wm_kernel usage ")
    capsys.readouterr()
    assert main(command.split()[4:]) == 0
    assert capsys.readouterr().out.splitlines() == shown


def test_the_two_commands_are_make_targets():
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert "`make lab`" in README and "`make test`" in README
    assert re.search(r"^lab:", makefile, flags=re.M) and re.search(r"^test:", makefile, flags=re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text("utf-8")
    # the remote recipe: JupyterLab's own flags, passed through ARGS, and the tunnel to that port
    assert 'make lab ARGS="--no-browser --ip=127.0.0.1 --port 8888"' in README
    assert "ssh -L 8888:localhost:8888" in README


# -- the notebook tour: one cell per block, each showing what its comment says


def tour_cells() -> list[str]:
    """The notebook tour's cells: every ```ipython block of the README, in order."""
    return re.findall(r"```ipython\n(.*?)```", README, flags=re.S)


def test_the_tour_is_cells_each_ending_in_what_it_shows():
    cells = tour_cells()
    assert len(cells) == 8 and cells[0].startswith("%load_ext wm_kernel\n")
    # IPython shows only a cell's last value: no cell's earlier line promises a view
    for cell in cells:
        lines = [line for line in cell.splitlines() if line.strip() and not line.startswith("#")]
        for line in lines[:-1]:
            assert not line.startswith(("%compose", "%trinkets", "%wm_events", "%cache", "%turn")), line


def test_the_tour_shows_in_ipython_what_each_comment_says(capsys):
    """Each cell pasted into a real IPython shell (one ``run_cell`` per cell, through IPython's own
    input transformation): the value each cell ends with is the view its comment promises."""
    pytest.importorskip("IPython")
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    import wm_kernel
    from wm_kernel.core.prompt import ComposedPrompt
    from wm_kernel.display.cache_view import CacheView
    from wm_kernel.display.render import TurnReport
    from wm_kernel.display.tables import Table
    from wm_kernel.instruments.diff import PromptDiff

    shell = InteractiveShell.instance()
    results = []
    try:
        for cell in tour_cells():
            results.append(shell.run_cell(cell, store_history=False))
        session = wm_kernel.current_session()
    finally:
        shell.extension_manager.unload_extension("wm_kernel")
    setup, compose, diff, turn, trinkets, events, cache, dashboard = results
    assert capsys.readouterr().out.startswith(
        "current session: Ada, time zone Europe/London, clock fixed at 2026-11-30T09:00:00+00:00, "
        "8 trinkets, default layout, state in memory\n"
    )
    assert all(r.error_in_exec is None for r in results[:-1]), results
    assert isinstance(compose.result, ComposedPrompt) and compose.result.turn == 0
    assert "text/html" in compose.result._repr_mimebundle_()  # the rich view
    assert isinstance(diff.result, PromptDiff)
    assert diff.result.changed_sections == ["peanutgallery_guidance"]
    assert [s.status for s in diff.result.sections if s.name == "peanutgallery_guidance"] == ["added"]
    assert isinstance(turn.result, TurnReport) and session.turn == 3
    assert repr(turn.result) == (
        "Completed turns 1-3; 1 item expired:\n  turn 3: PeanutGalleryTrinket concern: Keep replies brief."
    )
    assert isinstance(trinkets.result, Table) and len(trinkets.result) == 8
    assert isinstance(events.result, Table) and len(events.result) == 10
    assert isinstance(cache.result, CacheView)
    assert cache.result.simulation.turns["turn"].tolist() == [0, 1, 2, 3]
    assert '<tr class="wm-cache-' in cache.result._repr_html_()  # the coloured table
    # outside a notebook the dashboard says it needs one (in a kernel: the slow test below)
    assert isinstance(dashboard.error_in_exec, UsageError)
    assert str(dashboard.error_in_exec).startswith("%wm_dashboard needs a notebook")


@pytest.mark.slow
def test_the_tour_shows_in_a_notebook_what_each_comment_says(tmp_path):
    """The tour's cells run in a real Jupyter kernel, as a notebook: each cell's output is what
    its comment says (a line of text, a rich view, a table, the widget)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    import os

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in tour_cells()])
    env_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env_path  # the kernel imports this checkout
    try:
        nbclient.NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old

    def shown(cell):
        return [(o["output_type"], sorted(o.get("data", {})), o.get("text", "")) for o in cell.outputs]

    setup, compose, diff, turn, trinkets, events, cache, dashboard = notebook.cells
    assert shown(setup) == [
        (
            "stream",
            [],
            "current session: Ada, time zone Europe/London, clock fixed at "
            "2026-11-30T09:00:00+00:00, 8 trinkets, default layout, state in memory\n",
        )
    ]
    for cell in (compose, diff, turn, trinkets, events, cache):
        [(kind, mimes, _)] = shown(cell)
        assert kind == "execute_result" and "text/html" in mimes, cell.source
    assert "peanutgallery_guidance" in diff.outputs[0]["data"]["text/html"]
    assert "1 item expired" in turn.outputs[0]["data"]["text/html"]
    assert '<tr class="wm-cache-' in cache.outputs[0]["data"]["text/html"]
    [(kind, mimes, _)] = shown(dashboard)
    assert kind == "display_data" and "application/vnd.jupyter.widget-view+json" in mimes


# -- the README names everything a user can open or type


def extension_magics() -> list[str]:
    """Every magic the extension registers, as typed (``%name``, ``%%name``)."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    before = {kind: set(table) for kind, table in shell.magics_manager.magics.items()}
    shell.extension_manager.load_extension("wm_kernel")
    try:
        return sorted(
            ("%" if kind == "line" else "%%") + name
            for kind, table in shell.magics_manager.magics.items()
            for name in set(table) - before[kind]
        )
    finally:
        shell.extension_manager.unload_extension("wm_kernel")


def test_every_notebook_magic_and_doc_is_named():
    magics = extension_magics()
    assert "%compose" in magics and "%%compose" in magics and "%cache" in magics
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    notebooks = [Path(p).stem for p in config["tool"]["pytest"]["ini_options"]["testpaths"] if p.endswith(".ipynb")]
    missing = [f"notebook {name}" for name in notebooks if f"`{name}`" not in README]
    missing += [f"magic {magic}" for magic in magics if f"`{magic}" not in README]
    missing += [
        f"doc {path.name}" for path in sorted((ROOT / "docs").glob("*.md")) if f"docs/{path.name}" not in README
    ]
    assert missing == []


def test_the_layout_matches_the_folders():
    """The code map names every layer folder of wm_kernel (and no old one), and every path it
    names exists."""
    [layout] = re.findall(r"```\n(wm_kernel/ .*?)```", README, flags=re.S)
    lines = [line for line in layout.splitlines() if line.strip()]
    top = [line.split()[0] for line in lines if not line.startswith(" ")]
    nested = [line.split()[0] for line in lines if line.startswith("  ")]
    packages = sorted(p.name + "/" for p in (ROOT / "wm_kernel").iterdir() if (p / "__init__.py").exists())
    assert sorted(name for name in nested if name.endswith("/")) == packages
    assert [name for name in nested if not (ROOT / "wm_kernel" / name).exists()] == []
    assert [name for name in top if not (ROOT / name).exists()] == []


# -- the versions the suite was last green with


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text("utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt: {line!r} is not name==version"
            pins[_canonical(name)] = version
    return pins


def test_constraints_pin_every_dependency_within_pyproject_ranges():
    """constraints.txt pins each dependency the test extra installs (the project itself excluded,
    as `make constraints` leaves it out) at a version pyproject's open ranges accept."""
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    pins = _pins()
    assert "wm-kernel" not in pins and "pip" not in pins
    requirements = [Requirement(r) for r in project["dependencies"]]
    requirements += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    for requirement in requirements:
        name = _canonical(requirement.name)
        if name == "wm-kernel":
            continue
        assert name in pins, f"constraints.txt pins no version of {requirement.name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (requirement, pins[name])
    # pyproject itself stays open for users: no exact pins there
    assert not [str(r) for r in requirements if "==" in str(r.specifier)]


def test_make_and_ci_install_the_recorded_versions_and_try_the_newest():
    makefile = (ROOT / "Makefile").read_text("utf-8")
    stamp = makefile.split("$(STAMP): pyproject.toml $(CONSTRAINTS)\n", 1)[1].split("\n\n", 1)[0]
    assert "-c $(CONSTRAINTS) -e '.[test]'" in stamp and "CONSTRAINTS := constraints.txt" in makefile
    latest = makefile.split("\ntest-latest:\n", 1)[1].split("\n\n", 1)[0]
    assert "--upgrade --upgrade-strategy eager -e '.[test]'" in latest and "-c $(CONSTRAINTS)" not in latest
    assert "$(LATEST)/bin/python -m pytest" in latest
    assert re.search(r"^constraints:\n.*tools/constraints.py write", makefile, flags=re.M | re.S)
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    assert "latest) target=test-latest" in ci and 'make "$target"' in ci
    # the README: still two set-up commands; the others in prose
    table = README.split("## Set up on a fresh machine", 1)[1].split("\n\n")[2]
    assert re.findall(r"`(make [a-z-]+)`", table) == ["make lab", "make test"]
    assert "`make test-latest`" in README and "`make constraints" in README and "`constraints.txt`" in README


def test_the_constraints_tool_writes_what_it_compares(tmp_path, capsys):
    import runpy

    tool = runpy.run_path(str(ROOT / "tools" / "constraints.py"))
    path = tmp_path / "constraints.txt"
    tool["write"](path)
    assert "wm-kernel==" not in path.read_text("utf-8")
    tool["compare"](path)
    assert capsys.readouterr().out.endswith(f"every version is the one {path} records\n")
    path.write_text("pytest==0.0.1\n", encoding="utf-8")
    tool["compare"](path)
    out = capsys.readouterr().out
    assert f"versions that differ from {path}" in out and "  pytest 0.0.1 -> " in out


@pytest.mark.slow  # runs make and a shell
def test_the_install_filter_passes_each_line_on_as_pip_writes_it(tmp_path):
    """`make test`'s first run pipes pip through PIP_OUTPUT, which adds a line before pip's quiet
    unpacking: each line must come out while pip is still writing (Debian's mawk read the pipe in
    blocks, so the lines and the hint came minutes late, all at once)."""
    import queue
    import shutil
    import subprocess
    import threading

    if shutil.which("make") is None:
        pytest.skip("no make")
    makefile = (ROOT / "Makefile").read_text("utf-8")
    block = makefile[makefile.index("PIP_OUTPUT :=") :].split("\n\n", 1)[0]
    (tmp_path / "Makefile").write_text(block + "\n\nfilter:\n\t@$(PIP_OUTPUT)\n", encoding="utf-8")
    run = subprocess.Popen(
        ["make", "-s", "-f", str(tmp_path / "Makefile"), "filter"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert run.stdin is not None and run.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in run.stdout], daemon=True).start()
    run.stdin.write(
        "Collecting nbval\n  Location 'file:///x' is ignored: it is neither a file nor a directory.\n"
        "Installing collected packages: nbval\n"
    )
    run.stdin.flush()
    # pip is unpacking now, its output still open: what it wrote is out already (a deadline, not a timing)
    shown = [lines.get(timeout=60) for _ in range(3)]
    run.stdin.write("Successfully installed nbval-0.11.0\n")
    run.stdin.close()
    assert run.wait(timeout=60) == 0
    assert shown == [
        "Collecting nbval",
        'make: pip is unpacking the downloaded packages now; nothing prints until "Successfully installed" '
        "(a minute or more)",
        "Installing collected packages: nbval",
    ]
    assert lines.get(timeout=60) == "Successfully installed nbval-0.11.0"
