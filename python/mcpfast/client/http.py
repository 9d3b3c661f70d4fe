"""Streamable HTTP for the client: reading answers (JSON or SSE) in both eras, naming TLS /
plain-HTTP mixups, and `ModernHttp`, which sends each request as one stateless POST with
``_meta`` and the mirrored headers; closing the stream cancels. The legacy session is
`mcpfast.client.legacy.LegacyHttp`.
"""

from __future__ import annotations

import json
import random
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx2
import trio

from .. import jsonrpc
from .._remote import FetchError, TooLarge, read_capped
from ..errors import TransportError
from ..protocol import sse
from ..protocol.backoff import retry_after, retryable
from ..protocol.correlation import Correlator, RequestId, kind_of, result_of
from ..protocol.discovery import http_error_text
from ..protocol.headers import ACCEPT, ParamHeaders, request_headers
from ..protocol.initialize import Initialized
from ..protocol.retries import refusal
from ..protocol.session import ResumePoint
from ..telemetry import propagation
from ..telemetry.tracing import identify
from ..versions import MODERN
from .listening import Events, Refused, lasting
from .peer import Identity, Peer


class HttpStatusError(TransportError):
    """A non-MCP HTTP answer, with its status and body excerpt."""


# --------------------------------------------------------------------------- message size cap

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The default of ``connect(max_message_bytes=...)``: the largest JSON body, SSE event or stdio
line the client reads from a server (16 MiB)."""


def too_large(limit: int, what: str) -> TransportError:
    """The error for a server message over ``limit`` bytes (``what``: where it came)."""
    return TransportError(
        f"the server sent {what} over max_message_bytes ({limit:,} bytes); "
        "connect(max_message_bytes=...) raises the limit"
    )


async def read_body(response: httpx2.Response, limit: int) -> bytes:
    """The whole body of a (non-SSE) response, read as it comes, at most ``limit`` bytes
    (decoded, by `mcpfast._remote.read_capped`: a compression bomb stops at the cap).

    Raises:
        TransportError: the body (or its ``Content-Length``) is over ``limit``, or its
            encoding is broken.
    """
    try:
        return await read_capped(response, limit)
    except TooLarge:
        raise too_large(limit, "a response body") from None
    except FetchError as exc:
        raise TransportError(str(exc)) from None
    finally:
        await response.aclose()


async def sse_messages(
    response: httpx2.Response, decoder: sse.Decoder
) -> AsyncIterator[list[dict[str, Any]]]:
    """The messages each chunk of an SSE response completes (``decoder`` fed with it).

    Raises:
        TransportError: an event grew over the decoder's ``limit``.
        ValueError: an event's data is not JSON.
    """
    async for chunk in response.aiter_bytes():
        try:
            messages = decoder.feed(chunk)
        except sse.TooLarge:
            raise too_large(decoder.limit, "an SSE event") from None
        yield messages


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


async def tls_mismatch(url: str, exc: httpx2.TransportError) -> str | None:
    """Why a request to ``url`` failed with ``exc`` when the cause is TLS spoken to a plain-HTTP
    server (`PLAIN_HTTP`) or plain HTTP to a TLS one (`SPEAKS_TLS`); None for anything else.

    The second is told by a TLS handshake with the server (at most 2 s, nothing sent after it),
    tried only after a plain request got no HTTP answer."""
    if url[:6].lower() == "https:":
        for link in _links(exc):
            if isinstance(link, ssl.SSLError) and link.reason in _PLAIN_HTTP_REASONS:
                return PLAIN_HTTP
        return None
    if isinstance(exc, httpx2.RemoteProtocolError | httpx2.ReadError | httpx2.WriteError):
        parsed = httpx2.URL(url)
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


async def unreachable(url: str, exc: httpx2.TransportError) -> TransportError:
    """The `TransportError` for a request to ``url`` that failed with ``exc`` before any
    answer: the TLS mixup when `tls_mismatch` finds one, else httpx2's words."""
    cause = await tls_mismatch(url, exc) or str(exc) or type(exc).__name__
    return TransportError(f"cannot reach {url}: {cause}")


@asynccontextmanager
async def naming_tls(url: str) -> AsyncIterator[None]:
    """Turn an httpx2 failure caused by a TLS / plain-HTTP mixup into a `TransportError` that
    says so; other failures pass unchanged."""
    try:
        yield
    except httpx2.TransportError as exc:
        cause = await tls_mismatch(url, exc)
        if cause is None:
            raise
        raise TransportError(f"cannot reach {url}: {cause}") from exc


