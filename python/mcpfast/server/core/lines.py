"""A line transport's connection (stdio): one JSON-RPC message per line, both eras on the same
line stream, routed by `protocol.routing.line_era`.

A request whose ``_meta`` names a protocol version is served statelessly (`ModernEra`);
``initialize`` opens the (one) legacy session of the connection, whose requests `LegacyEra`
serves; ``ping`` is answered at any time; cancellation is ``notifications/cancelled`` in both
eras. The transport gives `Lines` whole lines and a way to write one (`Write`); fds, signals
and line framing stay with it (`engines.stdio`)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ... import codec, jsonrpc
from ...errors import BusUnavailable, CodecError, ProtocolError, RateLimited
from ...protocol.http import Headers
from ...protocol.routing import line_era
from ...versions import supports_batching
from ..seams import error_reply
from ..state import sessions
from ..state.keys import KeyRing
from . import batches, streams
from .batches import BATCH_REFUSED
from .emission import Emission
from .endpoint import Endpoint
from .turn import Exchange

Write = Callable[[bytes], Awaitable[None]]
"""Writes one whole line (the message, without its newline), one writer at a time."""


def ephemeral_keys() -> KeyRing:
    """The keys of a line connection: its session ids never leave it, so a fresh key each run."""
    return KeyRing(keys={"stdio": secrets.token_bytes(32)}, signing="stdio")


class LineResponder:
    """`Responder` for one request on a line transport: every message is a line; statuses
    do not exist."""

    __slots__ = ("write",)

    def __init__(self, write: Write) -> None:
        self.write = write

    async def reply(self, status: int, body: bytes, headers: Headers | None = None) -> None:
        if body:
            await self.write(body)

    async def open_stream(self, headers: Headers | None = None) -> None:
        return None

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        if message:
            await self.write(message)

    async def keepalive(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def wait_disconnect(self) -> None:
        await trio.sleep_forever()

    def watch(self, scope: trio.CancelScope) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()  # a line client leaves with the whole connection


class Lines:
    """One line connection: its legacy session (if any) and its running requests, which run
    in ``requests``; the session's notifications run in ``background`` (the endpoint's)."""

    def __init__(
        self, endpoint: Endpoint, write: Write, requests: trio.Nursery, background: trio.Nursery
    ) -> None:
        self.endpoint = endpoint
        self.write = write
        self.requests = requests
        self.background = background
        self.session: sessions.Session | None = None
        self.key = f"stdio-{secrets.token_hex(8)}"
        """This connection's key in the live table: its running requests' cancel scopes."""
        self._notifying = trio.CancelScope()

    async def line(self, line: bytes) -> None:
        """Serve one line: a message or a batch. Returns once it is routed (requests run on in
        ``requests``); a line that is no JSON-RPC gets its error line."""
        try:
            batch, messages = codec.frame(line, self.endpoint.config.max_depth)
        except CodecError as exc:
            await self.write(error_reply(None, exc).body)
            return
        refused: dict[int, RateLimited] = {}
        if self.endpoint.limiter is not None:  # the rate limits, as over HTTP (one caller)
            try:
                refused = await self.endpoint.limiter.refusals(messages, None)
            except BusUnavailable as exc:
                await self.write(error_reply(None if batch else messages[0].id, exc).body)
                return
            if refused and not batch:
                await self.write(error_reply(messages[0].id, refused[0]).body)
                return
        if batch:
            await self.batch(messages, refused)
            return
        for message in messages:
            await self.message(message)

    async def too_large(self) -> None:
        """Answer a line longer than the transport's limit (which it skips): -32600."""
        await self.write(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "Message too large"))

    async def batch(
        self, messages: list[codec.Message], refused: dict[int, RateLimited] | None = None
    ) -> None:
        """A JSON-RPC batch (a line holding an array): only a 2025-03-26 session may send one,
        and its answers go back as one batch line (none when it held only notifications and
        responses), as over HTTP; anything else gets the one error HTTP gives (-32600)."""
        if self.session is None or not supports_batching(self.session.version):
            await self.write(BATCH_REFUSED)
            return
        self.requests.start_soon(self._batch, self.session, messages, refused)

    async def _batch(
        self,
        session: sessions.Session,
        messages: list[codec.Message],
        refused: dict[int, RateLimited] | None,
    ) -> None:
        emission = Emission(LineResponder(self.write))

        async def request(message: codec.Message) -> bytes | None:
            with self.endpoint.runtime.live.cancellable(self.key, message.id):
                exchange = Exchange(session, False)
                out = await self.endpoint.legacy.request(exchange, message, emission)
                if exchange.session_changed:
                    self.session = exchange.session
                return out

        answers = await batches.answers(messages, request, self.message, refused)
        if answers:
            await self.write(b"[" + b",".join(answers) + b"]")

    async def message(self, message: codec.Message) -> None:
        """Serve one message, in its own SERVER span when the connection answers it itself
        and telemetry is live."""
        legacy = self.endpoint.legacy
        if legacy.telemetry is None or not _answered_here(message):
            await self._message(message)
            return
        with legacy.traced(message, None, self.session):
            await self._message(message)

    async def _message(self, message: codec.Message) -> None:
        kind, id_, method, params = message.kind, message.id, message.method, message.params
        if kind == codec.KIND_INVALID:
            await self.write(jsonrpc.invalid_request(id_, message.reason or ""))
        elif kind == codec.KIND_NOTIFICATION:
            if method == "notifications/cancelled":
                self.endpoint.runtime.live.cancel(self.key, params)
        elif kind in (codec.KIND_RESULT, codec.KIND_ERROR):
            if self.session is not None:
                self.endpoint.runtime.live.deliver(self.session.id, message)
        elif line_era(message.version, method) == "modern":
            self.requests.start_soon(self._run, id_, self._modern, message)
        elif method == "initialize":
            try:
                await self.initialize(id_, params)
            except ProtocolError as exc:
                await self.write(error_reply(id_, exc).body)
        elif method == "ping":  # allowed at any time, before initialize too (lifecycle)
            await self.write(jsonrpc.result(id_, {}))
        elif self.session is None:
            await self.write(
                jsonrpc.error(
                    id_, jsonrpc.INVALID_REQUEST, "Send initialize first (or a 2026-07-28 _meta)"
                )
            )
        else:
            self.requests.start_soon(self._run, id_, self._legacy, message)

    async def initialize(self, id_: int | str | None, params: bytes | None) -> None:
        """Open the connection's session (replacing any) and start its notifications.

        Raises:
            ProtocolError: -32602 for params that do not fit (the session is unchanged).
        """
        self.session, result = self.endpoint.legacy.open_session(params)
        await self.write(jsonrpc.result(id_, result))
        self._notifying.cancel()  # a second initialize replaces the session
        await self.background.start(self._notify, self.session)

    async def _notify(self, session: sessions.Session, task_status: trio.TaskStatus[None]) -> None:
        """Write the session's notifications that belong to no request (what the GET stream
        carries over HTTP) until the connection ends or another ``initialize`` replaces the
        session."""
        with trio.CancelScope() as self._notifying:
            await streams.standalone(
                self.endpoint.runtime,
                session,
                "",
                LineResponder(self.write),
                task_status=task_status,
            )

    async def _run(self, id_: int | str | None, serve: Any, message: codec.Message) -> None:
        with self.endpoint.runtime.live.cancellable(self.key, id_):
            await serve(message)

    async def _modern(self, message: codec.Message) -> None:
        await self.endpoint.modern.serve(None, message, LineResponder(self.write))

    async def _legacy(self, message: codec.Message) -> None:
        assert self.session is not None
        exchange = Exchange(self.session, False)
        emission = Emission(LineResponder(self.write))
        out = await self.endpoint.legacy.request(exchange, message, emission)
        self.session = exchange.session
        if out is not None:
            await self.write(out)


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
