"""The load users' authorization (gevent, no Trio): one `Credentials` per process, whose
``header`` every request of every user carries.

* `StaticBearer`: ``--mcp-bearer-env VAR``: the token read from that environment variable
  (never from the command line), presented as is.
* `ClientCredentialsToken`: ``--mcp-client-id`` with the secret from ``--mcp-client-secret-env``:
  the token endpoint found the way `mcpfast.client.oauth.OAuth` finds it (the protected resource
  metadata from the 401's ``WWW-Authenticate`` challenge or the well-known URLs, then the
  authorization server's metadata, which must be ``--mcp-auth-issuer``'s: the secret goes to
  no other; ``--mcp-token-url`` skips that and is the secret's), then a ``client_credentials``
  grant (`mcpfast.client.oauth.ClientCredentialsGrant`, with ``resource`` and the scopes). The
  token is shared by every user of the process and obtained again before it expires (at
  `REFRESH_AT` of its lifetime) and once on a 401 (`Credentials.unauthorized`). With
  ``--mcp-dpop`` the process makes one DPoP key (`mcpfast.client.oauth.DPoPKey`, ES256), the
  token is asked for with a proof (so bound to that key: ``token_type`` DPoP), and every request
  carries a fresh proof for its method and URL (`Credentials.sign`); a ``DPoP-Nonce`` a response
  carries is adopted for the next proofs, and a 401 ``use_dpop_nonce`` is sent again once with it.

The OAuth client's own coroutines (`discovery`, `grants`, `tokens`) are reused as they are: they
are given `_BlockingHttp`, whose requests are plain blocking gevent requests (or, in the fast
engine's plan process, a `mcpfast.load.blocking.BlockingSession`'s: no gevent), so a coroutine
never suspends and `_resolve` runs it to its end without an event loop. Nothing here imports
locust or gevent until a `ClientCredentialsToken` of a locust process is made.

The hot path is a float comparison (`Credentials.current`) and a precomputed header string;
with DPoP, also one ES256 signature per request (joserfc; see `sign`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlencode

import httpx2
import orjson

from .._remote import FetchError, Reply, Request, check_url
from ..client.oauth.discovery import (
    AuthorizationServer,
    Challenge,
    DiscoveryError,
    ProtectedResource,
    discover_authorization_server,
    discover_protected_resource,
    parse_challenges,
)
from ..client.oauth.dpop import DPoPKey
from ..client.oauth.flow import select_scopes
from ..client.oauth.grants import ClientCredentialsGrant, GrantContext
from ..client.oauth.tokens import ClientCredentials, Token, TokenError
from . import wire

if TYPE_CHECKING:
    from .blocking import BlockingSession

__all__ = [
    "AuthError",
    "ClientCredentialsToken",
    "Credentials",
    "StaticBearer",
    "credentials_from_options",
]

TIMEOUT = 10.0
REFRESH_AT = 0.8
"""A token is obtained again at this share of its lifetime."""
MIN_REFRESH_INTERVAL = 1.0
"""A 401 obtains a new token only when the one refused is at least this old (seconds): a server
that refuses every token is not answered with a token request per request."""
RETRY_AFTER_FAILURE = 5.0

T = TypeVar("T")


class AuthError(Exception):
    """No token could be had (the message says why)."""


TOKEN_RENEWED = "token renewed"
NEW_NONCE = "DPoP nonce"
"""Why `Credentials.unauthorized` has a refused request sent again."""


def _header(headers: Any, name: str) -> str:
    """Every value of header ``name`` of a response (geventhttpclient's or a dict), joined."""
    if headers is None:
        return ""
    values = [str(v) for k, v in headers.items() if k.lower() == name]
    return ", ".join(values)


class Credentials:
    """What every request of the process carries: ``header`` (the ``Authorization`` value)."""

    header: str = ""

    def current(self) -> str:
        """The header to send now (obtained again first when it is due)."""
        return self.header

    def sign(self, headers: dict[str, str], method: str, url: str) -> str:
        """Put the credentials for ``method url`` in ``headers`` (``Authorization``, and a
        ``DPoP`` proof for a DPoP-bound token); the ``Authorization`` value sent."""
        used = headers["authorization"] = self.current()
        return used

    def answered(self, headers: Any) -> None:
        """A response came with ``headers``: adopt what it hands out (a ``DPoP-Nonce``)."""

    def unauthorized(self, used: str, headers: Any = None) -> str | None:
        """A request with ``used`` got a 401 with ``headers``: why it should be sent again
        (`TOKEN_RENEWED`: a newer token than ``used`` is held now; `NEW_NONCE`: the server
        wants its DPoP nonce, adopted now), or None."""
        return None

    def start(self) -> None:
        """Obtain what the first request needs.

        Raises:
            AuthError: it could not be had.
        """


class StaticBearer(Credentials):
    """A bearer token given to the run (``--bearer-env``)."""

    def __init__(self, token: str) -> None:
        self.header = "Bearer " + token.strip()


# ------------------------------------------------------------------ the OAuth client's code


@dataclass
class _Response:
    """What the OAuth client's coroutines read of an ``httpx2.Response``."""

    status_code: int
    content: bytes
    headers: dict[str, str] = field(default_factory=dict)


class _BlockingHttp:
    """The `mcpfast._remote.Fetcher` the discovery and token code is given, over ``session``
    (None: a geventhttpclient session whose requests locust does not count); every call
    completes before it returns."""

    def __init__(self, base_url: str, session: BlockingSession | None = None) -> None:
        if session is not None:
            self.session: Any = session
            return
        from locust.contrib.fasthttp import FastHttpSession
        from locust.event import EventHook

        self.session = FastHttpSession(
            base_url,
            EventHook(),  # type: ignore[no-untyped-call]
            None,
            connection_timeout=TIMEOUT,
            network_timeout=TIMEOUT,
        )

    def _send(
        self, method: str, url: str, headers: dict[str, str], body: str | bytes | None = None
    ) -> _Response:
        with self.session.request(
            method,
            url,
            name="auth",
            data=cast(Any, body),
            headers=headers,
            catch_response=True,
            allow_redirects=False,
        ) as response:
            response.success()
            if response.status_code == 0:
                error = getattr(response, "error", None)
                raise AuthError(f"{method} {url}: no answer ({error!r})")
            seen: dict[str, str] = {}
            for key, value in response.headers.items() if response.headers is not None else ():
                name = key.lower()  # repeated fields (WWW-Authenticate) joined, as RFC 9110 allows
                seen[name] = f"{seen[name]}, {value}" if name in seen else str(value)
            return _Response(response.status_code, response.content or b"", seen)

    async def fetch(self, request: Request) -> Reply:
        """`mcpfast._remote.fetch` as far as a blocking client goes (a `Fetcher`): the URL
        checked (``policy.public_only`` not supported: nothing is resolved), no redirects, the
        body capped once read (geventhttpclient reads it whole), `TIMEOUT` per operation."""
        method, url, what = request.method, request.url, request.what
        if request.policy.public_only or request.auth is not None:
            raise FetchError("the load tester fetches without public_only or auth")
        await check_url(url, request.policy, what)
        sent = dict(request.headers or {})
        body: str | bytes | None = None
        if request.data is not None:
            sent["content-type"] = "application/x-www-form-urlencoded"
            body = urlencode(dict(request.data))
        elif request.json is not None:
            sent["content-type"] = "application/json"
            body = orjson.dumps(request.json)
        response = self._send(method, url, sent, body)
        if 300 <= response.status_code < 400 and "location" in response.headers:
            raise FetchError(f"the {what} at {url} redirects: redirects are not followed")
        if len(response.content) > request.max_bytes:
            raise FetchError(f"the {what} at {url} is over {request.max_bytes:,} bytes")
        return Reply(response.status_code, httpx2.Headers(response.headers), response.content)

    def challenge(self, server_url: str) -> Challenge | None:
        """The ``WWW-Authenticate`` challenge of an unauthenticated ``server/discover`` (None:
        the server did not answer 401)."""
        body, headers = wire.modern_request(wire.modern_transport(), 0, "server/discover")
        response = self._send("POST", server_url, headers, body)
        if response.status_code != 401:
            return None
        challenges = parse_challenges(response.headers.get("www-authenticate"))
        ours = [c for c in challenges if c.scheme.lower() in ("bearer", "dpop")]
        for found in ours:
            if found.resource_metadata or found.error:
                return found
        return ours[0] if ours else None


def _resolve(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (its I/O is `_BlockingHttp`'s) to its end."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    coroutine.close()
    raise RuntimeError("an OAuth coroutine suspended")  # pragma: no cover


# ------------------------------------------------------------------- client credentials


def _gevent_lock() -> Any:
    """A lock the users' greenlets share (gevent's: a locust process)."""
    from gevent.lock import Semaphore  # type: ignore[import-untyped]

    return Semaphore()


class ClientCredentialsToken(Credentials):
    """A ``client_credentials`` token for the process, obtained again before it expires and
    once on a 401 (see the module doc); its requests through ``session`` (None: locust's,
    shared by the users' greenlets under a gevent lock)."""

    def __init__(
        self,
        server_url: str,
        client_id: str,
        client_secret: str,
        *,
        scopes: list[str] | None = None,
        token_url: str | None = None,
        issuer: str | None = None,
        dpop: bool = False,
        note: Any = None,
        session: BlockingSession | None = None,
    ) -> None:
        self.server_url = server_url
        self.client = ClientCredentials(
            client_id, client_secret=client_secret, issuer=issuer or token_url
        )
        self.scopes = scopes
        self.token_url = token_url
        self.note = note
        self.dpop = DPoPKey() if dpop else None
        """The process's DPoP key (None: bearer tokens)."""
        self.http = _BlockingHttp(server_url, session)
        self.lock: Any = threading.Lock() if session is not None else _gevent_lock()
        self.context: GrantContext | None = None
        self.token: Token | None = None
        self.due = float("inf")
        """When (``time.monotonic``) to obtain the next token."""
        self.expires = float("inf")
        self.obtained = 0.0
        self.tokens = 0
        """How many tokens this process obtained."""

    def _context(self) -> GrantContext:
        """The grant's context: the authorization server and resource, found once."""
        if self.context is not None:
            return self.context
        http = cast(Any, self.http)
        issuer = str(self.client.issuer)
        if self.token_url:
            resource = ProtectedResource(self.server_url, None, None)
            try:
                server = AuthorizationServer(issuer, {"token_endpoint": self.token_url}, None)
            except DiscoveryError as exc:
                raise AuthError(f"--token-url: {exc}") from None
            scopes = list(self.scopes or [])
        else:
            challenge = self.http.challenge(self.server_url)
            try:
                resource = _resolve(discover_protected_resource(http, self.server_url, challenge))
                if resource.metadata is None:
                    raise AuthError(
                        f"{self.server_url} publishes no protected resource metadata: "
                        "give --token-url"
                    )
                server = _resolve(
                    discover_authorization_server(http, resource.issuer_for([issuer]))
                )
            except DiscoveryError as exc:
                raise AuthError(f"finding the token endpoint: {exc}") from None
            scopes = (
                list(self.scopes)
                if self.scopes is not None
                else select_scopes(challenge, resource, server, offline_access=False)
            )
        self.context = GrantContext(http, server, resource, self.client, scopes, self.dpop)
        return self.context

    def _obtain(self) -> None:
        """A new token (raises `AuthError`)."""
        try:
            token = _resolve(ClientCredentialsGrant().obtain(self._context()))
        except TokenError as exc:
            raise AuthError(str(exc)) from None
        now = time.monotonic()
        self.token = token
        self.tokens += 1
        self.obtained = now
        if token.expires_at is not None:
            lifetime = max(token.expires_at - time.time(), 0.0)
            self.expires = now + lifetime
            self.due = now + lifetime * REFRESH_AT
        else:
            self.expires = self.due = float("inf")
        self.header = f"{'DPoP' if token.is_dpop else 'Bearer'} {token.access_token}"

    def start(self) -> None:
        with self.lock:
            if self.token is None:
                self._obtain()

    def current(self) -> str:
        if time.monotonic() >= self.due:
            self._refresh()
        return self.header

    def _refresh(self) -> None:
        """Obtain the next token; while another user does, keep using this one unless it has
        expired. A failure keeps the old token and tries again `RETRY_AFTER_FAILURE` later."""
        if self.lock.locked() and time.monotonic() < self.expires:
            return
        with self.lock:
            if time.monotonic() < self.due:
                return  # another user just did
            self._renew("it is due")

    def _renew(self, why: str) -> bool:
        try:
            self._obtain()
            return True
        except Exception as exc:  # AuthError, or no answer: the run goes on with the old one
            self.due = time.monotonic() + RETRY_AFTER_FAILURE
            if self.note is not None:
                self.note(f"a new token ({why}) could not be had: {exc}")
            return False

    def sign(self, headers: dict[str, str], method: str, url: str) -> str:
        used = headers["authorization"] = self.current()
        token = self.token
        if self.dpop is not None and token is not None and token.is_dpop:
            headers["dpop"] = self.dpop.proof(method, url, access_token=token.access_token)
        return used

    def answered(self, headers: Any) -> None:
        if self.dpop is not None and headers is not None:
            nonce = _header(headers, "dpop-nonce")
            if nonce:
                self.dpop.remember_nonce(self.server_url, {"dpop-nonce": nonce})

    def unauthorized(self, used: str, headers: Any = None) -> str | None:
        if self.dpop is not None and "use_dpop_nonce" in _header(headers, "www-authenticate"):
            nonce = _header(headers, "dpop-nonce")
            if nonce:
                self.dpop.remember_nonce(self.server_url, {"dpop-nonce": nonce})
                return NEW_NONCE
        if self.header != used:
            return TOKEN_RENEWED  # another user already has a newer one
        with self.lock:
            if self.header != used:
                return TOKEN_RENEWED
            if time.monotonic() - self.obtained < MIN_REFRESH_INTERVAL:
                return None
            return TOKEN_RENEWED if self._renew("the server answered 401") else None


def credentials_from_options(
    server_url: str,
    *,
    bearer_env: str = "",
    client_id: str = "",
    client_secret_env: str = "",
    scope: str = "",
    token_url: str = "",
    issuer: str = "",
    dpop: bool = False,
    note: Any = None,
    session: BlockingSession | None = None,
) -> Credentials | None:
    """The process's `Credentials` from the suite's options (None: the run is unauthenticated;
    ``dpop``: DPoP-bound client credentials tokens; ``session``: `ClientCredentialsToken`'s).

    Raises:
        AuthError: an environment variable named is unset or empty; a client without
            ``issuer`` or ``token_url`` (its secret's authorization server).
    """
    if bearer_env:
        token = os.environ.get(bearer_env, "").strip()
        if not token:
            raise AuthError(f"the environment variable {bearer_env} (--bearer-env) is not set")
        return StaticBearer(token)
    if not client_id:
        return None
    secret = os.environ.get(client_secret_env, "") if client_secret_env else ""
    if not secret:
        raise AuthError(
            f"the environment variable {client_secret_env or '(none)'} "
            "(--client-secret-env) is not set"
        )
    if not (issuer or token_url):
        raise AuthError("--client-id needs --auth-issuer (the secret's authorization server)")
    return ClientCredentialsToken(
        server_url,
        client_id,
        secret,
        scopes=scope.split() if scope else None,
        token_url=token_url or None,
        issuer=issuer or None,
        dpop=dpop,
        note=note,
        session=session,
    )
