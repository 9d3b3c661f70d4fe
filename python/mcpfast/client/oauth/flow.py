"""The authorization code grant with PKCE (S256), RFC 8707 ``resource`` and the RFC 9207
``iss`` check, and the scope the spec says to ask for.

Opening the browser and receiving the redirect is the ``redirect_handler``'s job: any callable
``(authorization_url) -> (code, state, iss)`` (or an awaitable of it). `LoopbackRedirect`
opens the browser (a `secure_url` only) and listens on 127.0.0.1 for the one redirect that
carries the request's ``state`` (command-line clients);
`FollowRedirect` fetches the authorization URL and reads the ``Location`` it redirects to (an
authorization server that approves without a user: tests, the development server).
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import secrets
import socket
import webbrowser
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx2
import trio

from ..._remote import DEFAULT_POLICY, UrlPolicy
from ...protocol.auth import secure_url
from .discovery import AuthorizationServer, Challenge, ProtectedResource
from .dpop import DPoPKey
from .tokens import ClientCredentials, Token, choose_auth_method, token_request

__all__ = [
    "AuthorizationError",
    "AuthorizationResponse",
    "FollowRedirect",
    "LoopbackRedirect",
    "RedirectHandler",
    "authorization_code_grant",
    "pkce_pair",
    "select_scopes",
]


class AuthorizationError(Exception):
    """The authorization response was refused (wrong ``state`` or ``iss``, an ``error``)."""


class AuthorizationResponse(NamedTuple):
    code: str | None
    state: str | None
    iss: str | None = None
    error: str | None = None
    error_description: str | None = None


RedirectHandler = Callable[[str], "Awaitable[Any] | Any"]


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier (43 characters of 32 random bytes) and its S256 challenge."""
    verifier = secrets.token_urlsafe(32)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def select_scopes(
    challenge: Challenge | None,
    resource: ProtectedResource,
    server: AuthorizationServer,
    *,
    previous: list[str] | None = None,
    offline_access: bool = True,
) -> list[str]:
    """The scopes to ask for: the challenge's ``scope``, else the resource metadata's
    ``scopes_supported``, else none (the parameter is omitted); united with ``previous`` (a
    step-up keeps what was granted); ``offline_access`` added when the authorization server
    lists it in ``scopes_supported`` and a refresh token is wanted."""
    if challenge is not None and challenge.scopes is not None:
        chosen = list(challenge.scopes)
    elif resource.scopes_supported is not None:
        chosen = list(resource.scopes_supported)
    else:
        chosen = []
    if previous:
        chosen = list(previous) + [scope for scope in chosen if scope not in previous]
    if chosen and offline_access and "offline_access" not in chosen:
        supported = server.scopes_supported or []
        if "offline_access" in supported:
            chosen.append("offline_access")
    return chosen


def parse_redirect(url: str) -> AuthorizationResponse:
    """The authorization response in the query of the redirect URL ``url``."""
    query = parse_qs(urlsplit(url).query, keep_blank_values=True)

    def one(name: str) -> str | None:
        values = query.get(name)
        return values[0] if values else None

    return AuthorizationResponse(
        one("code"), one("state"), one("iss"), one("error"), one("error_description")
    )


def _as_response(value: Any) -> AuthorizationResponse:
    if isinstance(value, AuthorizationResponse):
        return value
    if isinstance(value, str):
        return parse_redirect(value)
    if isinstance(value, tuple) and len(value) in (2, 3):
        return AuthorizationResponse(*value)
    raise TypeError("a redirect handler returns (code, state, iss) or the redirect URL")


async def authorization_code_grant(
    http: httpx2.AsyncClient,
    *,
    server: AuthorizationServer,
    resource: ProtectedResource,
    client: ClientCredentials,
    scopes: list[str],
    redirect_uri: str,
    redirect_handler: RedirectHandler,
    dpop: DPoPKey | None = None,
    policy: UrlPolicy = DEFAULT_POLICY,
) -> Token:
    """Run the authorization code grant and return the token (the token request fetched
    under ``policy``).

    Raises:
        AuthorizationError: the response's ``state`` is not ours, its ``iss`` is not the
            server's issuer (or absent where the server advertises it), or it is an error.
        TokenError: the token endpoint refused the code.
    """
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(24)
    params: dict[str, str] = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": resource.resource,
    }
    if scopes:
        params["scope"] = " ".join(scopes)
    if dpop is not None:
        params["dpop_jkt"] = dpop.thumbprint
    endpoint = server.authorization_endpoint
    parts = urlsplit(endpoint)
    query = parts.query + ("&" if parts.query else "") + urlencode(params)
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
    answer = redirect_handler(url)
    if inspect.isawaitable(answer):
        answer = await answer
    response = _as_response(answer)
    if response.state != state:
        raise AuthorizationError("the authorization response's state is not the one sent")
    # RFC 9207: compare iss as a plain string with the issuer the metadata was fetched for.
    if response.iss is not None:
        if response.iss != server.issuer:
            raise AuthorizationError(
                f"the authorization response comes from issuer {response.iss!r}, "
                f"not {server.issuer!r} (RFC 9207): refused"
            )
    elif server.metadata.get("authorization_response_iss_parameter_supported") is True:
        raise AuthorizationError(
            f"{server.issuer} advertises the iss parameter but the response has none "
            "(RFC 9207): refused"
        )
    if response.error is not None:
        raise AuthorizationError(
            f"authorization refused: {response.error}"
            + (f": {response.error_description}" if response.error_description else "")
        )
    if not response.code:
        raise AuthorizationError("the authorization response has no code")
    data = {
        "grant_type": "authorization_code",
        "code": response.code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": resource.resource,
    }
    offered = server.metadata.get("token_endpoint_auth_methods_supported")
    method = choose_auth_method(client, offered if isinstance(offered, list) else None)
    return await token_request(
        http,
        server.token_endpoint,
        data,
        client=client,
        auth_method=method,
        issuer=server.issuer,
        dpop=dpop,
        resource=resource.resource,
        requested=scopes,
        policy=policy,
    )


