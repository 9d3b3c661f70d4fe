"""The development authorization server's issuer core: its options and in-memory state, its
endpoint URLs, the RFC 8414 metadata document, the signing keys and JWKS (`Issuer.rotate_key`),
minting access tokens (RFC 9068 JWTs or opaque) and the scope / RFC 8707 ``resource`` rules
every endpoint applies. The endpoints build on `Issuer` (`clientauth`, `authorize`, `token`,
`introspection`); `devserver.DevAuthorizationServer` puts them together."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

from ..server.auth.dpop import DpopVerifier, RotatingNonces
from ._asgi import Request, is_loopback_host
from .assertions import AssertionJtis
from .clients import AUTH_METHODS, GRANT_TYPES, OAuthError, Params, RegisteredClient

DEFAULT_SCOPES: Final = ("mcp:read", "mcp:write", "offline_access")
DPOP_ALGORITHMS: Final = ("ES256", "RS256", "EdDSA")
"""The proof algorithms advertised in ``dpop_signing_alg_values_supported``."""
DPOP_ACCEPTED: Final = (*DPOP_ALGORITHMS, "Ed25519", "ES384", "PS256")
"""The proof algorithms the token endpoint takes (the advertised ones and a few more)."""

_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]{1,200}")


@dataclass
class Grant:
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
    family: str | None = None
    """The `Family` of the tokens it gives (None: none is tracked)."""
    spent: bool = False
    """Redeemed (a code) or rotated (a refresh token): presenting it again is a replay."""


@dataclass
class Family:
    """What one authorization grant issued, from its code on: the ``jti`` of every access
    token and every refresh token (the live one and those rotated away). Revoked whole when
    a spent code or refresh token comes back (OAuth 2.1 section 4.3.1) or one is revoked."""

    expires: float
    jtis: list[str] = field(default_factory=list)
    refresh: list[str] = field(default_factory=list)


@dataclass
class CachedClient:
    client: RegisteredClient
    until: float


class Issuer:
    """The state, addresses, metadata, keys and token minting of `DevAuthorizationServer`
    (whose docstring lists the keyword options)."""

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
        allow_local_fetches: bool = False,
        clock: Callable[[], float] = time.time,
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
        self.allow_local_fetches = allow_local_fetches
        self.clock = clock
        self.dpop = DpopVerifier(
            algorithms=DPOP_ACCEPTED,
            window=dpop_window,
            leeway=dpop_window,
            nonces=RotatingNonces() if require_dpop_nonce else None,
        )
        self._issuer: str | None = None
        self._keys: list[ECKey | RSAKey] = [self._new_key()]
        self._clients: dict[str, RegisteredClient] = {}
        self._cimd: dict[str, CachedClient] = {}
        self._codes: dict[str, Grant] = {}
        self._refresh: dict[str, Grant] = {}
        self._families: dict[str, Family] = {}
        self._opaque: dict[str, dict[str, Any]] = {}
        self._revoked: set[str] = set()  # jti of revoked JWT access tokens
        self._assertion_jtis = AssertionJtis(clock=clock)
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
        family: str | None = None,
    ) -> str:
        now = int(self.clock())
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
        if family is not None:
            self._family(family).jtis.append(claims["jti"])
        if self.opaque_tokens if opaque is None else opaque:
            token = secrets.token_urlsafe(32)
            self._opaque[token] = claims
            return token
        key = self._keys[-1]
        header = {"alg": self.signing_alg, "kid": key.kid, "typ": "at+jwt"}
        return jwt.encode(header, claims, key, algorithms=[self.signing_alg])

    def _family(self, name: str) -> Family:
        """The grant family ``name`` (created when new; expired ones are forgotten)."""
        now = self.clock()
        if name not in self._families and len(self._families) >= 10_000:
            self._families = {n: f for n, f in self._families.items() if f.expires > now}
        family = self._families.setdefault(name, Family(expires=0.0))
        lifetime = max(self.refresh_token_lifetime, self.access_token_lifetime)
        family.expires = max(family.expires, now + lifetime)
        return family

    def _revoke_family(self, name: str | None) -> None:
        """Revoke every access and refresh token the grant family ``name`` issued."""
        family = self._families.pop(name, None) if name is not None else None
        if family is None:
            return
        self._revoked.update(family.jtis)
        for token in family.refresh:
            self._refresh.pop(token, None)

    def _scopes(self, value: str | None) -> list[str]:
        if value is None:
            return []
        scopes = value.split(" ")
        if len(scopes) > 50 or not all(_SCOPE_TOKEN.fullmatch(s) for s in scopes):
            raise OAuthError("invalid_scope", "malformed scope")
        if self.scopes_supported is not None:
            unknown = [s for s in scopes if s not in self.scopes_supported]
            if unknown:
                known = " ".join(self.scopes_supported)[:200]
                raise OAuthError(
                    "invalid_scope",
                    f"unknown scope {unknown[0][:60]!r} (known: {known}; "
                    "mcpfast auth-server --scope S adds one, --any-scope takes any)",
                )
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
