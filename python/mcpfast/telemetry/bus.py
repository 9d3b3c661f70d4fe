"""Bus latency: how long a publish or a replay of the bus takes, into the bus histogram
(`metrics.BUS_DURATION`), by operation (`metrics.BUS_OPERATION`) and bus kind.

A `BusTimer` exists only when metrics are live (`timer`); the callers hold None otherwise and
call the bus directly.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from opentelemetry.metrics import Histogram

from . import metrics
from .semconv import ERROR_TYPE
from .state import current

T = TypeVar("T", covariant=True)
R = TypeVar("R")


class Publishing(Protocol):
    """A bus as the timer sees it to publish (`mcpfast.server.state.bus.Bus`)."""

    async def publish(self, topic: str, notification: dict[str, Any]) -> str: ...


class Replaying(Protocol[T]):
    """A bus as the timer sees it to replay (`mcpfast.server.state.bus.Bus`)."""

    async def replay(self, after: str, topics: Iterable[str]) -> T: ...


class BusTimer:
    """Times one bus's publishes and replays; a failed one is recorded with its
    ``error.type`` (the exception's class), and re-raised."""

    __slots__ = ("_histogram", "_publish", "_replay")

    def __init__(self, histogram: Histogram, kind: str) -> None:
        self._histogram = histogram
        self._publish = {metrics.BUS_OPERATION: "publish", metrics.BUS_KIND: kind}
        self._replay = {metrics.BUS_OPERATION: "replay", metrics.BUS_KIND: kind}

    async def publish(self, bus: Publishing, topic: str, notification: dict[str, Any]) -> str:
        """``bus.publish``, timed."""
        start = time.perf_counter()
        try:
            event_id = await bus.publish(topic, notification)
        except Exception as exc:
            self._record(start, self._publish, exc)
            raise
        self._record(start, self._publish, None)
        return event_id

    async def replay(self, bus: Replaying[R], after: str, topics: Iterable[str]) -> R:
        """``bus.replay``, timed."""
        start = time.perf_counter()
        try:
            events = await bus.replay(after, topics)
        except Exception as exc:
            self._record(start, self._replay, exc)
            raise
        self._record(start, self._replay, None)
        return events

    def _record(self, start: float, attrs: dict[str, str], exc: Exception | None) -> None:
        if exc is not None:
            attrs = {**attrs, ERROR_TYPE: type(exc).__qualname__}
        self._histogram.record(time.perf_counter() - start, attrs)


def timer(bus: object) -> BusTimer | None:
    """The timer of ``bus`` when metrics are live (`state.current`), else None."""
    telemetry = current()
    if telemetry is None or telemetry.instruments is None:
        return None
    return BusTimer(telemetry.instruments.bus, metrics.bus_kind(bus))
