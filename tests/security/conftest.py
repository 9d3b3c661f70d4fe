"""The attack tests' common ground: both HTTP engines, the development authorization server
(`mcpfast auth-server`'s app) on loopback, and two tenants holding real tokens it minted.

Every test here opens sockets: ``slow`` (`tests.isolation` says so)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

import mcpfast
from mcpfast import Context
from mcpfast.auth.devserver import DevAuthorizationServer, dev_authorization_server
from mcpfast.server.config import AuthConfig

from ..helpers import Wire, running

RESOURCE = "http://mcp.test/mcp"
"""The resource the tenants' tokens are for (the protected servers are configured with it)."""
SCOPES = ["mcp", "admin", "files:read", "prompts"]
"""The scopes the development authorization server knows."""


@dataclass(frozen=True)
class Tenant:
    """A principal with a real token of the development authorization server."""

    subject: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}


@pytest.fixture(params=["hypercorn", "native"])
def engine(request: pytest.FixtureRequest) -> str:
    """Each HTTP engine in turn."""
    value: str = request.param
    return value


@pytest.fixture
async def dev() -> AsyncIterator[DevAuthorizationServer]:
    """The development authorization server, listening on loopback."""
    async with dev_authorization_server(scopes_supported=SCOPES) as server:
        yield server


def tenant(dev: DevAuthorizationServer, subject: str, scope: str = "mcp") -> Tenant:
    """``subject`` with a token for `RESOURCE` carrying ``scope`` (space-separated)."""
    return Tenant(subject, dev.mint(subject, scope=scope, audience=RESOURCE))


def auth_config(dev: DevAuthorizationServer, **extra: Any) -> AuthConfig:
    """A resource server trusting ``dev`` for `RESOURCE`, requiring scope ``mcp``."""
    fields: dict[str, Any] = {
        "issuer": dev.issuer,
        "resource": RESOURCE,
        "jwks_url": dev.jwks_uri,
        "scopes": ["mcp"],
        **extra,
    }
    return AuthConfig(**fields)


@asynccontextmanager
async def protected(
    server: mcpfast.Server, engine: str, dev: DevAuthorizationServer, **config: Any
) -> AsyncIterator[tuple[str, Wire]]:
    """Serve ``server`` behind ``dev`` on ``engine``; yields its URL and a raw-HTTP `Wire`.
    ``config`` are further `mcpfast.Config` fields (``auth`` overrides the default one)."""
    config.setdefault("auth", auth_config(dev))
    async with running(server, engine=engine, **config) as url:
        async with httpx2.AsyncClient(timeout=10) as client:
            yield url, Wire(client, url)


def subject_server(name: str, **options: Any) -> mcpfast.Server:
    """A server (``options``: further `mcpfast.Server` arguments) with one tool, ``whoami``:
    the caller's subject."""
    server = mcpfast.Server(name, "1.0", **options)

    @server.tool()
    def whoami(ctx: Context) -> str:
        assert ctx.auth is not None
        return str(ctx.auth.subject)

    return server
