"""The native engine's `Responder`: replies and SSE streams written straight to a connection
(`http1.Connection`), and the watch that cancels a handler once its client is gone."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

import trio

from ...protocol import http11, sse
from ...protocol.http import JSON, STREAM_HEADERS, Headers
from ...protocol.http11 import Request
from ...telemetry.metrics import NATIVE
from ..seams import ClientGone
from .http1 import RECEIVE, Connection

log = logging.getLogger("mcpfast.native")

_VERSIONS = ((1, 0), (1, 1))
"""A head's version by its minor (`http11.Request.minor`)."""


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
