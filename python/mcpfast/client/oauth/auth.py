"""`OAuth`: an ``httpx2.Auth`` that gets, keeps, refreshes and presents access tokens for a
protected MCP server (the MCP authorization spec, 2025-06-18 to 2026-07-28, and the 2025-03-26
fallbacks)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import httpx2
import trio

from ..._remote import UrlPolicy
from .discovery import (
    AuthorizationServer,
    Challenge,
    discover_authorization_server,
    discover_protected_resource,
    parse_challenges,
)
from .dpop import DPoPKey
from .flow import (
    AuthorizationError,
    RedirectHandler,
    authorization_code_grant,
    select_scopes,
)
from .grants import Grant, GrantContext
from .registration import ClientMetadata, obtain_client
from .tokens import (
    ClientCredentials,
    MemoryTokenStore,
    Token,
    TokenError,
    TokenStore,
    choose_auth_method,
    token_request,
)

__all__ = ["OAuth"]


def _resource_key(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))


def _pick(challenges: list[Challenge]) -> Challenge | None:
    ours = [c for c in challenges if c.scheme.lower() in ("bearer", "dpop")]
    for challenge in ours:
        if challenge.resource_metadata or challenge.error:
            return challenge
    return ours[0] if ours else (challenges[0] if challenges else None)


class OAuth(httpx2.Auth):
    """OAuth 2.1 for an MCP client: ``httpx2.AsyncClient(auth=OAuth(...))``, then
    ``mcpfast.connect(url, http_client=that_client)``.

    A request goes out with the token held for its URL (refreshed first when it has expired
    and a refresh token came with it). On 401 the protected resource metadata is fetched
    (again: the authorization server may have changed), then the authorization server's, a
    client id is found (`registration`), and the grant runs: the authorization code flow
    through ``redirect_handler`` unless ``grant`` says otherwise (`grants`); the request is
    retried once with the new token. On 403 ``insufficient_scope`` it re-authorizes with the
    union of the scopes held and those challenged, at most ``max_step_ups`` times in a row
    across requests (reset by a response that is not a 401/403). With DPoP (``dpop=True`` or
    a `DPoPKey`), tokens are asked for with a proof where the authorization server advertises
    ``dpop_signing_alg_values_supported``, and a DPoP token is presented with the ``DPoP``
    scheme and a fresh proof per request; ``use_dpop_nonce`` is answered once per request.

    Options: ``redirect_handler`` (needed by the authorization code flow: `LoopbackRedirect`
    for a person at a browser, `FollowRedirect` for servers that approve without a user, as in
    tests) and ``redirect_uri`` (default: the handler's ``redirect_uri``, else
    ``http://127.0.0.1/callback``); ``client``: pre-registered `ClientCredentials` (one, or
    several with their ``issuer``): with a secret or key among them, only the authorization
    servers they are for are used (the first of them the protected resource metadata names;
    another, or a server without that metadata whose origin is not one of them, is refused
    with `UntrustedIssuer`, and their metadata must be published: no default endpoints);
    ``client_metadata_url``: this client's Client ID Metadata Document (used where the server
    supports them); ``client_metadata``: what dynamic registration sends; ``scopes``: ask for
    these instead of what the challenge or metadata say; ``offline_access``: add that scope
    where the authorization server lists it (a refresh token is wanted); ``store``: a
    `TokenStore` (default in memory); ``http_client``: the client for the authorization
    requests (default: one per authorization, ``timeout`` seconds).

    Every document and endpoint the server names is fetched by `mcpfast._remote.fetch`: https
    (http to loopback) unless on the MCP server's own origin, no redirects, a size cap and a
    total deadline. ``public_only``: those off the server's origin must also resolve to public
    addresses only (no private, loopback, link-local... ones: see `mcpfast._remote`).
    """

    requires_request_body = True

    def __init__(
        self,
        *,
        redirect_handler: RedirectHandler | None = None,
        redirect_uri: str | None = None,
        client: ClientCredentials | Sequence[ClientCredentials] | None = None,
        client_metadata_url: str | None = None,
        client_metadata: ClientMetadata | None = None,
        grant: Grant | None = None,
        scopes: Sequence[str] | None = None,
        offline_access: bool = True,
        store: TokenStore | None = None,
        dpop: bool | DPoPKey = False,
        max_step_ups: int = 2,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 30.0,
        public_only: bool = False,
    ) -> None:
        self.redirect_handler = redirect_handler
        self.redirect_uri = (
            redirect_uri
            or getattr(self.redirect_handler, "redirect_uri", None)
            or "http://127.0.0.1/callback"
        )
        if client is None:
            self.preregistered: list[ClientCredentials] = []
        elif isinstance(client, ClientCredentials):
            self.preregistered = [client]
        else:
            self.preregistered = list(client)
        self.bound_issuers = [c.issuer for c in self.preregistered if c.confidential and c.issuer]
        """The authorization servers the secrets are for (empty: no secret, any server)."""
        self.client_metadata_url = client_metadata_url
        self.client_metadata = client_metadata or ClientMetadata(redirect_uris=[self.redirect_uri])
        if self.redirect_uri not in self.client_metadata.redirect_uris:
            self.client_metadata.redirect_uris.append(self.redirect_uri)
        self.grant = grant
        self.scopes = list(scopes) if scopes is not None else None
        self.offline_access = offline_access
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.dpop: DPoPKey | None = DPoPKey() if dpop is True else (dpop or None)
        self.max_step_ups = max_step_ups
        self.http_client = http_client
        self.timeout = timeout
        self.policy = UrlPolicy(public_only=public_only)
        self._lock = trio.Lock()
        self._tokens: dict[str, Token] = {}
        self._servers: dict[str, AuthorizationServer] = {}
        self._clients: dict[str, ClientCredentials] = {}
        self._step_ups = 0
        self.authorizations = 0
        """How many times a grant ran (not counting refreshes)."""

    # ----------------------------------------------------------------- the httpx2 hook

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        key = _resource_key(str(request.url))
        token = await self._usable_token(key)
        self._sign(request, token)
        response = yield request
        self._remember_nonce(request, response)
        reauthorized = nonce_retried = False
        while True:
            challenges = parse_challenges(response.headers.get_list("www-authenticate"))
            challenge = _pick(challenges)
            if response.status_code == 401:
                if (
                    token is not None
                    and token.is_dpop
                    and any(c.error == "use_dpop_nonce" for c in challenges)
                    and not nonce_retried
                    and self.dpop is not None
                    and self.dpop.nonce_for(str(request.url))
                ):
                    nonce_retried = True
                elif reauthorized:
                    break
                else:
                    reauthorized = True
                    token = await self._reauthorize(key, str(request.url), challenge, token)
            elif (
                response.status_code == 403
                and challenge is not None
                and challenge.error == "insufficient_scope"
            ):
                stepped = await self._step_up(key, str(request.url), challenge, token)
                if stepped is None:
                    break
                token = stepped
            else:
                break
            self._sign(request, token)
            response = yield request
            self._remember_nonce(request, response)
        if response.status_code not in (401, 403):
            self._step_ups = 0

    # ------------------------------------------------------------------- presenting

    def _sign(self, request: httpx2.Request, token: Token | None) -> None:
        request.headers.pop("dpop", None)
        if token is None:
            request.headers.pop("authorization", None)
            return
        if token.is_dpop and self.dpop is not None:
            request.headers["authorization"] = f"DPoP {token.access_token}"
            request.headers["dpop"] = self.dpop.proof(
                request.method, str(request.url), access_token=token.access_token
            )
        else:
            request.headers["authorization"] = f"Bearer {token.access_token}"

    def _remember_nonce(self, request: httpx2.Request, response: httpx2.Response) -> None:
        if self.dpop is not None:
            self.dpop.remember_nonce(str(request.url), response.headers)

    # ------------------------------------------------------------------- tokens held

    async def _current(self, key: str) -> Token | None:
        token = self._tokens.get(key)
        if token is None:
            token = await self.store.get_token(key)
            if token is not None:
                self._tokens[key] = token
        return token

    async def _keep(self, key: str, token: Token | None) -> None:
        if token is None:
            self._tokens.pop(key, None)
        else:
            self._tokens[key] = token
        await self.store.set_token(key, token)

    async def _usable_token(self, key: str) -> Token | None:
        token = await self._current(key)
        if token is None or not token.expired():
            return token
        async with self._lock:
            current = await self._current(key)
            if current is not token:
                return current
            policy = self.policy.trusting(key)
            refreshed = await self._refresh(token, policy) if token.refresh_token else None
            await self._keep(key, refreshed)
            return refreshed

    async def token_for(self, url: str) -> Token | None:
        """The token held for the MCP server at ``url`` (None before the first 401)."""
        return await self._current(_resource_key(url))

    # ------------------------------------------------------------------ authorization

    @asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx2.AsyncClient]:
        if self.http_client is not None:
            yield self.http_client
            return
        async with httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as http:
            yield http

    async def _server(
        self, http: httpx2.AsyncClient, issuer: str, legacy: bool, policy: UrlPolicy
    ) -> AuthorizationServer:
        server = self._servers.get(issuer)
        if server is None:
            server = await discover_authorization_server(
                http, issuer, legacy_fallback=legacy, policy=policy
            )
            self._servers[issuer] = server
        return server

    async def _client(
        self, http: httpx2.AsyncClient, server: AuthorizationServer, policy: UrlPolicy
    ) -> ClientCredentials:
        client = self._clients.get(server.issuer)
        if client is None or client.expired:
            client = await obtain_client(
                http,
                server,
                store=self.store,
                preregistered=self.preregistered,
                metadata_url=self.client_metadata_url,
                metadata=self.client_metadata,
                policy=policy,
            )
            self._clients[server.issuer] = client
        return client

    def _dpop_for(self, server: AuthorizationServer) -> DPoPKey | None:
        if self.dpop is None:
            return None
        return (
            self.dpop
            if server.supports("dpop_signing_alg_values_supported", self.dpop.algorithm)
            else None
        )

    async def _refresh(self, token: Token, policy: UrlPolicy) -> Token | None:
        """A new token from ``token``'s refresh token; None when the server refuses."""
        if not token.refresh_token or not token.issuer:
            return None
        async with self._http() as http:
            try:
                server = await self._server(http, token.issuer, False, policy)
                client = await self._client(http, server, policy)
                offered = server.metadata.get("token_endpoint_auth_methods_supported")
                data = {"grant_type": "refresh_token", "refresh_token": token.refresh_token}
                if token.resource:
                    data["resource"] = token.resource
                fresh = await token_request(
                    http,
                    server.token_endpoint,
                    data,
                    client=client,
                    auth_method=choose_auth_method(
                        client, offered if isinstance(offered, list) else None
                    ),
                    issuer=server.issuer,
                    dpop=self._dpop_for(server) if token.is_dpop else None,
                    resource=token.resource,
                    requested=token.requested_scopes,
                    policy=policy,
                )
            except TokenError:
                return None
        fresh.refresh_token = fresh.refresh_token or token.refresh_token
        return fresh

    async def _reauthorize(
        self, key: str, url: str, challenge: Challenge | None, failed: Token | None
    ) -> Token:
        async with self._lock:
            current = await self._current(key)
            if current is not None and current is not failed:
                return current  # another request got one while this one waited
            token = await self._authorize(url, challenge, failed, step_up=False)
            await self._keep(key, token)
            return token

    async def _step_up(
        self, key: str, url: str, challenge: Challenge, failed: Token | None
    ) -> Token | None:
        async with self._lock:
            current = await self._current(key)
            if current is not None and current is not failed:
                return current
            if self._step_ups >= self.max_step_ups:
                return None
            self._step_ups += 1
            token = await self._authorize(url, challenge, failed, step_up=True)
            await self._keep(key, token)
            return token

    async def _authorize(
        self, url: str, challenge: Challenge | None, previous: Token | None, *, step_up: bool
    ) -> Token:
        async with self._http() as http:
            policy = self.policy.trusting(url)
            resource = await discover_protected_resource(http, url, challenge, policy=policy)
            legacy = resource.metadata is None and not self.bound_issuers
            issuer = resource.issuer_for(self.bound_issuers)
            server = await self._server(http, issuer, legacy, policy)
            if (
                not step_up
                and previous is not None
                and previous.refresh_token
                and previous.issuer == server.issuer
            ):
                refreshed = await self._refresh(previous, policy)
                if refreshed is not None:
                    return refreshed
            needs = self._needs_client(server)
            client = await self._client(http, server, policy) if needs else None
            if self.scopes is not None and not step_up:
                scopes = list(self.scopes)
            else:
                held = previous.requested_scopes if (step_up and previous) else None
                if held is None and step_up and self.scopes:
                    held = list(self.scopes)
                scopes = select_scopes(
                    challenge, resource, server, previous=held, offline_access=self.offline_access
                )
            dpop = self._dpop_for(server)
            self.authorizations += 1
            if self.grant is not None:
                context = GrantContext(http, server, resource, client, scopes, dpop, policy)
                return await self.grant.obtain(context)
            assert client is not None
            if self.redirect_handler is None:
                raise AuthorizationError(
                    "the authorization code flow needs OAuth(redirect_handler=...): "
                    "LoopbackRedirect() opens a browser, FollowRedirect() suits servers "
                    "that approve without a user"
                )
            return await authorization_code_grant(
                http,
                server=server,
                resource=resource,
                client=client,
                scopes=scopes,
                redirect_uri=self.redirect_uri,
                redirect_handler=self.redirect_handler,
                dpop=dpop,
                policy=policy,
            )

    def _needs_client(self, server: AuthorizationServer) -> bool:
        return (
            self.grant is None
            or bool(self.preregistered)
            or server.registration_endpoint is not None
        )
