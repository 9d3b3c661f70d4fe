"""A protected server, through the real stack on both engines: the 401 challenge before any
MCP processing (both eras; POST, GET, DELETE), the RFC 9728 metadata at both well-known paths,
JWT verification (audience, expiry, signature, ``alg: none``, HS256 confusion, key rotation, a
broken JWKS, a huge token), the identity on ``ctx.auth``, and per-tool scopes (403)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import httpx2
import pytest
from joserfc.jwk import RSAKey

import mcpfast
from mcpfast import Context
from mcpfast.server.auth import AccessToken, InvalidToken, RequestInfo
from mcpfast.server.config import AuthConfig

from ..helpers import MODERN, Wire, meta, running
from .conftest import RESOURCE, AuthServer

METADATA_URL = "http://mcp.test/.well-known/oauth-protected-resource/mcp"
LEGACY = "2025-11-25"


def make_server() -> mcpfast.Server:
    server = mcpfast.Server("protected", "1.0")

    @server.tool()
    async def whoami(ctx: Context) -> dict[str, Any]:
        assert ctx.auth is not None
        return {
            "subject": ctx.auth.subject,
            "client_id": ctx.auth.client_id,
            "scopes": sorted(ctx.auth.scopes),
            "tenant": ctx.auth.claims.get("tenant"),
        }

    @server.tool()
    def blocking_whoami(ctx: Context) -> str:  # a plain def: on a worker thread
        assert ctx.auth is not None
        return str(ctx.auth.subject)

    @server.tool(scopes=["files:write"])
    def write_file(name: str) -> str:
        return f"wrote {name}"

    @server.resource("files://{name}", scopes=["files:read"])
    def read_file(name: str) -> str:
        return f"contents of {name}"

    @server.prompt(scopes=["prompts"])
    def greet(who: str) -> str:
        return f"hello {who}"

    return server


class Issuer(Protocol):
    """An authorization server the tests can point at: this directory's `AuthServer` or the
    development one (`mcpfast.auth.devserver`)."""

    @property
    def issuer(self) -> str: ...


def auth_config(auth_server: Issuer, **extra: Any) -> AuthConfig:
    fields: dict[str, Any] = {
        "issuer": auth_server.issuer,
        "resource": RESOURCE,
        "jwks_url": getattr(auth_server, "jwks_url", None),
        "scopes": ["mcp"],
        **extra,
    }
    return AuthConfig(**fields)


@asynccontextmanager
async def protected(
    auth_server: Issuer, engine: str, *, server: mcpfast.Server | None = None, **extra: Any
) -> AsyncIterator[tuple[str, Wire]]:
    """Serve ``server`` (default: `make_server`) protected by ``auth_server`` (``extra``:
    more `AuthConfig` fields); yields its URL and a `Wire` to it."""
    served = server or make_server()
    async with running(served, engine=engine, auth=auth_config(auth_server, **extra)) as url:
        async with httpx2.AsyncClient(timeout=10) as client:
            yield url, Wire(client, url)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def challenge_params(value: str) -> tuple[str, dict[str, str]]:
    """The scheme and parameters of one ``WWW-Authenticate`` challenge."""
    scheme, _, rest = value.partition(" ")
    params = {}
    for part in rest.split('", '):
        name, _, quoted = part.partition("=")
        params[name.strip()] = quoted.strip().strip('"')
    return scheme, params


def call_body(name: str, arguments: dict[str, Any], *, modern: bool = True) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        params["_meta"] = meta()
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


MODERN_HEADERS = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "whoami"}


async def call_whoami(wire: Wire, headers: dict[str, str]) -> Any:
    return await wire.post(call_body("whoami", {}), {**MODERN_HEADERS, **headers})


def assert_unauthorized(reply: Any, error: str | None, scope: str | None = "mcp") -> None:
    assert reply.status == 401, (reply.status, reply.response.text)
    scheme, params = challenge_params(reply.headers.get_list("www-authenticate")[0])
    assert scheme == "Bearer"
    assert params["resource_metadata"] == METADATA_URL
    assert params.get("error") == error
    assert params.get("scope") == scope
    body = reply.response.json()
    assert body["jsonrpc"] == "2.0" and body.get("id") is None
    assert body["error"]["code"] == -32600
    assert body["error"]["message"].startswith("Unauthorized")
    assert body["error"]["data"]["resourceMetadata"] == METADATA_URL


# ------------------------------------------------------------------------------ the challenge


@pytest.mark.parametrize("version", [MODERN, LEGACY, "2025-03-26"])
@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
async def test_no_token_is_challenged_before_any_mcp_processing(
    auth_server: AuthServer, engine: str, version: str, method: str
) -> None:
    async with protected(auth_server, engine) as (url, wire):
        headers = {"mcp-protocol-version": version, "accept": "application/json, text/event-stream"}
        if method == "POST":
            body = call_body("whoami", {}, modern=version == MODERN)
            if version != MODERN:
                body = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": version,
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                }
            reply = await wire.post(body, headers)
        else:
            headers["mcp-session-id"] = "not-even-a-session"
            response = await wire.client.request(method, url, headers=headers)
            from ..helpers import Reply, parse_body

            reply = Reply(response, parse_body(response))
        assert_unauthorized(reply, None)
        assert "mcp-session-id" not in reply.headers


async def test_invalid_body_without_token_is_401_not_400(
    auth_server: AuthServer, engine: str
) -> None:
    async with protected(auth_server, engine) as (_, wire):
        reply = await wire.post(None, {}, raw=b"{not json")
        assert_unauthorized(reply, None)


async def test_another_scheme_is_no_token(auth_server: AuthServer, engine: str) -> None:
    async with protected(auth_server, engine) as (_, wire):
        reply = await call_whoami(wire, {"authorization": "Basic dXNlcjpwYXNz"})
        assert_unauthorized(reply, None)


# ------------------------------------------------------------------------------- the metadata


async def test_metadata_at_both_well_known_paths(auth_server: AuthServer, engine: str) -> None:
    async with protected(auth_server, engine) as (url, wire):
        base = url.removesuffix("/mcp")
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            response = await wire.client.get(base + path)
            assert response.status_code == 200, path
            assert response.headers["content-type"].startswith("application/json")
            document = response.json()
            assert document == {
                "resource": RESOURCE,
                "authorization_servers": [auth_server.issuer],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["files:read", "files:write", "mcp", "prompts"],
                "dpop_signing_alg_values_supported": ["ES256", "RS256", "PS256", "EdDSA"],
            }
        response = await wire.client.post(base + "/.well-known/oauth-protected-resource")
        assert response.status_code == 405
        response = await wire.client.get(base + "/.well-known/oauth-protected-resource/other")
        assert response.status_code == 404


async def test_metadata_without_dpop_and_resource_from_host(
    auth_server: AuthServer, engine: str
) -> None:
    config = AuthConfig(
        issuer=auth_server.issuer,
        audience=[RESOURCE],
        jwks_url=auth_server.jwks_url,
        dpop="off",
        scopes_supported=["mcp"],
    )
    async with running(make_server(), engine=engine, auth=config) as url:
        async with httpx2.AsyncClient(timeout=10) as client:
            base = url.removesuffix("/mcp")
            document = (await client.get(base + "/.well-known/oauth-protected-resource/mcp")).json()
            assert document["resource"] == url  # no resource configured: as it was addressed
            assert document["scopes_supported"] == ["mcp"]
            assert "dpop_signing_alg_values_supported" not in document
            reply = await client.post(url, json={})
            _, params = challenge_params(reply.headers.get_list("www-authenticate")[0])
            assert params["resource_metadata"] == base + "/.well-known/oauth-protected-resource/mcp"


async def test_an_open_server_has_no_metadata(engine: str) -> None:
    async with running(make_server(), engine=engine) as url:
        async with httpx2.AsyncClient(timeout=10) as client:
            base = url.removesuffix("/mcp")
            response = await client.get(base + "/.well-known/oauth-protected-resource/mcp")
            assert response.status_code == 404


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_client_without_a_token_gets_the_401_as_a_transport_error(
    auth_server: AuthServer, engine: str, era: str
) -> None:
    """No OAuth configured: the 401 is the HTTP layer's refusal in both eras (status 401),
    not a JSON-RPC error of the request."""
    async with protected(auth_server, engine) as (url, _):
        with pytest.raises(mcpfast.TransportError) as refused:
            async with mcpfast.connect(url, era=era) as client:  # type: ignore[arg-type]
                await client.call_tool("whoami", {})
        assert getattr(refused.value, "status", None) == 401


# ------------------------------------------------------------------------------ valid tokens


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_valid_token_reaches_the_handler(
    auth_server: AuthServer, engine: str, era: str
) -> None:
    token = auth_server.token(sub="ada", client_id="cli-9", scope="mcp files:read", tenant="t1")
    async with protected(auth_server, engine) as (url, _):
        async with mcpfast.connect(url, era=era, headers=bearer(token)) as client:  # type: ignore[arg-type]
            result = await client.call_tool("whoami", {})
            assert result.structuredContent == {
                "subject": "ada",
                "client_id": "cli-9",
                "scopes": ["files:read", "mcp"],
                "tenant": "t1",
            }
            threaded = await client.call_tool("blocking_whoami", {})
            assert threaded.content[0].text == "ada"  # type: ignore[union-attr]


async def test_scp_list_and_azp_are_read(auth_server: AuthServer, engine: str) -> None:
    token = auth_server.token(scope=None, scp=["mcp"], client_id=None, azp="cli-azp")
    async with protected(auth_server, engine) as (_, wire):
        reply = await call_whoami(wire, bearer(token))
        assert reply.status == 200, reply.response.text
        assert reply.result["structuredContent"]["client_id"] == "cli-azp"


# ----------------------------------------------------------------------------- refused tokens


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_token(auth_server: AuthServer) -> str:
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    payload = _b64(json.dumps(auth_server.claims()).encode())
    return f"{header}.{payload}."


def hs256_with_public_key(auth_server: AuthServer) -> str:
    """The classic confusion: HMAC-SHA256 keyed with the issuer's public key (its PEM)."""
    secret = auth_server.keys["k1"].as_pem(private=False)
    header = _b64(json.dumps({"alg": "HS256", "kid": "k1", "typ": "JWT"}).encode())
    payload = _b64(json.dumps(auth_server.claims()).encode())
    signature = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


