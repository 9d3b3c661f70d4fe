"""Serving a `Server` over HTTP, embeddable in a nursery: with Hypercorn's Trio worker, or with
the native engine (`Config.engine`)."""

from __future__ import annotations

import gc
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from .app import Server
from .config import Config
from .endpoint import Endpoint
from .engines.asgi import App
from .engines.native import NativeEngine, bound_urls, open_listeners
from .keys import KeyRing, load_keys


def endpoint_for(server: Server, config: Config, keys: KeyRing | None = None) -> Endpoint:
    """The endpoint serving ``server``, with the keys of the environment unless given."""
    return Endpoint(server, config, keys if keys is not None else load_keys())


def asgi_app(server: Server, config: Config | None = None, keys: KeyRing | None = None) -> App:
    """The ASGI application serving ``server`` at ``config.path`` (both eras)."""
    return App(endpoint_for(server, config or Config(), keys))


def hypercorn_config(config: Config) -> HypercornConfig:
    """Hypercorn settings for our limits: header size, keep-alive, no access log."""
    hc = HypercornConfig()
    host = f"[{config.host}]" if ":" in config.host else config.host
    hc.bind = [f"{host}:{config.port}"]
    hc.h11_max_incomplete_size = config.max_header_bytes
    hc.keep_alive_timeout = config.read_timeout_seconds
    hc.read_timeout = int(config.read_timeout_seconds)
    hc.accesslog = None
    hc.errorlog = "-"
    hc.workers = config.workers
    hc.graceful_timeout = config.graceful_seconds
    return hc


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

    ``overrides`` set `Config` fields (``host=``, ``port=``, ...). ``reuse_port`` (native engine)
    lets several processes listen on one port. When ``shutdown_trigger`` returns (e.g.
    `until_signal`), the server stops accepting and gives requests in flight
    ``config.graceful_seconds`` to finish.
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
    if config.engine == "native":
        listeners = await open_listeners(config, reuse_port=reuse_port)
        async with trio.open_nursery() as nursery:
            engine = NativeEngine(endpoint)
            await nursery.start(engine.serve, listeners, shutdown_trigger)
            task_status.started(bound_urls(listeners))
        return
    await hypercorn_serve(
        App(endpoint),  # type: ignore[arg-type]
        hypercorn_config(config),
        shutdown_trigger=shutdown_trigger,
        task_status=task_status,
    )
