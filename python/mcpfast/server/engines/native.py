"""The native HTTP/1.1 engine: plain sockets on Trio (`sockets`) driving `protocol.http11` and
the `Endpoint` directly, with no ASGI layer in between. Same endpoint, same limits, same answers
as the Hypercorn engine; a plain reply is one ``send`` of head and body together.

The hot path does no per-request work a request that cannot block does not need: no cancel
scope (the deadline of a request head is kept by a sweeper, `_watch`, that closes connections
past it), no checkpoint but the wait for the next request's bytes (or one explicit checkpoint
when they were already there)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import trio

from ... import jsonrpc
from ...protocol import http11
from ...protocol.http import JSON
from ...protocol.http11 import HttpError, Request
from ...telemetry import current
from ...telemetry.metrics import NATIVE
from ..access import current_peer
from ..config import Config
from ..core.endpoint import Endpoint
from ..seams import ClientGone, refuse_too_large
from .http1 import Connection
from .responder import DISCONNECT_SECONDS, NativeResponder
from .room import Room
from .sockets import Listener, Socket
from .sockets import open_listeners as open_sockets

log = logging.getLogger("mcpfast.native")

ACCEPT_BURST = 100
"""The most connections accepted in one turn of the loop, after the one waited for
(`room.Room.accept_waiting`; asyncio takes as many as its listen backlog, 100 by default)."""
_SWEEPS_PER_TIMEOUT = 8
"""How often per read or write timeout `NativeEngine._watch` looks: a stalled client is cut
between 1x and 1.125x its timeout."""


class NativeEngine:
    """Serves an `Endpoint` on listening sockets: one task per connection, requests on a
    connection answered in turn, and a graceful shutdown."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.config: Config = endpoint.config
        self.max_header_bytes = self.config.max_header_bytes
        """The largest request head read, and response head written (`http11.check_head_size`)."""
        self.draining = False
        """Shutting down: answer what is in flight and what the client has sent already (the
        last answer with ``connection: close``); read no more."""
        self.room: Room[Connection] = Room(self.config.max_connections)
        """The open connections and those waiting for a request head (`_watch` advances its
        tick and cuts those past ``read_timeout_seconds``; `_drain` closes idle ones)."""
        self.watched: dict[trio.CancelScope, Connection] = {}
        """Handlers to cancel once their client goes away (`_watch_clients`)."""
        self.writing: set[Connection] = set()
        """Connections in the middle of a write, watched for clients that stopped reading."""
        telemetry = current()
        instruments = telemetry.instruments if telemetry is not None else None
        self.connections = instruments.connections if instruments is not None else None
        """The ``mcpfast.server.connections`` counter (None: metrics are off, nothing counted)."""
        self.streams = instruments.streams if instruments is not None else None

    async def serve(
        self,
        listeners: Sequence[Listener],
        shutdown: Callable[[], Awaitable[None]] | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections until cancelled, or until ``shutdown`` returns: then stop
        accepting, close idle connections, give the requests in flight
        ``config.graceful_seconds`` to finish, and cancel what is left. The endpoint runs
        (`Endpoint.running`: tasks, notifications) as long as this."""
        async with self.endpoint.running() as background:
            background.start_soon(self._watch)
            background.start_soon(self._watch_clients)
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
        listeners: Sequence[Listener],
        connections: trio.Nursery,
        accepting: trio.CancelScope,
    ) -> None:
        with accepting:  # cancelling closes the listeners
            async with trio.open_nursery() as nursery:
                for listener in listeners:
                    nursery.start_soon(self._accept_on, listener, connections)

    async def _accept_on(self, listener: Listener, connections: trio.Nursery) -> None:
        """Accept while fewer than ``config.max_connections`` are open; at the limit, as
        `room.Room` admits (the connection that has waited longest for a request head makes
        room)."""
        room = self.room
        try:
            while True:
                sock = await room.accept(listener)
                connections.start_soon(self._counted, sock)
                for sock in room.accept_waiting(listener, ACCEPT_BURST):
                    connections.start_soon(self._counted, sock)
        finally:
            listener.close()

    async def _counted(self, sock: Socket) -> None:
        connections = self.connections
        if connections is not None:
            connections.add(1, NATIVE)
        try:
            await self.connection(sock)
        finally:
            self.room.leave()
            if connections is not None:
                connections.add(-1, NATIVE)

    async def _watch(self) -> None:
        """Disconnect clients whose write has been blocked past ``write_timeout_seconds``, and
        those that have not sent a whole request head within ``read_timeout_seconds`` (closed
        quietly, as Hypercorn drops them)."""
        config = self.config
        interval = min(1.0, config.read_timeout_seconds, config.write_timeout_seconds)
        interval /= _SWEEPS_PER_TIMEOUT
        head_ticks = config.read_timeout_seconds / interval
        timeout = config.write_timeout_seconds
        room = self.room
        while True:
            await trio.sleep(interval)
            room.tick += 1
            now = trio.current_time()
            for conn in [c for c in self.writing if now - c.write_started > timeout]:
                conn.cut()  # the blocked send_all raises
            room.expire(head_ticks)

    async def _watch_clients(self) -> None:
        """Cancel the handlers whose client has closed its connection (a peek each, every
        `DISCONNECT_SECONDS` while any is watched): a task per handler would cost more than the
        MCP layer."""
        watched = self.watched
        while True:
            await trio.sleep(DISCONNECT_SECONDS)
            for scope, conn in list(watched.items()):
                if conn.gone or conn.sock.peer_closed():
                    conn.gone = True
                    del watched[scope]
                    scope.cancel()

    def _drain(self) -> None:
        """Answer no more requests but those sent already: close the connections idle between
        requests, with no byte of a next one read or waiting in the kernel."""
        self.draining = True
        heads = self.room.heads
        for conn in [c for c in heads if not c.waiting()]:
            del heads[conn]
            conn.cut()

    async def connection(self, sock: Socket) -> None:
        """Serve one connection until it closes, misbehaves or idles out; its nursery owns
        everything its requests start; they see its remote address (`access.current_peer`)."""
        current_peer.set(sock.peer())
        async with trio.open_nursery() as handlers:
            await self.requests(Connection(sock, handlers, self))

    async def requests(self, conn: Connection) -> None:
        """Answer requests in turn until the connection ends or is handed to a new loop."""
        handed_off = False
        sock = conn.sock
        try:
            while not self.draining or conn.waiting():
                waits = sock.waits
                responder = await self._exchange(conn)
                if responder is not None and responder.rest is not None:
                    if not await responder.run_rest():  # a detached stream, in this task
                        return
                    continue
                if responder is None or responder.handed_off:
                    handed_off = responder is not None
                    return
                if not (responder.finished and responder.keep_alive) or conn.gone:
                    return
                if sock.waits == waits:  # the request was there already: let others run
                    await trio.lowlevel.checkpoint()
        except HttpError as exc:
            await self._refuse(conn, exc)
        except (ClientGone, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            if not handed_off:
                self.room.heads.pop(conn, None)
                conn.cut()

    async def _exchange(self, conn: Connection) -> NativeResponder | None:
        """Read and answer one request; None when there was none (closed between requests).

        Raises:
            HttpError: a head or body that breaks the rules (`requests` refuses it).
            ClientGone: the client went away in the middle of a request.
        """
        config = self.config
        room = self.room
        heads = room.heads
        heads[conn] = room.tick  # `_watch` closes it past ``read_timeout_seconds``
        request = await conn.head(config.max_header_bytes, config.max_headers)
        heads.pop(conn, None)
        if request is None:  # closed between requests
            return None
        path = http11.target_path(request.target)
        responder = NativeResponder(conn, request)
        body = NativeBody(conn, request, responder, config)
        try:  # in this coroutine, not one more per request
            await self.endpoint.exchange(request.method, path, request.headers, body, responder)
        except Exception:  # a handler that fails answers 500 if it can
            log.exception("unhandled error answering %s %s", request.method, path)
            if not responder.started:
                await responder.reply(
                    500,
                    jsonrpc.error(None, jsonrpc.INTERNAL_ERROR, "Internal error"),
                    [(b"connection", b"close")],
                )
        finally:
            if responder.streaming:  # the handler left without closing it (client gone)
                responder.stream_ended()
        if body.failed is not None:  # the body broke the connection: end it as `requests` does
            raise body.failed
        return responder

    @staticmethod
    async def _refuse(conn: Connection, exc: HttpError) -> None:
        body = http11.refusal_body(exc.reason)
        headers = [(b"content-type", JSON)]
        limit = conn.engine.max_header_bytes
        await conn.write(http11.response(exc.status, headers, body, keep_alive=False, limit=limit))


class NativeBody:
    """The `Body` of a request on a native connection, read off it only when asked (at the MCP
    path), any method's (a GET's is read and dropped: the next request follows it). Whatever
    breaks the read (a slow or malformed body, the client gone) is kept in ``failed``, for the
    engine to end the connection with once the endpoint has returned."""

    __slots__ = ("_config", "_conn", "_request", "_responder", "failed", "unread")

    def __init__(
        self, conn: Connection, request: Request, responder: NativeResponder, config: Config
    ) -> None:
        self._conn = conn
        self._request = request
        self._responder = responder
        self._config = config
        self.unread = bool(request.content_length) or request.chunked
        self.failed: Exception | None = None

    async def read(self) -> bytes | None:
        """The body (a POST's; ``b""`` for other methods), or None: answered already (413), or
        failed (``failed``)."""
        request = self._request
        length = request.content_length or 0
        if (
            not request.chunked
            and not request.expect_continue
            and length <= self._config.max_body
            and len(self._conn.buffer) >= length
        ):
            # The whole body came with its head (the usual request): nothing to wait for, so
            # no deadline (a cancel scope per request would cost more than the MCP layer).
            body = self._conn.take(length)
            return body if request.method == "POST" else b""
        try:
            return await self._read()
        except (HttpError, ClientGone, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self.failed = exc
            return None

    async def _read(self) -> bytes | None:
        """The body, reading at most ``read_timeout_seconds`` from its head, as under Hypercorn.

        Raises:
            HttpError: 408 past that deadline; 431 or 400 for a malformed chunked body.
            ClientGone: the client went away.
        """
        with trio.move_on_after(self._config.read_timeout_seconds) as reading:
            body = await self._take()
        if reading.cancelled_caught:
            raise HttpError(408, "request body not received in time")
        return body

    async def _take(self) -> bytes | None:
        request = self._request
        config = self._config
        if (
            request.expect_continue
            and self.unread
            and (request.content_length or 0) <= config.max_body
        ):
            await self._conn.write(http11.CONTINUE)
        body = await self._conn.body(request, config.max_body, config.max_header_bytes)
        if body is None:
            await refuse_too_large(self._responder, config.max_body)
            return None
        return body if request.method == "POST" else b""


async def open_listeners(config: Config, *, reuse_port: bool = False) -> list[Listener]:
    """Listening sockets for ``config.host``/``config.port`` (``reuse_port`` lets several
    processes share the port, the kernel spreading connections among them)."""
    return await open_sockets(config.host, config.port, reuse_port=reuse_port)


def bound_urls(listeners: Sequence[Listener]) -> list[str]:
    """``http://host:port`` for each listener, as Hypercorn reports them."""
    urls = []
    for listener in listeners:
        host, port = listener.sock.getsockname()[:2]
        urls.append(f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")
    return urls