def messages_of(response: httpx2.Response, body: bytes) -> list[dict[str, Any]]:
    try:
        loaded = json.loads(body)
    except ValueError:
        status = response.status_code
        raise HttpStatusError(http_error_text(status, body), status) from None
    return loaded if isinstance(loaded, list) else [loaded]


class ModernHttp(Identity):
    """The 2026-07-28 era over HTTP: no state between requests."""

    era = "modern"
    initialized: Initialized | None = None
    """Always None: the modern era has no handshake."""

    def __init__(
        self,
        client: httpx2.AsyncClient,
        url: str,
        peer: Peer,
        *,
        version: str = MODERN,
        client_info: dict[str, Any],
        log_level: str | None = None,
        extensions: dict[str, Any] | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.client = client
        self.url = url
        self.peer = peer
        self.version = version
        self.client_info = client_info
        self.log_level = log_level
        self.extensions = extensions or {}
        self.max_message_bytes = max_message_bytes
        self.param_headers: dict[str, ParamHeaders] = {}
        self._ids: Correlator[None] = Correlator()
        self.random = random.random
        """The jitter of the waits before a stream is opened again (in [0, 1))."""

    def headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        """The request's headers (`protocol.headers.request_headers`), and the trace context
        of its ``_meta`` if any."""
        headers = request_headers(self.version, method, params, self.param_headers)
        traced = propagation.headers_of(params)
        if traced:
            headers.update(traced)
        return headers

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> Any:
        """Send a request; return its result (notifications before it reach the peer).
        ``extensions`` are declared for this request only.

        A -32022 (unsupported protocol version) is raised as it came: seed 002 retries a
        request once in a version the server supports, but this client speaks one modern
        revision (`mcpfast.versions.MODERN_VERSIONS`), so there is no other to retry in.

        Raises:
            MCPError: the server answered with an error.
            TransportError: the answer was not MCP (status and body excerpt), or its SSE
                response broke off twice (`post`).
        """
        params = dict(params or {})
        params["_meta"] = self.meta(meta, extensions)
        return await self.post(method, params)

    async def post(self, method: str, params: dict[str, Any]) -> Any:
        """POST a request and read its answer. A response stream that breaks off before the
        answer lost the request (2026-07-28 has no resumption): it is re-issued once, with a
        new id, as the revision requires.

        Raises:
            TransportError: the re-issued request's stream broke off too.
        """
        for attempt in range(2):
            try:
                return await self._post_once(method, params)
            except Dropped:
                if attempt:
                    raise TransportError(
                        f"the response stream of {method} broke off before its answer, twice "
                        "(the request was re-issued once)"
                    ) from None
        raise AssertionError("unreachable")

    async def _post_once(self, method: str, params: dict[str, Any]) -> Any:
        """One POST of a request under a fresh id.

        Raises:
            Dropped: its SSE response ended, or its connection broke, before the answer.
        """
        id_ = self._ids.next_id()
        identify(id_)
        body = jsonrpc.request(id_, method, params)
        async with (
            naming_tls(self.url),
            self.client.stream(
                "POST", self.url, content=body, headers=self.headers(method, params)
            ) as response,
        ):
            try:
                return await read_answer(
                    response, id_, self.peer, None, limit=self.max_message_bytes
                )
            except httpx2.TimeoutException:
                raise
            except httpx2.TransportError as exc:  # the connection broke while reading
                raise Dropped() from exc

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
        self, method: str, params: dict[str, Any], *, extensions: dict[str, Any] | None = None
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """A long-lived request (``subscriptions/listen``): yields its messages as they come,
        from each new request for it when one ends or breaks (`listening.lasting`: only the
        first is an error at entry)."""
        params = dict(params)
        params["_meta"] = self.meta(None, extensions)
        headers = self.headers(method, params)

        def open_() -> AbstractAsyncContextManager[Events]:
            id_ = self._ids.next_id()
            identify(id_)
            body = jsonrpc.request(id_, method, params)
            return opened(self.client, self.url, body, headers, self.max_message_bytes)

        async with lasting(open_, self.random) as events:
            yield events

    async def aclose(self) -> None:
        return None


@asynccontextmanager
async def opened(
    client: httpx2.AsyncClient, url: str, body: bytes, headers: dict[str, str], limit: int
) -> AsyncIterator[Events]:
    """One POST of a long-lived request: its messages as they come (`events_of`), with no
    read timeout.

    Raises:
        Refused: a 5xx, 408, 425 or 429 answer (its ``Retry-After`` read).
        MCPError: any other answer that is a JSON-RPC error.
        HttpStatusError: any other answer that is not an event stream.
    """
    async with client.stream(
        "POST", url, content=body, headers=headers, timeout=httpx2.Timeout(None, connect=10)
    ) as response:
        status = response.status_code
        if status != 200 or not response.headers.get("content-type", "").startswith(
            "text/event-stream"
        ):
            data = await read_body(response, limit)
            text = http_error_text(status, data)
            if retryable(status):
                wait = retry_after(response.headers.get("retry-after"), time.time())
                raise Refused(text, status, wait or 0.0)
            for message in messages_of(response, data):
                result_of(message)
            raise HttpStatusError(text, status)
        yield events_of(response, limit)


async def events_of(
    response: httpx2.Response, limit: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[dict[str, Any]]:
    """The messages of an SSE response as they come; it ends when the stream does.

    Raises:
        TransportError: the connection broke off mid-stream, or an event is over ``limit``
            bytes.
    """
    try:
        async for messages in sse_messages(response, sse.Decoder(limit)):
            for message in messages:
                yield message
    except httpx2.TimeoutException:
        raise
    except httpx2.TransportError as exc:
        raise TransportError(f"the event stream broke off: {exc or type(exc).__name__}") from exc


async def read_answer(
    response: httpx2.Response,
    id_: RequestId,
    peer: Peer,
    on_request: Any,
    resume: ResumePoint | None = None,
    *,
    limit: int = MAX_MESSAGE_BYTES,
) -> Any:
    """The result for request ``id_`` from a JSON or SSE response.

    ``on_request`` answers server-to-client requests met on the stream (legacy); None ignores them.
    ``resume`` follows the stream's event ids and ``retry``. ``limit`` caps a JSON body and
    each SSE event (`read_body`, `sse_messages`).

    Raises:
        RateLimited: the server refused it for now (`protocol.retries.refusal`).
        MCPError: the answer is an error response.
        HttpStatusError: the answer is not MCP, or a 401 with a challenge (unauthenticated).
        TransportError: the body or an event is over ``limit`` bytes.
        Dropped: an SSE stream ended before the answer.
    """
    kind = response.headers.get("content-type", "")
    if not kind.startswith("text/event-stream"):
        data = await read_body(response, limit)
        status = response.status_code
        refused = refusal(status, response.headers.get("retry-after"), data, time.time())
        if refused is not None:  # 429, or 503 with Retry-After: not done (`protocol.retries`)
            raise refused
        if status == 401 and "www-authenticate" in response.headers:
            # not authenticated (what OAuth could not get past), whatever JSON-RPC error the
            # body holds (a 403 for a scope stays the request's error: it names the request)
            raise HttpStatusError(http_error_text(status, data), status)
        if not data and 200 <= status < 300:
            raise HttpStatusError(http_error_text(status, data), status)
        for message in messages_of(response, data):
            if message.get("id") == id_ or "error" in message:
                return result_of(message)
        raise HttpStatusError(http_error_text(response.status_code, data), response.status_code)
    decoder = sse.Decoder(limit)
    async for messages in sse_messages(response, decoder):
        if resume is not None:
            resume.follow(decoder.parser)
        for message in messages:
            outcome = await route(message, id_, peer, on_request)
            if outcome is not _PENDING:
                return outcome
    raise Dropped()


_PENDING = object()


class Dropped(Exception):
    """An SSE stream ended before the response (the caller may resume it)."""


async def route(message: Any, id_: RequestId | None, peer: Peer, on_request: Any) -> Any:
    """Hand a message read from a stream to whom it is for: a server request to ``on_request``
    (None ignores it), a notification to the peer; the result when it answers ``id_``.

    Raises:
        MCPError: it is the error answer to ``id_``.
    """
    kind = kind_of(message)
    if kind == "request":
        if on_request is not None:
            await on_request(message)
    elif kind == "notification":
        await peer.notify(message["method"], message.get("params") or {})
    elif kind == "response" and id_ is not None and message.get("id") == id_:
        return result_of(message)
    return _PENDING
