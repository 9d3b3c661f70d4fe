"""A development OAuth 2.1 authorization server: in memory, loopback only, auto-approving.

For tests and local development of MCP servers and clients — never for production: it asks
nobody to log in, approves every authorization request of a registered client, and forgets
everything when it stops.

    async with dev_authorization_server(scopes_supported=["mcp:read"]) as server:
        server.issuer                                     # http://127.0.0.1:PORT
        client = server.register_client(secret="s3cret", grant_types=["client_credentials"])
        token = await server.client_credentials_token(client.client_id, "s3cret",
                                                      scope="mcp:read",
                                                      resource="http://127.0.0.1:8000/mcp")
        server.mint(sub="alice", scope="mcp:read", audience="http://127.0.0.1:8000/mcp")

What it implements: RFC 8414 metadata (also at the OIDC well-known), a JWKS with one ES256 (or
RS256) key generated at start (`DevAuthorizationServer.rotate_key`), RFC 7591 registration,
Client ID Metadata Documents, the authorization code grant with PKCE S256 (RFC 8707
``resource``, RFC 9207 ``iss``), refresh tokens (rotated), client credentials
(client_secret_basic / client_secret_post / private_key_jwt), the RFC 7523 JWT bearer grant
(for issuers made trusted with `DevAuthorizationServer.trust_issuer`), DPoP-bound tokens
(RFC 9449, with optional nonces), RFC 7662 introspection and RFC 7009 revocation. Access
tokens are RFC 9068 JWTs (``typ: at+jwt``), or opaque strings with ``opaque_tokens=True``.
"""

from __future__ import annotations

import base64
import re
import secrets
import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Final
from urllib.parse import parse_qsl, unquote_plus, urlsplit

import httpx2
import orjson
import trio
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, RSAKey

from ._asgi import (
    MAX_BODY_BYTES,
    BodyTooLarge,
    Receive,
    Request,
    Response,
    Scope,
    Send,
    is_loopback_host,
    lifespan,
    read_request,
    send_response,
    serve_asgi,
)
from .clients import (
    AUTH_METHODS,
    AUTHORIZATION_CODE,
    CLIENT_CREDENTIALS,
    GRANT_TYPES,
    MAX_PARAM,
    REFRESH_TOKEN,
    OAuthError,
    Params,
    RegisteredClient,
    b64url_sha256,
    client_from_metadata,
    fetch_json,
    is_loopback_http,
    public_jwks,
    redirect_matches,
    with_params,
)
from .dpop import DPOP_ALGORITHMS, DPoPError, DPoPVerifier, Proof

__all__ = [
    "DevAuthorizationServer",
    "OAuthError",
    "RegisteredClient",
    "TokenRequestError",
    "dev_authorization_server",
]

CLIENT_ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
DEFAULT_SCOPES: Final = ("mcp:read", "mcp:write", "offline_access")

_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
_CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,200}")
_MAX_CLIENTS = 10_000


