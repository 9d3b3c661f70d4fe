"""``mcpfast serve``: load the target `Server` (`server.target`), bind and serve it over HTTP
(one process or several workers) or stdio; a failure to listen is `Exit.CANNOT_SERVE`."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from collections.abc import Callable, Mapping
from functools import partial

import msgspec
import trio

from ..server import Config, Server
from ..server.config import AuthConfig
from ..server.ops.logs import configure_logging
from ..server.ops.target import TargetError, load_target
from .exits import CliError, Exit
from .first_command import try_it
from .governing import governing_settings
from .limiting import limit_settings

SEVERAL_WORKERS_NEED_A_BUS = (
    "--workers above 1 needs a shared bus: --bus redis://HOST:6379/0 (or $MCPFAST_BUS). "
    "Without one, what two requests must share (server-to-client answers, cancellation, tasks, "
    "listen notifications, resumption, DELETE) would reach only the worker that saw the first"
)


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
    try:
        auth = auth_config(args, os.environ)
    except ValueError as exc:
        raise CliError(Exit.USAGE, f"auth: {exc}") from None
    try:
        limits = limit_settings(args, os.environ)
    except ValueError as exc:
        raise CliError(Exit.USAGE, f"rate limits: {exc}") from None
    if args.stdio:
        if auth is not None:
            print("mcpfast: stdio is not protected (authorization is for HTTP)", file=sys.stderr)
        from ..server import serve_stdio

        trio.run(serve_stdio, server, Config(**limits))
        return Exit.OK
    if args.workers < 1:
        raise CliError(Exit.USAGE, "--workers must be 1 or more")
    if args.workers > 1 and args.bus is None:
        raise CliError(Exit.USAGE, SEVERAL_WORKERS_NEED_A_BUS)
    check_observability(args)
    if args.bus is not None:
        from ..server.serve import bus_from_url

        try:
            bus_from_url(args.bus)
        except ValueError as exc:
            raise CliError(Exit.USAGE, f"--bus: {exc}") from None
    config = Config(
        host=args.host,
        port=args.port,
        allowed_hosts=args.allowed_hosts,
        allowed_origins=args.allowed_origins,
        path=args.path,
        workers=args.workers,
        engine=args.engine,
        scheduling=args.scheduling,
        bus=args.bus,
        ready_needs_bus=args.ready_needs_bus,
        auth=auth,
        metrics_port=args.metrics_port,
        metrics_host=args.metrics_host,
        access_log=args.access_log,
        log_format=args.log_format,
        log_level=args.log_level,
        **limits,
        **governing_settings(args),
    )
    configure_logging(config)
    announced: list[str] = []

    def announce(urls: list[str]) -> None:
        announced.extend(urls)
        url = urls[0] + args.path
        also = "".join(f", {u}{args.path}" for u in urls[1:])
        print(f"mcpfast: serving {server.info.name} at {url}{also}", file=sys.stderr)
        if config.metrics_port is not None:
            print(f"mcpfast: metrics at {_metrics_url(config)}", file=sys.stderr)
        print(try_it(server, url, config.auth), file=sys.stderr, flush=True)

    try:
        if args.workers > 1:
            from ..server.ops.workers import run_workers

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


def add_observability_arguments(parser: argparse.ArgumentParser) -> None:
    """The Prometheus, access log and logging flags of ``mcpfast serve``."""
    group = parser.add_argument_group("observability (HTTP only)")
    group.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve the OpenTelemetry metrics in Prometheus text format at /metrics (and the "
        "health paths) on this port; with --workers N, worker ports PORT .. PORT+N-1 "
        "(needs mcpfast[metrics])",
    )
    group.add_argument(
        "--metrics-host",
        metavar="HOST",
        help="the metrics listener's address (default: 127.0.0.1; 0.0.0.0 for Kubernetes "
        "probes or a remote Prometheus)",
    )
    group.add_argument(
        "--ready-needs-bus",
        action="store_true",
        help="readiness (/readyz) is 503 while the bus is away (default: 200, body "
        '"degraded": what needs no bus is still served; /busz says the bus is away)',
    )
    group.add_argument(
        "--access-log",
        nargs="?",
        const="-",
        metavar="PATH",
        help="one line per request at the MCP path, to PATH (appended) or stderr (- or no PATH)",
    )
    group.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="access log and log lines: key=value text (default) or JSON",
    )
    group.add_argument(
        "--log-level",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        help="the level of mcpfast's own loggers, written to stderr",
    )


def check_observability(args: argparse.Namespace) -> None:
    """Refuse, before serving, what the observability flags could not do.

    Raises:
        CliError: (`Exit.USAGE`) ``--metrics-port`` without the metrics extra, an access log
            that cannot be opened; (`Exit.CANNOT_SERVE`) a metrics port that is taken.
    """
    if args.access_log not in (None, "-"):
        try:
            open(args.access_log, "a").close()
        except OSError as exc:
            message = f"--access-log: cannot open {args.access_log}: {exc.strerror}"
            raise CliError(Exit.USAGE, message) from None
    if args.metrics_port is None:
        return
    from ..server.ops.metrics_listener import metrics_missing
    from ..server.ops.workers import bind_socket

    missing = metrics_missing()
    if missing is not None:
        raise CliError(Exit.USAGE, f"--metrics-port: {missing}")
    host = args.metrics_host or "127.0.0.1"
    count = args.workers if args.metrics_port else 1
    for port in range(args.metrics_port, args.metrics_port + count):
        try:
            bind_socket(host, port).close()
        except OSError as exc:
            raise CliError(
                Exit.CANNOT_SERVE, _listen_failure(host, port, exc) + " (--metrics-port)"
            ) from None


def _metrics_url(config: Config) -> str:
    host = config.metrics_address
    where = f"[{host}]" if ":" in host else host
    port = config.metrics_port
    last = f"..{port + config.workers - 1}" if port and config.workers > 1 else ""
    return f"http://{where}:{port}{last}/metrics"


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


AUTH_FLAGS = (
    (
        "--auth-issuer",
        "MCPFAST_AUTH_ISSUER",
        "the authorization server's issuer: protects the endpoint",
    ),
    (
        "--resource-url",
        "MCPFAST_AUTH_RESOURCE",
        "this server's canonical URL (RFC 8707/9728 resource)",
    ),
    (
        "--auth-audience",
        "MCPFAST_AUTH_AUDIENCE",
        "accepted token audience (default: --resource-url)",
    ),
    (
        "--auth-jwks-url",
        "MCPFAST_AUTH_JWKS_URL",
        "the issuer's JWKS (default: its metadata's jwks_uri)",
    ),
    (
        "--auth-introspection-url",
        "MCPFAST_AUTH_INTROSPECTION_URL",
        "verify tokens by RFC 7662 instead",
    ),
    (
        "--auth-client-id",
        "MCPFAST_AUTH_INTROSPECTION_CLIENT_ID",
        "this server's client id at introspection",
    ),
    (
        "--auth-scopes",
        "MCPFAST_AUTH_SCOPES",
        "scopes every request needs (space- or comma-separated)",
    ),
    ("--auth-dpop", "MCPFAST_AUTH_DPOP", "on (default), required or off"),
    (
        "--auth-jwt-typ",
        "MCPFAST_AUTH_JWT_TYP",
        "required (default: JWTs must be typ at+jwt) or optional (issuers that do not set it)",
    ),
)
"""Each flag, the variable that is its default, and its help."""


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--auth-*`` flags of ``mcpfast serve``; each defaults to ``$MCPFAST_AUTH_<NAME>``."""
    group = parser.add_argument_group(
        "authorization (HTTP only)",
        "Protect the endpoint as an OAuth resource server. Each flag defaults to its variable "
        "MCPFAST_AUTH_<NAME> (e.g. MCPFAST_AUTH_ISSUER); the introspection client secret is "
        "read from MCPFAST_AUTH_INTROSPECTION_CLIENT_SECRET only (never a flag).",
    )
    for flag, variable, text in AUTH_FLAGS:
        name = variable.removeprefix("MCPFAST_AUTH_")
        group.add_argument(
            flag, dest="auth_" + name.lower(), metavar=name, help=f"{text} [${variable}]"
        )


