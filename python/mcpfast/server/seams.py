"""The seams every wing sees: the core answers through a `Responder` (ASGI, the native engine,
stdio, the authorization guard) and never sees the transport. Also the one place a protocol
error becomes a reply (`error_reply`). Imports nothing of the server."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol

import trio

from .. import jsonrpc
from ..errors import MCPError, ProtocolError
from ..protocol.http import Headers


class ClientGone(Exception):
    """The client closed the exchange; the handler was cancelled."""


class Responder(Protocol):
    """One exchange's way back to the client."""

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        """A complete response: ``body`` is JSON, or empty for 202/405."""
        ...

    async def open_stream(self, headers: Headers | None = None) -> None:
        """Start a ``text/event-stream`` response."""
        ...

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
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

    def watch(self, scope: trio.CancelScope) -> AbstractContextManager[None] | None:
        """A context in which ``scope`` is cancelled once the client goes away, watched by the
        transport itself (no task per exchange); None when only a task in `wait_disconnect`
        can tell."""
        ...


async def refuse_too_large(responder: Responder, max_body: int) -> None:
    """Answer a body over the limit: 413 with a JSON-RPC error, and close the connection (the
    rest of the body is never read)."""
    await responder.reply(
        413,
        jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "Payload Too Large", {"maxBytes": max_body}),
        [(b"connection", b"close")],
    )


class ErrorReply(NamedTuple):
    """An error answer: the HTTP status (ignored off HTTP) and the JSON-RPC error body."""

    status: int
    body: bytes


def error_reply(id_: int | str | None, exc: MCPError) -> ErrorReply:
    """The reply to a refused message: a `ProtocolError` carries its status; any other
    `MCPError` (a `CodecError`: the body is not JSON-RPC) is 400."""
    status = exc.http_status if isinstance(exc, ProtocolError) else 400
    return ErrorReply(status, jsonrpc.error(id_, exc.code, exc.message, exc.data))
