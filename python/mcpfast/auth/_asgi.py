"""The little ASGI plumbing of the development authorization server: a bounded request
(`Request`, `read_request`), a response (`Response`) and serving an app on Hypercorn's Trio
worker (`serve_asgi`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from ..protocol.auth import is_loopback_host as is_loopback_host

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY_BYTES = 64 * 1024
"""The largest request body any endpoint reads (a bigger one is refused 413)."""


class BodyTooLarge(Exception):
    """The request body is over `MAX_BODY_BYTES`."""


@dataclass
class Request:
    """One HTTP request: method, path, raw query, lower-cased headers (every value of each)."""

    method: str
    path: str
    query: bytes
    headers: dict[str, list[str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The header's only value; None when absent (several values: the first)."""
        values = self.headers.get(name)
        return values[0] if values else None


@dataclass
class Response:
    """What an endpoint answers."""

    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def json(
        cls, status: int, document: Any, headers: list[tuple[str, str]] | None = None
    ) -> Response:
        """A JSON answer, never cached (RFC 6749 §5.1: ``Cache-Control: no-store``)."""
        return cls(
            status,
            orjson.dumps(document),
            [
                ("content-type", "application/json"),
                ("cache-control", "no-store"),
                ("pragma", "no-cache"),
                *(headers or []),
            ],
        )


async def read_request(scope: Scope, receive: Receive) -> Request:
    """The request of an HTTP ``scope``, its body read whole up to `MAX_BODY_BYTES`.

    Raises:
        BodyTooLarge: a declared or actual body over the limit (nothing more is read).
    """
    headers: dict[str, list[str]] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = bytes(raw_name).decode("latin-1").lower()
        headers.setdefault(name, []).append(bytes(raw_value).decode("latin-1"))
    declared = headers.get("content-length", ["0"])[0]
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect
            break
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return Request(
        method=str(scope["method"]).upper(),
        path=str(scope["path"]),
        query=bytes(scope.get("query_string", b"")),
        headers=headers,
        body=b"".join(chunks),
    )


async def send_response(send: Send, response: Response) -> None:
    """Send ``response`` whole."""
    headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in response.headers]
    headers.append((b"content-length", b"%d" % len(response.body)))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})


async def lifespan(receive: Receive, send: Send) -> None:
    """Answer the lifespan protocol (nothing to set up or tear down)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def serve_asgi(
    app: ASGIApp,
    host: str,
    port: int,
    *,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on Hypercorn's Trio worker at ``host``:``port`` until cancelled (or until
    ``shutdown_trigger`` returns); ``nursery.start`` returns the bound URLs."""
    config = HypercornConfig()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = 10.0
    await hypercorn_serve(
        app,  # type: ignore[arg-type]
        config,
        shutdown_trigger=shutdown_trigger,
        task_status=task_status,
    )
