"""A client's secrets go only to the authorization server they belong to: a client secret, a
``private_key_jwt`` key and a workload's JWT bearer assertion are bound to one issuer
(`ClientCredentials.issuer`, required with a secret or key; `JwtBearerGrant(issuer=...)`; the
CLI's ``--auth-issuer``); an MCP server that names another authorization server, or none (the
2025-03-26 fallback to its own origin), gets a clear refusal and never the secret.

The malicious MCP server is its own authorization server on loopback and records every
request (`oauth_peers.Hostile`); the positive paths run a real mcpfast server on both engines
behind the development authorization server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey

import mcpfast
from mcpfast.auth import DevAuthorizationServer
from mcpfast.cli.exits import Exit
from mcpfast.client.oauth import (
    ClientCredentials,
    ClientCredentialsGrant,
    DiscoveryError,
    JwtBearerGrant,
    OAuth,
    UntrustedIssuer,
)

from ..e2e.processes import cli, failure
from ..helpers import guarded, whoami_server
from .oauth_peers import Hostile, hostile, recording_browser

SECRET = "svc-real-secret-issued-by-the-real-as"


def links(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from or during, groups included."""
    stack = [exc]
    while stack:
        link = stack.pop()
        yield link
        stack.extend(e for e in (link.__cause__, link.__context__) if e is not None)
        if isinstance(link, BaseExceptionGroup):
            stack.extend(link.exceptions)


async def connect_fails(url: str, auth: OAuth) -> list[BaseException]:
    """Connect to ``url`` with ``auth``: it must fail; the whole chain of what ended it."""
    with pytest.raises(BaseException) as ended:  # the chain is inspected below
        async with httpx2.AsyncClient(auth=auth, timeout=10) as http:
            async with mcpfast.connect(url, http_client=http, era="modern"):
                pass
    return list(links(ended.value))


def assert_kept(server: Hostile, *secrets: str) -> None:
    """``server`` was never asked for a token and saw none of ``secrets``."""
    assert server.to("/token") == [], server.seen
    for seen in server.seen:
        assert "client_assertion" not in seen.body.decode("latin-1"), seen
        for secret in secrets:
            assert not seen.carries(secret), seen


# ------------------------------------------------------------------------------- the library


def test_a_secret_or_a_key_names_its_authorization_server() -> None:
    key = ECKey.generate_key("P-256").as_dict(private=True)
    for unbound in ({"client_secret": SECRET}, {"private_key": key}):
        with pytest.raises(ValueError, match="name the authorization server"):
            ClientCredentials("svc", **unbound)
    assert ClientCredentials("public-cli").issuer is None  # a client id alone is no secret


def _workload_assertion(dev: DevAuthorizationServer) -> str:
    key = ECKey.generate_key("P-256", parameters={"kid": "w1"})
    dev.trust_issuer("https://workload.test", {"keys": [key.as_dict(private=False)]})
    claims = {"iss": "https://workload.test", "sub": "wl", "aud": dev.issuer, "exp": 2**31}
    return jwt.encode({"alg": "ES256", "kid": "w1"}, claims, key)


def _credentials(kind: str, dev: DevAuthorizationServer) -> tuple[dict[str, Any], list[str]]:
    """``OAuth`` options for the secret of ``kind`` bound to ``dev``, and what must stay
    secret."""
    if kind == "secret":
        client = ClientCredentials("svc", client_secret=SECRET, issuer=dev.issuer)
        return {"client": client, "grant": ClientCredentialsGrant()}, [SECRET]
    if kind == "private_key_jwt":
        key = ECKey.generate_key("P-256").as_dict(private=True)
        client = ClientCredentials("svc", private_key=key, issuer=dev.issuer)
        return {"client": client, "grant": ClientCredentialsGrant()}, []
    assertion = _workload_assertion(dev)
    grant = JwtBearerGrant(assertion, issuer=dev.issuer)
    client = ClientCredentials("wif", token_endpoint_auth_method="none")
    return {"client": client, "grant": grant}, [assertion, assertion.split(".")[1]]


@pytest.mark.parametrize("kind", ["secret", "private_key_jwt", "assertion"])
@pytest.mark.parametrize("prm", [True, False], ids=["names-its-as", "no-metadata"])
async def test_a_server_naming_another_authorization_server_never_gets_the_secret(
    dev: DevAuthorizationServer, kind: str, prm: bool
) -> None:
    options, secrets = _credentials(kind, dev)
    async with hostile(prm=prm) as server:
        chain = await connect_fails(server.url, OAuth(**options))
    refusals = [e for e in chain if isinstance(e, UntrustedIssuer)]
    assert refusals, chain
    assert "refused" in str(refusals[0]) and dev.issuer in str(refusals[0])
    assert_kept(server, *secrets)


