"""Several worker processes on one port, with either engine.

Workers share the signing keys, so any worker serves any plain request of any legacy session
and any ``requestState``; what two requests must share (server-to-client answers, cancellation,
change notifications, ``Last-Event-ID`` resumption, DELETE, tasks) goes through the shared bus
of ``Config.bus`` (`redis_bus.RedisBus`), without which several workers are refused.

Each worker binds the port itself with ``SO_REUSEPORT`` (the kernel spreads connections) and
drains as one process does (`serve.serve`): on SIGTERM its readiness turns 503 and its
listening socket closes at once. The parent only checks that the port is free (a bind without
``SO_REUSEPORT``, closed again: it holds no listening socket, so once every worker has closed
its own, new connections are refused by the kernel), replaces a worker that dies, and on
SIGTERM or SIGINT passes SIGTERM on to every worker and waits for them to drain.
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

from ..config import Config
from ..serve import serve, until_signal

log = logging.getLogger("mcpfast.workers")

BIND_FAILED = 75
"""The exit status of a worker that could not bind the port."""


def run_workers(
    target: str | None, config: Config, announce: Callable[[list[str]], None] | None = None
) -> None:
    """Run ``config.workers`` processes serving ``target`` (``module:attribute``; demo if None)
    until SIGTERM or SIGINT, then let each drain (``config.graceful_seconds``) and return.

    ``announce(urls)`` is called once the port is known to be free, before the workers start;
    port 0 is a free port picked here.

    Raises:
        ValueError: several workers and no ``config.bus`` (they would share nothing).
        OSError: the address cannot be listened on (in use, not available, not permitted).
    """
    if config.workers > 1 and config.bus is None:
        raise ValueError("several workers need a shared bus (Config.bus: a redis:// URL)")
    with bind_socket(config.host, config.port) as probe:  # bound without SO_REUSEPORT
        url = _url(probe)
        port = probe.getsockname()[1]
    if port != config.port:
        config = msgspec.structs.replace(config, port=port)
    context = multiprocessing.get_context("spawn")
    encoded = msgspec.json.encode(config)

    def start() -> BaseProcess:
        process = context.Process(target=_worker, args=(target, encoded), daemon=True)
        process.start()
        return process

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    (announce or _silent)([url])
    workers = [start() for _ in range(config.workers)]
    told = False
    try:
        _supervise(workers, start)
    except KeyboardInterrupt:  # the terminal sent SIGINT to every process: the workers drain
        told = True
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one would cut the wait short
        _stop(workers, config.graceful_seconds, told=told)


def _supervise(workers: list[BaseProcess], start: Callable[[], BaseProcess]) -> None:
    """Replace any worker that exits, forever. A worker that cannot bind stops them all.

    Raises:
        OSError: a worker could not bind the port.
    """
    while True:
        multiprocessing.connection.wait([w.sentinel for w in workers])
        for i, worker in enumerate(workers):
            if worker.is_alive():
                continue
            if worker.exitcode == BIND_FAILED:
                raise OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
            log.warning("worker %s exited (%s); starting another", worker.pid, worker.exitcode)
            workers[i] = start()


def _stop(workers: list[BaseProcess], grace: float, *, told: bool) -> None:
    """SIGTERM every worker (each drains for ``grace`` seconds) unless ``told`` already (the
    terminal's SIGINT: a second signal would find the default handler), then wait; kill any
    left after."""
    if not told:
        for worker in workers:
            worker.terminate()
    for worker in workers:
        worker.join(grace + 5)
        if worker.is_alive():
            worker.kill()


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


def _worker(target: str | None, encoded: bytes) -> None:
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
