"""`connect()`: a `Client` for any MCP server, over HTTP or stdio, in the era it speaks.

Era detection (``era="auto"``) follows `shared/seeds/002_*`, driving the state machine
`protocol.discovery.Negotiation` (the load tester drives the same one): probe with
``server/discover``; fall back to ``initialize`` on HTTP 400/404/405 or JSON-RPC
-32020/-32021/-32022/-32601 (on -32022 first retry once with the highest common version, and
when the server lists only legacy revisions, ``initialize`` asks for the highest of them both
sides speak); over stdio on those codes only, or when the probe gets no answer within
``min(5 s, timeout)``; 401/403/5xx (and over stdio any other error)
raise. The verdict is cached per endpoint (URL or command), a modern one with its
``server/discover`` result for that result's ``ttlMs`` (when its ``cacheScope`` is public). A
modern connection always has its ``server/discover`` result (`Client.discover_result`, the
``on_discover`` hook): the cached one while fresh, else the probe's, else (``era="modern"``)
a ``server/discover`` request. A cached modern verdict is trusted as long as its
``server/discover`` result is fresh (then probed again, in the cached revision); a cached legacy
verdict whose ``initialize`` fails is forgotten and the endpoint probed again (over HTTP and
stdio alike).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import httpx2
import msgspec
import trio

from .. import jsonrpc
from .._nursery import background_nursery
from ..errors import MCPError, TransportError
from ..protocol import sse
from ..protocol.discovery import ERA_CACHE, EraCache, Negotiation, pick_version
from ..protocol.extensions import check_settings
from ..protocol.retries import DEFAULT_RETRY, RetryPolicy
from ..types import TASKS_EXTENSION, DiscoverResult
from ..versions import LATEST_LEGACY, LEGACY, MODERN, at_least
from .client import Client
from .http import MAX_MESSAGE_BYTES, ModernHttp, read_body, unreachable
from .legacy import LegacyHttp
from .peer import Handler, Peer
from .stdio import StdioPipe, StdioSession, probe
from .transport import ModernTransport, Transport

EraChoice = Literal["auto", "modern", "legacy"]


def _is_url(target: Any) -> bool:
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def _cache_key(target: str | Sequence[str]) -> str:
    return target if isinstance(target, str) else " ".join(target)


@asynccontextmanager
async def connect(
    target: str | Sequence[str],
    era: EraChoice = "auto",
    *,
    timeout: float = 30.0,
    headers: dict[str, str] | None = None,
    client_info: dict[str, Any] | None = None,
    legacy_version: str = LATEST_LEGACY,
    on_elicit: Handler | None = None,
    on_sample: Handler | None = None,
    on_roots: Handler | None = None,
    on_progress: Handler | None = None,
    on_log: Handler | None = None,
    on_notification: Handler | None = None,
    on_discover: Callable[[DiscoverResult], bool] | None = None,
    log_level: str | None = None,
    open_get_stream: bool = True,
    era_cache: EraCache = ERA_CACHE,
    http_client: httpx2.AsyncClient | None = None,
    auth: httpx2.Auth | None = None,
    sampling_tools: bool = False,
    elicitation_url: bool = False,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    extensions: Mapping[str, Mapping[str, Any] | None] | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> AsyncIterator[Client]:
    """Connect to an MCP server: a URL (Streamable HTTP) or a command (stdio).

    Args:
        target: ``http(s)://…`` or a command line (string or argv list) to spawn.
        era: ``"auto"`` (probe, cached per endpoint), ``"modern"`` or ``"legacy"``.
        legacy_version: the legacy revision ``initialize`` asks for (one of
            `mcpfast.versions.LEGACY`; lower when the probe's -32022 lists only older ones).
        on_elicit / on_sample / on_roots: answer the server's requests (both eras).
        on_progress / on_log / on_notification: receive notifications.
        on_discover: called with the ``server/discover`` result of every modern connection
            (fresh, cached or forced); may return False to reject the server.
        http_client: the HTTP client to use (not closed here); by default one is made.
        auth: the ``httpx2.Auth`` of the HTTP client made here: an
            `mcpfast.client.oauth.OAuth` for a protected server (it logs in on the first 401),
            or any other (``httpx2.BasicAuth``, one of your own). With ``http_client``, give
            the auth to that client instead: both raise ValueError.
        sampling_tools: ``on_sample`` handles tool use: declare ``sampling.tools``.
        elicitation_url: ``on_elicit`` handles URL-mode elicitation: declare
            ``elicitation.url`` (otherwise only form mode is declared, and a URL-mode request
            is answered with -32602).
        max_message_bytes: the largest message read from the server: a JSON response body,
            one SSE event, one stdio line (default 16 MiB). Over it, the request raises
            `TransportError` naming the limit (over stdio the connection ends: every waiting
            and later request raises it; on the legacy GET stream the stream is given up,
            with a warning).
        extensions: the extensions (SEP-2133) this client supports, by identifier, with their
            settings (None for ``{}``), declared in every request's client capabilities
            (modern) or in ``initialize`` (legacy); e.g. ``{"io.modelcontextprotocol/ui":
            mcpfast.client.APPS}`` to see MCP Apps (`Client.tool_app`). The server's are
            `Client.server_extensions`. The tasks extension is not among them: the task calls
            declare it per request (`Client.start_task`).
        retry: how a refused request (429, 503 with ``Retry-After``, -32023) safe to repeat
            is sent again (`mcpfast.protocol.retries.RetryPolicy`: 3 times, 30 s of waiting
            at most); other requests, and the last refusal, raise `RateLimited`.

    Raises:
        TransportError: the server could not be reached or refused us (``HTTP <code>: <body>``),
            or negotiated a revision this client does not speak.
        ValueError: ``legacy_version`` is not a legacy revision, ``max_message_bytes`` is
            not positive, both ``http_client`` and ``auth`` are given, or an extension
            identifier is invalid (or the tasks extension) or its settings not an object.
    """
    if http_client is not None and auth is not None:
        raise ValueError(
            "give auth= to the http_client (httpx2.AsyncClient(auth=...)) or let connect() "
            "make the client; not both"
        )
    if legacy_version not in LEGACY:
        raise ValueError(f"legacy_version must be one of {', '.join(LEGACY)}")
    if max_message_bytes <= 0:
        raise ValueError("max_message_bytes must be positive")
    info = client_info or {"name": "mcpfast", "version": "0.1.0"}
    clients: list[Client] = []
    peer = _peer(clients, on_elicit, on_sample, on_roots, on_progress, on_log, on_notification)
    peer.sampling_tools = sampling_tools
    peer.elicitation_url = elicitation_url
    peer.extensions = _extensions(extensions)

    def accept(connection: Transport, discover: DiscoverResult | None) -> Client:
        """The client over a connection, once the discover hook (if any) accepted the server."""
        if discover is not None and on_discover is not None and not on_discover(discover):
            raise TransportError("the discover hook rejected the server")
        client = Client(connection, peer, timeout=timeout, retry=retry)
        client.discover_result = discover
        clients.append(client)
        return client

    settings = _Settings(
        era, info, log_level, legacy_version, era_cache, timeout, max_message_bytes
    )
    async with background_nursery() as nursery:
        if _is_url(target):
            assert isinstance(target, str)
            owned = http_client is None
            http = http_client or httpx2.AsyncClient(
                timeout=httpx2.Timeout(timeout), headers=headers, auth=auth
            )
            try:
                connection, discover = await _connect_http(
                    http, target, peer, settings, open_get_stream, nursery
                )
                try:
                    yield accept(connection, discover)
                finally:
                    await connection.aclose()
            finally:
                if owned:
                    with trio.CancelScope(shield=True):
                        await http.aclose()
        else:
            pipe = StdioPipe(target, peer, max_line=max_message_bytes)
            await pipe.start(nursery)
            try:
                session, discover = await _connect_stdio(pipe, _cache_key(target), settings)
                yield accept(session, discover)
            finally:
                await pipe.aclose()


def _extensions(
    extensions: Mapping[str, Mapping[str, Any] | None] | None,
) -> dict[str, dict[str, Any]]:
    """The extensions a client declares, checked.

    Raises:
        ValueError: an invalid identifier or settings, or the tasks extension.
    """
    out = {}
    for identifier, settings in (extensions or {}).items():
        if identifier == TASKS_EXTENSION:
            raise ValueError(
                "the tasks extension is declared per request by the task calls "
                "(Client.start_task), not for the whole connection"
            )
        out[identifier] = check_settings(identifier, settings)
    return out


def _peer(
    clients: list[Client],
    on_elicit: Handler | None,
    on_sample: Handler | None,
    on_roots: Handler | None,
    on_progress: Handler | None,
    on_log: Handler | None,
    on_notification: Handler | None,
) -> Peer:
    """The application's handlers; a notification also empties the cached results of
    ``clients`` it makes stale (`Client._heard`)."""

    async def notification(method: str, params: dict[str, Any]) -> None:
        for client in clients:
            client._heard(method, params)
        if on_notification is not None:
            out = on_notification(method, params)
            if hasattr(out, "__await__"):
                await out

    return Peer(
        on_elicit=on_elicit,
        on_sample=on_sample,
        on_roots=on_roots,
        on_progress=on_progress,
        on_log=on_log,
        on_notification=notification,
    )


@dataclass(frozen=True, slots=True)
class _Settings:
    """What `connect` was asked for, as the negotiation needs it."""

    era: EraChoice
    info: dict[str, Any]
    log_level: str | None
    legacy_version: str
    cache: EraCache
    timeout: float
    max_message_bytes: int = MAX_MESSAGE_BYTES


# ---------------------------------------------------------------------------------------- HTTP


async def _probe_http(
    http: httpx2.AsyncClient, url: str, modern: ModernHttp
) -> tuple[int, bytes, Any]:
    """Send ``server/discover`` in ``modern.version``: the answer's status, body and decoded
    message (None: not JSON-RPC). A body over the connection's ``max_message_bytes`` raises
    `TransportError`."""
    params = {"_meta": modern.meta()}
    body = jsonrpc.request(0, "server/discover", params)
    try:
        async with http.stream(
            "POST", url, content=body, headers=modern.headers("server/discover", params)
        ) as response:
            raw = await read_body(response, modern.max_message_bytes)
            status = response.status_code
            kind = response.headers.get("content-type", "")
    except httpx2.TransportError as exc:
        raise await unreachable(url, exc) from exc
    message: Any = None
    try:
        if kind.startswith("text/event-stream"):
            found = sse.messages(raw, modern.max_message_bytes)
            message = found[-1] if found else None
        elif raw:
            message = msgspec.json.decode(raw)
    except ValueError:  # not JSON: no answer (judged by the status)
        message = None
    return status, raw, message


def _legacy_request(settings: _Settings, hint: str | None) -> str:
    """The revision ``initialize`` asks for: the one asked for, or ``hint`` (a cached
    negotiated one, or what a -32022 listed) when that is lower and spoken."""
    if hint in LEGACY and not at_least(hint, settings.legacy_version):
        return hint
    return settings.legacy_version


def _discovered(negotiation: Negotiation) -> DiscoverResult:
    """The ``server/discover`` result of a negotiation that found the modern era."""
    return msgspec.convert(negotiation.answer["result"], DiscoverResult)


def _keep(settings: _Settings, key: str, version: str, discover: DiscoverResult) -> None:
    """Cache a modern verdict, with its ``server/discover`` result when that is public."""
    ttl = discover.ttlMs if discover.cacheScope == "public" else 0
    settings.cache.put(key, "modern", version, discover, max(ttl, 0))


async def _discover(connection: ModernTransport, settings: _Settings, key: str) -> DiscoverResult:
    """A forced modern connection's ``server/discover`` result: the cached one while fresh,
    else the server's answer.

    Raises:
        MCPError, TransportError: the server did not answer it (as any request).
    """
    cached = settings.cache.discovered(key)
    if isinstance(cached, DiscoverResult):
        return cached
    with trio.fail_after(settings.timeout):
        result = await connection.request("server/discover", {})
    return msgspec.convert(result, DiscoverResult)


async def _connect_http(
    http: httpx2.AsyncClient,
    url: str,
    peer: Peer,
    settings: _Settings,
    open_get_stream: bool,
    nursery: trio.Nursery,
) -> tuple[Transport, DiscoverResult | None]:
    async def start_legacy(hint: str | None = None) -> tuple[LegacyHttp, None]:
        connection = LegacyHttp(
            http,
            url,
            peer,
            client_info=settings.info,
            version=_legacy_request(settings, hint),
            open_get_stream=open_get_stream,
            max_message_bytes=settings.max_message_bytes,
        )
        with trio.fail_after(settings.timeout):
            await connection.start(nursery)
        if settings.log_level is not None:
            await connection.request("logging/setLevel", {"level": settings.log_level})
        return connection, None

    if settings.era == "legacy":
        return await start_legacy()
    modern = ModernHttp(
        http,
        url,
        peer,
        client_info=settings.info,
        log_level=settings.log_level,
        max_message_bytes=settings.max_message_bytes,
    )
    if settings.era == "modern":
        return modern, await _discover(modern, settings, url)
    first = MODERN
    cached = settings.cache.get(url)
    if cached is not None:
        if cached[0] == "modern":
            discovered = settings.cache.discovered(url)
            if isinstance(discovered, DiscoverResult):
                modern.version = cached[1]
                return modern, discovered
            first = cached[1]  # probe again (for the discover result) in the cached revision
        else:
            try:
                return await start_legacy(cached[1])
            except (TransportError, MCPError):
                settings.cache.forget(url)

    negotiation = Negotiation(first, settings.legacy_version)
    while negotiation.probe is not None:
        modern.version = negotiation.probe
        with trio.fail_after(settings.timeout):
            negotiation.http(*await _probe_http(http, url, modern))
    if negotiation.era == "modern":
        discover = _discovered(negotiation)
        _keep(settings, url, negotiation.version, discover)
        return modern, discover
    connection, _ = await start_legacy(negotiation.version)
    settings.cache.put(url, "legacy", connection.version)
    return connection, None


# --------------------------------------------------------------------------------------- stdio


async def _connect_stdio(
    pipe: StdioPipe, key: str, settings: _Settings
) -> tuple[StdioSession, DiscoverResult | None]:
    async def legacy(hint: str | None = None) -> StdioSession:
        asked = _legacy_request(settings, hint)
        session = StdioSession(pipe, "legacy", asked, settings.info)
        with trio.fail_after(settings.timeout):
            await session.initialize(asked)
        if settings.log_level is not None:
            await session.request("logging/setLevel", {"level": settings.log_level})
        if settings.era == "auto":
            settings.cache.put(key, "legacy", session.version)
        return session

    era, cache = settings.era, settings.cache
    cached = cache.get(key) if era == "auto" else None
    if era == "legacy":
        return await legacy(), None
    if cached is not None and cached[0] == "legacy":
        try:
            return await legacy(cached[1]), None
        except (TransportError, MCPError):
            cache.forget(key)  # the cached verdict failed: probe again, as over HTTP
            cached = None
    if era == "modern":
        session = StdioSession(pipe, "modern", MODERN, settings.info, settings.log_level)
        return session, await _discover(session, settings, key)
    first = MODERN
    if cached is not None:  # modern
        discovered = cache.discovered(key)
        if isinstance(discovered, DiscoverResult):
            session = StdioSession(pipe, "modern", cached[1], settings.info, settings.log_level)
            return session, discovered
        first = cached[1]

    negotiation = Negotiation(first, settings.legacy_version)
    while negotiation.probe is not None:
        # None: no answer in time, a legacy server that ignores the probe
        wait = min(5.0, settings.timeout)
        negotiation.stdio(await probe(pipe, settings.info, negotiation.probe, wait))
    if negotiation.era == "legacy":
        try:
            return await legacy(negotiation.version), None
        except MCPError as exc:
            # A server slower than the probe's wait answered the probe late and serves the
            # modern era on this pipe now: its -32022 lists it (seed 002: retry once, modern).
            late = _modern_in_refusal(exc) if negotiation.answer is None else None
            if late is None:
                raise
        session = StdioSession(pipe, "modern", late, settings.info, settings.log_level)
        return session, await _discover(session, settings, key)
    version, discover = negotiation.version, _discovered(negotiation)
    _keep(settings, key, version, discover)
    return StdioSession(pipe, "modern", version, settings.info, settings.log_level), discover


def _modern_in_refusal(error: MCPError) -> str | None:
    """The modern revision a -32022 refusal of ``initialize`` says the server speaks, if any."""
    data = error.data if isinstance(error.data, dict) else {}
    if error.code != jsonrpc.UNSUPPORTED_VERSION:
        return None
    return pick_version(data.get("supported"), (MODERN,))
