"""The MCP endpoint: one HTTP exchange in, one reply out, both eras on one path.

An engine hands every request to `Endpoint.exchange`, which routes its path once for both
engines (`protocol.routing.route`): the protected resource metadata (RFC 9728) at its
well-known paths (`metadata_paths`), the health probes at theirs (`probes`), a published Server
Card and its AI Catalog at theirs (`cards`), 404 elsewhere; at the MCP path it reads the body
(`Body`) and answers with `handle`: Host/Origin -> the access token, when protected
(`auth.ResourceGuard`: 401) -> GET/DELETE (legacy sessions) -> frame the body -> the scopes
each message needs (403) -> the rate limits (`limiter`: 429; in a batch, -32023 per refused
request) -> a batch is 2025-03-26 -> the message's era
(`protocol.routing.post_era`) -> that era. With ``Config.access_log`` on, `handle` logs each
exchange at the MCP path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Protocol

import trio

from ... import codec, jsonrpc
from ..._nursery import background_nursery
from ...errors import BusUnavailable, CodecError, RateLimited
from ...protocol.methods import TASK
from ...protocol.routing import post_era, route, route_table
from ..access import current_access, current_peer, forwarded_peer
from ..auth import guard_for
from ..config import Config
from ..framework.app import Server
from ..framework.call import reached
from ..framework.card import Cards
from ..seams import ClientGone, Responder, error_reply
from ..state.keys import KeyRing
from ..state.task_records import TASK_METHODS
from .health import Probes
from .legacy import LegacyEra
from .limiter import limiter_for
from .modern import ModernEra
from .runtime import Runtime

_HOSTS_KEPT = 64

Handle = Callable[[str, Mapping[str, str], bytes, Responder], Awaitable[None]]
"""Answers one HTTP exchange at the MCP path: method, headers, body, responder."""

Companion = Callable[..., Awaitable[object]]
"""A task that runs beside the endpoint (`Endpoint.companions`), started as
``nursery.start(companion)``."""


class Body(Protocol):
    """A request's body, as its engine reads it for `Endpoint.exchange`."""

    unread: bool
    """The request carries a body that must be read off the connection before it can carry
    another request (an ASGI server reads it itself: False). Only the MCP path reads it, so a
    side path then answers 404 (`protocol.routing.route`), closing the connection."""

    async def read(self) -> bytes | None:
        """The body to answer with: a POST's, else ``b""``; None when there is none (answered
        already, 413 or 408, or the client went away or broke the framing: its engine ends the
        connection)."""
        ...


