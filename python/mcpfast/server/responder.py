"""The seam between the request-handling core and a transport (ASGI today, stdio, a native HTTP
engine later): the core answers through a `Responder` and never sees the transport."""

from __future__ import annotations

from typing import Protocol

JSON = b"application/json"
SSE = b"text/event-stream"
Headers = list[tuple[bytes, bytes]]


class Responder(Protocol):
    """One exchange's way back to the client."""

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        """A complete response: ``body`` is JSON, or empty for 202/405."""
        ...

    async def open_stream(self, headers: Headers | None = None) -> None:
        """Start a ``text/event-stream`` response."""
        ...

    async def send(self, message: bytes, event_id: str | None = None, retry_ms: int | None = None) -> None:
        """Send one JSON-RPC message (or an empty priming event) on the open stream."""
        ...

    async def keepalive(self) -> None:
        """Tell proxies the open stream is alive (an SSE comment)."""
        ...

    async def close(self) -> None:
        """End the open stream."""
        ...

    async def wait_disconnect(self) -> None:
        """Return when the client goes away (never, for transports that cannot tell)."""
        ...


class Emission:
    """Notifications of one request: nothing is sent until the first one, which turns the
    response into an SSE stream; `finish` then sends the result as JSON or as the last event."""

    __slots__ = ("extra_headers", "responder", "streaming")

    def __init__(self, responder: Responder, extra_headers: Headers | None = None) -> None:
        self.responder = responder
        self.streaming = False
        self.extra_headers = extra_headers

    async def emit(self, message: bytes) -> None:
        if not self.streaming:
            await self.responder.open_stream(self.extra_headers)
            self.streaming = True
        await self.responder.send(message)

    async def finish(self, message: bytes, status: int = 200) -> None:
        if self.streaming:
            await self.responder.send(message)
            await self.responder.close()
        else:
            await self.responder.reply(status, message, self.extra_headers)
