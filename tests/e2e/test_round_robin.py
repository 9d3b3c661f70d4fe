"""The round-robin proxy the scale-out tests put in front of several servers: each request goes
to the next backend (on one kept-alive client connection), SSE responses stream through event by
event, and a client that goes away cancels the backend's handler."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx2
import trio

import mcpfast
from mcpfast import Context
from mcpfast.protocol import sse

from ..helpers import MODERN, REPO, Wire, meta, running
from .processes import free_port
from .round_robin import round_robin


def _named(name: str) -> mcpfast.Server:
    """A server whose ``whoami`` tool answers its name."""
    server = mcpfast.Server(name)

    @server.tool()
    def whoami() -> str:
        return name

    return server


async def _whoami(wire: Wire) -> str:
    reply = await wire.modern("tools/call", {"name": "whoami", "arguments": {}})
    text: str = reply.result["content"][0]["text"]
    return text


async def test_requests_alternate_between_backends_on_one_connection() -> None:
    async with running(_named("a")) as a, running(_named("b")) as b:
        async with round_robin([a, b.removesuffix("/mcp")]) as proxy:
            async with httpx2.AsyncClient(timeout=10) as http:
                wire = Wire(http, proxy.url + "/mcp")
                with trio.fail_after(10):
                    names = [await _whoami(wire) for _ in range(4)]
    assert names == ["a", "b", "a", "b"]
    assert proxy.served == [0, 1, 0, 1]


async def test_a_backend_that_is_down_is_a_502_and_the_next_request_goes_on() -> None:
    async with running(_named("up")) as up:
        async with round_robin([f"http://127.0.0.1:{free_port()}", up]) as proxy:
            async with httpx2.AsyncClient(timeout=10) as http:
                wire = Wire(http, proxy.url + "/mcp")
                with trio.fail_after(10):
                    down = await http.post(wire.url, content=b"{}")
                    assert down.status_code == 502
                    assert await _whoami(wire) == "up"


streaming = mcpfast.Server("streaming")
step_seen = trio.Event()
handler_cancelled = trio.Event()


@streaming.tool()
async def two_steps(ctx: Context) -> str:
    """Reports progress, then waits until the test has seen that progress through the proxy."""
    global step_seen, handler_cancelled
    await ctx.report_progress(1, 2)
    try:
        with trio.fail_after(10):
            await step_seen.wait()
    except trio.Cancelled:
        handler_cancelled.set()
        raise
    return "both steps"


def _call_two_steps() -> tuple[dict[str, Any], dict[str, str]]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "two_steps",
            "arguments": {},
            "_meta": meta(progressToken="p"),
        },
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "two_steps",
    }
    return body, headers


async def test_sse_streams_through_event_by_event() -> None:
    global step_seen
    step_seen = trio.Event()
    body, headers = _call_two_steps()
    frames: list[dict[str, Any]] = []
    async with running(streaming) as url, round_robin([url]) as proxy:
        async with httpx2.AsyncClient(timeout=10) as http:
            parser = sse.Parser()
            with trio.fail_after(10):
                async with http.stream(
                    "POST", proxy.url + "/mcp", json=body, headers=headers
                ) as response:
                    assert response.headers["content-type"].startswith("text/event-stream")
                    async for chunk in response.aiter_bytes():
                        for event in parser.feed(chunk):
                            if event.data:
                                frames.append(json.loads(event.data))
                                # the handler waits for this: a buffering proxy never gets here
                                step_seen.set()
    assert frames[0]["method"] == "notifications/progress"
    assert frames[-1]["result"]["content"][0]["text"] == "both steps"


async def test_a_client_that_goes_away_cancels_the_backend_request() -> None:
    global step_seen, handler_cancelled
    step_seen, handler_cancelled = trio.Event(), trio.Event()
    body, headers = _call_two_steps()
    async with running(streaming) as url, round_robin([url]) as proxy:
        async with httpx2.AsyncClient(timeout=10) as http:
            with trio.fail_after(10):
                async with http.stream(
                    "POST", proxy.url + "/mcp", json=body, headers=headers
                ) as response:
                    async for chunk in response.aiter_bytes():
                        if b"notifications/progress" in chunk:
                            break  # closes the connection mid-stream
                await handler_cancelled.wait()


async def test_the_script_proxies_too() -> None:
    async with running(_named("a")) as a, running(_named("b")) as b:
        port = free_port()
        script = [sys.executable, str(REPO / "tests/e2e/round_robin.py"), "--listen", str(port)]
        process = subprocess.Popen([*script, a, b], stderr=subprocess.DEVNULL)
        try:
            async with httpx2.AsyncClient(timeout=10) as http:
                wire = Wire(http, f"http://127.0.0.1:{port}/mcp")
                with trio.fail_after(20):
                    while True:
                        try:
                            first = await _whoami(wire)
                            break
                        except httpx2.TransportError:
                            await trio.sleep(0.1)
                    assert {first, await _whoami(wire)} == {"a", "b"}
        finally:
            process.terminate()
            process.wait(5)
