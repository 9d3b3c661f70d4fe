"""The legacy eras (2025-11-25, 2025-06-18, 2025-03-26): handshake, signed sessions, the GET
stream with resumption, resumable POST streams (and SSE polling under 2025-11-25),
server-to-client requests, cancellation and 2025-03-26 batches.

A session lives in its ``Mcp-Session-Id`` token (see `sessions`), so any worker serves any
session. What must meet in one place at run time — a server-to-client request waiting for the
client's answer, a request that ``notifications/cancelled`` names — is kept per worker here; with
several workers a shared bus routes them (see `bus`). The events of a request's SSE stream are
recorded on the bus too, so a client resumes it (GET + ``Last-Event-ID``) wherever the bus
reaches; with the in-process `LocalBus` that is the worker that served the POST.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .. import codec, jsonrpc
from ..errors import MCPError, ProtocolError, TokenError
from ..protocol.capabilities import InputRequest
from ..protocol.http import Headers, prefers_event_stream
from ..protocol.methods import INSTANT
from ..types import (
    LOG_LEVELS,
    CallToolParams,
    CancelledParams,
    CompleteParams,
    GetPromptParams,
    InitializeParams,
    ListParams,
    ReadResourceParams,
    RequestMeta,
    SetLevelParams,
    TaskParams,
    UriParams,
)
from ..versions import LEGACY, negotiate_legacy, supports_batching
from . import sessions
from .app import LIST_TOPICS, resource_topic
from .bus import StreamEvent
from .call import Call
from .modern import decode_params
from .responder import Emission, Responder, Resumable
from .sessions import Session

if TYPE_CHECKING:
    from .endpoint import Endpoint

SESSION_HEADER = b"mcp-session-id"


class _Meta(msgspec.Struct):
    meta: RequestMeta | None = msgspec.field(default=None, name="_meta")


_meta_decoder = msgspec.json.Decoder(_Meta)


class Pending:
    """A server-to-client request waiting for its answer."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: Any = None
        self.error: dict[str, Any] | None = None


class LiveInput:
    """The legacy input source: each input request is a real request on the call's stream."""

    __slots__ = ("emission", "era", "session")

    def __init__(self, era: LegacyEra, session: Session, emission: Emission) -> None:
        self.era = era
        self.session = session
        self.emission = emission

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """Send every request at once and wait for all the answers.

        Raises:
            MCPError: the client answered one with an error (the first such, unwrapped, as
                the modern era raises it); the other requests are cancelled.
        """
        answers: dict[str, Any] = {}

        async def one(key: str, request: InputRequest) -> None:
            answers[key] = await self.era.request_client(
                self.session, self.emission, request.method, request.params
            )

        try:
            async with trio.open_nursery() as nursery:
                for key, request in requests.items():
                    nursery.start_soon(one, key, request)
        except BaseExceptionGroup as group:
            matched, rest = group.split(MCPError)
            if matched is None or rest is not None:
                raise
            first: BaseException = matched
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        return answers


class Exchange:
    """One legacy request being served: its session, and a re-minted id to send back if any."""

    __slots__ = ("headers", "session", "session_changed", "token_old")

    def __init__(self, session: Session, token_old: bool) -> None:
        self.session = session
        self.session_changed = False
        self.token_old = token_old
        self.headers: Headers = []


Handler = Callable[["LegacyEra", Call, Exchange, bytes | None], Awaitable[Any]]


