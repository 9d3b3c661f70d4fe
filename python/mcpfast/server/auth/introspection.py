"""`IntrospectionVerifier`: opaque (or any) access tokens checked by the authorization server's
introspection endpoint (RFC 7662), with the server's own client credentials. The token goes to
that endpoint only (it is the issuer's, not an upstream API: no passthrough); active results
are cached until their ``exp`` (capped), so a warm request makes no call; inactive
results are cached too, briefly (`INACTIVE_SECONDS`), so a flood of bad tokens does not reach
the authorization server. An unreachable endpoint (or 5xx) is `VerifierUnavailable`: 503."""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx2

from ..._remote import FetchError, UrlPolicy, fetch
from ...protocol.auth import MAX_TOKEN_BYTES, is_token68, parse_scopes
from ..access import AccessToken
from .verifier import (
    Clock,
    InvalidToken,
    RequestInfo,
    TokenCache,
    VerifierUnavailable,
    access_from_claims,
    check_claims,
)

log = logging.getLogger("mcpfast.auth")

INACTIVE_SECONDS = 30.0
"""The longest an inactive result is remembered (at most ``cache_seconds``)."""


class IntrospectionVerifier:
    """Asks ``url`` (RFC 7662) about each token it has not seen active recently.

    Args:
        url: the introspection endpoint.
        client_id, client_secret: this server's credentials there (HTTP Basic,
            ``client_secret_basic``).
        audience: the ``aud`` (one of them) an active token must carry; the response must have
            an ``aud`` unless ``require_audience`` is off (then a response without ``aud`` is
            trusted to be for this server: the authorization server's responsibility).
        issuer: when given, the ``iss`` the response must carry (if it has one).
        cache_size, cache_seconds: active results remembered until their ``exp``, at most
            ``cache_seconds`` (a revocation is seen within that long). Inactive results are
            cached for ``min(cache_seconds, INACTIVE_SECONDS)``, in the same bound.
        clock: the wall clock (epoch seconds) that ``exp``, ``nbf`` and the cache's deadlines
            are read against.
    """

    def __init__(
        self,
        url: str,
        client_id: str,
        client_secret: str,
        *,
        audience: str | list[str] | tuple[str, ...],
        issuer: str | None = None,
        require_audience: bool = True,
        leeway: float = 30.0,
        cache_size: int = 10_000,
        cache_seconds: float = 60.0,
        timeout: float = 5.0,
        max_response_bytes: int = 64 * 1024,
        http: httpx2.AsyncClient | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.url = url
        self._auth = (client_id, client_secret)
        self.audiences = (audience,) if isinstance(audience, str) else tuple(audience)
        self.issuer = issuer
        self.require_audience = require_audience
        self.leeway = leeway
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._policy = UrlPolicy().trusting(url)
        self.clock = clock
        self.cache = TokenCache(cache_size, cache_seconds, clock)
        self._http = http
        self.calls = 0
        """How many introspection requests were made (for tests and metrics)."""

    def peek(self, token: str) -> AccessToken | None:
        """The token's cached verification, if still fresh (no I/O, no await): the guard's
        fast path for a token seen a moment ago."""
        return self.cache.get(token)

    async def verify(self, token: str, request: RequestInfo) -> AccessToken:
        if len(token) > MAX_TOKEN_BYTES:
            raise InvalidToken("access token too large")
        cached = self.cache.get(token)
        if cached is not None:
            return cached
        refused = self.cache.refusal(token)
        if refused is not None:
            raise InvalidToken(refused)
        if not is_token68(token):
            raise InvalidToken("malformed access token")
        claims = await self._introspect(token)
        if claims.get("active") is not True:
            description = "the token is not active"
            self.cache.put_refusal(token, description, INACTIVE_SECONDS)
            raise InvalidToken(description)
        if claims.get("iss") is None:
            claims = {**claims, "iss": self.issuer}
        if claims.get("aud") is None and not self.require_audience:
            claims = {**claims, "aud": list(self.audiences)}
        check_claims(
            claims,
            issuer=self.issuer,
            audiences=self.audiences,
            leeway=self.leeway,
            now=self.clock(),
            require_exp=False,
        )
        try:
            scopes = parse_scopes(claims.get("scope"))
        except (ValueError, TypeError, AttributeError):
            raise InvalidToken("malformed scope in the introspection response") from None
        access = access_from_claims(claims, scopes)
        self.cache.put(token, access)
        return access

    async def _introspect(self, token: str) -> dict[str, Any]:
        """The endpoint's answer, read by `mcpfast._remote.fetch` (``url``'s origin is the
        operator's word: no URL policy beyond it; no redirects, ``max_response_bytes``,
        ``timeout`` seconds in all)."""
        self.calls += 1
        try:
            reply = await fetch(
                self._http,
                "POST",
                self.url,
                what="introspection response",
                max_bytes=self.max_response_bytes,
                deadline=self.timeout,
                policy=self._policy,
                data={"token": token, "token_type_hint": "access_token"},
                auth=self._auth,
            )
        except FetchError as exc:
            log.warning("introspection failed: %s", exc)
            if exc.unreachable:
                raise VerifierUnavailable("the token cannot be checked now") from None
            raise InvalidToken("the token cannot be checked now") from None
        if reply.status >= 500 or reply.status == 429:
            log.warning("introspection answered HTTP %d", reply.status)
            raise VerifierUnavailable("the token cannot be checked now")
        claims = reply.json()
        if reply.status != 200 or not isinstance(claims, dict):
            log.warning("introspection answered HTTP %d", reply.status)
            raise InvalidToken("the token cannot be checked now")
        return claims
