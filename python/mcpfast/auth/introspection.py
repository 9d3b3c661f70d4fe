"""RFC 7662 introspection and RFC 7009 revocation at the development authorization server:
`Introspection.introspect` / `Introspection.revoke` (also callable directly) and their
endpoints (``/introspect`` needs an authenticated client; ``/revoke`` takes public ones and
revokes only the client's own tokens)."""

from __future__ import annotations

from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError

from ._asgi import Request, Response
from .clientauth import ClientRegistry
from .clients import MAX_PARAM


class Introspection(ClientRegistry):
    """Introspection and revocation (on top of `ClientRegistry`)."""

    def introspect(self, token: str) -> dict[str, Any]:
        """What the introspection endpoint answers for ``token`` (RFC 7662)."""
        now = self.clock()
        grant = self._refresh.get(token)
        if grant is not None:
            if grant.expires <= now or grant.spent:
                return {"active": False}
            return {
                "active": True,
                "token_type": "refresh_token",
                "client_id": grant.client_id,
                "sub": grant.sub,
                "scope": " ".join(grant.scope),
                "exp": int(grant.expires),
                "iss": self.issuer,
            }
        claims = self._access_claims(token)
        if claims is None or claims.get("jti") in self._revoked:
            return {"active": False}
        exp = claims.get("exp")
        if not isinstance(exp, int | float) or exp <= now:
            return {"active": False}
        token_type = "DPoP" if "cnf" in claims else "Bearer"
        return {"active": True, "token_type": token_type, **claims}

    def revoke(self, token: str, *, client_id: str | None = None) -> None:
        """Revoke an access token (JWT or opaque) or a refresh token (and with it every token
        of its grant, RFC 7009 section 2.1). With ``client_id`` (the ``/revoke`` endpoint's
        authenticated client), only a token issued to that client: another's is left alone."""
        grant = self._refresh.get(token)
        if grant is not None:
            if client_id in (None, grant.client_id):
                self._refresh.pop(token, None)
                self._revoke_family(grant.family)
            return
        claims = self._access_claims(token)
        if claims is None or client_id not in (None, claims.get("client_id")):
            return
        self._opaque.pop(token, None)
        if isinstance(claims.get("jti"), str):
            self._revoked.add(claims["jti"])

    def _access_claims(self, token: str) -> dict[str, Any] | None:
        """The claims of an access token this server issued (opaque, or a JWT its keys
        verify), whether or not expired or revoked; None: not one."""
        if token in self._opaque:
            return dict(self._opaque[token])
        if token.count(".") != 2 or len(token) > MAX_PARAM:
            return None
        try:
            return dict(jwt.decode(token, self._keyset(), algorithms=[self.signing_alg]).claims)
        except (JoseError, ValueError, TypeError, KeyError):
            return None

    async def _introspect(self, request: Request) -> Response:
        form = self._form(request)
        await self._authenticate(request, form, allow_public=False)
        return Response.json(200, self.introspect(form.need("token")))

    async def _revoke(self, request: Request) -> Response:
        """RFC 7009: the client authenticates (a confidential one with its credentials, a
        public one by its ``client_id``); a token of another client, unknown or invalid, is
        answered 200 all the same (section 2.2) and left alone."""
        form = self._form(request)
        client = await self._authenticate(request, form, allow_public=True)
        self.revoke(form.need("token"), client_id=client.client_id)
        return Response(200, b"", [("cache-control", "no-store")])
