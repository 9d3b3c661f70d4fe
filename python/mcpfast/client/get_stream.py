"""The standalone GET stream of a legacy session (`GetStream`): the notifications and requests
the server sends outside any call, resumed with ``Last-Event-ID`` after a drop, reconnected for
as long as the session lives (`protocol.backoff`), and carried on into the session that renews
one that expired."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any

import httpx2
import trio

from ..errors import MCPError, TransportError
from ..protocol import sse
from ..protocol.backoff import Backoff, retry_after, retryable
from ..protocol.session import SESSION_HEADER, ClientSession, ResumePoint
from .http import sse_messages

log = logging.getLogger("mcpfast.client")


class _Outcome(Enum):
    """How one attempt at the stream ended."""

    DROPPED = "dropped"  # it was open, then ended or broke: resume after the server's retry
    FAILED = "failed"  # no stream: no answer, or one worth another attempt (`retryable`)
    EXPIRED = "expired"  # 404 for the session: renew it, then reconnect at once
    STOP = "stop"  # an answer no later attempt would change, or an event over the cap


class GetStream:
    """The GET stream of the session ``state`` keeps: messages go to ``deliver``; when the
    session expired (a 404 for its id), ``renew`` gets the expired id, and the stream goes on in
    the new session. ``random`` gives the jitter of the waits (in [0, 1))."""

    def __init__(
        self,
        client: httpx2.AsyncClient,
        url: str,
        state: ClientSession,
        max_message_bytes: int,
        renew: Callable[[str | None], Awaitable[None]],
        deliver: Callable[[Any], Awaitable[None]],
        random: Callable[[], float] = random.random,
    ) -> None:
        self.client = client
        self.url = url
        self.state = state
        self.max_message_bytes = max_message_bytes
        self._renew = renew
        self._deliver = deliver
        self._random = random
        self.running = False
        """Whether `run` runs (it ended, or never started, when not)."""
        self._attempt: trio.CancelScope | None = None
        """The attempt or wait under way (None while the stream renews the session)."""
        self._floor = 0.0
        """The least wait the last failed attempt's answer asked for (``Retry-After``)."""
        self._task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
        """`run`'s, until the first attempt has its answer (`_answered`)."""

    def reconnect(self) -> bool:
        """Reconnect at once, in the session renewed meanwhile (an attempt under way, or a wait
        between attempts, is cut short): False when the stream is not running, or is the one
        renewing the session."""
        if self._attempt is None:
            return False
        self._attempt.cancel()
        return True

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The standalone GET stream: notifications and requests not tied to a call; resumed
        with ``Last-Event-ID`` after a drop (waiting the server's ``retry`` first), and tried
        again after every failure (no answer, a 5xx, 408, 425 or 429) for as long as the
        session lives, waiting as `protocol.backoff.Backoff` says and at least the answer's
        ``Retry-After``. A 404 for the session renews it (``renew``, tried again the same way
        while it fails), and the stream goes on in the new one. It ends on 405, on any other
        4xx, or on an event over ``max_message_bytes`` (the last two logged as a warning on
        ``mcpfast.client``), else only when its nursery is cancelled (the client closes).
        Reports started once the first attempt has its answer, so that nothing the server
        sends after connect is missed."""
        self.running = True
        self._task_status = task_status
        try:
            await self._loop()
        finally:
            self.running = False

    async def _loop(self) -> None:
        point = ResumePoint()
        backoff = Backoff()
        expired: str | None = None
        renewing = False
        while True:
            if renewing:
                renewing = not await self._renewed(expired)
                if renewing:  # the next renewal is of whatever the failed one left
                    expired = self.state.id
                    await self._wait(backoff.delay(self._random()))
                    continue
                point = ResumePoint()
            expired = self.state.id
            outcome = _Outcome.FAILED
            with trio.CancelScope() as attempt:
                self._attempt = attempt
                outcome = await self._connect(point)
            self._attempt = None
            self._answered()
            if attempt.cancelled_caught:  # the session was renewed: reconnect in it at once
                point = ResumePoint()
            elif outcome is _Outcome.STOP:
                return
            elif outcome is _Outcome.EXPIRED:
                renewing = True
            else:
                if outcome is _Outcome.DROPPED:
                    backoff.reset()
                    wait = point.delay
                else:
                    wait = backoff.delay(self._random(), self._floor)
                if not await self._wait(wait):  # the session was renewed meanwhile
                    point = ResumePoint()

    async def _renewed(self, expired: str | None) -> bool:
        """Renew the session whose id was ``expired``: whether it worked."""
        try:
            await self._renew(expired)
        except (TransportError, MCPError, httpx2.TransportError) as exc:
            log.info("renewing the session of %s failed (tried again): %s", self.url, exc)
            return False
        return True

    async def _wait(self, seconds: float) -> bool:
        """Wait ``seconds`` before the next attempt: False when `reconnect` cut it short."""
        with trio.CancelScope() as wait:
            self._attempt = wait
            await trio.sleep(seconds)
        self._attempt = None
        return not wait.cancelled_caught

    def _answered(self) -> None:
        """The first attempt has its answer (or failed): `run` reports started."""
        self._task_status.started()
        self._task_status = trio.TASK_STATUS_IGNORED

    async def _connect(self, point: ResumePoint) -> _Outcome:
        """One attempt: open the stream (resumed after ``point``) and read it until it ends."""
        headers = self.state.stream_headers(point.last_event_id)
        self._floor = 0.0
        opened = False
        try:
            async with self.client.stream(
                "GET", self.url, headers=headers, timeout=httpx2.Timeout(None, connect=10)
            ) as response:
                self._answered()
                status = response.status_code
                if status == 200:
                    opened = True
                    await self._read(response, point)
                    return _Outcome.DROPPED
                if self.state.expired(status, headers.get(SESSION_HEADER)):
                    return _Outcome.EXPIRED
                if retryable(status):
                    self._floor = retry_after(response.headers.get("retry-after"), time.time()) or 0
                    return _Outcome.FAILED
                if status not in (404, 405):
                    log.warning("the GET stream of %s is given up: HTTP %d", self.url, status)
                return _Outcome.STOP
        except TransportError as exc:  # an event over max_message_bytes
            log.warning("the GET stream of %s is given up: %s", self.url, exc)
            return _Outcome.STOP
        except httpx2.TransportError:
            return _Outcome.DROPPED if opened else _Outcome.FAILED

    async def _read(self, response: httpx2.Response, point: ResumePoint) -> None:
        decoder = sse.Decoder(self.max_message_bytes)
        async for messages in sse_messages(response, decoder):
            point.follow(decoder.parser)
            for message in messages:
                await self._deliver(message)
