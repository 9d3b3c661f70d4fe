"""RFC 7662 introspection and RFC 7009 revocation at the development authorization server:
`Introspection.introspect` / `Introspection.revoke` (also callable directly) and their
endpoints (``/introspect`` needs an authenticated client; ``/revoke`` takes public ones)."""

from __future__ import annotations

import time
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
        now = time.time()
        claims: dict[str, Any] | None = None
        token_type = "Bearer"
        if token in self._opaque:
            claims = dict(self._opaque[token])
        elif token in self._refresh:
            grant = self._refresh[token]
            if grant.expires > now:
                return {
                    "active": True,
                    "token_type": "refresh_token",
                    "client_id": grant.client_id,
                    "sub": grant.sub,
                    "scope": " ".join(grant.scope),
                    "exp": int(grant.expires),
                    "iss": self.issuer,
                }
        elif token.count(".") == 2 and len(token) <= MAX_PARAM:
            try:
                claims = dict(
                    jwt.decode(token, self._keyset(), algorithms=[self.signing_alg]).claims
                )
            except (JoseError, ValueError, TypeError, KeyError):
                claims = None
        if claims is None or claims.get("jti") in self._revoked:
            return {"active": False}
        exp = claims.get("exp")
        if not isinstance(exp, int | float) or exp <= now:
            return {"active": False}
        if "cnf" in claims:
            token_type = "DPoP"
        return {"active": True, "token_type": token_type, **claims}

    def revoke(self, token: str) -> None:
        """Revoke an access token (JWT or opaque) or a refresh token."""
        self._opaque.pop(token, None)
        self._refresh.pop(token, None)
        if token.count(".") == 2 and len(token) <= MAX_PARAM:
            try:
                claims = jwt.decode(token, self._keyset(), algorithms=[self.signing_alg]).claims
            except (JoseError, ValueError, TypeError, KeyError):
                return
            if isinstance(claims.get("jti"), str):
                self._revoked.add(claims["jti"])

    async def _introspect(self, request: Request) -> Response:
        form = self._form(request)
        await self._authenticate(request, form, allow_public=False)
        return Response.json(200, self.introspect(form.need("token")))

    async def _revoke(self, request: Request) -> Response:
        form = self._form(request)
        await self._authenticate(request, form, allow_public=True)
        self.revoke(form.need("token"))
        return Response(200, b"", [("cache-control", "no-store")])
