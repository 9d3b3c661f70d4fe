"""The native HTTP/1.1 engine: Trio sockets driving `protocol.http11` and the `Endpoint` directly,
with no ASGI layer in between. Same endpoint, same limits, same answers as the Hypercorn engine;
a plain reply is one ``send`` of head and body together."""

from __future__ import annotations

import errno
import logging
import re
import socket
from collections.abc import Awaitable, Callable, Sequence

import trio

from .. import jsonrpc
from ..protocol import http11, sse
from ..protocol.http import JSON, STREAM_HEADERS, Headers
from ..protocol.http11 import HttpError, Request
from .config import Config
from .endpoint import ClientGone, Endpoint
from .responder import refuse_too_large

log = logging.getLogger("mcpfast.native")

_RECEIVE = 65536
_RESOURCE_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}


_METHOD_SO_FAR = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]*")
_VERSIONS = (b"HTTP/1.1", b"HTTP/1.0")


def not_a_request_line(data: bytes | bytearray) -> HttpError | None:
    """The refusal for a head in progress whose bytes so far cannot begin a request line that
    `http11.parse_head` accepts (a token method, a target, ``HTTP/1.1`` or ``HTTP/1.0``, single
    spaces, CRLF), else None: a TLS ClientHello or binary data is refused at its first bytes
    instead of being held for ``read_timeout_seconds`` waiting for a blank line. Only the
    request line is looked at; ``data`` starts after any CRLFs between requests."""
    if data[:1] == b"\x16":
        return HttpError(400, "a TLS handshake on a plain-HTTP port: use http://")
    end = data.find(b"\n")
    complete = end != -1
    line = bytes(data[:end] if complete else data)
    bare_lf = complete and not line.endswith(b"\r")
    if line.endswith(b"\r"):
        line = line[:-1]
    parts = line.split(b" ")
    if (
        len(parts) > 3
        or (complete and len(parts) != 3)
        or b"\r" in line
        or b"\x00" in line
        or not _METHOD_SO_FAR.fullmatch(parts[0])
        or (len(parts) > 1 and not parts[0])
        or (len(parts) == 3 and not parts[1])
    ):
        return HttpError(400, "not an HTTP/1.x request line")
    if bare_lf:
        return HttpError(400, "bare LF in the request line")
    if len(parts) == 3 and not any(
        v == parts[2] if complete else v.startswith(parts[2]) for v in _VERSIONS
    ):
        return HttpError(505, "HTTP version not supported")
    return None


class _Connection:
    """One client connection: its stream, the bytes read but not yet used, and whether the
    client is gone."""

    __slots__ = ("buffer", "engine", "gone", "handlers", "stream", "write_lock", "write_started")

    def __init__(
        self, stream: trio.SocketStream, handlers: trio.Nursery, engine: NativeEngine
    ) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.gone = False
        self.write_lock = trio.StrictFIFOLock()
        self.handlers = handlers
        """Owns the connection's request loops: a handler that goes on after its response
        hands the connection to a new loop (`NativeResponder.close`)."""
        self.engine = engine
        self.write_started = 0.0

    async def fill(self) -> None:
        """Read what the client sent into the buffer.

        Raises:
            ClientGone: at the end of the stream.
        """
        data = await self.stream.receive_some(_RECEIVE)
        if not data:
            self.gone = True
            raise ClientGone
        self.buffer += data

    async def head(self, limit: int) -> bytes | None:
        """The next request head, or None if the client closed the connection between requests.

        Raises:
            HttpError: 431 when the head outgrows ``limit``; 400 or 505 as soon as the bytes
                so far cannot begin a request line (`not_a_request_line`).
            ClientGone: when the client closed the connection in the middle of a head.
        """
        buffer = self.buffer
        while True:
            while buffer[:2] == b"\r\n":  # stray line ends between requests (RFC 9112 §2.2)
                del buffer[:2]
            end = buffer.find(http11.HEAD_END)
            if end > limit or (end == -1 and len(buffer) > limit):
                raise HttpError(431, "request head too large")
            if end != -1:
                head = bytes(buffer[:end])
                del buffer[: end + 4]
                return head
            refusal = not_a_request_line(buffer)
            if refusal is not None:
                raise refusal
            try:
                await self.fill()
            except ClientGone:
                if buffer:
                    raise
                return None

    async def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self.fill()
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def line(self, limit: int) -> bytes:
        while (end := self.buffer.find(b"\r\n")) == -1:
            if len(self.buffer) > limit:
                raise HttpError(400, "line too long")
            await self.fill()
        data = bytes(self.buffer[:end])
        del self.buffer[: end + 2]
        return data

    async def body(self, request: Request, limit: int) -> bytes | None:
        """The request body, or None as soon as it is known to exceed ``limit``."""
        if request.content_length is not None:
            if request.content_length > limit:
                return None
            return await self.exactly(request.content_length)
        if not request.chunked:
            return b""
        parts = []
        size = 0
        while (step := http11.chunk_size(await self.line(1024))) > 0:
            size += step
            if size > limit:
                return None
            parts.append(await self.exactly(step))
            if await self.exactly(2) != b"\r\n":
                raise HttpError(400, "malformed chunk")
        while await self.line(8192):  # trailer fields are read and ignored
            pass
        return b"".join(parts)

    async def write(self, data: bytes) -> None:
        """Send ``data``; a client that went away makes this a no-op (as with Hypercorn). One
        that stops reading for ``write_timeout_seconds`` is disconnected (`NativeEngine`
        watches the writes in progress: cheaper than a deadline per write)."""
        if self.gone:
            return
        writing = self.engine.writing
        self.write_started = trio.current_time()
        writing.add(self)
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.gone = True
        finally:
            writing.discard(self)


