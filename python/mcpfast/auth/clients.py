"""Clients of the development authorization server: what a registration or a Client ID
Metadata Document may say (`client_from_metadata`), redirect URI rules, request parameters,
and the bounded fetch of a client's documents (`fetch_json`)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit

from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from .._remote import DEFAULT_POLICY, FetchError, UrlPolicy, fetch
from ._asgi import is_loopback_host

AUTHORIZATION_CODE: Final = "authorization_code"
REFRESH_TOKEN: Final = "refresh_token"
CLIENT_CREDENTIALS: Final = "client_credentials"
JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
GRANT_TYPES: Final = (
    AUTHORIZATION_CODE,
    REFRESH_TOKEN,
    CLIENT_CREDENTIALS,
    JWT_BEARER,
    TOKEN_EXCHANGE,
)
AUTH_METHODS: Final = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
MAX_PARAM: Final = 8192
"""The most characters of any one request parameter."""
_MAX_DOCUMENT_BYTES = 64 * 1024


def new_client_id() -> str:
    """A fresh client id: 24 hex digits (96 random bits), never starting with ``-`` (a
    ``token_urlsafe`` one may, and a command line such as ``--client-id -x...`` then reads it
    as a flag)."""
    return secrets.token_hex(12)


class OAuthError(Exception):
    """An RFC 6749 §5.2 error answer: ``error``, ``error_description``, an HTTP status."""

    def __init__(
        self,
        error: str,
        description: str,
        status: int = 400,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status = status
        self.headers = headers or []


@dataclass
class RegisteredClient:
    """A client the server knows: registered (RFC 7591 or `register_client`) or described by
    its Client ID Metadata Document (``cimd``)."""

    client_id: str
    client_secret: str | None
    redirect_uris: list[str]
    grant_types: list[str]
    token_endpoint_auth_method: str
    scope: str | None = None
    jwks: KeySet | None = None
    jwks_uri: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    cimd: bool = False


class Params:
    """Form or query parameters: each at most once (RFC 6749 §3.1), except ``resource``."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._values: dict[str, list[str]] = {}
        for name, value in pairs:
            if len(value) > MAX_PARAM:
                raise OAuthError("invalid_request", f"parameter {name[:40]!r} is too long")
            self._values.setdefault(name, []).append(value)

    @classmethod
    def parse(cls, raw: str) -> Params:
        try:
            pairs = parse_qsl(raw, keep_blank_values=True, max_num_fields=64, errors="strict")
        except ValueError:  # too many fields, or not UTF-8 once percent-decoded
            raise OAuthError("invalid_request", "malformed parameters") from None
        return cls(pairs)

    def one(self, name: str) -> str | None:
        values = self._values.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise OAuthError("invalid_request", f"parameter {name!r} given more than once")
        return values[0] or None

    def need(self, name: str) -> str:
        value = self.one(name)
        if value is None:
            raise OAuthError("invalid_request", f"missing parameter {name!r}")
        return value

    def all(self, name: str) -> list[str]:
        return [v for v in self._values.get(name, []) if v]


