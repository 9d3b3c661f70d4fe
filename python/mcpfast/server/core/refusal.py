"""A refusal means nothing happened: the one rule of when a request may be answered 503 with
``Retry-After`` (`BusUnavailable`, "retry later"), which a client takes as "not done, send it
again".

A request is *started* once something with effects runs for it: the author's handler (a tool,
a resource reader, a prompt, a completion; `Turn.start`), or a write of its session's state to
the bus. Before that, the bus being away refuses it with 503: nothing was done. A write the bus
did not acknowledge is no proof of that (a frozen Redis runs what it received once it goes on),
so a request that changes its session's state asks the bus first (`bus_first`, a read).

Once started, the bus being away never says "retry":

- what only serves the answer is best-effort (`best_effort`): recording an event of a
  resumable SSE stream, saving a session's changed state that the re-minted id carries too.
  The answer goes out and the loss is logged (that event cannot be resumed; a client keeping
  its first session id misses that state until the next save);
- what the request itself needed of the bus (its handler published, say) fails it with
  `settled`'s -32603: no ``Retry-After``, HTTP 200, a message saying it may have taken effect.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Protocol, TypeVar

from ... import jsonrpc
from ...errors import BusUnavailable, ProtocolError

T = TypeVar("T")

log = logging.getLogger("mcpfast.refusal")

UNFINISHED = (
    "The server's shared state became unavailable while this request ran: it may have taken "
    "effect, so it is not safe to send it again as it is"
)
"""The message of a request that started and then needed the bus while it was away."""


class Probed(Protocol):
    """The part of the `Bus` `bus_first` reads."""

    async def head(self) -> str: ...


def settled(exc: ProtocolError, started: bool) -> ProtocolError:
    """The error a request reports for ``exc``: as it is, unless it is a `BusUnavailable` of a
    request that had ``started``, which becomes -32603 `UNFINISHED` (``data.cause``: what the
    bus said), with no 503 and no ``Retry-After``."""
    if not started or not isinstance(exc, BusUnavailable):
        return exc
    return ProtocolError(jsonrpc.INTERNAL_ERROR, UNFINISHED, {"cause": exc.message})


async def best_effort(work: Awaitable[T], lost: str) -> T | None:
    """``work``'s value, or None (logging ``lost``: what is lost) when the bus is away."""
    try:
        return await work
    except BusUnavailable as exc:
        log.warning("%s: %s", lost, exc.message)
        return None


async def bus_first(bus: Probed) -> None:
    """Ask the bus (a read, with no effect) before a request writes state to it, so that its
    refusal comes before anything is written.

    Raises:
        BusUnavailable: the bus is away; nothing was started.
    """
    await bus.head()
