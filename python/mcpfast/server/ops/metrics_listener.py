"""The metrics listener (``Config.metrics_port``): a small HTTP/1.1 listener of its own (h11 on
Trio, one request per connection) serving ``/metrics`` in Prometheus text format (or
OpenMetrics, as the scraper's ``Accept`` asks: `prometheus_client` formats it) and the health
paths (`health.Probes`). It runs beside the endpoint, in its background nursery
(`Endpoint.companions`: `serve.endpoint_for` adds it), so it answers through a graceful
shutdown (``/readyz``: 503) until the process is done.

The metrics are what OpenTelemetry records through its API: when no ``MeterProvider`` is
installed, `install_meter_provider` installs the SDK's with a `PrometheusMetricReader`; one
installed already (by the application) is kept, and whatever it feeds to `prometheus_client`'s
default registry is served. With several workers, each takes the first free port of
``metrics_port`` .. ``metrics_port + workers - 1`` (each worker's metrics are its own: scrape
every port; Prometheus sums them).

Idle and slow clients cannot starve the probes: a request head has `_HEAD_SECONDS`, and at
`_MAX_CONNECTIONS` the connection that has waited longest for its head is closed to make room
(`engines.room.Room`, the native engine's policy). ``/metrics`` answers only the ``Host`` names
the listener's bind answers (`Config.hosts`: a DNS-rebinding page cannot read it); the health
paths answer any, as on the main listener (a probe names the pod's address).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import h11
import trio

from ...protocol.http import host_allowed
from ..config import Config
from ..core.health import NO_STORE, Probes
from ..engines.room import Room
from ..engines.sockets import Listener, Socket, open_listeners

log = logging.getLogger("mcpfast.metrics")

METRICS_EXTRA = "pip install 'mcpfast[metrics]'"
METRICS_PATH = "/metrics"
_MAX_HEAD = 16 * 1024
_HEAD_SECONDS = 2.0
"""How long a client has for its whole request head (a probe's is one packet)."""
_SWEEPS_PER_HEAD = 4
_WRITE_SECONDS = 10.0
_MAX_CONNECTIONS = 256

Answer = tuple[int, bytes, bytes]
"""An HTTP status, a body and its content type."""


def metrics_missing() -> str | None:
    """Why ``--metrics-port`` cannot work here (the extra is not installed), else None."""
    try:
        import opentelemetry.exporter.prometheus
        import opentelemetry.sdk.metrics  # noqa: F401
        import prometheus_client  # noqa: F401
    except ImportError as exc:
        return f"the metrics endpoint needs the metrics extra: {METRICS_EXTRA} ({exc})"
    return None


def install_meter_provider() -> bool:
    """Install the SDK's ``MeterProvider`` with a Prometheus reader, unless a provider is
    installed already; whether this installed it.

    Raises:
        RuntimeError: the metrics extra is not installed.
    """
    missing = metrics_missing()
    if missing is not None:
        raise RuntimeError(missing)
    from opentelemetry import metrics
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.metrics._internal import _ProxyMeterProvider  # the "none set" default
    from opentelemetry.sdk.metrics import MeterProvider

    if not isinstance(metrics.get_meter_provider(), _ProxyMeterProvider):
        return False
    metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    return True


async def serve_metrics(
    config: Config, probes: Probes, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED
) -> None:
    """Serve ``/metrics`` and the health paths until cancelled; started with the listener's
    URL. Several workers: the first free port of the range (none free: logged, not served).

    Raises:
        OSError: one worker, and ``config.metrics_port`` cannot be listened on.
        RuntimeError: the metrics extra is not installed.
    """
    install_meter_provider()
    listeners = await _listen(config)
    if not listeners:
        log.error(
            "no free metrics port in %s: this worker's metrics are not served", _range(config)
        )
        task_status.started("")
        return
    host, port = listeners[0].sock.getsockname()[:2]
    hosts = config.hosts(config.metrics_address)
    room: Room[_Client] = Room(_MAX_CONNECTIONS)

    def answer(request: h11.Request) -> Answer:
        return _answer(request, hosts, probes)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_sweep, room)
            for listener in listeners:
                nursery.start_soon(_accept, listener, room, answer, nursery)
            task_status.started(
                f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
            )
    finally:
        for listener in listeners:
            listener.close()


