"""stdio for the client: spawn a server command and speak either era over its stdin/stdout.

One reader task routes each line: responses to the waiting request, server requests to the
application's handlers (in a legacy session; on a modern connection, which has none, they are
answered -32601), a long-lived request's notifications to its stream, other
notifications to the application's callbacks. Cancelling a request sends
``notifications/cancelled`` (the stdio way, in both eras). A line longer than ``max_line``
(``connect(max_message_bytes=...)``, 16 MiB by default) ends the connection: every request
waiting, and every later one, raises a `TransportError` that names the limit.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import trio

from .. import jsonrpc
from ..errors import MCPError, TransportError
from ..protocol.correlation import Correlator, cancel_params, kind_of, result_of
from ..protocol.initialize import Initialized, initialize_params, read_result
from ..telemetry import current, propagation, semconv
from ..telemetry.tracing import asking, identify, recording
from ..types import SUBSCRIPTION_KEY
from ..versions import LATEST_LEGACY
from .http import MAX_MESSAGE_BYTES, too_large
from .peer import Identity, Peer

Waker = trio.Event | trio.MemorySendChannel[dict[str, Any]]
"""How a pending request is woken: a call's event, or a long-lived request's channel (its
tagged notifications and its final answer go there)."""


class StdioPipe:
    """A spawned server process and the JSON-RPC traffic on its pipes."""

    def __init__(
        self, command: str | Sequence[str], peer: Peer, *, max_line: int = MAX_MESSAGE_BYTES
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.peer = peer
        self.max_line = max_line
        self.process: trio.Process | None = None
        self.requests: Correlator[Waker] = Correlator()
        self._lock = trio.Lock()
        self._closed = trio.Event()
        self.failure: TransportError | None = None
        """Why the connection ended on our side (a line over ``max_line``), if it did."""
        self.era: str | None = None
        """The era of the session on the pipe (set by `StdioSession`): a server request met
        in the modern era is refused -32601 without asking the handlers."""

    async def start(self, nursery: trio.Nursery) -> None:
        """Spawn the server (its stderr is ours) and start reading its stdout.

        Raises:
            TransportError: the command could not be started.
        """
        try:
            self.process = await trio.lowlevel.open_process(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        except OSError as exc:
            raise TransportError(f"cannot start {self.argv[0]}: {exc}") from exc
        nursery.start_soon(self._read, nursery)

    async def write(self, message: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        if self.failure is not None:
            raise self.failure
        async with self._lock:
            try:
                await self.process.stdin.send_all(message + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise TransportError("the server process closed its stdin") from exc

    async def _read(self, nursery: trio.Nursery) -> None:
        assert self.process is not None and self.process.stdout is not None
        buffer = bytearray()
        scanned = 0  # the bytes of buffer known to hold no line end
        async for chunk in self.process.stdout:
            buffer += chunk
            while (cut := buffer.find(b"\n", scanned)) != -1 and cut <= self.max_line:
                line = bytes(buffer[:cut])
                del buffer[: cut + 1]
                scanned = 0
                if line.strip():
                    await self._route(line, nursery)
            scanned = len(buffer)
            if len(buffer) > self.max_line:  # a line longer than max_line, whole or not
                # a line over the limit: its message is lost, so the connection is unusable
                self.failure = too_large(self.max_line, "a line on stdout")
                break
        self._closed.set()
        for pending in self.requests.abandon():
            if isinstance(pending.waker, trio.Event):
                pending.waker.set()
            else:
                pending.waker.close()

    async def _route(self, line: bytes, nursery: trio.Nursery) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        kind = kind_of(message)
        if kind == "request":
            nursery.start_soon(self._answer, message)
        elif kind == "notification":
            pending = self.requests.get(_subscription(message))
            if pending is None or not self._to_stream(pending.waker, message):
                await self.peer.notify(message["method"], message.get("params") or {})
        elif kind == "response":
            pending = self.requests.deliver(message)
            if pending is not None and not self._to_stream(pending.waker, message):
                assert isinstance(pending.waker, trio.Event)
                pending.waker.set()

    async def _answer(self, message: dict[str, Any]) -> None:
        """Answer a server request: with the application's handlers in a legacy session; in
        the modern era with -32601 (2026-07-28 has no server-to-client requests: a server asks
        through ``input_required`` results), as over HTTP the handlers are never asked."""
        if self.era == "modern":
            reply = jsonrpc.error(
                message.get("id"),
                jsonrpc.METHOD_NOT_FOUND,
                f"Method not found: {message.get('method')} (2026-07-28 has no "
                "server-to-client requests)",
            )
        else:
            reply = await self.peer.reply_to(message)
        await self.write(reply)

    @staticmethod
    def _to_stream(waker: Waker, message: dict[str, Any]) -> bool:
        """Hand ``message`` to a long-lived request (False: ``waker`` is a call's); a stream
        that falls `STREAM_BUFFER` messages behind is ended (as the server ends a slow
        listener)."""
        if isinstance(waker, trio.Event):
            return False
        channel = waker
        try:
            channel.send_nowait(message)
        except trio.WouldBlock:
            channel.close()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        return True

    @asynccontextmanager
    async def stream(
        self, method: str, params: dict[str, Any]
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """Send a long-lived request; yields its messages as they come (notifications tagged
        with its id in ``_meta`` subscriptionId), until its answer. Leaving the block sends
        ``notifications/cancelled``, which ends it (2026-07-28 over stdio).

        Raises:
            MCPError: (while iterating) the server answered the request with an error.
        """
        send, receive = trio.open_memory_channel[dict[str, Any]](STREAM_BUFFER)
        pending = self.requests.open(send)
        try:
            identify(pending.id)
            await self.write(jsonrpc.request(pending.id, method, params))
            yield _stream_messages(receive, self)
        finally:
            self.requests.close(pending)
            send.close()
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await self.write(
                    jsonrpc.notification("notifications/cancelled", cancel_params(pending.id))
                )

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None = None,
        notify_cancel: bool = True,
    ) -> Any:
        """Send a request and wait for its result; a cancelled or timed-out request is
        announced with ``notifications/cancelled`` unless ``notify_cancel`` is off.

        Raises:
            MCPError: the server answered with an error.
            TransportError: the process ended first, or sent a line over ``max_line``.
            trio.TooSlowError: no answer within ``timeout``.
        """
        done = trio.Event()
        pending = self.requests.open(done)
        try:
            identify(pending.id)
            await self.write(jsonrpc.request(pending.id, method, params))
            with trio.fail_after(timeout) if timeout is not None else trio.CancelScope():
                if not self._closed.is_set():  # else nothing will answer
                    await done.wait()
        except (trio.Cancelled, trio.TooSlowError):
            if notify_cancel:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await self.write(
                        jsonrpc.notification("notifications/cancelled", cancel_params(pending.id))
                    )
            raise
        finally:
            self.requests.close(pending)
        if pending.answer is None:
            raise self.failure or TransportError("the server process exited")
        return result_of(pending.answer)

    async def aclose(self) -> None:
        if self.process is None:
            return
        with trio.CancelScope(shield=True):
            if self.process.stdin is not None:
                await self.process.stdin.aclose()
            with trio.move_on_after(2):
                await self.process.wait()
            if self.process.returncode is None:
                self.process.terminate()
                with trio.move_on_after(2):
                    await self.process.wait()
            if self.process.returncode is None:
                self.process.kill()


STREAM_BUFFER = 256


def _subscription(message: dict[str, Any]) -> Any:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(SUBSCRIPTION_KEY) if isinstance(meta, dict) else None


async def _stream_messages(
    receive: trio.MemoryReceiveChannel[dict[str, Any]], pipe: StdioPipe
) -> AsyncIterator[dict[str, Any]]:
    async for message in receive:
        if "method" not in message:  # the request's answer ends the stream
            result_of(message)
            return
        yield message
    if pipe.failure is not None:
        raise pipe.failure


class StdioSession(Identity):
    """Either era over a `StdioPipe`: modern requests carry ``_meta``; legacy ones follow an
    ``initialize`` handshake."""

    def __init__(
        self,
        pipe: StdioPipe,
        era: str,
        version: str,
        client_info: dict[str, Any],
        log_level: str | None = None,
    ) -> None:
        self.pipe = pipe
        self.peer = pipe.peer
        self.era = pipe.era = era
        self.version = version
        self.client_info = client_info
        self.log_level = log_level
        self.extensions: dict[str, Any] = {}
        self.initialized: Initialized | None = None
        self.param_headers: dict[str, Any] = {}

    async def initialize(self, version: str = LATEST_LEGACY) -> Initialized:
        """The legacy handshake: ``initialize`` in ``version``, then ``notifications/initialized``.

        Raises:
            MCPError: the server refused it.
            TransportError: the process ended first.
        """
        params = initialize_params(version, self.peer.capabilities(version), self.client_info)
        telemetry = current()
        if telemetry is None:
            answer = await self.pipe.call("initialize", params)
        else:
            with asking(
                telemetry,
                method="initialize",
                name=None,
                version=version,
                transport=semconv.transport(False),
            ):
                if recording():
                    params = propagation.carrying(params)
                answer = await self.pipe.call("initialize", params)
        self.initialized = read_result(answer, version)
        self.version = self.peer.version = self.initialized.version
        await self.notify("notifications/initialized")
        return self.initialized

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> Any:
        params = dict(params or {})
        if self.era == "modern":
            params["_meta"] = self.meta(meta, extensions)
        elif meta:
            params["_meta"] = {**params.get("_meta", {}), **meta}
        return await self.pipe.call(method, params or None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.pipe.write(jsonrpc.notification(method, params))

    def stream(
        self, method: str, params: dict[str, Any], *, extensions: dict[str, Any] | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        """A long-lived modern request (``subscriptions/listen``); see `StdioPipe.stream`."""
        return self.pipe.stream(method, {**params, "_meta": self.meta(None, extensions)})

    async def aclose(self) -> None:
        await self.pipe.aclose()


async def probe(
    pipe: StdioPipe, client_info: dict[str, Any], version: str, wait: float
) -> dict[str, Any] | None:
    """Send ``server/discover`` in ``version``; the answer message, or None when none came
    within ``wait``.

    A legacy server that ignores the probe is left alone: its late answer finds no waiter.
    """
    session = StdioSession(pipe, "modern", version, client_info)
    try:
        result = await pipe.call(
            "server/discover", {"_meta": session.meta()}, timeout=wait, notify_cancel=False
        )
    except MCPError as exc:
        return {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
    except trio.TooSlowError:
        return None
    return {"result": result}
