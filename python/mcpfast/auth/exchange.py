"""Enterprise-managed authorization at the development authorization server, which plays both
parts (the enterprise identity provider and the MCP server's authorization server):

- RFC 8693 token exchange (``grant_type=urn:ietf:params:oauth:grant-type:token-exchange``): a
  client trades a ``subject_token`` this server issued (an ID token, `TokenExchange.id_token`,
  or an access token) for an Identity Assertion JWT Authorization Grant (ID-JAG,
  ``requested_token_type=urn:ietf:params:oauth:token-type:id-jag``, header
  ``typ: oauth-id-jag+jwt``) whose ``aud`` is this server (``audience``), short-lived, naming
  the client (``client_id``), the ``resource`` and the ``scope``;
- the RFC 7523 JWT bearer grant with that ID-JAG as the ``assertion``: the same client gets an
  access token for the user (``sub``) within the assertion's scope and resource.

All JWT work is joserfc's; the keys are the server's own signing keys.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

import orjson
from joserfc import jws, jwt
from joserfc.errors import JoseError

from .clientauth import ClientRegistry
from .clients import MAX_PARAM, OAuthError, Params, RegisteredClient

ACCESS_TOKEN: Final = "urn:ietf:params:oauth:token-type:access_token"
ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
ID_JAG_TYP: Final = "oauth-id-jag+jwt"
ID_JAG_LIFETIME: Final = 300
"""Seconds an ID-JAG is valid."""


def header_type(token: str) -> str | None:
    """The ``typ`` of a compact JWS's protected header, unverified (None: not a JWS)."""
    if len(token) > MAX_PARAM:
        return None
    try:
        protected = jws.extract_compact(token.encode("ascii")).protected
    except (JoseError, ValueError, UnicodeError, TypeError):
        return None
    typ = protected.get("typ")
    return typ if isinstance(typ, str) else None


