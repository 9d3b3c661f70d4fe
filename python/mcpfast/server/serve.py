"""Serving a `Server` over HTTP, embeddable in a nursery: with Hypercorn's Trio worker, or with
the native engine (`Config.engine`); or over stdio (`serve_stdio`)."""

from __future__ import annotations

import contextlib
import gc
import logging
import signal
from collections.abc import Awaitable, Callable
from functools import partial
from http import HTTPStatus
from typing import Any

import h11
import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.config import Sockets
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio.run import worker_serve
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.utils import wrap_app

from ..protocol.http import JSON
from ..protocol.http11 import refusal_body
from .config import Config
from .core.endpoint import Endpoint
from .core.lines import ephemeral_keys
from .engines.asgi import App
from .engines.native import NativeEngine, bound_urls, open_listeners
from .engines.sockets import BACKLOG
from .engines.stdio import serve_lines
from .framework.app import Server
from .ops.logs import configure_logging
from .ops.scheduling import fifo
from .state.bus import Bus
from .state.keys import KeyRing, load_keys
from .state.local_bus import LocalBus

log = logging.getLogger("mcpfast.serve")


def endpoint_for(server: Server, config: Config, keys: KeyRing | None = None) -> Endpoint:
    """The endpoint serving ``server``, with the keys of the environment unless given; with
    ``config.bus`` set, ``server`` gets that shared bus (in place of an in-process one); with
    ``config.log_level`` set, mcpfast's loggers get it (`logs.configure_logging`); with
    ``config.metrics_port`` set, the Prometheus meter provider is installed first (unless one
    is) and the metrics listener runs beside the endpoint (`Endpoint.companions`).

    Raises:
        ValueError: ``config.bus`` is no URL of a bus, or ``server`` was given a bus of its own
            (two choices of bus: the configured one would silently not be used).
        RuntimeError: ``config.metrics_port`` without the metrics extra installed.
    """
    if config.bus is not None:
        if server.bus is not None and not isinstance(server.bus, LocalBus):
            raise ValueError("the server has a bus of its own and Config.bus names another")
        server.bus = bus_from_url(config.bus)
    configure_logging(config)
    if config.hosts() is None:
        log.warning(
            "any Host is answered (allowed_hosts is open on %s): browser Origins are refused "
            "unless allowed_origins lists them; set allowed_hosts to the names clients use",
            config.host,
        )
    return _observed(server, config, keys if keys is not None else load_keys())


def _observed(server: Server, config: Config, keys: KeyRing) -> Endpoint:
    """The endpoint serving ``server`` (over HTTP or lines), with the metrics listener beside
    it when ``config.metrics_port`` is set (the Prometheus meter provider installed first).

    Raises:
        RuntimeError: ``config.metrics_port`` without the metrics extra installed.
    """
    if config.metrics_port is None:
        return Endpoint(server, config, keys)
    from .ops.metrics_listener import install_meter_provider, serve_metrics

    install_meter_provider()  # before the endpoint, which decides on telemetry
    endpoint = Endpoint(server, config, keys)
    endpoint.companions.append(partial(serve_metrics, config, endpoint.probes))
    return endpoint


BUS_SCHEMES = (
    "redis",
    "rediss",
    "unix",
    "redis+sentinel",
    "rediss+sentinel",
    "redis+cluster",
    "rediss+cluster",
)


def bus_from_url(url: str) -> Bus:
    """The shared bus a URL names: `RedisBus` for one Redis (``redis://``, ``rediss://``,
    ``unix://``), a primary found through Sentinel (``redis+sentinel://``) or a Cluster
    (``redis+cluster://``); the forms are `state.redis_connect`'s.

    Raises:
        ValueError: another scheme, or the Redis extra (coredis) is not installed.
    """
    scheme = url.partition("://")[0].lower()
    if scheme not in BUS_SCHEMES:
        raise ValueError(f"unknown bus {url!r}: expected a redis:// URL")
    try:
        from .state.redis_bus import RedisBus
    except ImportError as exc:  # coredis is the `redis` extra
        raise ValueError(
            f"the Redis bus needs coredis: pip install 'mcpfast[redis]' ({exc})"
        ) from None
    return RedisBus(url)


def asgi_app(server: Server, config: Config | None = None, keys: KeyRing | None = None) -> App:
    """The ASGI application serving ``server`` at ``config.path`` (both eras)."""
    return App(endpoint_for(server, config or Config(), keys))


def hypercorn_config(config: Config) -> HypercornConfig:
    """Hypercorn settings for our limits (the native engine's: docs/reference/limits.md's table).

    h11 refuses (431) a head, chunk-size line or trailer section still incomplete past
    ``h11_max_incomplete_size`` bytes: ``max_header_bytes`` plus the blank line that ends a
    head, so that it never refuses a head the native engine takes; a complete head over the
    limit, and the header count, are the ASGI adapter's checks. ``keep_alive_timeout`` bounds
    the wait for a request and its whole head (Hypercorn's idle timer runs until the head is
    in); the adapter bounds the body. Hypercorn's own ``read_timeout`` is off: it bounds every
    read of the connection, so it would cut a response stream whose client sends nothing."""
    hc = HypercornConfig()
    host = f"[{config.host}]" if ":" in config.host else config.host
    hc.bind = [f"{host}:{config.port}"]
    hc.backlog = BACKLOG  # the native engine's (Hypercorn's own is 100)
    hc.h11_max_incomplete_size = config.max_header_bytes + 3
    hc.keep_alive_timeout = config.read_timeout_seconds
    hc.read_timeout = None
    hc.accesslog = None
    hc.errorlog = "-"
    hc.graceful_timeout = config.graceful_seconds
    return hc


