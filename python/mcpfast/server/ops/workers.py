"""Several worker processes on one port.

Workers share the signing keys, so any worker serves any plain request of any legacy session
and any ``requestState``; what two requests must share (server-to-client answers, cancellation,
change notifications, ``Last-Event-ID`` resumption, DELETE, tasks) goes through the shared bus
of ``Config.bus`` (`redis_bus.RedisBus`), without which several workers are refused. With
Hypercorn, its multi-process runner shares one socket; with the native engine, each worker
binds the port with ``SO_REUSEPORT`` and the kernel spreads connections.
"""

from __future__ import annotations

import errno
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
from collections.abc import Callable
from functools import partial
from multiprocessing.process import BaseProcess
from typing import Any

import msgspec
import trio
from hypercorn.run import run

from ..config import Config
from ..serve import hypercorn_config, serve, until_signal

log = logging.getLogger("mcpfast.workers")


def run_workers(
    target: str | None, config: Config, announce: Callable[[list[str]], None] | None = None
) -> None:
    """Run ``config.workers`` processes serving ``target`` (``module:attribute``; demo if None).

    ``announce(urls)`` is called once the port is known to be ours, before the workers start.

    Raises:
        ValueError: several workers and no ``config.bus`` (they would share nothing).
        OSError: the address cannot be listened on (in use, not available, not permitted).
    """
    if config.workers > 1 and config.bus is None:
        raise ValueError("several workers need a shared bus (Config.bus: a redis:// URL)")
    if config.engine == "native":
        _run_native(target, config, announce or _silent)
        return
    os.environ["MCPFAST_TARGET"] = target or ""
    os.environ[CONFIG_VARIABLE] = msgspec.json.encode(config).decode()
    sock = bind_socket(config.host, config.port)
    url = _url(sock)
    hc = hypercorn_config(config)
    # The socket bound here, without SO_REUSEPORT (which Hypercorn would set for several
    # workers, letting a second server silently share the port): the workers inherit it.
    hc.bind = [f"fd://{sock.detach()}"]
    hc.application_path = "mcpfast.server.ops._worker_app:application"
    hc.worker_class = "trio"
    (announce or _silent)([url])
    run(hc)


def _silent(urls: list[str]) -> None:
    return None


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (not listening), as Hypercorn binds one.

    Raises:
        OSError: the address is in use (by anyone, SO_REUSEPORT groups included) or unusable.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host.strip("[]"), port))
    except BaseException:
        sock.close()
        raise
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _run_native(target: str | None, config: Config, announce: Callable[[list[str]], None]) -> None:
    """Check that the port is free, announce, start the workers, replace any that dies, stop
    them all on SIGINT/SIGTERM. A worker that cannot bind stops them all (OSError)."""
    if config.port == 0:
        raise SystemExit("several native workers need a fixed --port")
    with bind_socket(config.host, config.port) as probe:  # bound without SO_REUSEPORT
        url = _url(probe)
    context = multiprocessing.get_context("spawn")
    encoded = msgspec.json.encode(config)

    def start() -> BaseProcess:
        process = context.Process(target=_native_worker, args=(target, encoded), daemon=True)
        process.start()
        return process

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    announce([url])
    workers = [start() for _ in range(config.workers)]
    interrupted = False
    try:
        while True:
            multiprocessing.connection.wait([w.sentinel for w in workers])
            for i, worker in enumerate(workers):
                if worker.is_alive():
                    continue
                if worker.exitcode == BIND_FAILED:
                    raise OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
                log.warning("worker %s exited (%s); starting another", worker.pid, worker.exitcode)
                workers[i] = start()
    except KeyboardInterrupt:  # the terminal sent SIGINT to every process: the workers drain
        interrupted = True
    finally:
        if not interrupted:
            for worker in workers:
                worker.terminate()  # SIGTERM: each drains for config.graceful_seconds
        for worker in workers:
            worker.join(config.graceful_seconds + 5)
            if worker.is_alive():
                worker.kill()


CONFIG_VARIABLE = "MCPFAST_CONFIG"
"""Where a Hypercorn worker finds the whole `Config` (JSON): one hand-off for both engines."""

BIND_FAILED = 75
"""The exit status of a native worker that could not bind the port."""


def _native_worker(target: str | None, encoded: bytes) -> None:
    """One worker: serve until SIGINT/SIGTERM; exit with `BIND_FAILED` if it cannot listen."""
    from .target import load_target

    config = msgspec.json.decode(encoded, type=Config)
    server = load_target(target or None)
    listening: list[bool] = []

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            run = partial(serve, server, config, reuse_port=True, shutdown_trigger=until_signal)
            await nursery.start(run)
            listening.append(True)

    try:
        trio.run(main)
    except KeyboardInterrupt:
        pass
    except BaseException as exc:
        if not listening and _holds_os_error(exc):
            raise SystemExit(BIND_FAILED) from None
        raise


def _holds_os_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an OSError or a group holding one."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_holds_os_error(e) for e in exc.exceptions)
    return isinstance(exc, OSError)
