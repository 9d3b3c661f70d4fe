"""The parts of the OAuth client on their own (no authorization server process: the HTTP is
``httpx2.MockTransport``, except the loopback redirect listener): challenge parsing, protected
resource and authorization server discovery (each well-known variant, path-aware, OIDC, the
issuer and resource checks, the 2025-03-26 fallbacks), scope selection, which registration is
used (pre-registered, CIMD, DCR, per issuer), the step-up retry limit, DPoP proofs, client
authentication encoding, the token stores (the file is 0600) and `LoopbackRedirect`."""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
import trio

from mcpfast.client.oauth import (
    AuthorizationError,
    AuthorizationServer,
    ClientCredentials,
    DiscoveryError,
    DPoPKey,
    FileTokenStore,
    FollowRedirect,
    IssuerMismatch,
    LoopbackRedirect,
    MemoryTokenStore,
    OAuth,
    ProtectedResource,
    RegistrationError,
    ResourceMismatch,
    Token,
    discover_authorization_server,
    discover_protected_resource,
    parse_challenges,
    select_scopes,
)
from mcpfast.client.oauth.discovery import authorization_server_metadata_urls
from mcpfast.client.oauth.registration import ClientMetadata, obtain_client
from mcpfast.client.oauth.tokens import apply_client_auth

MCP = "https://mcp.test/mcp"
ISSUER = "https://as.test"

Routes = dict[str, Callable[[httpx2.Request], httpx2.Response] | dict[str, Any]]


