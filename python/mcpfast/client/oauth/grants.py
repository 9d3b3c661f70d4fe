"""Grants without a user: what `OAuth(grant=...)` runs instead of the authorization code flow.

- `ClientCredentialsGrant`: ``client_credentials`` (RFC 6749 section 4.4) with the client's
  secret (basic or post) or a JWT assertion (``private_key_jwt``, RFC 7523 section 2.2), as
  the authorization server offers.
- `JwtBearerGrant`: ``urn:ietf:params:oauth:grant-type:jwt-bearer`` (RFC 7523 section 2.1)
  with a JWT a workload identity issued (SEP-1933: a Kubernetes service account token, a
  cloud instance identity), bound to the authorization server it is for (sent to no other);
  a refusal is raised, never retried with another grant.
- `IdJagGrant`: Enterprise-Managed Authorization (SEP-990): the user's ID token is exchanged
  at the enterprise identity provider for an Identity Assertion JWT Authorization Grant
  (RFC 8693 token exchange), which is then presented to the authorization server as a JWT
  bearer grant.

A grant is any object with ``async obtain(context) -> Token``; `GrantContext` is what it gets.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2

from ..._remote import DEFAULT_POLICY, UrlPolicy
from .discovery import AuthorizationServer, ProtectedResource
from .dpop import DPoPKey
from .tokens import (
    ClientCredentials,
    Token,
    TokenError,
    choose_auth_method,
    require_bound,
    token_request,
)

__all__ = [
    "JWT_BEARER",
    "TOKEN_EXCHANGE",
    "ClientCredentialsGrant",
    "Grant",
    "GrantContext",
    "IdJagGrant",
    "JwtBearerGrant",
]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


@dataclass
class GrantContext:
    """What a grant needs: an HTTP client (not the protected one), the authorization server,
    the protected resource, the client, the scopes chosen, the DPoP key (if any) and the
    `UrlPolicy` its token requests are fetched under."""

    http: httpx2.AsyncClient
    server: AuthorizationServer
    resource: ProtectedResource
    client: ClientCredentials | None
    scopes: list[str]
    dpop: DPoPKey | None
    policy: UrlPolicy = DEFAULT_POLICY

    async def request(self, data: dict[str, str]) -> Token:
        """POST ``data`` to the token endpoint with the client's authentication, ``resource``
        and ``scope`` added."""
        form = dict(data)
        form.setdefault("resource", self.resource.resource)
        if self.scopes:
            form.setdefault("scope", " ".join(self.scopes))
        offered = self.server.metadata.get("token_endpoint_auth_methods_supported")
        method = (
            choose_auth_method(self.client, offered if isinstance(offered, list) else None)
            if self.client is not None
            else "none"
        )
        return await token_request(
            self.http,
            self.server.token_endpoint,
            form,
            client=self.client,
            auth_method=method,
            issuer=self.server.issuer,
            dpop=self.dpop,
            resource=self.resource.resource,
            requested=self.scopes,
            policy=self.policy,
        )


class Grant(Protocol):
    async def obtain(self, context: GrantContext) -> Token: ...


class ClientCredentialsGrant:
    """``client_credentials``: the client authenticates as itself (give its credentials to
    `OAuth(client=ClientCredentials(client_id, client_secret=... or private_key=...))`)."""

    async def obtain(self, context: GrantContext) -> Token:
        if context.client is None:
            raise TokenError(0, "invalid_client", "client_credentials needs client credentials")
        return await context.request({"grant_type": "client_credentials"})


Assertion = str | Callable[[], "str | Awaitable[str]"]


async def _resolve(assertion: Assertion) -> str:
    if isinstance(assertion, str):
        return assertion
    value = assertion()
    if inspect.isawaitable(value):
        value = await value
    return str(value)


class JwtBearerGrant:
    """The RFC 7523 JWT bearer grant with ``assertion``: a JWT, or a callable returning one
    (read again for every token request: workload tokens rotate), for the authorization
    server ``issuer`` only (as its metadata's ``issuer``)."""

    def __init__(self, assertion: Assertion, *, issuer: str) -> None:
        self.assertion = assertion
        self.issuer = issuer

    async def obtain(self, context: GrantContext) -> Token:
        """Raises `UntrustedIssuer` (nothing read or sent): the server is not ``issuer``."""
        require_bound(self.issuer, context.server.issuer, "the JWT bearer assertion")
        return await context.request(
            {"grant_type": JWT_BEARER, "assertion": await _resolve(self.assertion)}
        )


class IdJagGrant:
    """SEP-990: exchange ``id_token`` (the user's, from the enterprise IdP) at
    ``idp_token_endpoint`` for an ID-JAG whose audience is the authorization server, then
    use it as a JWT bearer grant there (with the client's own authentication)."""

    def __init__(
        self,
        *,
        idp_token_endpoint: str,
        id_token: Assertion,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
    ) -> None:
        self.idp_token_endpoint = idp_token_endpoint
        self.id_token = id_token
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret

    async def obtain(self, context: GrantContext) -> Token:
        form: dict[str, Any] = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": await _resolve(self.id_token),
            "subject_token_type": ID_TOKEN,
            "requested_token_type": ID_JAG,
            "audience": context.server.issuer,
            "resource": context.resource.resource,
        }
        if context.scopes:
            form["scope"] = " ".join(context.scopes)
        idp = (
            ClientCredentials(
                self.idp_client_id,
                client_secret=self.idp_client_secret,
                issuer=self.idp_token_endpoint,
            )
            if self.idp_client_id
            else None
        )
        method = "client_secret_basic" if idp and idp.client_secret else "none"
        jag = await token_request(
            context.http,
            self.idp_token_endpoint,
            form,
            client=idp,
            auth_method=method,
            issuer=self.idp_token_endpoint,
            policy=context.policy,
        )
        return await context.request({"grant_type": JWT_BEARER, "assertion": jag.access_token})
