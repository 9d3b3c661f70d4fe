"""The event bus: how change notifications reach listening streams, where the events of
resumable response streams are kept, what it knows of legacy sessions (`SessionRecord`), the
signals between workers (a client's answer, a cancellation or a task's input reaching the worker
that waits for it) and the records of tasks. Everything several workers must share goes through
it. `LocalBus`, in process, serves the `Endpoint`s of one process (what it holds is lost when
the process ends); `RedisBus` (`redis_bus`) is the shared one, for several workers and hosts.
`listen` keeps a worker's listener on a signal channel through the bus's outages."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, TypeVar

import trio

from ...errors import BusUnavailable
from .once import OnceClaims
from .sessions import SessionRecord

Event = tuple[str, str, dict[str, Any]]
"""An event id, a topic and the notification's ``{"method": ..., "params": ...}``."""

_SWEEP_SECONDS = 60.0
"""How often `LocalBus` forgets expired session and task records, at most."""

RELISTEN_SECONDS = 1.0
RELISTEN_FIRST_SECONDS = 0.02
"""How long `listen` waits before listening again after the bus was away."""

T_contra = TypeVar("T_contra", contravariant=True)


class Sink(Protocol[T_contra]):
    """Where a subscription's events go (a `trio.MemorySendChannel` is one)."""

    def send_nowait(self, item: T_contra) -> None:
        """Take ``item`` at once.

        Raises:
            trio.WouldBlock: the sink is full (the bus then closes it).
            trio.ClosedResourceError: the sink is closed.
        """
        ...

    def close(self) -> None:
        """No more items will come (the subscriber fell behind, or the bus lost them)."""
        ...


class Attachment(Protocol):
    """A sink's subscription (`Bus.attach`)."""

    async def aclose(self) -> None:
        """Stop delivering to the sink (which is not closed)."""
        ...


StreamEvent = tuple[str, bytes]
"""An event of a response stream: its id and its data (a JSON-RPC message; empty for a priming
event or for the end of a stream that has no response)."""


class Bus(Protocol):
    """Publish/subscribe on topics, a bounded log of what was published (for `Last-Event-ID`
    resumption), recorded response streams, session records with expiry, signals between
    workers, and task records: everything of a server that several workers must share.

    Every method may raise `BusUnavailable` when the backing store is away (never waiting for
    it without a bound); `LocalBus` never does."""

    worker: str
    """This worker's id on the bus: where what is meant for this process is signalled."""

    def attached(self) -> AbstractAsyncContextManager[None]:
        """Hold the bus's connections and background tasks while open (the serving `Endpoint`
        enters it); the other methods are called only inside it."""
        ...

    def ready(self) -> bool:
        """Whether the bus can serve now (readiness probes): cheap, no I/O, never raises;
        True for a bus in process, while its connection is up for a shared one."""
        ...

    async def signal(self, channel: str, payload: bytes) -> int:
        """Hand ``payload`` to whoever listens on ``channel`` now (`signals`), in any worker:
        not logged, at most once, dropped when nobody listens; returns how many listeners
        (at least) it reached, 0 when none."""
        ...

    def signals(
        self, channel: str
    ) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[bytes]]:
        """What is signalled on ``channel`` while this is open; a listener that falls behind
        its buffer loses what does not fit (signals are never waited for)."""
        ...

    async def save_task(
        self, task_id: str, record: bytes, ttl_seconds: float, owner: str | None
    ) -> None:
        """Keep a task's record (replacing the previous one) for ``ttl_seconds``; ``owner`` (a
        legacy session id) lists it in `task_ids`. Durable once this returns."""
        ...

    async def load_task(self, task_id: str) -> bytes | None:
        """The unexpired record of a task, if any."""
        ...

    async def task_ids(self, owner: str) -> list[str]:
        """The ids of ``owner``'s unexpired tasks, oldest first."""
        ...

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

    async def attach(self, topics: Iterable[str], sink: Sink[Event]) -> Attachment:
        """Deliver the events of ``topics`` to ``sink`` until the attachment is closed (what
        `subscribe` does with a memory channel, for a stream that keeps no task waiting on
        one). A sink that is full, or the bus losing its connection, closes the sink.

        Raises:
            BusUnavailable: the bus cannot subscribe now.
        """
        ...

    async def claim(self, owner: str, event_id: str, claimant: str) -> str:
        """Who delivers event ``event_id`` to ``owner`` (a session): ``claimant`` when it is
        the first to ask, else the one that was (so that each notification goes on one stream
        of a session only)."""
        ...

    async def claim_once(self, owner: str, key: str, seconds: float) -> bool:
        """Claim ``key`` of ``owner`` for ``seconds``: True the first time, False while an
        earlier claim of it holds, on every worker sharing the bus (one atomic step). A bus in
        process also holds at most ``max_claims_per_owner`` unexpired claims of one owner: past
        them it answers False too, to that owner only (`OnceClaims`). For what must be refused
        when seen twice (a DPoP proof's ``jti``)."""
        ...

    async def load_session(self, session_id: str) -> SessionRecord | None:
        """The unexpired record of a legacy session, if any."""
        ...

    async def save_session(
        self, session_id: str, record: SessionRecord, ttl_seconds: float
    ) -> None:
        """Keep ``record`` for ``ttl_seconds``, replacing the session's previous one."""
        ...

    def ended_before(self) -> int:
        """Every session started at or before this time (Unix seconds) has ended: endings
        forgotten before they expired, as a watermark; 0 for none."""
        ...

    # Resumable response streams (the SSE stream answering one legacy POST): every event is
    # recorded, so a client that lost the connection resumes with GET + ``Last-Event-ID``.
    # Each stream has its own bounded log; event ids are unique across all streams.

    async def open_stream(self, owner: str, max_events: int) -> str:
        """Start recording a stream of ``owner`` (a session id) that keeps its last
        ``max_events`` events; returns the stream id."""
        ...

    async def record(self, stream: str, data: bytes, *, final: bool = False) -> str:
        """Log an event of ``stream`` and hand it to the stream's followers; returns its id.
        ``final`` marks the last event (the response), after which followers stop."""
        ...

    async def interrupt(self, stream: str) -> None:
        """End the connections following ``stream`` now; the stream goes on (clients resume)."""
        ...

    async def followed(self, stream: str) -> bool:
        """Whether a client follows ``stream`` now (it resumed it with ``Last-Event-ID``)."""
        ...

    def follow(
        self, owner: str, after: str
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent] | None]:
        """The stream holding event id ``after``: an iterator of its events after that one,
        logged then live, ending after the final event or at an `interrupt`. None when ``owner``
        has no (unexpired) stream holding that id."""
        ...


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


