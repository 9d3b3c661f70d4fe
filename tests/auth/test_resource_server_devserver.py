"""A protected server against the development authorization server (`mcpfast.auth.devserver`):
a client_credentials token found through the issuer's metadata (no JWKS URL configured), key
rotation, opaque tokens by introspection, and a DPoP-bound token; both engines."""

from __future__ import annotations

import pytest

from .conftest import RESOURCE, dpop_key, dpop_proof
from .test_resource_server import MODERN_HEADERS, bearer, call_body, call_whoami, protected

devserver = pytest.importorskip("mcpfast.auth.devserver")


async def test_a_client_credentials_token_via_discovery(engine: str) -> None:
    async with devserver.dev_authorization_server(scopes_supported=["mcp"]) as dev:
        client = dev.register_client(secret="s3cret", grant_types=["client_credentials"])
        answer = await dev.client_credentials_token(
            client.client_id, "s3cret", scope="mcp", resource=RESOURCE
        )
        token = answer["access_token"]
        async with protected(dev, engine, jwks_url=None, jwks_refetch_seconds=0) as (_, wire):
            reply = await call_whoami(wire, bearer(token))
            assert reply.status == 200, reply.response.text
            assert reply.result["structuredContent"]["client_id"] == client.client_id
            dev.rotate_key()
            rotated = dev.mint("alice", scope="mcp", audience=RESOURCE)
            reply = await call_whoami(wire, bearer(rotated))
            assert reply.status == 200, reply.response.text
            assert reply.result["structuredContent"]["subject"] == "alice"
            other = dev.mint("alice", scope="mcp", audience="http://elsewhere.test/mcp")
            assert (await call_whoami(wire, bearer(other))).status == 401


async def test_opaque_tokens_by_introspection(engine: str) -> None:
    async with devserver.dev_authorization_server(
        scopes_supported=["mcp"], opaque_tokens=True
    ) as dev:
        dev.register_client("resource-server", secret="rs-secret")
        extra = {
            "jwks_url": None,
            "introspection_url": dev.introspection_endpoint,
            "introspection_client_id": "resource-server",
            "introspection_client_secret": "rs-secret",
        }
        token = dev.mint("bob", scope="mcp", audience=RESOURCE)
        async with protected(dev, engine, **extra) as (_, wire):
            reply = await call_whoami(wire, bearer(token))
            assert reply.status == 200, reply.response.text
            assert reply.result["structuredContent"]["subject"] == "bob"
            revoked = dev.mint("bob", scope="mcp", audience=RESOURCE)
            dev.revoke(revoked)
            assert (await call_whoami(wire, bearer(revoked))).status == 401


async def test_a_dpop_bound_token(engine: str) -> None:
    key = dpop_key()
    async with devserver.dev_authorization_server(scopes_supported=["mcp"]) as dev:
        token = dev.mint("carol", scope="mcp", audience=RESOURCE, jkt=key.thumbprint())
        async with protected(dev, engine, jwks_url=dev.jwks_uri) as (url, wire):
            headers = {
                **MODERN_HEADERS,
                "authorization": f"DPoP {token}",
                "dpop": dpop_proof(key, "POST", url, token),
            }
            reply = await wire.post(call_body("whoami", {}), headers)
            assert reply.status == 200, reply.response.text
            assert reply.result["structuredContent"]["subject"] == "carol"
