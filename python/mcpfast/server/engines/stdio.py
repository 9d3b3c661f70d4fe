"""Serving over stdio: one JSON-RPC message per line on stdin/stdout, logs on stderr only.

Both eras share the pipe. A request whose ``_meta`` names a protocol version is served
statelessly; ``initialize`` opens the (one) legacy session of the connection. Cancellation is
``notifications/cancelled`` in both eras.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sys
from collections.abc import Iterator
from typing import Any

import trio

from ... import codec, jsonrpc
from ...errors import CodecError, ProtocolError
from ...protocol.http import Headers
from ...protocol.routing import line_era
from ...versions import supports_batching
from ..config import Config
from ..core import streams
from ..core.emission import Emission
from ..core.endpoint import Endpoint
from ..core.legacy import BATCH_REFUSED
from ..core.turn import Exchange
from ..framework.app import Server
from ..seams import error_reply
from ..state import sessions
from ..state.keys import KeyRing


class LineWriter:
    """Writes whole lines to a stream, one writer at a time."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self.stream = stream
        self.lock = trio.Lock()

    async def write(self, message: bytes) -> None:
        async with self.lock:
            await self.stream.send_all(message + b"\n")


class StdioResponder:
    """`Responder` for one request on stdio: every message is a line; statuses do not exist."""

    __slots__ = ("writer",)

    def __init__(self, writer: LineWriter) -> None:
        self.writer = writer

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        if body:
            await self.writer.write(body)

    async def open_stream(self, headers: Headers | None = None) -> None:
        return None

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        if message:
            await self.writer.write(message)

    async def keepalive(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def wait_disconnect(self) -> None:
        await trio.sleep_forever()

    def watch(self, scope: trio.CancelScope) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()  # a stdio client leaves with the whole connection


class StdioConnection:
    """The state of one stdio connection: its legacy session (if any) and running requests."""

    def __init__(
        self,
        endpoint: Endpoint,
        writer: LineWriter,
        nursery: trio.Nursery,
        background: trio.Nursery,
    ) -> None:
        self.endpoint = endpoint
        self.writer = writer
        self.nursery = nursery
        self.background = background
        self.session: sessions.Session | None = None
        self.key = f"stdio-{secrets.token_hex(8)}"
        """This connection's key in the live table: its running requests' cancel scopes."""
        self._notifying = trio.CancelScope()

    async def line(self, line: bytes) -> None:
        try:
            batch, messages = codec.frame(line, self.endpoint.config.max_depth)
        except CodecError as exc:
            await self.writer.write(error_reply(None, exc).body)
            return
        if batch:
            await self.batch(messages)
            return
        for message in messages:
            await self.message(message)

    async def batch(self, messages: list[codec.Message]) -> None:
        """A JSON-RPC batch (a line holding an array): only a 2025-03-26 session may send one,
        and its answers go back as one batch line (none when it held only notifications and
        responses), as over HTTP; anything else gets the one error HTTP gives (-32600)."""
        if self.session is None or not supports_batching(self.session.version):
            await self.writer.write(BATCH_REFUSED)
            return
        self.nursery.start_soon(self._batch, self.session, messages)

    async def _batch(self, session: sessions.Session, messages: list[codec.Message]) -> None:
        answers: list[bytes] = []
        emission = Emission(StdioResponder(self.writer))

        async def one(message: codec.Message) -> None:
            kind = message.kind
            if kind == codec.KIND_INVALID:
                answers.append(jsonrpc.invalid_request(message.id, message.reason or ""))
            elif kind != codec.KIND_REQUEST:
                await self.message(message)  # notifications and responses act as alone
            elif message.method == "initialize":
                answers.append(
                    jsonrpc.error(
                        message.id, jsonrpc.INVALID_REQUEST, "initialize cannot be part of a batch"
                    )
                )
            else:
                with self.endpoint.runtime.live.cancellable(self.key, message.id):
                    exchange = Exchange(session, False)
                    out = await self.endpoint.legacy.request(exchange, message, emission)
                    if exchange.session_changed:
                        self.session = exchange.session
                    if out is not None:
                        answers.append(out)

        async with trio.open_nursery() as nursery:
            for message in messages:
                nursery.start_soon(one, message)
        if answers:
            await self.writer.write(b"[" + b",".join(answers) + b"]")

    async def message(self, message: codec.Message) -> None:
        legacy = self.endpoint.legacy
        if legacy.telemetry is None or not _answered_here(message):
            await self._message(message)
            return
        with legacy.traced(message, None, self.session):
            await self._message(message)

    async def _message(self, message: codec.Message) -> None:
        kind, id_, method, params = message.kind, message.id, message.method, message.params
        if kind == codec.KIND_INVALID:
            await self.writer.write(jsonrpc.invalid_request(id_, message.reason or ""))
        elif kind == codec.KIND_NOTIFICATION:
            if method == "notifications/cancelled":
                self.endpoint.runtime.live.cancel(self.key, params)
        elif kind in (codec.KIND_RESULT, codec.KIND_ERROR):
            if self.session is not None:
                self.endpoint.runtime.live.deliver(self.session.id, message)
        elif line_era(message.version, method) == "modern":
            self.nursery.start_soon(self._run, id_, self._modern, message)
        elif method == "initialize":
            try:
                await self.initialize(id_, params)
            except ProtocolError as exc:
                await self.writer.write(error_reply(id_, exc).body)
        elif method == "ping":  # allowed at any time, before initialize too (lifecycle)
            await self.writer.write(jsonrpc.result(id_, {}))
        elif self.session is None:
            await self.writer.write(
                jsonrpc.error(
                    id_, jsonrpc.INVALID_REQUEST, "Send initialize first (or a 2026-07-28 _meta)"
                )
            )
        else:
            self.nursery.start_soon(self._run, id_, self._legacy, message)

    async def initialize(self, id_: int | str | None, params: bytes | None) -> None:
        """Open the connection's session (replacing any) and start its notifications.

        Raises:
            ProtocolError: -32602 for params that do not fit (the session is unchanged).
        """
        self.session, result = self.endpoint.legacy.open_session(params)
        await self.writer.write(jsonrpc.result(id_, result))
        self._notifying.cancel()  # a second initialize replaces the session
        await self.background.start(self._notify, self.session)

    async def _notify(self, session: sessions.Session, task_status: trio.TaskStatus[None]) -> None:
        """Write the session's notifications that belong to no request (what the GET stream
        carries over HTTP) until stdin closes or another ``initialize`` replaces the session."""
        with trio.CancelScope() as self._notifying:
            await streams.standalone(
                self.endpoint.runtime,
                session,
                "",
                StdioResponder(self.writer),
                task_status=task_status,
            )

    async def _run(self, id_: int | str | None, serve: Any, message: codec.Message) -> None:
        with self.endpoint.runtime.live.cancellable(self.key, id_):
            await serve(message)

    async def _modern(self, message: codec.Message) -> None:
        await self.endpoint.modern.serve(None, message, StdioResponder(self.writer))

    async def _legacy(self, message: codec.Message) -> None:
        assert self.session is not None
        exchange = Exchange(self.session, False)
        emission = Emission(StdioResponder(self.writer))
        out = await self.endpoint.legacy.request(exchange, message, emission)
        self.session = exchange.session
        if out is not None:
            await self.writer.write(out)


def _answered_here(message: codec.Message) -> bool:
    """Whether the connection itself answers ``message`` (a notification, ``initialize``, the
    legacy ``ping``), so that its span is made here rather than in an era."""
    if message.kind == codec.KIND_NOTIFICATION:
        return True
    return (
        message.kind == codec.KIND_REQUEST
        and message.method in ("initialize", "ping")
        and line_era(message.version, message.method) != "modern"
    )


async def serve_stdio(
    server: Server,
    config: Config | None = None,
    *,
    stdin: trio.abc.ReceiveStream | None = None,
    stdout: trio.abc.SendStream | None = None,
) -> None:
    """Serve ``server`` on stdin/stdout until stdin closes.

    On the process's own stdout (``stdout`` not given) only protocol lines are written: while
    serving, file descriptor 1 and ``sys.stdout`` point at stderr, so what a handler prints
    (or a library, or a child process it starts, writes to stdout) lands in the log instead of
    corrupting the stream; both are restored afterwards."""
    config = config or Config()
    keys = KeyRing(keys={"stdio": secrets.token_bytes(32)}, signing="stdio")
    endpoint = Endpoint(server, config, keys)
    stdin = stdin or trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    with contextlib.ExitStack() as stack:
        if stdout is None:
            stdout = trio.lowlevel.FdStream(stack.enter_context(_protocol_stdout()))
        writer = LineWriter(stdout)
        async with endpoint.running() as background, trio.open_nursery() as requests:
            connection = StdioConnection(endpoint, writer, requests, background)
            async with trio.open_nursery() as reading:
                reading.start_soon(_stop_on_sigterm, reading.cancel_scope)
                await _read_lines(stdin, connection, writer, config.max_body)
                reading.cancel_scope.cancel()
            # The end of stdin (or SIGTERM) is the end of the connection: long-lived streams
            # (a listen) end as at shutdown, with their final messages; requests in flight
            # finish, and the requests nursery exits.
            endpoint.runtime.closing.set()


async def _stop_on_sigterm(reading: trio.CancelScope) -> None:
    """Stop reading stdin on SIGTERM, as the end of stdin does (a graceful shutdown, like
    ``mcpfast serve`` over HTTP). Off the main thread no signal can be received: then only the
    end of stdin stops it."""
    try:
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                reading.cancel()
                return
    except RuntimeError:  # not the main thread
        await trio.sleep_forever()


@contextlib.contextmanager
def _protocol_stdout() -> Iterator[int]:
    """A private copy of stdout's descriptor for the protocol (yielded), while descriptor 1
    and ``sys.stdout`` go to stderr."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    protocol = os.dup(1)
    saved = os.dup(1)
    os.dup2(2, 1)
    python_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield protocol
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        sys.stdout = python_stdout
        os.dup2(saved, 1)
        os.close(saved)


async def _read_lines(
    stdin: trio.abc.ReceiveStream, connection: StdioConnection, writer: LineWriter, limit: int
) -> None:
    """Feed complete lines to the connection until stdin closes; skip over-long lines."""
    buffer = b""
    skipping = False
    async for chunk in stdin:
        buffer += chunk
        while (cut := buffer.find(b"\n")) != -1:
            line, buffer = buffer[:cut], buffer[cut + 1 :]
            if skipping:
                skipping = False
            elif line.strip():
                await connection.line(line)
        if len(buffer) > limit:
            if not skipping:
                await writer.write(
                    jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "Message too large")
                )
            buffer, skipping = b"", True