class Endpoint:
    """Everything one server needs to answer exchanges: the server, its settings and keys, the
    eras, and (`running`) the background nursery of its tasks and change notifications."""

    def __init__(self, server: Server, config: Config, keys: KeyRing) -> None:
        self.server = server
        self.config = config
        self.runtime = Runtime(server, config, keys)
        self.runtime.tasks.input_timeout_seconds = config.input_timeout_seconds
        self.runtime.tasks.max_ttl_ms = config.task_max_ttl_ms
        self.runtime.live.resume_grace_seconds = max(5.0, 3 * config.sse_retry_ms / 1000)
        self.modern = ModernEra(self.runtime)
        self.legacy = LegacyEra(self.runtime)
        self.guard = guard_for(server, config, keys)
        self.limiter = limiter_for(server, config, self.runtime.bus)
        """The rate limits (`limiter.Limiter`); None: none set, nothing checked."""
        self.needs_peer = (
            self.limiter is not None or config.max_concurrent_per_principal is not None
        )
        """Whether a request's remote address is read (`access.current_peer`): who an
        unauthenticated caller is, for its rate limits and its concurrency cap."""
        self.metadata_paths: frozenset[str] = (
            self.guard.metadata_paths if self.guard is not None else frozenset()
        )
        """The paths of the protected resource metadata (none when not protected)."""
        self.probes = Probes(config, self.runtime.bus, self.runtime.closing)
        """The liveness and readiness paths (`Probes.paths`) and their answers."""
        self.cards = Cards(server, config)
        """The Server Card and AI Catalog paths (`Cards.paths`; none unless the server
        publishes a card) and their answers."""
        self.routes = route_table(
            config.path, self.metadata_paths, self.probes.paths, self.cards.paths
        )
        """The route of each path served (`protocol.routing.route_table`)."""
        self.companions: list[Companion] = []
        """Tasks started in the background nursery while the endpoint runs (`running`), such
        as the metrics listener (`serve.endpoint_for` adds it for ``Config.metrics_port``)."""
        self._hosts: dict[str | None, bool] = {}
        """`Config.host_allowed` of the ``Host`` values seen (a few at most; forgotten past
        `_HOSTS_KEPT`, so a client sending random ones cannot grow it)."""
        self.handle: Handle
        self.handle = self._answer
        """Answer one HTTP exchange at the MCP path (method, headers, body, responder); with
        the access log on, logged (`access_log.AccessLog.wrap`), else nothing in between."""
        if config.access_log is not None:
            from .access_log import AccessLog

            log = AccessLog(config.access_log, config.log_format, config.max_depth)
            self.handle = log.wrap(self._answer)
        if config.trusted_proxy_hops and self.needs_peer:
            self.handle = _behind_proxies(self.handle, config.trusted_proxy_hops)

    @property
    def closing(self) -> trio.Event:
        """Set when the server shuts down: long-lived streams end."""
        return self.runtime.closing

    @asynccontextmanager
    async def running(self) -> AsyncIterator[trio.Nursery]:
        """Serve with the bus attached and a background nursery (yielded) that runs tasks,
        publishes the server's registry changes, listens for what other workers signal here
        (answers, cancellations, task updates), renews this worker's lease on the bus
        (`Runtime.keep_lease`) and runs the `companions` (listening and
        started before this yields); on leaving, what still runs there is cancelled and tasks
        can no longer start (-32603). The body's exception comes out as itself."""
        async with self.runtime.bus.attached(), background_nursery() as nursery:
            await nursery.start(self.runtime.live.listen)
            await nursery.start(self.runtime.tasks.listen)
            nursery.start_soon(self.runtime.keep_lease)
            self.runtime.tasks.nursery = nursery
            for companion in self.companions:
                await nursery.start(companion)
            try:
                with self.server.publishing(nursery):
                    yield nursery
            finally:
                self.runtime.tasks.nursery = None

    async def exchange(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: Body,
        responder: Responder,
    ) -> None:
        """Answer one HTTP request, whatever its path (`routes`): a side path's answer, the MCP
        path's (`handle`, once the body is read), else 404 (closing the connection when a
        body is left unread)."""
        found = route(self.routes, path, body.unread)
        if found == "mcp":
            read = await body.read()
            if read is not None:
                await self.handle(method, headers, read, responder)
        elif found == "metadata":
            await self.metadata(method, headers, responder)
        elif found == "probe":
            await self.probes.answer(path, method, responder)
        elif found == "card":
            await self.cards.answer(path, method, headers, responder)
        else:
            close = [(b"connection", b"close")] if body.unread else []
            await responder.reply(404, b"", [(b"content-type", b"text/plain"), *close])

    async def metadata(self, method: str, headers: Mapping[str, str], responder: Responder) -> None:
        """Answer a request at one of `metadata_paths`: the document (GET, HEAD), else 405."""
        if self.guard is None or not self.config.host_allowed(headers.get("host")):
            await responder.reply(404, b"", [(b"content-type", b"text/plain")])
            return
        if method not in ("GET", "HEAD"):
            await responder.reply(405, b"", [(b"allow", b"GET, HEAD")])
            return
        cors = [(b"access-control-allow-origin", b"*"), (b"cache-control", b"max-age=300")]
        if method == "HEAD":
            await responder.reply(200, b"", [(b"content-type", b"application/json"), *cors])
            return
        await responder.reply(200, jsonrpc.encode(self.guard.metadata(headers)), cors)

    async def _answer(
        self, method: str, headers: Mapping[str, str], body: bytes, responder: Responder
    ) -> None:
        """Answer one HTTP exchange at the MCP path (`handle`)."""
        host = headers.get("host")
        host_ok = self._hosts.get(host)
        if host_ok is None:
            host_ok = self._host_allowed(host)
        origin = headers.get("origin")
        if not host_ok or (origin is not None and not self.config.origin_allowed(origin, host)):
            await responder.reply(
                403,
                jsonrpc.error(
                    None, jsonrpc.INVALID_REQUEST, "Forbidden: Host or Origin not allowed"
                ),
            )
            return
        if self.guard is None:
            await self._dispatch(method, headers, body, responder)
            return
        if method not in ("GET", "POST", "DELETE"):
            await responder.reply(405, b"", [(b"allow", b"GET, POST, DELETE")])
            return
        guard = self.guard
        found = guard.warm(headers, responder) or await guard.authenticate(
            method, headers, responder
        )
        if found is None:
            return
        access, bound = found  # bound: a stream ends with its token (`auth.TokenBound`)
        token = current_access.set(access)
        try:
            await self._dispatch(method, headers, body, bound)
            if bound.cut:
                await bound.finish()
        finally:
            current_access.reset(token)

    def _host_allowed(self, host: str | None) -> bool:
        """`Config.host_allowed`, remembered."""
        hosts = self._hosts
        if len(hosts) >= _HOSTS_KEPT:
            hosts.clear()
        allowed = hosts[host] = self.config.host_allowed(host)
        return allowed

    async def _dispatch(
        self, method: str, headers: Mapping[str, str], body: bytes, responder: Responder
    ) -> None:
        try:
            if method == "POST":
                await self._post(headers, body, responder)
            elif method == "GET":
                await self.legacy.get(headers, responder)
            elif method == "DELETE":
                await self.legacy.delete(headers, responder)
            else:
                await responder.reply(405, b"", [(b"allow", b"GET, POST, DELETE")])
        except ClientGone:
            return

    async def _post(self, headers: Mapping[str, str], body: bytes, responder: Responder) -> None:
        try:
            batch, messages = codec.frame(body, self.config.max_depth)
        except CodecError as exc:
            await responder.reply(*error_reply(None, exc))
            return
        shed = self.runtime.governor.shed(messages) if self.runtime.governor.shedding else None
        if shed is not None:  # overloaded: refused before any params are decoded
            id_ = None if batch else messages[0].id
            await responder.reply(*error_reply(id_, shed), shed.headers)
            return
        if self.guard is not None:
            try:
                needed = self._needed(messages) | await self._task_scopes(messages)
            except BusUnavailable as exc:
                id_ = None if batch else messages[0].id
                await responder.reply(*error_reply(id_, exc), BusUnavailable.headers)
                return
            if needed and not await self._scoped(headers, batch, messages, needed, responder):
                return
        refused: dict[int, RateLimited] | None = None
        if self.limiter is not None:
            try:
                refused = await self.limiter.refusals(messages, headers)
            except BusUnavailable as exc:  # fail-closed: nothing ran
                id_ = None if batch else messages[0].id
                await responder.reply(*error_reply(id_, exc), BusUnavailable.headers)
                return
            if refused and not batch:
                await responder.reply(*error_reply(messages[0].id, refused[0]), refused[0].headers)
                return
        if batch:
            await self.legacy.batch(headers, messages, responder, refused)
            return
        message = messages[0]
        kind = message.kind
        if kind == codec.KIND_INVALID:
            await responder.reply(400, jsonrpc.invalid_request(message.id, message.reason or ""))
            return
        if post_era(kind, message.method, message.version, headers) == "legacy":
            await self.legacy.post(headers, message, responder)
        elif kind == codec.KIND_NOTIFICATION:
            await responder.reply(202, b"")
        else:
            await self.modern.serve(headers, message, responder)

    def _needed(self, messages: list[codec.Message]) -> frozenset[str]:
        """The scopes the messages need beyond the server's own (their methods', and those of
        the objects they reach: `Server.scopes_for`)."""
        scopes_for = self.server.scopes_for
        if len(messages) == 1:
            message = messages[0]
            return scopes_for(message.method, message.name, message.params)
        needed: frozenset[str] = frozenset()
        for message in messages:
            needed |= scopes_for(message.method, message.name, message.params)
        return needed

    async def _task_scopes(self, messages: list[codec.Message]) -> frozenset[str]:
        """The scopes of the tools whose tasks the messages reach (`call.reached`: a task
        method's, a listen for task notifications), each task read (`TaskRecords.scopes`).

        Raises:
            BusUnavailable: a task's record cannot be read now.
        """
        task_ids = {
            key
            for message in messages
            if message.method in TASK_METHODS
            for kind, key in reached(message.method, message.name, message.params)
            if kind == TASK
        }
        needed: frozenset[str] = frozenset()
        for task_id in task_ids:
            needed |= await self.runtime.tasks.records.scopes(task_id)
        return needed

    async def _scoped(
        self,
        headers: Mapping[str, str],
        batch: bool,
        messages: list[codec.Message],
        needed: frozenset[str],
        responder: Responder,
    ) -> bool:
        """Whether the request's token has the ``needed`` scopes of its messages; else 403
        (`ResourceGuard.authorize`), one challenge for the whole request. ``tools/list`` and
        the other lists are not filtered: a client sees a tool it cannot call, and its call
        says which scope it needs."""
        access = current_access.get()
        guard = self.guard
        assert guard is not None and access is not None
        id_ = None if batch else messages[0].id
        return await guard.authorize(access, needed, headers, responder, id_)


def _behind_proxies(answer: Handle, hops: int) -> Handle:
    """``answer`` with the caller's address (`access.current_peer`) taken from the
    ``X-Forwarded-For`` that ``hops`` trusted proxies appended to (`access.forwarded_peer`),
    for that exchange only."""

    async def forwarded(
        method: str, headers: Mapping[str, str], body: bytes, responder: Responder
    ) -> None:
        listed = headers.get("x-forwarded-for")
        peer = forwarded_peer(listed, hops) if listed else None
        if peer is None:
            await answer(method, headers, body, responder)
            return
        token = current_peer.set(peer)
        try:
            await answer(method, headers, body, responder)
        finally:
            current_peer.reset(token)

    return forwarded
