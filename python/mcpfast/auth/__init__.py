"""Authorization helpers that ship with mcpfast: `devserver`, a development OAuth 2.1
authorization server (in memory, loopback only) for tests and local development."""

from __future__ import annotations

from .devserver import (
    DevAuthorizationServer,
    OAuthError,
    RegisteredClient,
    TokenRequestError,
    dev_authorization_server,
)

__all__ = [
    "DevAuthorizationServer",
    "OAuthError",
    "RegisteredClient",
    "TokenRequestError",
    "dev_authorization_server",
]
