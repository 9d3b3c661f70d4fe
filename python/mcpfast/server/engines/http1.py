"""One HTTP/1.1 connection of the native engine: reading request heads and bodies off the
socket (the parsing rules are `protocol.http11`), and the `Responder` writing replies and SSE
streams straight to it. The engine that owns the connections is seen only as a `Loop`."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Protocol

import trio
from opentelemetry.metrics import UpDownCounter

from ...protocol import http11, sse
from ...protocol.http import JSON, STREAM_HEADERS, Headers
from ...protocol.http11 import HttpError, Request
from ...telemetry.metrics import NATIVE
from ..seams import ClientGone
from .sockets import Socket

log = logging.getLogger("mcpfast.native")

RECEIVE = 65536
"""The most bytes read from a socket at once."""
EAGER_RETRY = 8
"""After a client's next request was not there when first looked for, the requests waited for
(an epoll wait each) before looking first again (`Connection.next_bytes`)."""


class Loop(Protocol):
    """What a connection needs of the engine serving it."""

    draining: bool
    """Shutting down: the response in progress is the connection's last, unless the client
    has sent more already (`Connection.waiting`)."""
    max_header_bytes: int
    """The largest response head a connection may write (`http11.check_head_size`)."""
    writing: set[Connection]
    """Connections in the middle of a write (the engine cuts those stuck too long)."""
    streams: UpDownCounter | None
    """The ``mcpfast.server.streams`` counter of open SSE streams (None: metrics are off)."""
    watched: dict[trio.CancelScope, Connection]
    """Handlers cancelled once their client goes away (`NativeResponder.watch`)."""

    async def requests(self, conn: Connection) -> None:
        """Answer the connection's requests in turn (a new loop, after a handed-off stream)."""
        ...


_METHOD_SO_FAR = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]*")
_VERSIONS = ((1, 0), (1, 1))
"""A head's version by its minor (`http11.Request.minor`)."""
_VERSION_TEXTS = (b"HTTP/1.1", b"HTTP/1.0")


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
        v == parts[2] if complete else v.startswith(parts[2]) for v in _VERSION_TEXTS
    ):
        return HttpError(505, "HTTP version not supported")
    return None


