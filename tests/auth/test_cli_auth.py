"""Connecting to a protected server: ``mcpfast.connect(url, auth=OAuth(...))`` from Python, and
``mcpfast inspect`` / ``mcpfast call`` in their own process with client credentials
(``--client-id`` + ``--client-secret-env`` or ``$MCPFAST_CLIENT_SECRET``), a static token
(``--bearer-env``) and the login in the browser (a ``$BROWSER`` script that follows the
redirects, as a person approving would); without credentials, exit 7 (`Exit.NOT_AUTHORIZED`).
The server is an mcpfast server protected by `AuthConfig` (the engine under test), the
authorization server `dev_authorization_server`, both in this process."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
import trio

import mcpfast
from mcpfast import Context
from mcpfast.auth import DevAuthorizationServer, dev_authorization_server
from mcpfast.cli.exits import Exit
from mcpfast.client.oauth import FollowRedirect, OAuth

from .. import manual
from ..e2e.processes import cli, failure
from ..helpers import guarded

pytestmark = pytest.mark.slow

REDIRECT = "http://127.0.0.1/callback"


def make_server() -> mcpfast.Server:
    server = mcpfast.Server("protected", "1.0")

    @server.tool()
    async def whoami(ctx: Context) -> dict[str, Any]:
        assert ctx.auth is not None
        return {"subject": ctx.auth.subject, "client_id": ctx.auth.client_id}

    @server.tool(scopes=["files:write"])
    def save(path: str) -> str:
        return f"saved {path}"

    return server


@asynccontextmanager
async def protected(
    scopes: tuple[str, ...] = ("mcp", "files:write"),
) -> AsyncIterator[tuple[DevAuthorizationServer, str]]:
    """The development authorization server (granting ``scopes``) and an mcpfast server that
    needs its tokens (scope ``mcp``; ``files:write`` for the ``save`` tool); yields both, the
    latter as its URL."""
    async with dev_authorization_server(scopes_supported=list(scopes)) as dev:
        async with guarded(make_server(), dev.issuer) as url:
            yield dev, url


# ------------------------------------------------------------------------------------ Python


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_connect_with_auth_logs_in_on_the_first_401(era: str) -> None:
    async with protected() as (_, url):
        auth = OAuth(redirect_handler=FollowRedirect(), redirect_uri=REDIRECT)
        async with mcpfast.connect(url, era=cast(Any, era), auth=auth) as client:
            result = await client.call_tool("whoami", {})
            assert not result.isError, result
            assert result.structuredContent["subject"] == "dev-user"
        assert auth.authorizations == 1
        assert await auth.token_for(url) is not None


async def test_connect_without_auth_is_refused_with_401() -> None:
    async with protected() as (_, url):
        with pytest.raises(mcpfast.TransportError) as refused:
            async with mcpfast.connect(url):
                pass
        assert refused.value.status == 401


async def test_connect_takes_auth_or_an_http_client_not_both() -> None:
    async with httpx2.AsyncClient() as http:
        with pytest.raises(ValueError, match="not both"):
            async with mcpfast.connect("http://127.0.0.1:9/mcp", http_client=http, auth=OAuth()):
                pass


# --------------------------------------------------------------------------------------- CLI


async def test_client_credentials_from_a_named_variable_or_the_default_one(
    tmp_path: Path,
) -> None:
    state = str(tmp_path)
    async with protected() as (dev, url):
        dev.register_client("svc", secret="s3cret", grant_types=["client_credentials"])
        called = await cli(
            "call", url, "whoami", "--client-id", "svc", "--client-secret-env", "SVC_SECRET",
            "--auth-issuer", dev.issuer, SVC_SECRET="s3cret", MCPFAST_STATE_DIR=state,
        )  # fmt: skip
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout) == {"subject": "svc", "client_id": "svc"}
        inspected = await cli(
            "inspect", url, "--client-id", "svc", "--auth-issuer", dev.issuer,
            MCPFAST_CLIENT_SECRET="s3cret", MCPFAST_STATE_DIR=state,
        )  # fmt: skip
        assert inspected.returncode == 0, inspected.stderr
        assert {t["name"] for t in json.loads(inspected.stdout)["tools"]} == {"whoami", "save"}
        legacy = await cli(
            "call", "--era", "legacy", url, "whoami", "--client-id", "svc",
            "--auth-issuer", dev.issuer, MCPFAST_CLIENT_SECRET="s3cret", MCPFAST_STATE_DIR=state,
        )  # fmt: skip
        assert legacy.returncode == 0, legacy.stderr
        wrong = await cli(
            "call", url, "whoami", "--client-id", "svc", "--auth-issuer", dev.issuer,
            MCPFAST_CLIENT_SECRET="nope", MCPFAST_STATE_DIR=state,
        )  # fmt: skip
        assert wrong.returncode == Exit.NOT_AUTHORIZED
        assert "invalid_client" in failure(wrong)
    assert not (tmp_path / "tokens.json").exists()  # client credentials keep no tokens


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_a_tool_s_scope_is_stepped_up_to_or_exit_7(era: str) -> None:
    flags = ["--era", era, "--client-id", "svc", "--auth-issuer"]
    async with protected() as (dev, url):  # 403 insufficient_scope: the token asked again
        dev.register_client("svc", secret="s3cret")
        saved = await cli(
            "call", url, "save", "path=x", *flags, dev.issuer, MCPFAST_CLIENT_SECRET="s3cret"
        )
        assert saved.returncode == 0 and saved.stdout == "saved x\n", saved.stderr
    async with protected(scopes=("mcp",)) as (dev, url):  # an authorization server without it
        dev.register_client("svc", secret="s3cret")
        saved = await cli(
            "call", url, "save", "path=x", *flags, dev.issuer, MCPFAST_CLIENT_SECRET="s3cret"
        )
        assert saved.returncode == Exit.NOT_AUTHORIZED, saved.stderr
        line = failure(saved)
        assert "403" in line or "invalid_scope" in line, line
        assert "calling save" in line


async def test_a_static_token_from_a_variable() -> None:
    async with protected() as (dev, url):
        dev.register_client("svc", secret="s3cret", grant_types=["client_credentials"])
        token = await dev.client_credentials_token("svc", "s3cret", scope="mcp", resource=url)
        called = await cli(
            "call", url, "whoami", "--bearer-env", "MY_TOKEN", MY_TOKEN=token["access_token"]
        )
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["client_id"] == "svc"
        refused = await cli("inspect", url, "--bearer-env", "MY_TOKEN", MY_TOKEN="forged")
        assert refused.returncode == Exit.NOT_AUTHORIZED
        assert "401" in failure(refused) and "$MY_TOKEN was refused" in failure(refused)


async def test_without_credentials_a_401_is_exit_7_and_says_what_to_give() -> None:
    async with protected() as (_, url):
        for flags in (["--no-login"], [], ["--era", "modern"], ["--era", "legacy"]):
            result = await cli("inspect", url, *flags)  # --no-login, or no browser
            assert result.returncode == Exit.NOT_AUTHORIZED, result.stderr
            line = failure(result)
            assert "not authorized" in line and "401" in line
            assert "--client-id" in line and "--bearer-env" in line


@pytest.mark.parametrize(
    ("flags", "env", "says"),
    [
        (["--bearer-env", "NOT_SET"], {}, "$NOT_SET is not set"),
        (["--client-id", "svc", "--client-secret-env", "NOT_SET"], {}, "$NOT_SET is not set"),
        (["--client-secret-env", "S"], {"S": "x"}, "needs --client-id"),
        (["--bearer-env", "T", "--client-id", "svc"], {"T": "x"}, "not both"),
        (["--client-id", "svc", "--no-login"], {}, "has no secret"),
        (["--client-id", "svc"], {"MCPFAST_CLIENT_SECRET": "x"}, "needs --auth-issuer URL"),
        (["--auth-issuer", "https://as.example"], {}, "--auth-issuer names"),
        (
            ["--client-id", "svc", "--auth-issuer", "http://as.example"],
            {"MCPFAST_CLIENT_SECRET": "x"},
            "not an https: URL",
        ),
    ],
)
async def test_authorization_flags_that_cannot_work_are_usage_errors(
    flags: list[str], env: dict[str, str], says: str
) -> None:
    result = await cli("inspect", "http://127.0.0.1:9/mcp", *flags, **env)
    assert result.returncode == Exit.USAGE
    assert says in failure(result)


async def test_stdio_takes_no_authorization_flags() -> None:
    server = f"{sys.executable} -m mcpfast serve --stdio"
    result = await cli("inspect", "--stdio", server, "--bearer-env", "T", T="x")
    assert result.returncode == Exit.USAGE and "for a URL" in failure(result)


BROWSER_SCRIPT = """#!/bin/sh
echo "$1" >> {log}
{python} -c '
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=10).read()  # the redirects, as a browser would
' "$1" >> {log} 2>&1 &
"""


def browser(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A ``$BROWSER`` that opens the authorization URL in the background (the development
    server approves at once and redirects to the loopback callback); and its log."""
    log = tmp_path / f"{name}.log"
    script = tmp_path / f"{name}.sh"
    script.write_text(BROWSER_SCRIPT.format(log=log, python=sys.executable))
    script.chmod(0o755)
    return script, log


