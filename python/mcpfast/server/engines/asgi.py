"""ASGI adapter: moves bytes between Hypercorn (or any ASGI server on Trio) and the `Endpoint`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...protocol import sse
from ...protocol.http import JSON, STREAM_HEADERS, Headers
from ..endpoint import Endpoint
from ..responder import refuse_too_large
from ..runtime import ClientGone

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class AsgiResponder:
    """`Responder` over ASGI ``send``/``receive``."""

    __slots__ = ("_receive", "_send")

    def __init__(self, send: Send, receive: Receive) -> None:
        self._send = send
        self._receive = receive

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        out = [(b"content-type", JSON)] if body else []
        if headers:
            out.extend(headers)
        await self._send({"type": "http.response.start", "status": status, "headers": out})
        await self._send({"type": "http.response.body", "body": body})

    async def open_stream(self, headers: Headers | None = None) -> None:
        out = list(STREAM_HEADERS)
        if headers:
            out.extend(headers)
        await self._send({"type": "http.response.start", "status": 200, "headers": out})

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        chunk = sse.encode_event(message, event_id, retry_ms)
        await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def keepalive(self) -> None:
        await self._send({"type": "http.response.body", "body": sse.KEEPALIVE, "more_body": True})

    async def close(self) -> None:
        await self._send({"type": "http.response.body", "body": b""})

    async def wait_disconnect(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass


class App:
    """The ASGI application for an `Endpoint`; its lifespan is `Endpoint.running` (tasks and
    change notifications need it)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.path = endpoint.config.path
        self.max_body = endpoint.config.max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        responder = AsgiResponder(send, receive)
        if scope["path"] != self.path:
            await responder.reply(404, b"", [(b"content-type", b"text/plain")])
            return
        headers = header_map(scope["headers"])
        body = b""
        if scope["method"] == "POST":
            try:
                read = await self._read_body(headers, receive)
            except ClientGone:  # it went away (or stalled) before its body arrived
                return
            if read is None:
                await refuse_too_large(responder, self.max_body)
                return
            body = read
        await self.endpoint.handle(scope["method"], headers, body, responder)

    async def _read_body(self, headers: dict[str, str], receive: Receive) -> bytes | None:
        """The request body, or None as soon as it is known to exceed the limit."""
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return None
        chunks = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()
        async with self.endpoint.running():
            await send({"type": "lifespan.startup.complete"})
            await receive()
        await send({"type": "lifespan.shutdown.complete"})


def header_map(raw: list[tuple[bytes, bytes]] | Any) -> dict[str, str]:
    """ASGI header pairs as a dict of lower-case names (the last value of a repeated header)."""
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in raw}
