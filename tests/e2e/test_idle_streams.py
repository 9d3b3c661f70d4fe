"""Idle long-lived streams (``subscriptions/listen`` and the legacy GET stream), on both
engines: each waits in one small task for the bus, the client and its keepalive timer, and on
the native engine its request is let go meanwhile (`streams.detach`). They still get their
notifications and keepalives, and a client that leaves is noticed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

import mcpfast
from mcpfast.server.state.local_bus import LocalBus

from ..helpers import MODERN, meta, running

LEGACY = "2025-11-25"
ENGINES = pytest.mark.parametrize("engine", ["hypercorn", "native"])
KINDS = pytest.mark.parametrize("kind", ["listen", "get"])


def _server() -> mcpfast.Server:
    server = mcpfast.Server("idle-streams", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text."""
        return text

    return server


def _request(method: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} /mcp HTTP/1.1", "host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _session(port: int) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "tests", "version": "1"},
        },
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "connection": "close",
    }
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(_request("POST", headers, json.dumps(body).encode()))
        data = b""
        with trio.fail_after(5):
            while b"\r\n\r\n" not in data:
                data += await stream.receive_some()
    for line in data.split(b"\r\n\r\n")[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"mcp-session-id":
            return value.strip().decode()
    raise AssertionError(data[:300])


class Idle:
    """One open stream, read as it comes."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.data = b""

    async def until(self, wanted: bytes, count: int = 1) -> None:
        """Read until ``wanted`` came ``count`` times (in 5 s at most)."""
        with trio.fail_after(5):
            while self.data.count(wanted) < count:
                chunk = await self.stream.receive_some()
                assert chunk, f"the server closed the stream: {self.data[-300:]!r}"
                self.data += chunk


@asynccontextmanager
async def _open(kind: str, url: str) -> AsyncIterator[Idle]:
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    if kind == "listen":
        body = {
            "jsonrpc": "2.0",
            "id": "sub-1",
            "method": "subscriptions/listen",
            "params": {"_meta": meta(), "notifications": {"toolsListChanged": True}},
        }
        request = _request(
            "POST",
            {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": MODERN,
                "mcp-method": "subscriptions/listen",
            },
            json.dumps(body).encode(),
        )
    else:
        headers = {
            "accept": "text/event-stream",
            "mcp-session-id": await _session(port),
            "mcp-protocol-version": LEGACY,
        }
        request = _request("GET", headers)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        idle = Idle(stream)
        await idle.until(b"\r\n\r\n")
        assert idle.data.startswith(b"HTTP/1.1 200 "), idle.data[:300]
        yield idle


async def _subscriptions(bus: LocalBus, count: int) -> None:
    """Wait (5 s at most) until the bus holds ``count`` subscriptions."""
    with trio.fail_after(5):
        while bus.subscription_count() != count:
            await trio.sleep(0.02)


@ENGINES
@KINDS
async def test_an_idle_stream_gets_keepalives_and_notifications(engine: str, kind: str) -> None:
    server = _server()
    async with (
        running(server, engine=engine, keepalive_seconds=0.2) as url,
        _open(kind, url) as idle,
    ):
        await idle.until(b": keep-alive", 2)
        server.add_tool(lambda: "x", name="added")
        await idle.until(b"notifications/tools/list_changed")
        await idle.until(b": keep-alive", idle.data.count(b": keep-alive") + 2)
    frames = [
        json.loads(line[len(b"data: ") :])
        for line in idle.data.split(b"\n")
        if line.startswith(b"data: {")
    ]
    changed = [f for f in frames if f.get("method") == "notifications/tools/list_changed"]
    assert len(changed) == 1
    if kind == "listen":
        assert changed[0]["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "sub-1"}


@ENGINES
async def test_a_client_leaving_an_idle_stream_is_noticed(engine: str) -> None:
    """Its subscription ends at once (not at the next keepalive), whichever stream it was."""
    server = _server()
    async with running(server, engine=engine, keepalive_seconds=60) as url:
        assert isinstance(server.bus, LocalBus)  # the one the endpoint made
        async with _open("listen", url), _open("get", url) as kept:
            async with _open("listen", url), _open("get", url):
                await _subscriptions(server.bus, 4)
            await _subscriptions(server.bus, 2)
            server.add_tool(lambda: "x", name="added")  # the streams left still get it
            await kept.until(b"notifications/tools/list_changed")
        await _subscriptions(server.bus, 0)


@ENGINES
async def test_many_idle_streams_on_one_connection_each(engine: str) -> None:
    """Streams opened one after another on a server all get the same notification."""
    server = _server()
    async with running(server, engine=engine, keepalive_seconds=60) as url:
        assert isinstance(server.bus, LocalBus)  # the one the endpoint made
        async with _open("listen", url) as a, _open("get", url) as b, _open("listen", url) as c:
            await _subscriptions(server.bus, 3)
            server.add_tool(lambda: "x", name="added")
            for idle in (a, b, c):
                await idle.until(b"notifications/tools/list_changed")
