"""`Client`: typed MCP calls against any server, in either era, over any transport (made by
`mcpfast.client.connect.connect`): capability checks before sending, ``input_required`` rounds
answered by the application's handlers, ``resultType`` checked against what each request
declared (the tasks extension is declared per request, by the task methods only), and the
2026-07-28 response cache (``ttlMs``; a result reached through ``input_required`` rounds is
never kept; ``list_changed`` and ``resources/updated`` notifications empty what they name)."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from typing import Any, cast

import msgspec
import trio

from .. import jsonrpc
from ..errors import MCPError, RateLimited, TransportError
from ..protocol.capabilities import unadvertised
from ..protocol.headers import header_params
from ..protocol.initialize import Initialized
from ..protocol.methods import NAME_FIELD
from ..protocol.modern import check_result_type, retry_params
from ..protocol.retries import RetryPolicy, idempotent, repeatable
from ..telemetry import current, propagation, semconv
from ..telemetry.tracing import asking
from ..types import (
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
from .apps import AppCalls
from .cache import ResponseCache
from .legacy import LegacyHttp
from .notifications import NotificationCalls
from .peer import Handler, Peer
from .skills import SkillCalls
from .tasks import TaskCalls
from .transport import ModernTransport, Transport

log = logging.getLogger("mcpfast.client")


class Client(TaskCalls, AppCalls, SkillCalls, NotificationCalls):
    """A connected client. Create it with `connect`.

    Attributes:
        era: ``"modern"`` or ``"legacy"``.
        protocol_version: the revision in use.
        discover_result: the ``server/discover`` result (modern era), else None.
        server_info: ``name``/``version`` of the server.
        server_extensions: the extensions the server declared (SEP-2133), with their settings.
        dropped_tools: tools left out of `list_tools` for an invalid ``x-mcp-header``, with why.
    """

    def __init__(
        self, connection: Transport, peer: Peer, *, timeout: float, retry: RetryPolicy
    ) -> None:
        self.connection = connection
        self.peer = peer
        self.timeout = timeout
        self.retry = retry
        self.idempotent_tools: set[str] = set()
        """The tools `list_tools` found read-only or idempotent (their calls may be retried)."""
        self.discover_result: DiscoverResult | None = None
        self.dropped_tools: dict[str, str] = {}
        self.cache = ResponseCache()
        """The 2026-07-28 response cache (`mcpfast.client.cache`)."""
        self._tokens = 0
        self.telemetry = current()
        """The CLIENT spans and metrics of the requests sent; None (nothing recorded, no trace
        context sent) when no SDK was configured before connecting."""

    # ------------------------------------------------------------------------------- identity

    @property
    def era(self) -> str:
        return str(self.connection.era)

    @property
    def protocol_version(self) -> str:
        return str(self.connection.version)

    @property
    def _initialized(self) -> Initialized | None:
        return self.connection.initialized

    @property
    def server_info(self) -> dict[str, Any]:
        if self.discover_result is not None:
            return self.discover_result.server_info
        return self._initialized.server_info if self._initialized is not None else {}

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self._advertised() or {}

    @property
    def server_extensions(self) -> dict[str, dict[str, Any]]:
        """The extensions the server declared (``capabilities.extensions`` of its
        ``server/discover`` or ``initialize``), by identifier, with their settings."""
        extensions = self.server_capabilities.get("extensions")
        if not isinstance(extensions, dict):
            return {}
        return {k: v if isinstance(v, dict) else {} for k, v in extensions.items()}

    def _advertised(self) -> dict[str, Any] | None:
        """What the server advertised (``server/discover`` or ``initialize``); None if unknown."""
        if self.discover_result is not None:
            return self.discover_result.capabilities
        return self._initialized.capabilities if self._initialized is not None else None

    @property
    def instructions(self) -> str | None:
        if self.discover_result is not None:
            return self.discover_result.instructions
        return self._initialized.instructions if self._initialized is not None else None

    # ------------------------------------------------------------------------------- requests

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> Any:
        """Any request; in the modern era ``input_required`` results are answered by the
        registered handlers and the request is retried with the exact ``requestState``.

        ``extensions`` (modern era) are declared in this request's ``clientCapabilities``
        only, e.g. ``{"io.modelcontextprotocol/tasks": {}}``; a ``resultType`` other than
        ``complete`` (or ``task``, for a ``tools/call`` that declared the tasks extension) is
        refused.

        A refused request safe to repeat is sent again as ``retry`` allows (`_retried`).

        Raises:
            RateLimited: the server refused it, and it was not (or no longer) retried.
            MCPError: the server answered with an error, or -32601 (nothing sent) when the
                server did not advertise the capability the method needs.
            TransportError: the server's answer was not MCP (an unknown ``resultType`` too).
        """
        result, _ = await self._request(method, params, meta=meta, extensions=extensions)
        return result

    async def _request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        meta: dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> tuple[Any, int]:
        """`request`, and how many ``input_required`` rounds it took."""
        advertised = self._advertised()
        missing = unadvertised(method, advertised) if advertised is not None else None
        if missing is not None:
            raise MCPError(
                jsonrpc.METHOD_NOT_FOUND,
                f"The server does not advertise {missing}: {method} was not sent",
            )
        if extensions and self.era != "modern":
            raise TransportError("extensions need the modern era")
        params = dict(params or {})
        with trio.fail_after(self.timeout):
            for rounds in range(16):
                result = await self._retried(method, params, meta, extensions)
                kind = result.get("resultType", "complete") if isinstance(result, dict) else None
                if kind != "input_required":
                    if self.era == "modern":
                        check_result_type(method, kind, extensions)
                    return result, rounds
                params = await self._answer_input(params, result)
        raise MCPError(jsonrpc.INTERNAL_ERROR, "too many input_required rounds")

    async def _retried(
        self,
        method: str,
        params: dict[str, Any],
        meta: dict[str, Any] | None,
        extensions: dict[str, Any] | None,
    ) -> Any:
        """`_send`, sent again after a refusal (`protocol.retries`) while `Retries.wait`
        allows and the wait ends before the timeout; else the refusal is raised."""
        retries = self.retry.start(repeatable(method, params, self.idempotent_tools))
        while True:
            try:
                return await self._send(method, params, meta, extensions)
            except RateLimited as refused:
                wait = retries.wait(refused, random.random())
                left = trio.current_effective_deadline() - trio.current_time()
                if wait is None or wait >= left:
                    raise
                log.info("%s refused (%s): sent again in %.2f s", method, refused.reason, wait)
                await trio.sleep(wait)

    async def _send(
        self,
        method: str,
        params: dict[str, Any],
        meta: dict[str, Any] | None,
        extensions: dict[str, Any] | None,
    ) -> Any:
        """Send one request, in its own CLIENT span when telemetry is live (its trace context
        in the request's ``_meta``, and over HTTP in its headers too)."""
        telemetry = self.telemetry
        if telemetry is None:
            return await self._sent(method, params, meta, extensions)
        field = NAME_FIELD.get(method)
        name = params.get(field) if field is not None else None
        with asking(
            telemetry,
            method=method,
            name=name if isinstance(name, str) else None,
            version=self.protocol_version,
            transport=_transport_of(self.connection),
            session_id=getattr(self.connection, "session", None),
        ) as op:
            try:
                result = await self._sent(method, params, propagation.inject(meta), extensions)
            except MCPError as exc:
                op.fail(exc.code, exc.message)
                raise
            op.result(result)
            return result

    async def _sent(
        self,
        method: str,
        params: dict[str, Any],
        meta: dict[str, Any] | None,
        extensions: dict[str, Any] | None,
    ) -> Any:
        if extensions:
            return await cast(ModernTransport, self.connection).request(
                method, params, meta=meta, extensions=extensions
            )
        return await self.connection.request(method, params, meta=meta)

    async def _answer_input(self, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """The retry's params: the answers of every ``inputRequests`` entry (asked at once).

        Raises:
            MCPError: the client cannot answer one (`Peer.answer`: no handler, an undeclared
                elicitation mode, sampling messages that break the tool rules); the first
                such refusal, as itself (not in an exception group).
        """
        requests = result.get("inputRequests") or {}
        responses: dict[str, Any] = {}
        refusals: list[MCPError] = []

        async def one(key: str, request: dict[str, Any]) -> None:
            try:
                responses[key] = await self.peer.answer_input(
                    request.get("method", ""), request.get("params") or {}
                )
            except MCPError as exc:
                refusals.append(exc)

        async with trio.open_nursery() as nursery:
            for key, request in requests.items():
                nursery.start_soon(one, key, request)
        if refusals:
            raise refusals[0]
        return retry_params(params, result, responses)

    async def _cached(self, method: str, params: dict[str, Any]) -> Any:
        hit = self.cache.get(method, params) if self.era == "modern" else None
        if hit is not None:
            return hit
        result, rounds = await self._request(method, params)
        if self.era == "modern":
            self.cache.put(method, params, result, rounds)
        return result

    def invalidate(self, method: str | None = None) -> None:
        """Forget cached results (of one method, or all)."""
        self.cache.invalidate(method)

    def invalidate_resource(self, uri: str) -> None:
        """Forget the cached ``resources/read`` of ``uri`` (a ``notifications/resources/updated``
        for it does this by itself)."""
        self.cache.invalidate_resource(uri)

    def _heard(self, method: str, params: dict[str, Any]) -> None:
        """Empty the cached results a server notification says are stale."""
        self.cache.heard(method, params)

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
        (`protocol.headers.header_params`: also one not statically reachable through
        ``properties``) are dropped, reported in `dropped_tools` and logged as a warning on
        the ``mcpfast.client`` logger."""
        tools = []
        headers: dict[str, Any] = {}
        for raw in await self._paginate("tools/list", "tools"):
            tool = msgspec.convert(raw, Tool)
            try:
                headers[tool.name] = header_params(tool.inputSchema)
            except ValueError as exc:
                self.dropped_tools[tool.name] = str(exc)
                log.warning("MCP tool %r ignored: %s", tool.name, exc)
                continue
            tools.append(tool)
        self.connection.param_headers = headers
        self.idempotent_tools = {tool.name for tool in tools if idempotent(tool)}
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
        the ``on_progress`` given to `connect` does). The tasks extension is not declared, so
        a conforming server answers with the tool's result (`start_task` asks for a task).

        Raises:
            MCPError: a protocol error (a tool's own failure is a result with ``isError``).
            TransportError: the answer was not a tool result (e.g. a task nobody asked for).
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
                if exc.code != jsonrpc.HEADER_MISMATCH or self.era != "modern":
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
            self._modern("a log level in _meta").log_level = level
        else:
            await self.request("logging/setLevel", {"level": level})

    async def ping(self) -> None:
        """``ping`` (legacy era; the modern era has none, so this is a ``server/discover``)."""
        await self.request("ping" if self.era == "legacy" else "server/discover")

    async def batch(self, calls: Sequence[tuple[str, dict[str, Any] | None]]) -> list[Any]:
        """Several requests in one JSON-RPC batch (a 2025-03-26 session over HTTP)."""
        if not isinstance(self.connection, LegacyHttp):
            raise TransportError("batches need a legacy HTTP session")
        return await self.connection.batch(calls)

    def _modern(self, what: str) -> ModernTransport:
        """The connection, as the modern era's.

        Raises:
            TransportError: the connection speaks the legacy era.
        """
        if self.era != "modern":
            raise TransportError(f"{what} needs the modern era")
        return cast(ModernTransport, self.connection)


def _transport_of(connection: Transport) -> dict[str, Any]:
    """The network attributes of a connection: HTTP (with the server's address) or a pipe."""
    url = getattr(connection, "url", None)
    if not isinstance(url, str):
        return semconv.transport(False)
    return semconv.http_transport(url)
