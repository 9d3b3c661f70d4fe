"""Streamable HTTP for the client, both eras.

`ModernHttp` sends each request as one stateless POST with ``_meta`` and the mirrored headers and
reads a JSON or SSE answer; closing the stream cancels. `LegacyHttp` keeps a session: the
handshake, the session id (replaced when the server re-mints it, re-initialized once on 404),
server-to-client requests on any stream, the standalone GET stream, resumption with
``Last-Event-ID`` honouring ``retry``, batches under 2025-03-26, and DELETE on close.
"""

from __future__ import annotations

import itertools
import json
import ssl
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio

from .. import jsonrpc
from ..errors import MCPError, TransportError
from ..protocol import sse
from ..protocol.discovery import http_error_text, pick_version
from ..protocol.headers import ACCEPT, request_headers
from ..protocol.modern import request_meta
from ..versions import LATEST_LEGACY, MODERN, MODERN_VERSIONS, supports_batching
from .peer import Peer


class HttpStatusError(TransportError):
    """A non-MCP HTTP answer, with its status and body excerpt."""


# ------------------------------------------------------------------------- TLS / plain mixups

_PLAIN_HTTP_REASONS = frozenset(
    {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL"}
)
"""OpenSSL's words (3.0 and later) for a TLS client reading a plain-HTTP answer."""
PLAIN_HTTP = "the server speaks plain HTTP, use http://"
SPEAKS_TLS = "the server speaks TLS (HTTPS), use https://"


def _links(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it was raised from or during (causes, contexts, groups)."""
    stack, seen = [exc], set()
    while stack:
        link = stack.pop()
        if id(link) in seen:
            continue
        seen.add(id(link))
        yield link
        stack.extend(e for e in (link.__cause__, link.__context__) if e is not None)
        if isinstance(link, BaseExceptionGroup):
            stack.extend(link.exceptions)


async def tls_mismatch(url: str, exc: httpx.TransportError) -> str | None:
    """Why a request to ``url`` failed with ``exc`` when the cause is TLS spoken to a plain-HTTP
    server (`PLAIN_HTTP`) or plain HTTP to a TLS one (`SPEAKS_TLS`); None for anything else.

    The second is told by a TLS handshake with the server (at most 2 s, nothing sent after it),
    tried only after a plain request got no HTTP answer."""
    if url[:6].lower() == "https:":
        for link in _links(exc):
            if isinstance(link, ssl.SSLError) and link.reason in _PLAIN_HTTP_REASONS:
                return PLAIN_HTTP
        return None
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        parsed = httpx.URL(url)
        if await _speaks_tls(parsed.host, parsed.port or 80):
            return SPEAKS_TLS
    return None


async def _speaks_tls(host: str, port: int) -> bool:
    """Whether the server at ``host:port`` completes (or answers with an alert) a TLS handshake."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with trio.move_on_after(2):
        try:
            stream = await trio.open_tcp_stream(host, port)
        except OSError:
            return False
        tls = trio.SSLStream(stream, context, server_hostname=host)
        try:
            await tls.do_handshake()
        except trio.BrokenResourceError as exc:
            return any(
                isinstance(link, ssl.SSLError) and "ALERT" in str(link.reason or "")
                for link in _links(exc)
            )
        finally:
            await trio.aclose_forcefully(tls)
        return True
    return False


async def unreachable(url: str, exc: httpx.TransportError) -> TransportError:
    """The `TransportError` for a request to ``url`` that failed with ``exc`` before any
    answer: the TLS mixup when `tls_mismatch` finds one, else httpx's words."""
    cause = await tls_mismatch(url, exc) or str(exc) or type(exc).__name__
    return TransportError(f"cannot reach {url}: {cause}")


@asynccontextmanager
async def _naming_tls(url: str) -> AsyncIterator[None]:
    """Turn an httpx failure caused by a TLS / plain-HTTP mixup into a `TransportError` that
    says so; other failures pass unchanged."""
    try:
        yield
    except httpx.TransportError as exc:
        cause = await tls_mismatch(url, exc)
        if cause is None:
            raise
        raise TransportError(f"cannot reach {url}: {cause}") from exc


def _messages_of(response: httpx.Response, body: bytes) -> list[dict[str, Any]]:
    try:
        loaded = json.loads(body)
    except ValueError:
        raise HttpStatusError(
            http_error_text(response.status_code, body), response.status_code
        ) from None
    return loaded if isinstance(loaded, list) else [loaded]


def raise_for_error(message: dict[str, Any], status: int = 200) -> Any:
    """The result of a response message.

    Raises:
        MCPError: the message is an error response (``data`` kept; ``http_status`` attached).
    """
    if "error" in message:
        error = message["error"] or {}
        exc = MCPError(
            int(error.get("code", -32603)), str(error.get("message", "")), error.get("data")
        )
        exc.http_status = status  # type: ignore[attr-defined]
        raise exc
    return message.get("result")


class ModernHttp:
    """The 2026-07-28 era over HTTP: no state between requests."""

    era = "modern"

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        peer: Peer,
        *,
        version: str = MODERN,
        client_info: dict[str, Any],
        log_level: str | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.url = url
        self.peer = peer
        self.version = version
        self.client_info = client_info
        self.log_level = log_level
        self.extensions = extensions or {}
        self.param_headers: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}
        self._ids = itertools.count(1)

    def meta(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``_meta`` every modern request carries."""
        return request_meta(
            self.version,
            self.peer.capabilities(self.version),
            self.client_info,
            self.log_level,
            self.extensions,
            extra,
        )

    def headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        """The request's headers (`protocol.headers.request_headers`)."""
        return request_headers(self.version, method, params, self.param_headers)

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        """Send a request; return its result (notifications before it reach the peer).

        Raises:
            MCPError: the server answered with an error.
            TransportError: the answer was not MCP (status and body excerpt).
        """
        params = dict(params or {})
        params["_meta"] = self.meta(meta)
        try:
            return await self.post(method, params)
        except MCPError as exc:
            version = pick_version(
                (exc.data or {}).get("supported") if isinstance(exc.data, dict) else None,
                MODERN_VERSIONS,
            )
            if (
                exc.code != jsonrpc.UNSUPPORTED_VERSION
                or version is None
                or version == self.version
            ):
                raise
        self.version = version
        params["_meta"] = self.meta(meta)
        return await self.post(method, params)

    async def post(self, method: str, params: dict[str, Any]) -> Any:
        id_ = next(self._ids)
        body = jsonrpc.request(id_, method, params)
        async with (
            _naming_tls(self.url),
            self.client.stream(
                "POST", self.url, content=body, headers=self.headers(method, params)
            ) as response,
        ):
            return await read_answer(response, id_, self.peer, None)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        body = jsonrpc.notification(method, params)
        headers = {
            "content-type": "application/json",
            "accept": ACCEPT,
            "mcp-protocol-version": self.version,
        }
        response = await self.client.post(self.url, content=body, headers=headers)
        await response.aclose()

    @asynccontextmanager
    async def stream(
        self, method: str, params: dict[str, Any]
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """A long-lived request (``subscriptions/listen``): yields its messages as they come."""
        params = dict(params)
        params["_meta"] = self.meta()
        id_ = next(self._ids)
        body = jsonrpc.request(id_, method, params)
        async with self.client.stream(
            "POST", self.url, content=body, headers=self.headers(method, params)
        ) as response:
            if response.status_code != 200 or not response.headers.get(
                "content-type", ""
            ).startswith("text/event-stream"):
                data = await response.aread()
                for message in _messages_of(response, data):
                    raise_for_error(message, response.status_code)
                raise HttpStatusError(
                    http_error_text(response.status_code, data), response.status_code
                )
            yield _events(response)

    async def aclose(self) -> None:
        return None


async def _events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    parser = sse.Parser()
    async for chunk in response.aiter_bytes():
        for event in parser.feed(chunk):
            if event.data:
                yield json.loads(event.data)


async def read_answer(response: httpx.Response, id_: int | str, peer: Peer, on_request: Any) -> Any:
    """The result for request ``id_`` from a JSON or SSE response.

    ``on_request`` answers server-to-client requests met on the stream (legacy); None ignores them.
    """
    kind = response.headers.get("content-type", "")
    if not kind.startswith("text/event-stream"):
        data = await response.aread()
        if not data and 200 <= response.status_code < 300:
            raise HttpStatusError(http_error_text(response.status_code, data), response.status_code)
        for message in _messages_of(response, data):
            if message.get("id") == id_ or "error" in message:
                return raise_for_error(message, response.status_code)
        raise HttpStatusError(http_error_text(response.status_code, data), response.status_code)
    parser = sse.Parser()
    async for chunk in response.aiter_bytes():
        for event in parser.feed(chunk):
            if not event.data:
                continue
            message = json.loads(event.data)
            outcome = await _route(message, id_, peer, on_request)
            if outcome is not _PENDING:
                return outcome
    raise _Dropped(parser.last_event_id, parser)


_PENDING = object()


async def _route(
    message: dict[str, Any], id_: int | str | None, peer: Peer, on_request: Any
) -> Any:
    if "method" in message:
        if "id" in message:
            if on_request is not None:
                await on_request(message)
        else:
            await peer.notify(message["method"], message.get("params") or {})
        return _PENDING
    if id_ is not None and message.get("id") == id_:
        return raise_for_error(message)
    return _PENDING


class _Dropped(Exception):
    """An SSE stream ended before the response; resume from ``last_id`` if there is one."""

    def __init__(self, last_id: str | None, parser: sse.Parser) -> None:
        super().__init__("stream dropped")
        self.last_id = last_id
        self.retry_ms = parser.retry_ms


class _InFlight:
    """A request waiting for its response, which may come on any stream of the session."""

    __slots__ = ("message", "scope")

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.scope = trio.CancelScope()


class LegacyHttp:
    """A legacy session over HTTP."""

    era = "legacy"

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        peer: Peer,
        *,
        client_info: dict[str, Any],
        version: str = LATEST_LEGACY,
        open_get_stream: bool = True,
        max_resumes: int = 5,
    ) -> None:
        self.client = client
        self.url = url
        self.peer = peer
        self.client_info = client_info
        self.requested = version
        self.version = version
        self.session: str | None = None
        self.initialize_result: dict[str, Any] = {}
        self.open_get_stream = open_get_stream
        self.max_resumes = max_resumes
        self._ids = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self.param_headers: dict[str, Any] = {}
        self.inflight: dict[int | str, _InFlight] = {}

    # ---------------------------------------------------------------------------------- session

    def headers(self) -> dict[str, str]:
        out = {
            "accept": ACCEPT,
            "content-type": "application/json",
            "mcp-protocol-version": self.version,
        }
        if self.session is not None:
            out["mcp-session-id"] = self.session
        return out

    def _remember(self, response: httpx.Response) -> None:
        session = response.headers.get("mcp-session-id")
        if session:
            self.session = session

    async def start(self, nursery: trio.Nursery) -> dict[str, Any]:
        """Initialize, then open the GET stream in ``nursery``.

        Raises:
            TransportError: the server refused the handshake.
        """
        self._nursery = nursery
        result = await self._initialize()
        if self.open_get_stream:
            await nursery.start(self._get_stream)
        return result

    async def _initialize(self) -> dict[str, Any]:
        self.session = None
        self.version = self.requested
        params = {
            "protocolVersion": self.requested,
            "capabilities": self.peer.capabilities(self.requested),
            "clientInfo": self.client_info,
        }
        id_ = next(self._ids)
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        body = jsonrpc.request(id_, "initialize", params)
        async with (
            _naming_tls(self.url),
            self.client.stream("POST", self.url, content=body, headers=headers) as response,
        ):
            if response.status_code >= 400:
                data = await response.aread()
                raise HttpStatusError(
                    http_error_text(response.status_code, data), response.status_code
                )
            self._remember(response)
            result: dict[str, Any] = await read_answer(response, id_, self.peer, self._answer)
        self.version = result.get("protocolVersion", self.requested)
        self.peer.version = self.version
        self.initialize_result = result
        await self.notify("notifications/initialized")
        return result

    # --------------------------------------------------------------------------------- messages

    async def _answer(self, message: dict[str, Any]) -> None:
        """Answer a server-to-client request (by POST, as the transport requires)."""
        reply = await self.peer.reply_to(message)
        response = await self.client.post(self.url, content=reply, headers=self.headers())
        await response.aclose()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        response = await self.client.post(
            self.url, content=jsonrpc.notification(method, params), headers=self.headers()
        )
        self._remember(response)
        await response.aclose()

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        """Send a request in the session; on 404 re-initialize once and retry.

        Raises:
            MCPError: the server answered with an error.
            TransportError: the answer was not MCP.
        """
        params = dict(params or {})
        if meta:
            params["_meta"] = {**params.get("_meta", {}), **meta}
        try:
            return await self._request(method, params)
        except HttpStatusError as exc:
            if exc.status != 404:
                raise
        await self._initialize()
        return await self._request(method, params)

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        id_ = f"c{next(self._ids)}"
        body = jsonrpc.request(id_, method, params or None)
        slot = self.inflight[id_] = _InFlight()
        try:
            with slot.scope:
                try:
                    async with self.client.stream(
                        "POST", self.url, content=body, headers=self.headers()
                    ) as response:
                        if response.status_code == 404:
                            raise HttpStatusError(http_error_text(404, await response.aread()), 404)
                        self._remember(response)
                        return await read_answer(response, id_, self.peer, self._answer)
                except _Dropped as dropped:
                    return await self._resume(id_, dropped)
            if slot.message is None:
                raise TransportError(f"no response to {method}")
            return raise_for_error(slot.message)
        except trio.Cancelled:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await self.notify(
                    "notifications/cancelled",
                    {"requestId": id_, "reason": "cancelled by the client"},
                )
            raise
        finally:
            del self.inflight[id_]

    async def _deliver(self, message: dict[str, Any]) -> None:
        """Route a message from a stream not tied to one request: a response (servers may
        send it on a resumed or standalone stream) ends the request waiting for it."""
        if "method" in message:
            await _route(message, None, self.peer, self._answer)
            return
        slot = self.inflight.get(message.get("id"))  # type: ignore[arg-type]
        if slot is not None and slot.message is None:
            slot.message = message
            slot.scope.cancel()

    async def _resume(self, id_: str, dropped: _Dropped) -> Any:
        """Resume a dropped stream with GET + ``Last-Event-ID`` until the response arrives."""
        last, retry = dropped.last_id, dropped.retry_ms
        for _ in range(self.max_resumes):
            if last is None:
                break
            await trio.sleep((retry or 1000) / 1000)
            headers = {**self.headers(), "accept": "text/event-stream", "last-event-id": last}
            try:
                async with self.client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200:
                        break
                    return await read_answer(response, id_, self.peer, self._answer)
            except _Dropped as again:
                last = again.last_id or last
                retry = again.retry_ms or retry
        raise TransportError("the response stream dropped and could not be resumed")

    async def batch(self, calls: Sequence[tuple[str, dict[str, Any] | None]]) -> list[Any]:
        """Send requests as one JSON-RPC batch (2025-03-26 only); results or `MCPError`s, in order.

        Raises:
            TransportError: batching is not available in the negotiated revision.
        """
        if not supports_batching(self.version):
            raise TransportError(f"batches need 2025-03-26; this session speaks {self.version}")
        ids = [f"c{next(self._ids)}" for _ in calls]
        body = (
            b"["
            + b",".join(jsonrpc.request(i, m, p) for i, (m, p) in zip(ids, calls, strict=True))
            + b"]"
        )
        results: dict[Any, Any] = {}
        async with self.client.stream(
            "POST", self.url, content=body, headers=self.headers()
        ) as response:
            self._remember(response)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                async for message in _events(response):
                    if "method" in message:
                        await _route(message, None, self.peer, self._answer)
                    else:
                        results[message.get("id")] = message
            else:
                data = await response.aread()
                for message in _messages_of(response, data):
                    results[message.get("id")] = message
        out: list[Any] = []
        for i in ids:
            message = results.get(i, {"error": {"code": -32603, "message": "no response"}})
            try:
                out.append(raise_for_error(message))
            except MCPError as exc:
                out.append(exc)
        return out

    async def _get_stream(
        self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The standalone GET stream: notifications and requests not tied to a call; resumed
        with ``Last-Event-ID`` after a drop, waiting ``retry`` first. Reports started once the
        first attempt has its answer, so that nothing the server sends after connect is missed."""
        last: str | None = None
        retry_ms = 1000
        failures = 0
        started = False
        while failures < 5:
            headers = {**self.headers(), "accept": "text/event-stream"}
            if last:
                headers["last-event-id"] = last
            try:
                async with self.client.stream(
                    "GET", self.url, headers=headers, timeout=httpx.Timeout(None, connect=10)
                ) as response:
                    if not started:
                        started = True
                        task_status.started()
                    if response.status_code in (404, 405):
                        return
                    if response.status_code != 200:
                        failures += 1
                    else:
                        failures = 0
                        parser = sse.Parser()
                        async for chunk in response.aiter_bytes():
                            for event in parser.feed(chunk):
                                if event.id is not None:
                                    last = event.id
                                if event.retry is not None:
                                    retry_ms = event.retry
                                if event.data:
                                    await self._deliver(json.loads(event.data))
            except httpx.TransportError:
                failures += 1
                if not started:
                    started = True
                    task_status.started()
            await trio.sleep(retry_ms / 1000)

    async def aclose(self) -> None:
        if self.session is None:
            return
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            try:
                response = await self.client.delete(self.url, headers=self.headers())
                await response.aclose()
            except httpx.TransportError:
                pass
