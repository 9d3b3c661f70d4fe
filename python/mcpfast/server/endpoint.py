"""The MCP endpoint: one HTTP exchange in, one reply out, both eras on one path.

Routing (`shared/spec/DIGEST.md` §3.12): Host/Origin -> GET/DELETE (legacy sessions) -> frame the
body -> a batch is 2025-03-26 -> a response, ``initialize`` without the modern ``_meta``, a
``Mcp-Session-Id``, or a legacy ``MCP-Protocol-Version`` header is legacy -> everything else is
the stateless 2026-07-28 era.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import trio

from .. import codec, jsonrpc
from ..errors import CodecError
from ..versions import LEGACY
from .app import Server
from .config import Config
from .keys import KeyRing
from .legacy import LegacyEra
from .modern import ModernEra
from .responder import Responder

T = TypeVar("T")


class ClientGone(Exception):
    """The client closed the exchange; the handler was cancelled."""


class Endpoint:
    """Everything one server needs to answer exchanges: the server, its settings and keys."""

    def __init__(self, server: Server, config: Config, keys: KeyRing) -> None:
        self.server = server
        self.config = config
        self.keys = keys
        self.modern = ModernEra(self)
        self.legacy = LegacyEra(self)
        self.closing = trio.Event()
        """Set when the server shuts down: long-lived streams end (`linger`)."""

    async def guarded(self, responder: Responder, run: Callable[[], Awaitable[T]]) -> T:
        """Run ``run``, cancelling it if the client goes away.

        Raises:
            ClientGone: when the client disconnected first.
        """
        outcome = await self._watched(responder, run, None)
        if not outcome:
            raise ClientGone
        return outcome[0]

    async def linger(self, responder: Responder, run: Callable[[], Awaitable[None]]) -> None:
        """Run a stream's forwarding loop until the client goes away, or until the server shuts
        down: then return, for the caller to end the stream (its client reconnects, to another
        worker or to the restarted one, and resumes).

        Raises:
            ClientGone: when the client disconnected first.
        """
        if not await self._watched(responder, run, self.closing) and not self.closing.is_set():
            raise ClientGone

    async def _watched(
        self, responder: Responder, run: Callable[[], Awaitable[T]], until: trio.Event | None
    ) -> list[T]:
        """``[run()]``, or ``[]`` when the client went away (or ``until`` was set) first."""
        outcome: list[T] = []
        failure: list[Exception] = []

        async def watch() -> None:
            await responder.wait_disconnect()
            nursery.cancel_scope.cancel()

        async def stop_at(event: trio.Event) -> None:
            await event.wait()
            nursery.cancel_scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            if until is not None:
                nursery.start_soon(stop_at, until)
            try:
                outcome.append(await run())
            except Exception as exc:  # re-raised as is, not wrapped in an exception group
                failure.append(exc)
            nursery.cancel_scope.cancel()
        if failure:
            raise failure[0]
        return outcome

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
            await responder.reply(400, jsonrpc.error(None, exc.code, exc.message, exc.data))
            return
        if batch:
            await self.legacy.batch(headers, messages, responder)
            return
        message = messages[0]
        kind = message[0]
        if kind == codec.KIND_INVALID:
            await responder.reply(
                400,
                jsonrpc.error(
                    message[1], jsonrpc.INVALID_REQUEST, "Invalid Request", {"reason": message[2]}
                ),
            )
            return
        if self._is_legacy(headers, message):
            await self.legacy.post(headers, message, responder)
        elif kind == codec.KIND_NOTIFICATION:
            await responder.reply(202, b"")
        else:
            await self.modern.serve(headers, message, responder)

    @staticmethod
    def _is_legacy(headers: Mapping[str, str], message: codec.Message) -> bool:
        kind, _, method, _, version, _, _ = message
        if version is not None:
            return False
        if kind in (codec.KIND_RESULT, codec.KIND_ERROR) or method == "initialize":
            return True
        if "mcp-session-id" in headers:
            return True
        header = headers.get("mcp-protocol-version")
        if header is None:
            return kind == codec.KIND_REQUEST
        return header.strip() in LEGACY


def header_map(raw: list[tuple[bytes, bytes]] | Any) -> dict[str, str]:
    """ASGI header pairs as a dict of lower-case names (the last value of a repeated header)."""
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in raw}
