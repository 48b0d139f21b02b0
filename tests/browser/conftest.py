"""A real JupyterLab in a real Chromium: the fixtures of the browser tests.

The tests need Debian's ``chromium`` (``apt-get install chromium``) and the ``playwright`` package;
Playwright's own browser download is not used. Without either, every browser test is skipped and the
terminal summary says so in one line, so a green ``make test`` never hides that the browser was not
looked at.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("WM_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
_skipped: list[str] = []


def shipped_notebooks() -> list[str]:
    """The notebooks the project ships: the ones pyproject's testpaths lists (one list for nbval,
    the browser tests and the notebook script)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    paths = config["tool"]["pytest"]["ini_options"]["testpaths"]
    return [Path(p).name for p in paths if p.endswith(".ipynb")]


def _why_no_browser() -> str | None:
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _why_no_browser()
    if reason is None:
        return
    marker = pytest.mark.skip(reason=f"browser test: {reason}")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(marker)
            _skipped.append(item.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _skipped:
        terminalreporter.write_line(
            f"BROWSER TESTS SKIPPED ({len(_skipped)}): {_why_no_browser()}; "
            f"the notebooks were not checked in a real browser",
            yellow=True,
            bold=True,
        )


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(
    command: list[str], env: dict[str, str], cwd: Path, log_path: Path, ready: Callable[[], object], what: str
) -> Iterator[None]:
    """Run a server (``command``, its output in ``log_path``) until the block ends: wait until
    ``ready()`` stops raising a connection error (a RuntimeError with its log if it exits or is not
    up in 90 s), then stop it (terminated, killed after 20 s)."""
    log = log_path.open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                ready()
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{what} did not start:\n" + log_path.read_text("utf-8", "replace")) from None
                time.sleep(0.3)
        yield
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@dataclass
class Lab:
    """A running JupyterLab: its base URL, token and notebook folder."""

    url: str
    token: str
    root: Path

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the server's REST API with the token; the decoded JSON answer (None if empty)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def shutdown_kernels(self) -> None:
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def set_theme(self, theme: str) -> None:
        self.api(
            "PUT", "/lab/api/settings/@jupyterlab/apputils-extension:themes", {"raw": json.dumps({"theme": theme})}
        )


# JupyterLab settings for a quiet, deterministic page: no news or update toasts, every cell in the
# DOM (windowing would leave cells out of view unrendered), the light theme to start with, no
# autosave.
_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/themes.jupyterlab-settings": {"theme": "JupyterLab Light"},
    # a run notebook is never saved over its copy: the saved widget state stays for the next test
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab from this virtualenv on a free loopback port with a token, serving a temporary
    copy of the shipped notebooks (so running them changes nothing in the checkout)."""
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    root.mkdir()
    for name in shipped_notebooks():
        shutil.copy(ROOT / "notebooks" / name, root / name)
    # the files the notebooks read (scenarios, recordings, logs): every folder beside them
    for folder in (ROOT / "notebooks").iterdir():
        if folder.is_dir() and not folder.name.startswith("."):
            shutil.copytree(folder, root / folder.name)
    settings = base / "settings"
    for relative, value in _SETTINGS.items():
        path = settings / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), "utf-8")
    # the JupyterLab defaults make's install writes into this virtualenv (widget state saved with
    # a notebook); written here too for a virtualenv made before that step existed
    subprocess.run([sys.executable, str(ROOT / "tools" / "lab_settings.py")], check=True, capture_output=True)
    token, port = secrets.token_hex(16), free_port()
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        # the kernel imports this checkout, as the tests do
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    # `make lab` trusts the shipped notebooks, so their saved widget views render before any run
    # (JupyterLab shows an untrusted notebook's widget outputs as plain text)
    notebooks = [str(path) for path in sorted(root.glob("*.ipynb"))]
    subprocess.run([sys.executable, "-m", "jupyter", "trust", *notebooks], env=env, check=True, capture_output=True)
    # the page drives JupyterLab through its command registry (window.jupyterapp), not its menus
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--LabApp.expose_app_in_browser=True",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.port_retries=0",
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--allow-root")
    lab = Lab(f"http://127.0.0.1:{port}", token, root)
    with serving(command, env, root, base / "lab.log", lambda: lab.api("GET", "/api/status"), "JupyterLab"):
        yield lab


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        chromium = driver.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, lab: Lab) -> Iterator[Any]:
    """A fresh page (1400x1000) that records every dialog the page tries to open."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.dialogs = []

    def dismiss(dialog: Any) -> None:
        page.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", dismiss)
    yield page
    context.close()
    lab.shutdown_kernels()
