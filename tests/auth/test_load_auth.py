"""``mcpfast load`` against a protected server, through the real stack: the development
authorization server and an mcpfast server protected by `AuthConfig` on loopback, and
``mcpfast load`` run as the CLI runs it (locust in a child process, two seconds each).

Covered: client credentials with the token endpoint discovered (the 401's challenge, the
protected resource metadata, the authorization server's metadata) and with ``--token-url``, one
token per worker process (``--processes 2``), a static bearer token from ``--bearer-env``; no
credentials (the 401s counted apart); a token whose scope lacks a tool's (the 403s counted
apart); options refused before locust starts."""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
import trio

import mcpfast
from mcpfast.auth import dev_authorization_server
from mcpfast.auth._asgi import Request, Response
from mcpfast.auth.devserver import DevAuthorizationServer
from mcpfast.load.command import locust_command
from mcpfast.load.report import ErrorGroup, Row, Summary, format_summary
from mcpfast.load.runner import add_arguments
from mcpfast.server.config import AuthConfig

from ..e2e.processes import free_port
from ..helpers import ENGINE, REPO, TEST_KEYS

pytestmark = [pytest.mark.slow, pytest.mark.serial]

SECRET = "load-s3cret"
SECRET_VAR = "MCPFAST_TEST_LOAD_SECRET"
BEARER_VAR = "MCPFAST_TEST_LOAD_BEARER"


@pytest.fixture(autouse=True)
def _locust() -> None:
    """Looked up, never imported: locust would bring gevent into this Trio process."""
    if importlib.util.find_spec("locust") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("locust (mcpfast[load]) is not installed and CI=true requires it")
        pytest.skip("locust (mcpfast[load]) is not installed")


def make_server() -> mcpfast.Server:
    server = mcpfast.Server("protected-load", "1.0")

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        return text

    @server.tool(scopes=["files:write"])
    def save(path: str) -> str:
        return f"saved {path}"

    return server


class Protected:
    """The authorization server (its requests counted by path), the protected MCP server's URL
    and a registered client."""

    def __init__(self, server: DevAuthorizationServer, url: str, client_id: str) -> None:
        self.server = server
        self.url = url
        self.client_id = client_id
        self.paths: list[str] = []
        self.from_load: list[str] = []
        """The paths asked for by the load test (not by the MCP server, whose HTTP client is
        httpx2)."""
        handle = server.handle

        async def counted(request: Request) -> Response:
            self.paths.append(request.path)
            if "httpx" not in (request.header("user-agent") or ""):
                self.from_load.append(request.path)
            return await handle(request)

        server.handle = counted  # type: ignore[method-assign]

    @property
    def tokens(self) -> int:
        """Token requests seen."""
        return self.paths.count("/token")

    @property
    def issuer(self) -> str:
        return self.server.issuer


@asynccontextmanager
async def protected(*, introspect: bool = False, **options: Any) -> AsyncIterator[Protected]:
    """``options``: the authorization server's; ``introspect``: opaque tokens, introspected at
    every request (no token cache), so that a revoked one is refused at once."""
    if introspect:
        options["opaque_tokens"] = True
    async with dev_authorization_server(
        scopes_supported=["mcp", "files:write"], **options
    ) as issuer:
        client = issuer.register_client(secret=SECRET, grant_types=["client_credentials"])
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        extra: dict[str, Any] = {}
        if introspect:
            issuer.register_client("resource-server", secret="rs", grant_types=[])
            extra = {
                "introspection_url": issuer.introspection_endpoint,
                "introspection_client_id": "resource-server",
                "introspection_client_secret": "rs",
                "token_cache_seconds": 0.0,
            }
        auth = AuthConfig(issuer=issuer.issuer, resource=url, scopes=["mcp"], **extra)
        config = mcpfast.Config(port=port, auth=auth, engine=cast(Any, ENGINE))
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: mcpfast.serve(
                    make_server(), config, keys=TEST_KEYS, task_status=task_status
                )
            )
            yield Protected(issuer, url, client.client_id)
            nursery.cancel_scope.cancel()


