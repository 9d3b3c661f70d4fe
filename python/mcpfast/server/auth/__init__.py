"""A protected MCP server: the resource-server side of MCP authorization (HTTP only; stdio is
not protected, as the spec says: credentials there come from the environment).

`AuthConfig` (plain data, in `Config.auth`) says who issues tokens and for which resource;
`guard_for` builds the endpoint's `ResourceGuard` from it, with a `JwtVerifier` or an
`IntrospectionVerifier`, or the `Server`'s own ``token_verifier`` (any `TokenVerifier`); a
request it lets through is answered through a `TokenBound` responder (a stream ends with its
token; a rotated DPoP nonce goes out on the success).
The rules without I/O (challenges, the metadata document, scopes) are `mcpfast.protocol.auth`.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from ..access import AccessToken, current_access
from ..config import AuthConfig, Config
from .bound import TokenBound
from .dpop import DpopError, DpopVerifier
from .guard import ResourceGuard, verifier_for
from .introspection import IntrospectionVerifier
from .jwt import JwtVerifier
from .verifier import InvalidToken, RequestInfo, TokenVerifier, VerifierUnavailable

if TYPE_CHECKING:
    from ..framework.app import Server
    from ..state.keys import KeyRing

__all__ = [
    "AccessToken",
    "AuthConfig",
    "DpopError",
    "DpopVerifier",
    "IntrospectionVerifier",
    "InvalidToken",
    "JwtVerifier",
    "RequestInfo",
    "ResourceGuard",
    "TokenBound",
    "TokenVerifier",
    "VerifierUnavailable",
    "current_access",
    "guard_for",
]


def guard_for(server: Server, config: Config, keys: KeyRing) -> ResourceGuard | None:
    """The guard of an endpoint serving ``server`` with ``config`` (None: not protected)."""
    auth = config.auth
    if auth is None:
        return None
    audiences = list(auth.audience or [auth.resource or ""])
    verifier = server.token_verifier or verifier_for(auth, audiences)
    return ResourceGuard(
        auth,
        config.path,
        verifier,
        scopes=server.scopes,
        declared_scopes=server.declared_scopes(),
        nonce_secret=hmac.new(keys.signing_key, b"mcpfast dpop nonce", hashlib.sha256).digest(),
        claims=server.bus,
    )
