"""OAuth 2.1 for the mcpfast client: an ``httpx2.Auth`` for protected MCP servers.

```python
import httpx2, mcpfast
from mcpfast.client.oauth import OAuth, LoopbackRedirect, FileTokenStore

auth = OAuth(redirect_handler=LoopbackRedirect(), store=FileTokenStore("~/.mcpfast/tokens.json"),
             client_metadata_url="https://app.example/client.json")
async with httpx2.AsyncClient(auth=auth) as http:
    async with mcpfast.connect("https://mcp.example/mcp", http_client=http) as client:
        ...
```

Modules: `discovery` (protected resource and authorization server metadata), `flow`
(authorization code + PKCE, scope selection, redirect handlers), `registration` (pre-registered,
Client ID Metadata Document, dynamic registration), `tokens` (token endpoint, client
authentication, stores), `dpop` (proofs and nonces), `grants` (client credentials, JWT bearer,
ID-JAG).
"""

from __future__ import annotations

from .auth import OAuth
from .discovery import (
    AuthorizationServer,
    Challenge,
    DiscoveryError,
    IssuerMismatch,
    ProtectedResource,
    ResourceMismatch,
    UntrustedIssuer,
    discover_authorization_server,
    discover_protected_resource,
    parse_challenges,
)
from .dpop import DPoPKey
from .flow import (
    AuthorizationError,
    AuthorizationResponse,
    FollowRedirect,
    LoopbackRedirect,
    pkce_pair,
    select_scopes,
)
from .grants import ClientCredentialsGrant, GrantContext, IdJagGrant, JwtBearerGrant
from .registration import ClientMetadata, RegistrationError
from .tokens import (
    ClientCredentials,
    FileTokenStore,
    MemoryTokenStore,
    Token,
    TokenError,
    TokenStore,
)

__all__ = [
    "AuthorizationError",
    "AuthorizationResponse",
    "AuthorizationServer",
    "Challenge",
    "ClientCredentials",
    "ClientCredentialsGrant",
    "ClientMetadata",
    "DPoPKey",
    "DiscoveryError",
    "FileTokenStore",
    "FollowRedirect",
    "GrantContext",
    "IdJagGrant",
    "IssuerMismatch",
    "JwtBearerGrant",
    "LoopbackRedirect",
    "MemoryTokenStore",
    "OAuth",
    "ProtectedResource",
    "RegistrationError",
    "ResourceMismatch",
    "Token",
    "TokenError",
    "TokenStore",
    "UntrustedIssuer",
    "discover_authorization_server",
    "discover_protected_resource",
    "parse_challenges",
    "pkce_pair",
    "select_scopes",
]