async def load(
    url: str,
    out: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    expect: int = 0,
    seconds: int = 2,
) -> tuple[str, dict[str, dict[str, str]]]:
    """``mcpfast load URL`` for ``seconds`` with 4 users: what it printed and its stats rows."""
    argv = [sys.executable, "-m", "mcpfast", "load", url, "-t", f"{seconds}s", "-u", "4"]
    argv += ["--out", str(out)]
    environment = {**os.environ, "PYTHONPATH": str(REPO / "python"), **(env or {})}
    with trio.fail_after(40):
        done = await trio.run_process(
            [*argv, *extra], capture_stdout=True, capture_stderr=True, check=False, env=environment
        )
    output = done.stdout.decode() + done.stderr.decode()
    log = out / "locust.log"
    detail = output + (log.read_text() if log.exists() else "")
    assert done.returncode == expect, detail
    stats: dict[str, dict[str, str]] = {}
    if (out / "load_stats.csv").exists():
        with (out / "load_stats.csv").open(newline="") as handle:
            stats = {row["Name"]: row for row in csv.DictReader(handle)}
    print(output)
    return output, stats


def refused(output: str) -> tuple[int, int, int]:
    found = re.search(r"unauthorized: (\d+), forbidden: (\d+), other failures: (\d+)", output)
    assert found is not None, output
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def calls(stats: dict[str, dict[str, str]], name: str) -> tuple[int, int]:
    row = stats[name]
    return int(row["Request Count"]), int(row["Failure Count"])


async def test_client_credentials_discovered(tmp_path: Path) -> None:
    async with protected() as setup:
        output, stats = await load(
            setup.url,
            tmp_path,
            "--user-class",
            "tools",
            "--client-id",
            setup.client_id,
            "--client-secret-env",
            SECRET_VAR,
            "--auth-issuer",
            setup.issuer,
            env={SECRET_VAR: SECRET},
        )
    requests, failures = calls(stats, "tools/call echo")
    assert requests >= 10 and failures == 0, output
    assert int(stats["Aggregated"]["Failure Count"]) == 0, output
    assert not any("401" in name for name in stats), stats
    assert "unauthorized:" not in output
    assert setup.tokens == 1, setup.paths  # one process: one token for the probe and the users
    assert setup.from_load == ["/.well-known/oauth-authorization-server", "/token"]
    assert SECRET not in output and SECRET not in (tmp_path / "locust.log").read_text()


async def test_client_credentials_token_url_per_process(tmp_path: Path) -> None:
    """``--token-url`` skips discovery; with two worker processes each gets its own token (and
    the master one for its probe): a handful of tokens for hundreds of calls."""
    async with protected() as setup:
        output, stats = await load(
            setup.url,
            tmp_path,
            "--user-class",
            "tools",
            "--processes",
            "2",
            "--client-id",
            setup.client_id,
            "--client-secret-env",
            SECRET_VAR,
            "--auth-issuer",
            setup.issuer,
            "--token-url",
            setup.server.token_endpoint,
            "--scope",
            "mcp",
            env={SECRET_VAR: SECRET},
        )
    assert set(setup.from_load) == {"/token"}, setup.from_load  # no discovery
    assert 2 <= setup.tokens <= 3, setup.paths  # each worker its own (and the master's probe)
    requests, failures = calls(stats, "tools/call echo")
    assert requests >= 10 and failures == 0, output


CLIENT_CREDENTIALS = ("--user-class", "tools", "--client-id")


async def test_token_renewed_before_it_expires(tmp_path: Path) -> None:
    """A token living one second is obtained again before it expires: no request is refused."""
    async with protected(access_token_lifetime=1.0) as setup:
        output, stats = await load(
            setup.url,
            tmp_path,
            *CLIENT_CREDENTIALS,
            setup.client_id,
            "--client-secret-env",
            SECRET_VAR,
            "--auth-issuer",
            setup.issuer,
            env={SECRET_VAR: SECRET},
            seconds=3,
        )
    assert setup.tokens >= 3, setup.paths
    assert int(stats["Aggregated"]["Failure Count"]) == 0, output
    assert calls(stats, "tools/call echo")[0] >= 10, output


async def test_token_renewed_on_401(tmp_path: Path) -> None:
    """The token is revoked during the run: the 401s it gets are answered by one new token for
    the process, each refused request sent again once (and counted under its own name)."""
    async with protected(introspect=True) as setup:
        async with trio.open_nursery() as nursery:

            async def revoke_soon() -> None:
                with trio.move_on_after(30):
                    while not setup.server._opaque:
                        await trio.sleep(0.05)
                    # real time: older than the 1 s the load test (another process) waits for
                    await trio.sleep(2.0)
                    for issued in list(setup.server._opaque):
                        setup.server.revoke(issued)

            nursery.start_soon(revoke_soon)
            output, stats = await load(
                setup.url,
                tmp_path,
                *CLIENT_CREDENTIALS,
                setup.client_id,
                "--client-secret-env",
                SECRET_VAR,
                "--auth-issuer",
                setup.issuer,
                env={SECRET_VAR: SECRET},
                seconds=4,
            )
    assert setup.tokens == 2, setup.paths
    assert int(stats["Aggregated"]["Failure Count"]) == 0, output
    renewed = calls(stats, "tools/call echo (401: token renewed)")
    assert renewed[0] >= 1 and renewed[1] == 0, output
    assert calls(stats, "tools/call echo")[0] > renewed[0], output


