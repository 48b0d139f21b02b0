"""Shared fixtures: a deterministic Session and a real IPython shell with the extension loaded."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from wm_kernel.core.clock import ManualClock
from wm_kernel.core.profile import Profile
from wm_kernel.session import Session, set_current_session

START = "2026-11-30T09:00:00+00:00"


@pytest.fixture
def session() -> Iterator[Session]:
    """Every built-in trinket, Ada in London, a ManualClock at Monday 30 November 2026, 09:00 UTC;
    current for the magics while the test runs."""
    s = Session(
        base_prompt="You help {first_name}.",
        profile=Profile(first_name="Ada", timezone="Europe/London"),
        clock=ManualClock(START),
    )
    set_current_session(s)
    yield s
    set_current_session(None)


@pytest.fixture
def ip(session: Session) -> Iterator[object]:
    """IPython's InteractiveShell with ``wm_kernel`` loaded (unloaded afterwards)."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("wm_kernel")
    yield shell
    shell.extension_manager.unload_extension("wm_kernel")


# -- real parts: a Valkey/Redis server the tests start themselves (tests/valkey_server.py); without
# a server binary they skip, and the root conftest.py lists them in the run's summary
@pytest.fixture(scope="session")
def valkey_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real ``valkey-server`` (or ``redis-server``) on a free loopback port, for the whole run."""
    pytest.importorskip("valkey", reason="the valkey client is not installed (pip install 'wm-kernel[valkey]')")
    from valkey_server import MISSING_REASON, LocalServer, server_binary

    binary = server_binary()
    if binary is None:
        pytest.skip(MISSING_REASON)
    server = LocalServer(binary, tmp_path_factory.mktemp("valkey"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fresh_valkey_server(tmp_path: pathlib.Path) -> Iterator[object]:
    """A server of its own, for tests that stop and restart it."""
    pytest.importorskip("valkey", reason="the valkey client is not installed (pip install 'wm-kernel[valkey]')")
    from valkey_server import MISSING_REASON, LocalServer, server_binary

    binary = server_binary()
    if binary is None:
        pytest.skip(MISSING_REASON)
    server = LocalServer(binary, tmp_path)
    server.start()
    yield server
    server.stop()


KERNEL_TIMEOUT = 60  # seconds a real kernel gets to start and to answer


@pytest.fixture
def kernel_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A client of a real kernel started from the repository's ``wm-kernel`` kernelspec (the
    extension loaded), ready; shut down afterwards. A kernel that does not answer in time fails
    the test, never the suite."""
    import queue

    pytest.importorskip("ipykernel")
    manager_module = pytest.importorskip("jupyter_client.manager")
    # JUPYTER_PATH comes first in Jupyter's search path: this finds the repository's folder even
    # when an installed copy of the spec exists
    monkeypatch.setenv("JUPYTER_PATH", str(pathlib.Path(__file__).resolve().parents[1] / "jupyter-config"))
    manager = manager_module.KernelManager(kernel_name="wm-kernel")
    manager.start_kernel()
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=KERNEL_TIMEOUT)
        yield client
    except (queue.Empty, TimeoutError) as exc:
        pytest.fail(f"the wm-kernel kernel did not answer within {KERNEL_TIMEOUT}s: {exc!r}")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
