"""Testing your server without sockets: the real `mcpfast.Client` over an in-memory transport.

    async def test_add(server: Server) -> None:
        async with mcpfast.testing.connect(server, era="legacy") as client:
            result = await client.call_tool("add", {"a": 1, "b": 2})

Each HTTP exchange the client makes is handed straight to the server's ``Endpoint`` (in a task
of the `connect` block's nursery), and what the server answers (a JSON reply, or an SSE stream
event by event) comes back as the client's HTTP response: the bytes on the wire are exactly those
of Streamable HTTP, only the sockets are missing. Closing a response tells the server that the
client went away, as a dropped connection would. It runs on Trio's clock, so Trio's
``autojump_clock`` makes waits instant.

The server side used: ``Endpoint(server, config, keys)`` with ``endpoint.running()`` and
``endpoint.handle(method, headers, body, responder)``, the ``Responder`` protocol, ``Config`` and
``KeyRing``.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import httpx2
import trio

from ._nursery import background_nursery
from .client import Client
from .client.connect import connect as _connect
from .protocol import sse
from .protocol.discovery import EraCache
from .protocol.http import JSON, STREAM_HEADERS, Headers

if TYPE_CHECKING:
    from .server import Server
    from .server.config import Config
    from .server.core.endpoint import Endpoint
    from .server.state.keys import KeyRing

__all__ = ["connect"]

URL = "http://127.0.0.1/mcp"
"""Where the client believes the server is (a loopback name passes the Host guard)."""


@asynccontextmanager
async def connect(
    server: Server,
    era: Literal["auto", "modern", "legacy"] = "modern",
    *,
    config: Config | None = None,
    keys: KeyRing | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """A `Client` connected in memory to ``server``.

    Args:
        era: as `mcpfast.connect` (``"auto"`` probes; the verdict is not cached).
        config: the server's settings (default ``Config()``).
        keys: the session-signing keys (default: a fresh random key).
        options: any other keyword of `mcpfast.connect` (``on_elicit=``, ``log_level=``, …).

    Raises:
        TransportError: as `mcpfast.connect`. The block's own exception comes out as itself;
            one raised by the server's handling of an exchange is not turned into an answer:
            it ends the block.
    """
    from .server.config import Config
    from .server.core.endpoint import Endpoint
    from .server.state.keys import KeyRing

    ring = keys or KeyRing(keys={"test": secrets.token_bytes(32)}, signing="test")
    endpoint = Endpoint(server, config or Config(), ring)
    async with endpoint.running(), background_nursery() as nursery:
        transport = MemoryTransport(endpoint, nursery)
        async with (
            httpx2.AsyncClient(transport=transport) as http,
            _connect(URL, era, http_client=http, era_cache=EraCache(), **options) as client,
        ):
            yield client


class MemoryTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that hands every request to ``endpoint`` in a task of ``nursery``."""

    def __init__(self, endpoint: Endpoint, nursery: trio.Nursery) -> None:
        self.endpoint = endpoint
        self.nursery = nursery

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Start the exchange and return once the server has begun its answer.

        Cancelled while waiting, the server sees the client go away.
        """
        body = await request.aread()
        headers = {name.lower(): value for name, value in request.headers.items()}
        exchange = MemoryResponder()
        self.nursery.start_soon(self._exchange, request.method, headers, body, exchange)
        try:
            await exchange.started.wait()
        except BaseException:
            exchange.disconnect()
            raise
        return httpx2.Response(
            exchange.status,
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in exchange.headers],
            stream=_Body(exchange),
            request=request,
        )

    async def _exchange(
        self, method: str, headers: Mapping[str, str], body: bytes, exchange: MemoryResponder
    ) -> None:
        try:
            await self.endpoint.handle(method, headers, body, exchange)
        finally:
            exchange.finish()


class MemoryResponder:
    """The server's `Responder` for one in-memory exchange: the head is kept for the client's
    response, body chunks go through a memory channel."""

    def __init__(self) -> None:
        self.status = 500
        self.headers: Headers = []
        self.started = trio.Event()
        self.gone = trio.Event()
        self._send, self.chunks = trio.open_memory_channel[bytes](math.inf)

    def _start(self, status: int, headers: Headers) -> None:
        self.status, self.headers = status, headers
        self.started.set()

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        self._start(status, [*([(b"content-type", JSON)] if body else []), *(headers or [])])
        self._put(body)
        self.finish()

    async def open_stream(self, headers: Headers | None = None) -> None:
        self._start(200, [*STREAM_HEADERS, *(headers or [])])

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        self._put(sse.encode_event(message, event_id, retry_ms))
        await trio.lowlevel.checkpoint()

    async def keepalive(self) -> None:
        self._put(sse.KEEPALIVE)
        await trio.lowlevel.checkpoint()

    async def close(self) -> None:
        self.finish()

    async def wait_disconnect(self) -> None:
        await self.gone.wait()

    def watch(self, scope: trio.CancelScope) -> None:
        return None  # `wait_disconnect` tells

    def _put(self, chunk: bytes) -> None:
        """Hand a chunk to the client (dropped once the answer is finished or the client gone)."""
        if chunk:
            try:
                self._send.send_nowait(chunk)
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                pass

    def finish(self) -> None:
        """End the answer (a server that never began one answers 500 with no body)."""
        self.started.set()
        self._send.close()

    def disconnect(self) -> None:
        """The client went away: the server's `wait_disconnect` returns."""
        self.gone.set()
        self.chunks.close()


class _Body(httpx2.AsyncByteStream):
    """A response body read from the exchange's channel; closing it disconnects."""

    def __init__(self, exchange: MemoryResponder) -> None:
        self.exchange = exchange

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.exchange.chunks:
            yield chunk

    async def aclose(self) -> None:
        self.exchange.disconnect()
