"""A development OAuth 2.1 authorization server: in memory, loopback only, auto-approving.

For tests and local development of MCP servers and clients — never for production: it asks
nobody to log in, approves every authorization request of a registered client, and forgets
everything when it stops.

    async with dev_authorization_server(scopes_supported=["mcp:read"]) as server:
        server.issuer                                     # http://127.0.0.1:PORT
        client = server.register_client(secret="s3cret", grant_types=["client_credentials"])
        token = await server.client_credentials_token(client.client_id, "s3cret",
                                                      scope="mcp:read",
                                                      resource="http://127.0.0.1:8000/mcp")
        server.mint(sub="alice", scope="mcp:read", audience="http://127.0.0.1:8000/mcp")

What it implements: RFC 8414 metadata (also at the OIDC well-known), a JWKS with one ES256 (or
RS256) key generated at start (`DevAuthorizationServer.rotate_key`), RFC 7591 registration,
Client ID Metadata Documents, the authorization code grant with PKCE S256 (RFC 8707
``resource``, RFC 9207 ``iss``), refresh tokens (rotated), client credentials
(client_secret_basic / client_secret_post / private_key_jwt), the RFC 7523 JWT bearer grant
(for issuers made trusted with `DevAuthorizationServer.trust_issuer`), DPoP-bound tokens
(RFC 9449, with optional nonces), RFC 7662 introspection and RFC 7009 revocation. Access
tokens are RFC 9068 JWTs (``typ: at+jwt``), or opaque strings with ``opaque_tokens=True``.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import trio

from ..protocol.http import default_hosts, host_allowed
from ._asgi import (
    MAX_BODY_BYTES,
    BodyTooLarge,
    Receive,
    Request,
    Response,
    Scope,
    Send,
    lifespan,
    read_request,
    send_response,
    serve_asgi,
)
from .authorize import AuthorizeEndpoint
from .clients import OAuthError, RegisteredClient
from .helpers import TokenRequestError, TokenRequests
from .introspection import Introspection
from .issuer import DEFAULT_SCOPES
from .token import TokenEndpoint

__all__ = [
    "DEFAULT_SCOPES",
    "DevAuthorizationServer",
    "OAuthError",
    "RegisteredClient",
    "TokenRequestError",
    "dev_authorization_server",
]


class DevAuthorizationServer(AuthorizeEndpoint, TokenEndpoint, Introspection, TokenRequests):
    """The server's state and its ASGI application (``self`` is the ASGI callable).

    Start it with `dev_authorization_server` (tests) or ``mcpfast auth-server``; `serve`
    runs it in a nursery. Keyword options:

    - ``scopes_supported``: advertised and enforced (a scope outside it is ``invalid_scope``);
      None accepts any scope and advertises none.
    - ``access_token_lifetime`` / ``refresh_token_lifetime`` / ``code_lifetime``: seconds.
    - ``default_audience``: the ``aud`` of a token whose request named no ``resource``
      (without either, the token has no ``aud``).
    - ``opaque_tokens``: issue random opaque access tokens (resource servers must introspect).
    - ``require_dpop_nonce``: DPoP proofs at the token endpoint must carry a server nonce.
    - ``dpop_window``: seconds a proof's ``iat`` may be from now.
    - ``subject``: the ``sub`` of authorization-code tokens (a ``login_hint`` overrides it).
    - ``signing_alg``: ``ES256`` (default) or ``RS256``.
    - ``allow_local_fetches``: fetch a client's ``jwks_uri`` and Client ID Metadata Document
      from loopback or private addresses too (``http://`` on loopback), for tests that serve
      them locally; default False: public ``https`` only, so a registration cannot make the
      server reach the developer's machine or network.
    - ``clock``: the wall clock (epoch seconds) tokens, codes and grants are minted and expire
      on; default `time.time` (a test passes a fake one to age them without waiting).

    Requests whose ``Host`` is not a loopback name are refused (421): the server listens on
    loopback only, and a web page that rebinds a name to it must not drive it.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            request = await read_request(scope, receive)
        except BodyTooLarge:
            response = Response.json(
                413,
                {
                    "error": "invalid_request",
                    "error_description": f"request body over {MAX_BODY_BYTES} bytes",
                },
                [("connection", "close")],
            )
        else:
            response = await self.handle(request)
        await send_response(send, response)

    async def handle(self, request: Request) -> Response:
        """Answer one request (what the ASGI application does once the body is read)."""
        # It listens on loopback only (`Issuer` checks): the loopback names and its address.
        names = default_hosts(self.host, ("127.0.0.1",), ())
        if not host_allowed(names, request.header("host")):
            return Response.json(
                421,
                {"error": "invalid_request", "error_description": "Host is not this server"},
            )
        routes: dict[str, tuple[tuple[str, ...], Callable[[Request], Awaitable[Response]]]] = {
            "/.well-known/oauth-authorization-server": (("GET",), self._metadata),
            "/.well-known/openid-configuration": (("GET",), self._metadata),
            "/jwks": (("GET",), self._jwks),
            "/register": (("POST",), self._register),
            "/authorize": (("GET", "POST"), self._authorize),
            "/token": (("POST",), self._token),
            "/introspect": (("POST",), self._introspect),
            "/revoke": (("POST",), self._revoke),
        }
        route = routes.get(request.path)
        if route is None:
            return Response.json(404, {"error": "not_found", "error_description": "no such path"})
        methods, handler = route
        if request.method not in (*methods, "HEAD") or (
            request.method == "HEAD" and "GET" not in methods
        ):
            return Response.json(
                405,
                {"error": "invalid_request", "error_description": "method not allowed"},
                [("allow", ", ".join(methods))],
            )
        try:
            return await handler(request)
        except OAuthError as exc:
            return Response.json(
                exc.status,
                {"error": exc.error, "error_description": exc.description},
                exc.headers,
            )
        except Exception:
            traceback.print_exc(file=sys.stderr)
            return Response.json(
                500, {"error": "server_error", "error_description": "internal error"}
            )

    async def _metadata(self, request: Request) -> Response:
        return Response.json(200, self.metadata(), [("access-control-allow-origin", "*")])

    async def _jwks(self, request: Request) -> Response:
        response = Response.json(200, self.jwks(), [("access-control-allow-origin", "*")])
        response.headers = [h for h in response.headers if h[0] not in ("cache-control", "pragma")]
        response.headers.append(("cache-control", "no-cache"))
        return response

    # -- serving --------------------------------------------------------------------------

    async def serve(
        self,
        *,
        shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve until cancelled (or ``shutdown_trigger`` returns); ``nursery.start`` returns
        the issuer once the socket is bound."""
        async with trio.open_nursery() as nursery:
            urls: list[str] = await nursery.start(
                partial(serve_asgi, self, self.host, self.port, shutdown_trigger=shutdown_trigger)
            )
            self._issuer = urls[0].rstrip("/")
            task_status.started(self._issuer)


@asynccontextmanager
async def dev_authorization_server(
    *, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> AsyncIterator[DevAuthorizationServer]:
    """Run a `DevAuthorizationServer` on loopback for the duration of the block.

    ``options`` are the keyword options of `DevAuthorizationServer`; ``port=0`` picks a free
    port (``server.issuer`` says which)."""
    server = DevAuthorizationServer(host=host, port=port, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()
