"""The MCP endpoint: one HTTP exchange in, one reply out, both eras on one path.

Host/Origin -> GET/DELETE (legacy sessions) -> frame the body -> a batch is 2025-03-26 -> the
message's era (`protocol.routing.post_era`) -> that era.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import trio

from .. import codec, jsonrpc
from .._nursery import background_nursery
from ..errors import CodecError
from ..protocol.routing import post_era
from .app import Server
from .config import Config
from .keys import KeyRing
from .legacy import LegacyEra
from .modern import ModernEra
from .responder import Responder, error_reply
from .runtime import ClientGone, Runtime


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

    @property
    def closing(self) -> trio.Event:
        """Set when the server shuts down: long-lived streams end."""
        return self.runtime.closing

    @asynccontextmanager
    async def running(self) -> AsyncIterator[trio.Nursery]:
        """Serve with a background nursery (yielded) that runs tasks and publishes the server's
        registry changes; on leaving, what still runs there is cancelled and tasks can no longer
        start (-32603). The body's exception comes out as itself."""
        async with background_nursery() as nursery:
            self.runtime.tasks.nursery = nursery
            try:
                with self.server.publishing(nursery):
                    yield nursery
            finally:
                self.runtime.tasks.nursery = None

    async def handle(
        self, method: str, headers: Mapping[str, str], body: bytes, responder: Responder
    ) -> None:
        """Answer one HTTP exchange at the MCP path."""
        if not self.config.host_allowed(headers.get("host")) or not self.config.origin_allowed(
            headers.get("origin"), headers.get("host")
        ):
            await responder.reply(
                403,
                jsonrpc.error(
                    None, jsonrpc.INVALID_REQUEST, "Forbidden: Host or Origin not allowed"
                ),
            )
            return
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
        if batch:
            await self.legacy.batch(headers, messages, responder)
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
