"""The kernelspec in jupyter-config/ starts IPython with the extension already loaded."""
from __future__ import annotations

import json
import queue
from pathlib import Path

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

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


def test_a_kernel_started_from_the_spec_has_compose_without_load_ext(monkeypatch):
    # JUPYTER_PATH comes first in Jupyter's search path: this finds the repository's folder even
    # when an installed copy of the spec exists
    monkeypatch.setenv("JUPYTER_PATH", str(CONFIG))
    spec = KernelSpecManager().get_kernel_spec("wm-kernel")
    assert Path(spec.resource_dir).resolve() == SPEC_DIR
    manager = KernelManager(kernel_name="wm-kernel")
    manager.start_kernel()
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=TIMEOUT)
        outputs: list[dict] = []
        reply = client.execute_interactive(
            "%wm_session --clock 2026-11-30T09:00:00+00:00 --first-name Ada --trinkets none\n"
            "print(get_ipython().find_line_magic('compose') is not None)\n"
            "%compose --raw\n",
            timeout=TIMEOUT, output_hook=outputs.append)
        assert reply["content"]["status"] == "ok", reply["content"]
        streams = [m["content"] for m in outputs if m["msg_type"] == "stream"]
        assert streams == [{"name": "stdout", "text": "True\n"}]
        results = [m["content"]["data"]["text/plain"] for m in outputs
                   if m["msg_type"] == "execute_result"]
        assert results == ["You are a helpful assistant talking with Ada.\n\n" + "═" * 60
                           + "\nEverything after this delimiter is part of MIRA's scaffolding, "
                           "injected to provide additional context during the reply.\n" + "═" * 60]
    except (queue.Empty, TimeoutError) as exc:  # a hung kernel fails the test, never the suite
        pytest.fail(f"the wm-kernel kernel did not answer within {TIMEOUT}s: {exc!r}")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
