"""Graceful shutdown of ``mcpfast serve`` on SIGTERM, on both engines: the listener closes at
once, a request in flight still gets its answer, then the process exits cleanly."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from ..helpers import meta
from .processes import free_port, mcpfast_command, started_process

SLOW_SERVER = """
import pathlib
import trio
import mcpfast
server = mcpfast.Server("slow")
@server.tool()
async def nap(seconds: float, started: str) -> str:
    pathlib.Path(started).touch()
    await trio.sleep(seconds)
    return f"slept {seconds}"
"""


def _call(seconds: float, started: Path) -> dict[str, Any]:
    """A call of ``nap``, which creates the file ``started`` once it runs (`call_running`)."""
    arguments = {"seconds": seconds, "started": str(started)}
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "nap", "arguments": arguments, "_meta": meta()},
    }


async def call_running(started: Path) -> None:
    """Until the server runs the call of `_call` naming ``started`` (at most 10 s)."""
    with trio.fail_after(10):
        while not await trio.Path(started).exists():
            await trio.sleep(0.02)


HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "nap",
}


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_sigterm_lets_the_request_in_flight_finish(tmp_path: Path, engine: str) -> None:
    target = tmp_path / "slow.py"
    target.write_text(SLOW_SERVER)
    port = free_port()
    argv = mcpfast_command("serve", f"{target}:server", "--port", str(port), "--engine", engine)
    async with started_process(argv, port) as (url, process):
        answers: list[httpx2.Response] = []
        async with httpx2.AsyncClient(timeout=10) as http:

            async def slow_call() -> None:
                answers.append(await http.post(url, json=_call(2.0, started), headers=HEADERS))

            started = tmp_path / "started"
            with trio.fail_after(15):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(slow_call)
                    await call_running(started)
                    process.send_signal(signal.SIGTERM)
                    refused = False
                    while not refused:  # the listener closes (well before the call ends)
                        try:
                            stream = await trio.open_tcp_stream("127.0.0.1", port)
                        except OSError:
                            refused = True
                        else:
                            await stream.aclose()
                            await trio.sleep(0.05)
                    assert not answers, "no longer accepting while the call still runs"
        assert answers[0].status_code == 200
        assert answers[0].json()["result"]["content"][0]["text"] == "slept 2.0"
        with trio.fail_after(10):
            await trio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
        assert process.returncode == 0, process.stderr.read() if process.stderr else ""


@pytest.mark.parametrize("engine", ["hypercorn", "native"])
async def test_sigterm_ends_long_lived_streams_at_once(tmp_path: Path, engine: str) -> None:
    """An open ``subscriptions/listen`` stream does not hold the shutdown for the whole grace
    period (10 s): it ends cleanly, for its client to reconnect elsewhere."""
    target = tmp_path / "slow.py"
    target.write_text(SLOW_SERVER)
    port = free_port()
    argv = mcpfast_command("serve", f"{target}:server", "--port", str(port), "--engine", engine)
    listen = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": meta()},
    }
    headers = {**HEADERS, "mcp-method": "subscriptions/listen"}
    del headers["mcp-name"]
    async with started_process(argv, port) as (url, process):
        async with httpx2.AsyncClient(timeout=10) as http:
            with trio.fail_after(8):
                async with http.stream("POST", url, json=listen, headers=headers) as response:
                    assert response.headers["content-type"].startswith("text/event-stream")
                    data = b""
                    signalled = False
                    async for chunk in response.aiter_bytes():
                        data += chunk
                        if b"acknowledged" in data and not signalled:
                            process.send_signal(signal.SIGTERM)
                            signalled = True
                    # the loop ended: the server closed the stream cleanly (no exception)
                assert b"notifications/subscriptions/acknowledged" in data
                await trio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
        assert process.returncode == 0
