"""A long-lived stream does not outlive its token, both engines: a ``subscriptions/listen``
stream and a legacy session's GET stream opened with a token that expires in two seconds end
cleanly (the chunked body is complete) within about a second of its ``exp``, and a fresh token
opens them again; a plain JSON reply with such a token is answered as usual."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx2
import pytest

from ..helpers import meta
from .conftest import RESOURCE
from .test_resource_server import MODERN_HEADERS, bearer, call_whoami, protected

devserver = pytest.importorskip("mcpfast.auth.devserver")

LEGACY = "2025-11-25"
LISTEN = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "subscriptions/listen",
    "params": {"notifications": {"toolsListChanged": True}, "_meta": meta()},
}


def expiry(token: str) -> float:
    """A JWT's ``exp``."""
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * 4))
    return float(claims["exp"])


async def until_end(
    http: httpx2.AsyncClient, method: str, url: str, headers: dict[str, str], body: Any = None
) -> tuple[list[str], float]:
    """Follow one SSE response to its end: its data lines and when it ended (epoch)."""
    content = json.dumps(body).encode() if body is not None else None
    async with http.stream(method, url, headers=headers, content=content) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line async for line in response.aiter_lines() if line.startswith("data:")]
    return lines, time.time()


async def test_a_listen_stream_ends_when_its_token_expires(engine: str) -> None:
    async with devserver.dev_authorization_server(scopes_supported=["mcp"]) as dev:
        async with protected(dev, engine, jwks_url=dev.jwks_uri, leeway_seconds=0) as (url, _):
            token = dev.mint("bob", scope="mcp", audience=RESOURCE, lifetime=2)
            headers = {
                **MODERN_HEADERS,
                "mcp-method": "subscriptions/listen",
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
                **bearer(token),
            }
            headers.pop("mcp-name")
            async with httpx2.AsyncClient(timeout=10) as http:
                lines, ended = await until_end(http, "POST", url, headers, LISTEN)
                assert "notifications/subscriptions/acknowledged" in lines[0]
                assert expiry(token) <= ended < expiry(token) + 1.5
                fresh = dev.mint("bob", scope="mcp", audience=RESOURCE, lifetime=2)
                lines, ended = await until_end(
                    http, "POST", url, {**headers, **bearer(fresh)}, LISTEN
                )
                assert "notifications/subscriptions/acknowledged" in lines[0]
                assert expiry(fresh) <= ended < expiry(fresh) + 1.5


async def test_a_get_stream_ends_when_its_token_expires(engine: str) -> None:
    async with devserver.dev_authorization_server(scopes_supported=["mcp"]) as dev:
        async with protected(dev, engine, jwks_url=dev.jwks_uri, leeway_seconds=0) as (url, _):
            lasting = dev.mint("bob", scope="mcp", audience=RESOURCE, lifetime=300)
            base = {
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
            }
            initialize = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "tests", "version": "1"},
                },
            }
            async with httpx2.AsyncClient(timeout=10) as http:
                reply = await http.post(url, json=initialize, headers={**base, **bearer(lasting)})
                assert reply.status_code == 200, reply.text
                session = {"mcp-session-id": reply.headers["mcp-session-id"]}
                session["mcp-protocol-version"] = LEGACY
                done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                sent = await http.post(
                    url, json=done, headers={**base, **session, **bearer(lasting)}
                )
                assert sent.status_code == 202
                for _ in range(2):
                    token = dev.mint("bob", scope="mcp", audience=RESOURCE, lifetime=2)
                    get = {"accept": "text/event-stream", **session, **bearer(token)}
                    _, ended = await until_end(http, "GET", url, get)
                    assert expiry(token) <= ended < expiry(token) + 1.5


async def test_a_json_reply_with_a_short_token_is_answered(engine: str) -> None:
    async with devserver.dev_authorization_server(scopes_supported=["mcp"]) as dev:
        async with protected(dev, engine, jwks_url=dev.jwks_uri, leeway_seconds=0) as (_, wire):
            token = dev.mint("bob", scope="mcp", audience=RESOURCE, lifetime=2)
            reply = await call_whoami(wire, bearer(token))
            assert reply.status == 200 and reply.result["structuredContent"]["subject"] == "bob"
