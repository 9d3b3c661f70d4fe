"""The event bus: how change notifications reach listening streams, and where revoked sessions
are remembered. The in-process implementation serves one worker; another implementation (Redis)
plugs in behind the same `Bus` protocol for several."""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import trio

Event = tuple[str, str, dict[str, Any]]
"""An event id, a topic and the notification's ``{"method": ..., "params": ...}``."""


class Bus(Protocol):
    """Publish/subscribe on topics, a bounded log of what was published (for `Last-Event-ID`
    resumption) and a set of revoked ids with expiry."""

    async def publish(self, topic: str, notification: dict[str, Any]) -> str:
        """Deliver to the topic's subscribers and log it; returns the event id."""
        ...

    async def replay(self, after: str, topics: Iterable[str]) -> list[Event] | None:
        """Logged events of ``topics`` after the event id ``after``; None if it is unknown."""
        ...

    async def head(self) -> str:
        """The id of the newest logged event (a resumption point)."""
        ...

    def subscribe(self, topics: Iterable[str]) -> Any:
        """An async context manager yielding a receive channel of `Event`."""
        ...

    async def revoke(self, key: str, ttl_seconds: float) -> None: ...

    async def is_revoked(self, key: str) -> bool: ...


class LocalBus:
    """In-process bus. A subscriber that falls ``buffer`` events behind is dropped, not waited for."""

    def __init__(self, buffer: int = 256, log_size: int = 1000, max_revoked: int = 100_000) -> None:
        self._subscribers: dict[str, set[trio.MemorySendChannel[Event]]] = {}
        self._buffer = buffer
        self._log: deque[Event] = deque(maxlen=log_size)
        self._boot = secrets.token_hex(4)
        self._seq = 0
        self._revoked: dict[str, float] = {}
        self._max_revoked = max_revoked

    async def publish(self, topic: str, notification: dict[str, Any]) -> str:
        self._seq += 1
        event = (f"{self._boot}-{self._seq}", topic, notification)
        self._log.append(event)
        for channel in list(self._subscribers.get(topic, ())):
            try:
                channel.send_nowait(event)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                channel.close()
                self._subscribers[topic].discard(channel)
        return event[0]

    async def replay(self, after: str, topics: Iterable[str]) -> list[Event] | None:
        boot, _, seq = after.rpartition("-")
        if boot != self._boot or not seq.isdigit():
            return None
        first = int(seq)
        wanted = set(topics)
        return [
            event
            for event in self._log
            if int(event[0].rpartition("-")[2]) > first and event[1] in wanted
        ]

    async def head(self) -> str:
        return f"{self._boot}-{self._seq}"

    @asynccontextmanager
    async def subscribe(self, topics: Iterable[str]) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        send, receive = trio.open_memory_channel[Event](self._buffer)
        topics = list(topics)
        for topic in topics:
            self._subscribers.setdefault(topic, set()).add(send)
        try:
            yield receive
        finally:
            for topic in topics:
                subscribers = self._subscribers.get(topic)
                if subscribers is not None:
                    subscribers.discard(send)
                    if not subscribers:
                        del self._subscribers[topic]
            send.close()
            receive.close()

    async def revoke(self, key: str, ttl_seconds: float) -> None:
        now = time.monotonic()
        if len(self._revoked) >= self._max_revoked:
            self._revoked = {k: t for k, t in self._revoked.items() if t > now}
        self._revoked[key] = now + ttl_seconds

    async def is_revoked(self, key: str) -> bool:
        expiry = self._revoked.get(key)
        if expiry is None:
            return False
        if expiry <= time.monotonic():
            del self._revoked[key]
            return False
        return True