async def listen(
    bus: Bus,
    channel: str,
    handle: Callable[[bytes], Awaitable[None]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Hand each payload signalled on ``channel`` to ``handle``, one at a time, until cancelled;
    started once listening (or once the bus was found away). While the bus is away
    (`BusUnavailable`, from it or from ``handle``, or its channel ended) this listens again
    again, after 20 ms at first and twice as long each time up to `RELISTEN_SECONDS`; what is
    signalled meanwhile is lost, as signals are (a sender learns it: `Bus.signal` returns 0)."""
    started = False
    delay = RELISTEN_FIRST_SECONDS
    while True:
        try:
            async with bus.signals(channel) as payloads:
                delay = RELISTEN_FIRST_SECONDS
                if not started:
                    started = True
                    task_status.started()
                async for payload in payloads:
                    await handle(payload)
        except BusUnavailable:
            pass
        if not started:
            started = True
            task_status.started()
        await trio.sleep(delay)
        delay = min(RELISTEN_SECONDS, 2 * delay)


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
    listeners on its channel. `claim_once` keeps at most ``max_claims_per_owner`` unexpired
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
    ) -> None:
        self.worker = secrets.token_hex(4)
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
        self._streams: OrderedDict[str, _Stream] = OrderedDict()
        self._ended: OrderedDict[str, float] = OrderedDict()  # ended streams, oldest first
        self._stream_seq = 0
        self._max_streams = max_streams
        self._retention = stream_retention_seconds

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

    async def load_session(self, session_id: str) -> SessionRecord | None:
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

    def session_count(self) -> int:
        """How many session records and endings this bus holds (for tests and monitoring)."""
        return len(self._sessions) + len(self._ended_sessions)

    # ------------------------------------------------------------------------ response streams
    # A stream event id is "<stream id>.<n>", n from one counter for all streams (so an event of
    # a stream already forgotten still gets a unique id). Ended streams are kept for
    # ``stream_retention_seconds``; past ``max_streams`` the oldest go, ended ones first.

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