async def test_static_bearer(tmp_path: Path) -> None:
    async with protected() as setup:
        token = setup.server.mint(scope="mcp", audience=setup.url)
        output, stats = await load(
            setup.url,
            tmp_path,
            "--user-class",
            "tools",
            "--bearer-env",
            BEARER_VAR,
            env={BEARER_VAR: token},
        )
    requests, failures = calls(stats, "tools/call echo")
    assert requests >= 10 and failures == 0, output
    assert token not in output


async def test_no_credentials_counts_401(tmp_path: Path) -> None:
    async with protected() as setup:
        output, stats = await load(
            setup.url, tmp_path, "--user-class", "tools", "--tool", "echo", expect=1
        )
    assert "HTTP 401 (unauthorized)" in output and "--client-id" in output, output
    requests, failures = calls(stats, "tools/call echo")
    unauthorized, forbidden, other = refused(output)
    assert requests >= 10 and failures == requests == unauthorized, output
    assert (forbidden, other) == (0, 0), output


async def test_missing_scope_counts_403(tmp_path: Path) -> None:
    async with protected() as setup:
        output, stats = await load(
            setup.url,
            tmp_path,
            "--user-class",
            "tools",
            "--tool",
            "save",
            "--client-id",
            setup.client_id,
            "--client-secret-env",
            SECRET_VAR,
            "--auth-issuer",
            setup.issuer,
            "--scope",
            "mcp",
            env={SECRET_VAR: SECRET},
            expect=1,
        )
    requests, failures = calls(stats, "tools/call save")
    unauthorized, forbidden, other = refused(output)
    assert requests >= 10 and failures == requests == forbidden, output
    assert (unauthorized, other) == (0, 0), output


def test_the_child_gets_variable_names_never_secrets(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    argv = ["http://h/mcp", "--client-id", "svc", "--client-secret-env", SECRET_VAR]
    args = parser.parse_args([*argv, "--scope", "a b", "--token-url", "http://as/token"])
    os.environ[SECRET_VAR] = SECRET
    try:
        command = locust_command(args, tmp_path)
    finally:
        del os.environ[SECRET_VAR]
    assert SECRET not in " ".join(command)
    at = command.index("--mcp-client-id")
    assert command[at : at + 8] == [
        "--mcp-client-id",
        "svc",
        "--mcp-client-secret-env",
        SECRET_VAR,
        "--mcp-scope",
        "a b",
        "--mcp-token-url",
        "http://as/token",
    ]


def test_the_summary_counts_refusals_apart() -> None:
    total = Row("", "Aggregated", 10, 7, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    errors = [
        ErrorGroup("401", "-32600", "", 4, ["tools/call a"]),
        ErrorGroup("403", "-32600", "", 2, ["tools/call b"]),
        ErrorGroup("200", "-32602", "", 1, ["tools/call c"]),
    ]
    summary = Summary([], total, errors)
    assert (summary.unauthorized, summary.forbidden) == (4, 2)
    assert "unauthorized: 4, forbidden: 2, other failures: 1" in format_summary(summary)
    assert "unauthorized" not in format_summary(Summary([], total, errors[2:]))


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--client-id", "c"], "--client-id needs --client-secret-env"),
        (["--client-id", "c", "--client-secret-env", "V"], "--client-id needs --auth-issuer"),
        (["--scope", "mcp"], "need --client-id"),
        (["--bearer-env", BEARER_VAR, "--client-id", "c"], "not both"),
        (["--bearer-env", "MCPFAST_TEST_LOAD_UNSET"], "MCPFAST_TEST_LOAD_UNSET is not set"),
    ],
)
async def test_options_refused(tmp_path: Path, options: list[str], problem: str) -> None:
    output, _ = await load("http://127.0.0.1:9/mcp", tmp_path, *options, expect=1)
    assert problem in output