class NativeResponder:
    """`Responder` writing HTTP/1.1 straight to the connection."""

    __slots__ = (
        "_chunked",
        "_conn",
        "_request",
        "_watching",
        "finished",
        "handed_off",
        "keep_alive",
        "started",
    )

    def __init__(self, conn: _Connection, request: Request) -> None:
        self._conn = conn
        self._request = request
        self._chunked = request.version >= (1, 1)
        self._watching: trio.CancelScope | None = None
        self.keep_alive = request.keep_alive
        self.started = False
        self.finished = False
        self.handed_off = False

    def _end(self) -> None:
        """The response is complete: stop watching the connection for the handler."""
        self.finished = True
        if self._watching is not None:
            self._watching.cancel()

    def _head(self, status: int, headers: Headers, length: int | None) -> bytes:
        self.started = True
        if self._conn.engine.draining:
            self.keep_alive = False  # shutting down: this is the connection's last response
        if (b"connection", b"close") in headers:
            self.keep_alive = False
            headers = [h for h in headers if h != (b"connection", b"close")]
        if length is None and not self._chunked:
            self.keep_alive = False  # HTTP/1.0: the end of the stream is the end of the body
        return http11.response_head(
            status,
            headers,
            length=length,
            keep_alive=self.keep_alive,
            version=self._request.version,
        )

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        out = [(b"content-type", JSON)] if body else []
        if headers:
            out.extend(headers)
        if self._request.method == "HEAD":
            body = b""
        await self._conn.write(self._head(status, out, len(body)) + body)
        self._end()

    async def open_stream(self, headers: Headers | None = None) -> None:
        out = list(STREAM_HEADERS)
        if headers:
            out.extend(headers)
        async with self._conn.write_lock:
            await self._conn.write(self._head(200, out, None))

    async def _stream_write(self, data: bytes) -> None:
        async with self._conn.write_lock:
            await self._conn.write(http11.chunk(data) if self._chunked else data)

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        await self._stream_write(sse.encode_event(message, event_id, retry_ms))

    async def keepalive(self) -> None:
        await self._stream_write(sse.KEEPALIVE)

    async def close(self) -> None:
        if self._chunked:
            async with self._conn.write_lock:
                await self._conn.write(http11.LAST_CHUNK)
        self._end()
        conn = self._conn
        if self.keep_alive and not conn.gone:
            # The handler may go on after its stream (a 2025-11-25 ``close_stream``): the
            # connection's next requests are served by a new loop meanwhile.
            self.handed_off = True
            conn.handlers.start_soon(conn.engine.requests, conn)

    async def wait_disconnect(self) -> None:
        """Return when the client closes the connection during the exchange; once the exchange
        is over, never (the connection belongs to the next request). Bytes the client sends
        meanwhile (a pipelined request) are kept for the connection loop, up to 1 MiB: past that
        the connection is no longer read until the exchange ends."""
        conn = self._conn
        if not self.finished:
            with trio.CancelScope() as self._watching:
                while not conn.gone and len(conn.buffer) <= _RECEIVE * 16:
                    try:
                        await conn.fill()
                    except (ClientGone, trio.BrokenResourceError, trio.ClosedResourceError):
                        conn.gone = True
                if conn.gone:
                    return
        await trio.sleep_forever()