_REASONS = {431: "request head too large"}


async def _send_error_response(self: H11Protocol, status_code: int) -> None:
    """What Hypercorn answers for a request h11 refuses (a head over its size, a malformed
    head), with the native engine's JSON-RPC body instead of an empty one."""
    reason = _REASONS.get(status_code) or HTTPStatus(status_code).phrase.lower()
    body = refusal_body(reason)
    headers = [
        (b"content-type", JSON),
        (b"content-length", b"%d" % len(body)),
        (b"connection", b"close"),
        *self.config.response_headers("h11"),
    ]
    await self._send_h11_event(h11.Response(status_code=status_code, headers=headers))
    await self._send_h11_event(h11.Data(data=body))
    await self._send_h11_event(h11.EndOfMessage())


H11Protocol._send_error_response = _send_error_response  # type: ignore[method-assign]

_read_data = TCPServer._read_data


async def _read_until_closed(self: TCPServer) -> None:
    """Hypercorn's read loop, then the connection closed at once when the client has closed
    it: Hypercorn would leave it in CLOSE-WAIT until its keep-alive timer
    (``read_timeout_seconds``) ran out, the timer's task holding the connection open."""
    await _read_data(self)
    await self.idle_task.stop()
    await self.stream.aclose()


TCPServer._read_data = _read_until_closed  # type: ignore[method-assign]


def _closing(
    trigger: Callable[[], Awaitable[None]], closing: trio.Event
) -> Callable[[], Awaitable[None]]:
    """``trigger``, then tell the endpoint: its long-lived streams end with the server."""

    async def shutdown() -> None:
        await trigger()
        closing.set()

    return shutdown


async def until_signal() -> None:
    """Return at the first SIGTERM or SIGINT: the shutdown trigger of ``mcpfast serve``."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            return


async def serve(
    server: Server,
    config: Config | None = None,
    *,
    keys: KeyRing | None = None,
    reuse_port: bool = False,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
    **overrides: Any,
) -> None:
    """Serve over HTTP until cancelled; ``nursery.start(serve, ...)`` returns the bound URLs.

    ``overrides`` set `Config` fields (``host=``, ``port=``, ...). ``reuse_port`` lets several
    processes listen on one port. When ``shutdown_trigger`` returns (e.g. `until_signal`),
    either engine drains alike: readiness turns 503 and the listening socket closes at once
    (new connections are refused), a response in progress says ``Connection: close``, idle
    connections close, streams end (their clients resume elsewhere), and requests in flight get
    ``config.graceful_seconds`` to finish. While it runs, Trio's batches run in the order
    ``config.scheduling`` says, in the whole process (`ops.scheduling.fifo`).
    """
    config = config or Config()
    if overrides:
        config = Config(
            **{**{f: getattr(config, f) for f in config.__struct_fields__}, **overrides}
        )
    endpoint = endpoint_for(server, config, keys)
    if shutdown_trigger is not None:
        shutdown_trigger = _closing(shutdown_trigger, endpoint.closing)
    # What start-up built lives as long as the server: keep it out of the collector's
    # generations so that collections triggered by request garbage stay cheap.
    gc.freeze()
    with fifo() if config.scheduling == "fifo" else contextlib.nullcontext():
        await _serve_http(endpoint, config, reuse_port, shutdown_trigger, task_status)


async def _serve_http(
    endpoint: Endpoint,
    config: Config,
    reuse_port: bool,
    shutdown_trigger: Callable[[], Awaitable[None]] | None,
    task_status: trio.TaskStatus[list[str]],
) -> None:
    """`serve`'s engine, Hypercorn's or the native one, serving ``endpoint``."""
    if config.engine == "native":
        listeners = await open_listeners(config, reuse_port=reuse_port)
        async with trio.open_nursery() as nursery:
            engine = NativeEngine(endpoint)
            await nursery.start(engine.serve, listeners, shutdown_trigger)
            task_status.started(bound_urls(listeners))
        return
    hc = hypercorn_config(config)
    sockets = None
    if reuse_port:  # bound here: Hypercorn would set SO_REUSEPORT only for its own workers
        listeners = await open_listeners(config, reuse_port=True)
        sockets = Sockets([], [listener.sock for listener in listeners], [])
    app = wrap_app(App(endpoint), hc.wsgi_max_body_size, "asgi")  # type: ignore[arg-type]
    await worker_serve(
        app, hc, sockets=sockets, shutdown_trigger=shutdown_trigger, task_status=task_status
    )


async def serve_stdio(
    server: Server,
    config: Config | None = None,
    *,
    stdin: trio.abc.ReceiveStream | None = None,
    stdout: trio.abc.SendStream | None = None,
) -> None:
    """Serve ``server`` on stdin/stdout (the process's own unless given) until stdin closes or
    SIGTERM arrives, with keys of its own (`core.lines.ephemeral_keys`): protocol lines only
    on stdout, logs on stderr (`engines.stdio.serve_lines`); with ``config.metrics_port`` set,
    the metrics listener runs beside it, as over HTTP.

    Raises:
        RuntimeError: ``config.metrics_port`` without the metrics extra installed.
    """
    endpoint = _observed(server, config or Config(), ephemeral_keys())
    await serve_lines(endpoint, stdin, stdout)
