"""ASGI adapter: moves bytes between Hypercorn (or any ASGI server on Trio) and the `Endpoint`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio
from opentelemetry.metrics import UpDownCounter

from ... import codec
from ...protocol import sse
from ...protocol.http import JSON, STREAM_HEADERS, Headers
from ...protocol.http11 import HttpError, check_head_size, refusal_body, target_path
from ...telemetry import current
from ...telemetry.metrics import ASGI
from ..access import current_peer
from ..core.endpoint import Endpoint
from ..seams import ClientGone, refuse_too_large

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_CLOSE = (b"connection", b"close")


class AsgiResponder:
    """`Responder` over ASGI ``send``/``receive``, writing heads of at most ``max_head`` bytes
    (`check_head_size`), with ``Connection: close`` once the server is ``closing`` (the
    connection's last response: it drains); its SSE stream, while open, is counted in
    ``streams`` (None: metrics are off)."""

    __slots__ = ("_closing", "_max_head", "_receive", "_send", "_streams", "streaming")

    def __init__(
        self,
        send: Send,
        receive: Receive,
        max_head: int,
        closing: trio.Event,
        streams: UpDownCounter | None = None,
    ) -> None:
        self._send = send
        self._receive = receive
        self._max_head = max_head
        self._closing = closing
        self._streams = streams
        self.streaming = False

    def stream_ended(self) -> None:
        """The open SSE stream is over (closed, or its exchange ended): no longer counted."""
        if self.streaming and self._streams is not None:
            self.streaming = False
            self._streams.add(-1, ASGI)

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        out = [(b"content-type", JSON)] if body else []
        if headers:
            out.extend(headers)
            check_head_size(out, self._max_head)  # what else it adds is a few bytes
        if status >= 200 and status not in (204, 304):
            # a complete reply says its length: Hypercorn then frames it plainly, not chunked
            out.append((b"content-length", b"%d" % len(body)))
        if self._closing.is_set():
            out.append(_CLOSE)
        await self._send({"type": "http.response.start", "status": status, "headers": out})
        await self._send({"type": "http.response.body", "body": body})

    async def open_stream(self, headers: Headers | None = None) -> None:
        out = list(STREAM_HEADERS)
        if headers:
            out.extend(headers)
        if self._closing.is_set():
            out.append(_CLOSE)
        check_head_size(out, self._max_head)
        await self._send({"type": "http.response.start", "status": 200, "headers": out})
        if self._streams is not None and not self.streaming:
            self.streaming = True
            self._streams.add(1, ASGI)

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        chunk = sse.encode_event(message, event_id, retry_ms)
        await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def keepalive(self) -> None:
        await self._send({"type": "http.response.body", "body": sse.KEEPALIVE, "more_body": True})

    async def close(self) -> None:
        await self._send({"type": "http.response.body", "body": b""})
        if self.streaming:
            self.stream_ended()

    async def wait_disconnect(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass

    def watch(self, scope: trio.CancelScope) -> None:
        return None  # only ASGI's receive tells, in a task


class App:
    """The ASGI application for an `Endpoint`; its lifespan is `Endpoint.running` (tasks and
    change notifications need it)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        config = endpoint.config
        self.max_body = config.max_body
        self.max_header_bytes = config.max_header_bytes
        self.max_headers = config.max_headers
        self.read_timeout = config.read_timeout_seconds
        self.closing = endpoint.closing
        self.needs_peer = endpoint.needs_peer
        telemetry = current()
        instruments = telemetry.instruments if telemetry is not None else None
        self.exchanges = instruments.exchanges if instruments is not None else None
        """The ``mcpfast.server.exchanges`` counter of HTTP requests being answered (ASGI shows
        no connections); None: metrics are off, nothing counted."""
        self.streams = instruments.streams if instruments is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        responder = AsgiResponder(send, receive, self.max_header_bytes, self.closing, self.streams)
        method = scope["method"]
        try:
            # the headers by name once the head passes the native engine's limits (431, 400):
            # `max_headers` lines, `max_header_bytes` (Hypercorn's h11 only catches a head
            # still incomplete past it), no ambiguous framing (which h11 takes)
            headers = codec.scope_head(
                method,
                scope.get("raw_path") or scope["path"].encode(),
                scope.get("query_string") or b"",
                scope["headers"],
                self.max_header_bytes,
                self.max_headers,
            )
            path: str = scope["path"]
            if not path.startswith("/"):
                path = _path(scope)
        except HttpError as exc:
            await responder.reply(exc.status, refusal_body(exc.reason), [_CLOSE])
            return
        if self.needs_peer:  # who an unauthenticated caller is
            client = scope.get("client")
            current_peer.set(str(client[0]) if client else None)
        body = AsgiBody(self, method, headers, receive, responder)
        exchanges = self.exchanges
        if exchanges is None:
            await self.endpoint.exchange(method, path, headers, body, responder)
            return
        exchanges.add(1, ASGI)
        try:
            await self.endpoint.exchange(method, path, headers, body, responder)
        finally:
            exchanges.add(-1, ASGI)
            responder.stream_ended()  # the handler left without closing it (client gone)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()
        async with self.endpoint.running():
            await send({"type": "lifespan.startup.complete"})
            await receive()
        await send({"type": "lifespan.shutdown.complete"})


class AsgiBody:
    """The `Body` of an ASGI request: read from ``receive`` for a POST only (``unread`` is
    False: the ASGI server reads what the application leaves)."""

    __slots__ = ("_app", "_headers", "_method", "_receive", "_responder")

    unread = False

    def __init__(
        self,
        app: App,
        method: str,
        headers: dict[str, str],
        receive: Receive,
        responder: AsgiResponder,
    ) -> None:
        self._app = app
        self._method = method
        self._headers = headers
        self._receive = receive
        self._responder = responder

    async def read(self) -> bytes | None:
        """A POST's body (``b""`` for other methods, unread), or None after answering 413 (over
        ``max_body``) or 408 (not received within ``read_timeout_seconds``), or when the
        client went away first.

        A body the server holds already is taken without a deadline: Hypercorn's trio worker
        hands the application a memory channel's ``receive``, whose ``receive_nowait`` says so
        without a checkpoint (a cancel scope per request would cost more than the MCP layer).
        """
        if self._method != "POST":
            return b""
        max_body = self._app.max_body
        length = self._headers.get("content-length")
        size = int(length) if length is not None and length.isdigit() else None
        if length is not None and (size is None or size > max_body):
            await refuse_too_large(self._responder, max_body)
            return None
        channel = getattr(self._receive, "__self__", None)
        if not isinstance(channel, trio.MemoryReceiveChannel):
            return await self._rest(size, None, None)
        try:
            first = channel.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return await self._rest(size, None, channel)
        chunk: bytes = first.get("body", b"")
        if (
            first["type"] == "http.request"
            and len(chunk) <= max_body
            and (len(chunk) == size or not first.get("more_body", False))
        ):
            return chunk  # the common case: all of it in one message (`_Chunks.take`'s rule)
        return await self._rest(size, first, channel)

    async def _rest(
        self,
        size: int | None,
        first: dict[str, Any] | None,
        channel: trio.MemoryReceiveChannel[dict[str, Any]] | None,
    ) -> bytes | None:
        """The body of ``size`` bytes (None: unknown) from its ``first`` message on: what
        ``channel`` holds already, then what ``receive`` hands over within
        ``read_timeout_seconds``; None after answering 408 or 413, or when the client went
        away first."""
        body = _Chunks(self._app.max_body, size)
        try:
            done = first is not None and body.take(first)
            if channel is not None:
                try:
                    while not done:
                        done = body.take(channel.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    pass
            if not done:
                with trio.move_on_after(self._app.read_timeout) as reading:
                    while not body.take(await self._receive()):
                        pass
                if reading.cancelled_caught:
                    reason = "request body not received in time"
                    await self._responder.reply(408, refusal_body(reason), [_CLOSE])
                    return None
        except ClientGone:  # it went away before its body arrived
            return None
        if body.size > body.limit:
            await refuse_too_large(self._responder, body.limit)
            return None
        return body.joined()


class _Chunks:
    """A request body as its ASGI messages arrive, of ``length`` bytes if its head says so
    (None: until a message says there is no more)."""

    __slots__ = ("chunks", "length", "limit", "size")

    def __init__(self, limit: int, length: int | None) -> None:
        self.chunks: list[bytes] = []
        self.limit = limit
        self.length = length
        self.size = 0

    def take(self, message: dict[str, Any]) -> bool:
        """Add a message's chunk; whether the body is complete (or already over the limit). A
        body of ``length`` bytes is complete with its last byte: the ASGI server's final
        message (``more_body`` False, nothing in it) is not waited for, since h11 frames the
        body by its ``Content-Length`` and the message can add nothing.

        Raises:
            ClientGone: the message says the client went away.
        """
        if message["type"] != "http.request":
            raise ClientGone
        chunk = message.get("body", b"")
        self.size += len(chunk)
        if self.size <= self.limit:
            self.chunks.append(chunk)
        return (
            not message.get("more_body", False)
            or self.size > self.limit
            or self.size == self.length
        )

    def joined(self) -> bytes:
        return self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)


def _path(scope: Scope) -> str:
    """The path of a request whose target is not origin-form, as the native engine reads it:
    h11 takes an absolute-form target (which HTTP/1.1 servers must accept) or ``*`` as the path.

    Raises:
        HttpError: 400 for a target that is neither origin-form nor absolute-form with an
            http(s) scheme.
    """
    path: str = scope["path"]
    return target_path(scope.get("raw_path", path.encode()).decode("latin-1"))