class TokenRequestError(Exception):
    """A helper's token request was refused: the status and the error body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body
        self.error = str(body.get("error", ""))


@dataclass
class _Grant:
    """What an authorization code or a refresh token stands for."""

    client_id: str
    sub: str
    scope: list[str]
    resources: list[str]
    expires: float
    jkt: str | None = None  # code: the dpop_jkt asked for; refresh: the key it is bound to
    redirect_uri: str = ""
    redirect_uri_given: bool = False
    challenge: str = ""


@dataclass
class _Cached:
    client: RegisteredClient
    until: float


class DevAuthorizationServer:
    """The server's state and its ASGI application (``self`` is the ASGI callable).

    Start it with `dev_authorization_server` (tests) or ``mcpfast auth-server``; `serve`
    runs it in a nursery. Keyword options:

    - ``scopes_supported``: advertised and enforced (a scope outside it is ``invalid_scope``);
      None accepts any scope and advertises none.
    - ``access_token_lifetime`` / ``refresh_token_lifetime`` / ``code_lifetime``: seconds.
    - ``default_audience``: the ``aud`` of a token whose request named no ``resource``
      (without either, the token has no ``aud``).
    - ``opaque_tokens``: issue random opaque access tokens (resource servers must introspect).
    - ``require_dpop_nonce``: DPoP proofs at the token endpoint must carry a server nonce.
    - ``dpop_window``: seconds a proof's ``iat`` may be from now.
    - ``subject``: the ``sub`` of authorization-code tokens (a ``login_hint`` overrides it).
    - ``signing_alg``: ``ES256`` (default) or ``RS256``.
    - ``allow_http_cimd``: accept ``http://`` loopback Client ID Metadata Document URLs
      (default True: tests serve them on loopback; production CIMD is https only).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        scopes_supported: Sequence[str] | None = DEFAULT_SCOPES,
        access_token_lifetime: float = 3600.0,
        refresh_token_lifetime: float = 86400.0,
        code_lifetime: float = 60.0,
        default_audience: str | None = None,
        opaque_tokens: bool = False,
        require_dpop_nonce: bool = False,
        dpop_window: float = 60.0,
        subject: str = "dev-user",
        signing_alg: str = "ES256",
        allow_http_cimd: bool = True,
    ) -> None:
        if not is_loopback_host(host):
            raise ValueError(
                f"the development authorization server listens on loopback only, not {host!r}"
            )
        if signing_alg not in ("ES256", "RS256"):
            raise ValueError("signing_alg must be ES256 or RS256")
        self.host = host
        self.port = port
        self.scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.access_token_lifetime = access_token_lifetime
        self.refresh_token_lifetime = refresh_token_lifetime
        self.code_lifetime = code_lifetime
        self.default_audience = default_audience
        self.opaque_tokens = opaque_tokens
        self.subject = subject
        self.signing_alg = signing_alg
        self.allow_http_cimd = allow_http_cimd
        self.dpop = DPoPVerifier(window=dpop_window, require_nonce=require_dpop_nonce)
        self._issuer: str | None = None
        self._keys: list[ECKey | RSAKey] = [self._new_key()]
        self._clients: dict[str, RegisteredClient] = {}
        self._cimd: dict[str, _Cached] = {}
        self._codes: dict[str, _Grant] = {}
        self._refresh: dict[str, _Grant] = {}
        self._opaque: dict[str, dict[str, Any]] = {}
        self._revoked: set[str] = set()  # jti of revoked JWT access tokens
        self._assertion_jtis: dict[str, float] = {}
        self._trusted: dict[str, KeySet] = {}

    # -- addresses ----------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        """The issuer identifier, which is also the base URL (``http://127.0.0.1:PORT``)."""
        if self._issuer is None:
            raise RuntimeError("the authorization server is not serving yet")
        return self._issuer

    @property
    def token_endpoint(self) -> str:
        return self.issuer + "/token"

    @property
    def authorization_endpoint(self) -> str:
        return self.issuer + "/authorize"

    @property
    def registration_endpoint(self) -> str:
        return self.issuer + "/register"

    @property
    def introspection_endpoint(self) -> str:
        return self.issuer + "/introspect"

    @property
    def revocation_endpoint(self) -> str:
        return self.issuer + "/revoke"

    @property
    def jwks_uri(self) -> str:
        return self.issuer + "/jwks"

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 authorization server metadata."""
        document: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.authorization_endpoint,
            "token_endpoint": self.token_endpoint,
            "jwks_uri": self.jwks_uri,
            "registration_endpoint": self.registration_endpoint,
            "introspection_endpoint": self.introspection_endpoint,
            "revocation_endpoint": self.revocation_endpoint,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": list(GRANT_TYPES),
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256", "EdDSA"],
            "introspection_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt",
            ],
            "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
            "dpop_signing_alg_values_supported": list(DPOP_ALGORITHMS),
        }
        if self.scopes_supported is not None:
            document["scopes_supported"] = list(self.scopes_supported)
        return document

    # -- keys and tokens ----------------------------------------------------------------

    def _new_key(self) -> ECKey | RSAKey:
        parameters = {"use": "sig", "alg": self.signing_alg}
        if self.signing_alg == "RS256":
            return RSAKey.generate_key(2048, parameters, auto_kid=True)  # type: ignore[arg-type]
        return ECKey.generate_key("P-256", parameters, auto_kid=True)  # type: ignore[arg-type]

    @property
    def kid(self) -> str:
        """The ``kid`` of the key signing new tokens."""
        return str(self._keys[-1].kid)

    def jwks(self) -> dict[str, Any]:
        """The published JWKS (public keys): the signing key, and the previous one after a
        `rotate_key` that kept it."""
        return {"keys": [key.as_dict(private=False) for key in self._keys]}

    def rotate_key(self, *, keep_previous: bool = True) -> str:
        """Sign new tokens with a fresh key and return its ``kid``. With ``keep_previous``
        (the default, as real servers roll keys over) the JWKS keeps the previous key too, so
        tokens already issued still verify; with False only the new key is published, so the
        old tokens' ``kid`` is unknown (and introspection calls them inactive). Either way
        at most two keys are published."""
        new = self._new_key()
        self._keys = [self._keys[-1], new] if keep_previous else [new]
        return self.kid

    def _keyset(self) -> KeySet:
        return KeySet(list(self._keys))

    def mint(
        self,
        sub: str = "dev-user",
        *,
        scope: str | Sequence[str] = "",
        audience: str | Sequence[str] | None = None,
        client_id: str = "dev-client",
        lifetime: float | None = None,
        jkt: str | None = None,
        opaque: bool | None = None,
        claims: dict[str, Any] | None = None,
    ) -> str:
        """An access token as the token endpoint would issue it, without a request.

        ``audience`` defaults to ``default_audience``; ``lifetime`` (seconds, negative for an
        already expired token) to ``access_token_lifetime``; ``jkt`` binds it to a DPoP key
        (``cnf.jkt``); ``opaque`` (default ``opaque_tokens``) makes it opaque; ``claims`` are
        added to (or override) the JWT claims."""
        scopes = scope.split() if isinstance(scope, str) else list(scope)
        if audience is None:
            resources = [self.default_audience] if self.default_audience else []
        elif isinstance(audience, str):
            resources = [audience]
        else:
            resources = list(audience)
        return self._issue(
            client_id=client_id,
            sub=sub,
            scope=scopes,
            resources=resources,
            jkt=jkt,
            lifetime=lifetime,
            opaque=opaque,
            extra=claims,
        )

    def _issue(
        self,
        *,
        client_id: str,
        sub: str,
        scope: list[str],
        resources: list[str],
        jkt: str | None,
        lifetime: float | None = None,
        opaque: bool | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": sub,
            "client_id": client_id,
            "iat": now,
            "exp": now + int(self.access_token_lifetime if lifetime is None else lifetime),
            "jti": secrets.token_urlsafe(16),
        }
        if not resources and self.default_audience:
            resources = [self.default_audience]
        if resources:
            claims["aud"] = resources[0] if len(resources) == 1 else resources
        if scope:
            claims["scope"] = " ".join(scope)
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
        claims.update(extra or {})
        if self.opaque_tokens if opaque is None else opaque:
            token = secrets.token_urlsafe(32)
            self._opaque[token] = claims
            return token
        key = self._keys[-1]
        header = {"alg": self.signing_alg, "kid": key.kid, "typ": "at+jwt"}
        return jwt.encode(header, claims, key, algorithms=[self.signing_alg])

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

    def trust_issuer(self, issuer: str, jwks: dict[str, Any]) -> None:
        """Accept RFC 7523 JWT bearer grant assertions whose ``iss`` is ``issuer``, signed by a
        key of ``jwks`` (an identity provider's or a workload identity's)."""
        self._trusted[issuer] = public_jwks(jwks)

    # -- clients ------------------------------------------------------------------------

    def register_client(
        self,
        client_id: str | None = None,
        *,
        secret: str | None = None,
        redirect_uris: Sequence[str] = ("http://127.0.0.1/callback",),
        grant_types: Sequence[str] = (AUTHORIZATION_CODE, REFRESH_TOKEN, CLIENT_CREDENTIALS),
        token_endpoint_auth_method: str | None = None,
        jwks: dict[str, Any] | None = None,
        scope: str | None = None,
    ) -> RegisteredClient:
        """Register a client directly (what pre-registration is). Without ``secret`` and
        ``jwks`` it is a public client (auth method ``none``); with ``secret``,
        ``client_secret_basic`` (``client_secret_post`` works too); with ``jwks``,
        ``private_key_jwt``. A loopback redirect URI matches any port."""
        if token_endpoint_auth_method is None:
            token_endpoint_auth_method = (
                "private_key_jwt" if jwks else "client_secret_basic" if secret else "none"
            )
        client = RegisteredClient(
            client_id=client_id or secrets.token_urlsafe(12),
            client_secret=secret,
            redirect_uris=list(redirect_uris),
            grant_types=list(grant_types),
            token_endpoint_auth_method=token_endpoint_auth_method,
            scope=scope,
            jwks=public_jwks(jwks) if jwks is not None else None,
        )
        client.metadata = {
            "client_id": client.client_id,
            "redirect_uris": client.redirect_uris,
            "grant_types": client.grant_types,
            "token_endpoint_auth_method": token_endpoint_auth_method,
        }
        self._clients[client.client_id] = client
        return client

    def clients(self) -> list[RegisteredClient]:
        """The registered clients (not those known from metadata documents)."""
        return list(self._clients.values())

    def _cimd_url(self, client_id: str) -> bool:
        """Whether ``client_id`` is a Client ID Metadata Document URL (https with a path, or
        http on loopback when ``allow_http_cimd``)."""
        try:
            parts = urlsplit(client_id)
        except ValueError:
            return False
        if parts.scheme == "https" or (self.allow_http_cimd and is_loopback_http(client_id)):
            return bool(parts.netloc) and parts.path not in ("", "/")
        return False

    async def _client(self, client_id: str) -> RegisteredClient | None:
        """The client ``client_id`` names: registered, or fetched from its metadata document.

        Raises:
            OAuthError: (``invalid_client``) a metadata document that cannot be fetched or is
                not valid.
        """
        if client_id in self._clients:
            return self._clients[client_id]
        if not self._cimd_url(client_id):
            return None
        cached = self._cimd.get(client_id)
        if cached is not None and cached.until > time.monotonic():
            return cached.client
        doc, max_age = await fetch_json(client_id, "client metadata document")
        if not isinstance(doc, dict) or doc.get("client_id") != client_id:
            raise OAuthError(
                "invalid_client", "the client metadata document's client_id is not its URL"
            )
        if not isinstance(doc.get("client_name"), str) or not doc.get("redirect_uris"):
            raise OAuthError(
                "invalid_client", "the client metadata document needs client_name and redirect_uris"
            )
        if "client_secret" in doc:
            raise OAuthError("invalid_client", "a client metadata document has no client_secret")
        try:
            client = client_from_metadata(doc, cimd_url=client_id, scopes=self._scopes)
        except OAuthError as exc:
            raise OAuthError("invalid_client", exc.description) from None
        if max_age > 0:
            if len(self._cimd) >= 1000:
                self._cimd.clear()
            self._cimd[client_id] = _Cached(client, time.monotonic() + max_age)
        return client

    def _scopes(self, value: str | None) -> list[str]:
        if value is None:
            return []
        scopes = value.split(" ")
        if len(scopes) > 50 or not all(_SCOPE_TOKEN.fullmatch(s) for s in scopes):
            raise OAuthError("invalid_scope", "malformed scope")
        if self.scopes_supported is not None:
            unknown = [s for s in scopes if s not in self.scopes_supported]
            if unknown:
                raise OAuthError("invalid_scope", f"unknown scope {unknown[0][:60]!r}")
        return list(dict.fromkeys(scopes))

    @staticmethod
    def _resources(values: list[str]) -> list[str]:
        if len(values) > 10:
            raise OAuthError("invalid_target", "too many resource parameters")
        for value in values:
            try:
                parts = urlsplit(value)
            except ValueError:
                parts = None
            if parts is None or not parts.scheme or not parts.netloc or "#" in value:
                raise OAuthError(
                    "invalid_target", "resource must be an absolute URI without a fragment"
                )
        return list(dict.fromkeys(values))

    # -- client authentication ----------------------------------------------------------

    async def _authenticate(
        self, request: Request, form: Params, *, allow_public: bool
    ) -> RegisteredClient:
        """The client a token, introspection or revocation request comes from.

        Raises:
            OAuthError: ``invalid_client`` (401), or ``invalid_request`` for several methods.
        """
        authorization = request.header("authorization") or ""
        basic = authorization[:6].lower() == "basic "
        secret = form.one("client_secret")
        assertion = form.one("client_assertion")
        assertion_type = form.one("client_assertion_type")
        claimed = form.one("client_id")
        if sum((basic, secret is not None, assertion is not None)) > 1:
            raise OAuthError("invalid_request", "use one client authentication method")
        challenge = [("www-authenticate", 'Basic realm="mcpfast-dev"')] if basic else []

        def refuse(description: str) -> OAuthError:
            return OAuthError("invalid_client", description, 401, challenge)

        if basic:
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode()
                raw_id, raw_secret = decoded.split(":", 1)
            except (ValueError, UnicodeError):
                raise refuse("malformed Basic credentials") from None
            # RFC 6749 §2.3.1 form-encodes both halves; many clients do not: accept either.
            client_id = raw_id if raw_id in self._clients else unquote_plus(raw_id)
            offered = {raw_secret, unquote_plus(raw_secret)}
            if claimed is not None and claimed != client_id:
                raise refuse("client_id does not match the Basic credentials")
        elif assertion is not None:
            if assertion_type != CLIENT_ASSERTION_TYPE:
                raise refuse("unsupported client_assertion_type")
            return await self._assertion_client(assertion, claimed)
        else:
            if claimed is None:
                raise refuse("no client authentication")
            client_id = claimed
            offered = {secret} if secret is not None else set()
        client = await self._client_or_refuse(client_id, refuse)
        if not offered:
            if not allow_public or client.token_endpoint_auth_method != "none":
                raise refuse("this client must authenticate")
            return client
        expected = client.client_secret
        if expected is None or not any(
            secrets.compare_digest(expected.encode(), given.encode()) for given in offered
        ):
            raise refuse("wrong client credentials")
        return client

    async def _client_or_refuse(
        self, client_id: str, refuse: Callable[[str], OAuthError]
    ) -> RegisteredClient:
        try:
            client = await self._client(client_id)
        except OAuthError as exc:
            raise refuse(exc.description) from None
        if client is None:
            raise refuse("unknown client")
        return client

    async def _assertion_client(self, assertion: str, claimed: str | None) -> RegisteredClient:
        """private_key_jwt (RFC 7523 §3): iss = sub = the client, aud = this issuer or its
        token endpoint, unexpired, jti once, signed by a key of the client's JWKS."""

        def refuse(description: str) -> OAuthError:
            return OAuthError("invalid_client", description, 401)

        unverified = self._unverified_claims(assertion)
        if unverified is None:
            raise refuse("malformed client_assertion")
        client_id = unverified.get("sub")
        if not isinstance(client_id, str) or (claimed is not None and claimed != client_id):
            raise refuse("the client_assertion's sub is not the client")
        client = await self._client_or_refuse(client_id, refuse)
        keys = client.jwks
        if keys is None and client.jwks_uri is not None:
            try:
                doc, _ = await fetch_json(client.jwks_uri, "client JWKS")
                keys = public_jwks(doc)
            except (OAuthError, ValueError, JoseError, TypeError, KeyError):
                raise refuse("cannot load the client's JWKS") from None
        if keys is None:
            raise refuse("this client has no keys for private_key_jwt")
        claims = self._verify_assertion(assertion, keys, refuse)
        if claims.get("iss") != client_id:
            raise refuse("the client_assertion's iss is not the client")
        return client

    @staticmethod
    def _unverified_claims(assertion: str) -> dict[str, Any] | None:
        if len(assertion) > MAX_PARAM:
            return None
        try:
            payload = orjson.loads(jws.extract_compact(assertion.encode("ascii")).payload)
        except (JoseError, ValueError, UnicodeError, TypeError):
            return None
        return payload if isinstance(payload, dict) else None

    def _verify_assertion(
        self, assertion: str, keys: KeySet, refuse: Callable[[str], OAuthError]
    ) -> dict[str, Any]:
        """The claims of an RFC 7523 assertion signed by ``keys``, for this server, in date,
        its ``jti`` (when present) not seen before."""
        try:
            claims = dict(
                jwt.decode(assertion, keys, algorithms=["ES256", "RS256", "PS256"]).claims
            )
        except (JoseError, ValueError, TypeError, KeyError):
            raise refuse("the assertion's signature does not verify") from None
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or not (
            {self.issuer, self.token_endpoint} & {a for a in audiences if isinstance(a, str)}
        ):
            raise refuse("the assertion's aud is not this server")
        now = time.time()
        exp = claims.get("exp")
        if isinstance(exp, bool) or not isinstance(exp, int | float) or exp + 30 < now:
            raise refuse("the assertion has expired (or has no exp)")
        jti = claims.get("jti")
        if isinstance(jti, str):
            self._assertion_jtis = {j: t for j, t in self._assertion_jtis.items() if t > now}
            if jti in self._assertion_jtis:
                raise refuse("the assertion's jti was already used")
            self._assertion_jtis[jti] = float(exp) + 60
        return claims

    # -- ASGI -----------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            request = await read_request(scope, receive)
        except BodyTooLarge:
            response = Response.json(
                413,
                {
                    "error": "invalid_request",
                    "error_description": f"request body over {MAX_BODY_BYTES} bytes",
                },
                [("connection", "close")],
            )
        else:
            response = await self.handle(request)
        await send_response(send, response)

    async def handle(self, request: Request) -> Response:
        """Answer one request (what the ASGI application does once the body is read)."""
        routes: dict[str, tuple[tuple[str, ...], Callable[[Request], Awaitable[Response]]]] = {
            "/.well-known/oauth-authorization-server": (("GET",), self._metadata),
            "/.well-known/openid-configuration": (("GET",), self._metadata),
            "/jwks": (("GET",), self._jwks),
            "/register": (("POST",), self._register),
            "/authorize": (("GET", "POST"), self._authorize),
            "/token": (("POST",), self._token),
            "/introspect": (("POST",), self._introspect),
            "/revoke": (("POST",), self._revoke),
        }
        route = routes.get(request.path)
        if route is None:
            return Response.json(404, {"error": "not_found", "error_description": "no such path"})
        methods, handler = route
        if request.method not in (*methods, "HEAD") or (
            request.method == "HEAD" and "GET" not in methods
        ):
            return Response.json(
                405,
                {"error": "invalid_request", "error_description": "method not allowed"},
                [("allow", ", ".join(methods))],
            )
        try:
            return await handler(request)
        except OAuthError as exc:
            return Response.json(
                exc.status,
                {"error": exc.error, "error_description": exc.description},
                exc.headers,
            )
        except Exception:
            traceback.print_exc(file=sys.stderr)
            return Response.json(
                500, {"error": "server_error", "error_description": "internal error"}
            )

    async def _metadata(self, request: Request) -> Response:
        return Response.json(200, self.metadata(), [("access-control-allow-origin", "*")])

    async def _jwks(self, request: Request) -> Response:
        response = Response.json(200, self.jwks(), [("access-control-allow-origin", "*")])
        response.headers = [h for h in response.headers if h[0] not in ("cache-control", "pragma")]
        response.headers.append(("cache-control", "no-cache"))
        return response

    @staticmethod
    def _form(request: Request) -> Params:
        content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            raise OAuthError("invalid_request", "expected application/x-www-form-urlencoded")
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError:
            raise OAuthError("invalid_request", "the body is not UTF-8") from None
        return Params.parse(text)

    async def _register(self, request: Request) -> Response:
        content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise OAuthError("invalid_client_metadata", "expected application/json")
        try:
            doc = orjson.loads(request.body)
        except orjson.JSONDecodeError:
            raise OAuthError("invalid_client_metadata", "the body is not valid JSON") from None
        client = client_from_metadata(doc, cimd_url=None, scopes=self._scopes)
        if len(self._clients) >= _MAX_CLIENTS:
            raise OAuthError("invalid_client_metadata", "too many registered clients", 400)
        self._clients[client.client_id] = client
        answer = dict(client.metadata)
        answer["client_id_issued_at"] = int(time.time())
        if client.client_secret is not None:
            answer["client_secret"] = client.client_secret
            answer["client_secret_expires_at"] = 0
        return Response.json(201, answer)

    async def _authorize(self, request: Request) -> Response:
        """The authorization endpoint: auto-approve a valid request of a known client."""
        if request.method == "POST":
            params = self._form(request)
        else:
            try:
                params = Params.parse(request.query.decode("ascii"))
            except UnicodeDecodeError:
                raise OAuthError("invalid_request", "malformed query") from None
        # Until the client and its redirect URI are known, errors are shown, not redirected.
        client_id = params.need("client_id")
        client = await self._client(client_id)
        if client is None:
            raise OAuthError("invalid_client", "unknown client_id")
        redirect_uri = params.one("redirect_uri")
        given = redirect_uri is not None
        if redirect_uri is None:
            if len(client.redirect_uris) != 1:
                raise OAuthError("invalid_request", "redirect_uri is required")
            redirect_uri = client.redirect_uris[0]
        if not any(redirect_matches(r, redirect_uri) for r in client.redirect_uris):
            raise OAuthError("invalid_request", "redirect_uri is not registered for this client")
        state = params.one("state")
        back: dict[str, str] = {"state": state} if state is not None else {}
        try:
            code = self._authorization_code(params, client, redirect_uri, given)
        except OAuthError as exc:
            back = {"error": exc.error, "error_description": exc.description, **back}
        else:
            back = {"code": code, **back}
        back["iss"] = self.issuer
        return Response(302, b"", [("location", with_params(redirect_uri, back))])

    def _authorization_code(
        self, params: Params, client: RegisteredClient, redirect_uri: str, given: bool
    ) -> str:
        if params.one("response_type") != "code":
            raise OAuthError("unsupported_response_type", "response_type must be code")
        if AUTHORIZATION_CODE not in client.grant_types:
            raise OAuthError("unauthorized_client", "this client may not use authorization codes")
        challenge = params.one("code_challenge")
        if challenge is None:
            raise OAuthError("invalid_request", "PKCE is required: send code_challenge (S256)")
        if params.one("code_challenge_method") != "S256":
            raise OAuthError("invalid_request", "code_challenge_method must be S256")
        if not _CHALLENGE.fullmatch(challenge):
            raise OAuthError("invalid_request", "malformed code_challenge")
        scope = self._scopes(params.one("scope") or client.scope)
        resources = self._resources(params.all("resource"))
        jkt = params.one("dpop_jkt")
        sub = params.one("login_hint") or self.subject
        code = secrets.token_urlsafe(32)
        now = time.time()
        self._codes = {c: g for c, g in self._codes.items() if g.expires > now}
        self._codes[code] = _Grant(
            client_id=client.client_id,
            sub=sub[:200],
            scope=scope,
            resources=resources,
            expires=now + self.code_lifetime,
            jkt=jkt,
            redirect_uri=redirect_uri,
            redirect_uri_given=given,
            challenge=challenge,
        )
        return code

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
        proof = self._dpop_proof(request)
        if grant_type == AUTHORIZATION_CODE:
            answer = self._code_grant(form, client, proof)
        elif grant_type == REFRESH_TOKEN:
            answer = self._refresh_grant(form, client, proof)
        elif grant_type == CLIENT_CREDENTIALS:
            if client.token_endpoint_auth_method == "none":
                raise OAuthError(
                    "unauthorized_client", "client_credentials needs a confidential client"
                )
            scope = self._scopes(form.one("scope") or client.scope)
            resources = self._resources(form.all("resource"))
            answer = self._tokens(client, client.client_id, scope, resources, proof, refresh=False)
        else:
            answer = self._jwt_bearer_grant(form, client, proof)
        return Response.json(200, answer, self._nonce_header())

    def _nonce_header(self) -> list[tuple[str, str]]:
        return [("dpop-nonce", self.dpop.nonce)] if self.dpop.require_nonce else []

    def _dpop_proof(self, request: Request) -> Proof | None:
        values = request.headers.get("dpop", [])
        if not values:
            return None
        if len(values) > 1:
            raise OAuthError("invalid_dpop_proof", "one DPoP header only")
        try:
            return self.dpop.verify(values[0], "POST", self.token_endpoint)
        except DPoPError as exc:
            raise OAuthError(exc.error, exc.description, 400, self._nonce_header()) from None

    def _tokens(
        self,
        client: RegisteredClient,
        sub: str,
        scope: list[str],
        resources: list[str],
        proof: Proof | None,
        *,
        refresh: bool,
    ) -> dict[str, Any]:
        jkt = proof.jkt if proof is not None else None
        answer: dict[str, Any] = {
            "access_token": self._issue(
                client_id=client.client_id, sub=sub, scope=scope, resources=resources, jkt=jkt
            ),
            "token_type": "DPoP" if jkt else "Bearer",
            "expires_in": int(self.access_token_lifetime),
        }
        if scope:
            answer["scope"] = " ".join(scope)
        if refresh and REFRESH_TOKEN in client.grant_types:
            token = secrets.token_urlsafe(32)
            now = time.time()
            if len(self._refresh) > 10_000:
                self._refresh = {t: g for t, g in self._refresh.items() if g.expires > now}
            self._refresh[token] = _Grant(
                client_id=client.client_id,
                sub=sub,
                scope=scope,
                resources=resources,
                expires=now + self.refresh_token_lifetime,
                # RFC 9449 §5: a public client's refresh token is bound to its DPoP key.
                jkt=jkt if client.token_endpoint_auth_method == "none" else None,
            )
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
        self, form: Params, client: RegisteredClient, proof: Proof | None
    ) -> dict[str, Any]:
        code = form.need("code")
        verifier = form.need("code_verifier")
        redirect_uri = form.one("redirect_uri")
        grant = self._codes.pop(code, None)  # single use, even when what follows fails
        if grant is None or grant.expires < time.time():
            raise OAuthError("invalid_grant", "unknown, used or expired authorization code")
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
        if grant.jkt is not None and (proof is None or proof.jkt != grant.jkt):
            raise OAuthError("invalid_dpop_proof", "the DPoP key is not the one of dpop_jkt")
        resources = self._narrow_resources(self._resources(form.all("resource")), grant.resources)
        return self._tokens(client, grant.sub, grant.scope, resources, proof, refresh=True)

    def _refresh_grant(
        self, form: Params, client: RegisteredClient, proof: Proof | None
    ) -> dict[str, Any]:
        token = form.need("refresh_token")
        grant = self._refresh.get(token)
        if grant is None or grant.expires < time.time() or grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "unknown, rotated or expired refresh token")
        if grant.jkt is not None and (proof is None or proof.jkt != grant.jkt):
            raise OAuthError("invalid_grant", "this refresh token is bound to another DPoP key")
        asked = self._scopes(form.one("scope"))
        if any(s not in grant.scope for s in asked):
            raise OAuthError("invalid_scope", "scope outside what was granted")
        scope = asked or grant.scope
        resources = self._narrow_resources(self._resources(form.all("resource")), grant.resources)
        del self._refresh[token]  # rotation: the old refresh token is spent
        answer = self._tokens(client, grant.sub, scope, resources, proof, refresh=True)
        if grant.jkt is not None and "refresh_token" in answer:
            self._refresh[answer["refresh_token"]].jkt = grant.jkt
        return answer

    def _jwt_bearer_grant(
        self, form: Params, client: RegisteredClient, proof: Proof | None
    ) -> dict[str, Any]:
        assertion = form.need("assertion")

        def refuse(description: str) -> OAuthError:
            return OAuthError("invalid_grant", description)

        unverified = self._unverified_claims(assertion)
        if unverified is None:
            raise refuse("malformed assertion")
        keys = self._trusted.get(str(unverified.get("iss")))
        if keys is None:
            raise refuse("the assertion's issuer is not trusted")
        claims = self._verify_assertion(assertion, keys, refuse)
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise refuse("the assertion has no sub")
        scope = self._scopes(form.one("scope") or client.scope)
        resources = self._resources(form.all("resource"))
        return self._tokens(client, sub, scope, resources, proof, refresh=False)

    async def _introspect(self, request: Request) -> Response:
        form = self._form(request)
        await self._authenticate(request, form, allow_public=False)
        return Response.json(200, self.introspect(form.need("token")))

    async def _revoke(self, request: Request) -> Response:
        form = self._form(request)
        await self._authenticate(request, form, allow_public=True)
        self.revoke(form.need("token"))
        return Response(200, b"", [("cache-control", "no-store")])

    # -- serving --------------------------------------------------------------------------

    async def serve(
        self,
        *,
        shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
        task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve until cancelled (or ``shutdown_trigger`` returns); ``nursery.start`` returns
        the issuer once the socket is bound."""
        async with trio.open_nursery() as nursery:
            urls: list[str] = await nursery.start(
                partial(serve_asgi, self, self.host, self.port, shutdown_trigger=shutdown_trigger)
            )
            self._issuer = urls[0].rstrip("/")
            task_status.started(self._issuer)

    # -- helpers for tests ----------------------------------------------------------------

    async def token_request(
        self,
        form: dict[str, str],
        *,
        auth: tuple[str | bytes, str | bytes] | None = None,
        dpop: Callable[[str, str], str] | None = None,
    ) -> dict[str, Any]:
        """POST ``form`` to the token endpoint (``auth``: Basic credentials; ``dpop(method,
        url)``: a proof for the ``DPoP`` header) and return the token response.

        Raises:
            TokenRequestError: the server refused.
        """
        headers = {"dpop": dpop("POST", self.token_endpoint)} if dpop else {}
        async with httpx2.AsyncClient(timeout=10.0) as http:
            if auth is None:
                answer = await http.post(self.token_endpoint, data=form, headers=headers)
            else:
                answer = await http.post(self.token_endpoint, data=form, auth=auth, headers=headers)
        body = answer.json()
        if answer.status_code != 200:
            raise TokenRequestError(answer.status_code, body)
        return dict(body)

    async def client_credentials_token(
        self,
        client_id: str,
        secret: str,
        *,
        scope: str | None = None,
        resource: str | None = None,
        method: str = "client_secret_basic",
        dpop: Callable[[str, str], str] | None = None,
    ) -> dict[str, Any]:
        """Ask the token endpoint (over HTTP) for a client_credentials token; the token
        response (``access_token``, ``token_type``, ...). ``method``: ``client_secret_basic``
        or ``client_secret_post``; ``dpop(method, url)`` makes a proof for a DPoP-bound token.

        Raises:
            TokenRequestError: the server refused.
        """
        form = {"grant_type": CLIENT_CREDENTIALS}
        if scope:
            form["scope"] = scope
        if resource:
            form["resource"] = resource
        if method == "client_secret_post":
            form.update(client_id=client_id, client_secret=secret)
            return await self.token_request(form, dpop=dpop)
        return await self.token_request(form, auth=(client_id, secret), dpop=dpop)

    async def authorization_code_token(
        self,
        client_id: str,
        redirect_uri: str,
        *,
        secret: str | None = None,
        scope: str | None = None,
        resource: str | None = None,
        state: str = "dev-state",
        login_hint: str | None = None,
        dpop: Callable[[str, str], str] | None = None,
    ) -> dict[str, Any]:
        """Run the whole authorization code flow with PKCE over HTTP (as a client would,
        without a browser: the server auto-approves) and return the token response.

        Raises:
            TokenRequestError: the authorization or the token request was refused.
        """
        verifier = secrets.token_urlsafe(48)
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_challenge": b64url_sha256(verifier),
            "code_challenge_method": "S256",
            "state": state,
        }
        for name, value in (("scope", scope), ("resource", resource), ("login_hint", login_hint)):
            if value:
                query[name] = value
        async with httpx2.AsyncClient(timeout=10.0, follow_redirects=False) as http:
            answer = await http.get(self.authorization_endpoint, params=query)
        if answer.status_code != 302:
            raise TokenRequestError(answer.status_code, answer.json())
        back = dict(parse_qsl(urlsplit(answer.headers["location"]).query))
        if "code" not in back:
            raise TokenRequestError(302, back)
        form = {
            "grant_type": AUTHORIZATION_CODE,
            "code": back["code"],
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        if resource:
            form["resource"] = resource
        if secret is None:
            form["client_id"] = client_id
            return await self.token_request(form, dpop=dpop)
        return await self.token_request(form, auth=(client_id, secret), dpop=dpop)


@asynccontextmanager
async def dev_authorization_server(
    *, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> AsyncIterator[DevAuthorizationServer]:
    """Run a `DevAuthorizationServer` on loopback for the duration of the block.

    ``options`` are the keyword options of `DevAuthorizationServer`; ``port=0`` picks a free
    port (``server.issuer`` says which)."""
    server = DevAuthorizationServer(host=host, port=port, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()