@pytest.mark.parametrize(
    "kind",
    [
        "wrong_audience",
        "expired",
        "not_yet",
        "wrong_issuer",
        "forged",
        "alg_none",
        "hs256",
        "garbage",
        "no_exp",
        "huge",
    ],
)
async def test_invalid_tokens_are_refused_401(
    auth_server: AuthServer, engine: str, kind: str
) -> None:
    now = int(time.time())
    impostor = RSAKey.generate_key(2048, parameters={"kid": "k1"})
    tokens: dict[str, Callable[[], str]] = {
        "wrong_audience": lambda: auth_server.token(aud="http://other.test/mcp"),
        "expired": lambda: auth_server.token(exp=now - 120, iat=now - 600),
        "not_yet": lambda: auth_server.token(nbf=now + 600),
        "wrong_issuer": lambda: auth_server.token(iss="http://evil.test"),
        "forged": lambda: auth_server.token(key=impostor),
        "alg_none": lambda: unsigned_token(auth_server),
        "hs256": lambda: hs256_with_public_key(auth_server),
        "garbage": lambda: "abc.def.ghi",
        "no_exp": lambda: auth_server.token(exp=None),
        "huge": lambda: auth_server.token(padding="x" * 12_000),
    }
    token = tokens[kind]()
    async with protected(auth_server, engine) as (_, wire):
        reply = await call_whoami(wire, bearer(token))
        assert_unauthorized(reply, "invalid_token")
        assert token not in reply.response.text


