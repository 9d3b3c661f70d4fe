"""`JwtVerifier`: access tokens that are JWTs (RFC 9068) signed by the authorization server,
verified against its JWKS (fetched over HTTP, cached, refetched on an unknown ``kid``).

Every JWS and JWK operation is joserfc's. What this module decides: which algorithms are
acceptable (the verifier's list, never the token's header: no ``none``, no HMAC, so a public
key can never be used as an HMAC secret), which key (by ``kid``, asymmetric keys only), that the
JWT is an access token (`check_token_type`: RFC 9068 section 4), and the claims (`check_claims`).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
import trio
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry, Key

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

ASYMMETRIC = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""The algorithms a verifier may be configured with: signatures by a private key only."""
DEFAULT_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
ACCESS_TOKEN_TYPE = "at+jwt"
"""The ``typ`` of an RFC 9068 access token (``application/at+jwt`` too, any case)."""
UNTYPED = ("", "jwt")
"""The ``typ`` values (none, ``JWT``) `check_token_type` lets through when not required."""
ID_TOKEN_CLAIMS = ("nonce", "at_hash", "c_hash", "s_hash")
"""Claims of OpenID Connect ID tokens that RFC 9068 access tokens never carry. (``auth_time``,
``acr``, ``amr`` are access token claims too, RFC 9068 section 2.2.1; ``azp`` without
``client_id`` is how issuers without ``at+jwt`` name the client: neither marks an ID token.)"""


def token_type(header: dict[str, Any]) -> str:
    """A JWS header's ``typ``, lower-cased, without the ``application/`` prefix (RFC 8725
    section 3.11); "" when absent."""
    return str(header.get("typ", "")).lower().removeprefix("application/")


def check_token_type(typ: str, claims: dict[str, Any] | None, *, required: bool) -> None:
    """That a JWT of ``typ`` (`token_type`) is an access token: ``at+jwt`` (RFC 9068 section
    4); with ``required`` off, also an untyped or ``JWT`` one, unless its ``claims`` (None:
    not read yet) are an ID token's (`ID_TOKEN_CLAIMS`). Any other ``typ`` (a DPoP proof, an
    ID-JAG, a logout token...) is never an access token.

    Raises:
        InvalidToken: another kind of JWT.
    """
    if typ == ACCESS_TOKEN_TYPE:
        return
    if required or typ not in UNTYPED:
        raise InvalidToken(f"the token is not an access token (typ {ACCESS_TOKEN_TYPE} expected)")
    if claims is not None and any(name in claims for name in ID_TOKEN_CLAIMS):
        raise InvalidToken("an ID token is not an access token")


def key_type_for(alg: str) -> str:
    """The JWK ``kty`` an algorithm signs with."""
    return _KEY_TYPES[alg[:2]]


def well_known_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be (the MCP spec's order: RFC 8414 path insertion, OIDC
    path insertion, OIDC path appending; for an issuer without a path, the first two)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(p: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, p, "", ""))

    urls = [
        at("/.well-known/oauth-authorization-server" + path),
        at("/.well-known/openid-configuration" + path),
    ]
    if path:
        urls.append(at(path + "/.well-known/openid-configuration"))
    return urls


async def fetch_json(
    client: httpx2.AsyncClient | None, url: str, limit: int, deadline: float, policy: UrlPolicy
) -> Any:
    """GET ``url`` as JSON by `mcpfast._remote.fetch` (at most ``limit`` bytes, ``deadline``
    seconds in all, no redirects, under ``policy``).

    Raises:
        VerifierUnavailable: not reachable, over the deadline, 5xx or 429.
        InvalidToken: refused by the fetch rules, another status than 200, too large or not
            JSON (logged, without secrets).
    """
    try:
        reply = await fetch(
            client,
            "GET",
            url,
            what="issuer document",
            max_bytes=limit,
            deadline=deadline,
            policy=policy,
        )
    except FetchError as exc:
        if exc.unreachable:
            raise VerifierUnavailable(str(exc)) from None
        raise InvalidToken(str(exc)) from None
    if reply.status >= 500 or reply.status == 429:
        raise VerifierUnavailable(f"cannot fetch {url}: HTTP {reply.status}")
    if reply.status != 200:
        raise InvalidToken(f"cannot fetch {url}: HTTP {reply.status}")
    document = reply.json()
    if document is None:
        raise InvalidToken(f"{url} is not JSON")
    return document