class NativeEngine:
    """Serves an `Endpoint` on listening sockets: one task per connection, requests on a
    connection answered in turn, and a graceful shutdown."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.config: Config = endpoint.config
        self.draining = False
        """Shutting down: answer what is in flight, with ``connection: close``; read no more."""
        self._idle: set[trio.CancelScope] = set()
        self.writing: set[_Connection] = set()
        """Connections in the middle of a write, watched for clients that stopped reading."""

    async def serve(
        self,
        listeners: Sequence[trio.SocketListener],
        shutdown: Callable[[], Awaitable[None]] | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections until cancelled, or until ``shutdown`` returns: then stop
        accepting, close idle connections, give the requests in flight
        ``config.graceful_seconds`` to finish, and cancel what is left. The server's nursery
        (tasks, notifications) lives as long as this."""
        server = self.endpoint.server
        async with trio.open_nursery() as background:
            server.nursery = background
            background.start_soon(self._watch_writes)
            try:
                async with trio.open_nursery() as connections:
                    accepting = trio.CancelScope()
                    connections.start_soon(self._accept, listeners, connections, accepting)
                    task_status.started()
                    await (shutdown or trio.sleep_forever)()
                    accepting.cancel()
                    self._drain()
                    grace = self.config.graceful_seconds
                    connections.cancel_scope.deadline = trio.current_time() + grace
            finally:
                server.nursery = None
            background.cancel_scope.cancel()

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
        """Accept while fewer than ``config.max_connections`` are open: past that, new clients
        wait in the listen backlog until a connection closes."""
        async with listener:
            while True:
                await slots.acquire()
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
        try:
            await self.connection(stream)
        finally:
            slots.release()

    async def _watch_writes(self) -> None:
        """Disconnect clients whose write has been blocked past ``write_timeout_seconds``."""
        timeout = self.config.write_timeout_seconds
        while True:
            await trio.sleep(min(1.0, timeout / 4))
            now = trio.current_time()
            for conn in [c for c in self.writing if now - c.write_started > timeout]:
                conn.gone = True
                await trio.aclose_forcefully(conn.stream)  # the blocked send_all raises

    def _drain(self) -> None:
        self.draining = True
        for scope in self._idle:
            scope.cancel()

    async def connection(self, stream: trio.SocketStream) -> None:
        """Serve one connection until it closes, misbehaves or idles out; its nursery owns
        everything its requests start."""
        async with trio.open_nursery() as handlers:
            await self.requests(_Connection(stream, handlers, self))

    async def requests(self, conn: _Connection) -> None:
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

    async def _exchange(self, conn: _Connection) -> NativeResponder | None:
        """Read and answer one request; None when there was none (closed, idle, too slow,
        shutting down)."""
        config = self.config
        with trio.move_on_after(config.read_timeout_seconds) as reading:
            idle = not conn.buffer  # waiting for a request that may never come: drain cuts it
            if idle:
                self._idle.add(reading)
            try:
                head = await conn.head(config.max_header_bytes)
            finally:
                if idle:
                    self._idle.discard(reading)
            if head is None:
                return None
            request = http11.parse_head(head)
            responder = NativeResponder(conn, request)
            body = await self._body(conn, request, responder)
        if reading.cancelled_caught:
            return None
        if body is not None:  # else answered already
            await self._handle(request, responder, body)
        return responder

    async def _body(
        self, conn: _Connection, request: Request, responder: NativeResponder
    ) -> bytes | None:
        """The body to pass on, or None after answering (wrong path, body too large)."""
        config = self.config
        has_body = bool(request.content_length) or request.chunked
        if request.path != config.path:
            close = [(b"connection", b"close")] if has_body else []
            await responder.reply(404, b"", [(b"content-type", b"text/plain"), *close])
            return None
        if (
            request.expect_continue
            and has_body
            and (request.content_length or 0) <= config.max_body
        ):
            await conn.write(http11.CONTINUE)
        body = await conn.body(request, config.max_body)
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

    @staticmethod
    async def _refuse(conn: _Connection, exc: HttpError) -> None:
        body = jsonrpc.error(None, jsonrpc.INVALID_REQUEST, f"Bad Request: {exc.reason}")
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
