"""``mcpfast auth-server``: run the development OAuth 2.1 authorization server
(`mcpfast.auth.devserver`) on loopback until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
from functools import partial
from typing import TYPE_CHECKING

import trio

from .exits import CliError, Exit

if TYPE_CHECKING:
    from ..auth.devserver import DevAuthorizationServer

DEFAULT_SCOPES = ("mcp:read", "mcp:write", "offline_access")  # devserver.DEFAULT_SCOPES

BANNER = (
    "mcpfast auth-server: DEVELOPMENT ONLY - approves every authorization request without a "
    "login, keeps clients and tokens in memory (lost on exit), plain HTTP on loopback. Never "
    "use it to protect anything real."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mcpfast auth-server``."""
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address (the default)")
    parser.add_argument("--port", type=int, default=9000, help="0 picks a free port")
    parser.add_argument(
        "--scope",
        action="append",
        metavar="SCOPE",
        help=f"a supported scope (repeatable; default {' '.join(DEFAULT_SCOPES)})",
    )
    parser.add_argument(
        "--any-scope", action="store_true", help="accept any scope (advertise none)"
    )
    parser.add_argument(
        "--client",
        action="append",
        default=[],
        metavar="ID[:SECRET]",
        help="pre-register a client (public without SECRET); its redirect URIs are "
        "--redirect-uri's (default http://127.0.0.1/callback, any loopback port)",
    )
    parser.add_argument(
        "--redirect-uri",
        action="append",
        metavar="URI",
        help="a redirect URI of the --client clients (repeatable)",
    )
    parser.add_argument(
        "--token-lifetime", type=float, default=3600.0, help="access token seconds (3600)"
    )
    parser.add_argument("--audience", help="the aud of tokens whose request names no resource")
    parser.add_argument("--opaque", action="store_true", help="issue opaque access tokens")
    parser.add_argument(
        "--dpop-nonce", action="store_true", help="require server nonces in DPoP proofs"
    )
    parser.add_argument(
        "--alg",
        choices=("ES256", "RS256"),
        default="ES256",
        help="the signing algorithm of its tokens (default ES256)",
    )
    parser.add_argument(
        "--allow-local-fetches",
        action="store_true",
        help="fetch client jwks_uri / metadata documents from loopback and private addresses",
    )


def auth_server_command(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM.

    Raises:
        CliError: (`Exit.USAGE`) a host that is not loopback; (`Exit.CANNOT_SERVE`) it
            cannot listen.
    """
    from ..auth._asgi import is_loopback_host
    from ..auth.devserver import DevAuthorizationServer

    if not is_loopback_host(args.host):
        raise CliError(
            Exit.USAGE,
            f"auth-server listens on loopback only (127.0.0.1, ::1, localhost), not {args.host!r}",
        )
    server = DevAuthorizationServer(
        host=args.host,
        port=args.port,
        scopes_supported=None if args.any_scope else (args.scope or DEFAULT_SCOPES),
        access_token_lifetime=args.token_lifetime,
        default_audience=args.audience,
        opaque_tokens=args.opaque,
        require_dpop_nonce=args.dpop_nonce,
        signing_alg=args.alg,
        allow_local_fetches=args.allow_local_fetches,
    )
    redirect_uris = args.redirect_uri or ["http://127.0.0.1/callback"]
    for spec in args.client:
        client_id, _, secret = spec.partition(":")
        if not client_id:
            raise CliError(Exit.USAGE, f"--client {spec!r}: expected ID or ID:SECRET")
        server.register_client(client_id, secret=secret or None, redirect_uris=redirect_uris)
    try:
        trio.run(_serve, server)
    except BaseException as exc:
        error = _first_os_error(exc)
        if error is None:
            raise
        raise CliError(
            Exit.CANNOT_SERVE,
            f"cannot listen on {args.host}:{args.port}: {error.strerror or error}",
        ) from None
    return Exit.OK


def _first_os_error(error: BaseException) -> OSError | None:
    """The first OSError in ``error`` (itself, or nested in exception groups)."""
    if isinstance(error, OSError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _first_os_error(inner)
            if found is not None:
                return found
    return None


async def _until_signal() -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            return


async def _serve(server: DevAuthorizationServer) -> None:
    async with trio.open_nursery() as nursery:
        issuer = await nursery.start(partial(server.serve, shutdown_trigger=_until_signal))
        print(BANNER, file=sys.stderr)
        print(f"mcpfast auth-server: issuer {issuer}", file=sys.stderr)
        print(
            f"  metadata  {issuer}/.well-known/oauth-authorization-server\n"
            f"  jwks      {server.jwks_uri}\n"
            f"  register  {server.registration_endpoint}\n"
            f"  authorize {server.authorization_endpoint}\n"
            f"  token     {server.token_endpoint}",
            file=sys.stderr,
        )
        for client in server.clients():
            kind = "public" if client.client_secret is None else "confidential"
            print(f"  client    {client.client_id} ({kind})", file=sys.stderr)
        print(f"mcpfast auth-server: serving at {issuer}", file=sys.stderr, flush=True)
