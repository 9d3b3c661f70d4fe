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
  broadcast lands; while the pub/sub connection is down the mirror is unused, its records kept
  as copies that Redis takes back when it lost them (`redis_epoch`: the epoch, the leases).
* resumable response streams: a Redis Stream per response stream (its last ``max_events``;
  kept ``stream_idle_seconds`` after each event while running, ``stream_retention_seconds`` once
  final), with a pub/sub channel of the same name for live followers; `followed` counts that
  channel's subscribers across all workers (so a crashed worker's followers never count).
* signals: plain pub/sub on ``<prefix>signal:<channel>``.
* task records: a key per task and a sorted set per owner (creation order), pruned on read.

One pub/sub connection per bus carries every local subscription (`redis_hub`). When it is lost
every subscription, `signals` listener and `follow` iterator ends (clients resume), and the bus
reconnects with bounded backoff. Every Redis call is bounded by ``timeout_seconds``: a failure or
a timeout raises `BusUnavailable`, never a hang, and nothing is buffered while Redis is away.
Through Sentinel the bus follows a failover at its next reconnect; on a Cluster every script's
keys share one hash slot (`redis_scripts`), and pub/sub is Redis's cluster-wide PUBLISH.

The atomic steps are `redis_scripts`; the session mirror is `redis_sessions`; what a response
stream's recorder and followers hold is `redis_streams`.
"""

from __future__ import annotations

import re
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import coredis
import msgspec
import trio

from ...errors import BusUnavailable
from ...protocol.limits import Rate, Verdict
from . import redis_limits
from . import redis_scripts as scripts
from .bus import WORKER_LEASE_SECONDS, Event, Sink, StreamEvent
from .redis_connect import Client, connected
from .redis_epoch import Recovery
from .redis_hub import FAILURES, Hub, Listener, Subscription, as_bytes
from .redis_sessions import Known, Mirror, SessionNote, record_decoder
from .redis_streams import Following, Recording, backlog, origin, stream_id, stream_item
from .sessions import SessionRecord

T = TypeVar("T")

_EVENT_ID = re.compile(r"\d+-\d+\Z")

_body_decoder = msgspec.json.Decoder(tuple[str, dict[str, Any]])


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


class RedisBus:
    """The `Bus` on Redis (one, through Sentinel, or a Cluster: `redis_connect`'s URLs). Its
    methods are called inside `attached` only; each may raise `BusUnavailable` (Redis away,
    or slower than ``timeout_seconds``). A subscriber or follower that falls ``buffer`` events
    behind is dropped (its channel or iterator ends), a `signals` listener loses what does not
    fit."""

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
        self._mirror = Mirror(max_sessions)
        self._recovery = Recovery(self._call, self._mirror, prefix, self.worker, self._session_keys)
        self._hub = Hub(
            timeout_seconds,
            {self._sessions_channel.encode(): self._mirror.heard},
            self._recovery.lose,
            max_backoff_seconds,
        )
        self._streams: OrderedDict[str, Recording] = OrderedDict()
        self._client: Client | None = None
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
        try:
            async with (
                connected(self._url, self._timeout) as client,
                trio.open_nursery() as nursery,
            ):
                self._client = client
                try:
                    await nursery.start(self._hub.run, client)
                    with trio.move_on_after(self._timeout):
                        await self._hub.wait_up()
                    await self._recovery.first_look()
                    nursery.start_soon(self._recovery.run, self._hub.wait_up)
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

    async def _call(self, request: Callable[[Client], Awaitable[T]]) -> T:
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
        except FAILURES as exc:
            raise BusUnavailable(f"Redis failed: {type(exc).__name__}") from None

    async def take_tokens(self, principal: str, names: list[str], rates: list[Rate]) -> Verdict:
        keys = redis_limits.keys_of(self._prefix, principal, names)
        return await redis_limits.take(self._call, keys, rates)

    # ------------------------------------------------------------------- events and claims

    async def publish(self, topic: str, notification: dict[str, Any]) -> str:
        body = msgspec.json.encode((topic, notification))
        channel = self._prefix + "topic:" + topic
        args = (self._log_size, body, channel)
        reply: Any = await self._call(lambda c: scripts.PUBLISH([self._log], args, client=c))
        return bytes(reply).decode()

    async def replay(self, after: str, topics: Iterable[str]) -> list[Event] | None:
        """None also when ``after`` is of another Redis (or one flushed since), or older than
        the log's first entry once the log was trimmed (events after it may be lost)."""
        if not _EVENT_ID.match(after):
            return None
        reply: Any = await self._call(lambda c: scripts.REPLAY([self._log], [after], client=c))
        mark = stream_id(after)
        if reply is None:
            return [] if mark == (0, 0) else None
        last, first, entries = reply
        if not stream_id(first.decode()) <= mark <= stream_id(last.decode()):
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
        return as_bytes(entries[0].identifier).decode() if entries else "0-0"

    @asynccontextmanager
    async def subscribe(
        self, topics: Iterable[str]
    ) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        """Raises `BusUnavailable` when the pub/sub connection is down; the channel ends when
        it is lost."""
        names = [(self._prefix + "topic:" + topic).encode() for topic in dict.fromkeys(topics)]
        async with self._listening(names, _event, lossy=False) as receive:
            yield receive

    async def attach(self, topics: Iterable[str], sink: Sink[Event]) -> Subscription:
        """Raises `BusUnavailable` when the pub/sub connection is down; the sink is closed
        when it is lost."""
        names = [(self._prefix + "topic:" + topic).encode() for topic in dict.fromkeys(topics)]
        attached = Listener(sink, _event, lossy=False)
        await self._hub.join(names, attached)
        return Subscription(self._hub, names, attached)

    @asynccontextmanager
    async def _listening(
        self, names: list[bytes], decode: Callable[[bytes], T | None], *, lossy: bool
    ) -> AsyncIterator[trio.MemoryReceiveChannel[T]]:
        send, receive = trio.open_memory_channel[T](self._buffer)
        sink = Listener(send, decode, lossy=lossy)
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

    async def load_session(self, session_id: str, fresh: bool = False) -> SessionRecord | None:
        """From the mirror when it knows the session (no Redis round trip) and ``fresh`` is
        False, else from Redis, mirrored while the pub/sub connection is up."""
        known = self._mirror.get(session_id) if self._hub.up and not fresh else None
        if known is not None:
            return known.answer(time.monotonic())
        epoch = self._hub.epoch if self._hub.up else None
        token = self._mirror.begin(session_id)
        keys = self._session_keys(session_id)
        known = None
        try:
            reply: Any = await self._call(lambda c: scripts.LOAD_SESSION(keys, client=c))
            ended_ms, value, ttl_ms = reply
            now = time.monotonic()
            ended_until = now + ended_ms / 1000 if ended_ms > 0 else 0.0
            if value is not None and ttl_ms > 0:
                known = Known(ended_until, record_decoder.decode(value), now + ttl_ms / 1000)
            else:
                read = time.time()
                if not ended_until and not await self._recovery.missed():
                    read = 0.0  # read after Redis lost its data: no copy of before
                known = Known(ended_until, None, 0.0, read)
            return known.answer(now)
        finally:
            self._mirror.settle(session_id, token, known if epoch == self._hub.epoch else None)

    async def save_session(
        self, session_id: str, record: SessionRecord, ttl_seconds: float
    ) -> None:
        """Every worker's mirror learns of it from the broadcast; an ending wins over live
        records saved after it, for ``ttl_seconds``."""
        ttl_ms = _ms(ttl_seconds)
        note = msgspec.json.encode(SessionNote(session_id, ttl_ms, record))
        ended = "1" if record.ended else "0"
        args = (ended, ttl_ms, msgspec.json.encode(record), self._sessions_channel, note)
        keys = self._session_keys(session_id)
        await self._call(lambda c: scripts.SAVE_SESSION(keys, args, client=c))
        self._mirror.forget(session_id)
        if record.ended and self._hub.up:
            self._mirror.put(session_id, Known(time.monotonic() + ttl_seconds, None, 0.0))

    def ended_before(self) -> int:
        """0: Redis keeps every ending until it expires (the mirror forgetting one only costs
        a read of Redis)."""
        return 0

    async def lost(self, started: int) -> bool:
        return await self._recovery.lost(started)

    def durable(self) -> bool | None:
        """Whether Redis persists its data (``CONFIG GET appendonly save`` at attach)."""
        return self._recovery.durable

    async def renew_lease(self) -> None:
        """Also takes the epoch (a new one: the copies are written back)."""
        await self._recovery.look(WORKER_LEASE_SECONDS)

    async def alive(self, worker: str) -> bool:
        """This worker without asking; another by its lease (`redis_epoch`)."""
        return worker == self.worker or await self._recovery.alive(worker)

    # --------------------------------------------------------------------- response streams
    # The worker that opens a stream records it (and interrupts it); any worker follows it,
    # until the recorder's lease lapses. A stream's key names its owner, so that only the
    # owner's session follows it, and its id names its recorder (`redis_streams.origin`).

    def _stream_key(self, owner: str, stream: str) -> str:
        return f"{self._prefix}rs:{{{owner} {stream}}}"

    async def open_stream(self, owner: str, max_events: int, epitaph: bytes = b"") -> str:
        """No round trip: the stream is written to Redis with its first event (and
        ``epitaph``, kept as long as the stream). Past ``max_streams`` streams recorded here,
        the oldest is no longer recorded."""
        stream_id = f"{self.worker}-{secrets.token_hex(8)}"
        while len(self._streams) >= self._max_streams:
            self._streams.popitem(last=False)
        key = self._stream_key(owner, stream_id)
        self._streams[stream_id] = Recording(key, max_events, epitaph)
        return stream_id

    async def record(self, stream: str, data: bytes, *, final: bool = False) -> str:
        entry = self._streams.get(stream)
        if entry is None:
            return f"{stream}.0"
        entry.seq += 1
        seq = entry.seq
        ttl = _ms(self._retention if final else self._idle)
        epitaph = entry.epitaph if seq == 1 else b""
        args = (seq, data, "1" if final else "0", entry.max_events, ttl, epitaph)
        if final:
            del self._streams[stream]
        keys = [entry.key, entry.key + ":epitaph"]
        await self._call(lambda c: scripts.RECORD(keys, args, client=c))
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
        """Raises `BusUnavailable` when Redis or the pub/sub connection is down. Once the
        recorder's lease lapsed (`alive`), the iterator ends with the stream's epitaph."""
        stream_id, _, seq = after.rpartition(".")
        if not stream_id or not seq.isdigit():
            yield None
            return
        key = self._stream_key(owner, stream_id)
        async with self._listening([key.encode()], stream_item, lossy=False) as live:
            entries: Any = await self._call(lambda c: scripts.BACKLOG([key], [seq], client=c))
            if entries is None:
                yield None
            else:
                gone = partial(self._epitaph, key, origin(stream_id))
                yield Following(stream_id + ".", int(seq), backlog(entries), live, gone)

    async def _epitaph(self, key: str, worker: str) -> bytes | None:
        """None while ``worker`` (a stream's recorder) lives, else the stream's epitaph (b""
        for none)."""
        if not worker or await self.alive(worker):
            return None
        value = await self._call(lambda c: c.get(key + ":epitaph"))
        return b"" if value is None else bytes(value)

    # ------------------------------------------------------------------------- task records

    # Every task key carries the hash tag ``{tasks}``: a task is read by its id alone and listed
    # by its owner, in one script, so on a Cluster all of them share one slot.

    def _task_key(self, task_id: str) -> str:
        return f"{self._prefix}{{tasks}}:task:{task_id}"

    async def save_task(
        self, task_id: str, record: bytes, ttl_seconds: float, owner: str | None
    ) -> None:
        keys = [self._task_key(task_id)]
        if owner is not None:
            keys.append(f"{self._prefix}{{tasks}}:owner:{owner}")
        args = (record, _ms(ttl_seconds), task_id)
        await self._call(lambda c: scripts.SAVE_TASK(keys, args, client=c))

    async def load_task(self, task_id: str) -> bytes | None:
        value = await self._call(lambda c: c.get(self._task_key(task_id)))
        return None if value is None else bytes(value)

    async def task_ids(self, owner: str) -> list[str]:
        """The owner's index, then one script that keeps (and returns) the ids whose record is
        still there: a script names every key it touches."""
        index = f"{self._prefix}{{tasks}}:owner:{owner}"
        listed = await self._call(lambda c: c.zrange(index, 0, -1))
        if not listed:
            return []
        ids = [bytes(task_id).decode() for task_id in listed]
        keys = [index, *map(self._task_key, ids)]
        alive: Any = await self._call(lambda c: scripts.TASK_IDS(keys, ids, client=c))
        return [bytes(task_id).decode() for task_id in alive]


def _event(payload: bytes) -> Event:
    """A topic channel's message (``<event id> <body>``)."""
    event_id, _, body = payload.partition(b" ")
    topic, note = _body_decoder.decode(body)
    return event_id.decode(), topic, note