async def test_unknown_kid_refetches_the_jwks(auth_server: AuthServer, engine: str) -> None:
    async with protected(auth_server, engine, jwks_refetch_seconds=0) as (_, wire):
        assert (await call_whoami(wire, bearer(auth_server.token()))).status == 200
        assert auth_server.jwks_fetches == 1
        assert (await call_whoami(wire, bearer(auth_server.token()))).status == 200
        assert auth_server.jwks_fetches == 1  # warm: no fetch
        auth_server.rotate("k2")
        reply = await call_whoami(wire, bearer(auth_server.token(kid="k2")))
        assert reply.status == 200, reply.response.text
        assert auth_server.jwks_fetches == 2
        auth_server.published.remove("k1")  # k1 retired: its new tokens fail after a refetch
        unknown = auth_server.token(kid="k3-unknown", key=auth_server.keys["k1"])
        assert (await call_whoami(wire, bearer(unknown))).status == 401
        assert auth_server.jwks_fetches == 3
        assert (await call_whoami(wire, bearer(auth_server.token()))).status == 401  # retired


async def test_unknown_kid_refetch_is_rate_limited(auth_server: AuthServer, engine: str) -> None:
    async with protected(auth_server, engine) as (_, wire):
        assert (await call_whoami(wire, bearer(auth_server.token()))).status == 200
        for n in range(5):
            reply = await call_whoami(
                wire, bearer(auth_server.token(kid=f"made-up-{n}", key=auth_server.keys["k1"]))
            )
            assert reply.status == 401
        assert auth_server.jwks_fetches == 1


