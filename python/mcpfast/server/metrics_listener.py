"""The metrics listener (``Config.metrics_port``): a small HTTP/1.1 listener of its own (h11 on
Trio, one request per connection) serving ``/metrics`` in Prometheus text format (or
OpenMetrics, as the scraper's ``Accept`` asks: `prometheus_client` formats it) and the health
paths (`health.Probes`). It runs in the `Endpoint`'s background nursery, so it answers through
a graceful shutdown (``/readyz``: 503) until the process is done.

The metrics are what OpenTelemetry records through its API: when no ``MeterProvider`` is
installed, `install_meter_provider` installs the SDK's with a `PrometheusMetricReader`; one
installed already (by the application) is kept, and whatever it feeds to `prometheus_client`'s
default registry is served. With several workers, each takes the first free port of
``metrics_port`` .. ``metrics_port + workers - 1`` (each worker's metrics are its own: scrape
every port; Prometheus sums them).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import h11
import trio

from .config import Config
from .health import NO_STORE, Probes

log = logging.getLogger("mcpfast.metrics")

METRICS_EXTRA = "pip install 'mcpfast[metrics]'"
METRICS_PATH = "/metrics"
_MAX_HEAD = 16 * 1024
_IO_SECONDS = 10.0
_MAX_CONNECTIONS = 32

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
    host, port = listeners[0].socket.getsockname()[:2]
    task_status.started(f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")
    limiter = trio.CapacityLimiter(_MAX_CONNECTIONS)
    handler = _connections(lambda target, accept: _answer(target, accept, probes), limiter)
    await trio.serve_listeners(handler, listeners)


def _range(config: Config) -> range:
    assert config.metrics_port is not None
    if config.workers == 1 or config.metrics_port == 0:
        return range(config.metrics_port, config.metrics_port + 1)
    return range(config.metrics_port, config.metrics_port + config.workers)


async def _listen(config: Config) -> list[trio.SocketListener]:
    """The listeners on the first port of `_range` that is free ([] when none, several)."""
    ports = _range(config)
    for port in ports:
        try:
            return await trio.open_tcp_listeners(port, host=config.metrics_address)
        except OSError as exc:
            if len(ports) == 1:
                raise OSError(
                    exc.errno, f"metrics port {config.metrics_address}:{port}: {exc.strerror}"
                ) from None
    return []


def _connections(
    answer: Callable[[str, str], Answer], limiter: trio.CapacityLimiter
) -> Callable[[trio.SocketStream], Awaitable[None]]:
    async def serve(stream: trio.SocketStream) -> None:
        async with limiter, stream:
            try:
                await _exchange(stream, answer)
            except (h11.ProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    return serve


async def _exchange(stream: trio.SocketStream, answer: Callable[[str, str], Answer]) -> None:
    """Read one request (within `_IO_SECONDS`), answer it, close."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
    request = None
    with trio.move_on_after(_IO_SECONDS):
        request = await _request(stream, conn)
    if request is None:
        return
    if request.method not in (b"GET", b"HEAD"):
        status, body, kind = 405, b"", b"text/plain"
    else:
        accept = dict(request.headers).get(b"accept", b"").decode("latin-1")
        status, body, kind = answer(request.target.decode("latin-1"), accept)
    headers = [
        (b"content-type", kind),
        (b"content-length", b"%d" % len(body)),
        (b"connection", b"close"),
        NO_STORE,
    ]
    data = conn.send(h11.Response(status_code=status, headers=headers)) or b""
    if request.method != b"HEAD" and body:
        data += conn.send(h11.Data(data=body)) or b""
    data += conn.send(h11.EndOfMessage()) or b""
    with trio.move_on_after(_IO_SECONDS):
        await stream.send_all(data)


async def _request(stream: trio.SocketStream, conn: h11.Connection) -> h11.Request | None:
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(8192))
            continue
        return event if isinstance(event, h11.Request) else None


def _answer(target: str, accept: str, probes: Probes) -> Answer:
    """The answer at ``target``: the metrics, a probe, else 404."""
    path = target.partition("?")[0]
    if path == METRICS_PATH:
        from prometheus_client import REGISTRY
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(accept)
        return 200, encoder(REGISTRY), content_type.encode()
    if path in probes.paths:
        status, body = probes.status(path)
        return status, body, b"application/json"
    return 404, b"", b"text/plain"
