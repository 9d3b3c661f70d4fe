"""``mcpfast serve``: load the target `Server` (`server.target`), bind and serve it over HTTP
(one process or several workers) or stdio; a failure to listen is `Exit.CANNOT_SERVE`."""

from __future__ import annotations

import argparse
import errno
import socket
import sys
from collections.abc import Callable
from functools import partial

import trio

from ..server import Config, Server
from ..server.target import TargetError, load_target
from .exits import CliError, Exit


def serve_command(args: argparse.Namespace) -> int:
    """``mcpfast serve``: serve until SIGINT/SIGTERM (HTTP) or the end of stdin (``--stdio``).

    Raises:
        CliError: (`Exit.USAGE`) a target that cannot be loaded, bad ``--workers``;
            (`Exit.CANNOT_SERVE`) it cannot listen on ``--host``:``--port``.
    """
    try:
        server = load_target(args.target)
    except TargetError as exc:
        raise CliError(Exit.USAGE, str(exc)) from None
    if args.stdio:
        from ..server.engines.stdio import serve_stdio

        trio.run(serve_stdio, server)
        return Exit.OK
    if args.workers < 1:
        raise CliError(Exit.USAGE, "--workers must be 1 or more")
    if args.workers > 1 and args.engine == "native" and args.port == 0:
        raise CliError(Exit.USAGE, "several native workers need a fixed --port (not 0)")
    config = Config(
        host=args.host, port=args.port, path=args.path, workers=args.workers, engine=args.engine
    )
    announced: list[str] = []

    def announce(urls: list[str]) -> None:
        announced.extend(urls)
        url = urls[0] + args.path
        also = "".join(f", {u}{args.path}" for u in urls[1:])
        print(f"mcpfast: serving {server.info.name} at {url}{also}", file=sys.stderr)
        print(_curl_hint(url), file=sys.stderr, flush=True)

    try:
        if args.workers > 1:
            from ..server.workers import run_workers

            run_workers(args.target, config, announce)
        else:
            trio.run(_serve_http, server, config, announce)
    except BaseException as exc:
        error = _socket_error(exc)
        if error is None or (announced and args.workers == 1):  # serving had begun: a bug
            raise
        raise CliError(Exit.CANNOT_SERVE, _listen_failure(args.host, args.port, error)) from None
    return Exit.OK


async def _serve_http(
    server: Server, config: Config, announce: Callable[[list[str]], None]
) -> None:
    """Serve until SIGINT/SIGTERM; ``announce`` the URLs once they are bound."""
    from ..server.serve import serve, until_signal

    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(serve, server, config, shutdown_trigger=until_signal))
        announce(urls)


def _socket_error(exc: BaseException) -> OSError | None:
    """The OSError of a socket (no file name: not, say, the key file) in ``exc`` (itself, or
    in a group), if any."""
    if isinstance(exc, OSError):
        return exc if exc.filename is None else None
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _socket_error(inner)
            if found is not None:
                return found
    return None


_LISTEN_REASONS = {
    errno.EADDRINUSE: "the address is already in use (another server listens there; choose "
    "another --port)",
    errno.EACCES: "permission denied (ports below 1024 need privileges)",
    errno.EADDRNOTAVAIL: "no such address on this machine (check --host)",
}


def _listen_failure(host: str, port: int, error: OSError) -> str:
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(error, socket.gaierror):
        reason = f"unknown host {host!r}"
    else:
        reason = _LISTEN_REASONS.get(error.errno or 0) or error.strerror or str(error)
    return f"cannot listen on {where}: {reason}"


def _curl_hint(url: str) -> str:
    return (
        "try it:\n"
        f"  curl -s {url} -H 'content-type: application/json' "
        "-H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' "
        "-H 'mcp-method: tools/call' -H 'mcp-name: echo' "
        '-d \'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
        '"arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":'
        '"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}\''
    )
