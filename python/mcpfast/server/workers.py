"""Several worker processes on one port.

Workers share nothing but the signing keys, so any worker serves any legacy session and any
``requestState``. Change notifications and server-to-client answers need a shared bus to
cross workers. With Hypercorn, its multi-process runner shares one socket; with the native
engine, each worker binds the port with ``SO_REUSEPORT`` and the kernel spreads connections.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
from functools import partial
from multiprocessing.process import BaseProcess
from typing import Any

import msgspec
import trio
from hypercorn.run import run

from .config import Config
from .serve import hypercorn_config, serve, until_signal

log = logging.getLogger("mcpfast.workers")


def run_workers(target: str | None, config: Config) -> None:
    """Run ``config.workers`` processes serving ``target`` (``module:attribute``; demo if None)."""
    if config.engine == "native":
        _run_native(target, config)
        return
    os.environ["MCPFAST_TARGET"] = target or ""
    os.environ["MCPFAST_PATH"] = config.path
    os.environ["MCPFAST_BIND_HOST"] = config.host
    hc = hypercorn_config(config)
    hc.application_path = "mcpfast.server._worker_app:application"
    hc.worker_class = "trio"
    run(hc)


def _run_native(target: str | None, config: Config) -> None:
    """Start the workers, replace any that dies, stop them all on SIGINT/SIGTERM."""
    if config.port == 0:
        raise SystemExit("several native workers need a fixed --port")
    context = multiprocessing.get_context("spawn")
    encoded = msgspec.json.encode(config)

    def start() -> BaseProcess:
        process = context.Process(target=_native_worker, args=(target, encoded), daemon=True)
        process.start()
        return process

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    workers = [start() for _ in range(config.workers)]
    interrupted = False
    try:
        while True:
            multiprocessing.connection.wait([w.sentinel for w in workers])
            for i, worker in enumerate(workers):
                if not worker.is_alive():
                    log.warning(
                        "worker %s exited (%s); starting another", worker.pid, worker.exitcode
                    )
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


def _native_worker(target: str | None, encoded: bytes) -> None:
    from ..cli import load_target

    config = msgspec.json.decode(encoded, type=Config)
    server = load_target(target or None)
    try:
        trio.run(partial(serve, server, config, reuse_port=True, shutdown_trigger=until_signal))
    except KeyboardInterrupt:
        pass