async def test_an_assertion_goes_to_its_issuer_only_even_with_a_public_client(
    dev: DevAuthorizationServer,
) -> None:
    """The grant checks its own binding: a public client binds nothing, the assertion does."""
    assertion = _workload_assertion(dev)
    async with hostile() as server:
        auth = OAuth(
            client=ClientCredentials("wif", token_endpoint_auth_method="none"),
            grant=JwtBearerGrant(assertion, issuer=dev.issuer),
        )
        chain = await connect_fails(server.url, auth)
    assert any(isinstance(e, UntrustedIssuer) for e in chain), chain
    assert_kept(server, assertion)


async def test_no_default_endpoints_for_a_credentialed_client() -> None:
    """A server with neither resource nor authorization server metadata: even when the
    secret is bound to its very origin, its ``/token`` is not guessed (RFC 8414 metadata
    needed)."""
    async with hostile(prm=False, metadata=None) as server:
        client = ClientCredentials("svc", client_secret=SECRET, issuer=server.origin)
        auth = OAuth(client=client, grant=ClientCredentialsGrant())
        chain = await connect_fails(server.url, auth)
    found = [e for e in chain if isinstance(e, DiscoveryError)]
    assert found and "no authorization server metadata" in str(found[0]), chain
    assert_kept(server, SECRET)


async def test_the_right_issuer_works_end_to_end(dev: DevAuthorizationServer, engine: str) -> None:
    """Bound to the server's own authorization server, each kind gets its token; the
    ``private_key_jwt`` assertion's audience is that issuer."""
    sent: list[httpx2.Request] = []

    async def keep(request: httpx2.Request) -> None:
        sent.append(request)

    key = ECKey.generate_key("P-256", parameters={"kid": "c1"})
    dev.register_client("svc", secret=SECRET, grant_types=["client_credentials"])
    dev.register_client(
        "svc-jwt",
        jwks={"keys": [key.as_dict(private=False)]},
        token_endpoint_auth_method="private_key_jwt",
        grant_types=["client_credentials"],
    )
    keyed = ClientCredentials("svc-jwt", private_key=key.as_dict(private=True), issuer=dev.issuer)
    secret = ClientCredentials("svc", client_secret=SECRET, issuer=dev.issuer)
    async with guarded(whoami_server("guarded"), dev.issuer, engine) as url:
        for credentials in (secret, keyed):
            async with httpx2.AsyncClient(timeout=10, event_hooks={"request": [keep]}) as http:
                auth = OAuth(http_client=http, client=credentials, grant=ClientCredentialsGrant())
                async with mcpfast.connect(url, auth=auth, era="modern") as client:
                    result = await client.call_tool("whoami", {})
            assert not result.isError, result
            assert result.structuredContent["client_id"] == credentials.client_id
    [assertion] = [
        dict(httpx2.QueryParams(r.content.decode()))["client_assertion"]
        for r in sent
        if r.url.path.endswith("/token") and b"client_assertion=" in r.content
    ]
    assert jwt.decode(assertion, key).claims["aud"] == dev.issuer


# ------------------------------------------------------------------------------------ the CLI


async def test_the_cli_refuses_a_secret_without_its_issuer(tmp_path: Path) -> None:
    opener, opened = recording_browser(tmp_path)
    async with hostile() as server:
        result = await cli(
            "call", server.url, "whoami", "--client-id", "svc", "--client-secret-env", "SVC",
            SVC=SECRET, BROWSER=str(opener), MCPFAST_STATE_DIR=str(tmp_path),
        )  # fmt: skip
    assert result.returncode == Exit.USAGE, result.stderr
    assert "needs --auth-issuer URL" in failure(result)
    assert server.seen == [] and not opened.exists()


@pytest.mark.parametrize("prm", [True, False], ids=["names-its-as", "no-metadata"])
async def test_the_cli_sends_the_secret_to_its_issuer_only(
    dev: DevAuthorizationServer, tmp_path: Path, prm: bool
) -> None:
    opener, opened = recording_browser(tmp_path)
    async with hostile(prm=prm) as server:
        result = await cli(
            "call", server.url, "whoami", "--client-id", "svc", "--client-secret-env", "SVC",
            "--auth-issuer", dev.issuer,
            SVC=SECRET, BROWSER=str(opener), MCPFAST_STATE_DIR=str(tmp_path),
        )  # fmt: skip
    assert result.returncode == Exit.NOT_AUTHORIZED, result.stderr
    line = failure(result)
    assert "refused" in line and dev.issuer in line and server.origin in line, line
    assert SECRET not in result.stderr + result.stdout
    assert_kept(server, SECRET)
    assert not opened.exists()


async def test_the_cli_with_the_right_issuer_still_works(
    dev: DevAuthorizationServer, engine: str, tmp_path: Path
) -> None:
    dev.register_client("svc", secret=SECRET, grant_types=["client_credentials"])
    async with guarded(whoami_server("guarded"), dev.issuer, engine) as url:
        result = await cli(
            "call", url, "whoami", "--client-id", "svc", "--client-secret-env", "SVC",
            "--auth-issuer", dev.issuer, SVC=SECRET, MCPFAST_STATE_DIR=str(tmp_path),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"subject": "svc", "client_id": "svc"}