def b64url_sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def is_loopback_http(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and is_loopback_host(parts.hostname or "")


def acceptable_redirect_uri(uri: str) -> bool:
    """https, http on a loopback host (RFC 8252 §7.3), or a private-use scheme (§7.1)."""
    if len(uri) > 2048 or "#" in uri:
        return False
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return False
    if parts.scheme == "https":
        return bool(parts.netloc)
    if parts.scheme == "http":
        return is_loopback_http(uri)
    return "." in parts.scheme and bool(parts.path)


def redirect_matches(registered: str, given: str) -> bool:
    """Exact match, except that a loopback IP redirect may use any port (RFC 8252 §7.3)."""
    if registered == given:
        return True
    if not (is_loopback_http(registered) and is_loopback_http(given)):
        return False
    a, b = urlsplit(registered), urlsplit(given)
    try:
        a.port, b.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return False
    return (a.hostname, a.path or "/", a.query) == (b.hostname, b.path or "/", b.query)


def with_params(uri: str, params: dict[str, str]) -> str:
    parts = urlsplit(uri)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    return parts._replace(query=query).geturl()


def public_jwks(value: Any) -> KeySet:
    """A client's JWKS (a JSON object with ``keys``), public keys only."""
    if not isinstance(value, dict) or not isinstance(value.get("keys"), list):
        raise ValueError("jwks must be an object with a keys array")
    if not 0 < len(value["keys"]) <= 10:
        raise ValueError("jwks must hold 1 to 10 keys")
    for key in value["keys"]:
        if not isinstance(key, dict) or key.get("kty") not in ("EC", "RSA", "OKP"):
            raise ValueError("jwks keys must be EC, RSA or OKP keys")
        if {"d", "p", "q"} & key.keys():
            raise ValueError("jwks must hold public keys only")
    return KeySet.import_key_set(value)  # type: ignore[arg-type]


def client_from_metadata(
    doc: Any, *, cimd_url: str | None, scopes: Callable[[str], list[str]]
) -> RegisteredClient:
    """Validate RFC 7591 client metadata (or a CIMD document) into a client.

    Raises:
        OAuthError: ``invalid_redirect_uri`` or ``invalid_client_metadata``.
    """

    def bad(description: str, error: str = "invalid_client_metadata") -> OAuthError:
        return OAuthError(error, description)

    if not isinstance(doc, dict):
        raise bad("client metadata must be a JSON object")
    redirect_uris = doc.get("redirect_uris", [])
    if not isinstance(redirect_uris, list) or len(redirect_uris) > 20:
        raise bad("redirect_uris must be an array of at most 20 URIs", "invalid_redirect_uri")
    for uri in redirect_uris:
        if not isinstance(uri, str) or not acceptable_redirect_uri(uri):
            raise bad(
                "each redirect URI must be https, http on a loopback host, or a "
                "private-use scheme, without a fragment",
                "invalid_redirect_uri",
            )
    grant_types = doc.get("grant_types", [AUTHORIZATION_CODE])
    if (
        not isinstance(grant_types, list)
        or not grant_types
        or any(g not in GRANT_TYPES for g in grant_types)
    ):
        raise bad(f"grant_types must be a non-empty subset of {list(GRANT_TYPES)}")
    if AUTHORIZATION_CODE in grant_types and not redirect_uris:
        raise bad("the authorization_code grant needs redirect_uris", "invalid_redirect_uri")
    response_types = doc.get("response_types", ["code"])
    if not isinstance(response_types, list) or any(r != "code" for r in response_types):
        raise bad('response_types must be ["code"]')
    default_method = "none" if cimd_url else "client_secret_basic"
    method = doc.get("token_endpoint_auth_method", default_method)
    if method not in AUTH_METHODS:
        raise bad(f"token_endpoint_auth_method must be one of {list(AUTH_METHODS)}")
    if cimd_url and method not in ("none", "private_key_jwt"):
        raise bad("a Client ID Metadata Document client cannot use a client secret")
    for name in ("client_name", "scope", "client_uri", "logo_uri", "application_type"):
        value = doc.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > 2000):
            raise bad(f"{name} must be a string")
    if doc.get("application_type") not in (None, "native", "web"):
        raise bad('application_type must be "native" or "web"')
    scope = doc.get("scope")
    if scope is not None:
        scopes(scope)
    jwks: KeySet | None = None
    if doc.get("jwks") is not None:
        try:
            jwks = public_jwks(doc["jwks"])
        except (ValueError, JoseError, TypeError, KeyError) as exc:
            raise bad(f"jwks: {exc}") from None
    jwks_uri = doc.get("jwks_uri")
    if jwks_uri is not None and not (
        isinstance(jwks_uri, str)
        and len(jwks_uri) <= 2048
        and (jwks_uri.startswith("https://") or is_loopback_http(jwks_uri))
    ):
        raise bad("jwks_uri must be an https (or loopback http) URL")
    if method == "private_key_jwt" and jwks is None and jwks_uri is None:
        raise bad("private_key_jwt needs jwks or jwks_uri")
    secret = None
    if method in ("client_secret_basic", "client_secret_post") and not cimd_url:
        secret = secrets.token_urlsafe(24)
    client_id = cimd_url or new_client_id()
    metadata = {k: v for k, v in doc.items() if k not in ("client_id", "client_secret", "jwks")}
    if doc.get("jwks") is not None:
        metadata["jwks"] = doc["jwks"]
    metadata.update(
        client_id=client_id,
        redirect_uris=redirect_uris,
        grant_types=grant_types,
        response_types=response_types,
        token_endpoint_auth_method=method,
    )
    return RegisteredClient(
        client_id=client_id,
        client_secret=secret,
        redirect_uris=list(redirect_uris),
        grant_types=list(grant_types),
        token_endpoint_auth_method=method,
        scope=scope,
        jwks=jwks,
        jwks_uri=jwks_uri,
        metadata=metadata,
        cimd=cimd_url is not None,
    )


async def fetch_json(url: str, what: str, policy: UrlPolicy = DEFAULT_POLICY) -> tuple[Any, float]:
    """GET a client's small JSON document by `mcpfast._remote.fetch` (under ``policy``, no
    redirects, 5 s in all, 64 KiB) and how long it may be cached (Cache-Control max-age, 300 s
    by default, at most an hour; no-store: 0).

    Raises:
        OAuthError: (``invalid_client``) refused by those rules, unreachable, not 200, not JSON.
    """
    try:
        answer = await fetch(
            None,
            "GET",
            url,
            what=what,
            max_bytes=_MAX_DOCUMENT_BYTES,
            deadline=5.0,
            policy=policy,
        )
    except FetchError as exc:
        raise OAuthError("invalid_client", f"cannot fetch the {what}: {exc}") from None
    if answer.status != 200:
        raise OAuthError("invalid_client", f"the {what} answered HTTP {answer.status}")
    doc = answer.json()
    if doc is None:
        raise OAuthError("invalid_client", f"the {what} is not JSON")
    cache_control = answer.headers.get("cache-control", "").lower()
    max_age = 300.0
    if "no-store" in cache_control or "no-cache" in cache_control:
        max_age = 0.0
    else:
        found = re.search(r"max-age=(\d{1,9})", cache_control)
        if found:
            max_age = min(float(found.group(1)), 3600.0)
    return doc, max_age
