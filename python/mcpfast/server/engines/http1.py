"""One HTTP/1.1 connection of the native engine: reading request heads and bodies off the
socket (the parsing rules are `protocol.http11`) and writing to it (`responder` writes replies
and SSE streams). The engine that owns the connections is seen only as a `Loop`."""

from __future__ import annotations

import re
from typing import Protocol

import trio
from opentelemetry.metrics import UpDownCounter

from ...protocol import http11
from ...protocol.http11 import HttpError, Request
from ..seams import ClientGone
from .sockets import Socket

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
        # The usual case: nothing of the next request read yet, one read, then the whole head.
        while True:
            if buffer:  # an empty buffer holds no head: read first
                request = http11.take_head(buffer, limit, max_lines)
                if request is not None:
                    return request
                # a head in pieces (take_head may have taken off all there was: CRLFs)
                if buffer and (refusal := not_a_request_line(buffer)) is not None:
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
