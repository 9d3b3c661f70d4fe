"""`LocalBus`: the `Bus` in process, serving the `Endpoint`s of one process (what it holds is
lost when the process ends): subscriptions, the event log, signals, session and task records,
claims and recorded response streams, each bounded."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import trio

from ...protocol.limits import Rate, Verdict
from .buckets import LocalBuckets
from .bus import Event, Sink, StreamEvent
from .local_streams import ResponseStreams
from .once import OnceClaims
from .sessions import SessionRecord

_SWEEP_SECONDS = 60.0
"""How often `LocalBus` forgets expired session and task records, at most."""


class _Attachment:
    """A sink's subscription to topics of a `LocalBus` (one per `LocalBus.attach`, so that a
    sink attached twice, as a GET stream following its session's new topics, is detached
    from the old topics only)."""

    __slots__ = ("sink", "subscribers", "topics")

    def __init__(
        self, subscribers: dict[str, _Subscribers], topics: tuple[str, ...], sink: Sink[Event]
    ) -> None:
        self.subscribers = subscribers
        self.topics = topics
        self.sink = sink
        for topic in topics:
            present = subscribers.get(topic)
            if present is None:
                subscribers[topic] = self
            elif isinstance(present, set):
                present.add(self)
            else:
                subscribers[topic] = {present, self}

    def leave(self, topic: str) -> None:
        """Take no more events of ``topic``."""
        present = self.subscribers.get(topic)
        if present is self:
            del self.subscribers[topic]
        elif isinstance(present, set):
            present.discard(self)
            if not present:
                del self.subscribers[topic]

    async def aclose(self) -> None:
        for topic in self.topics:
            self.leave(topic)


_Subscribers = _Attachment | set[_Attachment]
"""A topic's subscribers: most topics of a session's GET stream have one only (no set, then)."""


class LocalBus:
    """In-process bus. A subscriber that falls ``buffer`` events behind is dropped, not waited
    for; a signal listener that falls ``buffer`` signals behind loses the next ones. The
    `Endpoint`s sharing one `LocalBus` share its ``worker`` id: a signal reaches all of their
    listeners on its channel. Rate-limit buckets: at most ``max_buckets`` (`LocalBuckets`).
    `claim_once` keeps at most ``max_claims_per_owner`` unexpired
    claims of one owner (`OnceClaims`)."""

    def __init__(
        self,
        buffer: int = 256,
        log_size: int = 1000,
        max_sessions: int = 100_000,
        max_streams: int = 1000,
        stream_retention_seconds: float = 300.0,
        max_tasks: int = 10_000,
        max_claims_per_owner: int = 100_000,
        max_buckets: int = 100_000,
    ) -> None:
        self.worker = secrets.token_hex(4)
        self.buckets = LocalBuckets(max_buckets)
        self._once = OnceClaims(max_claims_per_owner)
        self._listeners: dict[str, set[trio.MemorySendChannel[bytes]]] = {}
        self._tasks: OrderedDict[str, tuple[float, bytes, str | None]] = OrderedDict()
        """Task records by id, oldest created first: when they expire, the record, the owner."""
        self._owned: dict[str, dict[str, None]] = {}
        """The task ids of each owner, oldest first."""
        self._max_tasks = max_tasks
        self._tasks_swept = time.monotonic()
        self._subscribers: dict[str, _Subscribers] = {}
        self._buffer = buffer
        self._log: deque[Event] = deque(maxlen=log_size)
        self._claims: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._max_claims = max(4 * log_size, 65_536)
        self._boot = secrets.token_hex(4)
        self._seq = 0
        self._sessions: OrderedDict[str, tuple[float, SessionRecord]] = OrderedDict()
        self._max_sessions = max_sessions
        self._ended_sessions: OrderedDict[str, tuple[float, int]] = OrderedDict()
        """Sessions ended by DELETE, until when that matters and when each began, oldest ending
        first: apart from the live records, so that an ``initialize`` + ``DELETE`` loop never
        pushes those out."""
        self._ended_before = 0
        """The latest start of a session whose unexpired ending was forgotten (`ended_before`)."""
        self._swept = time.monotonic()
        self._streams = ResponseStreams(buffer, max_streams, stream_retention_seconds)
        """The recorded response streams: ended ones kept ``stream_retention_seconds``, at
        most ``max_streams`` (the oldest go, ended ones first)."""

    def ready(self) -> bool:
        """Always: an in-process bus is never away."""
        return True

    @asynccontextmanager
    async def attached(self) -> AsyncIterator[None]:
        """Nothing to hold in process."""
        yield

    # ------------------------------------------------------------------------------- signals

    async def signal(self, channel: str, payload: bytes) -> int:
        reached = 0
        for send in list(self._listeners.get(channel, ())):
            try:
                send.send_nowait(payload)
                reached += 1
            except trio.WouldBlock:
                pass  # the listener is behind: this signal is lost to it
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._listeners[channel].discard(send)
        return reached

    @asynccontextmanager
    async def signals(self, channel: str) -> AsyncIterator[trio.MemoryReceiveChannel[bytes]]:
        send, receive = trio.open_memory_channel[bytes](self._buffer)
        self._listeners.setdefault(channel, set()).add(send)
        try:
            yield receive
        finally:
            listeners = self._listeners.get(channel)
            if listeners is not None:
                listeners.discard(send)
                if not listeners:
                    del self._listeners[channel]
            send.close()
            receive.close()

    # -------------------------------------------------------------------------------- tasks

    async def save_task(
        self, task_id: str, record: bytes, ttl_seconds: float, owner: str | None
    ) -> None:
        """Past ``max_tasks`` records the expired ones go (swept at least every minute), then
        the oldest created."""
        now = time.monotonic()
        if now - self._tasks_swept > _SWEEP_SECONDS:
            self._sweep_tasks(now)
        previous = self._tasks.get(task_id)
        if previous is None and len(self._tasks) >= self._max_tasks:
            self._sweep_tasks(now)
            while len(self._tasks) >= self._max_tasks:
                self._forget_task(next(iter(self._tasks)))
        elif previous is not None and previous[2] != owner:
            self._forget_task(task_id)
        self._tasks[task_id] = (now + ttl_seconds, record, owner)
        if owner is not None:
            self._owned.setdefault(owner, {})[task_id] = None

    async def load_task(self, task_id: str) -> bytes | None:
        entry = self._tasks.get(task_id)
        if entry is None:
            return None
        if entry[0] <= time.monotonic():
            self._forget_task(task_id)
            return None
        return entry[1]

    async def task_ids(self, owner: str) -> list[str]:
        now = time.monotonic()
        ids = list(self._owned.get(owner, ()))
        for task_id in [t for t in ids if self._tasks[t][0] <= now]:
            self._forget_task(task_id)
        return [t for t in ids if t in self._tasks]

    def _forget_task(self, task_id: str) -> None:
        _, _, owner = self._tasks.pop(task_id)
        if owner is not None:
            owned = self._owned[owner]
            owned.pop(task_id, None)
            if not owned:
                del self._owned[owner]

    def _sweep_tasks(self, now: float) -> None:
        self._tasks_swept = now
        for task_id in [k for k, (expiry, _, _) in self._tasks.items() if expiry <= now]:
            self._forget_task(task_id)

    def task_count(self) -> int:
        """How many task records this bus holds (for tests and monitoring)."""
        return len(self._tasks)

    # -------------------------------------------------------------------------- notifications

    async def publish(self, topic: str, notification: dict[str, Any]) -> str:
        self._seq += 1
        event = (f"{self._boot}-{self._seq}", topic, notification)
        self._log.append(event)
        present = self._subscribers.get(topic)
        if present is None:
            return event[0]
        for attachment in list(present) if isinstance(present, set) else [present]:
            try:
                attachment.sink.send_nowait(event)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                attachment.sink.close()
                attachment.leave(topic)
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
    async def subscribe(
        self, topics: Iterable[str]
    ) -> AsyncIterator[trio.MemoryReceiveChannel[Event]]:
        send, receive = trio.open_memory_channel[Event](self._buffer)
        attachment = await self.attach(topics, send)
        try:
            yield receive
        finally:
            await attachment.aclose()
            send.close()
            receive.close()

    async def attach(self, topics: Iterable[str], sink: Sink[Event]) -> _Attachment:
        return _Attachment(self._subscribers, tuple(dict.fromkeys(topics)), sink)

    def subscription_count(self) -> int:
        """How many subscriptions (`subscribe`, `attach`) are open (for tests and monitoring)."""
        attachments: set[_Attachment] = set()
        for present in self._subscribers.values():
            if isinstance(present, set):
                attachments.update(present)
            else:
                attachments.add(present)
        return len(attachments)

    async def claim(self, owner: str, event_id: str, claimant: str) -> str:
        """The latest claims are kept (at least 65,536, and four times the log): far more than
        the streams of one session lag behind each other."""
        key = (owner, event_id)
        holder = self._claims.get(key)
        if holder is not None:
            return holder
        self._claims[key] = claimant
        while len(self._claims) > self._max_claims:
            self._claims.popitem(last=False)
        return claimant

    async def claim_once(self, owner: str, key: str, seconds: float) -> bool:
        return await self._once.claim_once(owner, key, seconds)

    async def take_tokens(self, principal: str, names: list[str], rates: list[Rate]) -> Verdict:
        return self.buckets.take([f"{principal} {name}" for name in names], rates)

    async def load_session(self, session_id: str, fresh: bool = False) -> SessionRecord | None:
        """``fresh`` changes nothing: this worker's store is the only one."""
        now = time.monotonic()
        ended = self._ended_sessions.get(session_id)
        if ended is not None:
            if ended[0] > now:
                return SessionRecord(seen=now, ended=True, started=ended[1])
            del self._ended_sessions[session_id]
        entry = self._sessions.get(session_id)
        if entry is None:
            return None
        if entry[0] <= now:
            del self._sessions[session_id]
            return None
        return entry[1]

    async def save_session(
        self, session_id: str, record: SessionRecord, ttl_seconds: float
    ) -> None:
        """Records expire after ``ttl_seconds`` (swept at least every minute, so memory follows
        the sessions in use); past ``max_sessions`` records the expired ones go, then the least
        recently saved. Ended sessions are kept apart, in a store of the same bound: ending
        sessions in a loop costs neither the live records nor more than that bound. An ending
        is never dropped before it expires: past the bound, the oldest one is folded into
        `ended_before` (the sessions started before it end too: fail closed)."""
        now = time.monotonic()
        if now - self._swept > _SWEEP_SECONDS:
            self._sweep(now)
        self._sessions.pop(session_id, None)
        if record.ended:
            ended = self._ended_sessions
            ended.pop(session_id, None)
            while len(ended) >= self._max_sessions:
                _, (until, started) = ended.popitem(last=False)
                if until > now:  # unexpired: forgotten only into the watermark
                    self._ended_before = max(self._ended_before, started)
            ended[session_id] = (now + ttl_seconds, record.started)
            return
        if len(self._sessions) >= self._max_sessions:
            self._sweep(now)
            while len(self._sessions) >= self._max_sessions:
                self._sessions.popitem(last=False)
        self._sessions[session_id] = (now + ttl_seconds, record)

    def _sweep(self, now: float) -> None:
        """Forget every expired record and ending."""
        self._swept = now
        for key in [k for k, (expiry, _) in self._sessions.items() if expiry <= now]:
            del self._sessions[key]
        for key in [k for k, (expiry, _) in self._ended_sessions.items() if expiry <= now]:
            del self._ended_sessions[key]

    def ended_before(self) -> int:
        return self._ended_before

    async def lost(self, started: int) -> bool:
        """False: what this bus loses it loses with the process, and every worker with it."""
        return False

    def durable(self) -> bool:
        """False: nothing outlives the process."""
        return False

    async def renew_lease(self) -> None:
        """Nothing to note: the workers of this bus are this process."""

    async def alive(self, worker: str) -> bool:
        """True: a worker of this bus is this process, alive while it asks."""
        return True

    def session_count(self) -> int:
        """How many session records and endings this bus holds (for tests and monitoring)."""
        return len(self._sessions) + len(self._ended_sessions)

    # ------------------------------------------------------------------------ response streams

    async def open_stream(self, owner: str, max_events: int, epitaph: bytes = b"") -> str:
        """``epitaph`` is never needed: the recorder is this process, alive while followed."""
        return await self._streams.open_stream(owner, max_events)

    async def record(self, stream: str, data: bytes, *, final: bool = False) -> str:
        return await self._streams.record(stream, data, final=final)

    async def interrupt(self, stream: str) -> None:
        await self._streams.interrupt(stream)

    async def followed(self, stream: str) -> bool:
        return await self._streams.followed(stream)

    def follow(
        self, owner: str, after: str
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent] | None]:
        return self._streams.follow(owner, after)
