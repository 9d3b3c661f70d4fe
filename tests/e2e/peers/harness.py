"""What the interop tests share: the eras, peer server processes, the stdio command of the full
mcpfast server, and a runner that checks every feature of one session and reports them all."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from ...helpers import ENGINE, REPO
from ..processes import free_port

if TYPE_CHECKING:
    from mcp.types import BlobResourceContents, ContentBlock, TextResourceContents

PEERS = Path(__file__).resolve().parent
MODERN = "2026-07-28"
LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26")
ERAS = (MODERN, *LEGACY)
"""Every revision mcpfast serves; each peer speaks all four (legacy through ``initialize``)."""
NO_ELICITATION = "2025-03-26"
"""The revision before elicitation (and before structured tool output)."""

SUBPROCESS_ENV = {**os.environ, "PYTHONPATH": str(REPO / "python")}
MCPFAST_STDIO = [
    sys.executable,
    "-m",
    "mcpfast",
    "serve",
    "--stdio",
    f"{PEERS / 'mcpfast_full.py'}:server",
]
"""`mcpfast serve --stdio` of `mcpfast_full` (both eras on one pipe)."""

engine_independent = pytest.mark.skipif(
    ENGINE != "hypercorn",
    reason="stdio and the mcpfast client against peer servers use no mcpfast HTTP engine: "
    "the hypercorn run of the suite covers them",
)
"""For tests whose bytes never pass an mcpfast HTTP engine (run once, not once per engine)."""


@contextmanager
def peer_server(script: str, *, timeout: float = 30.0) -> Iterator[str]:
    """Run ``peers/<script> PORT`` (Streamable HTTP on a free port); yield its MCP URL once it
    accepts connections, and stop it afterwards. Its stderr is kept for the error message."""
    port = free_port()
    argv = [sys.executable, str(PEERS / script), str(port)]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=SUBPROCESS_ENV,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"{script} did not start (exit {process.poll()}): {tail}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


Feature = Callable[[], Awaitable[None]]


def text_of(item: ContentBlock | TextResourceContents | BlobResourceContents) -> str:
    """The text of a peer client's content block (a tool result's, a prompt message's) or read
    resource contents, asserting it is text (`TextContent`, `TextResourceContents`)."""
    from mcp import types  # only the interop tests with an SDK client call this

    assert isinstance(item, types.TextContent | types.TextResourceContents), item
    return item.text


async def check_all(features: Mapping[str, Feature], *, timeout: float = 5.0) -> str:
    """Run every feature check in turn (each bounded by ``timeout``); the report of those that
    failed ("" when none did), so that one session (a stdio process) covers them all. Assert on
    it once the session is closed (a failure inside would come wrapped in exception groups)."""
    failed: dict[str, str] = {}
    for name, feature in features.items():
        try:
            with anyio.fail_after(timeout):
                await feature()
        except TimeoutError:
            failed[name] = f"nothing came within {timeout} s"
        except Exception as exc:  # report every feature, not only the first failure
            failed[name] = "".join(traceback.format_exception_only(exc)).strip()
    lines = "".join(f"\n  {name}: {why}" for name, why in failed.items())
    return f"{len(failed)} of {len(features)} features failed:{lines}" if failed else ""


class Changes:
    """Something to wait on until a condition holds (no polling): `notify` after each change."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = anyio.Event()

    async def until(self, condition: Callable[[], Any], what: str, timeout: float = 4.0) -> None:
        """Wait until ``condition()`` is true; AssertionError naming ``what`` after ``timeout``."""
        try:
            with anyio.fail_after(timeout):
                while not condition():
                    await self._event.wait()
        except TimeoutError:
            raise AssertionError(f"no {what} within {timeout} s") from None
