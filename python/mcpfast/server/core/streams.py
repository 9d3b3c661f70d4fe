"""The long-lived SSE streams: a legacy session's GET stream (`standalone`), a request's stream
resumed by GET + ``Last-Event-ID`` (`resume`), and the modern era's ``subscriptions/listen``
(`listen`). Each runs until the client goes away (`ClientGone`), the server shuts down or (GET
and listen) it has lived `Config.max_stream_seconds` (the stream is closed, for the client to
reconnect and resume).

An idle GET or listen stream costs one task and a few small objects: the bus delivers to its
`Outlet`, which wakes the task (`Outlet.run`) waiting for the client to go away; a keepalive
goes out after ``keepalive_seconds`` without an event. Where the transport can run the rest of a
stream on its own (`detach`: the native engine), the request's handler returns once the stream
is open, and nothing of the request (its head, body, parsed params) is kept meanwhile."""

from __future__ import annotations

import contextlib
import math
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import msgspec
import trio

from ... import jsonrpc
from ...errors import BusUnavailable
from ...types import SERVER_INFO_KEY, SUBSCRIPTION_KEY, TASKS_EXTENSION, ListenParams
from ...versions import has_polling
from ..framework.call import Call
from ..framework.registry import LIST_TOPICS, resource_topic
from ..seams import ClientGone, Responder
from ..state.bus import Attachment, Event, StreamEvent
from ..state.sessions import Session, principal
from ..state.task_records import task_topic
from .runtime import Runtime

T = TypeVar("T")

BACKLOG = 256
"""The most events an `Outlet` holds for a stream that has not written them yet; one more and
the bus drops the subscription (the stream ends, for the client to reconnect and resume), as
`LocalBus` drops a subscriber that falls behind."""


async def pump(
    responder: Responder,
    seconds: float,
    receive: Callable[[], Awaitable[T]],
    deliver: Callable[[T], Awaitable[None]],
) -> None:
    """Pass what ``receive`` returns to ``deliver``, with a keepalive comment after each
    ``seconds`` without one, until ``receive`` raises ``StopAsyncIteration`` or
    ``trio.EndOfChannel`` (a subscription the bus ended: it fell behind, or lost its
    connection), then return."""
    while True:
        with trio.move_on_after(seconds) as idle:
            try:
                item = await receive()
            except (StopAsyncIteration, trio.EndOfChannel):
                return
        if idle.cancelled_caught:
            await responder.keepalive()
        else:
            await deliver(item)


