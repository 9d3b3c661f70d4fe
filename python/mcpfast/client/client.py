"""`connect()` and `Client`: typed MCP calls against any server, in either era, over HTTP or stdio.

Era detection (``era="auto"``) follows `shared/seeds/002_*`: probe with ``server/discover``; fall
back to ``initialize`` on HTTP 400/404/405 or JSON-RPC -32020/-32021/-32022/-32601 (on -32022 first
retry once with the highest common version); 401/403/5xx raise. The verdict is cached per endpoint;
a cached verdict that turns out wrong is re-probed once.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx
import msgspec
import trio

from .. import jsonrpc
from .._nursery import background_nursery
from ..errors import MCPError, TransportError
from ..protocol import sse
from ..protocol.capabilities import unadvertised
from ..protocol.discovery import ERA_CACHE, EraCache, Verdict, judge_http, judge_stdio
from ..protocol.headers import ACCEPT, header_params
from ..protocol.methods import CHANGES
from ..types import (
    TASKS_EXTENSION,
    Completion,
    DiscoverResult,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
    ToolResult,
)
from ..versions import LATEST_LEGACY, MODERN
from .http import LegacyHttp, ModernHttp, unreachable
from .peer import Handler, Peer
from .stdio import StdioPipe, StdioSession, probe

EraChoice = Literal["auto", "modern", "legacy"]


class Client:
    """A connected client. Create it with `connect`.

    Attributes:
        era: ``"modern"`` or ``"legacy"``.
        protocol_version: the revision in use.
        discover_result: the ``server/discover`` result (modern era), else None.
        server_info: ``name``/``version`` of the server.
        dropped_tools: tools left out of `list_tools` for an invalid ``x-mcp-header``, with why.
    """

    def __init__(self, connection: Any, peer: Peer, *, timeout: float) -> None:
        self.connection = connection
        self.peer = peer
        self.timeout = timeout
        self.discover_result: DiscoverResult | None = None
        self.dropped_tools: dict[str, str] = {}
        self._cache: dict[tuple[str, str], tuple[float, Any]] = {}
        self._tokens = 0

    # ------------------------------------------------------------------------------- identity

    @property
    def era(self) -> str:
        return str(self.connection.era)

    @property
    def protocol_version(self) -> str:
        return str(self.connection.version)

    @property
    def server_info(self) -> dict[str, Any]:
        if self.discover_result is not None:
            return self.discover_result.server_info
        info = getattr(self.connection, "initialize_result", {}).get("serverInfo")
        return info if isinstance(info, dict) else {}

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self._advertised() or {}

    def _advertised(self) -> dict[str, Any] | None:
        """What the server advertised (``server/discover`` or ``initialize``); None if unknown."""
        if self.discover_result is not None:
            return self.discover_result.capabilities
        caps = getattr(self.connection, "initialize_result", {}).get("capabilities")
        return caps if isinstance(caps, dict) else None

    @property
    def instructions(self) -> str | None:
        if self.discover_result is not None:
            return self.discover_result.instructions
        value = getattr(self.connection, "initialize_result", {}).get("instructions")
        return value if isinstance(value, str) else None

    # ------------------------------------------------------------------------------- requests

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        """Any request; in the modern era ``input_required`` results are answered by the
        registered handlers and the request is retried with the exact ``requestState``.

        Raises:
            MCPError: the server answered with an error, or -32601 (nothing sent) when the
                server did not advertise the capability the method needs.
            TransportError: the server's answer was not MCP.
        """
        advertised = self._advertised()
        missing = unadvertised(method, advertised) if advertised is not None else None
        if missing is not None:
            raise MCPError(
                jsonrpc.METHOD_NOT_FOUND,
                f"The server does not advertise {missing}: {method} was not sent",
            )
        params = dict(params or {})
        with trio.fail_after(self.timeout):
            for _ in range(16):
                result = await self.connection.request(method, params, meta=meta)
                if not isinstance(result, dict) or result.get("resultType") != "input_required":
                    return result
                params = await self._answer_input(params, result)
        raise MCPError(jsonrpc.INTERNAL_ERROR, "too many input_required rounds")

    async def _answer_input(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        requests = result.get("inputRequests") or {}
        responses: dict[str, Any] = {}

        async def one(key: str, request: dict[str, Any]) -> None:
            responses[key] = await self.peer.answer(
                request.get("method", ""), request.get("params") or {}
            )

        async with trio.open_nursery() as nursery:
            for key, request in requests.items():
                nursery.start_soon(one, key, request)
        retry = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
        if responses:
            retry["inputResponses"] = responses
        if "requestState" in result:
            retry["requestState"] = result["requestState"]
        return retry

    async def _cached(self, method: str, params: dict[str, Any]) -> Any:
        key = (method, msgspec.json.encode(params).decode())
        hit = self._cache.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        result = await self.request(method, params)
        ttl = result.get("ttlMs", 0) if isinstance(result, dict) else 0
        if (
            self.era == "modern"
            and isinstance(ttl, int)
            and ttl > 0
            and result.get("resultType", "complete") == "complete"
        ):
            self._cache[key] = (time.monotonic() + ttl / 1000, result)
        return result

    def invalidate(self, method: str | None = None) -> None:
        """Forget cached results (of one method, or all)."""
        self._cache = {
            k: v for k, v in self._cache.items() if method is not None and k[0] != method
        }

    async def _paginate(self, method: str, key: str) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(10_000):
            params = {"cursor": cursor} if cursor is not None else {}
            result = await self._cached(method, params)
            items.extend(result.get(key) or [])
            cursor = result.get("nextCursor")
            if cursor is None:
                return items
        raise MCPError(jsonrpc.INTERNAL_ERROR, f"{method}: too many pages")

    # ------------------------------------------------------------------------------- features

    async def discover(self) -> DiscoverResult:
        """``server/discover`` (modern era)."""
        result = await self.request("server/discover")
        self.discover_result = msgspec.convert(result, DiscoverResult)
        return self.discover_result

    async def list_tools(self) -> list[Tool]:
        """Every tool (all pages). Tools whose ``x-mcp-header`` declarations break the rules
        are dropped and reported in `dropped_tools`."""
        tools = []
        headers: dict[str, Any] = {}
        for raw in await self._paginate("tools/list", "tools"):
            tool = msgspec.convert(raw, Tool)
            try:
                headers[tool.name] = header_params(tool.inputSchema)
            except ValueError as exc:
                self.dropped_tools[tool.name] = str(exc)
                continue
            tools.append(tool)
        self.connection.param_headers = headers
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        progress: Handler | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ToolResult:
        """Call a tool; ``progress(params)`` receives its progress notifications (without it,
        the ``on_progress`` given to `connect` does).

        Raises:
            MCPError: a protocol error (a tool's own failure is a result with ``isError``).
        """
        params = {"name": name, "arguments": arguments or {}}
        meta = dict(meta or {})
        token = None
        progress = progress or self.peer.on_progress
        if progress is not None:
            self._tokens += 1
            token = meta["progressToken"] = f"p{self._tokens}"
            self.peer.progress_by_token[token] = progress
        try:
            try:
                result = await self.request("tools/call", params, meta=meta or None)
            except MCPError as exc:
                if exc.code != -32020 or self.era != "modern":
                    raise
                await self._refresh_tools()
                result = await self.request("tools/call", params, meta=meta or None)
        finally:
            if token is not None:
                self.peer.progress_by_token.pop(token, None)
        return msgspec.convert(result, ToolResult)

    async def _refresh_tools(self) -> None:
        self.invalidate("tools/list")
        await self.list_tools()

    async def list_resources(self) -> list[Resource]:
        return [
            msgspec.convert(r, Resource)
            for r in await self._paginate("resources/list", "resources")
        ]

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        items = await self._paginate("resources/templates/list", "resourceTemplates")
        return [msgspec.convert(r, ResourceTemplate) for r in items]

    async def list_prompts(self) -> list[Prompt]:
        return [msgspec.convert(p, Prompt) for p in await self._paginate("prompts/list", "prompts")]

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return msgspec.convert(
            await self._cached("resources/read", {"uri": uri}), ReadResourceResult
        )

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> GetPromptResult:
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return msgspec.convert(await self.request("prompts/get", params), GetPromptResult)

    async def complete(
        self, ref: dict[str, Any], argument: dict[str, str], context: dict[str, Any] | None = None
    ) -> Completion:
        params: dict[str, Any] = {"ref": ref, "argument": argument}
        if context is not None:
            params["context"] = context
        result = await self.request("completion/complete", params)
        return msgspec.convert(result.get("completion", {}), Completion)

    async def set_log_level(self, level: str) -> None:
        """Ask for log notifications at ``level`` and above (legacy: ``logging/setLevel``;
        modern: ``_meta`` logLevel on every later request)."""
        if self.era == "modern":
            self.connection.log_level = level
        else:
            await self.request("logging/setLevel", {"level": level})

    async def ping(self) -> None:
        """``ping`` (legacy era; the modern era has none, so this is a ``server/discover``)."""
        await self.request("ping" if self.era == "legacy" else "server/discover")

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe`` (legacy; updates arrive on the GET stream)."""
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """``subscriptions/listen`` (modern era, HTTP or stdio): yields the stream's
        notifications, beginning with the acknowledgement. Leaving the block closes the stream
        (over stdio, with ``notifications/cancelled``)."""
        notifications: dict[str, Any] = {}
        if tools:
            notifications["toolsListChanged"] = True
        if prompts:
            notifications["promptsListChanged"] = True
        if resources:
            notifications["resourcesListChanged"] = True
        if resource_uris:
            notifications["resourceSubscriptions"] = list(resource_uris)
        if task_ids:
            notifications["taskIds"] = list(task_ids)
        if self.era != "modern":
            raise TransportError("subscriptions/listen needs the modern era")
        async with self.connection.stream(
            "subscriptions/listen", {"notifications": notifications}
        ) as events:
            yield events

    async def batch(self, calls: Sequence[tuple[str, dict[str, Any] | None]]) -> list[Any]:
        """Several requests in one JSON-RPC batch (a 2025-03-26 session over HTTP)."""
        if not isinstance(self.connection, LegacyHttp):
            raise TransportError("batches need a legacy HTTP session")
        return await self.connection.batch(calls)

    # ---------------------------------------------------------------------------------- tasks

    async def start_task(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Call a tool as a task (the tasks extension; the server decides): the task, or the
        complete tool result when the server answered at once."""
        self._use_tasks()
        result: dict[str, Any] = await self.request(
            "tools/call", {"name": name, "arguments": arguments or {}}
        )
        return result

    async def get_task(self, task_id: str) -> dict[str, Any]:
        self._use_tasks()
        result: dict[str, Any] = await self.request("tasks/get", {"taskId": task_id})
        return result

    async def update_task(self, task_id: str, responses: dict[str, Any]) -> None:
        self._use_tasks()
        await self.request("tasks/update", {"taskId": task_id, "inputResponses": responses})

    async def cancel_task(self, task_id: str) -> None:
        self._use_tasks()
        await self.request("tasks/cancel", {"taskId": task_id})

    def _use_tasks(self) -> None:
        if self.era != "modern":
            raise TransportError("the tasks extension needs the modern era")
        self.connection.extensions = {TASKS_EXTENSION: {}}


# ------------------------------------------------------------------------------------ connect


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
    http_client: httpx.AsyncClient | None = None,
) -> AsyncIterator[Client]:
    """Connect to an MCP server: a URL (Streamable HTTP) or a command (stdio).

    Args:
        target: ``http(s)://…`` or a command line (string or argv list) to spawn.
        era: ``"auto"`` (probe, cached per endpoint), ``"modern"`` or ``"legacy"``.
        on_elicit / on_sample / on_roots: answer the server's requests (both eras).
        on_progress / on_log / on_notification: receive notifications.
        on_discover: may return False to reject a modern server after discovery.

    Raises:
        TransportError: the server could not be reached or refused us (``HTTP <code>: <body>``).
    """
    info = client_info or {"name": "mcpfast", "version": "0.1.0"}
    client_holder: list[Client] = []

    async def notification(method: str, params: dict[str, Any]) -> None:
        for cached in CHANGES.get(method, ()):
            for client in client_holder:
                client.invalidate(cached)
        if on_notification is not None:
            out = on_notification(method, params)
            if hasattr(out, "__await__"):
                await out

    peer = Peer(
        on_elicit=on_elicit,
        on_sample=on_sample,
        on_roots=on_roots,
        on_progress=on_progress,
        on_log=on_log,
        on_notification=notification,
    )

    def accept(connection: Any, discover: DiscoverResult | None) -> Client:
        """The client over a connection, once the discover hook (if any) accepted the server."""
        if discover is not None and on_discover is not None and not on_discover(discover):
            raise TransportError("the discover hook rejected the server")
        client = Client(connection, peer, timeout=timeout)
        client.discover_result = discover
        client_holder.append(client)
        return client

    async with background_nursery() as nursery:
        if _is_url(target):
            assert isinstance(target, str)
            owned = http_client is None
            http = http_client or httpx.AsyncClient(timeout=httpx.Timeout(timeout), headers=headers)
            try:
                connection, discover = await _connect_http(
                    http,
                    target,
                    era,
                    peer,
                    info,
                    log_level,
                    legacy_version,
                    open_get_stream,
                    era_cache,
                    nursery,
                    timeout,
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
            pipe = StdioPipe(target, peer)
            await pipe.start(nursery)
            try:
                session, discover = await _connect_stdio(
                    pipe,
                    _cache_key(target),
                    era,
                    info,
                    log_level,
                    legacy_version,
                    era_cache,
                    timeout,
                )
                yield accept(session, discover)
            finally:
                await pipe.aclose()


async def _probe_http(
    http: httpx.AsyncClient, url: str, modern: ModernHttp
) -> tuple[Verdict | None, Any]:
    params = {"_meta": modern.meta()}
    body = jsonrpc.request(0, "server/discover", params)
    try:
        async with http.stream(
            "POST", url, content=body, headers=modern.headers("server/discover", params)
        ) as response:
            raw = await response.aread()
            status = response.status_code
            kind = response.headers.get("content-type", "")
    except httpx.TransportError as exc:
        raise await unreachable(url, exc) from exc
    message: Any = None
    if kind.startswith("text/event-stream"):
        events = [e for e in sse.Parser().feed(raw) if e.data]
        message = msgspec.json.decode(events[-1].data) if events else None
    else:
        try:
            message = msgspec.json.decode(raw) if raw else None
        except msgspec.DecodeError:
            message = None
    return judge_http(status, raw, message, retried=modern.version != MODERN), message


async def _connect_http(
    http: httpx.AsyncClient,
    url: str,
    era: EraChoice,
    peer: Peer,
    info: dict[str, Any],
    log_level: str | None,
    legacy_version: str,
    open_get_stream: bool,
    cache: EraCache,
    nursery: trio.Nursery,
    timeout: float,
) -> tuple[Any, DiscoverResult | None]:
    def legacy() -> LegacyHttp:
        return LegacyHttp(
            http,
            url,
            peer,
            client_info=info,
            version=legacy_version,
            open_get_stream=open_get_stream,
        )

    async def start_legacy() -> tuple[Any, None]:
        connection = legacy()
        with trio.fail_after(timeout):
            await connection.start(nursery)
        if log_level is not None:
            await connection.request("logging/setLevel", {"level": log_level})
        return connection, None

    if era == "legacy":
        return await start_legacy()
    modern = ModernHttp(http, url, peer, client_info=info, log_level=log_level)
    if era == "modern":
        return modern, None
    cached = cache.get(url)
    if cached is not None:
        try:
            if cached[0] == "legacy":
                return await start_legacy()
            modern.version = cached[1]
            return modern, None
        except (TransportError, MCPError):
            cache.forget(url)
    for _ in range(2):
        with trio.fail_after(timeout):
            verdict, message = await _probe_http(http, url, modern)
        if verdict is None:
            cache.put(url, "modern", modern.version)
            return modern, msgspec.convert(message["result"], DiscoverResult)
        if verdict.era == "modern" and verdict.retry:
            modern.version = verdict.version
            continue
        break
    connection, _ = await start_legacy()
    cache.put(url, "legacy", connection.version)
    return connection, None


async def _connect_stdio(
    pipe: StdioPipe,
    key: str,
    era: EraChoice,
    info: dict[str, Any],
    log_level: str | None,
    legacy_version: str,
    cache: EraCache,
    timeout: float,
) -> tuple[StdioSession, DiscoverResult | None]:
    async def legacy() -> StdioSession:
        session = StdioSession(pipe, "legacy", legacy_version, info)
        with trio.fail_after(timeout):
            await session.initialize(legacy_version)
        if log_level is not None:
            await session.request("logging/setLevel", {"level": log_level})
        cache.put(key, "legacy", session.version)
        return session

    if era == "legacy" or (era == "auto" and (cache.get(key) or ("", ""))[0] == "legacy"):
        return await legacy(), None
    if era == "modern":
        return StdioSession(pipe, "modern", MODERN, info, log_level), None
    message, session = await probe(pipe, info, min(5.0, timeout))
    if message is None:
        return await legacy(), None
    verdict = judge_stdio(message)
    if verdict is None:
        session.log_level = log_level
        cache.put(key, "modern", session.version)
        return session, msgspec.convert(message["result"], DiscoverResult)
    if verdict.retry:
        session.version = verdict.version
        session.log_level = log_level
        try:
            result = await session.request("server/discover")
            return session, msgspec.convert(result, DiscoverResult)
        except MCPError:
            pass
    return await legacy(), None


__all__ = ["ACCEPT", "Client", "connect"]
