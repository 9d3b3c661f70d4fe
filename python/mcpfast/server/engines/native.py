"""The native HTTP/1.1 engine: Trio sockets driving `protocol.http11` and the `Endpoint` directly,
with no ASGI layer in between. Same endpoint, same limits, same answers as the Hypercorn engine;
a plain reply is one ``send`` of head and body together."""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence

import trio

from ... import jsonrpc
from ...protocol import http11
from ...protocol.http import JSON
from ...protocol.http11 import HttpError, Request
from ...telemetry import current
from ...telemetry.metrics import NATIVE
from ..config import Config
from ..endpoint import Endpoint
from ..responder import refuse_too_large
from ..runtime import ClientGone
from .http1 import Connection, NativeResponder

log = logging.getLogger("mcpfast.native")

_RESOURCE_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}

_ROOM_SECONDS = 0.05
"""At the connection limit with a client waiting: how often to look again for a connection to
close (one waiting for a request head)."""


class NativeEngine:
    """Serves an `Endpoint` on listening sockets: one task per connection, requests on a
    connection answered in turn, and a graceful shutdown."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.config: Config = endpoint.config
        self.draining = False
        """Shutting down: answer what is in flight, with ``connection: close``; read no more."""
        self._idle: set[trio.CancelScope] = set()
        self._heads: dict[trio.CancelScope, None] = {}
        """The reads of a request head in progress, oldest first: what `_make_room` cuts."""
        self.writing: set[Connection] = set()
        """Connections in the middle of a write, watched for clients that stopped reading."""
        telemetry = current()
        instruments = telemetry.instruments if telemetry is not None else None
        self.connections = instruments.connections if instruments is not None else None
        """The ``mcpfast.server.connections`` counter (None: metrics are off, nothing counted)."""
        self.streams = instruments.streams if instruments is not None else None

    async def serve(
        self,
        listeners: Sequence[trio.SocketListener],
        shutdown: Callable[[], Awaitable[None]] | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections until cancelled, or until ``shutdown`` returns: then stop
        accepting, close idle connections, give the requests in flight
        ``config.graceful_seconds`` to finish, and cancel what is left. The endpoint runs
        (`Endpoint.running`: tasks, notifications) as long as this."""
        async with self.endpoint.running() as background:
            background.start_soon(self._watch_writes)
            async with trio.open_nursery() as connections:
                accepting = trio.CancelScope()
                connections.start_soon(self._accept, listeners, connections, accepting)
                task_status.started()
                await (shutdown or trio.sleep_forever)()
                accepting.cancel()
                self._drain()
                grace = self.config.graceful_seconds
                connections.cancel_scope.deadline = trio.current_time() + grace

    async def _accept(
        self,
        listeners: Sequence[trio.SocketListener],
        connections: trio.Nursery,
        accepting: trio.CancelScope,
    ) -> None:
        slots = trio.Semaphore(self.config.max_connections)
        with accepting:  # cancelling closes the listeners
            async with trio.open_nursery() as nursery:
                for listener in listeners:
                    nursery.start_soon(self._accept_on, listener, connections, slots)

    async def _accept_on(
        self, listener: trio.SocketListener, connections: trio.Nursery, slots: trio.Semaphore
    ) -> None:
        """Accept while fewer than ``config.max_connections`` are open. At the limit, a client
        waiting to be accepted makes room: the connection that has waited longest for a
        request head (idle keep-alive, or a head trickling in: a slow or stalled client) is
        closed; when every connection is busy with a request, new clients wait in the listen
        backlog until one closes."""
        async with listener:
            while True:
                await self._slot(listener, slots)
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    slots.release()
                    if exc.errno not in _RESOURCE_ERRORS:
                        raise
                    log.error("accept: %s; retrying in 0.1 s", exc)
                    await trio.sleep(0.1)
                    continue
                connections.start_soon(self._counted, stream, slots)

    async def _counted(self, stream: trio.SocketStream, slots: trio.Semaphore) -> None:
        connections = self.connections
        if connections is not None:
            connections.add(1, NATIVE)
        try:
            await self.connection(stream)
        finally:
            slots.release()
            if connections is not None:
                connections.add(-1, NATIVE)

    async def _watch_writes(self) -> None:
        """Disconnect clients whose write has been blocked past ``write_timeout_seconds``."""
        timeout = self.config.write_timeout_seconds
        while True:
            await trio.sleep(min(1.0, timeout / 4))
            now = trio.current_time()
            for conn in [c for c in self.writing if now - c.write_started > timeout]:
                conn.gone = True
                await trio.aclose_forcefully(conn.stream)  # the blocked send_all raises

    async def _slot(self, listener: trio.SocketListener, slots: trio.Semaphore) -> None:
        """Take a connection slot; at the limit, once a client waits to be accepted, make room
        (again every `_ROOM_SECONDS`, for connections that went idle meanwhile)."""
        if slots.value == 0:
            await trio.lowlevel.wait_readable(listener.socket)
        while True:
            with trio.move_on_after(_ROOM_SECONDS):
                if slots.value == 0:
                    self._make_room()
                await slots.acquire()
                return

    def _make_room(self) -> None:
        """Close the connection that has waited longest for a request head, if any."""
        for reading in self._heads:
            del self._heads[reading]
            reading.cancel()
            return

    def _drain(self) -> None:
        self.draining = True
        for scope in self._idle:
            scope.cancel()

    async def connection(self, stream: trio.SocketStream) -> None:
        """Serve one connection until it closes, misbehaves or idles out; its nursery owns
        everything its requests start."""
        async with trio.open_nursery() as handlers:
            await self.requests(Connection(stream, handlers, self))

    async def requests(self, conn: Connection) -> None:
        """Answer requests in turn until the connection ends or is handed to a new loop."""
        handed_off = False
        try:
            while not self.draining:
                responder = await self._exchange(conn)
                if responder is None or responder.handed_off:
                    handed_off = responder is not None
                    return
                if not (responder.finished and responder.keep_alive) or conn.gone:
                    return
        except HttpError as exc:
            await self._refuse(conn, exc)
        except (ClientGone, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            if not handed_off:
                conn.gone = True
                await trio.aclose_forcefully(conn.stream)

    async def _exchange(self, conn: Connection) -> NativeResponder | None:
        """Read and answer one request; None when there was none (closed, idle, too slow,
        shutting down)."""
        config = self.config
        head = None
        with trio.move_on_after(config.read_timeout_seconds) as reading:
            idle = not conn.buffer  # waiting for a request that may never come: drain cuts it
            if idle:
                self._idle.add(reading)
            self._heads[reading] = None
            try:
                head = await conn.head(config.max_header_bytes, config.max_headers)
            finally:
                self._heads.pop(reading, None)
                if idle:
                    self._idle.discard(reading)
        if head is None:  # closed, or no whole head in time: dropped (as Hypercorn does)
            return None
        request = http11.parse_head(head)
        responder = NativeResponder(conn, request)
        if not request.chunked and len(conn.buffer) >= (request.content_length or 0):
            # The whole body came with its head (the usual request): nothing to wait for, so
            # no deadline (a cancel scope per request would cost more than the MCP layer).
            body = await self._body(conn, request, responder)
        else:
            # The body has its own ``read_timeout_seconds`` from its head, as under Hypercorn.
            with trio.move_on_after(config.read_timeout_seconds) as reading:
                body = await self._body(conn, request, responder)
            if reading.cancelled_caught:
                if not responder.started:
                    raise HttpError(408, "request body not received in time")
                return None
        if body is not None:  # else answered already
            await self._handle(request, responder, body)
        return responder

    async def _body(
        self, conn: Connection, request: Request, responder: NativeResponder
    ) -> bytes | None:
        """The body to pass on, or None after answering (wrong path, body too large)."""
        config = self.config
        has_body = bool(request.content_length) or request.chunked
        if request.path != config.path:
            close = [(b"connection", b"close")] if has_body else []
            if request.path in self.endpoint.metadata_paths and not has_body:
                await self.endpoint.metadata(request.method, request.headers, responder)
                return None
            if request.path in self.endpoint.probes.paths and not has_body:
                await self.endpoint.probes.answer(request.path, request.method, responder)
                return None
            if request.path in self.endpoint.cards.paths and not has_body:
                cards = self.endpoint.cards
                await cards.answer(request.path, request.method, request.headers, responder)
                return None
            await responder.reply(404, b"", [(b"content-type", b"text/plain"), *close])
            return None
        if (
            request.expect_continue
            and has_body
            and (request.content_length or 0) <= config.max_body
        ):
            await conn.write(http11.CONTINUE)
        body = await conn.body(request, config.max_body, config.max_header_bytes)
        if body is None:
            await refuse_too_large(responder, config.max_body)
            return None
        return body if request.method == "POST" else b""

    async def _handle(self, request: Request, responder: NativeResponder, body: bytes) -> None:
        """Run the endpoint for one request; a handler that fails answers 500 if it can."""
        try:
            await self.endpoint.handle(request.method, request.headers, body, responder)
        except Exception:
            log.exception("unhandled error answering %s %s", request.method, request.path)
            if not responder.started:
                await responder.reply(
                    500,
                    jsonrpc.error(None, jsonrpc.INTERNAL_ERROR, "Internal error"),
                    [(b"connection", b"close")],
                )
        finally:
            if responder.streaming:  # the handler left without closing it (client gone)
                responder.stream_ended()

    @staticmethod
    async def _refuse(conn: Connection, exc: HttpError) -> None:
        body = http11.refusal_body(exc.reason)
        head = http11.response_head(
            exc.status,
            [(b"content-type", JSON)],
            length=len(body),
            keep_alive=False,
            version=(1, 1),
        )
        await conn.write(head + body)


async def open_listeners(config: Config, *, reuse_port: bool = False) -> list[trio.SocketListener]:
    """Listening sockets for ``config.host``/``config.port`` (``reuse_port`` lets several
    processes share the port, the kernel spreading connections among them)."""
    if not reuse_port:
        return await trio.open_tcp_listeners(config.port, host=config.host, backlog=1024)
    infos = await trio.socket.getaddrinfo(
        config.host, config.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    listeners = []
    for family, kind, proto, _, address in infos:
        sock = trio.socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        await sock.bind(address)
        sock.listen(1024)
        listeners.append(trio.SocketListener(sock))
    return listeners


def bound_urls(listeners: Sequence[trio.SocketListener]) -> list[str]:
    """``http://host:port`` for each listener, as Hypercorn reports them."""
    urls = []
    for listener in listeners:
        host, port = listener.socket.getsockname()[:2]
        urls.append(f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")
    return urls
