"""The legacy eras (2025-11-25, 2025-06-18, 2025-03-26): handshake, signed sessions, the GET
stream with resumption, resumable POST streams (and SSE polling under 2025-11-25),
server-to-client requests, cancellation and 2025-03-26 batches.

A session lives in its ``Mcp-Session-Id`` token (see `sessions`), so any worker serves any plain
request of any session. What must meet in one place at run time is kept by the worker that runs
the handler, and what the client sends about it is routed there over the bus (see `live`:
server-to-client answers, cancellation); the GET streams themselves are `streams`. The events
of a request's SSE stream are recorded on the bus, so a client resumes it (GET +
``Last-Event-ID``) where the bus reaches: with `LocalBus`, the worker process that served the
POST, while it runs; with `RedisBus`, any worker sharing it.

When the bus is away (`BusUnavailable`), a request that needs it is answered 503 with its
JSON-RPC error (-32603) and ``Retry-After`` only while nothing of it was started; after, it is
carried through or fails without "retry" (`refusal`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

import msgspec

from ... import codec, jsonrpc
from ...errors import BusUnavailable, ProtocolError, RateLimited
from ...protocol import results
from ...protocol.http import Headers, prefers_event_stream
from ...protocol.initialize import initialize_result
from ...protocol.methods import INSTANT, LEGACY_ERA
from ...protocol.session import SESSION_HEADER, SESSION_HEADER_BYTES
from ...telemetry import current, semconv
from ...telemetry.tracing import Operation, serving
from ...types import (
    InitializeParams,
)
from ...versions import ALL_VERSIONS, has_polling, is_modern, negotiate_legacy, supports_batching
from ..framework.call import Call, decode_params, decoder_for
from ..seams import Responder, error_reply
from ..state import sessions
from ..state.sessions import Session
from . import batches, dispatch, streams
from .batches import BATCH_REFUSED
from .emission import Emission, Resumable
from .live import LiveInput
from .refusal import best_effort, settled
from .runtime import Runtime
from .turn import Exchange, Turn

WORKER_DIED = "The server worker answering this request stopped before it answered"
"""The error a resumed stream ends with when the worker that ran its request died."""


class LegacyEra:
    """Serves the handshake-and-session revisions for one endpoint's `Runtime`."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.server = runtime.server
        self.keys = runtime.keys
        self.config = runtime.config
        self.live = runtime.live
        self.handlers = dispatch.TABLES[LEGACY_ERA]
        """The feature serving each method of the era (`dispatch`); ``initialize`` is the
        handshake's (`open_session`)."""
        self.telemetry = current()
        """Spans and metrics of the messages served; None (nothing recorded) when no SDK was
        configured before the server was built (`mcpfast.telemetry.state`)."""

    # --------------------------------------------------------------------------------- sessions

    async def _session(
        self, headers: Mapping[str, str], responder: Responder, id_: int | str | None = None
    ) -> tuple[Session, bool] | None:
        """The session of the request and whether its id is old enough to re-mint, or None
        after answering its refusal (`sessions.from_headers`)."""
        try:
            return await sessions.from_headers(self.runtime.bus, self.keys, headers, self.config)
        except ProtocolError as exc:
            await _refuse(responder, id_, exc)
            return None

    async def _session_of_stream(
        self, headers: Mapping[str, str], responder: Responder
    ) -> Session | None:
        """The session a GET or DELETE names, or None after answering: 405 without a session
        id (modern-era traffic has neither method), else `_session`'s refusal."""
        if SESSION_HEADER not in headers:
            await responder.reply(405, b"", [(b"allow", b"POST")])
            return None
        found = await self._session(headers, responder)
        return None if found is None else found[0]

    def _session_headers(self, exchange: Exchange) -> Headers:
        """The re-minted ``Mcp-Session-Id`` an answer carries: when the handler changed the
        session, or its id is old enough (`sessions.from_headers`); none otherwise."""
        if exchange.session_changed or exchange.token_old:
            return [(SESSION_HEADER_BYTES, sessions.mint(self.keys, exchange.session).encode())]
        return []

    # ------------------------------------------------------------------------------------ POST

    async def post(
        self, headers: Mapping[str, str], message: codec.Message, responder: Responder
    ) -> None:
        """One legacy message: ``initialize``, or a message of an existing session."""
        kind = message.kind
        if kind == codec.KIND_REQUEST and message.method == "initialize":
            if self.telemetry is None:
                await self.initialize(message.id, message.params, responder, message.version)
                return
            with self.traced(message, headers, None):
                await self.initialize(message.id, message.params, responder, message.version)
            return
        found = await self._session(headers, responder, message.id)
        if found is None:
            return
        session, old = found
        if kind in (codec.KIND_NOTIFICATION, codec.KIND_RESULT, codec.KIND_ERROR):
            try:
                if self.telemetry is None or kind != codec.KIND_NOTIFICATION:
                    await self.client_message(session, message)
                else:
                    with self.traced(message, headers, session):
                        await self.client_message(session, message)
            except BusUnavailable as exc:  # not routed: the client may send it again
                await _refuse(responder, None, exc)
                return
            await responder.reply(202, b"")
        else:
            exchange = Exchange(session, old)
            emission = Emission(
                responder,
                self._session_headers(exchange) if old else None,  # nothing changed it yet
                resumable=partial(self._resumable, session, message.id),
                prefer_stream=prefers_event_stream(headers.get("accept")),
            )
            if self.telemetry is None:
                out = await self._request(exchange, message, emission, None)
            else:
                out = await self.request(exchange, message, emission, headers)
            if exchange.session_changed:
                if out is not None:
                    await self._save_state(exchange)
                emission.extra_headers = self._session_headers(exchange)
            if out is None:
                await emission.abandon()
            elif exchange.refused is not None:
                refusal = exchange.refused
                emission.extra_headers = [*(emission.extra_headers or ()), *refusal.headers]
                await emission.finish(out, refusal.http_status)
            else:
                await emission.finish(out)

    async def _save_state(self, exchange: Exchange) -> None:
        """Keep the session's changed state on the bus, for clients that never adopt the
        re-minted id. The change was made (the bus was asked first, `Turn.change_session`), so
        the bus away now loses only this copy (`refusal.best_effort`): the answer goes out,
        and the re-minted id carries the state."""
        session = exchange.session
        saving = sessions.save_state(self.runtime.bus, session, self.config)
        await best_effort(saving, f"session {session.id[:8]}: its state is only in its new id")

    def _resumable(self, session: Session, id_: int | str | None = None) -> Resumable:
        """A request's SSE stream is resumable in every legacy revision (event ids, replay on
        GET + ``Last-Event-ID``); 2025-11-25 adds the priming event, ``retry`` and polling.
        The stream of request ``id_`` ends, for a client resuming it after this worker died,
        with -32603 (`Bus.follow`); a batch's stream just ends."""
        retry = self.config.sse_retry_ms if has_polling(session.version) else None
        epitaph = b"" if id_ is None else jsonrpc.error(id_, jsonrpc.INTERNAL_ERROR, WORKER_DIED)
        bus = self.runtime.bus
        return Resumable(bus, session.id, self.config.event_store_size, retry, epitaph)

    async def initialize(
        self,
        id_: int | str | None,
        params: bytes | None,
        responder: Responder,
        meta_version: str | None = None,
    ) -> None:
        """Open a session: negotiate the revision and mint its id. An ``initialize`` that is
        no legacy handshake at all (no ``protocolVersion``) but a 2026-07-28 request (its
        ``_meta`` names that era's version) asks for a method that era removed: 404 and -32601,
        as the modern era answers every method it lacks, naming the revisions served in
        ``data.supported`` (DIGEST §3.12: a server SHOULD name them in its refusal of
        ``initialize``)."""
        try:
            session, result = self.open_session(params)
        except ProtocolError as exc:
            refused = exc
            if meta_version is not None and is_modern(meta_version) and _no_version(params):
                refused = ProtocolError(
                    jsonrpc.METHOD_NOT_FOUND,
                    "Method not found: initialize (2026-07-28 has no initialize; a legacy "
                    "initialize names its protocolVersion)",
                    {"supported": list(ALL_VERSIONS)},
                    http_status=404,
                )
            await responder.reply(*error_reply(id_, refused))
            return
        await responder.reply(
            200,
            jsonrpc.result(id_, result),
            [(SESSION_HEADER_BYTES, sessions.mint(self.keys, session).encode())],
        )

    def open_session(self, params: bytes | None) -> tuple[Session, dict[str, Any]]:
        """The session an ``initialize`` opens (its revision negotiated) and the result.

        Raises:
            ProtocolError: -32602 for params that do not fit ``initialize``, or capabilities
                too large for a session id (`sessions.bounded`).
        """
        p: InitializeParams = decode_params(decoder_for(InitializeParams), params)
        version = negotiate_legacy(p.protocolVersion)
        session = sessions.new_session(version, p.capabilities, self.config.max_header_bytes)
        result = initialize_result(version, self.server.info, self.server.instructions)
        result["capabilities"] = self.server.capabilities(version)  # what it has registered
        result["serverInfo"] = results.for_revision(version, self.server.info)
        return session, result

    async def client_message(self, session: Session, message: codec.Message) -> None:
        """A client notification or answer: an answer goes to the request waiting for it,
        ``notifications/cancelled`` cancels the request it names (both wherever they are,
        `live`); the other notifications need nothing from a stateless server.

        Raises:
            BusUnavailable: it had to go to another worker, and the bus is away.
        """
        if message.kind != codec.KIND_NOTIFICATION:
            await self.live.route(session.id, message)
        elif message.method == "notifications/cancelled":
            await self.live.cancel_anywhere(session.id, message.params)

    def traced(
        self, message: codec.Message, headers: Mapping[str, str] | None, session: Session | None
    ) -> contextlib.AbstractContextManager[Operation]:
        """The SERVER operation of one legacy message (telemetry is live)."""
        assert self.telemetry is not None
        return serving(
            self.telemetry,
            method=message.method or "",
            name=message.name,
            id_=message.id,
            version=session.version if session is not None else None,
            era="legacy",
            params=message.params,
            headers=headers,
            session_id=session.id if session is not None else None,
        )

    async def request(
        self,
        exchange: Exchange,
        message: codec.Message,
        emission: Emission,
        headers: Mapping[str, str] | None = None,
    ) -> bytes | None:
        """Serve one request of a session, in its own SERVER span when telemetry is live
        (``headers``: the HTTP request's, None on stdio); returns the response, or None if it
        was cancelled."""
        if self.telemetry is None:
            return await self._request(exchange, message, emission, None)
        with self.traced(message, headers, exchange.session) as op:
            return await self._request(exchange, message, emission, op)

    async def _request(
        self, exchange: Exchange, message: codec.Message, emission: Emission, op: Operation | None
    ) -> bytes | None:
        id_, method, params = message.id, message.method, message.params
        assert method is not None
        session = exchange.session
        feature = self.handlers.get(method)
        if feature is None:
            if op is not None:
                op.fail(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")
            return jsonrpc.error(id_, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")
        try:
            typed = decode_params(dispatch.DECODERS[method], params)
        except ProtocolError as exc:
            if op is not None:
                op.fail(exc.code, exc.message)
            return error_reply(id_, exc).body
        meta = typed.meta
        call = Call(
            id=id_,
            method=method,
            version=session.version,
            capabilities=session.capabilities,
            log_level=session.log_level,
            progress_token=meta.progress_token if meta is not None else None,
            emitter=emission,
            input=LiveInput(self.live, session.id, emission),
            threads=self.runtime.threads,
        )
        call.session_id = session.id
        turn = Turn(self.runtime, call, emission, exchange)
        try:
            if not self._may_wait(method, message.name):
                result = await feature(turn, typed)
                if op is not None:
                    op.result(result)
                return jsonrpc.result(id_, result)
            out = None  # stays None when notifications/cancelled cancels it
            with self.live.cancellable(session.id, id_):
                result = await feature(turn, typed)
                if op is not None:
                    op.result(result)
                out = jsonrpc.result(id_, result)
            return out
        except ProtocolError as exc:
            exc = settled(exc, turn.started)
            if isinstance(exc, BusUnavailable | RateLimited):
                exchange.refused = exc
            refused = results.legacy_error(exc, session.version)
            if op is not None:
                op.fail(refused.code, refused.message)
            return error_reply(id_, refused).body

    def _may_wait(self, method: str, name: str | None) -> bool:
        """Whether a request can block (and so needs a cancel scope for
        ``notifications/cancelled``): every call of a tool that waits (async, or on a thread);
        never the instant methods."""
        if method == "tools/call":
            tool = self.server.tools.get(name) if name is not None else None
            return tool is None or tool.signature.waits
        return method not in INSTANT

    # ---------------------------------------------------------------------------------- batches

    async def batch(
        self,
        headers: Mapping[str, str],
        messages: list[codec.Message],
        responder: Responder,
        refused: Mapping[int, ProtocolError] | None = None,
    ) -> None:
        """A JSON-RPC batch: only sessions that negotiated 2025-03-26 may send one; the members
        ``refused`` (by index, before anything ran) get their error."""
        if SESSION_HEADER not in headers:
            await responder.reply(400, BATCH_REFUSED)
            return
        found = await self._session(headers, responder)
        if found is None:
            return
        session, old = found
        if not supports_batching(session.version):
            await responder.reply(400, BATCH_REFUSED)
            return
        exchange = Exchange(session, old)
        emission = Emission(responder, resumable=partial(self._resumable, session))

        async def request(message: codec.Message) -> bytes | None:
            return await self.request(exchange, message, emission, headers)

        async def other(message: codec.Message) -> None:
            with contextlib.suppress(BusUnavailable):  # lost, as a lost signal is
                await self.client_message(session, message)

        answers = await batches.answers(messages, request, other, refused)
        if exchange.session_changed:
            await self._save_state(exchange)
        emission.extra_headers = self._session_headers(exchange)
        if emission.streaming:  # the answers follow the notifications, as resumable events
            for answer in answers[:-1]:
                await emission.emit(answer)
            if answers:
                await emission.finish(answers[-1])
            else:
                await emission.abandon()
        elif answers:
            await responder.reply(200, b"[" + b",".join(answers) + b"]", emission.extra_headers)
        else:
            await responder.reply(202, b"", emission.extra_headers)

    # ------------------------------------------------------------------------------ GET stream

    async def get(self, headers: Mapping[str, str], responder: Responder) -> None:
        """The standalone SSE stream: notifications not tied to a call, resumable by
        ``Last-Event-ID``; under 2025-11-25 it opens with a priming event and ``retry``.
        A ``Last-Event-ID`` of a request's stream resumes that stream instead.
        Without a session id this is modern-era traffic, which has no GET: 405."""
        session = await self._session_of_stream(headers, responder)
        if session is None:
            return
        if "text/event-stream" not in headers.get("accept", "text/event-stream"):
            await responder.reply(
                406,
                jsonrpc.error(
                    None, jsonrpc.INVALID_REQUEST, "Accept must include text/event-stream"
                ),
            )
            return
        last = (headers.get("last-event-id") or "").strip()
        try:
            if last:
                async with self.runtime.bus.follow(session.id, last) as events:
                    if events is not None:
                        await streams.resume(self.runtime, session, last, events, responder)
                        return
            await streams.standalone(self.runtime, session, last, responder)
        except BusUnavailable as exc:  # before the stream (within it, the stream ends)
            await _refuse(responder, None, exc)

    async def delete(self, headers: Mapping[str, str], responder: Responder) -> None:
        """End a session: its id answers 404 from now on, in every worker sharing the bus (with
        `LocalBus`: this process, until it restarts); 503 while the bus is away.
        Without a session id there is nothing to end: 405, as for the modern era."""
        session = await self._session_of_stream(headers, responder)
        if session is None:
            return
        try:
            await sessions.end(self.runtime.bus, session, self.config)
        except BusUnavailable as exc:
            await _refuse(responder, None, exc)
            return
        self._session_ended(session)
        await responder.reply(204, b"")

    def _session_ended(self, session: Session) -> None:
        """Record ``mcp.server.session.duration``: from the session's start (its id's first
        issue) to its DELETE; sessions that just expire are not measured."""
        instruments = self.telemetry.instruments if self.telemetry is not None else None
        if instruments is None or not session.started:
            return
        attrs = {semconv.PROTOCOL_VERSION: session.version, **semconv.transport(True)}
        instruments.server_session.record(max(0.0, time.time() - session.started), attrs)


def _no_version(params: bytes | None) -> bool:
    """Whether ``initialize`` params name no ``protocolVersion`` (so it is no handshake)."""
    try:
        decoded = msgspec.json.decode(params or b"{}")
    except msgspec.DecodeError:
        return False
    return not isinstance(decoded, dict) or "protocolVersion" not in decoded


async def _refuse(responder: Responder, id_: int | str | None, exc: ProtocolError) -> None:
    """Answer a refused message; the bus away says when to retry."""
    headers: Headers | None = exc.headers if isinstance(exc, BusUnavailable) else None
    await responder.reply(*error_reply(id_, exc), headers)
