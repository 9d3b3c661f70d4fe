"""`TokenBound`: the `Responder` of a request authenticated with a token, which adds what the
guard has to say to the normal reply and keeps a stream from outliving the token.

- A ``DPoP-Nonce`` header (RFC 9449 sections 8 and 9: a server may hand out a new nonce on any
  response) on 2xx replies and streams, when the nonce the proof carried is no longer the
  current one: the client picks it up without a 401 round trip.
- An SSE stream ends once its token stops being accepted (``exp`` plus the verifier's leeway):
  every wait for the client (`wait_disconnect`: the long-lived GET and ``subscriptions/listen``
  streams, a handler streaming under the client's watch) returns then, so what runs under it is
  cancelled as if the client had left, and `finish` ends the response cleanly; a stream with no
  such wait (a legacy request's resumable stream) ends at its next event or keepalive, its
  handler going on (the client resumes it with a fresh token). A plain JSON reply is never cut
  short: the deadline is armed only once the response is a stream.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine
from contextlib import AbstractContextManager
from typing import Any, Protocol

import trio

from ...protocol.http import Headers
from ..seams import Responder


class _Reply(Protocol):
    def __call__(
        self, status: int, body: bytes, headers: Headers | None = None
    ) -> Coroutine[Any, Any, None]: ...


class TokenBound:
    """Wraps ``inner`` for one request: ``expires`` is when its token stops being accepted
    (epoch seconds; None: never), ``nonce`` the ``dpop-nonce`` header to add (None: none).
    Without a nonce, `reply` is ``inner``'s own (no extra frame on the common path)."""

    __slots__ = (
        "_closed",
        "_cut",
        "_expires",
        "_inner",
        "_nonce",
        "_waits",
        "reply",
        "streaming",
    )

    def __init__(
        self, inner: Responder, expires: float | None, nonce: tuple[bytes, bytes] | None
    ) -> None:
        self._inner = inner
        self._expires = expires
        self._nonce = nonce
        self._waits: set[trio.CancelScope] | None = None
        """The waits for the client in progress (made on first use: a JSON reply has none)."""
        self._closed = False
        self._cut = False
        self.streaming = False
        self.reply: _Reply = inner.reply if nonce is None else self._reply_with_nonce

    @property
    def cut(self) -> bool:
        """Whether the stream was ended because its token expired."""
        return self._cut

    def _deadline(self) -> float:
        """The token's end on Trio's clock."""
        assert self._expires is not None
        return trio.current_time() + (self._expires - time.time())

    def _with_nonce(self, headers: Headers | None) -> Headers | None:
        if self._nonce is None:
            return headers
        return [*(headers or ()), self._nonce]

    async def _reply_with_nonce(
        self, status: int, body: bytes, headers: Headers | None = None
    ) -> None:
        if 200 <= status < 300:
            headers = self._with_nonce(headers)
        await self._inner.reply(status, body, headers)

    async def open_stream(self, headers: Headers | None = None) -> None:
        await self._inner.open_stream(self._with_nonce(headers))
        self.streaming = True
        if self._expires is not None and self._waits:
            deadline = self._deadline()
            for scope in self._waits:
                scope.deadline = deadline

    async def _expired(self) -> bool:
        """Whether the stream is over: closed, or its token expired (then it is closed now)."""
        if self._closed:
            return True
        if self._expires is None or time.time() < self._expires:
            return False
        self._cut = True
        await self.close()
        return True

    async def send(
        self, message: bytes, event_id: str | None = None, retry_ms: int | None = None
    ) -> None:
        if not await self._expired():
            self._closed = True  # until written: a write cut short leaves no frame to close
            await self._inner.send(message, event_id, retry_ms)
            self._closed = False

    async def keepalive(self) -> None:
        if not await self._expired():
            self._closed = True
            await self._inner.keepalive()
            self._closed = False

    async def close(self) -> None:
        """End the stream (once: what the handler sends after a cut goes nowhere)."""
        if not self._closed:
            self._closed = True
            await self._inner.close()

    def watch(self, scope: trio.CancelScope) -> AbstractContextManager[None] | None:
        """The transport's watch when the token never expires; else None: the wait in
        `wait_disconnect` also ends a stream at the token's expiry."""
        return self._inner.watch(scope) if self._expires is None else None

    async def wait_disconnect(self) -> None:
        """Return when the client goes away, or when the open stream's token expires."""
        if self._expires is None:
            await self._inner.wait_disconnect()
            return
        if self._waits is None:
            self._waits = set()
        with trio.CancelScope() as scope:
            if self.streaming:
                scope.deadline = self._deadline()
            self._waits.add(scope)
            try:
                await self._inner.wait_disconnect()
            finally:
                self._waits.discard(scope)
        if scope.cancelled_caught:
            self._cut = True

    async def finish(self) -> None:
        """After the request, when `cut`: end the stream that the token's expiry cut off (the
        endpoint's handler returned through `ClientGone`, leaving it open)."""
        if self._cut and self.streaming:
            await self.close()