def auth_config(args: argparse.Namespace, environ: Mapping[str, str]) -> AuthConfig | None:
    """The `AuthConfig` of the ``--auth-*`` flags and ``MCPFAST_AUTH_*`` variables; None when
    neither names an issuer, a JWKS or an introspection endpoint (the server is open).

    Raises:
        ValueError: an incomplete or contradictory configuration.
    """

    def value(name: str) -> str | None:
        given = getattr(args, "auth_" + name.lower(), None)
        return given if given else environ.get("MCPFAST_AUTH_" + name) or None

    issuer = value("ISSUER")
    jwks = value("JWKS_URL")
    introspection = value("INTROSPECTION_URL")
    if issuer is None and jwks is None and introspection is None:
        return None
    resource = value("RESOURCE")
    audience = value("AUDIENCE")
    scopes = (value("SCOPES") or "").replace(",", " ").split()
    dpop = value("DPOP") or "on"
    if dpop not in ("on", "off", "required"):
        raise ValueError(f"--auth-dpop must be on, off or required, not {dpop!r}")
    jwt_typ = value("JWT_TYP") or "required"
    if jwt_typ not in ("required", "optional"):
        raise ValueError(f"--auth-jwt-typ must be required or optional, not {jwt_typ!r}")
    if issuer is None:
        raise ValueError("--auth-issuer (MCPFAST_AUTH_ISSUER) is required")
    if introspection and not (
        value("INTROSPECTION_CLIENT_ID") and environ.get("MCPFAST_AUTH_INTROSPECTION_CLIENT_SECRET")
    ):
        raise ValueError(
            "--auth-introspection-url needs --auth-client-id and "
            "MCPFAST_AUTH_INTROSPECTION_CLIENT_SECRET"
        )
    fields = {
        "issuer": issuer,
        "resource": resource,
        "audience": audience.replace(",", " ").split() if audience else None,
        "jwks_url": jwks,
        "introspection_url": introspection,
        "introspection_client_id": value("INTROSPECTION_CLIENT_ID"),
        "scopes": scopes,
        "dpop": dpop,
        "require_jwt_typ": jwt_typ == "required",
    }
    try:
        return msgspec.convert(fields, AuthConfig)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc)) from None
