"""The pluggable part of a protected server: a `TokenVerifier` turns an access token into an
`AccessToken` (who, which client, which scopes) or refuses it with `InvalidToken`.

`JwtVerifier` (signed JWTs against the authorization server's JWKS) and `IntrospectionVerifier`
(RFC 7662) are the two shipped; any object with the same ``verify`` works. A verifier never
logs or forwards the token it is given; its cache of verified tokens is keyed by the token
itself (a warm request costs one dictionary look-up, no hashing: the cache lives in this
process's memory only, as the token did), its refusals by a SHA-256 digest (`digest`: a flood of
made-up tokens costs 32 bytes each).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import msgspec

from ..access import AccessToken

Clock = Callable[[], float]
"""The wall clock a verifier reads, in seconds since the epoch (`time.time`; a test's fake)."""


class RequestInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What a verifier may want to know of the request a token came with."""

    method: str
    url: str
    """The request's URL as this server is addressed (``resource``, or built from ``Host``)."""
    scheme: str = "Bearer"
    """The ``Authorization`` scheme: ``Bearer`` or ``DPoP``."""


class InvalidToken(Exception):
    """The token is not acceptable here: 401 ``invalid_token`` with this description (never
    the token itself)."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class VerifierUnavailable(InvalidToken):
    """The token cannot be checked now: the authorization server (its JWKS, its introspection
    endpoint) is unreachable, timed out or answered 5xx. The guard answers 503 with
    ``Retry-After`` (not 401: the client keeps a token that may well be valid). A subclass of
    `InvalidToken`, so code that only knows that one still refuses the request."""

    def __init__(self, description: str, retry_after: int = 5) -> None:
        super().__init__(description)
        self.retry_after = retry_after


@runtime_checkable
class TokenVerifier(Protocol):
    """What a protected server asks of its verifier."""

    async def verify(self, token: str, request: RequestInfo) -> AccessToken:
        """The verified token; raises `InvalidToken` for anything it does not accept
        (signature, issuer, audience, expiry, revoked), `VerifierUnavailable` when it cannot
        tell now (the authorization server is unreachable)."""
        ...


def digest(token: str) -> bytes:
    """The key of a refused token: its SHA-256 (bounded, whatever the token's size)."""
    return hashlib.sha256(token.encode()).digest()


class TokenCache:
    """Verified tokens by the token itself, each until its own deadline (its ``exp``, capped
    at ``max_seconds``: a revocation is seen within that long), at most ``size`` of them (the
    oldest inserted goes first); also refusals by `digest` (`put_refusal`: a description, for
    a shorter time), in the same bound. Deadlines are read on ``clock``."""

    def __init__(self, size: int, max_seconds: float, clock: Clock = time.time) -> None:
        self.size = size
        self.max_seconds = max_seconds
        self.clock = clock
        self._entries: OrderedDict[str | bytes, tuple[AccessToken | str, float]] = OrderedDict()

    def get(self, token: str) -> AccessToken | None:
        """The cached verification of ``token``, if still fresh (the clock is read each time:
        an entry never outlives the token's ``exp``)."""
        entry = self._entries.get(token)
        if entry is None:
            return None
        if self.clock() >= entry[1]:
            del self._entries[token]
            return None
        found = entry[0]
        return found if isinstance(found, AccessToken) else None

    def refusal(self, token: str) -> str | None:
        """The description of a cached refusal of ``token``, if fresh."""
        key = digest(token)
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self.clock() >= entry[1]:
            del self._entries[key]
            return None
        found = entry[0]
        return found if isinstance(found, str) else None

    def put(self, token: str, access: AccessToken) -> None:
        until = self.clock() + self.max_seconds
        if access.expires_at is not None:
            until = min(until, access.expires_at)
        self._store(token, access, until)

    def put_refusal(self, token: str, description: str, seconds: float) -> None:
        """Remember that ``token`` was refused, for at most ``seconds`` (capped at
        ``max_seconds``)."""
        self._store(digest(token), description, self.clock() + min(seconds, self.max_seconds))

    def _store(self, key: str | bytes, value: AccessToken | str, until: float) -> None:
        if self.size <= 0 or self.max_seconds <= 0:
            return
        self._entries[key] = (value, until)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def access_from_claims(claims: dict[str, Any], scopes: frozenset[str]) -> AccessToken:
    """The `AccessToken` of checked claims (a JWT's payload, an introspection response)."""
    aud = claims.get("aud")
    audience = (aud,) if isinstance(aud, str) else tuple(a for a in aud or () if isinstance(a, str))
    cnf = claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
    exp = claims.get("exp")
    client = claims.get("client_id", claims.get("azp"))
    return AccessToken(
        subject=claims.get("sub") if isinstance(claims.get("sub"), str) else None,
        client_id=client if isinstance(client, str) else None,
        scopes=scopes,
        issuer=claims.get("iss") if isinstance(claims.get("iss"), str) else None,
        audience=audience,
        expires_at=float(exp) if isinstance(exp, int | float) else None,
        jkt=jkt if isinstance(jkt, str) else None,
        claims=claims,
    )


def check_claims(
    claims: dict[str, Any],
    *,
    issuer: str | None,
    audiences: tuple[str, ...],
    leeway: float,
    now: float,
    require_exp: bool = True,
) -> None:
    """The registered claims every verifier checks: ``iss`` (when an issuer is configured),
    ``aud`` holding one of ``audiences`` (RFC 8707: issued for this server), ``exp`` (required
    unless ``require_exp`` is off) and ``nbf``, at ``now`` (epoch seconds) with ``leeway``
    seconds of clock skew.

    Raises:
        InvalidToken: the first claim that fails.
    """
    if issuer is not None and claims.get("iss") != issuer:
        raise InvalidToken("the token is from another issuer")
    aud = claims.get("aud")
    given = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if not any(isinstance(a, str) and a in audiences for a in given):
        raise InvalidToken("the token is for another resource (audience)")
    exp = claims.get("exp")
    if exp is None:
        if require_exp:
            raise InvalidToken("the token has no expiry")
    elif not isinstance(exp, int | float) or isinstance(exp, bool):
        raise InvalidToken("malformed exp")
    elif now > exp + leeway:
        raise InvalidToken("the token has expired")
    nbf = claims.get("nbf")
    if nbf is not None:
        if not isinstance(nbf, int | float) or isinstance(nbf, bool):
            raise InvalidToken("malformed nbf")
        if now + leeway < nbf:
            raise InvalidToken("the token is not valid yet")
