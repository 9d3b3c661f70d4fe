"""The client (`mcpfast.connect`) and the load tester's probe (`mcpfast.load.probe`) detect the
same era and ask ``initialize`` for the same revision: both drive
`mcpfast.protocol.discovery.Negotiation`. Against a real endpoint on loopback whose
``server/discover`` answers -32022 with a given supported list (seed 002: after it, the highest
revision both sides speak)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import mcpfast
from mcpfast.auth._asgi import serve_asgi
from mcpfast.client import EraCache
from mcpfast.server.config import Config
from mcpfast.server.core.endpoint import Endpoint
from mcpfast.server.engines.asgi import App

from ..helpers import TEST_KEYS, replay

server = mcpfast.Server("era", "1.0")


@server.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    return a + b


class Refusing:
    """A real endpoint for `server`, but ``server/discover`` is refused with -32022 listing
    ``supported``; records the revision each ``initialize`` asks for."""

    def __init__(self, supported: list[str]) -> None:
        self.inner = App(Endpoint(server, Config(), TEST_KEYS))
        self.supported = supported
        self.asked: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.inner(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            event = await receive()
            body += event.get("body", b"")
            more = event.get("more_body", False)
        message = json.loads(body)
        if message.get("method") == "initialize":
            self.asked.append(message["params"]["protocolVersion"])
        if message.get("method") != "server/discover":
            await self.inner(scope, replay(body, receive), send)
            return
        data = {"supported": self.supported, "requested": "2026-07-28"}
        error = {"code": -32022, "message": "Unsupported protocol version", "data": data}
        out = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": out})


@asynccontextmanager
async def refusing(app: Refusing) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve_asgi, app, "127.0.0.1", 0)
        yield urls[0] + "/mcp"
        nursery.cancel_scope.cancel()


LOAD_PROBE = """
import json, sys
from mcpfast.load.probe import probe
found = probe(sys.argv[1], "auto", "", "", lambda text: None)
print(json.dumps([found.offer.era, found.offer.version]))
"""
"""The load tester's probe, in a process of its own (locust patches the process with gevent)."""


async def _load_probe(url: str) -> list[str]:
    done = await trio.run_process(
        [sys.executable, "-c", LOAD_PROBE, url], capture_stdout=True, stderr=subprocess.STDOUT
    )
    found: list[str] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return found


@pytest.mark.parametrize(
    ("supported", "version"),
    [
        (["2025-06-18", "2025-03-26"], "2025-06-18"),
        (["2025-03-26"], "2025-03-26"),
        (["2026-07-28", "2025-11-25"], "2025-11-25"),  # retried once in 2026-07-28, refused again
        (["2024-11-05"], "2025-11-25"),  # nothing in common: the newest legacy revision
    ],
)
async def test_the_client_and_the_load_probe_agree_after_32022(
    supported: list[str], version: str
) -> None:
    app = Refusing(supported)
    async with refusing(app) as url:
        async with mcpfast.connect(url, era_cache=EraCache(), timeout=10) as client:
            assert (client.era, client.protocol_version) == ("legacy", version)
            assert (await client.call_tool("add", {"a": 1, "b": 1})).isError is False
        assert await _load_probe(url) == ["legacy", version]
    assert app.asked == [version, version]
