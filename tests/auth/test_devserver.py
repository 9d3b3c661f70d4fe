"""The development authorization server over real HTTP on loopback: metadata, JWKS,
registration, the authorization code flow with PKCE, refresh rotation, client credentials
(basic, post, private_key_jwt), the JWT bearer grant, Client ID Metadata Documents,
introspection (JWT and opaque), revocation, key rotation, and the test helpers."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import orjson
import pytest
import trio
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet

from mcpfast.auth import DevAuthorizationServer, TokenRequestError, dev_authorization_server
from mcpfast.auth._asgi import Receive, Scope, Send, lifespan, serve_asgi
from mcpfast.cli import main

from ..helpers import client_assertion

pytestmark = pytest.mark.slow

MCP = "http://127.0.0.1:8000/mcp"
REDIRECT = "http://127.0.0.1:7777/callback"


@pytest.fixture
async def server() -> AsyncIterator[DevAuthorizationServer]:
    async with dev_authorization_server() as running:
        yield running


@pytest.fixture
async def local_server() -> AsyncIterator[DevAuthorizationServer]:
    """A server that fetches client documents from loopback, where these tests serve them."""
    async with dev_authorization_server(allow_local_fetches=True) as running:
        yield running


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def verify_jwt(server: DevAuthorizationServer, token: str, jwks: dict[str, Any]) -> jwt.Token:
    return jwt.decode(token, KeySet.import_key_set(jwks), algorithms=["ES256"])  # type: ignore[arg-type]


async def authorize(
    http: httpx2.AsyncClient,
    server: DevAuthorizationServer,
    client_id: str,
    challenge: str,
    **extra: str,
) -> dict[str, list[str]]:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "xyz",
        **extra,
    }
    answer = await http.get(server.authorization_endpoint, params=params)
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(params["redirect_uri"] + "?")
    return parse_qs(urlsplit(location).query)


async def test_metadata(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    for well_known in ("oauth-authorization-server", "openid-configuration"):
        answer = await http.get(f"{server.issuer}/.well-known/{well_known}")
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json"
        meta = answer.json()
        assert meta["issuer"] == server.issuer
        assert meta["issuer"].startswith("http://127.0.0.1:")
        assert meta["token_endpoint"] == server.issuer + "/token"
        assert meta["response_types_supported"] == ["code"]
        assert meta["code_challenge_methods_supported"] == ["S256"]
        assert meta["client_id_metadata_document_supported"] is True
        assert meta["authorization_response_iss_parameter_supported"] is True
        assert set(meta["grant_types_supported"]) >= {
            "authorization_code",
            "refresh_token",
            "client_credentials",
            "urn:ietf:params:oauth:grant-type:jwt-bearer",
        }
        assert set(meta["token_endpoint_auth_methods_supported"]) == {
            "client_secret_basic",
            "client_secret_post",
            "none",
            "private_key_jwt",
        }
        assert meta["dpop_signing_alg_values_supported"] == ["ES256", "RS256", "EdDSA"]
        assert meta["scopes_supported"] == ["mcp:read", "mcp:write", "offline_access"]
        for name in ("jwks_uri", "registration_endpoint", "introspection_endpoint"):
            assert meta[name].startswith(server.issuer + "/")


async def test_scopes_are_configurable() -> None:
    async with dev_authorization_server(scopes_supported=["files:read"]) as server:
        assert server.metadata()["scopes_supported"] == ["files:read"]
        client = server.register_client(secret="s")
        with pytest.raises(TokenRequestError) as refused:
            await server.client_credentials_token(client.client_id, "s", scope="mcp:read")
        assert (refused.value.status, refused.value.error) == (400, "invalid_scope")
    async with dev_authorization_server(scopes_supported=None) as server:
        assert "scopes_supported" not in server.metadata()
        client = server.register_client(secret="s")
        token = await server.client_credentials_token(client.client_id, "s", scope="any:thing")
        assert token["scope"] == "any:thing"


async def test_jwks(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    answer = await http.get(server.jwks_uri)
    assert answer.status_code == 200
    jwks = answer.json()
    [key] = jwks["keys"]
    assert key["kty"] == "EC" and key["crv"] == "P-256" and key["alg"] == "ES256"
    assert key["kid"] == server.kid and "d" not in key
    token = server.mint("alice", scope="mcp:read", audience=MCP)
    decoded = verify_jwt(server, token, jwks)
    assert decoded.header["kid"] == server.kid
    assert decoded.header["typ"] == "at+jwt"


async def test_rs256_signing() -> None:
    async with dev_authorization_server(signing_alg="RS256") as server:
        [key] = server.jwks()["keys"]
        assert key["kty"] == "RSA" and key["alg"] == "RS256"
        token = server.mint(audience=MCP)
        claims = jwt.decode(token, KeySet.import_key_set(server.jwks()), algorithms=["RS256"])  # type: ignore[arg-type]
        assert claims.claims["aud"] == MCP


async def test_dynamic_client_registration(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    answer = await http.post(
        server.registration_endpoint,
        json={"redirect_uris": [REDIRECT], "client_name": "demo", "application_type": "native"},
    )
    assert answer.status_code == 201
    body = answer.json()
    assert body["client_id"] and body["client_secret"]
    # hex: never a leading "-" that a command line (--client-id ID) would read as a flag
    assert all(c in "0123456789abcdef" for c in body["client_id"]), body["client_id"]
    assert body["token_endpoint_auth_method"] == "client_secret_basic"
    assert body["redirect_uris"] == [REDIRECT] and body["client_name"] == "demo"
    assert body["client_secret_expires_at"] == 0
    public = await http.post(
        server.registration_endpoint,
        json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
    )
    assert public.status_code == 201 and "client_secret" not in public.json()
    for bad, error in (
        ({"redirect_uris": ["http://example.com/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://example.com/cb#frag"]}, "invalid_redirect_uri"),
        ({"redirect_uris": "https://example.com/cb"}, "invalid_redirect_uri"),
        ({}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT], "grant_types": ["password"]}, "invalid_client_metadata"),
        (
            {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "tls_client_auth"},
            "invalid_client_metadata",
        ),
        (
            {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
        ),
        ({"redirect_uris": [REDIRECT], "scope": "nope"}, "invalid_scope"),
        ({"redirect_uris": [REDIRECT], "jwks": {"keys": [{"kty": "oct", "k": "AA"}]}}, None),
        ([1, 2], "invalid_client_metadata"),
    ):
        refused = await http.post(server.registration_endpoint, json=bad)
        assert refused.status_code == 400, bad
        if error:
            assert refused.json()["error"] == error, bad


async def test_authorization_code_flow(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    client = server.register_client(redirect_uris=["http://127.0.0.1/callback"])
    verifier, challenge = pkce()
    back = await authorize(
        http, server, client.client_id, challenge, scope="mcp:read", resource=MCP
    )
    assert set(back) == {"code", "state", "iss"}  # each once
    assert back["state"] == ["xyz"] and back["iss"] == [server.issuer]
    answer = await http.post(
        server.token_endpoint,
        data={
            "grant_type": "authorization_code",
            "code": back["code"][0],
            "redirect_uri": REDIRECT,
            "code_verifier": verifier,
            "client_id": client.client_id,
        },
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert body["token_type"] == "Bearer" and body["scope"] == "mcp:read"
    assert body["expires_in"] == 3600 and body["refresh_token"]
    claims = verify_jwt(server, body["access_token"], server.jwks()).claims
    assert claims["iss"] == server.issuer and claims["sub"] == "dev-user"
    assert claims["aud"] == MCP and claims["scope"] == "mcp:read"
    assert claims["client_id"] == client.client_id and claims["jti"]
    assert claims["exp"] - claims["iat"] == 3600 and abs(claims["iat"] - time.time()) < 5
    # The code is single use.
    again = await http.post(
        server.token_endpoint,
        data={
            "grant_type": "authorization_code",
            "code": back["code"][0],
            "redirect_uri": REDIRECT,
            "code_verifier": verifier,
            "client_id": client.client_id,
        },
    )
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


async def test_wrong_verifier_and_wrong_redirect_are_refused(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    client = server.register_client(redirect_uris=[REDIRECT])
    for change in ({"code_verifier": pkce()[0]}, {"redirect_uri": "http://127.0.0.1:7777/other"}):
        verifier, challenge = pkce()
        back = await authorize(http, server, client.client_id, challenge)
        form = {
            "grant_type": "authorization_code",
            "code": back["code"][0],
            "redirect_uri": REDIRECT,
            "code_verifier": verifier,
            "client_id": client.client_id,
            **change,
        }
        answer = await http.post(server.token_endpoint, data=form)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant", change


async def test_authorization_errors(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    client = server.register_client(redirect_uris=[REDIRECT])
    _, challenge = pkce()
    base = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s1",
    }
    # Not redirected: an unknown client, an unregistered redirect URI.
    for change in (
        {"client_id": "nobody"},
        {"redirect_uri": "https://evil.example/cb"},
        {"redirect_uri": "http://127.0.0.1:7777/elsewhere"},
    ):
        answer = await http.get(server.authorization_endpoint, params={**base, **change})
        assert answer.status_code == 400 and "location" not in answer.headers, change
    # Redirected with error, state and iss.
    for change, error in (
        ({"code_challenge": ""}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"scope": "admin"}, "invalid_scope"),
        ({"resource": "not-a-uri"}, "invalid_target"),
    ):
        answer = await http.get(server.authorization_endpoint, params={**base, **change})
        assert answer.status_code == 302, change
        back = parse_qs(urlsplit(answer.headers["location"]).query)
        assert back["error"] == [error] and back["state"] == ["s1"], change
        assert back["iss"] == [server.issuer] and "code" not in back


async def test_loopback_redirect_any_port(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    client = server.register_client(redirect_uris=["http://127.0.0.1:1234/callback"])
    _, challenge = pkce()
    back = await authorize(http, server, client.client_id, challenge)  # port 7777
    assert back["code"]


async def test_refresh_rotation(server: DevAuthorizationServer) -> None:
    client = server.register_client(redirect_uris=[REDIRECT])
    first = await server.authorization_code_token(
        client.client_id, REDIRECT, scope="mcp:read mcp:write", resource=MCP
    )
    rotated = await _refresh(server, client.client_id, first["refresh_token"], scope="mcp:read")
    assert rotated["refresh_token"] != first["refresh_token"]
    assert rotated["scope"] == "mcp:read"
    claims = verify_jwt(server, rotated["access_token"], server.jwks()).claims
    assert claims["aud"] == MCP and claims["scope"] == "mcp:read"
    with pytest.raises(TokenRequestError) as wider:
        await _refresh(server, client.client_id, rotated["refresh_token"], scope="mcp:admin")
    assert wider.value.error == "invalid_scope"
    with pytest.raises(TokenRequestError) as elsewhere:
        await _refresh(
            server, client.client_id, rotated["refresh_token"], resource="https://other.example/"
        )
    assert elsewhere.value.error == "invalid_target"
    with pytest.raises(TokenRequestError) as spent:  # a replay: the whole grant is revoked
        await _refresh(server, client.client_id, first["refresh_token"])
    assert spent.value.error == "invalid_grant"
    with pytest.raises(TokenRequestError) as revoked:
        await _refresh(server, client.client_id, rotated["refresh_token"])
    assert revoked.value.error == "invalid_grant"
    unscoped = await server.authorization_code_token(client.client_id, REDIRECT)
    with pytest.raises(TokenRequestError) as widened:
        await _refresh(server, client.client_id, unscoped["refresh_token"], scope="mcp:read")
    assert widened.value.error == "invalid_scope"


async def _refresh(
    server: DevAuthorizationServer, client_id: str, token: str, **extra: str
) -> dict[str, Any]:
    form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}
    return await server.token_request({**form, **extra})


async def test_client_credentials_basic_and_post(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    client = server.register_client("svc", secret="p@ss:word")
    for method in ("client_secret_basic", "client_secret_post"):
        token = await server.client_credentials_token(
            "svc", "p@ss:word", scope="mcp:read", resource=MCP, method=method
        )
        assert token["token_type"] == "Bearer" and "refresh_token" not in token
        claims = verify_jwt(server, token["access_token"], server.jwks()).claims
        assert claims["sub"] == "svc" and claims["client_id"] == "svc" and claims["aud"] == MCP
    assert client.client_id == "svc"
    encoded = base64.b64encode(b"svc:p%40ss%3Aword").decode()  # RFC 6749 §2.3.1 form-encoding
    answer = await http.post(
        server.token_endpoint,
        data={"grant_type": "client_credentials"},
        headers={"authorization": f"Basic {encoded}"},
    )
    assert answer.status_code == 200, answer.text
    for method in ("client_secret_basic", "client_secret_post"):
        with pytest.raises(TokenRequestError) as refused:
            await server.client_credentials_token("svc", "wrong", method=method)
        assert (refused.value.status, refused.value.error) == (401, "invalid_client")
    both = await http.post(
        server.token_endpoint,
        data={"grant_type": "client_credentials", "client_id": "svc", "client_secret": "x"},
        auth=("svc", "p@ss:word"),
    )
    assert both.status_code == 400 and both.json()["error"] == "invalid_request"
    server.register_client("public")
    public = await http.post(
        server.token_endpoint, data={"grant_type": "client_credentials", "client_id": "public"}
    )
    assert public.status_code == 400 and public.json()["error"] == "unauthorized_client"
    only_code = server.register_client("coder", secret="s", grant_types=["authorization_code"])
    with pytest.raises(TokenRequestError) as refused:
        await server.client_credentials_token(only_code.client_id, "s")
    assert refused.value.error == "unauthorized_client"


async def test_client_credentials_private_key_jwt(
    server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    key = ECKey.generate_key("P-256", auto_kid=True)
    registered = await http.post(
        server.registration_endpoint,
        json={
            "grant_types": ["client_credentials"],
            "token_endpoint_auth_method": "private_key_jwt",
            "jwks": {"keys": [key.as_dict(private=False)]},
        },
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    assert "client_secret" not in registered.json()
    signed = client_assertion(key, client_id, server.token_endpoint)
    form = {
        "grant_type": "client_credentials",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": signed,
        "resource": MCP,
    }
    answer = await http.post(server.token_endpoint, data=form)
    assert answer.status_code == 200, answer.text
    claims = verify_jwt(server, answer.json()["access_token"], server.jwks()).claims
    assert claims["sub"] == client_id and claims["aud"] == MCP
    replayed = await http.post(server.token_endpoint, data=form)
    assert replayed.status_code == 401 and replayed.json()["error"] == "invalid_client"
    other = ECKey.generate_key("P-256", auto_kid=True)
    for bad in (
        client_assertion(other, client_id, server.token_endpoint),  # not the client's key
        client_assertion(key, client_id, "https://elsewhere.example/token"),  # not for us
        client_assertion(key, client_id, server.issuer, exp=int(time.time()) - 600),  # expired
        client_assertion(key, client_id, server.issuer, iss="someone-else"),
        "not.a.jwt",
    ):
        refused = await http.post(server.token_endpoint, data={**form, "client_assertion": bad})
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"


async def test_jwt_bearer_grant(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    idp = ECKey.generate_key("P-256", auto_kid=True)
    server.trust_issuer("https://idp.example", {"keys": [idp.as_dict(private=False)]})
    client = server.register_client(
        "agent", secret="s", grant_types=["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    )
    grant = client_assertion(idp, "https://idp.example", server.issuer, sub="workload-7")
    form = {
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion": grant,
        "scope": "mcp:read",
    }
    answer = await http.post(server.token_endpoint, data=form, auth=("agent", "s"))
    assert answer.status_code == 200, answer.text
    claims = verify_jwt(server, answer.json()["access_token"], server.jwks()).claims
    assert claims["sub"] == "workload-7" and claims["client_id"] == client.client_id
    untrusted = client_assertion(
        ECKey.generate_key("P-256", auto_kid=True), "https://idp.example", server.issuer
    )
    refused = await http.post(
        server.token_endpoint, data={**form, "assertion": untrusted}, auth=("agent", "s")
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"


async def test_resource_becomes_aud(server: DevAuthorizationServer) -> None:
    client = server.register_client(secret="s")
    token = await server.client_credentials_token(client.client_id, "s", resource=MCP)
    assert verify_jwt(server, token["access_token"], server.jwks()).claims["aud"] == MCP
    none = await server.client_credentials_token(client.client_id, "s")
    assert "aud" not in verify_jwt(server, none["access_token"], server.jwks()).claims
    async with dev_authorization_server(default_audience=MCP) as defaulted:
        client = defaulted.register_client(secret="s")
        token = await defaulted.client_credentials_token(client.client_id, "s")
        claims = verify_jwt(defaulted, token["access_token"], defaulted.jwks()).claims
        assert claims["aud"] == MCP


async def test_short_lifetime_tokens_expire() -> None:
    now = time.time()
    async with dev_authorization_server(access_token_lifetime=1, clock=lambda: now) as server:
        client = server.register_client(secret="s")
        token = await server.client_credentials_token(client.client_id, "s")
        assert token["expires_in"] == 1
        assert server.introspect(token["access_token"])["active"] is True
        now += 1  # its lifetime later
        assert server.introspect(token["access_token"]) == {"active": False}


async def test_introspection(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    server.register_client("rs", secret="rs-secret")
    server.register_client("app")
    token = server.mint("alice", scope="mcp:read", audience=MCP, client_id="app")
    answer = await http.post(
        server.introspection_endpoint, data={"token": token}, auth=("rs", "rs-secret")
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body["active"] is True and body["sub"] == "alice" and body["aud"] == MCP
    assert body["scope"] == "mcp:read" and body["client_id"] == "app" and body["exp"]
    for inactive in ("garbage", server.mint(lifetime=-10), token + "x"):
        answer = await http.post(
            server.introspection_endpoint, data={"token": inactive}, auth=("rs", "rs-secret")
        )
        assert answer.json() == {"active": False}
    unauthenticated = await http.post(server.introspection_endpoint, data={"token": token})
    assert unauthenticated.status_code == 401
    wrong = await http.post(
        server.introspection_endpoint, data={"token": token}, auth=("rs", "nope")
    )
    assert wrong.status_code == 401 and "basic" in wrong.headers["www-authenticate"].lower()
    others = await http.post(
        server.revocation_endpoint, data={"token": token}, auth=("rs", "rs-secret")
    )
    assert others.status_code == 200  # RFC 7009: another client's token is left alone
    assert server.introspect(token)["active"] is True
    revoked = await http.post(server.revocation_endpoint, data={"token": token, "client_id": "app"})
    assert revoked.status_code == 200
    assert server.introspect(token) == {"active": False}


async def test_opaque_tokens() -> None:
    async with (
        dev_authorization_server(opaque_tokens=True) as server,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        server.register_client("rs", secret="rs-secret")
        client = server.register_client(secret="s")
        token = await server.client_credentials_token(
            client.client_id, "s", scope="mcp:read", resource=MCP
        )
        opaque = token["access_token"]
        assert "." not in opaque
        answer = await http.post(
            server.introspection_endpoint,
            data={"token": opaque, "token_type_hint": "access_token"},
            auth=("rs", "rs-secret"),
        )
        body = answer.json()
        assert body["active"] is True and body["aud"] == MCP and body["scope"] == "mcp:read"
        assert body["client_id"] == client.client_id and body["iss"] == server.issuer
        server.revoke(opaque)
        assert server.introspect(opaque) == {"active": False}
        # mint() follows the option, and can be asked for a JWT anyway.
        assert "." not in server.mint()
        assert server.mint(opaque=False).count(".") == 2


async def test_refresh_token_introspection(server: DevAuthorizationServer) -> None:
    client = server.register_client(redirect_uris=[REDIRECT])
    token = await server.authorization_code_token(client.client_id, REDIRECT, login_hint="bob")
    answer = server.introspect(token["refresh_token"])
    assert answer["active"] is True and answer["token_type"] == "refresh_token"
    assert answer["sub"] == "bob"


async def test_key_rotation(server: DevAuthorizationServer, http: httpx2.AsyncClient) -> None:
    old_kid = server.kid
    old_token = server.mint(audience=MCP)
    new_kid = server.rotate_key()
    assert new_kid != old_kid
    kids = [k["kid"] for k in (await http.get(server.jwks_uri)).json()["keys"]]
    assert kids == [old_kid, new_kid]  # kept for the tokens already issued
    new_token = server.mint(audience=MCP)
    assert jwt.decode(new_token, KeySet.import_key_set(server.jwks())).header["kid"] == new_kid  # type: ignore[arg-type]
    assert server.introspect(old_token)["active"] is True
    newest = server.rotate_key(keep_previous=False)
    kids = [k["kid"] for k in (await http.get(server.jwks_uri)).json()["keys"]]
    assert kids == [newest]
    assert server.introspect(old_token) == {"active": False}
    assert server.introspect(new_token) == {"active": False}


async def test_helpers_and_dpop_bound_mint(server: DevAuthorizationServer) -> None:
    key = ECKey.generate_key("P-256")
    token = server.mint("carol", scope=["mcp:read", "mcp:write"], jkt=key.thumbprint())
    claims = verify_jwt(server, token, server.jwks()).claims
    assert claims["cnf"] == {"jkt": key.thumbprint()} and claims["scope"] == "mcp:read mcp:write"
    assert server.introspect(token)["token_type"] == "DPoP"
    extra = server.mint(claims={"tenant": "t1"})
    assert verify_jwt(server, extra, server.jwks()).claims["tenant"] == "t1"


async def cimd_host(documents: dict[str, Any], task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """A loopback HTTP server publishing client metadata documents by path."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        doc = documents.get(scope["path"])
        status, body = (200, orjson.dumps(doc)) if doc is not None else (404, b"{}")
        headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    await serve_asgi(app, "127.0.0.1", 0, task_status=task_status)


