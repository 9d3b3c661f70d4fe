"""`RedisBus`: the `Bus` on one Redis (>= 7) shared by every worker of every host, with coredis.

What lives where:

* published events: one Redis Stream per bus (``<prefix>log``, approximately ``log_size``
  entries; its entry ids are the event ids) for `replay`, and a pub/sub channel per topic
  (``<prefix>topic:<topic>``) for live delivery; both written by one script, so atomically.
* claims: ``SET NX`` keys that expire after ``claim_seconds``; `claim_once` claims (a DPoP
  proof's ``jti``) likewise, each with its own expiry.
* session records: a key per session (and one per ended session, which wins), written with their
  expiry and broadcast on ``<prefix>sessions``. Every bus mirrors what it learns (a record, or
  that there is none) and answers `load_session` from the mirror: a legacy request makes no
  Redis round trip in the common case. A save is seen by every other worker as soon as its
  broadcast lands; while the pub/sub connection is down the mirror is empty and unused.
* resumable response streams: a Redis Stream per response stream (its last ``max_events``;
  kept ``stream_idle_seconds`` after each event while running, ``stream_retention_seconds`` once
  final), with a pub/sub channel of the same name for live followers; `followed` counts that
  channel's subscribers across all workers (so a crashed worker's followers never count).
* signals: plain pub/sub on ``<prefix>signal:<channel>``.
* task records: a key per task and a sorted set per owner (creation order), pruned on read.

One pub/sub connection per bus carries every local subscription. When it is lost every
subscription, `signals` listener and `follow` iterator ends (clients resume), and the bus
reconnects with bounded backoff. Every Redis call is bounded by ``timeout_seconds``: a failure or
a timeout raises `BusUnavailable`, never a hang, and nothing is buffered while Redis is away.
Redis Cluster and Sentinel are not supported (scripts touch keys of several slots).
"""

from __future__ import annotations

import re
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

import anyio
import coredis
import coredis.exceptions
import msgspec
import trio
from coredis.commands.script import Script
from coredis.patterns.pubsub import PubSub
from coredis.retry import NoRetryPolicy

from ...errors import BusUnavailable
from .bus import Event, Sink, StreamEvent
from .sessions import SessionRecord

T = TypeVar("T")

_FAILURES = (coredis.exceptions.RedisError, TimeoutError, OSError, anyio.ClosedResourceError)
"""What coredis raises when Redis is away, slow or refusing (all become `BusUnavailable`); a
connection closed under it (by a reconnect, or when cancelled) is anyio's ClosedResourceError."""

_EVENT_ID = re.compile(r"\d+-\d+\Z")

_PUBLISH = Script[bytes](
    script="""
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[2])
redis.call('PUBLISH', ARGV[3], id .. ' ' .. ARGV[2])
return id
"""
)
_REPLAY = Script[bytes](
    script="""
local ok, info = pcall(redis.call, 'XINFO', 'STREAM', KEYS[1])
if not ok then return false end
local fields = {}
for i = 1, #info, 2 do fields[info[i]] = info[i + 1] end
local trimmed = fields['entries-added'] > fields['length']
return {fields['last-generated-id'], trimmed and fields['recorded-first-entry-id'] or '0-0',
        redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+')}
"""
)
_SAVE_SESSION = Script[bytes](
    script="""
if ARGV[1] == '1' then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
end
redis.call('PUBLISH', ARGV[4], ARGV[5])
"""
)
_LOAD_SESSION = Script[bytes](
    script="""
return {redis.call('PTTL', KEYS[2]), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
"""
)
_RECORD = Script[bytes](
    script="""
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[4], '0-' .. ARGV[1], 'd', ARGV[2], 'f', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PUBLISH', KEYS[1], ARGV[1] .. ' ' .. ARGV[3] .. ' ' .. ARGV[2])
"""
)
_BACKLOG = Script[bytes](
    script="""
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('XRANGE', KEYS[1], '(0-' .. ARGV[1], '+')
"""
)
_SAVE_TASK = Script[bytes](
    script="""
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if #KEYS > 1 then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[2], 'NX', t[1] * 1000000 + t[2], ARGV[3])
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
end
"""
)
_TASK_IDS = Script[bytes](
    script="""
local alive = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('EXISTS', ARGV[1] .. id) == 1 then
    table.insert(alive, id)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return alive
"""
)


