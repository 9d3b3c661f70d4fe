"""A round-robin HTTP/1.1 reverse proxy for the tests: each *request* (not each connection) goes
to the next backend in turn, so that a client's consecutive requests land on different server
processes, as behind a load balancer without sticky sessions.

Client connections are kept alive; each request gets a fresh backend connection (``Connection:
close``). Headers pass through unchanged (Host too: it names the proxy, a loopback host) but for
the hop-by-hop ones; request bodies are read whole (at most `MAX_BODY` bytes), responses are
streamed back as they come, so an SSE stream goes event by event. A client that disconnects
cancels its backend request (the backend connection is closed).

    async with round_robin(["http://127.0.0.1:8001", "http://127.0.0.1:8002"]) as proxy:
        proxy.url  # http://127.0.0.1:PORT

    python tests/e2e/round_robin.py --listen PORT BACKEND_URL...
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import h11
import trio

MAX_BODY = 1 << 20
"""The largest request body forwarded (a larger one is refused with 413)."""

READ_SIZE = 1 << 16
CONNECT_SECONDS = 5.0
"""How long connecting to a backend may take before the client gets a 502."""

HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"te",
    b"trailer",
    b"transfer-encoding",
    b"upgrade",
}


class _ClientGone(Exception):
    """The client closed its connection (or sent something that is not HTTP/1.1)."""


class RoundRobin:
    """The proxy's state: its backends (``(host, port)``), whose turn is next, and for each
    request forwarded the index of the backend that got it (`served`)."""

    def __init__(self, backends: Sequence[str]) -> None:
        if not backends:
            raise ValueError("round_robin needs at least one backend")
        self.backends = [_origin(url) for url in backends]
        self.served: list[int] = []
        self.port = 0

    @property
    def url(self) -> str:
        """The proxy's origin (``http://127.0.0.1:PORT``): append the MCP path."""
        return f"http://127.0.0.1:{self.port}"

    def _next(self) -> int:
        index = len(self.served) % len(self.backends)
        self.served.append(index)
        return index

    async def serve(
        self, port: int = 0, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen on 127.0.0.1:``port`` (0: a free one) until cancelled; ``task_status`` gets
        the port once it listens."""
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        """Serve one client connection, request after request, until it closes."""
        client = h11.Connection(h11.SERVER)
        async with stream:
            try:
                while True:
                    request, body = await _read_request(stream, client)
                    if request is None:
                        return
                    await self._forward(stream, client, request, body)
                    if client.our_state is not h11.DONE or client.their_state is not h11.DONE:
                        return
                    client.start_next_cycle()
            except (
                _ClientGone,
                h11.LocalProtocolError,
                trio.BrokenResourceError,
                trio.ClosedResourceError,
            ):
                return

    async def _forward(
        self, stream: trio.SocketStream, client: h11.Connection, request: h11.Request, body: bytes
    ) -> None:
        """Send ``request`` to the next backend and stream its response back; the backend
        request is cancelled (its connection closed) when the client goes away."""
        if len(body) > MAX_BODY:
            await _send_error(stream, client, 413)
            return
        host, port = self.backends[self._next()]
        try:
            with trio.fail_after(CONNECT_SECONDS):
                backend = await trio.open_tcp_stream(host, port)
        except (OSError, trio.TooSlowError):
            await _send_error(stream, client, 502)
            return
        async with backend, trio.open_nursery() as nursery:
            nursery.start_soon(_watch_client, stream, client, nursery.cancel_scope)
            try:
                await _relay(backend, stream, client, request, body)
            except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
                if client.our_state is not h11.ERROR:  # the client went away mid-response
                    client.send_failed()
            nursery.cancel_scope.cancel()


async def _read_request(
    stream: trio.SocketStream, conn: h11.Connection
) -> tuple[h11.Request | None, bytes]:
    """The next request on a client connection and its whole body; None at a clean close.

    Raises:
        _ClientGone: the connection ended mid-request or did not speak HTTP/1.1.
    """
    request: h11.Request | None = None
    body = bytearray()
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise _ClientGone from exc
        if event is h11.NEED_DATA:
            data = await stream.receive_some(READ_SIZE)
            if not data and request is None and conn.their_state is h11.IDLE:
                return None, b""
            conn.receive_data(data)
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            if len(body) <= MAX_BODY:
                body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert request is not None
            return request, bytes(body)
        else:  # ConnectionClosed, PAUSED
            if request is None and isinstance(event, h11.ConnectionClosed):
                return None, b""
            raise _ClientGone


async def _relay(
    backend: trio.SocketStream,
    stream: trio.SocketStream,
    client: h11.Connection,
    request: h11.Request,
    body: bytes,
) -> None:
    """Send ``request`` on ``backend`` and each part of its response to the client as it comes
    (a backend that breaks off mid-response ends the client connection, as it did)."""
    upstream = h11.Connection(h11.CLIENT)
    headers = [(n, v) for n, v in request.headers if n.lower() not in HOP_BY_HOP]
    headers = [(n, v) for n, v in headers if n.lower() != b"content-length"]
    headers += [(b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    out = upstream.send(h11.Request(method=request.method, target=request.target, headers=headers))
    out += upstream.send(h11.Data(data=body)) if body else b""
    out += upstream.send(h11.EndOfMessage())
    try:
        await backend.send_all(out)
    except (trio.BrokenResourceError, OSError):
        await _send_error(stream, client, 502)
        return
    while True:
        try:
            event = upstream.next_event()
        except h11.RemoteProtocolError:
            event = h11.ConnectionClosed()
        if event is h11.NEED_DATA:
            try:
                upstream.receive_data(await backend.receive_some(READ_SIZE))
            except (trio.BrokenResourceError, OSError):
                upstream.receive_data(b"")
            continue
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.Response):
            kept = [(n, v) for n, v in event.headers if n.lower() not in HOP_BY_HOP]
            await stream.send_all(
                client.send(h11.Response(status_code=event.status_code, headers=kept))
            )
        elif isinstance(event, h11.Data):
            await stream.send_all(client.send(h11.Data(data=event.data)))
        elif isinstance(event, h11.EndOfMessage):
            await stream.send_all(client.send(h11.EndOfMessage()))
            return
        else:  # the backend closed the connection before the end of its response
            if client.our_state is h11.SEND_RESPONSE:
                await _send_error(stream, client, 502)
            else:
                client.send_failed()
            return


async def _watch_client(
    stream: trio.SocketStream, client: h11.Connection, scope: trio.CancelScope
) -> None:
    """Cancel ``scope`` (the backend request) when the client closes its connection; bytes it
    sends meanwhile (a next request) are kept for the next cycle."""
    while True:
        try:
            data = await stream.receive_some(READ_SIZE)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            client.send_failed()
            scope.cancel()
            return
        client.receive_data(data)


async def _send_error(stream: trio.SocketStream, client: h11.Connection, status: int) -> None:
    """A short plain-text error response, if the client has not yet had a response."""
    if client.our_state is not h11.SEND_RESPONSE:
        return
    text = f"round_robin: {status}\n".encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]
    out = client.send(h11.Response(status_code=status, headers=headers))
    out += client.send(h11.Data(data=text)) + client.send(h11.EndOfMessage())
    await stream.send_all(out)


def _origin(url: str) -> tuple[str, int]:
    """``(host, port)`` of an ``http://host:port[/path]`` backend URL (its path is ignored:
    requests keep theirs)."""
    parts = urlsplit(url if "://" in url else "http://" + url)
    if parts.scheme != "http" or parts.hostname is None:
        raise ValueError(f"not an http:// backend URL: {url!r}")
    return parts.hostname, parts.port or 80


@asynccontextmanager
async def round_robin(backends: Sequence[str], port: int = 0) -> AsyncIterator[RoundRobin]:
    """A proxy to ``backends`` listening on 127.0.0.1:``port`` (0: a free one) while open; its
    connections are closed on exit.

    Raises:
        ValueError: no backends, or one that is not an ``http://`` URL.
    """
    proxy = RoundRobin(backends)
    async with trio.open_nursery() as nursery:
        await nursery.start(proxy.serve, port)
        yield proxy
        nursery.cancel_scope.cancel()


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=int, required=True, help="the port on 127.0.0.1")
    parser.add_argument("backends", nargs="+", help="http://host:port of each backend")
    args = parser.parse_args(argv)
    proxy = RoundRobin(args.backends)
    print(f"round_robin: 127.0.0.1:{args.listen} -> {' '.join(args.backends)}", file=sys.stderr)
    try:
        trio.run(proxy.serve, args.listen)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
