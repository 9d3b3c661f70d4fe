"""The standalone GET stream of a legacy session (`GetStream`): the notifications and requests
the server sends outside any call, resumed with ``Last-Event-ID`` after a drop, and carried on
into the session that renews one that expired."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import trio

from ..errors import MCPError, TransportError
from ..protocol import sse
from ..protocol.session import SESSION_HEADER, ClientSession, ResumePoint
from .http import sse_messages

log = logging.getLogger("mcpfast.client")


class GetStream:
    """The GET stream of the session ``state`` keeps: messages go to ``deliver``; when the
    session expired (a 404 for its id), ``renew`` gets the expired id, and the stream goes on in
    the new session."""

    def __init__(
        self,
        client: httpx2.AsyncClient,
        url: str,
        state: ClientSession,
        max_message_bytes: int,
        renew: Callable[[str | None], Awaitable[None]],
        deliver: Callable[[Any], Awaitable[None]],
    ) -> None:
        self.client = client
        self.url = url
        self.state = state
        self.max_message_bytes = max_message_bytes
        self._renew = renew
        self._deliver = deliver
        self.running = False
        """Whether `run` runs (it ended, or never started, when not)."""
        self._attempt: trio.CancelScope | None = None

    def reconnect(self) -> bool:
        """Reconnect at once, in the session renewed meanwhile: True when a connection is up or
        being made; False when the stream is between attempts or not running."""
        if self._attempt is None:
            return False
        self._attempt.cancel()
        return True

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The standalone GET stream: notifications and requests not tied to a call; resumed
        with ``Last-Event-ID`` after a drop, waiting ``retry`` first; given up after 5 failed
        attempts in a row, or at once on 405 (or a 404 that is not the session's expiry, or an
        event over ``max_message_bytes``, logged as a warning on ``mcpfast.client``). A
        404 for the session renews it (``renew``), and the stream goes on in the new one.
        Reports started once the first attempt has its answer, so that nothing the server
        sends after connect is missed."""
        self.running = True
        try:
            await self._loop(task_status)
        finally:
            self.running = False

    async def _loop(self, task_status: trio.TaskStatus[None]) -> None:
        point = ResumePoint()
        failures = 0
        started = False
        while failures < 5:
            session = self.state.id
            headers = self.state.stream_headers(point.last_event_id)
            wait = True
            with trio.CancelScope() as attempt:
                self._attempt = attempt
                try:
                    async with self.client.stream(
                        "GET", self.url, headers=headers, timeout=httpx2.Timeout(None, connect=10)
                    ) as response:
                        if not started:
                            started = True
                            task_status.started()
                        if response.status_code == 404 and self.state.expired(
                            404, headers.get(SESSION_HEADER)
                        ):
                            self._attempt = None
                            try:
                                await self._renew(session)
                            except (TransportError, MCPError):
                                failures += 1
                            point = ResumePoint()
                            continue
                        if response.status_code in (404, 405):
                            return
                        if response.status_code != 200:
                            failures += 1
                        else:
                            failures = 0
                            await self._read(response, point)
                except TransportError as exc:  # an event over max_message_bytes
                    log.warning("the GET stream of %s is given up: %s", self.url, exc)
                    return
                except httpx2.TransportError:
                    failures += 1
                    if not started:
                        started = True
                        task_status.started()
            self._attempt = None
            if attempt.cancelled_caught:  # the session was renewed: reconnect in it at once
                point, wait = ResumePoint(), False
            if wait:
                await trio.sleep(point.delay)

    async def _read(self, response: httpx2.Response, point: ResumePoint) -> None:
        decoder = sse.Decoder(self.max_message_bytes)
        async for messages in sse_messages(response, decoder):
            point.follow(decoder.parser)
            for message in messages:
                await self._deliver(message)
