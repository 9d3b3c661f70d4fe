"""The resumable response streams of a `RedisBus`: a Redis Stream per response stream, with a
pub/sub channel of the same name for live followers; what one worker records (`Recording`) and
what a follower reads (`Following`: the logged backlog, then the live events, or the stream's
epitaph when its recorder died)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from .bus import LEASE_RENEW_SECONDS, StreamEvent


def stream_id(text: str) -> tuple[int, int]:
    """A Redis Stream entry id (``<ms>-<seq>``), as a pair that compares as the ids do."""
    ms, _, seq = text.partition("-")
    return int(ms), int(seq)


Item = tuple[int, bytes, bool]
"""A response stream's event: its number, its data, whether it is the final one."""


def stream_item(payload: bytes) -> Item | None:
    """A stream channel's message (``<n> <final> <data>``; ``-``: interrupted, None)."""
    if payload == b"-":
        return None
    seq, final, data = payload.split(b" ", 2)
    return int(seq), data, final == b"1"


def backlog(entries: Any) -> list[Item]:
    """The events of an ``XRANGE`` reply on a response stream's Redis Stream."""
    items = []
    for entry_id, fields in entries:
        values = dict(zip(fields[::2], fields[1::2], strict=True))
        items.append((stream_id(entry_id.decode())[1], bytes(values[b"d"]), values[b"f"] == b"1"))
    return items


def origin(stream: str) -> str:
    """The worker recording a stream (its id is ``<worker>-<random>``; "" for an older id)."""
    worker, _, rest = stream.partition("-")
    return worker if rest else ""


class Following:
    """The events a `RedisBus.follow` yields: the logged backlog, then the live ones (those
    the backlog already held skipped), ending after the final one, at an interrupt, or when the
    live channel ends (a follower that fell behind, or a lost pub/sub connection). While no
    event comes it asks ``gone`` every `LEASE_RENEW_SECONDS` whether the recording worker died:
    then it ends with the stream's epitaph (what its recorder left for that case), if any."""

    __slots__ = ("_gone", "_last", "_live", "_over", "_prefix", "backlog")

    def __init__(
        self,
        prefix: str,
        after: int,
        backlog: list[Item],
        live: trio.MemoryReceiveChannel[Item],
        gone: Callable[[], Awaitable[bytes | None]],
    ) -> None:
        self._prefix = prefix
        self._last = after
        self.backlog = backlog[::-1]
        self._live = live
        self._over = False
        self._gone = gone

    def __aiter__(self) -> Following:
        return self

    async def __anext__(self) -> StreamEvent:
        while not self._over:
            if self.backlog:
                seq, data, final = self.backlog.pop()
            else:
                try:
                    item = await self._next_live()
                except (trio.EndOfChannel, trio.ClosedResourceError):
                    break
                if isinstance(item, bytes):
                    self._over = True
                    return f"{self._prefix}{self._last + 1}", item
                seq, data, final = item
            if seq <= self._last:
                continue
            self._last = seq
            self._over = final
            return f"{self._prefix}{seq}", data
        self._over = True
        raise StopAsyncIteration

    async def _next_live(self) -> Item | bytes:
        """The next live event, or the epitaph once the recording worker died.

        Raises:
            trio.EndOfChannel: the live channel ended, or the worker died leaving no epitaph.
        """
        while True:
            with trio.move_on_after(LEASE_RENEW_SECONDS):
                return await self._live.receive()
            epitaph = await self._gone()
            if epitaph is not None:
                if not epitaph:
                    raise trio.EndOfChannel
                return epitaph


class Recording:
    """A response stream this bus records: its Redis key (also its channel) and counter."""

    __slots__ = ("epitaph", "key", "max_events", "seq")

    def __init__(self, key: str, max_events: int, epitaph: bytes) -> None:
        self.key = key
        self.max_events = max(1, max_events)
        self.seq = 0
        self.epitaph = epitaph
        """What a follower ends with if this worker dies first (written with the first event)."""
