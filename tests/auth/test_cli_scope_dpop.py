"""``mcpfast inspect`` / ``call`` with ``--scope`` (the scopes asked for instead of the
challenge's) and ``--dpop`` (tokens bound to a key made for the command), in their own process,
against an mcpfast server that takes only DPoP-bound tokens and the development authorization
server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from mcpfast.auth import DevAuthorizationServer, dev_authorization_server
from mcpfast.auth._asgi import Request, Response
from mcpfast.cli.exits import Exit

from ..e2e.processes import cli, failure
from ..helpers import guarded
from .test_cli_auth import browser, make_server

pytestmark = pytest.mark.slow


@asynccontextmanager
async def dpop_only() -> AsyncIterator[tuple[DevAuthorizationServer, str, list[str]]]:
    """The authorization server, the URL of a server requiring DPoP (scope ``mcp``), and the
    scopes of every token request the authorization server saw."""
    async with dev_authorization_server(scopes_supported=["mcp", "files:write"]) as dev:
        asked: list[str] = []
        handle = dev.handle

        async def seen(request: Request) -> Response:
            if request.path == "/token":
                asked.append(dev._form(request).one("scope") or "")
            return await handle(request)

        dev.handle = seen  # type: ignore[method-assign]
        async with guarded(make_server(), dev.issuer, dpop="required") as url:
            yield dev, url, asked


async def test_client_credentials_with_dpop_and_scopes() -> None:
    async with dpop_only() as (dev, url, asked):
        dev.register_client("svc", secret="s3cret", grant_types=["client_credentials"])
        flags = ("--client-id", "svc", "--auth-issuer", dev.issuer)
        plain = await cli("call", url, "whoami", *flags, MCPFAST_CLIENT_SECRET="s3cret")
        assert plain.returncode == Exit.NOT_AUTHORIZED, plain.stderr  # a bearer token: refused
        called = await cli(
            "call", url, "save", "path=x", *flags, "--dpop", "--scope", "mcp",
            "--scope", "files:write offline_access", MCPFAST_CLIENT_SECRET="s3cret",
        )  # fmt: skip
        assert called.returncode == Exit.NOT_AUTHORIZED, called.stderr  # offline_access: unknown
        called = await cli(
            "call", url, "save", "path=x", *flags, "--dpop", "--scope", "mcp files:write",
            MCPFAST_CLIENT_SECRET="s3cret",
        )  # fmt: skip
        assert called.returncode == 0 and called.stdout == "saved x\n", called.stderr
    assert asked[0] == "mcp"  # the challenge's
    assert asked[-1] == "mcp files:write"  # --scope, at once: no step-up


async def test_a_login_with_dpop_keeps_no_token(tmp_path: Path) -> None:
    opener, _ = browser(tmp_path, "browser")
    state = tmp_path / "state"
    async with dpop_only() as (_, url, _asked):
        with trio.fail_after(60):
            called = await cli(
                "call", url, "whoami", "--dpop", BROWSER=str(opener), MCPFAST_STATE_DIR=str(state)
            )
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["subject"] == "dev-user"
    kept = json.loads((state / "tokens.json").read_text())
    assert kept["clients"] and not kept["tokens"]  # the registration, never a bound token


@pytest.mark.parametrize(
    "flags",
    [["--bearer-env", "T", "--dpop"], ["--bearer-env", "T", "--scope", "mcp"]],
)
async def test_scope_and_dpop_are_not_for_a_token_you_have(flags: list[str]) -> None:
    result = await cli("inspect", "http://127.0.0.1:9/mcp", *flags, T="x")
    assert result.returncode == Exit.USAGE
    assert "not --bearer-env" in failure(result)
