"""A ``subscriptions/listen`` stream over HTTP that outlives its connections (`lasting`): when
the server ends it (a drain, a shutdown) or it breaks (a host gone), it is opened again, for as
long as the caller's block lasts, waiting as `protocol.backoff` says. 2026-07-28 keeps no
state between requests, so each new stream is a new ``subscriptions/listen`` request, and
begins with its own acknowledgement."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing, asynccontextmanager
from typing import Any

import httpx2
import trio

from ..errors import TransportError
from ..protocol.backoff import Backoff

log = logging.getLogger("mcpfast.client")

Events = AsyncIterator[dict[str, Any]]
Opener = Callable[[], AbstractAsyncContextManager[Events]]
"""Opens one stream: a new request each time (`mcpfast.client.http.opened`)."""


class Refused(TransportError):
    """The server answered a long-lived request with a status worth another attempt
    (`protocol.backoff.retryable`)."""

    def __init__(self, message: str, status: int, wait: float) -> None:
        super().__init__(message, status)
        self.wait = wait
        """The seconds its ``Retry-After`` asked for (0: none)."""


@asynccontextmanager
async def lasting(open_: Opener, random: Callable[[], float]) -> AsyncIterator[Events]:
    """A stream opened by ``open_`` and opened again whenever it ends or breaks, until the block
    is left; ``random`` gives the jitter of the waits. Every message of every stream is
    yielded, in order (each stream's acknowledgement too).

    Raises:
        Refused, MCPError, TransportError, httpx2.TransportError: at entry, the first stream
            could not be opened; later, a new one was refused with what no later attempt
            would change (`mcpfast.client.http.opened`).
    """
    async with AsyncExitStack() as held:
        first = await held.enter_async_context(open_())
        async with aclosing(_carried_on(held, first, open_, random)) as events:
            yield events


async def _carried_on(
    held: AsyncExitStack, events: Events, open_: Opener, random: Callable[[], float]
) -> AsyncGenerator[dict[str, Any]]:
    """The messages of ``events``, then of each stream opened after it ended (the one before
    it closed through ``held`` first).

    Raises:
        TransportError: an event was over the size cap (`mcpfast.client.http.events_of`).
    """
    backoff = Backoff()
    while True:
        try:
            async for message in events:
                yield message
        except httpx2.TransportError as exc:  # it broke off
            log.info("a listen stream broke off, opened again: %r", exc)
        except TransportError as exc:  # it broke off (said by `events_of`), or an event too big
            if not isinstance(exc.__cause__, httpx2.TransportError):
                raise
            log.info("a listen stream broke off, opened again: %s", exc)
        await held.aclose()
        events = await _reopened(held, open_, backoff, random)


async def _reopened(
    held: AsyncExitStack, open_: Opener, backoff: Backoff, random: Callable[[], float]
) -> Events:
    """A new stream (held by ``held``), after as many attempts as it takes, each after its
    wait (`Backoff.delay`, at least the last answer's ``Retry-After``).

    Raises:
        MCPError, TransportError: an answer no later attempt would change.
    """
    floor = 0.0
    while True:
        await trio.sleep(backoff.delay(random(), floor))
        try:
            events = await held.enter_async_context(open_())
        except Refused as refused:
            floor = refused.wait
        except httpx2.TransportError:
            floor = 0.0
        else:
            backoff.reset()
            return events


__all__ = ["Events", "Refused", "lasting"]
