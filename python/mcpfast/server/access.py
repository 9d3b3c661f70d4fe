"""Who is asking: the verified access token of the request being served (`current_access`),
set by the endpoint once the guard has verified it, read by `Context` (``ctx.auth``) and by the
sessions and tasks it owns; and the address of the connection it came on (`current_peer`), set
by the engines. A leaf every wing may import: it imports nothing of the server."""

from __future__ import annotations

import contextvars
from typing import Any

import msgspec


class AccessToken(msgspec.Struct, frozen=True, kw_only=True):
    """A verified access token, as a handler sees it (``ctx.auth``). The token itself is not
    kept: nothing downstream can forward it (the spec forbids token passthrough)."""

    subject: str | None = None
    """``sub``: the resource owner (or the client itself, for ``client_credentials``)."""
    client_id: str | None = None
    """``client_id`` (RFC 9068), else ``azp``."""
    scopes: frozenset[str] = frozenset()
    issuer: str | None = None
    audience: tuple[str, ...] = ()
    expires_at: float | None = None
    """``exp``, seconds since the epoch."""
    jkt: str | None = None
    """``cnf.jkt``: the thumbprint of the DPoP key the token is bound to (RFC 9449)."""
    claims: dict[str, Any] = msgspec.field(default_factory=dict)
    """Every claim of the token (or of the introspection response)."""


current_access: contextvars.ContextVar[AccessToken | None] = contextvars.ContextVar(
    "mcpfast_access", default=None
)
"""The verified token of the request being served (None on an unprotected server); `Context`
reads it into ``ctx.auth``."""

current_peer: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mcpfast_peer", default=None
)
"""The remote address of the connection the request came on (the native engine sets it per
connection, the ASGI one per request from the scope's ``client``); None off a network (stdio)
or when the server does not say (an ASGI server without ``client``). What an unauthenticated
caller is counted by (`principal`)."""


def forwarded_peer(forwarded_for: str, hops: int) -> str | None:
    """The caller's address behind ``hops`` trusted proxies: the one the outermost of them
    appended to ``forwarded_for`` (``X-Forwarded-For``), the ``hops``-th from the right (a
    client's own entries lie further left); None when the header lists no address."""
    seen = [address.strip() for address in forwarded_for.split(",") if address.strip()]
    return seen[-min(hops, len(seen))] if seen else None


def principal() -> str:
    """Who is asking, as the key of what is counted per caller (rate limits, concurrency caps):
    the verified token's subject and client id (``sub:SUBJECT|CLIENT``); else the caller's
    address (``addr:ADDRESS``, `current_peer`, which the endpoint resolves behind trusted
    proxies: `forwarded_peer`); else ``local`` (stdio: one caller)."""
    access = current_access.get()
    if access is not None:
        return f"sub:{access.subject or ''}|{access.client_id or ''}"
    peer = current_peer.get()
    return "local" if peer is None else "addr:" + peer