@pytest.mark.parametrize(
    "jwks",
    [
        b"not json",
        b'{"keys": "nope"}',
        b'{"keys": [{"kty": "RSA", "kid": "k1", "n": "!!"}]}',
        b'{"keys": [{"kty": "oct", "kid": "k1", "k": "c2VjcmV0"}]}',
        b"[]",
    ],
)
async def test_a_malformed_jwks_is_401_not_500(
    auth_server: AuthServer, engine: str, jwks: bytes
) -> None:
    auth_server.jwks_override = jwks
    async with protected(auth_server, engine) as (_, wire):
        reply = await call_whoami(wire, bearer(auth_server.token()))
        assert_unauthorized(reply, "invalid_token")


async def test_unreachable_jwks_is_503(
    auth_server: AuthServer, engine: str, closed_port: int
) -> None:
    jwks_url = f"http://127.0.0.1:{closed_port}/jwks"
    async with protected(auth_server, engine, jwks_url=jwks_url) as (_, wire):
        assert_unavailable(await call_whoami(wire, bearer(auth_server.token())))


async def test_jwks_discovered_from_issuer_metadata(auth_server: AuthServer, engine: str) -> None:
    async with protected(auth_server, engine, jwks_url=None) as (_, wire):
        assert (await call_whoami(wire, bearer(auth_server.token()))).status == 200
        paths = [path for _, path, _ in auth_server.requests]
        assert paths == ["/.well-known/oauth-authorization-server", "/jwks"]


# -------------------------------------------------------------------------------- the scopes


async def test_a_scoped_tool_is_listed_but_its_call_needs_the_scope(
    auth_server: AuthServer, engine: str
) -> None:
    narrow = auth_server.token(scope="mcp")
    async with protected(auth_server, engine) as (_, wire):
        listed = await wire.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}},
            {**bearer(narrow), "mcp-protocol-version": MODERN, "mcp-method": "tools/list"},
        )
        assert listed.status == 200
        assert "write_file" in {t["name"] for t in listed.result["tools"]}
        headers = {**MODERN_HEADERS, "mcp-name": "write_file", **bearer(narrow)}
        reply = await wire.post(call_body("write_file", {"name": "a"}), headers)
        assert reply.status == 403, reply.response.text
        scheme, params = challenge_params(reply.headers.get_list("www-authenticate")[0])
        assert scheme == "Bearer"
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "files:write mcp"
        assert params["resource_metadata"] == METADATA_URL
        body = reply.response.json()
        assert body["id"] == 7 and body["error"]["data"]["requiredScopes"] == ["files:write", "mcp"]
        wide = auth_server.token(scope="mcp files:write")
        headers = {**MODERN_HEADERS, "mcp-name": "write_file", **bearer(wide)}
        reply = await wire.post(call_body("write_file", {"name": "a"}), headers)
        assert reply.status == 200 and reply.result["content"][0]["text"] == "wrote a"


async def test_scopes_in_a_legacy_session(auth_server: AuthServer, engine: str) -> None:
    """The same 403 inside a legacy session; resources and prompts have their scopes too."""
    narrow = auth_server.token(scope="mcp")
    async with protected(auth_server, engine) as (url, _):
        async with mcpfast.connect(url, era="legacy", headers=bearer(narrow)) as client:
            assert "write_file" in {t.name for t in await client.list_tools()}
            with pytest.raises(mcpfast.MCPError, match="Forbidden"):
                await client.call_tool("write_file", {"name": "a"})
            with pytest.raises(mcpfast.MCPError, match="Forbidden"):
                await client.read_resource("files://a")
            with pytest.raises(mcpfast.MCPError, match="Forbidden"):
                await client.get_prompt("greet", {"who": "x"})
        wide = auth_server.token(scope="mcp files:read prompts")
        async with mcpfast.connect(url, era="legacy", headers=bearer(wide)) as client:
            read = await client.read_resource("files://a")
            assert read.contents[0].text == "contents of a"
            prompt = await client.get_prompt("greet", {"who": "x"})
            assert prompt.messages[0].content.text == "hello x"  # type: ignore[union-attr]


