"""A real Valkey (or Redis) server for tests: started on a free loopback port in a temporary folder.

No mock stands in for the server: the tests that use it skip, with the reason below, when neither
``valkey-server`` nor ``redis-server`` is installed (Debian: ``apt-get install redis-server``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

SERVER_BINARIES = ("valkey-server", "redis-server")
MISSING_REASON = (
    "no valkey-server or redis-server on PATH (Debian: apt-get install redis-server); the real-server tests did not run"
)


def server_binary() -> str | None:
    """The first server binary found on PATH, or None."""
    for name in SERVER_BINARIES:
        path = shutil.which(name)
        if path is not None:
            return path
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """One server process; ``url`` names it. ``stop()``/``start()`` simulate an outage or restart
    (same port, same data folder; nothing persisted: a restarted server starts empty)."""

    def __init__(self, binary: str, folder: Path, *, persistent: bool = False) -> None:
        self.binary = binary
        self.folder = folder
        self.persistent = persistent  # an append-only file, fsynced on every write: survives kill -9
        self.port = _free_port()
        self.url = f"valkey://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.folder),
                "--save",
                "",
                "--appendonly",
                "yes" if self.persistent else "no",
                "--appendfsync",
                "always",
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
                "--logfile",
                str(self.folder / "server.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                log = self.folder / "server.log"
                raise RuntimeError(f"{self.binary} exited at start: {log.read_text() if log.exists() else 'no log'}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self.binary} did not answer on port {self.port} within 10 s")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def kill(self) -> None:
        """kill -9: no chance to answer or flush anything."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def restart(self) -> None:
        self.stop()
        self.start()
