"""Finding the authorization server of a protected MCP server.

1. The protected resource metadata (RFC 9728): the ``resource_metadata`` of the 401's
   ``WWW-Authenticate`` challenge, else ``/.well-known/oauth-protected-resource<path>``, else
   the root ``/.well-known/oauth-protected-resource``. Its ``resource`` must name the server
   the client is talking to (the same origin, and a path the request's path is under).
2. The authorization server metadata of its first ``authorization_servers`` issuer: RFC 8414
   then OpenID Connect Discovery, path-aware (``/.well-known/oauth-authorization-server/<path>``,
   ``/.well-known/openid-configuration/<path>``, ``<path>/.well-known/openid-configuration``;
   for an issuer without a path the two root documents). The document's ``issuer`` must be the
   issuer the URL was built from, compared as plain strings.
3. Without protected resource metadata (a 2025-03-26 server), the authorization server is the
   server's origin: its RFC 8414 document, else the default ``/authorize``, ``/token`` and
   ``/register`` endpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from ...protocol.auth import WELL_KNOWN, Challenge, metadata_url, parse_challenges

__all__ = [
    "AuthorizationServer",
    "Challenge",
    "DiscoveryError",
    "IssuerMismatch",
    "ProtectedResource",
    "ResourceMismatch",
    "authorization_server_metadata_urls",
    "discover_authorization_server",
    "discover_protected_resource",
    "parse_challenges",
    "resource_matches",
]

MAX_METADATA_BYTES = 256 * 1024
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


class DiscoveryError(Exception):
    """The authorization server could not be found (or its metadata is unusable)."""


class ResourceMismatch(DiscoveryError):
    """The protected resource metadata names another resource than the server's URL."""


class IssuerMismatch(DiscoveryError):
    """Authorization server metadata whose ``issuer`` is not the issuer it was fetched for."""


# ---------------------------------------------------------------- fetching documents


async def _get_json(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> Any:
    """The JSON document at ``url``; None on 4xx/5xx, not JSON or too big; connection errors
    propagate."""
    response = await http.get(url, headers={"accept": "application/json", **headers})
    if response.status_code != 200:
        return None
    if len(response.content) > MAX_METADATA_BYTES:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def resource_matches(resource: str, server_url: str) -> bool:
    """Whether the metadata's ``resource`` covers ``server_url``: the same scheme and host
    (case-insensitive) and port, and the server's path equal to or under the resource's."""
    try:
        a, b = urlsplit(resource), urlsplit(server_url)
        if a.scheme.lower() != b.scheme.lower() or a.fragment:
            return False
        if (a.hostname or "").lower() != (b.hostname or "").lower() or a.port != b.port:
            return False
    except ValueError:
        return False
    base = a.path.rstrip("/")
    path = b.path.rstrip("/")
    return path == base or path.startswith(base + "/") or base == ""


@dataclass
class ProtectedResource:
    """What the client learned about the MCP server: its metadata (None for a 2025-03-26 server
    without any), where it came from, and the resource identifier to ask tokens for."""

    server_url: str
    metadata: dict[str, Any] | None
    metadata_url: str | None

    @property
    def resource(self) -> str:
        """The ``resource`` parameter (RFC 8707): the metadata's value exactly as published,
        else the server's URL without query or fragment."""
        if self.metadata and isinstance(self.metadata.get("resource"), str):
            return str(self.metadata["resource"])
        parts = urlsplit(self.server_url)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))

    @property
    def authorization_servers(self) -> list[str]:
        servers = (self.metadata or {}).get("authorization_servers")
        if isinstance(servers, list) and servers and all(isinstance(s, str) for s in servers):
            return list(servers)
        return [_origin(self.server_url)]

    @property
    def scopes_supported(self) -> list[str] | None:
        scopes = (self.metadata or {}).get("scopes_supported")
        return [str(s) for s in scopes] if isinstance(scopes, list) else None