def _range(config: Config) -> range:
    assert config.metrics_port is not None
    if config.workers == 1 or config.metrics_port == 0:
        return range(config.metrics_port, config.metrics_port + 1)
    return range(config.metrics_port, config.metrics_port + config.workers)


async def _listen(config: Config) -> list[Listener]:
    """The listeners on the first port of `_range` that is free ([] when none, several)."""
    ports = _range(config)
    for port in ports:
        try:
            return await open_listeners(config.metrics_address, port)
        except OSError as exc:
            if len(ports) == 1:
                raise OSError(
                    exc.errno, f"metrics port {config.metrics_address}:{port}: {exc.strerror}"
                ) from None
    return []


class _Client:
    """One connection; `Room` cuts it to make room or past its head's deadline."""

    __slots__ = ("sock",)

    def __init__(self, sock: Socket) -> None:
        self.sock = sock

    def cut(self) -> None:
        self.sock.close()


async def _sweep(room: Room[_Client]) -> None:
    """Close the connections whose head is not in after `_HEAD_SECONDS` (up to 1.25x)."""
    while True:
        await trio.sleep(_HEAD_SECONDS / _SWEEPS_PER_HEAD)
        room.tick += 1
        room.expire(_SWEEPS_PER_HEAD)


async def _accept(
    listener: Listener,
    room: Room[_Client],
    answer: Callable[[h11.Request], Answer],
    nursery: trio.Nursery,
) -> None:
    while True:
        client = _Client(await room.accept(listener))
        nursery.start_soon(_serve, client, room, answer)


async def _serve(
    client: _Client, room: Room[_Client], answer: Callable[[h11.Request], Answer]
) -> None:
    """Read one request (its head waiting in ``room``), answer it, close."""
    try:
        room.heads[client] = room.tick
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        request = await _request(client.sock, conn)
        room.heads.pop(client, None)
        if request is not None:
            with trio.move_on_after(_WRITE_SECONDS):
                await client.sock.send_all(_response(conn, request, answer))
    except (h11.ProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        room.heads.pop(client, None)
        client.cut()
        room.leave()


def _response(
    conn: h11.Connection, request: h11.Request, answer: Callable[[h11.Request], Answer]
) -> bytes:
    if request.method not in (b"GET", b"HEAD"):
        status, body, kind = 405, b"", b"text/plain"
    else:
        status, body, kind = answer(request)
    headers = [
        (b"content-type", kind),
        (b"content-length", b"%d" % len(body)),
        (b"connection", b"close"),
        NO_STORE,
    ]
    data = conn.send(h11.Response(status_code=status, headers=headers)) or b""
    if request.method != b"HEAD" and body:
        data += conn.send(h11.Data(data=body)) or b""
    return data + (conn.send(h11.EndOfMessage()) or b"")


async def _request(sock: Socket, conn: h11.Connection) -> h11.Request | None:
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await sock.receive(8192))
            continue
        return event if isinstance(event, h11.Request) else None


def _answer(request: h11.Request, hosts: frozenset[str] | None, probes: Probes) -> Answer:
    """The answer to a GET or HEAD: a probe (any ``Host``), else, for a ``Host`` among
    ``hosts`` (None: any), the metrics or 404; for another ``Host``, 403."""
    path = request.target.decode("latin-1").partition("?")[0]
    if path in probes.paths:
        status, body = probes.status(path)
        return status, body, b"application/json"
    fields = dict(request.headers)
    host = fields.get(b"host")
    if not host_allowed(hosts, host.decode("latin-1") if host is not None else None):
        return 403, b"Forbidden: Host not allowed", b"text/plain"
    if path == METRICS_PATH:
        from prometheus_client import REGISTRY
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(fields.get(b"accept", b"").decode("latin-1"))
        return 200, encoder(REGISTRY), content_type.encode()
    return 404, b"", b"text/plain"