class _SessionNote(msgspec.Struct, array_like=True):
    """The broadcast of a saved session record."""

    id: str
    ttl_ms: int
    record: SessionRecord


_note_decoder = msgspec.json.Decoder(_SessionNote)
_record_decoder = msgspec.json.Decoder(SessionRecord)
_body_decoder = msgspec.json.Decoder(tuple[str, dict[str, Any]])


def _bytes(value: str | bytes | int) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _stream_id(text: str) -> tuple[int, int]:
    ms, _, seq = text.partition("-")
    return int(ms), int(seq)


# ----------------------------------------------------------------------------- pub/sub hub


class _Sink(Generic[T]):
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


class _Attachment:
    """A sink's subscription (`RedisBus.attach`)."""

    __slots__ = ("hub", "names", "sink")

    def __init__(self, hub: _Hub, names: list[bytes], sink: _Sink[Event]) -> None:
        self.hub = hub
        self.names = names
        self.sink = sink

    async def aclose(self) -> None:
        await self.hub.leave(self.names, self.sink)


class _Channel:
    """A Redis channel this bus subscribes to for its local listeners."""

    __slots__ = ("failed", "ready", "sinks")

    def __init__(self) -> None:
        self.sinks: set[_Sink[Any]] = set()
        self.ready = trio.Event()
        self.failed = False


class _Hub:
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
        client: coredis.Redis[bytes],
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
                            self._dispatch(_bytes(message["channel"]), _bytes(message["data"]))
            except* _FAILURES:
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

    async def join(self, names: Sequence[bytes], sink: _Sink[Any]) -> None:
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
        except (trio.TooSlowError, *_FAILURES):
            await self.leave(names, sink)
            raise BusUnavailable("Redis did not acknowledge a subscription") from None
        except BaseException:
            await self.leave(names, sink)
            raise

    async def leave(self, names: Iterable[bytes], sink: _Sink[Any]) -> None:
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
                except _FAILURES:
                    pass


# ------------------------------------------------------------------------- session mirror


class _Known:
    """What this bus knows of a session: ended until, and its live record until (monotonic)."""

    __slots__ = ("ended_until", "record", "until")

    def __init__(self, ended_until: float, record: SessionRecord | None, until: float) -> None:
        self.ended_until = ended_until
        self.record = record
        self.until = until

    def answer(self, now: float) -> SessionRecord | None:
        if self.ended_until > now:
            return SessionRecord(seen=time.time(), ended=True)
        if self.record is not None and self.until > now:
            return self.record
        return None


class _Mirror:
    """The session records this bus has seen (at most ``size``, least recently used out),
    kept current by the broadcasts of every save. A read of Redis is mirrored only if no
    broadcast of the session landed while it ran (else it may be older than that one)."""

    def __init__(self, size: int) -> None:
        self._size = max(1, size)
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._reading: dict[str, object] = {}

    def get(self, session_id: str) -> _Known | None:
        known = self._known.get(session_id)
        if known is not None:
            self._known.move_to_end(session_id)
        return known

    def put(self, session_id: str, known: _Known) -> None:
        self._known[session_id] = known
        self._known.move_to_end(session_id)
        while len(self._known) > self._size:
            self._known.popitem(last=False)

    def heard(self, payload: bytes) -> None:
        """A save broadcast: an ending is known in full; a live record only updates a session
        already known (its ending, if any, may have been forgotten here)."""
        note = _note_decoder.decode(payload)
        self._reading.pop(note.id, None)
        until = time.monotonic() + note.ttl_ms / 1000
        if note.record.ended:
            self.put(note.id, _Known(until, None, 0.0))
            return
        known = self._known.get(note.id)
        if known is not None:
            known.record, known.until = note.record, until

    def forget(self, session_id: str) -> None:
        self._known.pop(session_id, None)
        self._reading.pop(session_id, None)

    def begin(self, session_id: str) -> object:
        token = self._reading[session_id] = object()
        return token

    def settle(self, session_id: str, token: object, known: _Known | None) -> None:
        """End a read of ``session_id``; mirror ``known`` unless a broadcast overtook it."""
        if self._reading.get(session_id) is token:
            del self._reading[session_id]
            if known is not None:
                self.put(session_id, known)

    def clear(self) -> None:
        self._known.clear()
        self._reading.clear()