class Connection:
    """One client connection: its stream, the bytes read but not yet used, and whether the
    client is gone."""

    __slots__ = (
        "buffer",
        "engine",
        "gone",
        "handlers",
        "sock",
        "wait_first",
        "write_lock",
        "write_started",
    )

    def __init__(self, sock: Socket, handlers: trio.Nursery, engine: Loop) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.gone = False
        self.write_lock = trio.StrictFIFOLock()
        self.handlers = handlers
        """Owns the connection's request loops: a handler that goes on after its response
        hands the connection to a new loop (`NativeResponder.close`)."""
        self.engine = engine
        self.write_started = 0.0
        self.wait_first = 0
        """`next_bytes`: the requests left to wait for before looking first again (0: look
        first)."""

    async def fill(self, *, wait_first: bool = False) -> None:
        """Read what the client sent into the buffer (``wait_first``: `Socket.receive`).

        Raises:
            ClientGone: at the end of the stream.
        """
        data = await self.sock.receive(RECEIVE, wait_first=wait_first)
        if not data:
            self.gone = True
            raise ClientGone
        self.buffer += data

    async def head(self, limit: int, max_lines: int) -> Request | None:
        """The next request head (`http11.take_head`), or None if the client closed the
        connection between requests.

        Raises:
            HttpError: 431 when the head outgrows ``limit`` bytes (as soon as ``limit + 4``
                bytes hold no blank line) or has more than ``max_lines`` header lines; 400 or
                505 as soon as the bytes so far cannot begin a request line
                (`not_a_request_line`); `http11.parse_head`'s refusals of a whole head.
            ClientGone: when the client closed the connection in the middle of a head.
        """
        buffer = self.buffer
        while True:
            request = http11.take_head(buffer, limit, max_lines)
            if request is not None:
                return request
            refusal = not_a_request_line(buffer) if buffer else None  # a head in pieces
            if refusal is not None:
                raise refusal
            data = await (self.sock.receive(RECEIVE) if buffer else self.next_bytes())
            if not data:
                self.gone = True
                if buffer:
                    raise ClientGone
                return None
            buffer += data

    async def next_bytes(self) -> bytes:
        """The first bytes of the next request (``b""``: the client is gone), once the answer
        to the last one is sent. A client that had sent its next request by the time the other
        connections had their turn (a checkpoint) is read that way again: under load, its
        request is there, and the wait for the socket (an epoll re-arm and a wake-up through
        Trio's I/O manager) is saved. Otherwise the connection waits for the socket first, and
        looks first again only after `EAGER_RETRY` requests (an idle client costs one
        checkpoint and one empty ``recv`` in as many requests).

        Raises:
            trio.ClosedResourceError: the connection was closed (`cut`), also while waiting.
        """
        sock = self.sock
        if self.wait_first:
            self.wait_first -= 1
            return await sock.receive(RECEIVE, wait_first=True)
        sock.waits += 1  # a checkpoint: the request loop adds none
        await trio.lowlevel.checkpoint()
        data = sock.receive_now(RECEIVE)
        if data is not None:
            return data
        self.wait_first = EAGER_RETRY
        return await sock.receive(RECEIVE, wait_first=True)

    async def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self.fill()
        return self.take(size)

    def take(self, size: int) -> bytes:
        """The first ``size`` bytes of the buffer (which holds them), taken off it."""
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def line(self, limit: int) -> bytes:
        """The next CRLF-terminated line, without its CRLF.

        Raises:
            HttpError: 431 as soon as ``limit + 2`` bytes hold no line end.
        """
        while (end := self.buffer.find(b"\r\n")) == -1:
            if len(self.buffer) > limit + 1:
                raise HttpError(431, "chunk line or trailer section too large")
            await self.fill()
        if end > limit:
            raise HttpError(431, "chunk line or trailer section too large")
        data = bytes(self.buffer[:end])
        del self.buffer[: end + 2]
        return data

    async def body(self, request: Request, limit: int, line_limit: int) -> bytes | None:
        """The request body, or None as soon as it is known to exceed ``limit``.

        Raises:
            HttpError: 431 for a chunk-size line, or a trailer section, over ``line_limit``
                bytes (``max_header_bytes``, as Hypercorn's h11 bounds both); 400 for a
                malformed chunk.
        """
        if request.content_length is not None:
            if request.content_length > limit:
                return None
            return await self.exactly(request.content_length)
        if not request.chunked:
            return b""
        parts = []
        size = 0
        while (step := http11.chunk_size(await self.line(line_limit))) > 0:
            size += step
            if size > limit:
                return None
            parts.append(await self.exactly(step))
            if await self.exactly(2) != b"\r\n":
                raise HttpError(400, "malformed chunk")
        trailers = 0
        while field := await self.line(line_limit - trailers):  # checked, then ignored
            http11.trailer_field(field)
            trailers += len(field) + 2
        return b"".join(parts)

    async def write(self, data: bytes) -> None:
        """Send ``data``; a client that went away makes this a no-op (as with Hypercorn). One
        that stops reading for ``write_timeout_seconds`` is disconnected (`NativeEngine`
        watches the writes in progress: cheaper than a deadline per write)."""
        if self.gone:
            return
        sock = self.sock
        try:
            sent = sock.send_now(data)  # the usual reply fits the socket's buffer: no wait
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.gone = True
            return
        if sent == len(data):
            return
        writing = self.engine.writing
        self.write_started = trio.current_time()
        writing.add(self)
        try:
            await sock.send_all(memoryview(data)[sent:])
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.gone = True
        finally:
            writing.discard(self)

    def waiting(self) -> bool:
        """Whether the client has sent bytes not answered yet (a next request, read or still in
        the kernel): a drain answers it before closing, for a proxy never sends a POST again."""
        return bool(self.buffer) or self.sock.has_bytes()

    def cut(self) -> None:
        """Close the connection now: whatever waits on it wakes with
        `trio.ClosedResourceError`; writes become no-ops."""
        self.gone = True
        self.sock.close()


