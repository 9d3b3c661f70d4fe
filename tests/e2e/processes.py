"""Servers in their own processes: started on a free port, waited for, always stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from ..helpers import REPO


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def server_process(
    argv: Sequence[str], port: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> AsyncIterator[str]:
    """Run ``argv`` (which must listen on ``port``) and yield its MCP URL once it answers."""
    async with started_process(argv, port, env, cwd) as (url, _):
        yield url


@asynccontextmanager
async def started_process(
    argv: Sequence[str], port: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    """`server_process`, yielding the process too (to signal it)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO / "python"), **(env or {})}
    process = subprocess.Popen(
        list(argv), env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        with trio.fail_after(30):
            while True:
                if process.poll() is not None:
                    raise RuntimeError(
                        process.stderr.read().decode() if process.stderr else "exited"
                    )
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


def mcpfast_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpfast", *args]