async def test_missing_server_scope_is_403(auth_server: AuthServer, engine: str) -> None:
    token = auth_server.token(scope="other")
    async with protected(auth_server, engine) as (_, wire):
        reply = await call_whoami(wire, bearer(token))
        assert reply.status == 403
        _, params = challenge_params(reply.headers.get_list("www-authenticate")[0])
        assert params["error"] == "insufficient_scope" and params["scope"] == "mcp"


async def test_scope_hierarchy(auth_server: AuthServer, engine: str) -> None:
    token = auth_server.token(scope="all")
    implies = {"all": ["mcp", "files"], "files": ["files:read", "files:write"]}
    async with protected(auth_server, engine, scope_implies=implies) as (_, wire):
        headers = {**MODERN_HEADERS, "mcp-name": "write_file", **bearer(token)}
        reply = await wire.post(call_body("write_file", {"name": "a"}), headers)
        assert reply.status == 200, reply.response.text


# ------------------------------------------------------------------------- no token leaks


async def test_the_token_is_never_logged(
    auth_server: AuthServer, engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    good = auth_server.token()
    bad = auth_server.token(aud="http://other.test")
    auth_server.jwks_override = None
    async with protected(auth_server, engine) as (_, wire):
        assert (await call_whoami(wire, bearer(good))).status == 200
        assert (await call_whoami(wire, bearer(bad))).status == 401
        assert (await call_whoami(wire, bearer(good + "x"))).status == 401
    assert caplog.records, "expected some logging to search"
    for token in (good, bad):
        for part in token.split("."):
            assert part not in caplog.text
    # and nothing but the introspection endpoint (none here) ever received it
    for _, _, headers in auth_server.requests:
        assert good not in json.dumps(headers)


# ------------------------------------------------------------------- a verifier of one's own


class StaticVerifier:
    """A `TokenVerifier` of the application's own: one known opaque token."""

    def __init__(self) -> None:
        self.seen: list[RequestInfo] = []

    async def verify(self, token: str, request: RequestInfo) -> AccessToken:
        self.seen.append(request)
        if token != "let-me-in":
            raise InvalidToken("unknown token")
        return AccessToken(subject="static", client_id="app", scopes=frozenset({"mcp"}))


async def test_a_custom_token_verifier(engine: str) -> None:
    verifier = StaticVerifier()
    server = make_server()
    server.token_verifier = verifier
    config = AuthConfig(issuer="https://as.test", resource=RESOURCE, scopes=["mcp"])
    async with running(server, engine=engine, auth=config) as url:
        async with httpx2.AsyncClient(timeout=10) as client:
            wire = Wire(client, url)
            reply = await call_whoami(wire, bearer("let-me-in"))
            assert reply.status == 200, reply.response.text
            assert reply.result["structuredContent"]["subject"] == "static"
            assert_unauthorized(await call_whoami(wire, bearer("nope")), "invalid_token")
    assert [(r.method, r.url, r.scheme) for r in verifier.seen] == [
        ("POST", RESOURCE, "Bearer"),
        ("POST", RESOURCE, "Bearer"),
    ]


async def test_a_batch_needs_every_scope_of_its_calls(auth_server: AuthServer, engine: str) -> None:
    """2025-03-26 batches: one 403 naming the scopes of all its calls; with them, the batch runs."""
    narrow, wide = (
        auth_server.token(scope="mcp"),
        auth_server.token(scope="mcp files:write prompts"),
    )
    version = "2025-03-26"
    async with protected(auth_server, engine) as (_, wire):
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        reply = await wire.post(init, bearer(narrow))
        assert reply.status == 200, reply.response.text
        headers = {
            **bearer(narrow),
            "mcp-protocol-version": version,
            "mcp-session-id": reply.headers["mcp-session-id"],
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await wire.post(note, headers)).status == 202
        batch = [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "write_file", "arguments": {"name": "a"}},
            },
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "prompts/get",
                "params": {"name": "greet", "arguments": {"who": "x"}},
            },
        ]
        reply = await wire.post(batch, headers)
        assert reply.status == 403, reply.response.text
        _, params = challenge_params(reply.headers.get_list("www-authenticate")[0])
        assert params["scope"] == "files:write mcp prompts"
        reply = await wire.post(batch, {**headers, **bearer(wide)})
        assert reply.status == 200, reply.response.text
        answers = {m["id"]: m for m in reply.response.json()}
        assert answers[1]["result"]["content"][0]["text"] == "wrote a"
        assert answers[2]["result"]["messages"][0]["content"]["text"] == "hello x"


