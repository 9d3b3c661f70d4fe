"""What governs a worker's load (issue 27): concurrency caps with bounded queues, tool
deadlines, and load shedding. One `Governor` per endpoint (`Runtime.governor`); each rule here:

- **Caps** (`Governor.slots`): a tool's calls run at most ``ToolLimits.concurrency`` at once on
  a worker, and a principal's (`access.principal`: the token's subject and client, else the
  caller's address) at most ``Config.max_concurrent_per_principal``. A call that finds its cap
  full waits in that cap's queue (``Config.concurrency_queue`` at most) for
  ``Config.queue_timeout_seconds`` at most; a full queue or a wait that times out is
  `RateLimited` (``reason="concurrency"``, 429) and nothing ran. A principal's cap is
  forgotten once it is idle (nothing holds or awaits it), so the table stays bounded.
- **Deadlines** (`deadline`): a tool's own ``timeout``, else ``Config.tool_timeout_seconds``.
- **Shedding** (`Governor.shed`, `Governor.flight`): with ``Config.shed_in_flight``, a
  worker with that many tool calls in flight (run in their requests) refuses new requests;
  with ``Config.shed_latency_ms``, one whose recent tool-call latency (an average that decays
  by half each `HALF_LIFE` seconds without a sample) is above it does too: `RateLimited`
  (``reason="overloaded"``, 503), at the endpoint once the body is framed, before any params
  are decoded. Notifications, answers to the server's requests, open streams, health probes
  and what is already admitted go on.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar

import trio
from opentelemetry import trace

from ... import codec
from ...errors import RateLimited
from ...protocol.limits import ToolLimits
from ...telemetry import current, metrics
from ..access import principal
from ..config import Config
from ..framework.registry import ToolEntry

RETRY_AFTER_MS = 1000
"""What a refusal of a cap or of shedding asks the client to wait."""
HALF_LIFE = 1.0
"""Seconds without a sample that halve the recent latency (`Governor.overloaded`)."""
WEIGHT = 0.2
"""The weight of a new sample in the recent latency."""

TOOL = "tool"
PRINCIPAL = "principal"
"""The kinds of cap (the metrics' ``mcpfast.cap`` and ``mcpfast.limit.key`` attributes)."""


class Marks:
    """What the governor did to one request, for its access-log line (`access_log`): how long
    it waited for caps' slots, and the tool whose deadline it passed."""

    __slots__ = ("overran", "queued_ms")

    def __init__(self) -> None:
        self.queued_ms = 0.0
        self.overran: str | None = None


marks: ContextVar[Marks | None] = ContextVar("mcpfast_governor_marks", default=None)
"""The `Marks` of the request being served (set by the access log only: None, nothing noted)."""


def note_overran(tool: str, seconds: float) -> None:
    """Mark a tool's call cancelled at its deadline on the request's span and log line."""
    trace.get_current_span().add_event(
        metrics.DEADLINE_EVENT, {"gen_ai.tool.name": tool, metrics.DEADLINE_SECONDS: seconds}
    )
    noted = marks.get()
    if noted is not None:
        noted.overran = tool


def deadline(limits: ToolLimits, default: float | None) -> float | None:
    """The seconds a tool's call may run: its own ``timeout``, else ``default``; None: no
    deadline."""
    return limits.timeout if limits.timeout is not None else default


class Cap:
    """A cap: a `trio.CapacityLimiter` and how many calls wait for it."""

    __slots__ = ("limiter", "waiting")

    def __init__(self, size: int) -> None:
        self.limiter = trio.CapacityLimiter(size)
        self.waiting = 0

    @property
    def idle(self) -> bool:
        return self.waiting == 0 and self.limiter.borrowed_tokens == 0


class Governor:
    """One endpoint's caps, deadline default and shedding state (the module's rules)."""

    def __init__(self, config: Config) -> None:
        self.tool_timeout = config.tool_timeout_seconds
        self.per_principal = config.max_concurrent_per_principal
        self.queue = config.concurrency_queue
        self.queue_timeout = config.queue_timeout_seconds
        self.shed_in_flight = config.shed_in_flight
        self.shed_latency = (
            config.shed_latency_ms / 1000 if config.shed_latency_ms is not None else None
        )
        self.shedding = self.shed_in_flight is not None or self.shed_latency is not None
        """Whether shedding is on (else `flight` and `overloaded` are never called)."""
        self.idle = not self.shedding and self.tool_timeout is None and self.per_principal is None
        """Nothing is set server-wide: a tool with no limits of its own runs ungoverned."""
        self.in_flight = 0
        self.latency = 0.0
        self._sampled_at = 0.0
        self._tools: dict[str, Cap] = {}
        self._principals: dict[str, Cap] = {}
        telemetry = current()
        self.instruments = telemetry.instruments if telemetry is not None else None

    def deadline(self, entry: ToolEntry) -> float | None:
        """The seconds ``entry``'s call may run (`deadline`)."""
        return deadline(entry.limits, self.tool_timeout)

    def capped(self, entry: ToolEntry) -> bool:
        """Whether a call of ``entry`` passes a cap (`slots`)."""
        return entry.limits.concurrency is not None or self.per_principal is not None

    @asynccontextmanager
    async def slots(self, entry: ToolEntry) -> AsyncIterator[None]:
        """Hold a slot of the caller's principal's cap, then one of the tool's, for the block.

        Raises:
            RateLimited: a cap's queue is full, or its wait timed out (nothing ran).
        """
        borrower = object()
        held: list[Cap] = []
        key = principal() if self.per_principal is not None else None
        try:
            if key is not None:
                cap = self._principals.get(key)
                if cap is None:
                    cap = self._principals[key] = Cap(self.per_principal or 1)
                await self._take(cap, borrower, PRINCIPAL, entry.definition.name)
                held.append(cap)
            size = entry.limits.concurrency
            if size is not None:
                name = entry.definition.name
                cap = self._tools.get(name)
                if cap is None:
                    cap = self._tools[name] = Cap(size)
                await self._take(cap, borrower, TOOL, name)
                held.append(cap)
            yield
        finally:
            for cap in held:
                cap.limiter.release_on_behalf_of(borrower)
            if key is not None and key in self._principals and self._principals[key].idle:
                del self._principals[key]  # forgotten once idle: the table stays bounded

    async def _take(self, cap: Cap, borrower: object, kind: str, tool: str) -> None:
        limiter = cap.limiter
        try:
            limiter.acquire_on_behalf_of_nowait(borrower)
            return
        except trio.WouldBlock:
            pass
        if cap.waiting >= self.queue:
            raise self._refused(kind, tool, "its queue is full", limiter.total_tokens)
        instruments = self.instruments
        attributes = {"mcpfast.cap": kind}
        cap.waiting += 1
        if instruments is not None:
            instruments.queued.add(1, attributes)
        started = trio.current_time()
        try:
            with trio.move_on_after(self.queue_timeout) as waited:
                await limiter.acquire_on_behalf_of(borrower)
        finally:
            cap.waiting -= 1
            waited_s = trio.current_time() - started
            if instruments is not None:
                instruments.queued.add(-1, attributes)
                instruments.queue_wait.record(waited_s, attributes)
            trace.get_current_span().add_event(
                metrics.QUEUED_EVENT, {metrics.QUEUE_CAP: kind, metrics.QUEUE_WAITED: waited_s}
            )
            noted = marks.get()
            if noted is not None:
                noted.queued_ms += waited_s * 1000
        if waited.cancelled_caught:
            raise self._refused(
                kind, tool, f"no slot within {self.queue_timeout:g} s", limiter.total_tokens
            )

    def _refused(self, kind: str, tool: str, why: str, size: float) -> RateLimited:
        self._count("concurrency", kind)
        whose = f"tool {tool!r}" if kind == TOOL else f"this caller's calls (calling {tool!r})"
        return RateLimited(
            f"Concurrency limit of {size:g} for {whose} reached: {why}",
            retry_after_ms=RETRY_AFTER_MS,
            limit=int(size),
            remaining=0,
            reason="concurrency",
        )

    def shed(self, messages: list[codec.Message]) -> RateLimited | None:
        """The refusal of a POST's ``messages`` while the worker is overloaded (`overloaded`),
        if one is a request; None: they go on (notifications, answers to the server's
        requests, and everything while not overloaded)."""
        if not any(message.kind == codec.KIND_REQUEST for message in messages):
            return None
        return self.overloaded()

    def overloaded(self) -> RateLimited | None:
        """The refusal of a new request while the worker is over a shedding bound, else None."""
        if self.shed_in_flight is not None and self.in_flight >= self.shed_in_flight:
            why = f"{self.in_flight} requests in flight"
        elif self.shed_latency is not None and self.recent_latency() > self.shed_latency:
            why = f"recent latency {self.recent_latency() * 1000:.0f} ms"
        else:
            return None
        self._count("overloaded", "worker")
        return RateLimited(
            f"The server is overloaded ({why}): retry later",
            retry_after_ms=RETRY_AFTER_MS,
            reason="overloaded",
            http_status=503,
        )

    def _count(self, reason: str, key: str) -> None:
        """Count a refusal in ``mcpfast.server.rate_limited`` (by reason and key kind)."""
        if self.instruments is not None:
            attributes = {metrics.LIMIT_REASON: reason, metrics.LIMIT_KEY: key}
            self.instruments.rate_limited.add(1, attributes)

    def recent_latency(self) -> float:
        """The recent latency of requests in seconds, halved each `HALF_LIFE` since the last
        sample (so a worker that shed everything is let serve again)."""
        idle = trio.current_time() - self._sampled_at
        return self.latency * math.pow(0.5, idle / HALF_LIFE)

    @contextmanager
    def flight(self) -> Iterator[None]:
        """Count an admitted request in flight, and sample its latency when it ends."""
        self.in_flight += 1
        started = trio.current_time()
        try:
            yield
        finally:
            self.in_flight -= 1
            now = trio.current_time()
            self.latency = (1 - WEIGHT) * self.recent_latency() + WEIGHT * (now - started)
            self._sampled_at = now