async def discover_protected_resource(
    http: httpx2.AsyncClient,
    server_url: str,
    challenge: Challenge | None = None,
    *,
    headers: dict[str, str] | None = None,
) -> ProtectedResource:
    """The protected resource metadata of ``server_url`` (see the module doc).

    Raises:
        ResourceMismatch: the metadata's ``resource`` does not cover ``server_url``.
        DiscoveryError: the document found has no ``authorization_servers`` or ``resource``.
    """
    headers = headers or {}
    candidates: list[str] = []
    if challenge is not None and challenge.resource_metadata:
        candidates.append(challenge.resource_metadata)
    parts = urlsplit(server_url)
    if parts.path.rstrip("/"):
        candidates.append(metadata_url(server_url))  # the server's own rule (RFC 9728 3.1)
    candidates.append(urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN, "", "")))
    for url in candidates:
        document = await _get_json(http, url, headers)
        if not isinstance(document, dict):
            continue
        resource = document.get("resource")
        if not isinstance(resource, str):
            raise DiscoveryError(f"protected resource metadata at {url} has no resource")
        if not resource_matches(resource, server_url):
            raise ResourceMismatch(
                f"protected resource metadata at {url} is for {resource!r}, not {server_url!r}"
            )
        servers = document.get("authorization_servers")
        if not isinstance(servers, list) or not servers:
            raise DiscoveryError(
                f"protected resource metadata at {url} names no authorization server"
            )
        return ProtectedResource(server_url, document, url)
    return ProtectedResource(server_url, None, None)


# --------------------------------------------------------------- authorization server


@dataclass
class AuthorizationServer:
    """An authorization server: its issuer and metadata (``metadata_url`` None when the default
    endpoints were assumed)."""

    issuer: str
    metadata: dict[str, Any]
    metadata_url: str | None

    def endpoint(self, name: str) -> str | None:
        value = self.metadata.get(name)
        return value if isinstance(value, str) else None

    @property
    def authorization_endpoint(self) -> str:
        return self.endpoint("authorization_endpoint") or self.issuer.rstrip("/") + "/authorize"

    @property
    def token_endpoint(self) -> str:
        return self.endpoint("token_endpoint") or self.issuer.rstrip("/") + "/token"

    @property
    def registration_endpoint(self) -> str | None:
        return self.endpoint("registration_endpoint")

    def supports(self, field_name: str, value: str) -> bool:
        values = self.metadata.get(field_name)
        return isinstance(values, list) and value in values

    @property
    def scopes_supported(self) -> list[str] | None:
        scopes = self.metadata.get("scopes_supported")
        return [str(s) for s in scopes] if isinstance(scopes, list) else None


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """The metadata URLs to try for ``issuer``, in order (see the module doc)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(p: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, p, "", ""))

    if not path:
        return [at(OAUTH_WELL_KNOWN), at(OIDC_WELL_KNOWN)]
    return [at(OAUTH_WELL_KNOWN + path), at(OIDC_WELL_KNOWN + path), at(path + OIDC_WELL_KNOWN)]


async def discover_authorization_server(
    http: httpx2.AsyncClient,
    issuer: str,
    *,
    legacy_fallback: bool = False,
    headers: dict[str, str] | None = None,
) -> AuthorizationServer:
    """The metadata of ``issuer`` (see the module doc). ``legacy_fallback``: without any
    document, assume the default endpoints under ``issuer`` (2025-03-26).

    Raises:
        IssuerMismatch: a document's ``issuer`` differs from ``issuer``.
        DiscoveryError: no document (without ``legacy_fallback``), or one that offers no PKCE
            S256 (``code_challenge_methods_supported``).
    """
    headers = headers or {}
    for url in authorization_server_metadata_urls(issuer):
        document = await _get_json(http, url, headers)
        if not isinstance(document, dict):
            continue
        if document.get("issuer") != issuer:
            raise IssuerMismatch(
                f"the metadata at {url} is for issuer {document.get('issuer')!r}, not {issuer!r}"
            )
        methods = document.get("code_challenge_methods_supported")
        if document.get("authorization_endpoint") and (
            not isinstance(methods, list) or "S256" not in methods
        ):
            raise DiscoveryError(
                f"the authorization server {issuer} does not advertise PKCE S256 "
                "(code_challenge_methods_supported): refusing to use it"
            )
        return AuthorizationServer(issuer, document, url)
    if legacy_fallback:
        base = issuer.rstrip("/")
        metadata = {
            "issuer": issuer,
            "authorization_endpoint": base + "/authorize",
            "token_endpoint": base + "/token",
            "registration_endpoint": base + "/register",
        }
        return AuthorizationServer(issuer, metadata, None)
    raise DiscoveryError(f"no authorization server metadata found for {issuer}")