def transport(routes: Routes, seen: list[str] | None = None) -> httpx2.MockTransport:
    """Requests answered from ``routes`` (``METHOD URL`` or ``URL`` -> JSON document or
    handler); anything else is a 404. ``seen`` gets every ``METHOD URL``."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        url = str(request.url.copy_with(query=None))
        if seen is not None:
            seen.append(f"{request.method} {url}")
        route = routes.get(f"{request.method} {url}", routes.get(url))
        if route is None:
            return httpx2.Response(404, json={"error": "not_found"})
        if callable(route):
            return route(request)
        return httpx2.Response(200, json=route)

    return httpx2.MockTransport(handle)


def mock(routes: Routes, seen: list[str] | None = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=transport(routes, seen))


def as_metadata(issuer: str = ISSUER, **extra: Any) -> dict[str, Any]:
    return {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "code_challenge_methods_supported": ["S256"],
        **extra,
    }


# ------------------------------------------------------------------ WWW-Authenticate


def test_challenges_are_parsed_with_their_parameters() -> None:
    found = parse_challenges(
        [
            'Bearer realm="mcp", error="insufficient_scope", scope="a b", '
            'resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp"',
            'DPoP algs="ES256 RS256", error=use_dpop_nonce, Basic realm="a \\"quoted\\" realm"',
            "Negotiate abc123==",
        ]
    )
    assert [c.scheme for c in found] == ["Bearer", "DPoP", "Basic", "Negotiate"]
    assert found[0].scopes == ["a", "b"] and found[0].error == "insufficient_scope"
    assert found[0].resource_metadata.endswith("/oauth-protected-resource/mcp")  # type: ignore[union-attr]
    assert found[1].error == "use_dpop_nonce" and found[1].params["algs"] == "ES256 RS256"
    assert found[2].params["realm"] == 'a "quoted" realm'
    assert parse_challenges(None) == [] and parse_challenges("") == []


# ---------------------------------------------------------- protected resource metadata


async def test_prm_from_the_challenge_first() -> None:
    seen: list[str] = []
    custom = "https://mcp.test/custom/metadata/location.json"
    prm = {"resource": MCP, "authorization_servers": [ISSUER], "scopes_supported": ["x"]}
    async with mock({custom: prm}, seen) as http:
        [challenge] = parse_challenges(f'Bearer resource_metadata="{custom}"')
        found = await discover_protected_resource(http, MCP, challenge)
    assert found.metadata_url == custom and found.resource == MCP
    assert found.authorization_servers == [ISSUER] and found.scopes_supported == ["x"]
    assert seen == [f"GET {custom}"]


async def test_prm_well_known_path_then_root() -> None:
    seen: list[str] = []
    root = "https://mcp.test/.well-known/oauth-protected-resource"
    prm = {"resource": "https://mcp.test", "authorization_servers": [ISSUER]}
    async with mock({root: prm}, seen) as http:
        found = await discover_protected_resource(http, MCP)
    assert seen == [f"GET {root}/mcp", f"GET {root}"]
    assert found.resource == "https://mcp.test"  # sent exactly as published, no "/" added


async def test_prm_for_another_resource_is_refused() -> None:
    prm = {"resource": "https://evil.example.com/mcp", "authorization_servers": [ISSUER]}
    async with mock({"https://mcp.test/.well-known/oauth-protected-resource/mcp": prm}) as http:
        with pytest.raises(ResourceMismatch):
            await discover_protected_resource(http, MCP)


async def test_no_prm_means_the_server_origin_is_the_issuer() -> None:
    async with mock({}) as http:
        found = await discover_protected_resource(http, MCP)
    assert found.metadata is None
    assert found.authorization_servers == ["https://mcp.test"] and found.resource == MCP


# ------------------------------------------------------ authorization server metadata


def test_metadata_urls_are_path_aware() -> None:
    assert authorization_server_metadata_urls("https://as.test") == [
        "https://as.test/.well-known/oauth-authorization-server",
        "https://as.test/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://as.test/tenant1") == [
        "https://as.test/.well-known/oauth-authorization-server/tenant1",
        "https://as.test/.well-known/openid-configuration/tenant1",
        "https://as.test/tenant1/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("issuer", "where"),
    [
        (ISSUER, "/.well-known/oauth-authorization-server"),
        (ISSUER, "/.well-known/openid-configuration"),
        (ISSUER + "/tenant1", "/.well-known/oauth-authorization-server/tenant1"),
        (ISSUER + "/tenant1", "/.well-known/openid-configuration/tenant1"),
        (ISSUER + "/tenant1", "/tenant1/.well-known/openid-configuration"),
    ],
)
async def test_each_metadata_location(issuer: str, where: str) -> None:
    seen: list[str] = []
    async with mock({ISSUER + where: as_metadata(issuer)}, seen) as http:
        server = await discover_authorization_server(http, issuer)
    assert server.metadata_url == ISSUER + where and server.issuer == issuer
    assert seen[-1] == f"GET {ISSUER}{where}"
    if issuer.endswith("/tenant1"):  # the root document is never asked for a path issuer
        assert f"GET {ISSUER}/.well-known/oauth-authorization-server" not in seen


async def test_metadata_with_another_issuer_is_refused() -> None:
    document = as_metadata("https://attacker.example.com")
    async with mock({ISSUER + "/.well-known/oauth-authorization-server": document}) as http:
        with pytest.raises(IssuerMismatch):
            await discover_authorization_server(http, ISSUER)


async def test_metadata_without_pkce_s256_is_refused() -> None:
    document = as_metadata(code_challenge_methods_supported=["plain"])
    async with mock({ISSUER + "/.well-known/oauth-authorization-server": document}) as http:
        with pytest.raises(DiscoveryError, match="S256"):
            await discover_authorization_server(http, ISSUER)


async def test_the_2025_03_26_default_endpoints() -> None:
    async with mock({}) as http:
        with pytest.raises(DiscoveryError):
            await discover_authorization_server(http, ISSUER)
        server = await discover_authorization_server(http, ISSUER, legacy_fallback=True)
    assert server.authorization_endpoint == ISSUER + "/authorize"
    assert server.token_endpoint == ISSUER + "/token"
    assert server.registration_endpoint == ISSUER + "/register"


# ----------------------------------------------------------------------------- scopes


def test_scope_selection_order() -> None:
    [challenge] = parse_challenges('Bearer scope="mcp:basic"')
    [bare] = parse_challenges('Bearer resource_metadata="x"')
    with_prm = ProtectedResource(MCP, {"resource": MCP, "scopes_supported": ["a", "b"]}, None)
    without = ProtectedResource(MCP, {"resource": MCP}, None)
    server = AuthorizationServer(ISSUER, as_metadata(), None)
    offline = AuthorizationServer(
        ISSUER, as_metadata(scopes_supported=["a", "offline_access"]), None
    )
    assert select_scopes(challenge, with_prm, server) == ["mcp:basic"]
    assert select_scopes(bare, with_prm, server) == ["a", "b"]
    assert select_scopes(bare, without, server) == []
    assert select_scopes(challenge, with_prm, server, previous=["x", "mcp:basic"]) == [
        "x",
        "mcp:basic",
    ]
    assert select_scopes(bare, with_prm, offline) == ["a", "b", "offline_access"]
    assert select_scopes(bare, with_prm, offline, offline_access=False) == ["a", "b"]
    assert select_scopes(bare, without, offline) == []  # nothing asked: nothing added


# ----------------------------------------------------------------------- registration


async def test_registration_preference_and_issuer_keying() -> None:
    registered: list[dict[str, Any]] = []

    def register(request: httpx2.Request) -> httpx2.Response:
        registered.append(json.loads(request.content))
        return httpx2.Response(201, json={"client_id": f"dcr-{len(registered)}"})

    store = MemoryTokenStore()
    metadata = ClientMetadata(redirect_uris=["http://127.0.0.1/callback"])
    cimd = AuthorizationServer(
        ISSUER, as_metadata(client_id_metadata_document_supported=True), None
    )
    dcr = AuthorizationServer(
        "https://other.test",
        {
            "issuer": "https://other.test",
            "registration_endpoint": "https://other.test/register",
            "token_endpoint_auth_methods_supported": ["none"],
        },
        None,
    )
    bare = AuthorizationServer("https://bare.test", {"issuer": "https://bare.test"}, None)
    async with mock({"POST https://other.test/register": register}) as http:
        pre = ClientCredentials("pre", client_secret="s", issuer="https://other.test")
        got = await obtain_client(
            http, dcr, store=store, preregistered=[pre], metadata_url=None, metadata=metadata
        )
        assert got is pre
        got = await obtain_client(
            http,
            cimd,
            store=store,
            preregistered=[pre],
            metadata_url="https://app/c.json",
            metadata=metadata,
        )
        assert got.client_id == "https://app/c.json"
        got = await obtain_client(
            http,
            dcr,
            store=store,
            preregistered=[],
            metadata_url="https://app/c.json",
            metadata=metadata,
        )
        assert got.client_id == "dcr-1" and got.token_endpoint_auth_method == "none"
        assert registered[0]["application_type"] == "native"
        assert registered[0]["grant_types"] == ["authorization_code", "refresh_token"]
        assert (await store.get_client("https://other.test")) == got
        assert (await store.get_client(ISSUER)) is None  # keyed by issuer
        again = await obtain_client(
            http, dcr, store=store, preregistered=[], metadata_url=None, metadata=metadata
        )
        assert again.client_id == "dcr-1" and len(registered) == 1
        with pytest.raises(RegistrationError):
            await obtain_client(
                http, bare, store=store, preregistered=[], metadata_url=None, metadata=metadata
            )


# ------------------------------------------------------------------ the retry limit


def fake_authorization_server(routes: Routes, authorizations: list[dict[str, str]]) -> None:
    routes[ISSUER + "/.well-known/oauth-authorization-server"] = as_metadata(
        registration_endpoint=ISSUER + "/register"
    )
    routes["POST " + ISSUER + "/register"] = lambda r: httpx2.Response(201, json={"client_id": "c"})

    def authorize(request: httpx2.Request) -> httpx2.Response:
        query = dict(request.url.params)
        authorizations.append(query)
        location = (
            query["redirect_uri"]
            + "?"
            + urlencode({"code": "x", "state": query["state"], "iss": ISSUER})
        )
        return httpx2.Response(302, headers={"location": location})

    routes["GET " + ISSUER + "/authorize"] = authorize
    routes["POST " + ISSUER + "/token"] = lambda r: httpx2.Response(
        200, json={"access_token": f"t{len(authorizations)}", "token_type": "Bearer"}
    )


async def test_step_up_stops_after_the_retry_limit() -> None:
    authorizations: list[dict[str, str]] = []
    prm_url = "https://mcp.test/.well-known/oauth-protected-resource/mcp"
    routes: Routes = {prm_url: {"resource": MCP, "authorization_servers": [ISSUER]}}
    fake_authorization_server(routes, authorizations)

    def resource(request: httpx2.Request) -> httpx2.Response:
        if "authorization" not in request.headers:
            challenge = f'Bearer scope="mcp:admin", resource_metadata="{prm_url}"'
            return httpx2.Response(401, headers={"www-authenticate": challenge})
        challenge = (
            f'Bearer error="insufficient_scope", scope="mcp:admin", resource_metadata="{prm_url}"'
        )
        return httpx2.Response(403, headers={"www-authenticate": challenge})

    routes["POST " + MCP] = resource
    async with mock(routes) as oauth_http:
        auth = OAuth(http_client=oauth_http, redirect_handler=FollowRedirect(oauth_http))
        async with httpx2.AsyncClient(transport=transport(routes), auth=auth) as http:
            first = await http.post(MCP, json={})
            second = await http.post(MCP, json={})
    assert first.status_code == second.status_code == 403
    assert auth.authorizations == 3 == len(authorizations)  # one, then two step-ups, then stop
    assert all(a["scope"] == "mcp:admin" for a in authorizations)


async def test_a_new_authorization_server_gets_a_new_registration() -> None:
    """The resource moves to another issuer: its 401 leads to a registration there, and the
    first issuer's client id is never sent to it."""
    authorizations: list[dict[str, str]] = []
    prm_url = "https://mcp.test/.well-known/oauth-protected-resource/mcp"
    other = "https://as2.test"
    routes: Routes = {prm_url: {"resource": MCP, "authorization_servers": [ISSUER]}}
    fake_authorization_server(routes, authorizations)
    routes[other + "/.well-known/oauth-authorization-server"] = as_metadata(
        other, registration_endpoint=other + "/register"
    )
    routes["POST " + other + "/register"] = lambda r: httpx2.Response(201, json={"client_id": "c2"})
    at_other: list[str] = []

    def authorize_other(request: httpx2.Request) -> httpx2.Response:
        query = dict(request.url.params)
        at_other.append(query["client_id"])
        location = (
            query["redirect_uri"]
            + "?"
            + urlencode({"code": "y", "state": query["state"], "iss": other})
        )
        return httpx2.Response(302, headers={"location": location})

    routes["GET " + other + "/authorize"] = authorize_other
    routes["POST " + other + "/token"] = lambda r: httpx2.Response(
        200, json={"access_token": "from-as2", "token_type": "Bearer"}
    )
    moved = False

    def resource(request: httpx2.Request) -> httpx2.Response:
        token = request.headers.get("authorization", "")
        if moved and token != "Bearer from-as2":
            return httpx2.Response(
                401, headers={"www-authenticate": f'Bearer resource_metadata="{prm_url}"'}
            )
        if not token:
            return httpx2.Response(
                401, headers={"www-authenticate": f'Bearer resource_metadata="{prm_url}"'}
            )
        return httpx2.Response(200, json={"ok": token})

    routes["POST " + MCP] = resource
    seen: list[str] = []
    async with mock(routes, seen) as oauth_http:
        auth = OAuth(http_client=oauth_http, redirect_handler=FollowRedirect(oauth_http))
        async with httpx2.AsyncClient(transport=transport(routes), auth=auth) as http:
            assert (await http.post(MCP, json={})).json() == {"ok": "Bearer t1"}
            moved = True
            routes[prm_url] = {"resource": MCP, "authorization_servers": [other]}
            assert (await http.post(MCP, json={})).json() == {"ok": "Bearer from-as2"}
    assert f"POST {other}/register" in seen
    assert at_other == ["c2"]  # never the first issuer's "c"


