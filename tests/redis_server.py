"""A real ``redis-server`` on loopback for the tests that need one: each is its own process
(started on a free port, no persistence), so a test may stop and restart it mid-way.

The binary is ``$MCPFAST_REDIS_SERVER`` or ``redis-server`` on ``PATH``; when there is none the
test is skipped with the reason, except under ``CI=true`` (`.ci/run` installs it), where it fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

REDIS_MISSING = (
    "redis-server is not installed (apt-get install redis-server, or set MCPFAST_REDIS_SERVER)"
)


def redis_binary() -> str:
    """The ``redis-server`` to run; skips (fails under ``CI=true``) when there is none."""
    found = os.environ.get("MCPFAST_REDIS_SERVER") or shutil.which("redis-server")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(REDIS_MISSING + " and CI=true requires it")
        pytest.skip(REDIS_MISSING)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1; `stop` and `start` keep its port."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Start it and wait (at most ``timeout`` seconds) until it accepts connections."""
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} in {timeout} s")

    def stop(self) -> None:
        """Kill it (as a crash would: no shutdown save)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        self.process = None

    def flush(self) -> None:
        """Empty every database (between tests sharing one server)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            sock.recv(16)


@pytest.fixture(scope="session")
def redis_session_server() -> Iterator[RedisServer]:
    """One server for the whole run of a pytest process (each xdist worker has its own)."""
    server = RedisServer(redis_binary())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_session_server: RedisServer) -> Iterator[str]:
    """The URL of a running, empty Redis (shared by the tests of this process)."""
    if redis_session_server.process is None or redis_session_server.process.poll() is not None:
        redis_session_server.start()
    redis_session_server.flush()
    yield redis_session_server.url


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A Redis of this test's own, which it may `stop` and `start` (a crash and a restart)."""
    server = RedisServer(redis_binary())
    server.start()
    try:
        yield server
    finally:
        server.stop()