async def test_a_session_belongs_to_the_user_who_opened_it(
    auth_server: AuthServer, engine: str
) -> None:
    """A legacy session opened with alice's token answers only alice's tokens (a wider one
    too, as after a step-up); bob's valid token with her session id gets 404, as if the
    session did not exist."""
    alice, wider, bob = (
        auth_server.token(sub="alice", scope="mcp"),
        auth_server.token(sub="alice", scope="mcp files:write"),
        auth_server.token(sub="bob", scope="mcp"),
    )
    async with protected(auth_server, engine) as (_, wire):
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        reply = await wire.post(init, bearer(alice))
        assert reply.status == 200, reply.response.text
        session = {
            "mcp-protocol-version": LEGACY,
            "mcp-session-id": reply.headers["mcp-session-id"],
        }
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for token in (alice, wider):
            reply = await wire.post(ping, {**session, **bearer(token)})
            assert reply.status == 200, reply.response.text
        reply = await wire.post(ping, {**session, **bearer(bob)})
        assert reply.status == 404, reply.response.text
        assert reply.error["code"] == -32001


# ------------------------------------------------------------- an unreachable authorization server


def assert_unavailable(reply: Any) -> None:
    """503 with ``Retry-After`` and a JSON-RPC ``-32603``: not 401, so the token is kept."""
    assert reply.status == 503, (reply.status, reply.response.text)
    assert int(reply.headers["retry-after"]) > 0
    assert not reply.headers.get_list("www-authenticate")
    body = reply.response.json()
    assert body["jsonrpc"] == "2.0" and body.get("id") is None
    assert body["error"]["code"] == -32603
    assert body["error"]["message"] == "authorization server unavailable"


async def test_unreachable_jwks_stays_503_and_an_invalid_token_is_still_401(
    auth_server: AuthServer, engine: str, closed_port: int
) -> None:
    jwks_url = f"http://127.0.0.1:{closed_port}/jwks"
    async with protected(auth_server, engine, jwks_url=jwks_url) as (_, wire):
        assert_unavailable(await call_whoami(wire, bearer(auth_server.token())))
        assert_unavailable(await call_whoami(wire, bearer(auth_server.token())))  # rate-limited
        reply = await call_whoami(wire, bearer(unsigned_token(auth_server)))
        assert_unauthorized(reply, "invalid_token")
        assert_unauthorized(await call_whoami(wire, bearer("not-a-jwt")), "invalid_token")


async def test_jwks_5xx_is_503_and_recovers(auth_server: AuthServer, engine: str) -> None:
    route = auth_server.route
    down = True

    def flaky(path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        if down and path == "/jwks":
            return 502, b"{}"
        return route(path, headers, body)

    auth_server.route = flaky  # type: ignore[method-assign]
    async with protected(auth_server, engine, jwks_refetch_seconds=0) as (_, wire):
        assert_unavailable(await call_whoami(wire, bearer(auth_server.token())))
        down = False
        assert (await call_whoami(wire, bearer(auth_server.token()))).status == 200


async def test_unreachable_discovery_is_503(
    auth_server: AuthServer, engine: str, closed_port: int
) -> None:
    issuer = f"http://127.0.0.1:{closed_port}"
    token = auth_server.token(iss=issuer)
    config = auth_config(auth_server, issuer=issuer, jwks_url=None)
    async with running(make_server(), engine=engine, auth=config) as url:
        async with httpx2.AsyncClient(timeout=10) as client:
            assert_unavailable(await call_whoami(Wire(client, url), bearer(token)))