class Outlet:
    """An idle stream's side of the bus (a `bus.Sink`) and its forwarding loop (`run`), in one
    small object: events wait here, at most `BACKLOG`, for the stream's task, which each one
    wakes. Subclasses say what an event becomes (`deliver`) and how the stream ends (`end`)."""

    __slots__ = ("ended", "pending", "responder", "runtime", "subscription", "wake")

    def __init__(self, runtime: Runtime, responder: Responder) -> None:
        self.runtime = runtime
        self.responder = responder
        self.pending: list[Event] = []
        self.ended = False
        """The bus closed it: what is pending goes out, then the stream ends."""
        self.wake: trio.CancelScope | None = None
        """The scope of the task's wait, cancelled to wake it."""
        self.subscription: Attachment | None = None

    async def subscribe(self, topics: list[str]) -> None:
        """Take the events of ``topics`` (in place of the topics before, which are left once
        the new ones are subscribed to, so that nothing published meanwhile is missed).

        Raises:
            BusUnavailable: the bus cannot subscribe now.
        """
        old = self.subscription
        self.subscription = await self.runtime.bus.attach(topics, self)
        if old is not None:
            await old.aclose()

    async def unsubscribe(self) -> None:
        if self.subscription is not None:
            subscription, self.subscription = self.subscription, None
            await subscription.aclose()

    def send_nowait(self, item: Event) -> None:
        if self.ended:
            raise trio.ClosedResourceError
        if len(self.pending) >= BACKLOG:
            raise trio.WouldBlock
        self.pending.append(item)
        self.poke()

    def close(self) -> None:
        self.ended = True
        self.poke()

    def poke(self) -> None:
        """Wake the stream's task, if it waits."""
        if self.wake is not None:
            self.wake.cancel()

    async def deliver(self, event: Event) -> None:
        """Send ``event`` on the stream."""
        raise NotImplementedError

    async def end(self) -> None:
        """End the stream on the server's initiative (shutdown, or the bus dropped it)."""
        await self.responder.close()

    async def run(self) -> None:
        """The rest of the stream, once open: `deliver` what arrives, with a keepalive comment
        after each ``keepalive_seconds`` without one, waiting meanwhile for the client to go
        away; when the bus closed the outlet (after what it holds), the server shuts down or
        the stream has lived ``max_stream_seconds``, `end`. Unsubscribed at the end whatever
        happens; the bus becoming unavailable within the stream ends it.

        Raises:
            ClientGone: the client went away.
        """
        runtime = self.runtime
        responder = self.responder
        keepalive = runtime.config.keepalive_seconds
        lifetime = runtime.config.max_stream_seconds
        closing = runtime.closing
        runtime.wake_on_closing(self)
        try:
            deadline = trio.current_time() + keepalive
            ends = math.inf if lifetime is None else trio.current_time() + lifetime
            while self.pending or not (
                self.ended or closing.is_set() or trio.current_time() >= ends
            ):
                if self.pending:
                    events, self.pending = self.pending, []
                    for event in events:
                        await self.deliver(event)
                    deadline = trio.current_time() + keepalive
                    continue
                with trio.CancelScope(deadline=min(deadline, ends)) as self.wake:
                    await responder.wait_disconnect()
                    raise ClientGone
                self.wake = None
                if trio.current_time() >= deadline:
                    await responder.keepalive()
                    deadline = trio.current_time() + keepalive
            await self.end()
        except BusUnavailable:
            await responder.close()
        finally:
            self.wake = None
            runtime.forget(self)
            await self.unsubscribe()


async def detach(responder: Responder, run: Callable[[], Awaitable[None]]) -> None:
    """Run ``run``, the rest of an open stream: in a task of the connection's once the caller
    (the request's handler) returns, where the transport offers that (``responder.detach``:
    what ``run`` raises then ends the connection), else now (what it raises comes out here)."""
    detaching = getattr(responder, "detach", None)
    if detaching is None:
        await run()
    else:
        await detaching(run)


def session_topics(session: Session) -> list[str]:
    """The bus topics of a legacy session's GET stream."""
    topics = [*LIST_TOPICS.values(), "session/" + session.id, "notify/" + session.id]
    topics.extend(resource_topic(uri) for uri in session.subscriptions)
    return topics


async def resume(
    runtime: Runtime,
    session: Session,
    last: str,
    events: AsyncIterator[StreamEvent],
    responder: Responder,
) -> None:
    """Resume a request's stream: the events after ``last``, then live ones, until the
    request's response went out (or the handler cut this connection too: `close_stream`).
    Only that stream's events: nothing of the standalone stream or of other requests. The bus
    becoming unavailable within the stream ends it.

    Raises:
        ClientGone: the client went away.
    """
    await responder.open_stream()
    if has_polling(session.version):
        # the client's own resumption point again, carrying ``retry`` for the next poll
        await responder.send(b"", event_id=last, retry_ms=runtime.config.sse_retry_ms)

    async def deliver(event: StreamEvent) -> None:
        event_id, data = event
        if data:
            await responder.send(data, event_id=event_id)

    keepalive = runtime.config.keepalive_seconds
    with contextlib.suppress(BusUnavailable):
        await runtime.linger(
            responder, lambda: pump(responder, keepalive, events.__anext__, deliver)
        )
    await responder.close()


