"""Which client id to use with an authorization server, in the order the MCP authorization
spec gives:

1. credentials the application was given for that issuer (pre-registration), or that an
   earlier registration with that issuer left in the `TokenStore`;
2. a Client ID Metadata Document: the URL of the client's metadata is its client id, when the
   server advertises ``client_id_metadata_document_supported`` and the application has one;
3. dynamic client registration (RFC 7591) at the server's ``registration_endpoint``;
4. otherwise `RegistrationError` (the user has to register the client by hand).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2

from ..._remote import DEFAULT_POLICY, FetchError, UrlPolicy, fetch
from .discovery import AuthorizationServer
from .tokens import ClientCredentials, TokenStore, choose_auth_method

__all__ = ["ClientMetadata", "RegistrationError", "obtain_client"]


MAX_REGISTRATION_BYTES = 256 * 1024
REGISTRATION_SECONDS = 30.0
"""The longest a registration may take, all told."""


class RegistrationError(Exception):
    """No client id could be had from this authorization server."""


@dataclass
class ClientMetadata:
    """What the client says about itself in a registration (RFC 7591 section 2)."""

    client_name: str = "mcpfast"
    redirect_uris: list[str] = field(default_factory=lambda: ["http://127.0.0.1/callback"])
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "refresh_token"])
    client_uri: str | None = None
    software_id: str | None = None
    software_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def application_type(self) -> str:
        """``native`` for loopback or custom-scheme redirects, ``web`` otherwise."""
        for uri in self.redirect_uris:
            parts = urlsplit(uri)
            if parts.scheme not in ("http", "https") or parts.hostname in (
                "127.0.0.1",
                "localhost",
                "::1",
            ):
                return "native"
        return "web"


def _offered(server: AuthorizationServer) -> list[str] | None:
    methods = server.metadata.get("token_endpoint_auth_methods_supported")
    return [str(m) for m in methods] if isinstance(methods, list) else None


async def register(
    http: httpx2.AsyncClient,
    server: AuthorizationServer,
    metadata: ClientMetadata,
    policy: UrlPolicy = DEFAULT_POLICY,
) -> ClientCredentials:
    """Dynamic client registration (RFC 7591) with ``server``, its answer read by
    `mcpfast._remote.fetch` under ``policy`` (at most `MAX_REGISTRATION_BYTES`).

    Raises:
        RegistrationError: no ``registration_endpoint``, the server refused, or its endpoint
            or answer was refused by those rules.
    """
    endpoint = server.registration_endpoint
    if not endpoint:
        raise RegistrationError(
            f"{server.issuer} offers neither dynamic registration nor client id metadata "
            "documents: pass the client's credentials (OAuth(client=ClientCredentials(...)))"
        )
    wanted = choose_auth_method(
        ClientCredentials("", client_secret="?", issuer=server.issuer), _offered(server)
    )
    offered = _offered(server)
    if offered is not None and wanted not in offered:
        wanted = "none" if "none" in offered else offered[0]
    body: dict[str, Any] = {
        "client_name": metadata.client_name,
        "redirect_uris": list(metadata.redirect_uris),
        "grant_types": list(metadata.grant_types),
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted,
        "application_type": metadata.application_type,
    }
    for name in ("client_uri", "software_id", "software_version"):
        value = getattr(metadata, name)
        if value is not None:
            body[name] = value
    body.update(metadata.extra)
    try:
        response = await fetch(
            http,
            "POST",
            endpoint,
            what="registration response",
            max_bytes=MAX_REGISTRATION_BYTES,
            deadline=REGISTRATION_SECONDS,
            policy=policy,
            json=body,
        )
    except FetchError as exc:
        raise RegistrationError(f"dynamic registration: {exc}") from None
    if response.status not in (200, 201):
        text = response.body[:200].decode("utf-8", "replace")
        raise RegistrationError(
            f"dynamic registration at {endpoint}: HTTP {response.status}: {text}"
        )
    answer = response.json()
    if answer is None:
        raise RegistrationError(f"dynamic registration at {endpoint}: not JSON")
    if not isinstance(answer, dict) or not isinstance(answer.get("client_id"), str):
        raise RegistrationError(f"dynamic registration at {endpoint}: no client_id")
    method = answer.get("token_endpoint_auth_method")
    secret = answer.get("client_secret")
    expires = answer.get("client_secret_expires_at")
    return ClientCredentials(
        client_id=answer["client_id"],
        client_secret=secret if isinstance(secret, str) else None,
        token_endpoint_auth_method=method if isinstance(method, str) else wanted,
        issuer=server.issuer,
        expires_at=float(expires) if isinstance(expires, int | float) and expires else None,
    )


async def obtain_client(
    http: httpx2.AsyncClient,
    server: AuthorizationServer,
    *,
    store: TokenStore,
    preregistered: list[ClientCredentials],
    metadata_url: str | None,
    metadata: ClientMetadata,
    policy: UrlPolicy = DEFAULT_POLICY,
) -> ClientCredentials:
    """The client to use with ``server`` (see the module doc); a new registration (under
    ``policy``) is saved in ``store`` under the issuer."""
    for client in preregistered:
        if client.issuer is None or client.issuer == server.issuer:
            return client
    stored = await store.get_client(server.issuer)
    if stored is not None and not stored.expired:
        return stored
    if metadata_url and server.metadata.get("client_id_metadata_document_supported") is True:
        return ClientCredentials(
            client_id=metadata_url, token_endpoint_auth_method="none", issuer=server.issuer
        )
    client = await register(http, server, metadata, policy)
    client.issuer = server.issuer
    if client.expires_at and client.expires_at < time.time():
        client.expires_at = None
    await store.set_client(server.issuer, client)
    return client
