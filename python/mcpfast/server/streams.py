"""The long-lived SSE streams, one keepalive pump under all three: a legacy session's GET stream
(`standalone`), a request's stream resumed by GET + ``Last-Event-ID`` (`resume`), and the modern
era's ``subscriptions/listen`` (`listen`). Each runs until the client goes away (`ClientGone`) or
the server shuts down (the stream is closed, for the client to reconnect and resume)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import msgspec
import trio

from .. import jsonrpc
from ..types import SERVER_INFO_KEY, SUBSCRIPTION_KEY, TASKS_EXTENSION, ListenParams
from .bus import StreamEvent
from .call import Call
from .registry import LIST_TOPICS, resource_topic
from .responder import Responder
from .runtime import Runtime
from .sessions import Session

T = TypeVar("T")


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
    Only that stream's events: nothing of the standalone stream or of other requests.

    Raises:
        ClientGone: the client went away.
    """
    await responder.open_stream()
    if session.version == "2025-11-25":
        # the client's own resumption point again, carrying ``retry`` for the next poll
        await responder.send(b"", event_id=last, retry_ms=runtime.config.sse_retry_ms)

    async def deliver(event: StreamEvent) -> None:
        event_id, data = event
        if data:
            await responder.send(data, event_id=event_id)

    keepalive = runtime.config.keepalive_seconds
    await runtime.linger(responder, lambda: pump(responder, keepalive, events.__anext__, deliver))
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
    subscription hold goes out once).

    Each notification goes on one stream of the session only (2025-06-18 on: "MUST send each
    message on only one stream"): the first of its GET streams to take it claims it on the bus
    (`Bus.claim`). A stream's event ids name the stream (``<bus event id>_<stream>``), so a
    client resuming it with ``Last-Event-ID`` gets what that stream missed and nothing that
    another stream of the session carried.

    Raises:
        ClientGone: the client went away (the subscription is ended).
    """
    bus = runtime.server.bus
    config = runtime.config
    after, _, name = last.partition(STREAM_MARK)
    name = name or secrets.token_hex(6)
    subscription = AsyncExitStack()
    events = await subscription.enter_async_context(bus.subscribe(session_topics(session)))
    task_status.started()
    try:
        await responder.open_stream()
        if session.version == "2025-11-25":
            head = await bus.head()
            await responder.send(
                b"", event_id=head + STREAM_MARK + name, retry_ms=config.sse_retry_ms
            )
        replayed: set[str] = set()

        async def send(event_id: str, note: dict[str, Any]) -> None:
            if await bus.claim(session.id, event_id, name) == name:
                await responder.send(_note(note), event_id=event_id + STREAM_MARK + name)

        if after:
            timer = runtime.server.bus_timer
            topics = session_topics(session)
            replay = (
                bus.replay(after, topics) if timer is None else timer.replay(bus, after, topics)
            )
            for event_id, topic, note in await replay or ():
                if not topic.startswith("session/"):
                    await send(event_id, note)
                replayed.add(event_id)

        async def receive() -> tuple[str, str, dict[str, Any]]:
            item: tuple[str, str, dict[str, Any]] = await events.receive()
            return item

        async def deliver(event: tuple[str, str, dict[str, Any]]) -> None:
            nonlocal events, subscription
            event_id, topic, note = event
            if topic.startswith("session/"):
                # subscriptions changed: follow the new topics, subscribed to before the old
                # subscription ends
                fresh = AsyncExitStack()
                changed = msgspec.convert(note["params"], Session)
                events = await fresh.enter_async_context(bus.subscribe(session_topics(changed)))
                await subscription.aclose()
                subscription = fresh
            elif event_id not in replayed:
                await send(event_id, note)

        await runtime.linger(
            responder, lambda: pump(responder, config.keepalive_seconds, receive, deliver)
        )
        await responder.close()  # the server shuts down
    finally:
        await subscription.aclose()


STREAM_MARK = "_"
"""Between the bus event id and the stream's name in a GET stream's event ids."""


_LIST_FLAGS = (
    ("toolsListChanged", "tools"),
    ("promptsListChanged", "prompts"),
    ("resourcesListChanged", "resources"),
)


async def listen(runtime: Runtime, call: Call, p: ListenParams, responder: Responder) -> None:
    """``subscriptions/listen`` (2026-07-28): acknowledge what is honoured, then forward the
    requested notifications, each tagged with the listen request's id.

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
        topics.extend("task/" + task_id for task_id in wanted.taskIds)
    tag = {SUBSCRIPTION_KEY: call.id}
    ack = jsonrpc.notification(
        "notifications/subscriptions/acknowledged", {"_meta": tag, "notifications": honoured}
    )
    async with runtime.server.bus.subscribe(topics) as events:
        await responder.open_stream()
        await responder.send(ack)

        async def deliver(event: tuple[str, str, dict[str, Any]]) -> None:
            note = event[2]
            params = dict(note.get("params") or {})
            params["_meta"] = tag
            await responder.send(jsonrpc.notification(note["method"], params))

        keepalive = runtime.config.keepalive_seconds
        await runtime.linger(responder, lambda: pump(responder, keepalive, events.receive, deliver))
        await end_listen(runtime, call.id, responder)  # the server shuts down


async def end_listen(runtime: Runtime, id_: Any, responder: Responder) -> None:
    """The server ends a ``subscriptions/listen`` stream on its own initiative (shutdown):
    ``notifications/cancelled`` for the listen request (cancellation.mdx: a server MUST send it
    when it tears a subscription down, its only use by a server), then the graceful-closure
    response (subscriptions.mdx: SHOULD), both tagged with the subscription id, then the end of
    the stream. A transport that closes without them is an abrupt drop (clients reconnect)."""
    tag = {SUBSCRIPTION_KEY: id_}
    cancelled = {"requestId": id_, "reason": "The server is shutting down", "_meta": tag}
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