class JwtVerifier:
    """Verifies JWT access tokens with the issuer's public keys.

    Args:
        issuer: the ``iss`` every token must carry (exactly).
        audience: the ``aud`` (one of them) a token must carry: this server's resource URL.
        jwks_url: the JWKS; None: the ``jwks_uri`` of the issuer's metadata (RFC 8414 / OIDC
            discovery, its ``issuer`` checked).
        algorithms: the acceptable signature algorithms (asymmetric only: `ASYMMETRIC`).
        leeway: seconds of clock skew allowed on ``exp`` / ``nbf``.
        jwks_max_age: a JWKS older than this is refetched (in the background of the request
            that notices).
        refetch_interval: at most one refetch for an unknown ``kid`` per this many seconds
            (a flood of tokens with made-up ``kid`` values cannot hammer the issuer).
        max_keys: keys kept of a JWKS (the rest ignored); max_jwks_bytes: the largest JWKS read.
        cache_size, cache_seconds: verified tokens remembered until their ``exp``,
            at most ``cache_seconds``: a warm request costs a dictionary look-up, not a
            signature check. 0 turns it off.
        require_typ: accept only ``typ: at+jwt`` (RFC 9068); False also takes untyped and
            ``typ: JWT`` tokens without ID-token claims (`check_token_type`), for issuers
            that do not type their access tokens.
        timeout: the longest one metadata or JWKS fetch takes, all told.
        public_only: a ``jwks_uri`` the metadata names off the issuer's origin must resolve
            to public addresses only. Every fetch is `mcpfast._remote.fetch`'s: the issuer's
            (or ``jwks_url``'s) origin is the operator's word; anything else must be https
            (http to loopback); no redirects.
        clock: the wall clock (epoch seconds) that ``exp``, ``nbf`` and the token cache's
            deadlines are read against.
    """

    def __init__(
        self,
        issuer: str,
        audience: str | list[str] | tuple[str, ...],
        jwks_url: str | None = None,
        *,
        algorithms: tuple[str, ...] | list[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        jwks_max_age: float = 3600.0,
        refetch_interval: float = 10.0,
        max_keys: int = 32,
        max_jwks_bytes: int = 256 * 1024,
        cache_size: int = 10_000,
        cache_seconds: float = 300.0,
        timeout: float = 5.0,
        http: httpx2.AsyncClient | None = None,
        require_typ: bool = True,
        public_only: bool = False,
        clock: Clock = time.time,
    ) -> None:
        bad = [a for a in algorithms if a not in ASYMMETRIC]
        if bad or not algorithms:
            raise ValueError(f"algorithms must be some of {ASYMMETRIC}, not {bad or 'none'}")
        self.issuer = issuer
        self.audiences = (audience,) if isinstance(audience, str) else tuple(audience)
        if not self.audiences:
            raise ValueError("a JwtVerifier needs an audience (this server's resource URL)")
        self.jwks_url = jwks_url
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.jwks_max_age = jwks_max_age
        self.refetch_interval = refetch_interval
        self.max_keys = max_keys
        self.max_jwks_bytes = max_jwks_bytes
        self.timeout = timeout
        self._policy = UrlPolicy(public_only=public_only).trusting(jwks_url or issuer)
        self.require_typ = require_typ
        self.clock = clock
        self.cache = TokenCache(cache_size, cache_seconds, clock)
        self._http = http
        self._keys: dict[str, Key] = {}
        self._unnamed: list[Key] = []
        self._fetched_at: float | None = None
        self._last_attempt = -float("inf")
        self._unavailable = False
        """Whether the last JWKS fetch failed for want of the authorization server."""
        self._lock: trio.Lock | None = None
        self.fetches = 0
        """How many times the JWKS was fetched (for tests and metrics)."""

    def peek(self, token: str) -> AccessToken | None:
        """The token's cached verification, if still fresh (no I/O, no await): the guard's
        fast path for a token seen a moment ago."""
        return self.cache.get(token)

    async def verify(self, token: str, request: RequestInfo) -> AccessToken:
        cached = self.cache.get(token)
        if cached is not None:
            return cached
        access = await self._verify(token)
        self.cache.put(token, access)
        return access

    async def _verify(self, token: str) -> AccessToken:
        if len(token) > MAX_TOKEN_BYTES:
            raise InvalidToken("access token too large")
        if not is_token68(token):
            raise InvalidToken("malformed access token")
        try:
            header = jws.extract_compact(token.encode()).headers()
        except (JoseError, ValueError, TypeError):
            raise InvalidToken("malformed access token") from None
        alg = header.get("alg")
        if alg not in self.algorithms:  # "none", HS256 with a public key, anything unlisted
            raise InvalidToken("access token algorithm not accepted")
        typ = token_type(header)
        check_token_type(typ, None, required=self.require_typ)
        if "crit" in header:
            raise InvalidToken("unsupported critical header")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("malformed kid")
        public = await self._key(kid, alg)
        try:
            signed = jws.deserialize_compact(token.encode(), public, algorithms=[alg])
            claims = json.loads(signed.payload)
        except (JoseError, ValueError, TypeError):
            raise InvalidToken("the token's signature does not verify") from None
        if not isinstance(claims, dict):
            raise InvalidToken("the token's claims are not an object")
        check_token_type(typ, claims, required=self.require_typ)
        check_claims(
            claims,
            issuer=self.issuer,
            audiences=self.audiences,
            leeway=self.leeway,
            now=self.clock(),
        )
        try:
            scopes = parse_scopes(claims.get("scope", claims.get("scp")))
        except (ValueError, TypeError, AttributeError):
            raise InvalidToken("malformed scope claim") from None
        return access_from_claims(claims, scopes)

    # ------------------------------------------------------------------------------- the keys

    async def _key(self, kid: str | None, alg: str) -> Key:
        """The key for a token's ``kid`` (or, with no ``kid``, the only key of its type),
        refetching the JWKS once (rate-limited) when it is not known."""
        stale = self._fetched_at is None or time.monotonic() - self._fetched_at > self.jwks_max_age
        found = None if stale else self._find(kid, alg)
        if found is None:
            await self._refresh()
            found = self._find(kid, alg)
        if found is None:
            if self._unavailable:  # perhaps a new key we cannot fetch: not the token's fault
                raise VerifierUnavailable("the issuer's keys cannot be fetched now")
            raise InvalidToken("no key of the issuer matches the token")
        return found

    def _find(self, kid: str | None, alg: str) -> Key | None:
        kty = key_type_for(alg)
        if kid is not None:
            key = self._keys.get(kid)
            return key if key is not None and key.key_type == kty else None
        matching = [k for k in [*self._keys.values(), *self._unnamed] if k.key_type == kty]
        return matching[0] if len(matching) == 1 else None

    async def _refresh(self) -> None:
        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:
            if time.monotonic() - self._last_attempt < self.refetch_interval:
                return  # fetched a moment ago (perhaps by the request we waited for)
            self._last_attempt = time.monotonic()
            try:
                await self._fetch()
            except InvalidToken as exc:
                self._unavailable = isinstance(exc, VerifierUnavailable)
                log.warning("JWKS not refreshed: %s (keeping %d keys)", exc, len(self._keys))
            else:
                self._unavailable = False

    async def _fetch(self) -> None:
        url = self.jwks_url or await self._discover()
        self.fetches += 1
        document = await fetch_json(
            self._http, url, self.max_jwks_bytes, self.timeout, self._policy
        )
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise InvalidToken("the JWKS has no keys list")
        keys: dict[str, Key] = {}
        unnamed: list[Key] = []
        for entry in entries[: self.max_keys]:
            key = self._import(entry)
            if key is None:
                continue
            kid = entry.get("kid")
            if isinstance(kid, str):
                keys[kid] = key
            else:
                unnamed.append(key)
        self._keys, self._unnamed = keys, unnamed
        self._fetched_at = time.monotonic()

    def _import(self, entry: Any) -> Key | None:
        """A public key of the JWKS usable with the configured algorithms; None for anything
        else (symmetric keys, keys for encryption, another ``alg``, malformed entries)."""
        if not isinstance(entry, dict) or entry.get("kty") not in ("RSA", "EC", "OKP"):
            return None
        if entry.get("use", "sig") != "sig":
            return None
        if "alg" in entry and entry["alg"] not in self.algorithms:
            return None
        public = {k: v for k, v in entry.items() if k not in ("d", "p", "q", "dp", "dq", "qi")}
        try:
            return JWKRegistry.import_key(public)
        except (JoseError, ValueError, TypeError):
            return None

    async def _discover(self) -> str:
        unavailable: VerifierUnavailable | None = None
        for url in well_known_urls(self.issuer):
            try:
                metadata = await fetch_json(
                    self._http, url, self.max_jwks_bytes, self.timeout, self._policy
                )
            except VerifierUnavailable as exc:
                unavailable = exc
                continue
            except InvalidToken:
                continue
            if not isinstance(metadata, dict) or metadata.get("issuer") != self.issuer:
                continue  # RFC 8414 section 3.3: another issuer's document is not used
            jwks_uri = metadata.get("jwks_uri")
            if isinstance(jwks_uri, str):
                self.jwks_url = jwks_uri
                return jwks_uri
        if unavailable is not None:
            raise VerifierUnavailable("the issuer's metadata cannot be fetched now")
        raise InvalidToken("the issuer's metadata names no jwks_uri")