# ------------------------------------------------------------------------------- DPoP


def test_dpop_proofs_are_fresh_and_carry_ath_and_the_origin_nonce() -> None:
    key = DPoPKey()

    def part(text: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        return loaded

    def claims(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
        head, body, _ = proof.split(".")
        return part(head), part(body)

    header, first = claims(key.proof("post", "https://rs.test/mcp?x=1#f", access_token="tok"))
    assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
    assert first["htm"] == "POST" and first["htu"] == "https://rs.test/mcp"
    assert (
        first["ath"]
        == base64.urlsafe_b64encode(__import__("hashlib").sha256(b"tok").digest())
        .rstrip(b"=")
        .decode()
    )
    assert "nonce" not in first
    assert key.remember_nonce("https://rs.test/mcp", {"dpop-nonce": "n1"})
    _, second = claims(key.proof("GET", "https://rs.test/mcp"))
    _, elsewhere = claims(key.proof("POST", "https://as.test/token"))
    assert second["nonce"] == "n1" and "nonce" not in elsewhere and "ath" not in second
    assert second["jti"] != first["jti"]


# -------------------------------------------------------------- client authentication


def test_client_secret_basic_is_form_encoded() -> None:
    data: dict[str, str] = {}
    headers: dict[str, str] = {}
    client = ClientCredentials("a b:c", client_secret="p@ss word", issuer=ISSUER)
    apply_client_auth(client, "client_secret_basic", data, headers, issuer=ISSUER)
    decoded = base64.b64decode(headers["authorization"].removeprefix("Basic ")).decode()
    assert decoded == "a%20b%3Ac:p%40ss%20word" and data == {}
    apply_client_auth(client, "none", data, headers, issuer=ISSUER)
    assert data == {"client_id": "a b:c"}


# ----------------------------------------------------------------------------- stores


async def test_the_file_store_is_private_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "tokens.json"
    store = FileTokenStore(path)
    token = Token(
        "at", "DPoP", expires_at=123.0, refresh_token="rt", issuer=ISSUER, requested_scopes=["a"]
    )
    await store.set_token("https://mcp.test/mcp", token)
    await store.set_client(ISSUER, ClientCredentials("c", client_secret="s", issuer=ISSUER))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["tokens.json"]  # no temporary left
    again = FileTokenStore(path)
    assert await again.get_token("https://mcp.test/mcp") == token
    assert (await again.get_client(ISSUER)) == ClientCredentials(
        "c", client_secret="s", issuer=ISSUER
    )
    assert await again.get_client("https://other.test") is None
    await again.set_token("https://mcp.test/mcp", None)
    assert await store.get_token("https://mcp.test/mcp") is None
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


async def test_the_file_store_expands_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    store = FileTokenStore("~/state/tokens.json")
    await store.set_token("https://mcp.test/mcp", Token("at", issuer=ISSUER))
    assert (tmp_path / "state" / "tokens.json").is_file()
    assert not (Path.cwd() / "~").exists()  # no directory named "~" made here


async def test_a_stored_token_is_used_without_a_401() -> None:
    store = MemoryTokenStore()
    await store.set_token("https://mcp.test/mcp", Token("kept", issuer=ISSUER))
    sent: list[str] = []

    def resource(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.headers.get("authorization", ""))
        return httpx2.Response(200, json={})

    auth = OAuth(store=store)
    async with httpx2.AsyncClient(
        transport=transport({"POST " + MCP: resource}), auth=auth
    ) as http:
        await http.post(MCP + "?q=1", json={})
    assert sent == ["Bearer kept"] and auth.authorizations == 0


# --------------------------------------------------------------------- loopback redirect


@pytest.mark.slow
async def test_the_loopback_listener_receives_the_redirect() -> None:
    opened: list[str] = []

    def browser(url: str) -> None:
        opened.append(url)
        redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]

        def visit() -> None:
            with urllib.request.urlopen(redirect.replace("/callback", "/favicon.ico")):
                pass

        def callback() -> None:
            with urllib.request.urlopen(
                redirect + "?code=c1&state=s1&iss=https%3A%2F%2Fas.test"
            ) as r:
                assert r.status == 200

        def both() -> None:
            try:
                visit()
            except Exception:  # the 404 of the favicon
                pass
            callback()

        threading.Thread(target=both, daemon=True).start()

    handler = LoopbackRedirect(open_browser=browser, timeout=10)
    try:
        assert handler.redirect_uri.startswith("http://127.0.0.1:")
        url = "https://as.test/authorize?" + urlencode(
            {"redirect_uri": handler.redirect_uri, "state": "s1"}
        )
        response = await handler(url)
    finally:
        handler.close()
    assert opened == [url]
    assert (response.code, response.state, response.iss) == ("c1", "s1", "https://as.test")


@pytest.mark.slow
async def test_the_loopback_listener_gives_up_after_its_timeout() -> None:
    handler = LoopbackRedirect(open_browser=lambda url: None, timeout=0.2)
    try:
        with pytest.raises(trio.TooSlowError):
            await handler("https://as.test/authorize")
    finally:
        handler.close()


async def test_the_code_flow_needs_a_redirect_handler() -> None:
    authorizations: list[dict[str, str]] = []
    prm_url = "https://mcp.test/.well-known/oauth-protected-resource/mcp"
    routes: Routes = {prm_url: {"resource": MCP, "authorization_servers": [ISSUER]}}
    fake_authorization_server(routes, authorizations)
    routes["POST " + MCP] = lambda r: httpx2.Response(401)
    async with mock(routes) as oauth_http:
        auth = OAuth(http_client=oauth_http)
        async with httpx2.AsyncClient(transport=transport(routes), auth=auth) as http:
            with pytest.raises(AuthorizationError, match="redirect_handler"):
                await http.post(MCP, json={})
    assert authorizations == []
