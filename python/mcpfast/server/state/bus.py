"""The event bus: how change notifications reach listening streams, where the events of
resumable response streams are kept, what it knows of legacy sessions (`SessionRecord`), the
signals between workers (a client's answer, a cancellation or a task's input reaching the worker
that waits for it) and the records of tasks. Everything several workers must share goes through
it. `LocalBus` (`local_bus`), in process, serves the `Endpoint`s of one process (what it holds
is lost when the process ends); `RedisBus` (`redis_bus`) is the shared one, for several workers
and hosts. `listen` keeps a worker's listener on a signal channel through the bus's outages."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

import trio

from ...errors import BusUnavailable
from ...protocol.limits import Rate, Verdict
from .sessions import SessionRecord

Event = tuple[str, str, dict[str, Any]]
"""An event id, a topic and the notification's ``{"method": ..., "params": ...}``."""

RELISTEN_SECONDS = 1.0
RELISTEN_FIRST_SECONDS = 0.02
"""How long `listen` waits before listening again after the bus was away."""

WORKER_LEASE_SECONDS = 3.0
"""How long a worker's lease lasts unrenewed: a worker whose lease lapsed is dead (`Bus.alive`),
and what it owned (a task, a response stream followed elsewhere) ends failed."""
LEASE_RENEW_SECONDS = 1.0
"""How often a serving endpoint renews its worker's lease (`Bus.renew_lease`); a stream or task
of a dead worker ends within `WORKER_LEASE_SECONDS` + 2 × this (5 s) of its last renewal."""

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

    async def take_tokens(self, principal: str, names: list[str], rates: list[Rate]) -> Verdict:
        """One token from each of ``principal``'s buckets ``names`` (under ``rates``), or none
        if any is empty (`protocol.limits.take`): in this worker (`buckets.LocalBuckets`), or
        for every worker sharing the store (one atomic step, the store's clock)."""
        ...

    async def load_session(self, session_id: str, fresh: bool = False) -> SessionRecord | None:
        """The unexpired record of a legacy session, if any; ``fresh``: as the store holds it
        now, never a worker's copy (which may not have heard yet of a save by another
        worker)."""
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

    async def lost(self, started: int) -> bool:
        """Whether a session started at ``started`` (Unix seconds) of which the bus holds no
        record may have held state the bus lost, that no surviving copy gave back (waits, a
        few seconds at most, for the copies to be given back first); False for a bus in
        process."""
        ...

    def durable(self) -> bool | None:
        """Whether what the bus holds survives a restart of its store (None: unknown)."""
        ...

    # Leases: each worker's liveness, on the bus.

    async def renew_lease(self) -> None:
        """Note that this worker is alive for `WORKER_LEASE_SECONDS` more (every serving
        endpoint does, every `LEASE_RENEW_SECONDS`)."""
        ...

    async def alive(self, worker: str) -> bool:
        """Whether the worker ``worker`` (a `worker` id) renewed its lease lately; always True
        for a bus in process (its workers are this process)."""
        ...

    # Resumable response streams (the SSE stream answering one legacy POST): every event is
    # recorded, so a client that lost the connection resumes with GET + ``Last-Event-ID``.
    # Each stream has its own bounded log; event ids are unique across all streams.

    async def open_stream(self, owner: str, max_events: int, epitaph: bytes = b"") -> str:
        """Start recording a stream of ``owner`` (a session id) that keeps its last
        ``max_events`` events; returns the stream id. ``epitaph`` is the event a follower gets
        last if this worker dies before the final event (`follow`)."""
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
        logged then live, ending after the final event, at an `interrupt`, or with the
        stream's epitaph within a few seconds (`LEASE_RENEW_SECONDS` + `WORKER_LEASE_SECONDS`)
        once its recorder died. None when ``owner`` has no (unexpired) stream holding that
        id."""
        ...


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
