"""Enterprise-managed authorization against the development authorization server, over real HTTP
on loopback: RFC 8693 token exchange of an ID token (or an access token) for an ID-JAG, then the
RFC 7523 JWT bearer grant with it. End to end: the client's `IdJagGrant` gets a token from the
development server (playing the identity provider and the authorization server) and calls a
protected mcpfast server with it. Then the refusals, one rule each."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey

import mcpfast
from mcpfast.auth import DevAuthorizationServer, TokenRequestError, dev_authorization_server
from mcpfast.auth.clients import JWT_BEARER, TOKEN_EXCHANGE
from mcpfast.auth.exchange import ACCESS_TOKEN, ID_JAG, ID_TOKEN
from mcpfast.client.oauth import ClientCredentials, IdJagGrant, OAuth

from ..helpers import guarded, whoami_server

pytestmark = pytest.mark.slow

SECRET = "s3cret"
APP = ("app", SECRET)


@asynccontextmanager
async def enterprise() -> AsyncIterator[tuple[DevAuthorizationServer, str]]:
    """The development authorization server (client ``app`` may exchange and use ID-JAGs) and
    an mcpfast server needing its tokens with scope ``mcp``; the latter as its URL."""
    async with dev_authorization_server(scopes_supported=["mcp", "files:write"]) as dev:
        dev.register_client("app", secret=SECRET, grant_types=[TOKEN_EXCHANGE, JWT_BEARER])
        async with guarded(whoami_server("enterprise"), dev.issuer) as url:
            yield dev, url


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_the_client_s_enterprise_flow_end_to_end(era: str) -> None:
    async with enterprise() as (dev, url):
        async with httpx2.AsyncClient() as http:
            metadata = (
                await http.get(dev.issuer + "/.well-known/oauth-authorization-server")
            ).json()
        assert {TOKEN_EXCHANGE, JWT_BEARER} <= set(metadata["grant_types_supported"])
        grant = IdJagGrant(
            idp_token_endpoint=dev.token_endpoint,
            id_token=dev.id_token("alice", audience="app"),
            idp_client_id="app",
            idp_client_secret=SECRET,
        )
        auth = OAuth(
            client=ClientCredentials("app", client_secret=SECRET, issuer=dev.issuer), grant=grant
        )
        async with mcpfast.connect(url, era=cast(Any, era), auth=auth) as client:
            result = await client.call_tool("whoami", {})
        assert not result.isError, result
        assert result.structuredContent == {"subject": "alice", "client_id": "app"}
        token = await auth.token_for(url)
        assert token is not None and token.scope == "mcp"
        claims = jwt.decode(token.access_token, dev._keyset()).claims
        assert claims["aud"] == url and claims["sub"] == "alice"


async def exchange(dev: DevAuthorizationServer, subject: str, **form: str) -> dict[str, Any]:
    request = {
        "grant_type": TOKEN_EXCHANGE,
        "subject_token": subject,
        "subject_token_type": ID_TOKEN,
        "requested_token_type": ID_JAG,
        "audience": dev.issuer,
        "scope": "mcp",
        "resource": "http://127.0.0.1:8000/mcp",
        **form,
    }
    return await dev.token_request(request, auth=APP)


async def bearer(dev: DevAuthorizationServer, assertion: str, **form: str) -> dict[str, Any]:
    request = {"grant_type": JWT_BEARER, "assertion": assertion, **form}
    return await dev.token_request(request, auth=APP)


async def refused(error: str, request: Any) -> str:
    with pytest.raises(TokenRequestError) as caught:
        await request
    assert caught.value.error == error, caught.value.body
    return str(caught.value.body.get("error_description"))


async def test_the_id_jag_and_the_token_it_grants() -> None:
    async with dev_authorization_server(scopes_supported=["mcp", "files:write"]) as dev:
        dev.register_client("app", secret=SECRET, grant_types=[TOKEN_EXCHANGE, JWT_BEARER])
        answer = await exchange(dev, dev.id_token("alice", audience="app"))
        assert answer["issued_token_type"] == ID_JAG and answer["token_type"] == "N_A"
        jag = answer["access_token"]
        decoded = jwt.decode(jag, dev._keyset())
        assert decoded.header["typ"] == "oauth-id-jag+jwt"
        assert decoded.claims["aud"] == dev.issuer and decoded.claims["client_id"] == "app"
        assert decoded.claims["resource"] == "http://127.0.0.1:8000/mcp"
        token = await bearer(dev, jag)
        claims = jwt.decode(token["access_token"], dev._keyset()).claims
        assert (claims["sub"], claims["scope"]) == ("alice", "mcp")
        assert claims["aud"] == "http://127.0.0.1:8000/mcp" and "refresh_token" not in token
        assert "already used" in await refused("invalid_grant", bearer(dev, jag))
        # an access token of this server is a subject too
        access = dev.mint("bob", scope="mcp")
        again = await exchange(dev, access, subject_token_type=ACCESS_TOKEN)
        assert jwt.decode(again["access_token"], dev._keyset()).claims["sub"] == "bob"


async def test_what_the_exchange_and_the_grant_refuse() -> None:
    async with dev_authorization_server(scopes_supported=["mcp", "files:write"]) as dev:
        dev.register_client("app", secret=SECRET, grant_types=[TOKEN_EXCHANGE, JWT_BEARER])
        dev.register_client("other", secret=SECRET, grant_types=[JWT_BEARER])
        mine = dev.id_token("alice", audience="app")
        await refused("invalid_grant", exchange(dev, dev.id_token("alice", audience="other")))
        await refused(
            "invalid_grant", exchange(dev, dev.id_token("alice", audience="app", lifetime=-5))
        )
        forged = jwt.encode(
            {"alg": "ES256", "kid": dev.kid, "typ": "JWT"},
            {"iss": dev.issuer, "sub": "mallory", "aud": "app", "exp": 2**31},
            ECKey.generate_key("P-256"),
        )
        await refused("invalid_grant", exchange(dev, forged))
        await refused(
            "invalid_grant", exchange(dev, dev.mint("alice"), subject_token_type=ID_TOKEN)
        )
        await refused("invalid_request", exchange(dev, mine, requested_token_type=ACCESS_TOKEN))
        await refused("invalid_target", exchange(dev, mine, audience="http://elsewhere.example"))
        await refused("invalid_scope", exchange(dev, mine, scope="admin"))

        async def jag() -> str:
            return str((await exchange(dev, mine))["access_token"])

        await refused("invalid_grant", exchange(dev, await jag(), subject_token_type=ACCESS_TOKEN))
        await refused("invalid_scope", bearer(dev, await jag(), scope="files:write"))
        elsewhere = "http://elsewhere.example/mcp"
        await refused("invalid_target", bearer(dev, await jag(), resource=elsewhere))
        other = dev.token_request(
            {"grant_type": JWT_BEARER, "assertion": await jag()}, auth=("other", SECRET)
        )
        assert "another client" in await refused("invalid_grant", other)
        # a client not allowed token exchange
        dev.register_client("plain", secret=SECRET, grant_types=["client_credentials"])
        plain = dev.token_request(
            {"grant_type": TOKEN_EXCHANGE, "subject_token": mine, "subject_token_type": ID_TOKEN,
             "requested_token_type": ID_JAG},
            auth=("plain", SECRET),
        )  # fmt: skip
        await refused("unauthorized_client", plain)