# ------------------------------------------------------------------- redirect handlers


class FollowRedirect:
    """A redirect handler for authorization servers that approve without a user: GET the
    authorization URL (redirects not followed) and read ``code`` / ``state`` / ``iss`` from
    the ``Location`` of its 3xx answer."""

    def __init__(self, http: httpx2.AsyncClient | None = None) -> None:
        self.http = http

    async def __call__(self, authorization_url: str) -> AuthorizationResponse:
        if self.http is not None:
            response = await self.http.get(authorization_url, follow_redirects=False)
        else:
            async with httpx2.AsyncClient(timeout=30) as http:
                response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise AuthorizationError(
                f"the authorization endpoint answered HTTP {response.status_code}, no redirect"
            )
        return parse_redirect(location)


_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>mcpfast</title>"
    b"<p>Authorization received: you can close this window.</p>"
)
_STALE_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>mcpfast</title>"
    b"<p>Not the authorization this client is waiting for (its state differs): ignored.</p>"
)


def _answer(status: bytes, page: bytes) -> bytes:
    """A whole HTTP/1.1 response that closes the connection (an HTML ``page``)."""
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\ncontent-type: text/html; charset=utf-8\r\n"
        + f"content-length: {len(page)}\r\n".encode()
        + b"connection: close\r\n\r\n"
        + page
    )


class LoopbackRedirect:
    """The redirect handler of command-line clients (RFC 8252 loopback redirect): binds
    ``127.0.0.1:port`` (0: a free port) at once, so `redirect_uri` is known before
    registration; each call opens the authorization URL in the browser (``webbrowser``,
    or ``open_browser`` of your own, e.g. one that prints the URL) and waits up to
    ``timeout`` seconds for the GET of the redirect whose ``state`` is the URL's, answering
    a small page (any other request: 404 or 400, and the wait goes on)."""

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        timeout: float = 300.0,
        open_browser: Callable[[str], Any] | None = None,
    ) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self._socket.listen(8)
        self._socket.setblocking(False)
        self.port = self._socket.getsockname()[1]
        self.path = path
        self.timeout = timeout
        self.open_browser = open_browser or webbrowser.open
        self.redirect_uri = f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self._socket.close()

    async def __call__(self, authorization_url: str) -> AuthorizationResponse:
        """Raises `AuthorizationError` (nothing opened): ``authorization_url`` is not a
        `secure_url`; `trio.TooSlowError`: no redirect within ``timeout``."""
        if not secure_url(authorization_url):
            raise AuthorizationError(
                f"refused to open the authorization URL {authorization_url[:80]!r}: "
                "only https: (or http: to a loopback host) is opened"
            )
        listener = trio.socket.from_stdlib_socket(self._socket.dup())
        try:
            with trio.fail_after(self.timeout):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._open, authorization_url)
                    response = await self._redirect(
                        listener, parse_redirect(authorization_url).state
                    )
                    nursery.cancel_scope.cancel()
                    return response
        finally:
            listener.close()

    async def _open(self, authorization_url: str) -> None:
        """``open_browser`` in a thread that is abandoned once the redirect came (a
        ``$BROWSER`` that waits for its process, as terminal browsers and scripts do, must not
        hold the login: the listener was bound before)."""
        await trio.to_thread.run_sync(self.open_browser, authorization_url, abandon_on_cancel=True)

    async def _redirect(self, listener: Any, state: str | None) -> AuthorizationResponse:
        """The redirect to `path` that carries ``state`` (other requests: 404 or 400)."""
        while True:
            connection, _ = await listener.accept()
            with connection:
                target = await self._read_target(connection)
                if target is None or urlsplit(target).path != self.path:
                    await connection.send(_answer(b"404 Not Found", b""))
                    continue
                response = parse_redirect(target)
                if response.state != state:
                    await connection.send(_answer(b"400 Bad Request", _STALE_PAGE))
                    continue
                await connection.send(_answer(b"200 OK", _PAGE))
                return response

    @staticmethod
    async def _read_target(connection: Any) -> str | None:
        data = b""
        with trio.move_on_after(10):
            while b"\r\n" not in data and len(data) < 16384:
                chunk = await connection.recv(4096)
                if not chunk:
                    break
                data += chunk
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        target = rest.partition(" ")[0]
        return target if method == "GET" and target.startswith("/") else None
