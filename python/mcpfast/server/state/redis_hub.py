"""The pub/sub side of `RedisBus`: its one pub/sub connection (`Hub`), multiplexing the bus's
local listeners (`Listener`: subscriptions, `signals` listeners, `follow` iterators), reconnected
with bounded backoff when lost, which ends every listener."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

import msgspec
import trio
from coredis.patterns.pubsub import PubSub

from ...errors import BusUnavailable
from .bus import Event, Sink
from .redis_connect import FAILURES as FAILURES  # re-exported: what redis_bus catches
from .redis_connect import Client

T = TypeVar("T")


def as_bytes(value: str | bytes | int) -> bytes:
    """A value of a Redis reply, as bytes."""
    return value if isinstance(value, bytes) else str(value).encode()


class Listener(Generic[T]):
    """One local listener: what arrives on its channels goes into its bounded memory channel.
    ``decode`` turns a message into an item, or None to end the listener (an interrupt); a
    ``lossy`` listener that is full loses the message, another one is ended."""

    __slots__ = ("_decode", "_lossy", "_send")

    def __init__(
        self,
        send: Sink[T],
        decode: Callable[[bytes], T | None],
        *,
        lossy: bool = False,
    ) -> None:
        self._send = send
        self._decode = decode
        self._lossy = lossy

    def deliver(self, payload: bytes) -> None:
        try:
            item = self._decode(payload)
        except (msgspec.DecodeError, ValueError):
            return  # not ours: ignored
        if item is None:
            self.end()
            return
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            if not self._lossy:
                self.end()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def end(self) -> None:
        self._send.close()


class Subscription:
    """A sink's subscription (`RedisBus.attach`)."""

    __slots__ = ("hub", "names", "sink")

    def __init__(self, hub: Hub, names: list[bytes], sink: Listener[Event]) -> None:
        self.hub = hub
        self.names = names
        self.sink = sink

    async def aclose(self) -> None:
        await self.hub.leave(self.names, self.sink)


class _Channel:
    """A Redis channel this bus subscribes to for its local listeners."""

    __slots__ = ("failed", "ready", "sinks")

    def __init__(self) -> None:
        self.sinks: set[Listener[Any]] = set()
        self.ready = trio.Event()
        self.failed = False


class Hub:
    """The bus's one pub/sub connection, multiplexing its local listeners; reconnected with
    bounded backoff when lost, which ends every listener. ``fixed`` channels (the session
    broadcasts) are subscribed for as long as the hub runs; ``lost`` is called on every loss."""

    def __init__(
        self,
        timeout: float,
        fixed: dict[bytes, Callable[[bytes], None]],
        lost: Callable[[], None],
        max_backoff: float,
    ) -> None:
        self._timeout = timeout
        self._fixed = fixed
        self._lost = lost
        self._max_backoff = max_backoff
        self._pubsub: PubSub[bytes] | None = None
        self._channels: dict[bytes, _Channel] = {}
        self._up = trio.Event()
        self.epoch = 0
        """Changes at every connection and loss: a Redis read made within one epoch, while up,
        saw everything that was broadcast before it."""

    @property
    def up(self) -> bool:
        return self._pubsub is not None

    async def wait_up(self) -> None:
        await self._up.wait()

    async def run(
        self,
        client: Client,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Hold the pub/sub connection, reconnecting (after 0.05 s, doubling up to the bound)."""
        task_status.started()
        backoff = 0.05
        while True:
            try:
                async with client.pubsub(
                    channels=list(self._fixed),
                    ignore_subscribe_messages=True,
                    retry_policy=None,
                    subscription_timeout=self._timeout,
                    max_idle_seconds=max(1.0, 2 * self._timeout),
                ) as pubsub:
                    self._connected(pubsub)
                    backoff = 0.05
                    while True:
                        message = await pubsub.get_message()
                        if message is not None and message["type"] == "message":
                            self._dispatch(as_bytes(message["channel"]), as_bytes(message["data"]))
            except* FAILURES:
                pass
            finally:
                self._lose()
            await trio.sleep(backoff)
            backoff = min(2 * backoff, self._max_backoff)

    def _connected(self, pubsub: PubSub[bytes]) -> None:
        self._pubsub = pubsub
        self.epoch += 1
        self._up.set()

    def _lose(self) -> None:
        if self._pubsub is None:
            return
        self._pubsub = None
        self.epoch += 1
        self._up = trio.Event()
        channels, self._channels = self._channels, {}
        for channel in channels.values():
            channel.failed = True
            channel.ready.set()
            for sink in channel.sinks:
                sink.end()
        self._lost()

    def _dispatch(self, name: bytes, payload: bytes) -> None:
        handler = self._fixed.get(name)
        if handler is not None:
            handler(payload)
        channel = self._channels.get(name)
        if channel is not None:
            for sink in list(channel.sinks):
                sink.deliver(payload)

    async def join(self, names: Sequence[bytes], sink: Listener[Any]) -> None:
        """Deliver what arrives on ``names`` to ``sink``, from the moment this returns (Redis
        has acknowledged the subscriptions).

        Raises:
            BusUnavailable: no pub/sub connection, or no acknowledgement in time (``sink`` is
                then subscribed to none of ``names``).
        """
        pubsub = self._pubsub
        if pubsub is None:
            raise BusUnavailable("no pub/sub connection to Redis")
        fresh, waits = [], []
        for name in names:
            channel = self._channels.get(name)
            if channel is None:
                channel = self._channels[name] = _Channel()
                fresh.append(name)
            elif not channel.ready.is_set():
                waits.append(channel)
            channel.sinks.add(sink)
        try:
            with trio.fail_after(self._timeout):
                if fresh:
                    try:
                        await pubsub.subscribe(*fresh)
                    finally:
                        for name in fresh:
                            if (channel := self._channels.get(name)) is not None:
                                channel.ready.set()
                for channel in waits:
                    await channel.ready.wait()
            if any(self._channels.get(name) is None for name in names):
                raise BusUnavailable("the pub/sub connection to Redis was lost")
        except (trio.TooSlowError, *FAILURES):
            await self.leave(names, sink)
            raise BusUnavailable("Redis did not acknowledge a subscription") from None
        except BaseException:
            await self.leave(names, sink)
            raise

    async def leave(self, names: Iterable[bytes], sink: Listener[Any]) -> None:
        """Stop delivering ``names`` to ``sink``; unsubscribes (without waiting beyond the
        bound, even when cancelled) what no local listener needs any more."""
        emptied = []
        for name in names:
            channel = self._channels.get(name)
            if channel is None or sink not in channel.sinks:
                continue
            channel.sinks.discard(sink)
            if not channel.sinks:
                del self._channels[name]
                emptied.append(name)
        pubsub = self._pubsub
        if emptied and pubsub is not None:
            with trio.move_on_after(self._timeout, shield=True):
                try:
                    await pubsub.unsubscribe(*emptied)
                except FAILURES:
                    pass