class LegacyEra:
    """Serves the handshake-and-session revisions for one `Endpoint`."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.server = endpoint.server
        self.keys = endpoint.keys
        self.config = endpoint.config
        self.pending: dict[tuple[str, int | str], Pending] = {}
        self.running: dict[tuple[str, int | str], trio.CancelScope] = {}
        self._ids = itertools.count(1)
        self.handlers: dict[str, Handler] = {
            "ping": LegacyEra.ping,
            "logging/setLevel": LegacyEra.set_level,
            "tools/list": LegacyEra.tools_list,
            "tools/call": LegacyEra.tools_call,
            "resources/list": LegacyEra.resources_list,
            "resources/templates/list": LegacyEra.templates_list,
            "resources/read": LegacyEra.resources_read,
            "resources/subscribe": LegacyEra.subscribe,
            "resources/unsubscribe": LegacyEra.unsubscribe,
            "prompts/list": LegacyEra.prompts_list,
            "prompts/get": LegacyEra.prompts_get,
            "completion/complete": LegacyEra.complete,
            "tasks/get": LegacyEra.tasks_get,
            "tasks/result": LegacyEra.tasks_result,
            "tasks/list": LegacyEra.tasks_list,
            "tasks/cancel": LegacyEra.tasks_cancel,
        }

    # --------------------------------------------------------------------------------- sessions

    async def _session(
        self, headers: Mapping[str, str], responder: Responder, id_: int | str | None = None
    ) -> tuple[Session, bool] | None:
        """The session of the request and whether its id is old enough to re-mint, or None
        after answering 400 (no id, a wrong version header) / 404 (an unknown or ended id)."""
        token = headers.get("mcp-session-id")
        if token is None:
            await responder.reply(
                400,
                jsonrpc.error(
                    id_, jsonrpc.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required"
                ),
            )
            return None
        try:
            found = await sessions.resume(self.server.bus, self.keys, token.strip(), self.config)
        except TokenError as exc:
            await responder.reply(
                404, jsonrpc.error(id_, -32001, "Session not found", {"reason": exc.reason})
            )
            return None
        version_header = headers.get("mcp-protocol-version")
        if version_header is not None and version_header.strip() not in LEGACY:
            await responder.reply(
                400,
                jsonrpc.error(
                    id_,
                    jsonrpc.INVALID_REQUEST,
                    f"Bad Request: unsupported MCP-Protocol-Version {version_header.strip()}",
                    {"supported": list(LEGACY)},
                ),
            )
            return None
        return found

    def _session_headers(self, exchange: Exchange) -> Headers:
        if exchange.session_changed or exchange.token_old:
            return [(SESSION_HEADER, sessions.mint(self.keys, exchange.session).encode())]
        return []

    # ------------------------------------------------------------------------------------ POST

    async def post(
        self, headers: Mapping[str, str], message: codec.Message, responder: Responder
    ) -> None:
        """One legacy message: ``initialize``, or a message of an existing session."""
        kind, id_, method, _, _, params, payload = message
        if kind == codec.KIND_REQUEST and method == "initialize":
            await self.initialize(id_, params, responder)
            return
        found = await self._session(headers, responder, id_)
        if found is None:
            return
        session, old = found
        if kind == codec.KIND_NOTIFICATION:
            await self.notification(session, method, params)
            await responder.reply(202, b"")
        elif kind in (codec.KIND_RESULT, codec.KIND_ERROR):
            self.deliver(session, id_, kind, payload)
            await responder.reply(202, b"")
        else:
            exchange = Exchange(session, old)
            emission = Emission(
                responder,
                self._session_headers(exchange),
                resumable=self._resumable(session),
                prefer_stream=prefers_event_stream(headers.get("accept")),
            )
            out = await self.request(exchange, message, emission)
            if exchange.session_changed:  # for clients that never adopt the re-minted id
                await sessions.save_state(self.server.bus, exchange.session, self.config)
            emission.extra_headers = self._session_headers(exchange)
            if out is not None:
                await emission.finish(out)
            else:
                await emission.abandon()

    def _resumable(self, session: Session) -> Resumable:
        """A request's SSE stream is resumable in every legacy revision (event ids, replay on
        GET + ``Last-Event-ID``); 2025-11-25 adds the priming event, ``retry`` and polling."""
        retry = self.config.sse_retry_ms if session.version == "2025-11-25" else None
        return Resumable(self.server.bus, session.id, self.config.event_store_size, retry)

    async def initialize(
        self, id_: int | str | None, params: bytes | None, responder: Responder
    ) -> None:
        """Open a session: negotiate the revision and mint its id."""
        try:
            p: InitializeParams = decode_params(InitializeParams, params)
        except ProtocolError as exc:
            await responder.reply(400, jsonrpc.error(id_, exc.code, exc.message, exc.data))
            return
        version = negotiate_legacy(p.protocolVersion)
        session = sessions.new_session(version, p.capabilities)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.server.capabilities(version),
            "serverInfo": self.server.info,
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        await responder.reply(
            200,
            jsonrpc.result(id_, result),
            [(SESSION_HEADER, sessions.mint(self.keys, session).encode())],
        )

    async def notification(
        self, session: Session, method: str | None, params: bytes | None
    ) -> None:
        """Client notifications: cancellation acts; the rest need nothing from a stateless
        server."""
        if method == "notifications/cancelled":
            try:
                p = msgspec.json.decode(params or b"{}", type=CancelledParams)
            except msgspec.ValidationError:
                return
            if p.requestId is not None:
                scope = self.running.get((session.id, p.requestId))
                if scope is not None:
                    scope.cancel()

    def deliver(
        self, session: Session, id_: int | str | None, kind: int, payload: bytes | None
    ) -> None:
        """A client's answer to a server-to-client request."""
        if id_ is None:
            return
        waiting = self.pending.get((session.id, id_))
        if waiting is None:
            return
        decoded = msgspec.json.decode(payload or b"null")
        if kind == codec.KIND_RESULT:
            waiting.result = decoded
        else:
            waiting.error = (
                decoded if isinstance(decoded, dict) else {"code": -32603, "message": "error"}
            )
        waiting.done.set()

    async def request_client(
        self, session: Session, emission: Emission, method: str, params: dict[str, Any]
    ) -> Any:
        """Send a request to the client on the call's stream and wait for its answer.

        Raises:
            MCPError: the client answered with an error, or -32603 when it did not answer
                within ``Config.input_timeout_seconds`` (the client is sent
                ``notifications/cancelled`` for it).
        """
        request_id = f"mcpfast-{next(self._ids)}"
        waiting = Pending()
        self.pending[(session.id, request_id)] = waiting
        limit = self.config.input_timeout_seconds
        try:
            await emission.emit(jsonrpc.request(request_id, method, params))
            with trio.move_on_after(limit):
                await waiting.done.wait()
        finally:
            del self.pending[(session.id, request_id)]
        if not waiting.done.is_set():
            reason = f"The client did not answer {method} within {limit:g} s"
            cancel = {"requestId": request_id, "reason": reason}
            await emission.emit(jsonrpc.notification("notifications/cancelled", cancel))
            raise MCPError(jsonrpc.INTERNAL_ERROR, reason)
        if waiting.error is not None:
            raise MCPError(
                int(waiting.error.get("code", -32603)),
                str(waiting.error.get("message", "")),
                waiting.error.get("data"),
            )
        return waiting.result

    async def request(
        self, exchange: Exchange, message: codec.Message, emission: Emission
    ) -> bytes | None:
        """Serve one request of a session; returns the response, or None if it was cancelled."""
        _, id_, method, _, _, params, _ = message
        assert method is not None
        session = exchange.session
        handler = self.handlers.get(method)
        if handler is None:
            return jsonrpc.error(id_, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")
        meta = None
        if params is not None and b'"_meta"' in params:
            try:
                meta = _meta_decoder.decode(params).meta
            except msgspec.ValidationError:
                meta = None
        call = Call(
            id=id_,
            method=method,
            version=session.version,
            capabilities=session.capabilities,
            log_level=session.log_level,
            progress_token=meta.progress_token if meta is not None else None,
            emitter=emission,
            input=LiveInput(self, session, emission),
        )
        call.session_id = session.id
        if not self._may_wait(method, message[3]):
            try:
                return jsonrpc.result(id_, await handler(self, call, exchange, params))
            except ProtocolError as exc:
                return jsonrpc.error(id_, exc.code, exc.message, exc.data)
        key = (session.id, id_) if id_ is not None else None
        with trio.CancelScope() as scope:
            if key is not None:
                self.running[key] = scope
            try:
                result = await handler(self, call, exchange, params)
            except ProtocolError as exc:
                return jsonrpc.error(id_, exc.code, exc.message, exc.data)
            finally:
                if key is not None:
                    self.running.pop(key, None)
            return jsonrpc.result(id_, result)
        return None

    def _may_wait(self, method: str, name: str | None) -> bool:
        """Whether a request can block (and so needs a cancel scope for
        ``notifications/cancelled``): every call of an async handler; never the instant methods."""
        if method == "tools/call":
            tool = self.server.tools.get(name) if name is not None else None
            return tool is None or tool.signature.is_async
        return method not in INSTANT

    # ---------------------------------------------------------------------------------- batches

    async def batch(
        self, headers: Mapping[str, str], messages: list[codec.Message], responder: Responder
    ) -> None:
        """A JSON-RPC batch: only sessions that negotiated 2025-03-26 may send one."""
        if "mcp-session-id" not in headers:
            await responder.reply(400, _BATCH_REFUSED)
            return
        found = await self._session(headers, responder)
        if found is None:
            return
        session, old = found
        if not supports_batching(session.version):
            await responder.reply(400, _BATCH_REFUSED)
            return
        exchange = Exchange(session, old)
        emission = Emission(responder, resumable=self._resumable(session))
        answers: list[bytes] = []

        async def one(message: codec.Message) -> None:
            kind, id_, method, _, _, params, payload = message
            if kind == codec.KIND_INVALID:
                answers.append(
                    jsonrpc.error(
                        id_, jsonrpc.INVALID_REQUEST, "Invalid Request", {"reason": method}
                    )
                )
            elif kind == codec.KIND_NOTIFICATION:
                await self.notification(session, method, params)
            elif kind in (codec.KIND_RESULT, codec.KIND_ERROR):
                self.deliver(session, id_, kind, payload)
            elif method == "initialize":
                answers.append(
                    jsonrpc.error(
                        id_, jsonrpc.INVALID_REQUEST, "initialize cannot be part of a batch"
                    )
                )
            else:
                out = await self.request(exchange, message, emission)
                if out is not None:
                    answers.append(out)

        async with trio.open_nursery() as nursery:
            for message in messages:
                nursery.start_soon(one, message)
        if exchange.session_changed:
            await sessions.save_state(self.server.bus, exchange.session, self.config)
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

    def _topics(self, session: Session) -> list[str]:
        topics = [*LIST_TOPICS.values(), "session/" + session.id, "notify/" + session.id]
        topics.extend(resource_topic(uri) for uri in session.subscriptions)
        return topics

    async def get(self, headers: Mapping[str, str], responder: Responder) -> None:
        """The standalone SSE stream: notifications not tied to a call, resumable by
        ``Last-Event-ID``; under 2025-11-25 it opens with a priming event and ``retry``.
        A ``Last-Event-ID`` of a request's stream resumes that stream instead (`_resume`).
        Without a session id this is modern-era traffic, which has no GET: 405."""
        if "mcp-session-id" not in headers:
            await responder.reply(405, b"", [(b"allow", b"POST")])
            return
        found = await self._session(headers, responder)
        if found is None:
            return
        session, _ = found
        if "text/event-stream" not in headers.get("accept", "text/event-stream"):
            await responder.reply(
                406,
                jsonrpc.error(
                    None, jsonrpc.INVALID_REQUEST, "Accept must include text/event-stream"
                ),
            )
            return
        last = (headers.get("last-event-id") or "").strip()
        if last:
            async with self.server.bus.follow(session.id, last) as events:
                if events is not None:
                    await self._resume(session, last, events, responder)
                    return
        await self.standalone(session, last, responder)

    async def _resume(
        self, session: Session, last: str, events: AsyncIterator[StreamEvent], responder: Responder
    ) -> None:
        """Resume a request's stream: the events after ``last``, then live ones, until the
        request's response went out (or the handler cut this connection too: `close_stream`).
        Only that stream's events: nothing of the standalone stream or of other requests."""
        await responder.open_stream()
        if session.version == "2025-11-25":
            # the client's own resumption point again, carrying ``retry`` for the next poll
            await responder.send(b"", event_id=last, retry_ms=self.config.sse_retry_ms)
        keepalive = self.config.keepalive_seconds

        async def pump() -> None:
            while True:
                with trio.move_on_after(keepalive) as idle:
                    try:
                        event_id, data = await anext(events)
                    except StopAsyncIteration:
                        return
                if idle.cancelled_caught:
                    await responder.keepalive()
                elif data:
                    await responder.send(data, event_id=event_id)

        await self.endpoint.linger(responder, pump)
        await responder.close()

    async def standalone(
        self,
        session: Session,
        last: str,
        responder: Responder,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The session's notifications that belong to no request (list changes, updates of
        subscribed resources, elicitation completions): the GET stream over HTTP, the pipe
        itself over stdio. Subscribed before ``task_status.started()``, the priming event and
        the replay, so nothing published meanwhile is missed (what both the replay and the
        subscription hold goes out once)."""
        bus = self.server.bus
        subscription = AsyncExitStack()
        events = await subscription.enter_async_context(bus.subscribe(self._topics(session)))
        task_status.started()
        try:
            await responder.open_stream()
            if session.version == "2025-11-25":
                head = await bus.head()
                await responder.send(b"", event_id=head, retry_ms=self.config.sse_retry_ms)
            replayed: set[str] = set()
            if last:
                for event_id, _, note in await bus.replay(last, self._topics(session)) or ():
                    await responder.send(_note(note), event_id=event_id)
                    replayed.add(event_id)
            keepalive = self.config.keepalive_seconds

            async def forward() -> None:
                nonlocal events, session, subscription
                while True:
                    with trio.move_on_after(keepalive) as idle:
                        event_id, topic, note = await events.receive()
                    if idle.cancelled_caught:
                        await responder.keepalive()
                    elif topic.startswith("session/"):
                        # subscriptions changed: follow the new topics, subscribed to before
                        # the old subscription ends
                        session = msgspec.convert(note["params"], Session)
                        fresh = AsyncExitStack()
                        events = await fresh.enter_async_context(
                            bus.subscribe(self._topics(session))
                        )
                        await subscription.aclose()
                        subscription = fresh
                    elif event_id not in replayed:
                        await responder.send(_note(note), event_id=event_id)

            await self.endpoint.linger(responder, forward)
            await responder.close()  # the server shuts down
        finally:
            await subscription.aclose()

    async def delete(self, headers: Mapping[str, str], responder: Responder) -> None:
        """End a session: its id answers 404 from now on, in every worker sharing the bus.
        Without a session id there is nothing to end: 405, as for the modern era."""
        if "mcp-session-id" not in headers:
            await responder.reply(405, b"", [(b"allow", b"POST")])
            return
        found = await self._session(headers, responder)
        if found is None:
            return
        session, _ = found
        await sessions.end(self.server.bus, session, self.config)
        await responder.reply(204, b"")

    # ---------------------------------------------------------------------------------- methods

    async def ping(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        return {}

    async def set_level(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        p: SetLevelParams = decode_params(SetLevelParams, params)
        if p.level not in LOG_LEVELS:
            raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Invalid log level: {p.level}")
        exchange.session = msgspec.structs.replace(exchange.session, log_level=p.level)
        exchange.session_changed = True
        return {}

    async def _subscriptions(self, exchange: Exchange, uris: list[str]) -> None:
        exchange.session = msgspec.structs.replace(exchange.session, subscriptions=uris)
        exchange.session_changed = True
        await self.server.bus.publish(
            "session/" + exchange.session.id,
            {"method": "session", "params": msgspec.to_builtins(exchange.session)},
        )

    async def subscribe(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        p: UriParams = decode_params(UriParams, params)
        uris = [u for u in exchange.session.subscriptions if u != p.uri]
        if len(uris) >= sessions.MAX_SUBSCRIPTIONS:
            raise ProtocolError(jsonrpc.INVALID_PARAMS, "Too many subscriptions in one session")
        await self._subscriptions(exchange, [*uris, p.uri])
        return {}

    async def unsubscribe(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        p: UriParams = decode_params(UriParams, params)
        await self._subscriptions(
            exchange, [u for u in exchange.session.subscriptions if u != p.uri]
        )
        return {}

    async def tools_list(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        items = [t.definition for t in self.server.tools.values()]
        return self.server.list_result(call, decode_params(ListParams, params), "tools", items)

    async def resources_list(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        items = [r.definition for r in self.server.resources.values()]
        return self.server.list_result(call, decode_params(ListParams, params), "resources", items)

    async def templates_list(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        items = [t.definition for t in self.server.templates.values()]
        return self.server.list_result(
            call, decode_params(ListParams, params), "resourceTemplates", items
        )

    async def prompts_list(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        items = [p.definition for p in self.server.prompts.values()]
        return self.server.list_result(call, decode_params(ListParams, params), "prompts", items)

    async def tools_call(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        p: CallToolParams = decode_params(CallToolParams, params)
        entry = self.server.find_tool(p.name)
        store = self.server.task_store
        if p.task is not None and call.version == "2025-11-25" and store is not None:
            if entry.task_support == "forbidden":
                raise ProtocolError(
                    jsonrpc.METHOD_NOT_FOUND, f"Tool {p.name} does not run as a task"
                )
            return await store.start_legacy(call, entry, p)
        if entry.task_support == "required" and call.version == "2025-11-25":
            raise ProtocolError(jsonrpc.METHOD_NOT_FOUND, f"Tool {p.name} must run as a task")
        return await self.server.run_tool(call, entry, bytes(p.arguments))

    async def resources_read(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        return await self.server.read_resource(call, decode_params(ReadResourceParams, params))

    async def prompts_get(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        return await self.server.get_prompt(call, decode_params(GetPromptParams, params))

    async def complete(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        return await self.server.complete(call, decode_params(CompleteParams, params))

    def _store(self, call: Call) -> Any:
        if call.version != "2025-11-25" or self.server.task_store is None:
            raise ProtocolError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {call.method}")
        return self.server.task_store

    async def tasks_get(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        return self._store(call).get_legacy(decode_params(TaskParams, params).taskId)

    async def tasks_result(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        task_id = decode_params(TaskParams, params).taskId
        return await self._store(call).result_legacy(task_id, call.input)

    async def tasks_list(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        store = self._store(call)
        return self.server.list_result(
            call, decode_params(ListParams, params), "tasks", store.list_legacy()
        )

    async def tasks_cancel(self, call: Call, exchange: Exchange, params: bytes | None) -> Any:
        return self._store(call).cancel_legacy(decode_params(TaskParams, params).taskId)


_BATCH_REFUSED = jsonrpc.error(
    None, jsonrpc.INVALID_REQUEST, "Invalid Request", {"reason": "batches need 2025-03-26"}
)
"""The answer to a batch outside a 2025-03-26 session."""


def _note(note: dict[str, Any]) -> bytes:
    return jsonrpc.notification(note["method"], note.get("params"))
