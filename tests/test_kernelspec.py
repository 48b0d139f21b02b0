"""The kernelspec in jupyter-config/ starts IPython with the extension already loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402

pytestmark = pytest.mark.slow  # starts a real kernel

CONFIG = Path(__file__).resolve().parents[1] / "jupyter-config"
SPEC_DIR = CONFIG / "kernels" / "wm-kernel"
TIMEOUT = 60


def test_kernel_json_names_the_kernel_and_loads_the_extension():
    spec = json.loads((SPEC_DIR / "kernel.json").read_text(encoding="utf-8"))
    assert spec["display_name"] == "Python 3 (wm-kernel)"
    assert spec["language"] == "python"
    assert "--IPKernelApp.extensions=wm_kernel" in spec["argv"]
    assert spec["argv"][:3] == ["python", "-m", "ipykernel_launcher"]


def test_a_kernel_started_from_the_spec_has_compose_without_load_ext(kernel_client):
    spec = KernelSpecManager().get_kernel_spec("wm-kernel")  # kernel_client set JUPYTER_PATH
    assert Path(spec.resource_dir).resolve() == SPEC_DIR
    outputs: list[dict] = []
    reply = kernel_client.execute_interactive(
        "%wm_session --clock 2026-11-30T09:00:00+00:00 --first-name Ada --trinkets none\n"
        "print(get_ipython().find_line_magic('compose') is not None)\n"
        "%compose --raw\n",
        timeout=TIMEOUT,
        output_hook=outputs.append,
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    streams = [m["content"] for m in outputs if m["msg_type"] == "stream"]
    assert streams == [
        {
            "name": "stdout",
            "text": "current session: Ada, time zone UTC, clock fixed at "
            "2026-11-30T09:00:00+00:00, 0 trinkets, default layout, state in memory\nTrue\n",
        }
    ]
    results = [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]
    assert results == [
        "You are a helpful assistant talking with Ada.\n\n"
        + "═" * 60
        + "\nEverything after this delimiter is part of MIRA's scaffolding, "
        "injected to provide additional context during the reply.\n" + "═" * 60
    ]