class TokenExchange(ClientRegistry):
    """ID tokens, the token exchange grant and ID-JAG assertions (on top of `ClientRegistry`)."""

    def id_token(
        self,
        sub: str = "dev-user",
        *,
        audience: str,
        lifetime: float = 300.0,
        claims: dict[str, Any] | None = None,
    ) -> str:
        """An OpenID Connect ID token for ``sub`` issued to the client ``audience`` (what the
        enterprise identity provider gives a user's client after a login)."""
        now = int(self.clock())
        body: dict[str, Any] = {
            "iss": self.issuer,
            "sub": sub,
            "aud": audience,
            "iat": now,
            "exp": now + int(lifetime),
            "jti": secrets.token_urlsafe(16),
            **(claims or {}),
        }
        key = self._keys[-1]
        header = {"alg": self.signing_alg, "kid": key.kid, "typ": "JWT"}
        return jwt.encode(header, body, key, algorithms=[self.signing_alg])

    def _own_claims(self, token: str) -> dict[str, Any] | None:
        """The claims of an unexpired, unrevoked token this server issued (None: not one)."""
        if token in self._opaque:
            claims: dict[str, Any] = dict(self._opaque[token])
        elif token.count(".") == 2 and len(token) <= MAX_PARAM:
            try:
                claims = dict(
                    jwt.decode(token, self._keyset(), algorithms=[self.signing_alg]).claims
                )
            except (JoseError, ValueError, TypeError, KeyError):
                return None
        else:
            return None
        exp = claims.get("exp")
        if (
            claims.get("iss") != self.issuer
            or claims.get("jti") in self._revoked
            or isinstance(exp, bool)
            or not isinstance(exp, int | float)
            or exp <= self.clock()
        ):
            return None
        return claims

    def _subject(self, form: Params, client: RegisteredClient) -> dict[str, Any]:
        """The claims of the exchange's ``subject_token``, of its ``subject_token_type``: an
        ID token issued to ``client``, or an access token (not an ID-JAG).

        Raises:
            OAuthError: ``invalid_request`` (an unsupported type), ``invalid_grant``.
        """
        token = form.need("subject_token")
        kind = form.need("subject_token_type")
        if kind not in (ID_TOKEN, ACCESS_TOKEN):
            raise OAuthError("invalid_request", "subject_token_type must be an ID or access token")
        claims = self._own_claims(token)
        typ = None if token in self._opaque else header_type(token)
        if claims is None or not isinstance(claims.get("sub"), str) or typ == ID_JAG_TYP:
            raise OAuthError(
                "invalid_grant", "the subject_token is not a valid token of this server"
            )
        if kind == ID_TOKEN:
            audience = claims.get("aud")
            audiences = [audience] if isinstance(audience, str) else audience
            if typ == "at+jwt" or not isinstance(audiences, list):
                raise OAuthError("invalid_grant", "the subject_token is not an ID token")
            if client.client_id not in audiences:
                raise OAuthError("invalid_grant", "the ID token was issued to another client")
        elif typ not in ("at+jwt", None):
            raise OAuthError("invalid_grant", "the subject_token is not an access token")
        return claims

    def _exchange_grant(self, form: Params, client: RegisteredClient) -> dict[str, Any]:
        """RFC 8693: the ``subject_token`` for an ID-JAG (the only ``requested_token_type``).

        Raises:
            OAuthError: ``invalid_request``, ``invalid_grant``, ``invalid_target`` (an
                ``audience`` that is not this server), ``invalid_scope``.
        """
        if form.one("requested_token_type") != ID_JAG:
            raise OAuthError("invalid_request", f"requested_token_type must be {ID_JAG}")
        audience = form.one("audience")
        if audience is not None and audience not in (self.issuer, self.token_endpoint):
            raise OAuthError("invalid_target", "this server issues ID-JAGs for itself only")
        subject = self._subject(form, client)
        held = subject.get("scope")
        scope = self._scopes(form.one("scope") or (held if isinstance(held, str) else None))
        resources = self._resources(form.all("resource"))
        now = int(self.clock())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject["sub"],
            "aud": self.issuer,
            "client_id": client.client_id,
            "iat": now,
            "exp": now + ID_JAG_LIFETIME,
            "jti": secrets.token_urlsafe(16),
        }
        if scope:
            claims["scope"] = " ".join(scope)
        if resources:
            claims["resource"] = resources[0] if len(resources) == 1 else resources
        key = self._keys[-1]
        header = {"alg": self.signing_alg, "kid": key.kid, "typ": ID_JAG_TYP}
        answer: dict[str, Any] = {
            "access_token": jwt.encode(header, claims, key, algorithms=[self.signing_alg]),
            "issued_token_type": ID_JAG,
            "token_type": "N_A",
            "expires_in": ID_JAG_LIFETIME,
        }
        if scope:
            answer["scope"] = " ".join(scope)
        return answer

    def _own_id_jag(self, assertion: str) -> bool:
        """Whether a JWT bearer ``assertion`` claims to be an ID-JAG of this server."""
        if header_type(assertion) != ID_JAG_TYP:
            return False
        try:
            payload = orjson.loads(jws.extract_compact(assertion.encode("ascii")).payload)
        except (JoseError, ValueError, UnicodeError, TypeError):
            return False
        return isinstance(payload, dict) and payload.get("iss") == self.issuer

    def _id_jag_grant(
        self, form: Params, client: RegisteredClient, assertion: str
    ) -> tuple[str, list[str], list[str]]:
        """The subject, scopes and resources an ID-JAG grants ``client`` (verified: this
        server's signature, ``aud``, ``exp``, ``jti`` once, ``client_id``); a request's
        ``scope`` and ``resource`` may narrow them.

        Raises:
            OAuthError: ``invalid_grant``, ``invalid_scope``, ``invalid_target``.
        """

        def refuse(description: str) -> OAuthError:
            return OAuthError("invalid_grant", description)

        claims = self._verify_assertion(assertion, self._keyset(), refuse, client.client_id)
        if claims.get("client_id") != client.client_id:
            raise refuse("the ID-JAG was issued to another client")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise refuse("the ID-JAG has no sub")
        held = claims.get("scope")
        granted = self._scopes(held) if isinstance(held, str) else []
        asked = self._scopes(form.one("scope"))
        if any(s not in granted for s in asked):
            raise OAuthError("invalid_scope", "scope outside what the ID-JAG grants")
        resource = claims.get("resource")
        allowed = [resource] if isinstance(resource, str) else list(resource or [])
        resources = self._resources(form.all("resource"))
        if allowed and any(r not in allowed for r in resources):
            raise OAuthError("invalid_target", "resource outside what the ID-JAG grants")
        return sub, asked or granted, resources or [r for r in allowed if isinstance(r, str)]
