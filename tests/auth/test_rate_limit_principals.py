"""Rate limits per principal on a protected server, on both engines (issue 27): each verified
token's subject and client id has its own buckets, whatever address it comes from; two
callers on one connection's address do not share one."""

from __future__ import annotations

import httpx2

import mcpfast
from mcpfast.jsonrpc import RATE_LIMITED

from ..helpers import Wire, guarded
from .conftest import AuthServer


async def test_each_token_has_its_own_bucket(auth_server: AuthServer, engine: str) -> None:
    server = mcpfast.Server("limited")

    @server.tool(rate_limit="2/min")
    def whoami() -> str:
        return "you"

    async with (
        guarded(server, auth_server.issuer, engine, jwks_url=auth_server.jwks_url) as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        wire = Wire(http, url)
        alice = auth_server.token(aud=url, sub="alice", client_id="app")
        bob = auth_server.token(aud=url, sub="bob", client_id="app")
        alice_other_app = auth_server.token(aud=url, sub="alice", client_id="other")

        async def called(token: str) -> int:
            body, mirrored = wire.modern_body("tools/call", {"name": "whoami", "arguments": {}})
            headers = {k: v for k, v in mirrored.items() if v is not None}
            reply = await wire.post(body, {**headers, "authorization": f"Bearer {token}"})
            if reply.status == 429:
                assert reply.error["code"] == RATE_LIMITED
            return reply.status

        assert [await called(alice) for _ in range(3)] == [200, 200, 429]
        assert [await called(bob) for _ in range(3)] == [200, 200, 429]
        assert [await called(alice_other_app) for _ in range(2)] == [200, 200]