# --------------------------------------------------------------------------- response streams


_Item = tuple[int, bytes, bool]
"""A response stream's event: its number, its data, whether it is the final one."""


def _stream_item(payload: bytes) -> _Item | None:
    """A stream channel's message (``<n> <final> <data>``; ``-``: interrupted, None)."""
    if payload == b"-":
        return None
    seq, final, data = payload.split(b" ", 2)
    return int(seq), data, final == b"1"


def _backlog(entries: Any) -> list[_Item]:
    items = []
    for entry_id, fields in entries:
        values = dict(zip(fields[::2], fields[1::2], strict=True))
        items.append((_stream_id(entry_id.decode())[1], bytes(values[b"d"]), values[b"f"] == b"1"))
    return items


class _Following:
    """The events a `RedisBus.follow` yields: the logged backlog, then the live ones (those
    the backlog already held skipped), ending after the final one, at an interrupt, or when the
    live channel ends (a follower that fell behind, or a lost pub/sub connection)."""

    __slots__ = ("_backlog", "_last", "_live", "_over", "_prefix")

    def __init__(
        self,
        prefix: str,
        after: int,
        backlog: list[_Item],
        live: trio.MemoryReceiveChannel[_Item],
    ) -> None:
        self._prefix = prefix
        self._last = after
        self._backlog = backlog[::-1]
        self._live = live
        self._over = False

    def __aiter__(self) -> _Following:
        return self

    async def __anext__(self) -> StreamEvent:
        while not self._over:
            if self._backlog:
                seq, data, final = self._backlog.pop()
            else:
                try:
                    seq, data, final = await self._live.receive()
                except (trio.EndOfChannel, trio.ClosedResourceError):
                    break
            if seq <= self._last:
                continue
            self._last = seq
            self._over = final
            return f"{self._prefix}{seq}", data
        self._over = True
        raise StopAsyncIteration


class _Recording:
    """A response stream this bus records: its Redis key (also its channel) and counter."""

    __slots__ = ("key", "max_events", "seq")

    def __init__(self, key: str, max_events: int) -> None:
        self.key = key
        self.max_events = max(1, max_events)
        self.seq = 0


# ------------------------------------------------------------------------------------ bus


