"""The notification calls of a `Client`: resource subscriptions (legacy), the modern era's
``subscriptions/listen`` stream (each notification emptying the cached results it makes stale),
and ``notifications/roots/list_changed`` (legacy)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .tasks import TASKS

if TYPE_CHECKING:
    from .peer import Peer
    from .transport import ModernTransport, Transport

__all__ = ["NotificationCalls"]


class NotificationCalls:
    """The notification methods `Client` has (it provides what they call)."""

    if TYPE_CHECKING:
        connection: Transport
        peer: Peer

        @property
        def era(self) -> str: ...

        async def request(
            self,
            method: str,
            params: dict[str, Any] | None = None,
            *,
            meta: dict[str, Any] | None = None,
            extensions: dict[str, Any] | None = None,
        ) -> Any: ...

        def _heard(self, method: str, params: dict[str, Any]) -> None: ...

        def _modern(self, what: str) -> ModernTransport: ...

    async def subscribe(self, uri: str) -> None:
        """``resources/subscribe`` (legacy; updates arrive on the GET stream)."""
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """``subscriptions/listen`` (modern era, HTTP or stdio): yields the stream's
        notifications, beginning with the acknowledgement; each one also empties the cached
        results it makes stale. ``task_ids`` declares the tasks extension for this request.
        Over HTTP, a stream the server ends (its ``notifications/cancelled`` and result pass
        through) or that breaks is followed by a new ``subscriptions/listen`` for as long as
        the block lasts, after `protocol.backoff`'s waits (at least a 503's ``Retry-After``);
        each new stream begins with its own acknowledgement. Leaving the block closes the
        stream (over stdio, with ``notifications/cancelled``)."""
        notifications: dict[str, Any] = {}
        if tools:
            notifications["toolsListChanged"] = True
        if prompts:
            notifications["promptsListChanged"] = True
        if resources:
            notifications["resourcesListChanged"] = True
        if resource_uris:
            notifications["resourceSubscriptions"] = list(resource_uris)
        if task_ids:
            notifications["taskIds"] = list(task_ids)
        async with self._modern("subscriptions/listen").stream(
            "subscriptions/listen",
            {"notifications": notifications},
            extensions=TASKS if task_ids else None,
        ) as events:
            yield self._hearing(events)

    async def _hearing(
        self, events: AsyncIterator[dict[str, Any]]
    ) -> AsyncIterator[dict[str, Any]]:
        """A listen stream's messages, each notification emptying the cache it makes stale."""
        async for event in events:
            if isinstance(event.get("method"), str):
                params = event.get("params")
                self._heard(event["method"], params if isinstance(params, dict) else {})
            yield event

    async def notify_roots_changed(self) -> None:
        """Tell the server the client's roots changed (``notifications/roots/list_changed``).

        A legacy session declares ``roots.listChanged`` when ``on_roots`` is given, and must
        send this whenever the roots it lists change. Nothing is sent in the modern era (it
        has no such notification: every request asks for the roots afresh) nor when no roots
        were declared.
        """
        if self.era != "legacy" or self.peer.on_roots is None:
            return
        await self.connection.notify("notifications/roots/list_changed")
