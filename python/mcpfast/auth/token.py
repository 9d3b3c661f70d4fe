"""The development authorization server's token endpoint (``/token``): client
authentication, the DPoP proof (RFC 9449, the shared `mcpfast.server.auth.dpop` verifier with
this server's rotating nonces) and the grants: authorization code with PKCE, refresh tokens
(rotated; a public client's bound to its DPoP key; a spent code or refresh token presented
again revokes every token of its grant: `_refuse_replay`), client credentials, the RFC 7523 JWT
bearer grant (a trusted issuer's assertion, or this server's own ID-JAG) and RFC 8693 token
exchange for an ID-JAG (`exchange`)."""

from __future__ import annotations

import re
import secrets
from typing import Any

from ..server.auth.dpop import DpopError
from ._asgi import Request, Response
from .clients import (
    AUTHORIZATION_CODE,
    CLIENT_CREDENTIALS,
    GRANT_TYPES,
    REFRESH_TOKEN,
    TOKEN_EXCHANGE,
    OAuthError,
    Params,
    RegisteredClient,
    b64url_sha256,
)
from .exchange import TokenExchange
from .issuer import Grant

_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")


class TokenEndpoint(TokenExchange):
    """``/token`` and its grants (on top of `TokenExchange`)."""

    async def _token(self, request: Request) -> Response:
        form = self._form(request)
        grant_type = form.need("grant_type")
        if grant_type not in GRANT_TYPES:
            raise OAuthError(
                "unsupported_grant_type", f"unsupported grant_type {grant_type[:60]!r}"
            )
        client = await self._authenticate(request, form, allow_public=True)
        if grant_type not in client.grant_types:
            raise OAuthError("unauthorized_client", f"this client may not use {grant_type}")
        jkt = await self._dpop_proof(request)
        if grant_type == AUTHORIZATION_CODE:
            answer = self._code_grant(form, client, jkt)
        elif grant_type == REFRESH_TOKEN:
            answer = self._refresh_grant(form, client, jkt)
        elif grant_type == CLIENT_CREDENTIALS:
            if client.token_endpoint_auth_method == "none":
                raise OAuthError(
                    "unauthorized_client", "client_credentials needs a confidential client"
                )
            scope = self._scopes(form.one("scope") or client.scope)
            resources = self._resources(form.all("resource"))
            answer = self._tokens(client, client.client_id, scope, resources, jkt, refresh=False)
        elif grant_type == TOKEN_EXCHANGE:
            answer = self._exchange_grant(form, client)
        else:
            answer = self._jwt_bearer_grant(form, client, jkt)
        return Response.json(200, answer, self._nonce_header())

    def _nonce_header(self) -> list[tuple[str, str]]:
        nonce = self.dpop.nonce
        return [("dpop-nonce", nonce)] if nonce is not None else []

    async def _dpop_proof(self, request: Request) -> str | None:
        """The thumbprint of the key of the request's DPoP proof (None: no proof)."""
        values = request.headers.get("dpop", [])
        if not values:
            return None
        if len(values) > 1:
            raise OAuthError("invalid_dpop_proof", "one DPoP header only")
        try:
            return await self.dpop.verify(values[0], method="POST", urls=[self.token_endpoint])
        except DpopError as exc:
            raise OAuthError(exc.error, exc.description, 400, self._nonce_header()) from None

    def _tokens(
        self,
        client: RegisteredClient,
        sub: str,
        scope: list[str],
        resources: list[str],
        jkt: str | None,
        *,
        refresh: bool,
        family: str | None = None,
    ) -> dict[str, Any]:
        """The token response: an access token and, with ``refresh`` (and the client allowed
        it), a refresh token, both of the grant ``family``."""
        answer: dict[str, Any] = {
            "access_token": self._issue(
                client_id=client.client_id,
                sub=sub,
                scope=scope,
                resources=resources,
                jkt=jkt,
                family=family,
            ),
            "token_type": "DPoP" if jkt else "Bearer",
            "expires_in": int(self.access_token_lifetime),
        }
        if scope:
            answer["scope"] = " ".join(scope)
        if refresh and REFRESH_TOKEN in client.grant_types:
            token = secrets.token_urlsafe(32)
            now = self.clock()
            if len(self._refresh) > 10_000:
                self._refresh = {t: g for t, g in self._refresh.items() if g.expires > now}
            self._refresh[token] = Grant(
                client_id=client.client_id,
                sub=sub,
                scope=scope,
                resources=resources,
                expires=now + self.refresh_token_lifetime,
                # RFC 9449 §5: a public client's refresh token is bound to its DPoP key.
                jkt=jkt if client.token_endpoint_auth_method == "none" else None,
                family=family,
            )
            if family is not None:
                self._family(family).refresh.append(token)
            answer["refresh_token"] = token
        return answer

    @staticmethod
    def _narrow_resources(asked: list[str], granted: list[str]) -> list[str]:
        """The resources of a token request: those asked for, which must be among those
        granted when the authorization named any (RFC 8707 §2.2); else those granted."""
        if not asked:
            return granted
        if granted and any(a not in granted for a in asked):
            raise OAuthError("invalid_target", "resource outside what was granted")
        return asked

    def _code_grant(
        self, form: Params, client: RegisteredClient, jkt: str | None
    ) -> dict[str, Any]:
        code = form.need("code")
        verifier = form.need("code_verifier")
        redirect_uri = form.one("redirect_uri")
        grant = self._codes.get(code)
        if grant is None or grant.expires < self.clock():
            raise OAuthError("invalid_grant", "unknown, used or expired authorization code")
        self._refuse_replay(grant)
        grant.spent = True  # single use, even when what follows fails
        if grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "the code was issued to another client")
        if (grant.redirect_uri_given or redirect_uri is not None) and (
            redirect_uri != grant.redirect_uri
        ):
            raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request")
        if not _VERIFIER.fullmatch(verifier) or not secrets.compare_digest(
            b64url_sha256(verifier), grant.challenge
        ):
            raise OAuthError("invalid_grant", "PKCE verification failed")
        if grant.jkt is not None and (jkt is None or jkt != grant.jkt):
            raise OAuthError("invalid_dpop_proof", "the DPoP key is not the one of dpop_jkt")
        resources = self._narrow_resources(self._resources(form.all("resource")), grant.resources)
        return self._tokens(
            client, grant.sub, grant.scope, resources, jkt, refresh=True, family=grant.family
        )

    def _refuse_replay(self, grant: Grant) -> None:
        """Refuse a spent code or refresh token, revoking every token of its grant: the
        credential leaked, and who holds the tokens it gave is unknown (RFC 6749 section
        4.1.2, OAuth 2.1 section 4.3.1).

        Raises:
            OAuthError: ``invalid_grant`` when ``grant`` is spent.
        """
        if grant.spent:
            self._revoke_family(grant.family)
            raise OAuthError(
                "invalid_grant", "this grant was already used: every token it gave is revoked"
            )

    def _refresh_grant(
        self, form: Params, client: RegisteredClient, jkt: str | None
    ) -> dict[str, Any]:
        token = form.need("refresh_token")
        grant = self._refresh.get(token)
        if grant is None or grant.expires < self.clock():
            raise OAuthError("invalid_grant", "unknown, revoked or expired refresh token")
        self._refuse_replay(grant)
        if grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "the refresh token was issued to another client")
        if grant.jkt is not None and (jkt is None or jkt != grant.jkt):
            raise OAuthError("invalid_grant", "this refresh token is bound to another DPoP key")
        asked = self._scopes(form.one("scope"))
        if any(s not in grant.scope for s in asked):
            raise OAuthError("invalid_scope", "scope outside what was granted")
        scope = asked or grant.scope
        resources = self._narrow_resources(self._resources(form.all("resource")), grant.resources)
        grant.spent = True  # rotation: kept until it expires, to notice a replay
        answer = self._tokens(
            client, grant.sub, scope, resources, jkt, refresh=True, family=grant.family
        )
        if grant.jkt is not None and "refresh_token" in answer:
            self._refresh[answer["refresh_token"]].jkt = grant.jkt
        return answer

    def _jwt_bearer_grant(
        self, form: Params, client: RegisteredClient, jkt: str | None
    ) -> dict[str, Any]:
        assertion = form.need("assertion")

        def refuse(description: str) -> OAuthError:
            return OAuthError("invalid_grant", description)

        if self._own_id_jag(assertion):
            user, granted, targets = self._id_jag_grant(form, client, assertion)
            return self._tokens(client, user, granted, targets, jkt, refresh=False)
        unverified = self._unverified_claims(assertion)
        if unverified is None:
            raise refuse("malformed assertion")
        keys = self._trusted.get(str(unverified.get("iss")))
        if keys is None:
            raise refuse("the assertion's issuer is not trusted")
        claims = self._verify_assertion(assertion, keys, refuse, client.client_id)
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise refuse("the assertion has no sub")
        scope = self._scopes(form.one("scope") or client.scope)
        resources = self._resources(form.all("resource"))
        return self._tokens(client, sub, scope, resources, jkt, refresh=False)
