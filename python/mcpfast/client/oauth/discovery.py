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

An `AuthorizationServer` whose issuer or any ``*_endpoint`` of its metadata is not a
`secure_url` (``https:``, or ``http:`` to a loopback host) cannot be made: discovery refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from ..._remote import DEFAULT_POLICY, FetchError, UrlPolicy, fetch, origin_of
from ...protocol.auth import WELL_KNOWN, Challenge, metadata_url, parse_challenges, secure_url

__all__ = [
    "AuthorizationServer",
    "Challenge",
    "DiscoveryError",
    "IssuerMismatch",
    "ProtectedResource",
    "ResourceMismatch",
    "UntrustedIssuer",
    "authorization_server_metadata_urls",
    "discover_authorization_server",
    "discover_protected_resource",
    "parse_challenges",
    "resource_matches",
]

MAX_METADATA_BYTES = 256 * 1024
METADATA_SECONDS = 10.0
"""The longest one metadata document may take, all told."""
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


class DiscoveryError(Exception):
    """The authorization server could not be found (or its metadata is unusable)."""


class ResourceMismatch(DiscoveryError):
    """The protected resource metadata names another resource than the server's URL."""


class IssuerMismatch(DiscoveryError):
    """Authorization server metadata whose ``issuer`` is not the issuer it was fetched for."""


class UntrustedIssuer(DiscoveryError):
    """An authorization server the client's secrets are not for (see `ClientCredentials`), or
    one whose issuer or an endpoint is not a `secure_url`."""


# ---------------------------------------------------------------- fetching documents


async def _get_json(
    http: httpx2.AsyncClient, url: str, headers: dict[str, str], policy: UrlPolicy, what: str
) -> Any:
    """The JSON document at ``url`` (fetched by `mcpfast._remote.fetch`); None on another
    status than 200 or not JSON.

    Raises:
        DiscoveryError: refused by the fetch rules (URL, redirect, size), or unreachable.
    """
    try:
        reply = await fetch(
            http,
            "GET",
            url,
            what=what,
            max_bytes=MAX_METADATA_BYTES,
            deadline=METADATA_SECONDS,
            policy=policy,
            headers=headers,
        )
    except FetchError as exc:
        raise DiscoveryError(str(exc)) from None
    return reply.json() if reply.status == 200 else None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def resource_matches(resource: str, expected: str) -> bool:
    """Whether the metadata's ``resource`` is ``expected`` (RFC 9728 section 3.3): the same
    scheme and host (case-insensitive) and port, the same path (a trailing ``/`` aside), no
    query or fragment."""
    try:
        a, b = urlsplit(resource), urlsplit(expected)
        if a.query or a.fragment or origin_of(resource) != origin_of(expected):
            return False
    except ValueError:
        return False
    return a.path.rstrip("/") == b.path.rstrip("/")


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

    def issuer_for(self, bound: Sequence[str]) -> str:
        """The authorization server to use: the first `authorization_servers`; with ``bound``
        (the servers a client's secrets are for), the first of those.

        Raises:
            UntrustedIssuer: ``bound`` is not empty and none of it is named.
        """
        named = self.authorization_servers
        if not bound:
            return named[0]
        for issuer in named:
            if issuer in bound:
                return issuer
        raise UntrustedIssuer(
            f"refused: {self.server_url} uses the authorization server "
            + " or ".join(map(repr, named))
            + ("" if self.metadata else " (its origin: it has no protected resource metadata)")
            + f", but the client's credentials are for {' or '.join(map(repr, bound))}"
            " (not sent)"
        )


async def discover_protected_resource(
    http: httpx2.AsyncClient,
    server_url: str,
    challenge: Challenge | None = None,
    *,
    headers: dict[str, str] | None = None,
    policy: UrlPolicy = DEFAULT_POLICY,
) -> ProtectedResource:
    """The protected resource metadata of ``server_url`` (see the module doc), fetched under
    ``policy`` (the server's own origin trusted).

    Raises:
        ResourceMismatch: the metadata's ``resource`` is not the server's.
        DiscoveryError: the challenge's URL is neither on the server's origin nor https; a
            document refused by the fetch rules; one without ``authorization_servers`` or
            ``resource``.
    """
    headers = headers or {}
    policy = policy.trusting(server_url)
    parts = urlsplit(server_url)
    here = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    root = urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN, "", ""))
    candidates: list[tuple[str, tuple[str, ...]]] = []
    if challenge is not None and challenge.resource_metadata:
        named = challenge.resource_metadata
        if not named.startswith("https://") and origin_of(named) != policy.origin:
            raise DiscoveryError(
                f"the server names its metadata at {named!r}: neither on its origin nor https"
            )
        candidates.append((named, (here,)))
    if parts.path.rstrip("/"):
        candidates.append((metadata_url(server_url), (here,)))  # RFC 9728 3.1
    candidates.append((root, (_origin(server_url), here)))
    for url, expected in candidates:
        document = await _get_json(http, url, headers, policy, "protected resource metadata")
        if not isinstance(document, dict):
            continue
        resource = document.get("resource")
        if not isinstance(resource, str):
            raise DiscoveryError(f"protected resource metadata at {url} has no resource")
        if not any(resource_matches(resource, e) for e in expected):
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


def _require_secure(issuer: str, name: str, value: Any) -> None:
    """Raises `UntrustedIssuer`: ``value`` (``name`` of ``issuer``) is not a `secure_url`."""
    if not (isinstance(value, str) and secure_url(value)):
        raise UntrustedIssuer(
            f"refused: the authorization server {issuer!r} gives {name} {value!r} "
            "(only https:, or http: to a loopback host, is used)"
        )


@dataclass
class AuthorizationServer:
    """An authorization server: its issuer and metadata (``metadata_url`` None when the default
    endpoints were assumed)."""

    issuer: str
    metadata: dict[str, Any]
    metadata_url: str | None

    def __post_init__(self) -> None:
        """Raises `UntrustedIssuer`: the issuer or an endpoint is not a `secure_url`."""
        for name, value in [("issuer", self.issuer), *self.metadata.items()]:
            if name == "issuer" or name.endswith("_endpoint"):
                _require_secure(self.issuer, name, value)

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
    policy: UrlPolicy = DEFAULT_POLICY,
) -> AuthorizationServer:
    """The metadata of ``issuer`` (see the module doc), fetched under ``policy``.
    ``legacy_fallback``: without any document, assume the default endpoints under ``issuer``
    (2025-03-26).

    Raises:
        UntrustedIssuer: ``issuer`` or an endpoint of its metadata is not a `secure_url`.
        IssuerMismatch: a document's ``issuer`` differs from ``issuer``.
        DiscoveryError: no document (without ``legacy_fallback``), a document refused by the
            fetch rules, or one that offers no PKCE S256 (``code_challenge_methods_supported``).
    """
    _require_secure(issuer, "issuer", issuer)
    headers = headers or {}
    for url in authorization_server_metadata_urls(issuer):
        document = await _get_json(http, url, headers, policy, "authorization server metadata")
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
