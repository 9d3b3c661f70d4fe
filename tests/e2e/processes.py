"""Servers in their own processes: started on a free port, waited for, always stopped."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path

import trio

from ..helpers import ENGINE, REPO


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range for ``bind(0)`` and outgoing connections (Linux; a default elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _port_pool() -> range | None:
    """This process's ports for `free_port`: below the ephemeral range, so that no ``bind(0)``
    and no outgoing connection (of any test worker) takes one between `free_port` and the
    server's bind; one slice per pytest-xdist worker, so that two workers never pick the same
    port. None (use ``bind(0)``) when the ephemeral range leaves too little room below it."""
    low = min(_ephemeral_range()[0], 32768) - 1
    start = 10000
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1), index + 1)
    size = (low - start) // count
    if size < 200:
        return None
    return range(start + index * size, start + (index + 1) * size)


_POOL = _port_pool()
_HANDED_OUT: set[int] = set()
_RANDOM = random.SystemRandom()  # not the global generator, which Hypothesis reseeds


def free_port() -> int:
    """A port nothing listens on, for a server about to bind it (one this process has not
    handed out before)."""
    for _ in range(1000):
        candidate = 0 if _POOL is None else _RANDOM.choice(_POOL)
        if candidate in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            port: int = sock.getsockname()[1]
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError(f"free_port: no free port found in {_POOL}")


def _spawn(
    argv: Sequence[str], env: dict[str, str] | None, cwd: Path | None, log: Path | None
) -> subprocess.Popen[bytes]:
    full_env = {**os.environ, "PYTHONPATH": str(REPO / "python"), **(env or {})}
    with open(log, "wb") if log is not None else nullcontext(subprocess.PIPE) as sink:
        return subprocess.Popen(
            list(argv), env=full_env, stdout=subprocess.DEVNULL, stderr=sink, cwd=cwd
        )


def _said(process: subprocess.Popen[bytes], log: Path | None) -> str:
    """What a process that exited early wrote to its stderr."""
    if log is not None:
        return log.read_text(errors="replace")
    return process.stderr.read().decode() if process.stderr else "exited"


@asynccontextmanager
async def server_process(
    argv: Sequence[str], port: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> AsyncIterator[str]:
    """Run ``argv`` (which must listen on ``port``) and yield its MCP URL once it answers."""
    async with started_process(argv, port, env, cwd) as (url, _):
        yield url


@asynccontextmanager
async def started_process(
    argv: Sequence[str],
    port: int,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    """`server_process`, yielding the process too (to signal it); its stderr goes to ``log``
    (None: a pipe)."""
    process = _spawn(argv, env, cwd, log)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with trio.fail_after(30):
            while True:
                if process.poll() is not None:
                    raise RuntimeError(_said(process, log))
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                except OSError:
                    await trio.sleep(0.1)
                    continue
                await stream.aclose()
                break
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@asynccontextmanager
async def demo_process() -> AsyncIterator[str]:
    """The demo server (``mcpfast serve``) in its own process, on the engine under test; its
    endpoint URL."""
    port = free_port()
    argv = mcpfast_command("serve", "--port", str(port), "--engine", ENGINE)
    async with server_process(argv, port) as url:
        yield url


def mcpfast_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpfast", *args]


async def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``mcpfast *args`` in its own process (60 s at most), with no browser, display, terminal
    (for console browsers) or secret of the user's, and ``env`` added."""
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "TERM", "MCPFAST_CLIENT_SECRET")
    }
    environment["PYTHONPATH"] = str(REPO / "python")
    environment.update(env)

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            mcpfast_command(*args),
            capture_output=True,
            text=True,
            env=environment,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    return await trio.to_thread.run_sync(run)


def failure(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``mcpfast: ...`` line of a failure (no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("mcpfast: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]
