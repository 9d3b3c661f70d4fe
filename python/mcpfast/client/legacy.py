"""A legacy session over Streamable HTTP (2025-*): the I/O around `protocol.session.ClientSession`.

`LegacyHttp` runs the handshake, keeps the session id (replaced when the server re-mints it),
answers server-to-client requests met on any stream, reads the standalone GET stream
(`get_stream`), resumes dropped streams with ``Last-Event-ID`` honouring ``retry``, sends batches
under 2025-03-26, and DELETEs the session on close. A response may arrive on any stream of the
session: the `Correlator` hands it to the request waiting for it.

When the session expires (404 to a request, or to the GET stream, that carried its id) it is
renewed once (`LegacyHttp._renew`): a new ``initialize``, then what the old session had set up is
set up again: the log level it set, the resources it subscribed to, and the GET stream (when
one was open). The request that met the 404 is then retried once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx2
import trio

from .. import jsonrpc
from ..errors import MCPError, TransportError
from ..protocol.correlation import (
    Correlator,
    RequestId,
    cancel_params,
    kind_of,
    result_of,
)
from ..protocol.discovery import http_error_text
from ..protocol.initialize import Initialized
from ..protocol.session import SESSION_HEADER, ClientSession, ResumePoint
from ..telemetry import current, propagation, semconv
from ..telemetry.tracing import asking, identify, recording
from ..versions import LATEST_LEGACY, supports_batching
from .get_stream import GetStream
from .http import (
    MAX_MESSAGE_BYTES,
    Dropped,
    HttpStatusError,
    events_of,
    messages_of,
    naming_tls,
    read_answer,
    read_body,
    route,
)
from .peer import Peer

log = logging.getLogger("mcpfast.client")


class LegacyHttp:
    """A legacy session over HTTP; ``state`` holds its rules and state (`ClientSession`)."""

    era = "legacy"

    def __init__(
        self,
        client: httpx2.AsyncClient,
        url: str,
        peer: Peer,
        *,
        client_info: dict[str, Any],
        version: str = LATEST_LEGACY,
        open_get_stream: bool = True,
        max_resumes: int = 5,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.client = client
        self.url = url
        self.peer = peer
        self.client_info = client_info
        self.state = ClientSession(version)
        self.open_get_stream = open_get_stream
        self.max_resumes = max_resumes
        self.max_message_bytes = max_message_bytes
        self.param_headers: dict[str, Any] = {}
        self.requests: Correlator[trio.CancelScope] = Correlator("c")
        self.log_level: str | None = None
        """The level the last ``logging/setLevel`` set (restored in a renewed session)."""
        self.subscriptions: set[str] = set()
        """The resources subscribed to (subscribed again in a renewed session)."""
        self._nursery: trio.Nursery | None = None
        self._stream = GetStream(
            client, url, self.state, max_message_bytes, self._renew, self._deliver
        )
        """The standalone GET stream (opened by `start` unless ``open_get_stream`` is off)."""
        self._renewing = trio.Lock()
        self._telemetry = current()
        self._started = 0.0
        """When the session began (`time.monotonic`; 0: not yet)."""

    @property
    def version(self) -> str:
        return self.state.version

    @property
    def session(self) -> str | None:
        """The session id (None: none yet, or the server keeps none)."""
        return self.state.id

    @property
    def initialized(self) -> Initialized | None:
        return self.state.initialized

    def _adopt(self, response: httpx2.Response) -> None:
        self.state.adopt(response.headers.get(SESSION_HEADER))

    # ---------------------------------------------------------------------------------- session

    async def start(self, nursery: trio.Nursery) -> Initialized:
        """Initialize, then open the GET stream in ``nursery`` (which owns it until the
        session's connection ends).

        Raises:
            TransportError: the server refused the handshake.
        """
        initialized = await self._initialize()
        self._started = time.monotonic()
        self._nursery = nursery
        if self.open_get_stream:
            await nursery.start(self._stream.run)
        return initialized

    async def _renew(self, expired: str | None) -> None:
        """The session whose id was ``expired`` is gone: initialize a new one (unless another
        request already did), set the log level and subscriptions again, and reconnect the GET
        stream (or start it again, if it was open and ended on the expiry).

        Raises:
            TransportError, MCPError: the new session could not be opened or set up.
        """
        async with self._renewing:
            if self.state.id != expired:
                return  # renewed already, by a request that met the 404 first
            await self._initialize()
            try:
                if self.log_level is not None:
                    await self._request("logging/setLevel", {"level": self.log_level})
                for uri in sorted(self.subscriptions):
                    await self._request("resources/subscribe", {"uri": uri})
            except _Expired:
                raise TransportError("the renewed session expired at once") from None
            if self._stream.reconnect():  # at once, in the new session
                return
            if not self._stream.running and self.open_get_stream and self._nursery:
                await self._nursery.start(self._stream.run)

    async def _initialize(self) -> Initialized:
        """The handshake (`_handshake`), in a CLIENT span when telemetry is live."""
        telemetry = self._telemetry
        if telemetry is None:
            return await self._handshake()
        with asking(
            telemetry,
            method="initialize",
            name=None,
            version=self.state.requested,
            transport=semconv.http_transport(self.url),
        ) as op:
            initialized = await self._handshake()
            if self.state.id is not None:
                op.set(semconv.SESSION_ID, self.state.id)
            return initialized

    async def _handshake(self) -> Initialized:
        params = self.state.begin(self.peer.capabilities(self.state.requested), self.client_info)
        id_ = self.requests.next_id(bare=True)
        headers = self.state.initialize_headers()
        if self._telemetry is not None and recording():  # its trace context: _meta, headers
            params = propagation.carrying(params)
            headers = {**headers, **propagation.headers_of(params)}
            identify(id_)
        request = self.client.build_request(
            "POST", self.url, content=jsonrpc.request(id_, "initialize", params), headers=headers
        )
        async with naming_tls(self.url):
            response = await self._send_initialize(request)
            try:
                if response.status_code >= 400:
                    data = await read_body(response, self.max_message_bytes)
                    raise HttpStatusError(
                        http_error_text(response.status_code, data), response.status_code
                    )
                self._adopt(response)
                result = await read_answer(
                    response, id_, self.peer, self._answer, limit=self.max_message_bytes
                )
            finally:
                await response.aclose()
        try:
            initialized = self.state.opened(result)
        except TransportError:  # a revision we do not speak: end the session it opened
            await self.aclose()
            self.state.end()
            raise
        self.peer.version = initialized.version
        await self.notify("notifications/initialized")
        return initialized

    async def _send_initialize(self, request: httpx2.Request) -> httpx2.Response:
        """``initialize`` sent, its response's head read. A connection reset before any answer
        (a kept-alive connection the server had just closed) is sent once more on a new
        connection: unanswered, it opened nothing this client could use.

        Raises:
            httpx2.TransportError: the second attempt failed too, or any other failure.
        """
        try:
            return await self.client.send(request, stream=True)
        except (httpx2.ReadError, httpx2.RemoteProtocolError):
            return await self.client.send(request, stream=True)

    # --------------------------------------------------------------------------------- messages

    async def _answer(self, message: dict[str, Any]) -> None:
        """Answer a server-to-client request (by POST, as the transport requires)."""
        reply = await self.peer.reply_to(message)
        response = await self.client.post(self.url, content=reply, headers=self.state.headers())
        await response.aclose()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        response = await self.client.post(
            self.url, content=jsonrpc.notification(method, params), headers=self.state.headers()
        )
        self._adopt(response)
        await response.aclose()

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        """Send a request in the session; when the session expired, initialize a new one and
        retry once. Cancelled, it is announced with ``notifications/cancelled``.

        Raises:
            MCPError: the server answered with an error.
            TransportError: the answer was not MCP.
        """
        params = dict(params or {})
        if meta:
            params["_meta"] = {**params.get("_meta", {}), **meta}
        try:
            result = await self._request(method, params)
        except _Expired as expired:
            await self._renew(expired.session)
            try:
                result = await self._request(method, params)
            except _Expired:
                raise TransportError(
                    f"the session expired again at once: {method} was not served"
                ) from None
        self._remember(method, params)
        return result

    def _remember(self, method: str, params: dict[str, Any]) -> None:
        """Note what a successful request set up in the session (to set it up again)."""
        if method == "logging/setLevel" and isinstance(params.get("level"), str):
            self.log_level = params["level"]
        elif method == "resources/subscribe" and isinstance(params.get("uri"), str):
            self.subscriptions.add(params["uri"])
        elif method == "resources/unsubscribe":
            self.subscriptions.discard(params.get("uri"))

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        pending = self.requests.open(trio.CancelScope())
        identify(pending.id)
        body = jsonrpc.request(pending.id, method, params or None)
        point = ResumePoint()
        traced = propagation.headers_of(params)
        try:
            with pending.waker:
                try:
                    return await self._post(pending.id, body, point, traced)
                except Dropped:
                    return await self._resume(pending.id, point)
            if pending.answer is None:
                raise TransportError(f"no response to {method}")
            return result_of(pending.answer)
        except trio.Cancelled:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await self.notify(
                    "notifications/cancelled", cancel_params(pending.id, "cancelled by the client")
                )
            raise
        finally:
            self.requests.close(pending)

    async def _post(
        self, id_: RequestId, body: bytes, point: ResumePoint, traced: dict[str, str]
    ) -> Any:
        """POST a request and read its answer (`read_answer`, following ``point``), with the
        ``traced`` trace-context headers.

        Raises:
            _Expired: the session is gone (404).
        """
        headers = self.state.headers()
        if traced:
            headers = {**headers, **traced}
        async with self.client.stream("POST", self.url, content=body, headers=headers) as response:
            if response.status_code == 404:
                data = await read_body(response, self.max_message_bytes)
                if self.state.expired(404, headers.get(SESSION_HEADER)):
                    raise _Expired(headers.get(SESSION_HEADER))
                raise HttpStatusError(http_error_text(404, data), 404)
            self._adopt(response)
            return await read_answer(
                response, id_, self.peer, self._answer, point, limit=self.max_message_bytes
            )

    async def _deliver(self, message: Any) -> None:
        """Route a message from a stream not tied to one request: a response (servers may
        send it on a resumed or standalone stream) ends the request waiting for it."""
        if kind_of(message) != "response":
            await route(message, None, self.peer, self._answer)
            return
        pending = self.requests.deliver(message)
        if pending is not None:
            pending.waker.cancel()

    async def _resume(self, id_: RequestId, point: ResumePoint) -> Any:
        """Resume a dropped stream with GET + ``Last-Event-ID`` until the response arrives.

        Raises:
            TransportError: it could not be resumed (`max_resumes` attempts).
        """
        for _ in range(self.max_resumes):
            if point.last_event_id is None:
                break
            await trio.sleep(point.delay)
            headers = self.state.stream_headers(point.last_event_id)
            try:
                async with self.client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200:
                        break
                    return await read_answer(
                        response, id_, self.peer, self._answer, point, limit=self.max_message_bytes
                    )
            except Dropped:
                pass
        raise TransportError("the response stream dropped and could not be resumed")

    async def batch(self, calls: Sequence[tuple[str, dict[str, Any] | None]]) -> list[Any]:
        """Send requests as one JSON-RPC batch (2025-03-26 only); results or `MCPError`s, in order.

        Raises:
            TransportError: batching is not available in the negotiated revision.
        """
        if not supports_batching(self.version):
            raise TransportError(f"batches need 2025-03-26; this session speaks {self.version}")
        ids = [self.requests.next_id() for _ in calls]
        body = (
            b"["
            + b",".join(jsonrpc.request(i, m, p) for i, (m, p) in zip(ids, calls, strict=True))
            + b"]"
        )
        answers = await self._batch_answers(body)
        out: list[Any] = []
        for i in ids:
            message = answers.get(i, {"error": {"code": -32603, "message": "no response"}})
            try:
                out.append(result_of(message))
            except MCPError as exc:
                out.append(exc)
        return out

    async def _batch_answers(self, body: bytes) -> dict[Any, dict[str, Any]]:
        """POST a batch; its responses by id (server requests met on the way are answered)."""
        answers: dict[Any, dict[str, Any]] = {}
        async with self.client.stream(
            "POST", self.url, content=body, headers=self.state.headers()
        ) as response:
            self._adopt(response)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                async for message in events_of(response, self.max_message_bytes):
                    if kind_of(message) == "response":
                        answers[message.get("id")] = message
                    else:
                        await route(message, None, self.peer, self._answer)
            else:
                body = await read_body(response, self.max_message_bytes)
                for message in messages_of(response, body):
                    answers[message.get("id")] = message
        return answers

    async def aclose(self) -> None:
        """DELETE the session (at most 2 s, shielded; a failure to reach the server is
        ignored)."""
        if self.state.id is None:
            return
        self._session_ended()
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            try:
                response = await self.client.delete(self.url, headers=self.state.headers())
                await response.aclose()
            except httpx2.TransportError:
                pass

    def _session_ended(self) -> None:
        """Record ``mcp.client.session.duration`` (from ``initialize`` to its close)."""
        telemetry = self._telemetry
        if telemetry is None or telemetry.instruments is None or not self._started:
            return
        attrs = {semconv.PROTOCOL_VERSION: self.version, **semconv.transport(True)}
        telemetry.instruments.client_session.record(time.monotonic() - self._started, attrs)


class _Expired(Exception):
    """The session expired (404): the request was not served."""

    def __init__(self, session: str | None) -> None:
        super().__init__("session expired")
        self.session = session
        """The id the request carried."""
