"""``mcpfast load --dpop`` against a server that takes only DPoP-bound tokens
(``AuthConfig(dpop="required")``), through the real stack: the development authorization server
and a protected mcpfast server on loopback, ``mcpfast load`` run as the CLI runs it (locust in a
child process). One key per process, a fresh proof per request (a replayed one would be refused:
the server accepts each ``jti`` once), the server's ``DPoP-Nonce`` adopted."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
import trio

import mcpfast
from mcpfast.auth import dev_authorization_server
from mcpfast.client.oauth import DPoPKey
from mcpfast.server.config import AuthConfig

from ..e2e.processes import free_port
from ..helpers import ENGINE, TEST_KEYS
from .test_load_auth import (
    SECRET,
    SECRET_VAR,
    Protected,
    _locust,  # noqa: F401 -- autouse: skips without locust
    calls,
    load,
    make_server,
)

pytestmark = [pytest.mark.slow, pytest.mark.serial]


@asynccontextmanager
async def dpop_protected(*, server_nonce: bool, **options: Any) -> AsyncIterator[Protected]:
    """The authorization server (``options``) and an mcpfast server requiring DPoP-bound
    tokens (with its own nonces when ``server_nonce``)."""
    async with dev_authorization_server(
        scopes_supported=["mcp", "files:write"], **options
    ) as issuer:
        client = issuer.register_client(secret=SECRET, grant_types=["client_credentials"])
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        auth = AuthConfig(
            issuer=issuer.issuer,
            resource=url,
            scopes=["mcp"],
            dpop="required",
            dpop_nonce=server_nonce,
        )
        config = mcpfast.Config(port=port, auth=auth, engine=cast(Any, ENGINE))
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: mcpfast.serve(
                    make_server(), config, keys=TEST_KEYS, task_status=task_status
                )
            )
            yield Protected(issuer, url, client.client_id)
            nursery.cancel_scope.cancel()


DPOP = ("--user-class", "tools", "--dpop", "--client-id")


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_dpop_bound_tokens_and_a_proof_per_request(tmp_path: Path, era: str) -> None:
    async with dpop_protected(server_nonce=False) as setup:
        output, stats = await load(
            setup.url, tmp_path, *DPOP, setup.client_id, "--client-secret-env", SECRET_VAR,
            "--auth-issuer", setup.server.issuer,
            "--era", era, env={SECRET_VAR: SECRET},
        )  # fmt: skip
    name = "tools/call echo" if era == "modern" else "legacy tools/call echo"
    requests, failures = calls(stats, name)
    assert requests >= 10 and failures == 0, output
    assert int(stats["Aggregated"]["Failure Count"]) == 0, output
    assert not any("401" in row for row in stats), stats  # not one 401, not even renewed
    assert setup.tokens == 1, setup.paths


async def test_nonces_of_both_servers_are_adopted(tmp_path: Path) -> None:
    """The authorization server and the MCP server both want their nonces: the token request
    is sent again with the authorization server's, the first request of the process with the
    MCP server's; after that every proof carries it (no failure, a 401 only per new nonce)."""
    async with dpop_protected(server_nonce=True, require_dpop_nonce=True) as setup:
        output, stats = await load(
            setup.url, tmp_path, *DPOP, setup.client_id, "--client-secret-env", SECRET_VAR,
            "--auth-issuer", setup.server.issuer,
            env={SECRET_VAR: SECRET},
        )  # fmt: skip
    requests, failures = calls(stats, "tools/call echo")
    assert requests >= 10 and failures == 0, output
    assert int(stats["Aggregated"]["Failure Count"]) == 0, output
    retried = [row for row in stats if "401" in row]
    assert all("(401: DPoP nonce)" in row for row in retried), retried
    assert sum(calls(stats, row)[0] for row in retried) <= 4 * 2, stats  # a user's first, at most
    assert setup.tokens == 2, setup.paths  # the refused one (use_dpop_nonce), then the token


async def test_without_dpop_a_server_requiring_it_refuses(tmp_path: Path) -> None:
    async with dpop_protected(server_nonce=False) as setup:
        output, _ = await load(
            setup.url, tmp_path, "--user-class", "tools", "--client-id", setup.client_id,
            "--client-secret-env", SECRET_VAR,
            "--auth-issuer", setup.server.issuer, env={SECRET_VAR: SECRET}, expect=3,
        )  # fmt: skip
    assert "HTTP 401 (unauthorized)" in output and "DPoP-bound tokens only" in output, output


def test_a_proof_costs_microseconds() -> None:
    """What a request's proof costs (joserfc ES256), printed for the record."""
    key = DPoPKey()
    count = 300
    started = time.perf_counter()
    for _ in range(count):
        key.proof("POST", "http://127.0.0.1:8000/mcp", access_token="t" * 600)
    each = (time.perf_counter() - started) / count * 1e6
    print(f"DPoP proof: {each:.0f} us")
    assert each < 5000