async def test_client_id_metadata_document(
    local_server: DevAuthorizationServer, http: httpx2.AsyncClient
) -> None:
    server = local_server
    documents: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:
        [base] = await nursery.start(cimd_host, documents)
        good = f"{base}/client.json"
        documents["/client.json"] = {
            "client_id": good,
            "client_name": "CIMD client",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
        }
        documents["/mismatch.json"] = {**documents["/client.json"], "client_id": "https://x/y"}
        documents["/secret.json"] = {
            **documents["/client.json"],
            "client_id": f"{base}/secret.json",
            "token_endpoint_auth_method": "client_secret_basic",
        }
        documents["/nameless.json"] = {
            "client_id": f"{base}/nameless.json",
            "redirect_uris": [REDIRECT],
        }
        verifier, challenge = pkce()
        back = await authorize(http, server, good, challenge, resource=MCP)
        token = await http.post(
            server.token_endpoint,
            data={
                "grant_type": "authorization_code",
                "code": back["code"][0],
                "redirect_uri": REDIRECT,
                "code_verifier": verifier,
                "client_id": good,
            },
        )
        assert token.status_code == 200, token.text
        claims = verify_jwt(server, token.json()["access_token"], server.jwks()).claims
        assert claims["client_id"] == good
        for path in ("/mismatch.json", "/secret.json", "/nameless.json", "/missing.json"):
            answer = await http.get(
                server.authorization_endpoint,
                params={
                    "response_type": "code",
                    "client_id": f"{base}{path}",
                    "redirect_uri": REDIRECT,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                },
            )
            assert answer.status_code == 400, path
            assert answer.json()["error"] == "invalid_client", path
        wrong_redirect = await http.get(
            server.authorization_endpoint,
            params={
                "response_type": "code",
                "client_id": good,
                "redirect_uri": "https://evil.example/cb",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            },
        )
        assert wrong_redirect.status_code == 400 and "location" not in wrong_redirect.headers
        nursery.cancel_scope.cancel()


async def test_non_loopback_host_is_refused() -> None:
    with pytest.raises(ValueError, match="loopback"):
        DevAuthorizationServer(host="0.0.0.0")
    with pytest.raises(ValueError, match="loopback"):
        async with dev_authorization_server(host="192.0.2.1"):
            pass  # pragma: no cover


def test_cli_refuses_non_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["auth-server", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "loopback only" in capsys.readouterr().err
