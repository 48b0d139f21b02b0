"""Every code block of the README runs as written, and its two commands exist."""
from __future__ import annotations

import re
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


def test_the_notebook_block_runs_in_ipython_as_pasted(capsys):
    """The magics block, trailing ``# comments`` included, pasted into a real IPython shell: no
    line fails and the session ends where the comments say."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    import wm_kernel

    blocks = re.findall(r"```\n(%load_ext wm_kernel\n.*?)```", README, flags=re.S)
    assert len(blocks) == 1, "the README has one notebook block"
    shell = InteractiveShell.instance()
    try:
        result = shell.run_cell(blocks[0], store_history=False)
        assert result.error_before_exec is None and result.error_in_exec is None, result
        session = wm_kernel.current_session()
        assert session.turn == 3
        assert shell.user_ns["p"].turn == 0   # p = %compose keeps the ComposedPrompt
    finally:
        shell.extension_manager.unload_extension("wm_kernel")
    assert "unrecognized arguments" not in capsys.readouterr().err


def test_every_code_block_is_tested():
    """A new block in the README is either python (run by the tour test), the notebook block
    (run in IPython), the remote-lab shell lines (checked below) or the layout listing."""
    fences = re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)
    kinds = ["python" if lang == "python" else "magics" if body.startswith("%load_ext")
             else "layout" if body.startswith("wm_kernel/")
             else "shell" if body.startswith("make lab") else f"untested: {body[:40]!r}"
             for lang, body in fences]
    assert all(not kind.startswith("untested") for kind in kinds), kinds


def test_the_two_commands_are_make_targets():
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert "`make lab`" in README and "`make test`" in README
    assert re.search(r"^lab:", makefile, flags=re.M) and re.search(r"^test:", makefile, flags=re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text("utf-8")
    # the remote recipe: JupyterLab's own flags, passed through ARGS, and the tunnel to that port
    assert 'make lab ARGS="--no-browser --ip=127.0.0.1 --port 8888"' in README
    assert "ssh -L 8888:localhost:8888" in README
