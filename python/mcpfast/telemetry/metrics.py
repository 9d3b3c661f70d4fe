"""The instruments: the MCP semantic-convention histograms, and the engine's own
(``mcpfast.*``) an operator needs: requests by method, era and status; open connections (the
native engine) or HTTP exchanges in flight (ASGI, where connections are not visible) and SSE
streams, by engine; bus publish/replay latency, by operation and bus kind; whether the bus
serves, and whether its store keeps its data across a restart; tasks by state; tool calls
waiting for a concurrency cap and their wait, deadline expiries, and the requests refused
before running by reason (a rate limit, a cap, shedding) and key kind (issue 27)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol
from weakref import WeakSet

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from . import semconv

REQUESTS = "mcpfast.server.requests"
CONNECTIONS = "mcpfast.server.connections"
EXCHANGES = "mcpfast.server.exchanges"
STREAMS = "mcpfast.server.streams"
BUS_DURATION = "mcpfast.bus.operation.duration"
TASKS = "mcpfast.server.tasks"
BUS_AVAILABLE = "mcpfast.bus.available"
BUS_PERSISTENT = "mcpfast.bus.persistent"
QUEUED = "mcpfast.server.queued"
QUEUE_WAIT = "mcpfast.server.queue.wait"
DEADLINES = "mcpfast.server.deadlines"
RATE_LIMITED = "mcpfast.server.rate_limited"
QUEUED_EVENT = "mcpfast.queued"
"""The span event of a call that waited for a concurrency cap (`QUEUE_CAP`, `QUEUE_WAITED`)."""
DEADLINE_EVENT = "mcpfast.deadline"
"""The span event of a tool's call cancelled at its deadline (`DEADLINE_SECONDS`)."""
QUEUE_CAP = "mcpfast.cap"
QUEUE_WAITED = "mcpfast.waited_s"
DEADLINE_SECONDS = "mcpfast.timeout_s"
LIMIT_REASON = "mcpfast.limit.reason"
"""``rate`` (a bucket was empty), or ``unavailable`` (the shared buckets were away: refused,
fail-closed); ``concurrency`` (a cap's queue full or timed out), ``overloaded`` (shed)."""
LIMIT_KEY = "mcpfast.limit.key"
"""The bucket that refused: ``principal`` (the server's rate), ``method``, ``tool``; ``store``
for ``unavailable``; the cap that refused (``tool``, ``principal``); ``worker`` when shed."""

ERA = "mcpfast.era"
STATUS = "mcpfast.status"
"""``ok``, or the request's ``error.type``."""
ENGINE = "mcpfast.engine"
BUS_OPERATION = "mcpfast.bus.operation"
"""``publish`` or ``replay``."""
BUS_KIND = "mcpfast.bus.kind"
"""``local`` or ``redis``."""
TASK_STATUS = "mcpfast.task.status"

_KINDS = {"LocalBus": "local", "RedisBus": "redis"}


def bus_kind(bus: object) -> str:
    """``local`` or ``redis`` (`BUS_KIND`); another bus is named by its class."""
    name = type(bus).__name__
    return _KINDS.get(name, name)


NATIVE = {ENGINE: "native"}
"""The attributes of the native engine's connections and streams."""
ASGI = {ENGINE: "asgi"}
"""The attributes of the ASGI engine's exchanges and streams."""


class Instruments:
    """Every instrument mcpfast records, made once per meter."""

    def __init__(self, meter: Meter) -> None:
        buckets = semconv.DURATION_BUCKETS

        self.server_operation = meter.create_histogram(
            semconv.SERVER_OPERATION_DURATION,
            unit="s",
            description="MCP request or notification duration as observed on the receiver.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.client_operation = meter.create_histogram(
            semconv.CLIENT_OPERATION_DURATION,
            unit="s",
            description="MCP request duration as observed on the sender.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.server_session = meter.create_histogram(
            semconv.SERVER_SESSION_DURATION,
            unit="s",
            description="The duration of the MCP session as observed on the MCP server.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.client_session = meter.create_histogram(
            semconv.CLIENT_SESSION_DURATION,
            unit="s",
            description="The duration of the MCP session as observed on the MCP client.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.requests = meter.create_counter(
            REQUESTS, unit="{request}", description="MCP requests served, by method, era, status."
        )
        self.connections = meter.create_up_down_counter(
            CONNECTIONS, unit="{connection}", description="Open HTTP connections (native engine)."
        )
        self.exchanges = meter.create_up_down_counter(
            EXCHANGES,
            unit="{exchange}",
            description="HTTP requests being answered (ASGI engine: it sees no connections).",
        )
        self.streams = meter.create_up_down_counter(
            STREAMS, unit="{stream}", description="Open SSE response streams."
        )
        self.bus = meter.create_histogram(
            BUS_DURATION,
            unit="s",
            description="Bus publish and replay latency.",
            explicit_bucket_boundaries_advisory=(
                0.0005,
                0.001,
                0.0025,
                0.005,
                0.01,
                0.025,
                0.05,
                0.1,
                0.25,
                1,
            ),
        )
        self.tasks = meter.create_up_down_counter(
            TASKS, unit="{task}", description="Tasks held by this worker, by status."
        )
        self.queued = meter.create_up_down_counter(
            QUEUED,
            unit="{call}",
            description="Tool calls waiting for a concurrency cap's slot, by cap (mcpfast.cap).",
        )
        self.queue_wait = meter.create_histogram(
            QUEUE_WAIT,
            unit="s",
            description="How long tool calls waited for a concurrency cap's slot, by cap.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.deadlines = meter.create_counter(
            DEADLINES, unit="{call}", description="Tool calls cancelled at their deadline."
        )
        self.rate_limited = meter.create_counter(
            RATE_LIMITED,
            unit="{request}",
            description="Requests refused before running (-32023: a rate limit, a concurrency "
            "cap, shedding), by reason and key kind.",
        )
        self.buses: WeakSet[Ready] = WeakSet()
        """The buses served here (`health.Probes` adds its own), read at each collection."""
        meter.create_observable_gauge(
            BUS_AVAILABLE,
            callbacks=[self._bus_available],
            unit="1",
            description="1 while the bus serves, 0 while it is away (the worker is degraded).",
        )
        meter.create_observable_gauge(
            BUS_PERSISTENT,
            callbacks=[self._bus_persistent],
            unit="1",
            description="1 when the bus's store keeps its data across a restart, 0 when not "
            "(a restart loses what no worker holds a copy of); absent while unknown.",
        )

    def _bus_available(self, options: CallbackOptions) -> Iterator[Observation]:
        for bus in list(self.buses):
            yield Observation(int(bus.ready()), {BUS_KIND: bus_kind(bus)})

    def _bus_persistent(self, options: CallbackOptions) -> Iterator[Observation]:
        for bus in list(self.buses):
            durable = bus.durable()
            if durable is not None:
                yield Observation(int(durable), {BUS_KIND: bus_kind(bus)})


class Ready(Protocol):
    """What the bus gauges read of a bus."""

    def ready(self) -> bool: ...

    def durable(self) -> bool | None: ...