class RedisBus:
    """The `Bus` on Redis (``redis://``, ``rediss://`` or ``unix://`` URLs). Its methods are
    called inside `attached` only; each may raise `BusUnavailable` (Redis away, or slower than
    ``timeout_seconds``). A subscriber or follower that falls ``buffer`` events behind is
    dropped (its channel or iterator ends), a `signals` listener loses what does not fit."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "mcpfast:",
        buffer: int = 256,
        log_size: int = 1000,
        max_sessions: int = 100_000,
        max_streams: int = 1000,
        stream_retention_seconds: float = 300.0,
        stream_idle_seconds: float = 3600.0,
        claim_seconds: float = 600.0,
        timeout_seconds: float = 2.0,
        max_backoff_seconds: float = 2.0,
    ) -> None:
        self.worker = secrets.token_hex(8)
        self._url = url
        self._prefix = prefix
        self._buffer = buffer
        self._log_size = log_size
        self._max_streams = max_streams
        self._retention = stream_retention_seconds
        self._idle = stream_idle_seconds
        self._claim_ms = _ms(claim_seconds)
        self._timeout = timeout_seconds
        self._log = prefix + "log"
        self._sessions_channel = prefix + "sessions"
        self._mirror = _Mirror(max_sessions)
        self._hub = _Hub(
            timeout_seconds,
            {self._sessions_channel.encode(): self._mirror.heard},
            self._mirror.clear,
            max_backoff_seconds,
        )
        self._streams: OrderedDict[str, _Recording] = OrderedDict()
        self._client: coredis.Redis[bytes] | None = None
        self._attached = False

    @asynccontextmanager
    async def attached(self) -> AsyncIterator[None]:
        """Open the connection pool and the pub/sub connection (waiting for it at most
        ``timeout_seconds``: with Redis away the bus starts anyway, and its calls raise
        `BusUnavailable` until Redis is back); on exit both are closed.

        Raises:
            RuntimeError: it is attached already (one endpoint at a time: give each its own
                `RedisBus`, on one Redis they are workers of one server).
        """
        if self._attached:
            raise RuntimeError("this RedisBus is attached already: give each endpoint its own")
        self._attached = True
        client = coredis.Redis.from_url(
            self._url,
            stream_timeout=self._timeout,
            connect_timeout=self._timeout,
            retry_policy=NoRetryPolicy(),
        )
        try:
            async with client, trio.open_nursery() as nursery:
                self._client = client
                try:
                    await nursery.start(self._hub.run, client)
                    with trio.move_on_after(self._timeout):
                        await self._hub.wait_up()
                    yield
                finally:
                    self._client = None
                    nursery.cancel_scope.cancel()
        finally:
            self._attached = False

    def ready(self) -> bool:
        """Whether the bus is attached and its pub/sub connection to Redis is up (lost when
        Redis goes away, back when the hub reconnects)."""
        return self._client is not None and self._hub.up

    async def _call(self, request: Callable[[coredis.Redis[bytes]], Awaitable[T]]) -> T:
        """``request`` on the client, bounded.

        Raises:
            BusUnavailable: not attached, or Redis failed or did not answer in time.
        """
        client = self._client
        if client is None:
            raise BusUnavailable("the bus is not attached")
        try:
            with trio.fail_after(self._timeout):
                return await request(client)
        except trio.TooSlowError:
            raise BusUnavailable(f"Redis did not answer within {self._timeout} s") from None
        except _FAILURES as exc:
            raise BusUnavailable(f"Redis failed: {type(exc).__name__}") from None

    # ------------------------------------------------------------------- events and claims

    async def publish(self, topic: str, notification: dict[str, Any]) -> str:
        body = msgspec.json.encode((topic, notification))
        channel = self._prefix + "topic:" + topic
        args = (self._log_size, body, channel)
        reply: Any = await self._call(lambda c: _PUBLISH([self._log], args, client=c))
        return bytes(reply).decode()

    async def replay(self, after: str, topics: Iterable[str]) -> list[Event] | None:
        """None also when ``after`` is of another Redis (or one flushed since), or older than
        the log's first entry once the log was trimmed (events after it may be lost)."""
        if not _EVENT_ID.match(after):
            return None
        reply: Any = await self._call(lambda c: _REPLAY([self._log], [after], client=c))
        mark = _stream_id(after)
        if reply is None:
            return [] if mark == (0, 0) else None
        last, first, entries = reply
        if not _stream_id(first.decode()) <= mark <= _stream_id(last.decode()):
            return None
        wanted = set(topics)
        events = []
        for entry_id, fields in entries:
            topic, note = _body_decoder.decode(fields[1])
            if topic in wanted:
                events.append((entry_id.decode(), topic, note))
        return events

    async def head(self) -> str:
        entries = await self._call(lambda c: c.xrevrange(self._log, count=1))
        return _bytes(entries[0].identifier).decode() if entries else "0-0"

    @asynccontextmanager
    async def subscribe(
        self, topics: Iterable[str]
    ) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        """Raises `BusUnavailable` when the pub/sub connection is down; the channel ends when
        it is lost."""
        names = [(self._prefix + "topic:" + topic).encode() for topic in dict.fromkeys(topics)]
        async with self._listening(names, _event, lossy=False) as receive:
            yield receive

    async def attach(self, topics: Iterable[str], sink: Sink[Event]) -> _Attachment:
        """Raises `BusUnavailable` when the pub/sub connection is down; the sink is closed
        when it is lost."""
        names = [(self._prefix + "topic:" + topic).encode() for topic in dict.fromkeys(topics)]
        attached = _Sink(sink, _event, lossy=False)
        await self._hub.join(names, attached)
        return _Attachment(self._hub, names, attached)

    @asynccontextmanager
    async def _listening(
        self, names: list[bytes], decode: Callable[[bytes], T | None], *, lossy: bool
    ) -> AsyncIterator[trio.MemoryReceiveChannel[T]]:
        send, receive = trio.open_memory_channel[T](self._buffer)
        sink = _Sink(send, decode, lossy=lossy)
        with send, receive:
            await self._hub.join(names, sink)
            try:
                yield receive
            finally:
                await self._hub.leave(names, sink)

    async def claim(self, owner: str, event_id: str, claimant: str) -> str:
        """Claims are kept ``claim_seconds``."""
        key = f"{self._prefix}claim:{owner} {event_id}"
        holder = await self._call(
            lambda c: c.set(
                key, claimant, condition=coredis.PureToken.NX, get=True, px=self._claim_ms
            )
        )
        return claimant if holder is None else bytes(holder).decode()

    async def claim_once(self, owner: str, key: str, seconds: float) -> bool:
        """One ``SET NX PX`` (no count per owner: every claim expires after ``seconds``)."""
        name = f"{self._prefix}once:{owner} {key}"
        return await self._call(
            lambda c: c.set(name, b"", condition=coredis.PureToken.NX, px=_ms(seconds))
        )

    # ------------------------------------------------------------------------------ signals

    async def signal(self, channel: str, payload: bytes) -> int:
        """Returns the subscribers Redis handed it to (each worker's connection counts once)."""
        return await self._call(lambda c: c.publish(self._prefix + "signal:" + channel, payload))

    @asynccontextmanager
    async def signals(self, channel: str) -> AsyncIterator[trio.MemoryReceiveChannel[bytes]]:
        """Raises `BusUnavailable` when the pub/sub connection is down; the channel ends when
        it is lost."""
        name = (self._prefix + "signal:" + channel).encode()
        async with self._listening([name], bytes, lossy=True) as receive:
            yield receive

    # ----------------------------------------------------------------------------- sessions

    def _session_keys(self, session_id: str) -> list[str]:
        live = f"{self._prefix}session:{{{session_id}}}"
        return [live, live + ":ended"]

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """From the mirror when it knows the session (no Redis round trip), else from Redis,
        mirrored while the pub/sub connection is up."""
        known = self._mirror.get(session_id) if self._hub.up else None
        if known is not None:
            return known.answer(time.monotonic())
        epoch = self._hub.epoch if self._hub.up else None
        token = self._mirror.begin(session_id)
        keys = self._session_keys(session_id)
        known = None
        try:
            reply: Any = await self._call(lambda c: _LOAD_SESSION(keys, client=c))
            ended_ms, value, ttl_ms = reply
            now = time.monotonic()
            ended_until = now + ended_ms / 1000 if ended_ms > 0 else 0.0
            if value is not None and ttl_ms > 0:
                known = _Known(ended_until, _record_decoder.decode(value), now + ttl_ms / 1000)
            else:
                known = _Known(ended_until, None, 0.0)
            return known.answer(now)
        finally:
            self._mirror.settle(session_id, token, known if epoch == self._hub.epoch else None)

    async def save_session(
        self, session_id: str, record: SessionRecord, ttl_seconds: float
    ) -> None:
        """Every worker's mirror learns of it from the broadcast; an ending wins over live
        records saved after it, for ``ttl_seconds``."""
        ttl_ms = _ms(ttl_seconds)
        note = msgspec.json.encode(_SessionNote(session_id, ttl_ms, record))
        ended = "1" if record.ended else "0"
        args = (ended, ttl_ms, msgspec.json.encode(record), self._sessions_channel, note)
        keys = self._session_keys(session_id)
        await self._call(lambda c: _SAVE_SESSION(keys, args, client=c))
        self._mirror.forget(session_id)
        if record.ended and self._hub.up:
            self._mirror.put(session_id, _Known(time.monotonic() + ttl_seconds, None, 0.0))

    def ended_before(self) -> int:
        """0: Redis keeps every ending until it expires (the mirror forgetting one only costs
        a read of Redis)."""
        return 0

    # --------------------------------------------------------------------- response streams
    # The worker that opens a stream records it (and interrupts it); any worker follows it.
    # A stream's key names its owner, so that only the owner's session follows it.

    def _stream_key(self, owner: str, stream: str) -> str:
        return f"{self._prefix}rs:{owner} {stream}"

    async def open_stream(self, owner: str, max_events: int) -> str:
        """No round trip: the stream is written to Redis with its first event. Past
        ``max_streams`` streams recorded here, the oldest is no longer recorded."""
        stream_id = secrets.token_hex(8)
        while len(self._streams) >= self._max_streams:
            self._streams.popitem(last=False)
        self._streams[stream_id] = _Recording(self._stream_key(owner, stream_id), max_events)
        return stream_id

    async def record(self, stream: str, data: bytes, *, final: bool = False) -> str:
        entry = self._streams.get(stream)
        if entry is None:
            return f"{stream}.0"
        entry.seq += 1
        seq = entry.seq
        ttl = _ms(self._retention if final else self._idle)
        args = (seq, data, "1" if final else "0", entry.max_events, ttl)
        if final:
            del self._streams[stream]
        await self._call(lambda c: _RECORD([entry.key], args, client=c))
        return f"{stream}.{seq}"

    async def interrupt(self, stream: str) -> None:
        entry = self._streams.get(stream)
        if entry is not None:
            await self._call(lambda c: c.publish(entry.key, b"-"))

    async def followed(self, stream: str) -> bool:
        entry = self._streams.get(stream)
        if entry is None:
            return False
        counts = await self._call(lambda c: c.pubsub_numsub(entry.key))
        return any(count > 0 for count in counts.values())

    @asynccontextmanager
    async def follow(
        self, owner: str, after: str
    ) -> AsyncIterator[AsyncIterator[StreamEvent] | None]:
        """Raises `BusUnavailable` when Redis or the pub/sub connection is down."""
        stream_id, _, seq = after.rpartition(".")
        if not stream_id or not seq.isdigit():
            yield None
            return
        key = self._stream_key(owner, stream_id)
        async with self._listening([key.encode()], _stream_item, lossy=False) as live:
            entries: Any = await self._call(lambda c: _BACKLOG([key], [seq], client=c))
            if entries is None:
                yield None
            else:
                yield _Following(stream_id + ".", int(seq), _backlog(entries), live)

    # ------------------------------------------------------------------------- task records

    async def save_task(
        self, task_id: str, record: bytes, ttl_seconds: float, owner: str | None
    ) -> None:
        keys = [self._prefix + "task:" + task_id]
        if owner is not None:
            keys.append(self._prefix + "tasks:" + owner)
        args = (record, _ms(ttl_seconds), task_id)
        await self._call(lambda c: _SAVE_TASK(keys, args, client=c))

    async def load_task(self, task_id: str) -> bytes | None:
        value = await self._call(lambda c: c.get(self._prefix + "task:" + task_id))
        return None if value is None else bytes(value)

    async def task_ids(self, owner: str) -> list[str]:
        key = self._prefix + "tasks:" + owner
        ids: Any = await self._call(lambda c: _TASK_IDS([key], [self._prefix + "task:"], client=c))
        return [bytes(task_id).decode() for task_id in ids]


def _event(payload: bytes) -> Event:
    """A topic channel's message (``<event id> <body>``)."""
    event_id, _, body = payload.partition(b" ")
    topic, note = _body_decoder.decode(body)
    return event_id.decode(), topic, note
