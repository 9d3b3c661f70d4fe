"""The recorded response streams of a `LocalBus` (the SSE stream answering one legacy POST):
every event is logged, so that a client that lost the connection resumes it with GET +
``Last-Event-ID``, and handed to the stream's live followers.

A stream event id is "<stream id>.<n>", n from one counter for all streams (so an event of a
stream already forgotten still gets a unique id). Ended streams are kept for
``retention_seconds``; past ``max_streams`` the oldest go, ended ones first."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from .bus import StreamEvent


class _Stream:
    """One recorded response stream of `LocalBus`."""

    __slots__ = ("done", "events", "followers", "owner")

    def __init__(self, owner: str, max_events: int) -> None:
        self.owner = owner
        self.events: deque[tuple[int, bytes, bool]] = deque(maxlen=max(1, max_events))
        self.followers: set[trio.MemorySendChannel[tuple[int, bytes, bool] | None]] = set()
        self.done = False

    def drop_followers(self) -> None:
        for channel in self.followers:
            channel.close()
        self.followers.clear()


class _Following:
    """The events a `LocalBus.follow` yields: the logged backlog, then the live channel."""

    __slots__ = ("_backlog", "_live", "_over", "_prefix")

    def __init__(
        self,
        prefix: str,
        backlog: list[tuple[int, bytes, bool]],
        live: trio.MemoryReceiveChannel[tuple[int, bytes, bool] | None] | None,
    ) -> None:
        self._prefix = prefix
        self._backlog = deque(backlog)
        self._live = live
        self._over = False

    def __aiter__(self) -> _Following:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._over:
            raise StopAsyncIteration
        if self._backlog:
            seq, data, final = self._backlog.popleft()
        else:
            if self._live is None:
                raise StopAsyncIteration
            try:
                item = await self._live.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                item = None
            if item is None:  # interrupted, or dropped for falling behind
                self._over = True
                raise StopAsyncIteration
            seq, data, final = item
        if final:
            self._over = True
        return f"{self._prefix}{seq}", data


class ResponseStreams:
    """The response streams one `LocalBus` records (its ``Bus`` methods of the same names). A
    follower that falls ``buffer`` events behind is dropped (its iterator ends)."""

    def __init__(self, buffer: int, max_streams: int, retention_seconds: float) -> None:
        self._buffer = buffer
        self._streams: OrderedDict[str, _Stream] = OrderedDict()
        self._ended: OrderedDict[str, float] = OrderedDict()  # ended streams, oldest first
        self._stream_seq = 0
        self._max_streams = max_streams
        self._retention = retention_seconds

    async def open_stream(self, owner: str, max_events: int) -> str:
        self._expire_streams()
        stream_id = secrets.token_hex(8)
        self._streams[stream_id] = _Stream(owner, max_events)
        return stream_id

    def _expire_streams(self) -> None:
        horizon = time.monotonic() - self._retention
        while self._ended:
            oldest, ended_at = next(iter(self._ended.items()))
            if ended_at >= horizon and len(self._streams) < self._max_streams:
                break
            del self._ended[oldest]
            self._streams.pop(oldest, None)
        while len(self._streams) >= self._max_streams:  # all of them still running
            _, victim = self._streams.popitem(last=False)
            victim.drop_followers()

    async def record(self, stream: str, data: bytes, *, final: bool = False) -> str:
        self._stream_seq += 1
        seq = self._stream_seq
        entry = self._streams.get(stream)
        if entry is not None and not entry.done:
            item = (seq, data, final)
            entry.events.append(item)
            for channel in list(entry.followers):
                try:
                    channel.send_nowait(item)
                except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                    channel.close()
                    entry.followers.discard(channel)
            if final:
                entry.done = True
                entry.followers.clear()
                self._ended[stream] = time.monotonic()
        return f"{stream}.{seq}"

    async def followed(self, stream: str) -> bool:
        entry = self._streams.get(stream)
        return entry is not None and bool(entry.followers)

    async def interrupt(self, stream: str) -> None:
        entry = self._streams.get(stream)
        if entry is None:
            return
        for channel in list(entry.followers):
            try:
                channel.send_nowait(None)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                channel.close()
        entry.followers.clear()

    @asynccontextmanager
    async def follow(
        self, owner: str, after: str
    ) -> AsyncIterator[AsyncIterator[StreamEvent] | None]:
        stream_id, _, seq = after.rpartition(".")
        entry = self._streams.get(stream_id)
        if entry is None or entry.owner != owner or not seq.isdigit():
            yield None
            return
        first = int(seq)
        backlog = [item for item in entry.events if item[0] > first]
        if entry.done:
            yield _Following(stream_id + ".", backlog, None)
            return
        send, receive = trio.open_memory_channel[tuple[int, bytes, bool] | None](self._buffer)
        entry.followers.add(send)
        try:
            yield _Following(stream_id + ".", backlog, receive)
        finally:
            entry.followers.discard(send)
            send.close()
            receive.close()
