"""A rotated DPoP nonce reaches the client on a 200 (RFC 9449 sections 8 and 9: the server may
supply a new nonce on any response), both engines: the development authorization server, a
protected server whose nonces rotate on demand (`RotatingNonces`), and the mcpfast client with
DPoP; after each rotation the next call succeeds at once, and the one after uses the new nonce
(no 401 round trip)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx2
import pytest
import trio

import mcpfast
from mcpfast.auth import dev_authorization_server
from mcpfast.server.auth import ResourceGuard, guard_for
from mcpfast.server.auth.dpop import RotatingNonces
from mcpfast.server.config import AuthConfig

from ..e2e.processes import free_port
from ..helpers import TEST_KEYS
from .test_client_oauth import REDIRECT, make_server, oauth, unverified


@asynccontextmanager
async def rotating(
    issuer: str, engine: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[str, RotatingNonces]]:
    """A server requiring DPoP nonces, its nonces a `RotatingNonces` the test turns."""
    nonces = RotatingNonces()

    def turned(*args: Any) -> ResourceGuard | None:
        guard = guard_for(*args)
        assert guard is not None and guard.dpop is not None
        guard.dpop.nonces = nonces
        return guard

    monkeypatch.setattr("mcpfast.server.core.endpoint.guard_for", turned)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    auth = AuthConfig(issuer=issuer, resource=url, scopes=["mcp"], dpop_nonce=True)
    config = mcpfast.Config(port=port, auth=auth, engine=cast(Any, engine))
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: mcpfast.serve(
                make_server(), config, keys=TEST_KEYS, task_status=task_status
            )
        )
        yield url, nonces
        nursery.cancel_scope.cancel()


async def test_a_rotated_nonce_comes_with_a_success(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[httpx2.Response] = []

    async def keep(response: httpx2.Response) -> None:
        seen.append(response)

    async with dev_authorization_server(scopes_supported=["mcp"]) as dev:
        async with rotating(dev.issuer, engine, monkeypatch) as (url, nonces):
            auth = oauth(redirect_uri=REDIRECT, dpop=True)
            hooks = {"response": [keep]}
            async with httpx2.AsyncClient(auth=auth, timeout=10, event_hooks=hooks) as http:
                async with mcpfast.connect(url, http_client=http, era="modern") as client:
                    assert not (await client.call_tool("whoami", {})).isError
                    assert auth.dpop is not None
                    assert auth.dpop.nonce_for(url) == nonces.current()
                    settled = len(seen)
                    for _ in range(3):
                        fresh = nonces.rotate()
                        # the proof carries the previous nonce (still taken): the 200 brings
                        # the new one, which the next proof uses
                        assert not (await client.call_tool("whoami", {})).isError
                        assert seen[-1].status_code == 200
                        assert seen[-1].headers["dpop-nonce"] == fresh
                        assert auth.dpop.nonce_for(url) == fresh
                        assert not (await client.call_tool("whoami", {})).isError
                        proof = unverified(seen[-1].request.headers["dpop"])
                        assert proof["nonce"] == fresh
                        assert "dpop-nonce" not in seen[-1].headers  # unchanged: not repeated
    mcp = [r for r in seen[settled:] if r.request.url.path == "/mcp"]
    assert [r.status_code for r in mcp] == [200] * 6  # no 401 after a rotation
