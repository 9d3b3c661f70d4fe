"""Both engines route a request's path alike (`protocol.routing`, applied once by
`Endpoint.exchange`): the MCP path, the protected resource metadata, the health probes, the
Server Card and its AI Catalog, else 404, for GET, HEAD, OPTIONS and POST. Only a body sent to
a path other than the MCP path differs: Hypercorn reads it off the connection itself, so the
side path answers; the native engine would have to, so it answers 404 and closes."""

from __future__ import annotations

from contextlib import AsyncExitStack

import httpx2

import mcpfast
from mcpfast.server.config import AuthConfig

from ..helpers import running

SIDE_PATHS = (
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-protected-resource",
    "/healthz",
    "/readyz",
    "/mcp/server-card",
    "/.well-known/ai-catalog.json",
)
PATHS = ("/mcp", *SIDE_PATHS, "/nothing", "/mcp/")
METHODS = ("GET", "HEAD", "OPTIONS", "POST", "DELETE")
BODY = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'

Answer = tuple[int, str | None, str | None, str | None, bytes]
"""Status, ``content-type``, ``allow``, ``connection`` and body."""


def protected_card_server() -> mcpfast.Server:
    server = mcpfast.Server("com.example/routed", "1.0", description="Routed")
    server.publish_card()
    return server


AUTH = AuthConfig(
    issuer="https://as.example", resource="https://mcp.example/mcp", jwks_url="https://as.example/j"
)


async def _answers(http: httpx2.AsyncClient, base: str) -> dict[tuple[str, str, bool], Answer]:
    answers = {}
    for path in PATHS:
        for method in METHODS:
            for body in (False, True):
                content = BODY if body else None
                reply = await http.request(method, base + path, content=content)
                headers = reply.headers
                answers[path, method, body] = (
                    reply.status_code,
                    headers.get("content-type"),
                    headers.get("allow"),
                    headers.get("connection"),
                    reply.content,
                )
    return answers


async def test_both_engines_route_alike() -> None:
    answers = {}
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=10))
        for engine in ("hypercorn", "native"):
            url = await stack.enter_async_context(
                running(protected_card_server(), engine=engine, auth=AUTH)
            )
            answers[engine] = await _answers(http, url.removesuffix("/mcp"))
    hypercorn, native = answers["hypercorn"], answers["native"]
    for (path, method, body), answer in hypercorn.items():
        if body and path in SIDE_PATHS:
            assert native[path, method, body] == (404, "text/plain", None, "close", b"")
            assert answer == hypercorn[path, method, False]  # answered as without a body
        else:
            assert native[path, method, body][:3] == answer[:3], (path, method, body)
            assert native[path, method, body][4] == answer[4], (path, method, body)
    assert native["/nothing", "GET", False][:3] == (404, "text/plain", None)
    assert native["/nothing", "POST", True][3] == "close"  # the body is never read
    assert native["/healthz", "POST", False][:3] == (405, None, "GET, HEAD")
    assert native["/mcp/server-card", "OPTIONS", False][0] == 204
    assert native["/.well-known/oauth-protected-resource", "GET", False][0] == 200
    assert native["/mcp", "GET", False][0] == 401  # the MCP path: a token first