async def test_the_login_in_the_browser_keeps_its_tokens_for_the_next_command(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    first, first_log = browser(tmp_path, "first")
    second, second_log = browser(tmp_path, "second")
    async with protected() as (_, url):
        with trio.fail_after(60):
            called = await cli(
                "call", url, "whoami", BROWSER=str(first), MCPFAST_STATE_DIR=str(state)
            )
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["subject"] == "dev-user"
        assert "opening a browser" in called.stderr and "/authorize?" in called.stderr
        assert "/authorize?" in first_log.read_text()
        tokens = state / "tokens.json"
        assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        kept = json.loads(tokens.read_text())
        assert list(kept["tokens"]) == [url] and kept["clients"]  # the registration too
        again = await cli("inspect", url, BROWSER=str(second), MCPFAST_STATE_DIR=str(state))
        assert again.returncode == 0, again.stderr
        assert "opening a browser" not in again.stderr and not second_log.exists()


async def test_the_readme_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The manual's Python lines (docs/authorization.md), with `FollowRedirect` for the browser
    and the token file in a temporary directory."""
    block = manual.block(
        manual.page("authorization.md"), "## Connecting to a protected server", "python"
    )
    assert "oauth.LoopbackRedirect()" in block and "Path.home()" in block
    assert "mcpfast.connect(url, auth=auth)" in block
    async with protected() as (_, url):
        code = block.replace("oauth.LoopbackRedirect()", "oauth.FollowRedirect()").replace(
            "Path.home()", f"Path({str(tmp_path)!r})"
        )
        body = "\n".join("    " + line for line in code.splitlines())
        namespace: dict[str, Any] = {"mcpfast": mcpfast, "url": url}  # the page's server
        exec(compile(f"async def main():\n{body}\n", "authorization.md", "exec"), namespace)
        await namespace["main"]()
    assert capsys.readouterr().out.strip() == "['whoami', 'save']"
    assert (tmp_path / ".cache/mcpfast/tokens.json").exists()


async def test_the_login_as_a_pre_registered_public_client(tmp_path: Path) -> None:
    opener, log = browser(tmp_path, "browser")
    async with protected() as (dev, url):
        dev.register_client("cli")  # public: no secret, a loopback redirect at any port
        registered = len(dev.clients())
        with trio.fail_after(60):
            called = await cli(
                "call", url, "whoami", "--client-id", "cli",
                BROWSER=str(opener), MCPFAST_STATE_DIR=str(tmp_path / "state"),
            )  # fmt: skip
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout) == {"subject": "dev-user", "client_id": "cli"}
        assert "client_id=cli" in log.read_text()
        assert len(dev.clients()) == registered  # no dynamic registration
