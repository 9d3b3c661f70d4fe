"""Serving over stdio: one JSON-RPC message per line on stdin/stdout, logs on stderr only.

This engine moves lines: it owns the descriptors, SIGTERM and the line framing (with its
limit); what a line means, in either era, is the core's (`core.lines.Lines`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator

import trio

from ..core.endpoint import Endpoint
from ..core.lines import Lines


class LineWriter:
    """Writes whole lines to a stream, one writer at a time."""

    def __init__(self, stream: trio.abc.SendStream) -> None:
        self.stream = stream
        self.lock = trio.Lock()

    async def write(self, message: bytes) -> None:
        async with self.lock:
            await self.stream.send_all(message + b"\n")


async def serve_lines(
    endpoint: Endpoint,
    stdin: trio.abc.ReceiveStream | None = None,
    stdout: trio.abc.SendStream | None = None,
) -> None:
    """Serve ``endpoint`` on stdin/stdout (the process's own unless given) until stdin closes
    or SIGTERM arrives (`mcpfast.server.serve_stdio` builds the endpoint).

    On the process's own stdout only protocol lines are written: while serving, file
    descriptor 1 and ``sys.stdout`` point at stderr, so what a handler prints (or a library,
    or a child process it starts, writes to stdout) lands in the log instead of corrupting the
    stream; both are restored afterwards."""
    stdin = stdin or trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    with contextlib.ExitStack() as stack:
        if stdout is None:
            stdout = trio.lowlevel.FdStream(stack.enter_context(_protocol_stdout()))
        writer = LineWriter(stdout)
        async with endpoint.running() as background, trio.open_nursery() as requests:
            connection = Lines(endpoint, writer.write, requests, background)
            async with trio.open_nursery() as reading:
                reading.start_soon(_stop_on_sigterm, reading.cancel_scope)
                await _read_lines(stdin, connection, endpoint.config.max_body)
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


async def _read_lines(stdin: trio.abc.ReceiveStream, connection: Lines, limit: int) -> None:
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
                await connection.too_large()
            buffer, skipping = b"", True