async def standalone(
    runtime: Runtime,
    session: Session,
    last: str,
    responder: Responder,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """The session's notifications that belong to no request (list changes, updates of
    subscribed resources, elicitation completions): the GET stream over HTTP, the pipe
    itself over stdio. Subscribed before ``task_status.started()``, the priming event and
    the replay, so nothing published meanwhile is missed (what both the replay and the
    subscription hold goes out once). The rest of the stream is `detach`ed; the bus becoming
    unavailable within the stream ends it.

    Each notification goes on one stream of the session only (2025-06-18 on: "MUST send each
    message on only one stream"): the first of its GET streams to take it claims it on the bus
    (`Bus.claim`). A stream's event ids name the stream (``<bus event id>_<stream>``), so a
    client resuming it with ``Last-Event-ID`` gets what that stream missed and nothing that
    another stream of the session carried.

    Raises:
        ClientGone: the client went away (the subscription is ended).
        BusUnavailable: before the stream opened.
    """
    bus = runtime.bus
    config = runtime.config
    after, _, name = last.partition(STREAM_MARK)
    stream = _Standalone(runtime, responder, session.id, name or secrets.token_hex(6))
    await stream.subscribe(session_topics(session))
    session = await _caught_up(runtime, session, stream)
    task_status.started()
    opened = False
    try:
        await responder.open_stream()
        opened = True
        if has_polling(session.version):
            head = await bus.head()
            await responder.send(
                b"", event_id=head + STREAM_MARK + stream.name, retry_ms=config.sse_retry_ms
            )
        if after:
            timer = runtime.server.bus_timer
            topics = session_topics(session)
            replay = (
                bus.replay(after, topics) if timer is None else timer.replay(bus, after, topics)
            )
            replayed = stream.replayed = set()
            for event_id, topic, note in await replay or ():
                if not topic.startswith("session/"):
                    await stream.send(event_id, note)
                replayed.add(event_id)
    except BaseException as exc:
        await stream.unsubscribe()
        if opened and isinstance(exc, BusUnavailable):
            await responder.close()  # within the stream: it ends
            return
        raise
    await detach(responder, stream.run)


async def _caught_up(runtime: Runtime, session: Session, stream: Outlet) -> Session:
    """``session`` with the subscriptions its record holds now that ``stream`` follows the
    session's changes: a subscribe between this request reading the session and the stream
    subscribing announced its change to no one here (its record is saved before the news).
    While the bus is away the stream goes on with what it has."""
    try:
        record = await runtime.bus.load_session(session.id)
    except BusUnavailable:
        return session
    if record is None or record.subscriptions in (None, session.subscriptions):
        return session
    session = msgspec.structs.replace(session, subscriptions=record.subscriptions)
    await stream.subscribe(session_topics(session))
    return session


class _Standalone(Outlet):
    """A GET stream's `Outlet`: the session's notifications, each claimed for this stream."""

    __slots__ = ("name", "replayed", "session_id")

    def __init__(self, runtime: Runtime, responder: Responder, session_id: str, name: str) -> None:
        super().__init__(runtime, responder)
        self.session_id = session_id
        self.name = name
        self.replayed: set[str] | None = None
        """The ids of the events the resumption replayed (not sent again)."""

    async def send(self, event_id: str, note: dict[str, Any]) -> None:
        bus = self.runtime.bus
        if await bus.claim(self.session_id, event_id, self.name) == self.name:
            data = _note(note)
            await self.responder.send(data, event_id=event_id + STREAM_MARK + self.name)

    async def deliver(self, event: Event) -> None:
        event_id, topic, note = event
        if topic.startswith("session/"):  # subscriptions changed: follow the new topics
            await self.subscribe(session_topics(msgspec.convert(note["params"], Session)))
        elif self.replayed is None or event_id not in self.replayed:
            await self.send(event_id, note)


STREAM_MARK = "_"
"""Between the bus event id and the stream's name in a GET stream's event ids."""


_LIST_FLAGS = (
    ("toolsListChanged", "tools"),
    ("promptsListChanged", "prompts"),
    ("resourcesListChanged", "resources"),
)


async def listen(runtime: Runtime, call: Call, p: ListenParams, responder: Responder) -> None:
    """``subscriptions/listen`` (2026-07-28): acknowledge what is honoured, then forward the
    requested notifications, each tagged with the listen request's id (`detach`ed once
    acknowledged).

    Raises:
        ClientGone: the client went away.
    """
    wanted = p.notifications
    honoured: dict[str, Any] = {}
    topics = []
    for flag, kind in _LIST_FLAGS:
        if getattr(wanted, flag):
            honoured[flag] = True
            topics.append(LIST_TOPICS[kind])
    if wanted.resourceSubscriptions:
        honoured["resourceSubscriptions"] = wanted.resourceSubscriptions
        topics.extend(resource_topic(uri) for uri in wanted.resourceSubscriptions)
    if wanted.taskIds and call.declares_extension(TASKS_EXTENSION):
        honoured["taskIds"] = wanted.taskIds
        owner = principal()
        topics.extend(task_topic(task_id, owner) for task_id in wanted.taskIds)
    tag = {SUBSCRIPTION_KEY: call.id}
    ack = jsonrpc.notification(
        "notifications/subscriptions/acknowledged", {"_meta": tag, "notifications": honoured}
    )
    stream = _Listen(runtime, responder, call.id, tag)
    await stream.subscribe(topics)
    try:
        await responder.open_stream()
        await responder.send(ack)
    except BaseException:
        await stream.unsubscribe()
        raise
    await detach(responder, stream.run)


class _Listen(Outlet):
    """A ``subscriptions/listen`` stream's `Outlet`: notifications tagged with its id."""

    __slots__ = ("id", "tag")

    def __init__(
        self, runtime: Runtime, responder: Responder, id_: Any, tag: dict[str, Any]
    ) -> None:
        super().__init__(runtime, responder)
        self.id = id_
        self.tag = tag

    async def deliver(self, event: Event) -> None:
        note = event[2]
        params = dict(note.get("params") or {})
        params["_meta"] = self.tag
        await self.responder.send(jsonrpc.notification(note["method"], params))

    async def end(self) -> None:
        why = SHUTDOWN if self.runtime.closing.is_set() else AGED
        await end_listen(self.runtime, self.id, self.responder, why)


SHUTDOWN = "The server is shutting down"
AGED = "The stream reached its time limit (max_stream_seconds): listen again"
"""The reasons a server gives for ending a listen stream (`end_listen`)."""


async def end_listen(runtime: Runtime, id_: Any, responder: Responder, why: str = SHUTDOWN) -> None:
    """The server ends a ``subscriptions/listen`` stream on its own initiative (shutdown,
    `Config.max_stream_seconds`, ``why``):
    ``notifications/cancelled`` for the listen request (cancellation.mdx: a server MUST send it
    when it tears a subscription down, its only use by a server), then the graceful-closure
    response (subscriptions.mdx: SHOULD), both tagged with the subscription id, then the end of
    the stream. A transport that closes without them is an abrupt drop (clients reconnect)."""
    tag = {SUBSCRIPTION_KEY: id_}
    cancelled = {"requestId": id_, "reason": why, "_meta": tag}
    await responder.send(jsonrpc.notification("notifications/cancelled", cancelled))
    info = runtime.server.info
    result = {
        "resultType": "complete",
        "_meta": {**tag, SERVER_INFO_KEY: {"name": info.name, "version": info.version}},
    }
    await responder.send(jsonrpc.result(id_, result))
    await responder.close()


def _note(note: dict[str, Any]) -> bytes:
    return jsonrpc.notification(note["method"], note.get("params"))