class NativeResponder:
    """`Responder` writing HTTP/1.1 straight to the connection."""

    __slots__ = (
        "_chunked",
        "_conn",
        "_detached",
        "_head_only",
        "_version",
        "_watching",
        "finished",
        "handed_off",
        "keep_alive",
        "rest",
        "started",
        "streaming",
    )

    def __init__(self, conn: Connection, request: Request) -> None:
        self._conn = conn
        self._version = _VERSIONS[request.minor]
        self._head_only = request.method == "HEAD"
        self._chunked = request.minor >= 1
        self._watching: trio.CancelScope | None = None
        self._detached = False
        """The stream goes on in a task of its own (`detach`), still counted."""
        self.rest: Callable[[], Awaitable[None]] | None = None
        """The rest of a detached stream, for the request loop to run (`run_rest`)."""
        self.keep_alive = request.keep_alive
        self.started = False
        self.finished = False
        self.handed_off = False
        self.streaming = False
        """An SSE stream is open and counted in ``engine.streams`` (`stream_ended`)."""

    def stream_ended(self) -> None:
        """The open SSE stream is over (closed, or its exchange ended): no longer counted."""
        streams = self._conn.engine.streams
        if self.streaming and streams is not None and not self._detached:
            self.streaming = False
            streams.add(-1, NATIVE)

    def _end(self) -> None:
        """The response is complete: stop watching the connection for the handler."""
        self.finished = True
        if self._watching is not None:
            self._watching.cancel()

    def _framing(self, headers: Headers) -> Headers:
        """Whether the connection stays open after the response (``keep_alive``), and
        ``headers`` without a handler's ``connection: close`` (the framing writes it)."""
        conn = self._conn
        if conn.engine.draining and not conn.waiting():
            self.keep_alive = False  # shutting down: this is the connection's last response
        if (b"connection", b"close") in headers:
            self.keep_alive = False
            headers = [h for h in headers if h != (b"connection", b"close")]
        return headers

    def _head(self, status: int, headers: Headers) -> bytes:
        """A streamed response's head (chunked; HTTP/1.0: to the connection's end)."""
        http11.check_head_size(headers, self._conn.engine.max_header_bytes)
        headers = self._framing(headers)
        self.started = True
        if not self._chunked:
            self.keep_alive = False  # HTTP/1.0: the end of the stream is the end of the body
        return http11.response_head(
            status, headers, length=None, keep_alive=self.keep_alive, version=self._version
        )

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        out = [(b"content-type", JSON)] if body else []
        if headers:
            out.extend(headers)
        conn = self._conn
        out = self._framing(out)
        if self._head_only:
            body = b""
        limit = conn.engine.max_header_bytes
        data = http11.response(status, out, body, keep_alive=self.keep_alive, limit=limit)
        self.started = True
        await conn.write(data)
        self._end()

    async def open_stream(self, headers: Headers | None = None) -> None:
        out = list(STREAM_HEADERS)
        if headers:
            out.extend(headers)
        async with self._conn.write_lock:
            await self._conn.write(self._head(200, out))
        streams = self._conn.engine.streams
        if streams is not None and not self.streaming:
            self.streaming = True
            streams.add(1, NATIVE)

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
        if self.streaming:
            self.stream_ended()
        conn = self._conn
        if self.keep_alive and not conn.gone and not self._detached:
            # The handler may go on after its stream (a 2025-11-25 ``close_stream``): the
            # connection's next requests are served by a new loop meanwhile. (A detached
            # stream runs in the request loop itself, which goes on once it ends.)
            self.handed_off = True
            conn.handlers.start_soon(conn.engine.requests, conn)

    async def detach(self, run: Callable[[], Awaitable[None]]) -> None:
        """Leave ``run`` (the rest of the open stream) to the connection's request loop, which
        runs it once the handler has returned (`run_rest`): nothing of the request is kept
        while the stream idles."""
        self.rest = run
        self._detached = True

    async def run_rest(self) -> bool:
        """Run the detached rest of the stream in the caller's task (the request loop); whether
        the connection may serve another request after it. The stream stays counted until it
        ends; ``ClientGone`` and a broken connection end it quietly, anything else is logged."""
        run, self.rest = self.rest, None
        assert run is not None
        try:
            await run()
        except (ClientGone, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:
            log.exception("unhandled error in a detached stream")
        finally:
            self._detached = False
            self.stream_ended()
        return self.finished and self.keep_alive and not self._conn.gone

    def watch(self, scope: trio.CancelScope) -> _Watch:
        """While open, the engine cancels ``scope`` once the client has closed the connection
        (`NativeEngine` looks every `DISCONNECT_SECONDS`, one peek per watched connection)."""
        return _Watch(self._conn, scope)

    async def wait_disconnect(self) -> None:
        """Return when the client closes the connection during the exchange; once the exchange
        is over, never (the connection belongs to the next request). Bytes the client sends
        meanwhile (a pipelined request) are kept for the connection loop, up to 1 MiB: past that
        the connection is no longer read until the exchange ends."""
        conn = self._conn
        if not self.finished:
            # a detached stream's own task ends the exchange, once this returned or was
            # cancelled: nothing to stop the wait (a scope fewer kept by an idle stream)
            watching = contextlib.nullcontext() if self._detached else trio.CancelScope()
            with watching as self._watching:
                while not conn.gone and len(conn.buffer) <= RECEIVE * 16:
                    try:
                        # waiting here, not deeper in `fill`: fewer frames kept while idle
                        await trio.lowlevel.wait_readable(conn.sock.sock)
                        await conn.fill()
                    except (ClientGone, trio.BrokenResourceError, trio.ClosedResourceError):
                        conn.gone = True
            if conn.gone:
                return
        await trio.sleep_forever()


DISCONNECT_SECONDS = 0.05
"""How often the engine looks for the clients of watched handlers having gone
(`NativeResponder.watch`)."""


class _Watch:
    """`NativeResponder.watch`'s context: the scope is in the engine's ``watched`` meanwhile."""

    __slots__ = ("conn", "scope")

    def __init__(self, conn: Connection, scope: trio.CancelScope) -> None:
        self.conn = conn
        self.scope = scope

    def __enter__(self) -> None:
        self.conn.engine.watched[self.scope] = self.conn

    def __exit__(self, *_: object) -> None:
        self.conn.engine.watched.pop(self.scope, None)
